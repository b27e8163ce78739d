#!/usr/bin/env python3
"""The peer of `toolcat eval`: BM25 retrieval with the `bm25s` library on the same benchmark files.

Usage:
    peer_bm25s.py --format metatool       --queries queries_dev.csv       --corpus plugin_des.json [--limit K] [--json]
    peer_bm25s.py --format metatool-multi --queries multi_queries_dev.json --corpus plugin_des.json [--limit K] [--json]
    peer_bm25s.py --format livemcpbench   --queries tasks_dev.json        --corpus tools.json      [--limit K] [--json]
    ... [--folds FILE]

Protocol (that of the reference measurement script (`../shared/bench/peer_bm25s.py`), but for
`--limit` and `--dedup-names` below):

- Documents: one per tool, in corpus order. MetaTool (`plugin_des.json`, `{name: description}`):
  text = name split into words + " " + description. LiveMCPBench (`tools.json`, servers holding
  `tools: {KEY: {tools: [...]}}`): text = name split into words + " " + description (empty when
  missing) + " " + the names of the `inputSchema` properties, each split into words. A name is
  split into words by putting a space between a lower-case letter and the upper-case letter after
  it (camelCase) and replacing every run of `_`, `-` and `.` by one space. The document id is the
  tool's name as the corpus gives it (LiveMCPBench names shared by several servers stay separate
  documents with the same id).
- Index and queries: `bm25s.tokenize` with `stopwords="en"` and the Snowball English stemmer of
  PyStemmer; `bm25s.BM25()` with its defaults (Lucene variant, k1 = 1.5, b = 0.75); the best 10 of
  each query by `retrieve(k=10, n_threads=1)`, in bm25s's order.
- Gold: MetaTool single = the `Tool` column; two-tool = the `tool` list; LiveMCPBench = every line
  of "Annotator Metadata"."Tools" of the form `<digits>. <name>` whose name is a tool name of the
  corpus (duplicates removed). A query without gold is skipped and counted.
- Metrics per query, averaged: R@k = |gold ∩ top k| / |gold| for k = 1, 5, 10 (top k as a set of
  ids); nDCG@5 = Σ over ranks r = 1..5 whose id is gold of 1/log2(r + 1), divided by
  Σ over r = 1..min(|gold|, 5) of 1/log2(r + 1); C@5 = 1 when every gold id is in the top 5.
- Time per query: tokenizing all queries and retrieving them in one call, one thread, divided by
  the number of queries, in microseconds.
- `--limit K`: about K queries, every ceil(n / K)-th in file order from the first (as
  `toolcat eval --limit K`).
- `--folds FILE`: also the metrics per cross-validation fold, under `cv` in the output (`k`,
  `seed`, `folds`: one object per fold with `queries` and the metrics, `mean` and `sd`: the sample
  standard deviation over the folds). FILE is the split of `toolcat eval --folds K --print-folds`
  for the same query file and `--limit` (`{"k", "seed", "folds": [fold of each query]}`, queries
  in file order after sampling, before those without gold are dropped): the split is defined once,
  in toolcat, and this script only reads it.
- `--dedup-names`: not the reference protocol but toolcat's rule for names shared by several tools:
  the best 30 are retrieved and each id is kept only at its first place, then the first 10 ids are
  scored, so a name shared by several servers takes one place.
"""
import argparse
import csv
import json
import math
import re
import statistics
import sys
import time

import bm25s
import Stemmer

CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
SEPARATORS = re.compile(r"[_.\-]+")
NUMBERED = re.compile(r"^\s*[0-9]+\.(.*)$")


def words_of_name(name):
    """`getUserProfile` -> `get User Profile`, `read_file` -> `read file`."""
    return SEPARATORS.sub(" ", CAMEL.sub(" ", name))


def metatool_corpus(path):
    with open(path, encoding="utf-8") as f:
        corpus = json.load(f)
    return [(name, words_of_name(name) + " " + text) for name, text in corpus.items()]


def livemcpbench_corpus(path):
    with open(path, encoding="utf-8") as f:
        servers = json.load(f)
    docs = []
    for server in servers:
        for listing in server["tools"].values():
            for tool in listing["tools"]:
                schema = tool.get("inputSchema") or {}
                params = " ".join(words_of_name(p) for p in (schema.get("properties") or {}))
                text = " ".join([words_of_name(tool["name"]), tool.get("description") or "", params])
                docs.append((tool["name"], text))
    return docs


def read_queries(fmt, path, names):
    """[(text, gold ids)] in file order; gold ids are restricted to `names`."""
    out = []
    if fmt == "metatool":
        with open(path, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                out.append((row["Query"], [row["Tool"]]))
    elif fmt == "metatool-multi":
        with open(path, encoding="utf-8") as f:
            out = [(row["query"], list(row["tool"])) for row in json.load(f)]
    else:
        with open(path, encoding="utf-8") as f:
            for task in json.load(f):
                listed = []
                for line in task["Annotator Metadata"]["Tools"].splitlines():
                    m = NUMBERED.match(line)
                    if m and m.group(1).strip():
                        listed.append(m.group(1).strip())
                out.append((task["Question"], listed))
    return [(text, sorted({g for g in gold if g in names})) for text, gold in out]


def sample(items, limit):
    if limit and 0 < limit < len(items):
        stride = -(-len(items) // limit)
        return items[::stride]
    return items


def scores(ranked, gold):
    gold = set(gold)
    recall = lambda k: len(gold & set(ranked[:k])) / len(gold)
    dcg = sum(1 / math.log2(r + 2) for r, d in enumerate(ranked[:5]) if d in gold)
    ideal = sum(1 / math.log2(r + 2) for r in range(min(5, len(gold))))
    return recall(1), recall(5), recall(10), dcg / ideal, float(gold <= set(ranked[:5]))


LABELS = ["R@1", "R@5", "R@10", "nDCG@5", "C@5"]


def read_folds(path, queries):
    """The fold of each of `queries` from `toolcat eval --print-folds` output at `path`."""
    with open(path, encoding="utf-8") as f:
        split = json.load(f)
    if len(split["folds"]) != len(queries):
        sys.exit(f"error: `{path}` splits {len(split['folds'])} queries, this run has {len(queries)}; "
                 "make it with `toolcat eval --print-folds` on the same query file and --limit")
    return split


def cross_validation(split, queries, per_query):
    """Per-fold averages of `per_query` (a tuple of LABELS values, or None for a query without
    gold, one per query of `queries`) and their mean and sample sd over the folds."""
    k = split["k"]
    folds = []
    for fold in range(k):
        rows = [s for f, s in zip(split["folds"], per_query) if f == fold and s is not None]
        n = max(len(rows), 1)
        entry = {"queries": len(rows), "skipped": sum(1 for f, s in zip(split["folds"], per_query)
                                                      if f == fold and s is None)}
        entry.update({label: sum(r[i] for r in rows) / n for i, label in enumerate(LABELS)})
        folds.append(entry)
    spread = lambda fn: {m: fn([f[m] for f in folds]) for m in LABELS}
    return {"k": k, "seed": split["seed"], "folds": folds, "mean": spread(statistics.mean),
            "sd": spread(statistics.stdev)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", required=True, choices=["metatool", "metatool-multi", "livemcpbench"])
    ap.add_argument("--queries", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--dedup-names", action="store_true")
    ap.add_argument("--folds", help="the split of `toolcat eval --folds K --print-folds` (JSON)")
    a = ap.parse_args()

    docs = livemcpbench_corpus(a.corpus) if a.format == "livemcpbench" else metatool_corpus(a.corpus)
    ids = [d for d, _ in docs]
    queries = sample(read_queries(a.format, a.queries, set(ids)), a.limit)
    evaluated = [(q, g) for q, g in queries if g]
    split = read_folds(a.folds, queries) if a.folds else None

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([t for _, t in docs], stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    start = time.perf_counter()
    tokens = bm25s.tokenize([q for q, _ in evaluated], stopwords="en", stemmer=stemmer, show_progress=False)
    depth = min(30, len(ids)) if a.dedup_names else 10
    found, _ = retriever.retrieve(tokens, k=depth, n_threads=1, show_progress=False)
    elapsed = time.perf_counter() - start

    sums = [0.0] * 5
    per_query = []
    for (_, gold), row in zip(evaluated, found):
        ranked = [ids[j] for j in row]
        if a.dedup_names:
            ranked = list(dict.fromkeys(ranked))[:10]
        per_query.append(scores(ranked, gold))
        for i, s in enumerate(per_query[-1]):
            sums[i] += s
    n = max(len(evaluated), 1)
    result = {
        "system": f"bm25s {bm25s.__version__}" + (" (names deduplicated)" if a.dedup_names else ""),
        "set": a.format,
        "tools": len(ids),
        "queries": len(evaluated),
        "skipped": len(queries) - len(evaluated),
        "R@1": sums[0] / n,
        "R@5": sums[1] / n,
        "R@10": sums[2] / n,
        "nDCG@5": sums[3] / n,
        "C@5": sums[4] / n,
        "us_per_query": elapsed * 1e6 / n,
    }
    if split:
        it = iter(per_query)
        result["cv"] = cross_validation(split, queries, [next(it) if g else None for _, g in queries])
    if a.json:
        json.dump(result, sys.stdout)
        print()
    else:
        print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()))


if __name__ == "__main__":
    main()
