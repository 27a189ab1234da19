"""``NeighborIndex.k_nearest`` against ``search`` on the same Madlib queries (thirtieth session).

For each vocabulary size: the exact index's ``search`` (the float64-nearest row, what Madlib
decodes with) and ``k_nearest(queries, k)`` for k = 1, 2 and 5, on the same noisy vectors
(GloVe rows of Pang & Lee-like frequency, Madlib noise at epsilon 10), timed in alternating
rounds in one process; the ratio time(k_nearest) / time(search) is the median over rounds.
Also the share of queries whose k nearest rows faiss's candidates could not certify (sent
to the float64 search).

    python benchmarks/bench_k_nearest.py [--vocab 20000 100000] [--queries 8192] [--rounds 7]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from common import (
    alternating_times,
    glove_vocab,
    machine,
    markdown_table,
    median_ratio,
    positive_int,
    save,
)

import dxp_plugins as dxp
from dxp_plugins import neighbors
from dxp_plugins.mechanisms import madlib_noise

KS = (1, 2, 5)


def queries_for(emb: Any, count: int, epsilon: float) -> np.ndarray:
    """Madlib's noisy vectors of ``count`` words drawn by a Zipf-like law over the rows."""
    rng = np.random.default_rng(0)
    ranks = np.minimum(rng.zipf(1.2, count) - 1, len(emb) - 1)
    points = emb.vectors[ranks].astype(np.float64)
    return points + madlib_noise(rng, count, emb.dim, epsilon)


def uncertified_share(index: Any, queries: np.ndarray, k: int) -> float:
    """Share of queries whose k nearest rows went to the float64 search."""
    searched: list[int] = []
    real = neighbors._exact_k_rows

    def counting(vectors: np.ndarray, chosen: np.ndarray, wanted: int) -> np.ndarray:
        searched.append(len(chosen))
        return real(vectors, chosen, wanted)

    neighbors._exact_k_rows = counting  # type: ignore[assignment]
    try:
        index.k_nearest(queries, k)
    finally:
        neighbors._exact_k_rows = real  # type: ignore[assignment]
    return sum(searched) / len(queries)


def timed(index: Any, queries: np.ndarray, rounds: int) -> dict[str, list[float]]:
    """Seconds per round of ``search`` and of ``k_nearest`` for each k, alternating."""
    rng = np.random.default_rng(1)
    systems = {"search": lambda: index.search(queries, rng)}
    for k in KS:
        systems[f"k={k}"] = lambda k=k: index.k_nearest(queries, k)
    for run in systems.values():  # warm: index built, BLAS loaded
        run()
    return alternating_times(systems, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab", type=glove_vocab, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--queries", type=positive_int, default=8192)
    parser.add_argument("--rounds", type=positive_int, default=7)
    args = parser.parse_args()
    rows, payload = [], {}
    for size in args.vocab:
        emb = dxp.load_embeddings("glove-6b-50d", vocab_size=size)
        index = neighbors.get_index(emb)
        queries = queries_for(emb, args.queries, 10.0)
        seconds = timed(index, queries, args.rounds)
        for k in KS:
            ratio = median_ratio(seconds[f"k={k}"], seconds["search"])
            share = uncertified_share(index, queries, k)
            best = min(seconds[f"k={k}"])
            rows.append([f"{size:,}", k, args.queries / best, ratio, share])
            payload[f"{size}-k{k}"] = {
                "queries_per_s": args.queries / best,
                "ratio_to_search": ratio,
                "uncertified_share": share,
            }
        payload[f"{size}-search"] = {"queries_per_s": args.queries / min(seconds["search"])}
    headers = ["vocab", "k", "k_nearest queries/s", "time ÷ search", "float64 search share"]
    print(machine())
    print(markdown_table(headers, rows))
    print(f"saved {save('k_nearest', payload)}")


if __name__ == "__main__":
    main()
