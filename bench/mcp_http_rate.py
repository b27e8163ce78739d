#!/usr/bin/env python3
"""Requests per second of `toolcat serve --http` for `ping` and `tools/list`, on keep-alive loopback
connections. Python standard library only (`http.client`).

Usage:
    mcp_http_rate.py TOOLCAT [--requests N] [--connections C] [--profile P] [--exposure S]
                     [--json OUT]

Starts `TOOLCAT serve --http 127.0.0.1:0 --servers none` with a temporary call store and workspace
(profile `minimal`, exposure `full` unless told), reads the bound address from its stderr, then per
method (`ping`, `tools/list`) and per mode:

- sequential: one connection (HTTP/1.1 keep-alive) opens one MCP session (`initialize`, then
  `notifications/initialized`), sends one untimed warm-up request, then N requests one after the
  other; the rate is N / elapsed, and p50/p99 are of the single round trips (nearest rank);
- concurrent: C threads, each with its own connection and session, opened before the clock
  starts; each sends N requests one after the other; the rate is C * N / elapsed wall time.

Every answer is read whole and checked (a JSON-RPC `result` with the request's `id`, whether it
comes as `application/json` or as server-sent events). Prints a Markdown table; `--json OUT`
writes the figures too.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

PROTOCOL = "2025-06-18"


def percentile(sorted_ns, q):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_ns:
        return 0
    k = max(0, min(len(sorted_ns) - 1, -(-q * len(sorted_ns) // 100) - 1))
    return sorted_ns[int(k)]


class Session:
    """One keep-alive connection and one MCP session on it."""

    def __init__(self, host, port):
        self.host = f"{host}:{port}"
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.session = None
        self.next_id = 0
        init = self.call(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "rate", "version": "0"}},
        )
        assert "serverInfo" in init, init
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message):
        headers = {
            "Host": self.host,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": PROTOCOL,
        }
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", body=json.dumps(message), headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status >= 300:
            raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
        sid = response.getheader("Mcp-Session-Id")
        if sid:
            self.session = sid
        return response.getheader("Content-Type", ""), body

    def call(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        kind, body = self.post(message)
        answer = None
        if kind.startswith("text/event-stream"):
            for line in body.decode().splitlines():
                if line.startswith("data:") and line[5:].strip():
                    v = json.loads(line[5:])
                    if v.get("id") == self.next_id:
                        answer = v
        else:
            answer = json.loads(body)
        if not answer or answer.get("id") != self.next_id or "result" not in answer:
            raise RuntimeError(f"no result for {method} #{self.next_id}: {body[:300]!r}")
        return answer["result"]


def start(toolcat, profile, exposure, work):
    store = os.path.join(work, "calls.sqlite")
    proc = subprocess.Popen(
        [toolcat, "serve", "--http", "127.0.0.1:0", "--servers", "none", "--profile", profile,
         "--exposure", exposure, "--store", store, "--workspace", work],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"listening on http://([^/\s]+)/mcp", line)
        if m:
            # Keep draining stderr so the server never blocks on it.
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
            host, port = m.group(1).rsplit(":", 1)
            return proc, host, int(port)
    proc.kill()
    raise RuntimeError("`toolcat serve --http` printed no address")


def sequential(host, port, method, n):
    s = Session(host, port)
    s.call(method)
    times = []
    t0 = time.perf_counter_ns()
    for _ in range(n):
        a = time.perf_counter_ns()
        s.call(method)
        times.append(time.perf_counter_ns() - a)
    elapsed = time.perf_counter_ns() - t0
    s.conn.close()
    times.sort()
    return {"rate": n / (elapsed / 1e9), "p50_ms": percentile(times, 50) / 1e6,
            "p99_ms": percentile(times, 99) / 1e6}


def concurrent(host, port, method, n, c):
    sessions = [Session(host, port) for _ in range(c)]
    for s in sessions:
        s.call(method)
    errors = []
    barrier = threading.Barrier(c + 1)

    def run(s):
        barrier.wait()
        try:
            for _ in range(n):
                s.call(method)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter_ns()
    for t in threads:
        t.join()
    elapsed = time.perf_counter_ns() - t0
    if errors:
        raise errors[0]
    for s in sessions:
        s.conn.close()
    return {"rate": c * n / (elapsed / 1e9)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("toolcat")
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--connections", type=int, default=8)
    ap.add_argument("--profile", default="minimal")
    ap.add_argument("--exposure", default="full")
    ap.add_argument("--json")
    a = ap.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        proc, host, port = start(a.toolcat, a.profile, a.exposure, work)
        try:
            for method in ["ping", "tools/list"]:
                seq = sequential(host, port, method, a.requests)
                con = concurrent(host, port, method, a.requests, a.connections)
                results[method] = {"sequential": seq, "concurrent": con}
        finally:
            proc.kill()
            proc.wait()
    print(f"`{a.toolcat}`, profile `{a.profile}`, exposure `{a.exposure}`, N = {a.requests}, "
          f"C = {a.connections}")
    print()
    print("| method | sequential req/s | p50 ms | p99 ms | concurrent req/s |")
    print("|---|---:|---:|---:|---:|")
    for method, r in results.items():
        s, c = r["sequential"], r["concurrent"]
        print(f"| `{method}` | {s['rate']:,.0f} | {s['p50_ms']:.2f} | {s['p99_ms']:.2f} | {c['rate']:,.0f} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"toolcat": a.toolcat, "requests": a.requests, "connections": a.connections,
                       "profile": a.profile, "exposure": a.exposure, "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
