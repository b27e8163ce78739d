"""An MCP server over streamable HTTP that wants an API key.

Listens on 127.0.0.1 at a free port and prints the port on its first line of standard output.
Every request must carry the header `x-api-key` equal to the `API_KEY` environment variable;
others get 401. Its one tool, `echo_key`, answers with the key it was sent, the way a careless
server repeats a credential back.
"""

import os
import socket
import sys

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

API_KEY = os.environ["API_KEY"]


async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[types.Tool(name="echo_key", description="Repeats the key", input_schema={"type": "object", "properties": {}})]
    )


async def call_tool(ctx, params):
    return types.CallToolResult(content=[types.TextContent(text=f"your key is {API_KEY}")])


server = Server("web", on_list_tools=list_tools, on_call_tool=call_tool)
app = server.streamable_http_app()


async def guarded(scope, receive, send):
    if scope["type"] == "http":
        headers = dict(scope.get("headers") or [])
        if headers.get(b"x-api-key", b"").decode() != API_KEY:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"missing or wrong x-api-key"})
            return
    await app(scope, receive, send)


sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
# Listening before the port is printed: a client that connects while uvicorn is still starting
# waits in the backlog instead of being refused.
sock.listen(128)
print(sock.getsockname()[1], flush=True)
config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
config.app = guarded
uvicorn.Server(config).run(sockets=[sock])
