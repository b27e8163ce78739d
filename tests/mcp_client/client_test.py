#!/usr/bin/env python3
"""`toolcat serve` driven by the official Python MCP SDK (`mcp` from PyPI), as a real client.

Usage: client_test.py TOOLCAT stdio|http

Over the chosen transport, against profile `coding` and exposure `staging` in a temporary
workspace, serving a copy of the reference catalog (`--catalog`):

1. a client of the `initialize` handshake: list every page of tools and compare them with what
   `toolcat list` derives (the scope's tools plus the discovery meta-tools the profile owns, in
   catalog order); call a silent read tool (`read_file`, `glob`); see a gated tool (`edit_file`)
   refused without approval; see a tool outside the scope (`delete_path`, exposure `full`)
   refused; check that nothing in the workspace changed and what the call store recorded;
2. a client of protocol 2026-07-28 (`server/discover`): subscribe to tool-list changes
   (`subscriptions/listen`), move `read_file` to exposure `full` in the catalog file, receive
   `notifications/tools/list_changed`, and see `read_file` gone from the list and refused.

Exits 1 with the failed check on stderr.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp.types import PaginatedRequestParams

PROFILE = "coding"
EXPOSURE = "staging"
PAGE_SIZE = 50  # toolcat::mcp::PAGE_SIZE
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools.toml")


def toolcat_list(toolcat, *args):
    out = subprocess.run([toolcat, "list", "--json", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def expected_names(toolcat):
    """The listed set, from `toolcat list`: the scope's tools plus the owned meta-tools."""
    in_scope = {row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE, "--exposure", EXPOSURE)}
    return [
        row["name"]
        for row in toolcat_list(toolcat, "--profile", PROFILE)
        if row["name"] in in_scope or row["tier"] == "loop"
    ]


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def error_body(result):
    check(result.is_error, f"expected an error result, got {result}")
    return json.loads(result.content[0].text)


async def list_all(session):
    """Every page of `tools/list`: the names, and how many pages."""
    names, cursor, pages = [], None, 0
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        pages += 1
        if page.next_cursor:
            check(len(page.tools) == PAGE_SIZE, f"a full page has {PAGE_SIZE} tools, got {len(page.tools)}")
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return names, pages


async def list_changed(session, toolcat, catalog, transport):
    """Protocol 2026-07-28: a catalog edit reaches a `subscriptions/listen` stream."""
    await session.discover()
    names, _ = await list_all(session)
    check(names == expected_names(toolcat), "the 2026-07-28 client lists the same tools")
    async with listen(session, tools_list_changed=True) as subscription:
        with open(catalog) as f:
            text = f.read()
        row = text.index('name = "read_file"')
        start = text.index("exposure = ", row)
        end = text.index("\n", start)
        with open(catalog, "w") as f:
            f.write(text[:start] + 'exposure = "full"' + text[end:])
        with anyio.fail_after(20):
            event = await subscription.__anext__()
        check(isinstance(event, ToolsListChanged), f"a tools/list_changed event, got {event}")
    after, _ = await list_all(session)
    check(after == [n for n in names if n != "read_file"], f"read_file left the list: {set(names) ^ set(after)}")
    body = error_body(await session.call_tool("read_file", {"path": "a.txt"}))
    check(body["error"] == "outside-scope", f"read_file is refused after the edit: {body}")
    print(f"{transport}: 2026-07-28 client notified of the edit (subscriptions/listen); "
          f"{len(after)} tools listed after it; read_file refused")


async def exercise(session, toolcat, workspace, transport):
    init = await session.initialize()
    check(init.server_info.name == "toolcat", f"server name: {init.server_info}")
    check(init.capabilities.tools and init.capabilities.tools.list_changed, "listChanged is advertised")

    names, pages = await list_all(session)
    expected = expected_names(toolcat)
    check(names == expected, f"listed {len(names)} tools, expected {len(expected)}: {set(names) ^ set(expected)}")
    annotations = {t.name: t.annotations for t in (await session.list_tools()).tools}
    check(annotations["read_file"].read_only_hint is True, "read_file is read-only")

    result = await session.call_tool("read_file", {"path": "a.txt"})
    check(not result.is_error, f"read_file failed: {result}")
    check("hello" in json.loads(result.content[0].text)["content"], f"read_file content: {result}")
    result = await session.call_tool("glob", {"pattern": "*.txt"})
    check(not result.is_error and "a.txt" in result.content[0].text, f"glob: {result}")

    body = error_body(await session.call_tool("edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "bye"}))
    check(body["error"] == "needs-approval" and body["tier"] == "gated", f"gated tool: {body}")

    body = error_body(await session.call_tool("delete_path", {"path": "a.txt"}))
    check(body["error"] == "outside-scope" and body["tool"] == "delete_path", f"outside the scope: {body}")

    with open(os.path.join(workspace, "a.txt")) as f:
        check(f.read() == "hello\n", "the workspace is unchanged")
    records = json.loads(subprocess.run(
        [toolcat, "calls", "--json", "--store", os.path.join(workspace, "calls.sqlite")],
        check=True, capture_output=True, text=True).stdout)
    recorded = {r["tool"] for r in records if r["state"] == "succeeded"}
    check({"read_file", "glob"} <= recorded, f"the calls that ran are recorded: {records}")
    check(not any(r["tool"] == "delete_path" for r in records), "the refused call never ran")
    print(f"{transport}: {len(names)} tools listed in {pages} pages; read_file and glob ran; "
          f"edit_file refused (needs-approval); delete_path refused (outside-scope)")


def serve_args(workspace, catalog):
    # `--servers none`: the catalog's MCP servers stay unconnected (no child process is started).
    return ["serve", "--catalog", catalog, "--profile", PROFILE, "--exposure", EXPOSURE,
            "--workspace", workspace, "--store", os.path.join(workspace, "calls.sqlite"),
            "--servers", "none"]


async def over_stdio(toolcat, workspace, catalog):
    params = StdioServerParameters(command=toolcat, args=serve_args(workspace, catalog))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await exercise(session, toolcat, workspace, "stdio")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await list_changed(session, toolcat, catalog, "stdio")


async def over_http(toolcat, workspace, catalog):
    server = subprocess.Popen(
        [toolcat, *serve_args(workspace, catalog), "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        url = None
        for line in server.stderr:
            if "listening on " in line:
                url = line.split("listening on ", 1)[1].strip()
                break
        check(url is not None, "`toolcat serve --http` printed no address")
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await exercise(session, toolcat, workspace, "http")
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await list_changed(session, toolcat, catalog, "http")
    finally:
        server.terminate()
        server.wait(timeout=10)


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("stdio", "http"):
        print(__doc__, file=sys.stderr)
        return 2
    toolcat, transport = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as workspace:
        with open(os.path.join(workspace, "a.txt"), "w") as f:
            f.write("hello\n")
        catalog = os.path.join(workspace, "tools.toml")
        shutil.copyfile(REFERENCE, catalog)
        try:
            anyio.run(over_stdio if transport == "stdio" else over_http, toolcat, workspace, catalog)
        except AssertionError as e:
            print(f"{transport}: FAILED: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
