"""Madlib throughput on GloVe 6B 50d against the faiss-only bound (issue 2, item 9).

For each vocabulary size: words/s of ``Madlib.privatize`` (exact and HNSW) and the time
faiss alone needs to search the same number of noisy queries with ``IndexFlatL2`` -- the
bound for exact search -- reported as ratios measured in one run: the three alternate in
``--rounds`` rounds (order reversed every other round) and each ratio is the median of the
rounds' ratios, so load that changes between rounds moves both sides (timed one after the
other, the 100k ratio read 0.99-4.69 on a busy machine; twenty-third session). HNSW
recall@1 against exact search on the same noisy queries. The search-only bound leaves out
noise and lookups; ``benchmarks/peers`` (its paired run) holds Madlib to a bound with them.
Input: the first ``--words`` privatized tokens of the Pang & Lee movie reviews (real text,
through the library's text path selection).

    python benchmarks/bench_madlib.py [--words 2000] [--vocab 100000 400000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np
from common import (
    alternating_times,
    epsilon_arg,
    glove_vocab,
    machine,
    markdown_table,
    median_ratio,
    peak_rss_mb,
    positive_int,
    save,
)

import dxp_plugins as dxp
from dxp_plugins.datasets import load_pang_lee
from dxp_plugins.mechanisms.madlib import sample_noise
from dxp_plugins.neighbors import BLAS_THRESHOLD, get_index, recall_at_1
from dxp_plugins.text import tokenize


def review_tokens(count: int) -> list[str]:
    """The first ``count`` tokens the text path would privatize in the Pang & Lee reviews."""
    texts, _ = load_pang_lee("reviews")
    tokens: list[str] = []
    for text in texts:
        doc = tokenize(text)
        tokens += [w for w, keep in zip(doc.words, doc.selected, strict=True) if keep]
        if len(tokens) >= count:
            return tokens[:count]
    raise RuntimeError("corpus too small")


def measure(vocab: int, tokens: list[str], epsilon: float, rounds: int) -> dict[str, float]:
    start = time.perf_counter()
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab)
    load = time.perf_counter() - start
    exact = dxp.Madlib(table, epsilon=epsilon)
    start = time.perf_counter()
    exact.privatize(tokens[:10])  # builds the exact index
    exact_setup = time.perf_counter() - start
    hnsw = dxp.Madlib(table, epsilon=epsilon, index="hnsw")
    start = time.perf_counter()
    hnsw.privatize(tokens[:10])
    hnsw_build = time.perf_counter() - start

    # The faiss-only bound: the same number of noisy queries, searched by a bare IndexFlatL2.
    ids = table.lookup(tokens)
    rng = np.random.default_rng()
    points = table.vectors[np.maximum(ids, 0)].astype(np.float64)
    points[ids < 0] = table.unk_vector()
    queries = (points + sample_noise(rng, len(ids), table.dim, epsilon)).astype(np.float32)
    # faiss at its best on small batches, as our search configures it (neighbors._faiss).
    faiss.cvar.distance_compute_blas_threshold = BLAS_THRESHOLD
    bare = faiss.IndexFlatL2(table.dim)
    bare.add(table.vectors)

    n = len(tokens)
    seconds = alternating_times(
        {
            "bound": lambda: bare.search(queries, 1),
            "exact": lambda: exact.privatize(tokens),
            "hnsw": lambda: hnsw.privatize(tokens),
        },
        rounds,
    )
    t_bound, t_exact, t_hnsw = (float(np.median(seconds[k])) for k in ("bound", "exact", "hnsw"))
    recall = recall_at_1(get_index(table, "hnsw"), get_index(table, "exact"), queries)
    return {
        "vocab": vocab,
        "load_s": load,
        "exact_setup_s": exact_setup,
        "hnsw_build_s": hnsw_build,
        "bound_wps": n / t_bound,
        "exact_wps": n / t_exact,
        "hnsw_wps": n / t_hnsw,
        "exact_over_bound": median_ratio(seconds["bound"], seconds["exact"]),
        "hnsw_over_exact": median_ratio(seconds["exact"], seconds["hnsw"]),
        "rounds": rounds,
        "hnsw_recall_at_1": recall,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=positive_int, default=2000)
    parser.add_argument("--vocab", type=glove_vocab, nargs="+", default=[100_000, 400_000])
    parser.add_argument("--epsilon", type=epsilon_arg, default=10.0)
    parser.add_argument(
        "--rounds", type=positive_int, default=7, help="alternating timing rounds (default 7)"
    )
    args = parser.parse_args(argv)

    tokens = review_tokens(args.words)
    rows = [measure(v, tokens, args.epsilon, args.rounds) for v in args.vocab]
    print(f"Madlib, GloVe 6B 50d, epsilon={args.epsilon:g}, {len(tokens)} review tokens")
    print(f"machine: {machine()}; faiss threads: {faiss.omp_get_max_threads()}\n")
    headers = [
        "vocab",
        "faiss-only bound (words/s, median time)",
        "Madlib exact (words/s, median time)",
        "exact / bound (median of rounds)",
        "Madlib HNSW (words/s, median time)",
        "HNSW / exact (median of rounds)",
        "HNSW recall@1",
        "HNSW build (s)",
        "load (s)",
    ]
    table_rows = [
        [
            f"{r['vocab']:,}",
            r["bound_wps"],
            r["exact_wps"],
            r["exact_over_bound"],
            r["hnsw_wps"],
            r["hnsw_over_exact"],
            r["hnsw_recall_at_1"],
            r["hnsw_build_s"],
            r["load_s"],
        ]
        for r in rows
    ]
    print(markdown_table(headers, table_rows))
    print(f"\npeak memory of this run: {peak_rss_mb():.0f} MiB")
    path = save("madlib", {"epsilon": args.epsilon, "words": len(tokens), "rows": rows})
    print(f"saved {path}")


if __name__ == "__main__":
    main()
