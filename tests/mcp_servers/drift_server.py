"""An MCP server (stdio) whose input schema changes between connections.

Each start increments the number in the file named by `DRIFT_COUNTER` (1 at the first start) and
writes the process id to the file named by `DRIFT_PID`, so a test can end the process and see the
next connection serve the changed schema:

- `lookup` takes `{"query": string}` (required) at the first start; from the second start on it
  also requires `{"limit": integer}`;
- `ping` takes no arguments and answers `pong N` (N = the start number);
- `grow` adds an optional `verbose` (boolean) to `lookup` in this process and announces the change
  (`notifications/tools/list_changed`: on a `subscriptions/listen` stream at protocol 2026-07-28,
  unasked before).

`tools/list` answers in two pages (`lookup`, then `ping`), so a client must follow `nextCursor`.
"""

import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

counter = os.environ["DRIFT_COUNTER"]
try:
    with open(counter) as f:
        start = int(f.read().strip() or "0") + 1
except FileNotFoundError:
    start = 1
with open(counter, "w") as f:
    f.write(str(start))
if "DRIFT_PID" in os.environ:
    with open(os.environ["DRIFT_PID"], "w") as f:
        f.write(str(os.getpid()))


grown = False


def lookup_schema():
    properties = {"query": {"type": "string", "description": "What to look up"}}
    required = ["query"]
    if grown:
        properties["verbose"] = {"type": "boolean"}
    if start >= 2:
        properties["limit"] = {"type": "integer", "description": "Most results"}
        required.append("limit")
    return {"type": "object", "properties": properties, "required": required}


def pages():
    empty = {"type": "object", "properties": {}}
    return [
        [types.Tool(name="lookup", description="Looks a word up", input_schema=lookup_schema())],
        [
            types.Tool(name="ping", description="Answers pong", input_schema=empty),
            types.Tool(name="grow", description="Changes the schema of lookup", input_schema=empty),
        ],
    ]


bus = InMemorySubscriptionBus()


async def list_tools(ctx, params):
    all_pages = pages()
    page = int(params.cursor) if params is not None and params.cursor else 0
    next_cursor = str(page + 1) if page + 1 < len(all_pages) else None
    return types.ListToolsResult(tools=all_pages[page], next_cursor=next_cursor)


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "lookup":
        text = f"found {args.get('query')} (schema {start})"
    elif params.name == "ping":
        text = f"pong {start}"
    elif params.name == "grow":
        global grown
        grown = True
        await bus.publish(ToolsListChanged())
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:
            pass  # no standing channel at this protocol version: the listen stream carried it
        text = "grown"
    else:
        return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
    return types.CallToolResult(content=[types.TextContent(text=text)])


server = Server(
    "drift",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus),
)


async def main():
    async with stdio_server() as (read_stream, write_stream):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read_stream, write_stream, options)


anyio.run(main)
