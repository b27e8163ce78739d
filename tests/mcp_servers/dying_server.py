"""An MCP server (stdio) that dies in the middle of a call.

- `append_line` (a write): the process exits at once when it is called, answering nothing;
- `explain_failure`: answers `isError: true` with an explanation followed by a large dump, the way
  a server reports an error with too much content;
- `echo`: answers its `text` argument;
- `count_words`: answers `{"words": N, "lines": M}` of its `text` argument as `structuredContent`,
  which its `outputSchema` declares, and as JSON text;
- `stall`: never answers.

With `DYING_PID` set, the process id is written to that file at start.
"""

import json
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

if "DYING_PID" in os.environ:
    with open(os.environ["DYING_PID"], "w") as f:
        f.write(str(os.getpid()))

TOOLS = [
    types.Tool(
        name="append_line",
        description="Appends a line to the journal",
        input_schema={"type": "object", "properties": {"line": {"type": "string"}}, "required": ["line"]},
    ),
    types.Tool(
        name="explain_failure",
        description="Fails with an explanation",
        input_schema={"type": "object", "properties": {}},
    ),
    types.Tool(name="stall", description="Never answers", input_schema={"type": "object", "properties": {}}),
    types.Tool(
        name="echo",
        description="Echoes its text",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    types.Tool(
        name="count_words",
        description="Counts the words and lines of a text",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        output_schema={
            "type": "object",
            "properties": {
                "words": {"type": "integer", "description": "Words in the text"},
                "lines": {"type": "integer"},
            },
            "required": ["words", "lines"],
        },
    ),
]


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name == "append_line":
        os._exit(3)
    if params.name == "stall":
        await anyio.sleep_forever()
    if params.name == "explain_failure":
        dump = "x" * 50000
        return types.CallToolResult(
            content=[
                types.TextContent(text="the journal is locked by another writer; retry after it finishes"),
                types.TextContent(text=dump),
            ],
            is_error=True,
        )
    if params.name == "count_words":
        text = str(args.get("text"))
        counts = {"words": len(text.split()), "lines": len(text.splitlines())}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(counts))], structured_content=counts)
    return types.CallToolResult(content=[types.TextContent(text=str(args.get("text")))])


server = Server("dying", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
