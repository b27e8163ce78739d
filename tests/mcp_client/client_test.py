#!/usr/bin/env python3
"""`toolcat serve` driven by the official Python MCP SDK (`mcp` from PyPI), as a real client.

Usage: client_test.py TOOLCAT stdio|http

Over the chosen transport, against profile `coding` and exposure `staging` in a temporary
workspace, serving a copy of the reference catalog (`--catalog`):

1. a client of the `initialize` handshake: list every page of tools and compare them with what
   `toolcat list` derives (the scope's tools plus the discovery meta-tools the profile owns, in
   catalog order); call a silent read tool (`read_file`, `glob`), whose `structuredContent` the
   SDK validates against its listed `outputSchema`; see a gated tool (`edit_file`)
   refused without approval; see a tool outside the scope (`delete_path`, exposure `full`)
   refused; check that nothing in the workspace changed and what the call store recorded;
2. `serve --toolsets files --tools glob`: only the `files` toolset's tools of the scope plus
   `glob` are listed, and an unknown toolset is refused at start naming the allowed ones;
3. `serve --dynamic`: the first list is the inline tools plus the meta-tools; a `tool_search`
   for `propose_edit` brings `notifications/tools/list_changed` (seen by the SDK's
   `message_handler`), the next list holds it, and it runs when called by name;
4. approval over elicitation: a client with an `elicitation_callback` that accepts with
   `approve: true` sees the gated `edit_file` run (the file changed, the message named the tool,
   its arguments and the file); one that declines sees `denied` and the file unchanged;
5. a client of protocol 2026-07-28 (`server/discover`): subscribe to tool-list changes
   (`subscriptions/listen`), move `read_file` to exposure `full` in the catalog file, receive
   `notifications/tools/list_changed`, and see `read_file` gone from the list and refused;
6. (http) `serve --tokens FILE`: a client sending `Authorization: Bearer TOKEN` (a `read-only`
   token of `toolcat token add`) lists exactly the read-only scope's tools and has a staging
   tool refused; a client without the header is refused (401).

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
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import ElicitResult, PaginatedRequestParams, ToolListChangedNotification

PROFILE = "coding"
EXPOSURE = "staging"
PAGE_SIZE = 50  # toolcat::mcp::PAGE_SIZE
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools.toml")


def toolcat_list(toolcat, *args):
    out = subprocess.run([toolcat, "list", "--json", *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def served_meta_tool(row):
    """A meta-tool the server answers: every one but `run_code`, which needs a session's script engine."""
    return row["tier"] == "loop" and row["name"] != "run_code"


def expected_names(toolcat):
    """The listed set, from `toolcat list`: the scope's tools plus the owned meta-tools."""
    in_scope = {row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE, "--exposure", EXPOSURE)}
    return [
        row["name"]
        for row in toolcat_list(toolcat, "--profile", PROFILE)
        if row["name"] in in_scope or served_meta_tool(row)
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
    listed = (await session.list_tools()).tools
    annotations = {t.name: t.annotations for t in listed}
    check(annotations["read_file"].read_only_hint is True, "read_file is read-only")
    output_schemas = {t.name: t.output_schema for t in listed}
    check(output_schemas["read_file"] and output_schemas["read_file"]["type"] == "object",
          f"read_file lists an object outputSchema: {output_schemas['read_file']}")
    check(output_schemas["tool_search"] is None, "a meta-tool lists no outputSchema")

    # The SDK validates `structuredContent` against the listed `outputSchema` (it raises otherwise).
    result = await session.call_tool("read_file", {"path": "a.txt"})
    check(not result.is_error, f"read_file failed: {result}")
    check("hello" in json.loads(result.content[0].text)["content"], f"read_file content: {result}")
    check(result.structured_content == json.loads(result.content[0].text),
          f"read_file's structuredContent is its result: {result}")
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


async def toolsets(session, toolcat, transport):
    """`--toolsets files --tools glob`: the files toolset's tools of the scope, plus glob."""
    await session.initialize()
    names, _ = await list_all(session)
    expected = [row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE, "--exposure", EXPOSURE)
                if ("files" in row["toolsets"] or row["name"] == "glob") and row["tier"] != "loop"]
    check(names == expected, f"--toolsets files --tools glob lists {names}, expected {expected}")
    check("tool_search" not in names and "run_command" not in names, f"nothing else is listed: {names}")
    body = error_body(await session.call_tool("run_command", {"command": "true"}))
    check(body["error"] == "outside-scope", f"a tool outside the selection is refused: {body}")
    print(f"{transport}: --toolsets files --tools glob lists {len(names)} tools")


async def dynamic(session, toolcat, transport, changes):
    """`--dynamic`: inline core + meta-tools first; a search adds what it found."""
    await session.initialize()
    first, _ = await list_all(session)
    rows = toolcat_list(toolcat, "--profile", PROFILE, "--exposure", EXPOSURE)
    in_scope = {row["name"] for row in rows}
    core = [row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE)
            if (row["name"] in in_scope and row["visibility"] == "inline") or served_meta_tool(row)]
    check(first == core, f"the first list is the inline core plus meta-tools: {set(first) ^ set(core)}")
    check("propose_edit" not in first, "propose_edit (discoverable) is not listed at first")
    result = await session.call_tool("tool_search", {"query": "propose_edit"})
    check(not result.is_error, f"tool_search: {result}")
    found = [t["name"] for t in json.loads(result.content[0].text)["tools"]]
    check("propose_edit" in found, f"tool_search found propose_edit: {found}")
    with anyio.fail_after(10):
        while not changes:
            await anyio.sleep(0.05)
    after, _ = await list_all(session)
    check(len(after) > len(first) and "propose_edit" in after, f"the list grew by the found tools: {set(after) - set(first)}")
    result = await session.call_tool("propose_edit", {"path": "b.txt", "old_string": "hello", "new_string": "bye"})
    check(not result.is_error and "+bye" in result.content[0].text, f"propose_edit ran by name: {result}")
    print(f"{transport}: --dynamic listed {len(first)} tools, tools/list_changed after tool_search, "
          f"{len(after)} tools after; propose_edit ran by name")


def list_changed_handler(changes):
    async def handler(message):
        if isinstance(message, ToolListChangedNotification):
            changes.append(message)
    return handler


def elicitation_callback(answer, asked):
    async def callback(context, params):
        asked.append(params.message)
        if answer == "accept":
            return ElicitResult(action="accept", content={"approve": True})
        return ElicitResult(action=answer)
    return callback


async def elicitation(session, workspace, transport, answer, asked):
    """A gated call asked of the client: `accept` runs it, anything else refuses it."""
    await session.initialize()
    path = os.path.join(workspace, "b.txt")
    with open(path, "w") as f:
        f.write("hello\n")
    result = await session.call_tool("edit_file", {"path": "b.txt", "old_string": "hello", "new_string": "bye"})
    check(len(asked) == 1, f"one elicitation was sent: {asked}")
    check("edit_file" in asked[0] and "b.txt" in asked[0] and "bye" in asked[0],
          f"the elicitation names the tool, its arguments and target: {asked[0]}")
    with open(path) as f:
        text = f.read()
    if answer == "accept":
        check(not result.is_error, f"approved edit_file ran: {result}")
        check(text == "bye\n", f"the approved edit changed b.txt: {text!r}")
    else:
        body = error_body(result)
        check(body["error"] == "denied", f"a {answer}d approval is denied: {body}")
        check(text == "hello\n", f"nothing ran after {answer}: {text!r}")
    print(f"{transport}: elicitation {answer}: edit_file {'ran' if answer == 'accept' else 'denied, nothing ran'}")


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
    narrowed = StdioServerParameters(command=toolcat, args=serve_args(workspace, catalog) + ["--toolsets", "files", "--tools", "glob"])
    async with stdio_client(narrowed) as (read, write):
        async with ClientSession(read, write) as session:
            await toolsets(session, toolcat, "stdio")
    changes = []
    dyn = StdioServerParameters(command=toolcat, args=serve_args(workspace, catalog) + ["--dynamic"])
    async with stdio_client(dyn) as (read, write):
        async with ClientSession(read, write, message_handler=list_changed_handler(changes)) as session:
            await dynamic(session, toolcat, "stdio", changes)
    for answer in ("accept", "decline", "cancel"):
        asked = []
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicitation_callback(answer, asked)) as session:
                await elicitation(session, workspace, "stdio", answer, asked)
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
        for answer in ("accept", "decline"):
            asked = []
            async with streamable_http_client(url) as streams:
                async with ClientSession(streams[0], streams[1], elicitation_callback=elicitation_callback(answer, asked)) as session:
                    await elicitation(session, workspace, "http", answer, asked)
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                await list_changed(session, toolcat, catalog, "http")
    finally:
        server.terminate()
        server.wait(timeout=10)
    shutil.copyfile(REFERENCE, catalog)  # undo the edit of `list_changed`
    dyn = start(toolcat, workspace, catalog, "--dynamic")
    try:
        url = listening(dyn)
        changes = []
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], message_handler=list_changed_handler(changes)) as session:
                await dynamic(session, toolcat, "http", changes)
        # Another session of the same server starts from the core again: the state is per session.
        other = []
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1], message_handler=list_changed_handler(other)) as session:
                await session.initialize()
                names, _ = await list_all(session)
                check("propose_edit" not in names, "a second HTTP session does not inherit the first's tools")
        print("http: --dynamic state is per Mcp-Session-Id session")
    finally:
        dyn.terminate()
        dyn.wait(timeout=10)
    await with_bearer_token(toolcat, workspace, catalog)


async def with_bearer_token(toolcat, workspace, catalog):
    """`serve --tokens FILE`: the token's scope (`read-only`) replaces the server's (`staging`)."""
    tokens = os.path.join(workspace, "tokens.toml")
    token = subprocess.run([toolcat, "token", "add", "--file", tokens, "--name", "python",
                            "--profile", PROFILE, "--scope", "read-only", "--catalog", catalog],
                           check=True, capture_output=True, text=True).stdout.strip()
    server = start(toolcat, workspace, catalog, "--tokens", tokens)
    try:
        url = listening(server)
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    names, _ = await list_all(session)
                    in_scope = {row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE, "--exposure", "read-only")}
                    expected = [row["name"] for row in toolcat_list(toolcat, "--profile", PROFILE)
                                if row["name"] in in_scope or served_meta_tool(row)]
                    check(names == expected, f"a read-only token lists the read-only scope: {set(names) ^ set(expected)}")
                    body = error_body(await session.call_tool("edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "x"}))
                    check(body["error"] == "outside-scope", f"a staging tool is refused to a read-only token: {body}")
        refused = False
        try:
            with anyio.fail_after(30):
                async with streamable_http_client(url) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
        except Exception as e:  # the SDK raises the 401's JSON-RPC error, inside task groups
            refused = "requires authentication" in repr(e)
        check(refused, "a client without a token is refused")
        print(f"http: a read-only bearer token lists {len(names)} tools (the read-only scope); no token is refused")
    finally:
        server.terminate()
        server.wait(timeout=10)


def start(toolcat, workspace, catalog, *extra):
    return subprocess.Popen(
        [toolcat, *serve_args(workspace, catalog), *extra, "--http", "127.0.0.1:0"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )


def listening(server):
    for line in server.stderr:
        if "listening on " in line:
            return line.split("listening on ", 1)[1].strip()
    raise AssertionError("`toolcat serve --http` printed no address")


def refused_at_start(toolcat, workspace, catalog):
    """Unknown or outside names are refused before serving, naming the allowed ones."""
    for flag, name, allowed in (("--toolsets", "nope", "files"), ("--tools", "delete_path", "read_file")):
        out = subprocess.run([toolcat, *serve_args(workspace, catalog), flag, name],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        check(out.returncode != 0 and name in out.stderr and allowed in out.stderr,
              f"`serve {flag} {name}` is refused naming it and the allowed ones: {out.returncode} {out.stderr}")
    print("serve --toolsets nope and --tools delete_path (exposure full) are refused at start")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in ("stdio", "http"):
        print(__doc__, file=sys.stderr)
        return 2
    toolcat, transport = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as workspace:
        with open(os.path.join(workspace, "a.txt"), "w") as f:
            f.write("hello\n")
        with open(os.path.join(workspace, "b.txt"), "w") as f:
            f.write("hello\n")
        catalog = os.path.join(workspace, "tools.toml")
        shutil.copyfile(REFERENCE, catalog)
        try:
            if transport == "stdio":
                refused_at_start(toolcat, workspace, catalog)
            anyio.run(over_stdio if transport == "stdio" else over_http, toolcat, workspace, catalog)
        except AssertionError as e:
            print(f"{transport}: FAILED: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
