"""An MCP server (stdio, JSON-RPC by hand, Python's standard library only) with one tool,
`slow_read`, for the cluster harness (tests/cluster/run): a call appends `start MARKER PPID` to
the file named by the `SLOW_LOG` environment variable (PPID: the replica that started this
server), sleeps `seconds`, appends `end MARKER PPID` and answers. The log shows how many times
a call's handler ran, and whether it finished.
"""

import json
import os
import sys
import threading
import time

LOG = os.environ.get("SLOW_LOG", os.devnull)
OUT = threading.Lock()
TOOL = {
    "name": "slow_read",
    "description": "Waits a number of seconds, then answers",
    "inputSchema": {
        "type": "object",
        "properties": {"seconds": {"type": "number"}, "marker": {"type": "string"}},
        "required": ["seconds", "marker"],
    },
}


def send(message):
    with OUT:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def note(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def call(id, arguments):
    marker = str(arguments.get("marker", ""))
    note("start %s %d" % (marker, os.getppid()))
    time.sleep(float(arguments.get("seconds", 0)))
    note("end %s %d" % (marker, os.getppid()))
    send({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "slept " + marker}]}})


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if "id" not in message or "method" not in message:
        continue
    method, id = message["method"], message["id"]
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-06-18")
        send({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "slow", "version": "1"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": id, "result": {"tools": [TOOL]}})
    elif method == "tools/call":
        params = message.get("params", {})
        threading.Thread(target=call, args=(id, params.get("arguments", {})), daemon=True).start()
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": id, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no method " + method}})
