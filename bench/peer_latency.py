#!/usr/bin/env python3
"""Search latency of the peer, bm25s, on the scaled catalogs toolcat is timed on.

Usage:
    peer_latency.py --results DIR [--limit K] [--passes P]

Reads what `toolcat-bench latency --out DIR` wrote: `DIR/queries.json` (the queries, a JSON array
of strings) and `DIR/corpus-N.jsonl` (one tool per line, `{"name", "text"}`, text = the exported
name split into words + " " + the description, exactly the text toolcat's side names), for every
N found. Writes `DIR/peer_latency.json` in the shape of `DIR/latency.json`.

Protocol, the same as `bench/peer_bm25s.py` for the index and each query:
- index: `bm25s.tokenize(texts, stopwords="en", stemmer=Snowball English)` then `bm25s.BM25()`
  with its defaults (Lucene variant, k1 = 1.5, b = 0.75); the indexing time is reported;
- one query = `bm25s.tokenize([query], ...)` + `retrieve(tokens, k=min(K, N), n_threads=1)`,
  timed alone with `time.perf_counter_ns`, as toolcat's `Catalog::search` is timed per call;
- one untimed warm-up pass over every query, then P timed passes; p50 and p99 by the
  nearest-rank method (as `toolcat_bench::stats::percentile`), and the mean;
- for reference, the batched mean as `bench/peer_bm25s.py` measures it: every query tokenized
  and retrieved in one call, divided by the number of queries.
"""
import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import bm25s
import Stemmer


def percentile(sorted_values, p):
    """Nearest rank: the smallest value with at least p% of the values at or below it."""
    rank = math.ceil(p / 100.0 * len(sorted_values))
    return sorted_values[min(max(rank, 1), len(sorted_values)) - 1]


def summary(values):
    s = sorted(values)
    return {
        "p50_us": percentile(s, 50),
        "p99_us": percentile(s, 99),
        "mean_us": sum(s) / len(s),
        "samples": len(s),
    }


def measure(corpus_path, queries, limit, passes):
    texts = []
    with open(corpus_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                texts.append(json.loads(line)["text"])
    stemmer = Stemmer.Stemmer("english")
    started = time.perf_counter_ns()
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    index_ms = (time.perf_counter_ns() - started) / 1e6
    k = min(limit, len(texts))

    def one(query):
        tokens = bm25s.tokenize([query], stopwords="en", stemmer=stemmer, show_progress=False)
        return retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)

    for q in queries:
        one(q)
    timings = []
    for _ in range(passes):
        for q in queries:
            started = time.perf_counter_ns()
            one(q)
            timings.append((time.perf_counter_ns() - started) / 1e3)

    started = time.perf_counter_ns()
    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)
    batched_us = (time.perf_counter_ns() - started) / 1e3 / len(queries)
    return {
        "tools": len(texts),
        "index_ms": index_ms,
        "all": summary(timings),
        "batched_mean_us": batched_us,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, type=Path)
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()

    queries_path = args.results / "queries.json"
    try:
        queries = json.loads(queries_path.read_text(encoding="utf-8"))
    except OSError as e:
        sys.exit(f"peer_latency: cannot read {queries_path}: {e}; run `toolcat-bench latency` first")
    corpora = sorted(
        args.results.glob("corpus-*.jsonl"),
        key=lambda p: int(re.search(r"corpus-(\d+)", p.name).group(1)),
    )
    if not corpora:
        sys.exit(f"peer_latency: no corpus-N.jsonl in {args.results}; run `toolcat-bench latency` first")
    sizes = []
    for path in corpora:
        row = measure(path, queries, args.limit, args.passes)
        print(f"bm25s {row['tools']} tools: {json.dumps(row['all'])}", flush=True)
        sizes.append(row)
    out = {
        "system": f"bm25s {bm25s.__version__}",
        "limit": args.limit,
        "passes": args.passes,
        "queries": len(queries),
        "sizes": sizes,
    }
    (args.results / "peer_latency.json").write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
