"""An MCP server (stdio) serving two tools whose names map to the same row name, with the same
input schema: `admin.tools.delete` ("deletes every admin tool") and `admin_tools_delete`
("deletes one by id"). Nothing is deleted: each call is appended as one JSON line
`{"tool": NAME, "arguments": {...}}` to the file named by `IDENTITY_LOG` (when set), and answered
`NAME received {...}`, so a test can tell which server tool received a call, and that one it
refused never arrived.
"""

import json
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "description": "The admin tool"},
        "reason": {"type": "string", "description": "Why"},
    },
}
TOOLS = {
    "admin.tools.delete": "Deletes every admin tool.",
    "admin_tools_delete": "Deletes one admin tool by id.",
}


async def list_tools(ctx, params):
    return types.ListToolsResult(
        tools=[types.Tool(name=name, description=text, input_schema=SCHEMA) for name, text in TOOLS.items()]
    )


async def call_tool(ctx, params):
    args = params.arguments or {}
    if params.name not in TOOLS:
        return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)
    if "IDENTITY_LOG" in os.environ:
        with open(os.environ["IDENTITY_LOG"], "a") as f:
            f.write(json.dumps({"tool": params.name, "arguments": args}) + "\n")
    text = f"{params.name} received {json.dumps(args, sort_keys=True)}"
    return types.CallToolResult(content=[types.TextContent(text=text)])


server = Server("identity", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


anyio.run(main)
