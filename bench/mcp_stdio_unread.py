#!/usr/bin/env python3
"""Memory of `toolcat serve` (stdio) under a client that writes requests and reads no answer.
Python standard library only; Linux (`/proc/PID/status`).

Usage:
    mcp_stdio_unread.py TOOLCAT [--requests N] [--profile P] [--exposure S]

Starts `TOOLCAT serve --servers none` (profile `coding`, exposure `full` unless told) with a
temporary call store and workspace, initializes, then writes N `tools/list` requests from a thread
without reading stdout, until all are written or the writes have made no progress for 3 s (the
server stopped reading). Prints how many requests were written by then and the server's resident
memory (`VmRSS`) before and after; then reads every answer and checks each id came back once.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("toolcat")
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--profile", default="coding")
    ap.add_argument("--exposure", default="full")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        proc = subprocess.Popen(
            [a.toolcat, "serve", "--servers", "none", "--profile", a.profile, "--exposure", a.exposure,
             "--store", os.path.join(work, "calls.sqlite"), "--workspace", work],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        send = lambda m: proc.stdin.write((json.dumps(m) + "\n").encode())
        send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "unread", "version": "0"}}})
        proc.stdin.flush()
        assert b"serverInfo" in proc.stdout.readline()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdin.flush()
        time.sleep(0.5)
        before = rss_kib(proc.pid)
        written = [0]
        line = lambda i: (json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list"}) + "\n").encode()

        def write():
            for i in range(1, a.requests + 1):
                proc.stdin.write(line(i))
                proc.stdin.flush()
                written[0] = i

        t = threading.Thread(target=write, daemon=True)
        t.start()
        last, since = 0, time.time()
        while t.is_alive():
            time.sleep(0.1)
            if written[0] != last:
                last, since = written[0], time.time()
            elif time.time() - since > 3:
                break
        time.sleep(1)
        after = rss_kib(proc.pid)
        state = "all written" if not t.is_alive() else "writes blocked"
        print(f"{a.requests} requests: {written[0]} written ({state}); VmRSS {before / 1024:.1f} MiB "
              f"before, {after / 1024:.1f} MiB after")
        seen = set()
        for _ in range(a.requests):
            v = json.loads(proc.stdout.readline())
            assert "result" in v and v["id"] not in seen, v
            seen.add(v["id"])
        t.join()
        proc.stdin.close()
        proc.wait()
        print(f"every answer read: {len(seen)} distinct ids")
    return 0


if __name__ == "__main__":
    sys.exit(main())
