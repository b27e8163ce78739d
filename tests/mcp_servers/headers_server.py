"""An MCP server over streamable HTTP that repeats the request headers it gets, the way a careless
server echoes a credential back.

Listens on 127.0.0.1 at a free port and prints the port on its first line of standard output.

- When `EXPECT_AUTHORIZATION` is set, a request whose `Authorization` header is not exactly that
  value gets 401, its headers repeated in the body.
- `headers` answers the headers of the request (a JSON object; a header sent twice has its values
  joined by ", "), with `authorization_scheme`, the word before the credential (`Basic`,
  `Bearer`; no secret), and `authorization_count`, how many `Authorization` headers came.
- `fail` answers the same text with `isError: true`.
"""

import json
import os
import socket

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

EXPECTED = os.environ.get("EXPECT_AUTHORIZATION")
# The headers of the last POST (the request a tool call arrives in).
SEEN = {"headers": {}, "authorization_count": 0}


def headers_of(scope):
    headers = {}
    count = 0
    for name, value in scope.get("headers") or []:
        name, value = name.decode("latin-1").lower(), value.decode("latin-1")
        if name == "authorization":
            count += 1
        headers[name] = headers[name] + ", " + value if name in headers else value
    return headers, count


def seen_text():
    authorization = SEEN["headers"].get("authorization", "")
    return json.dumps(
        {
            "headers": SEEN["headers"],
            "authorization_scheme": authorization.split(" ")[0] if authorization else None,
            "authorization_count": SEEN["authorization_count"],
        }
    )


async def list_tools(ctx, params):
    schema = {"type": "object", "properties": {}}
    return types.ListToolsResult(
        tools=[
            types.Tool(name="headers", description="Repeats the request headers", input_schema=schema),
            types.Tool(name="fail", description="Fails, repeating the request headers", input_schema=schema),
        ]
    )


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=seen_text())], is_error=params.name == "fail")


server = Server("headers", on_list_tools=list_tools, on_call_tool=call_tool)
app = server.streamable_http_app()


async def echoing(scope, receive, send):
    if scope["type"] == "http":
        headers, count = headers_of(scope)
        if EXPECTED is not None and (count != 1 or headers.get("authorization") != EXPECTED):
            body = ("unauthorized; the request had these headers: " + json.dumps(headers)).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": body})
            return
        if scope.get("method") == "POST":
            SEEN["headers"], SEEN["authorization_count"] = headers, count
    await app(scope, receive, send)


sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
# Listening before the port is printed: a client that connects while uvicorn is still starting
# waits in the backlog instead of being refused.
sock.listen(128)
print(sock.getsockname()[1], flush=True)
config = uvicorn.Config(echoing, log_level="warning", lifespan="on")
config.app = echoing
uvicorn.Server(config).run(sockets=[sock])
