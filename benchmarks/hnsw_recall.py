"""HNSW recall@1 against exact search on Madlib queries, GloVe 6B 50d (the table in docs/python.md).

A Madlib query is the noisy vector Madlib decodes: the embedding of a word (the table's
public UNK point for a word outside it) plus noise from the mechanism's own sampler
(:func:`dxp_plugins.mechanisms.madlib.sample_noise`). Recall@1 is
:func:`dxp_plugins.neighbors.recall_at_1`: the share of queries whose HNSW nearest row is the
exact nearest row (or an identical twin of it), both indexes from
:func:`dxp_plugins.neighbors.get_index`, as ``Madlib(index=...)`` builds them.

Rows (the words behind the queries):

* 20k / 100k / 400k words, review tokens: the same ``--queries`` word tokens of Pang & Lee
  review sentences (shuffled with ``--seed`` and tokenized by the library's text path,
  repeats kept: a frequency-weighted sample; ``bench_tem_brr.word_sample``);
* 400k words, uniformly drawn words: rows drawn uniformly from all 400,000 (mostly rare).

Table 1: HNSW defaults (m=32, ef_construction=40, ef_search=64) at each of ``--epsilons``.
Table 2: the same rows at ``--ef-epsilon`` for each ``--ef-search`` (the beam width a user
raises for better recall; the graph is the same). At one epsilon the noise is the same for
every row and every index (seeded by ``--seed`` and epsilon), so cells differ only by the
vocabulary or the index.

    python benchmarks/hnsw_recall.py                      # 5,000 queries per cell
    python benchmarks/hnsw_recall.py --queries 500 --epsilons 1,10 --ef-search 64,128

Writes benchmarks/results/hnsw_recall.json and .md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np
from bench_tem_brr import word_sample
from common import (
    GLOVE_WORDS,
    RESULTS,
    add_faiss_threads,
    epsilon_arg,
    epsilon_list,
    int_range,
    machine,
    markdown_table,
    positive_int,
    save,
    set_faiss_threads,
)

import dxp_plugins as dxp
from dxp_plugins.mechanisms.madlib import sample_noise
from dxp_plugins.neighbors import get_index, recall_at_1

#: (label, vocabulary size, where the query words come from)
ROWS = [
    ("20k words, Pang & Lee review tokens", 20_000, "review"),
    ("100k words, review tokens", 100_000, "review"),
    ("400k words, review tokens", GLOVE_WORDS, "review"),
    ("400k words, uniformly drawn words", GLOVE_WORDS, "uniform"),
]
#: HNSW's defaults (dxp_plugins.neighbors.HNSWIndex).
DEFAULTS = {"m": 32, "ef_construction": 40, "ef_search": 64}


def ef_list(text: str) -> list[int]:
    """An argparse ``type``: comma-separated ef_search values, e.g. ``64,128``."""
    items = [item.strip() for item in text.split(",")]
    try:
        values = [int(item) for item in items]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if any(not 1 <= value <= 100_000 for value in values):
        raise argparse.ArgumentTypeError(f"ef_search values must be in [1, 100,000], got {text}")
    return values


def noise(seed: int, count: int, dim: int, epsilon: float) -> np.ndarray:
    """Madlib's noise for ``count`` queries: the same for every row at one epsilon."""
    key = int(np.float64(epsilon).view(np.uint64))
    return sample_noise(np.random.default_rng([seed, key]), count, dim, epsilon)


def points(table: dxp.EmbeddingTable, kind: str, tokens: list[str], seed: int) -> np.ndarray:
    """float64 points the queries start from (the UNK point for a word outside the table)."""
    if kind == "uniform":
        ids = np.random.default_rng([seed, 1]).integers(len(table), size=len(tokens))
    else:
        ids = table.lookup(tokens)
    found = table.vectors[np.maximum(ids, 0)].astype(np.float64)
    found[ids < 0] = table.unk_vector()
    return found


def standard_error(recall: float, n: int) -> float:
    return math.sqrt(max(recall * (1.0 - recall), 1.0 / n) / n)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=positive_int, default=5000, help="per cell")
    parser.add_argument("--epsilons", type=epsilon_list, default=[1.0, 5.0, 10.0, 20.0])
    parser.add_argument("--ef-search", type=ef_list, default=[64, 128, 256])
    parser.add_argument("--ef-epsilon", type=epsilon_arg, default=10.0)
    parser.add_argument("--seed", type=int_range(0), default=0)
    add_faiss_threads(parser)
    args = parser.parse_args(argv)
    set_faiss_threads(args)
    started = time.perf_counter()

    tokens = word_sample(args.queries, args.seed)
    if len(tokens) < args.queries:
        parser.error(f"--queries: the corpus has only {len(tokens):,} word tokens")
    glove = dxp.load_embeddings("glove-6b-50d")
    epsilons = sorted({*args.epsilons, args.ef_epsilon})
    noises = {eps: noise(args.seed, args.queries, glove.dim, eps) for eps in epsilons}
    cells: list[dict[str, Any]] = []
    seconds: dict[str, float] = {}
    outside: dict[str, int] = {}
    for label, vocab, kind in ROWS:
        tic = time.perf_counter()
        table = glove if vocab == len(glove) else glove.most_frequent(vocab)
        start = points(table, kind, tokens, args.seed)
        exact = get_index(table, "exact")
        outside[label] = int((table.lookup(tokens) < 0).sum()) if kind == "review" else 0
        plan = [(eps, DEFAULTS["ef_search"]) for eps in args.epsilons]
        plan += [(args.ef_epsilon, ef) for ef in args.ef_search]
        for eps, ef in dict.fromkeys(plan):
            hnsw = get_index(table, "hnsw", ef_search=ef)
            recall = recall_at_1(hnsw, exact, start + noises[eps])
            cells.append(
                {
                    "row": label,
                    "vocab": vocab,
                    "words": kind,
                    "oov_tokens": outside[label],
                    "epsilon": eps,
                    "ef_search": ef,
                    "queries": args.queries,
                    "recall_at_1": recall,
                    "standard_error": standard_error(recall, args.queries),
                }
            )
        seconds[label] = time.perf_counter() - tic
        print(f"{label}: {seconds[label]:.0f} s", file=sys.stderr, flush=True)

    def cell(label: str, eps: float, ef: int) -> str:
        for c in cells:
            if (c["row"], c["epsilon"], c["ef_search"]) == (label, eps, ef):
                return f"{c['recall_at_1']:.3f}"
        raise KeyError((label, eps, ef))

    defaults = ", ".join(f"{k}={v}" for k, v in DEFAULTS.items())
    main_table = markdown_table(
        [f"HNSW recall@1 vs exact (defaults {defaults})", *(f"ε = {e:g}" for e in args.epsilons)],
        [
            [label, *(cell(label, e, DEFAULTS["ef_search"]) for e in args.epsilons)]
            for label, _, _ in ROWS
        ],
    )
    ef_table = markdown_table(
        [
            f"HNSW recall@1 vs exact at ε = {args.ef_epsilon:g}",
            *(f"ef_search={ef}" for ef in args.ef_search),
        ],
        [
            [label, *(cell(label, args.ef_epsilon, ef) for ef in args.ef_search)]
            for label, _, _ in ROWS
        ],
    )
    elapsed = time.perf_counter() - started
    command = " ".join(["python", "benchmarks/hnsw_recall.py", *sys.argv[1:]])
    report = (
        f"# HNSW recall@1 on Madlib queries (GloVe 6B 50d)\n\n`{command}` on {machine()}; "
        f"{args.queries:,} Madlib queries per cell, seed {args.seed}; review tokens: "
        f"{args.queries:,} word tokens of shuffled Pang & Lee review sentences (outside the "
        "table: "
        + ", ".join(
            f"{outside[label]:,} at {vocab // 1000}k"
            for label, vocab, kind in ROWS
            if kind == "review"
        )
        + ", privatized from the UNK point as Madlib does); uniformly drawn words: rows drawn "
        f"uniformly from all {GLOVE_WORDS:,}. Standard error of a cell at most "
        f"{max(c['standard_error'] for c in cells):.3f} "
        f"(binomial); total {elapsed:.0f} s.\n\n{main_table}\n\n{ef_table}\n"
    )
    print(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "hnsw_recall.md").write_text(report)
    path = save(
        "hnsw_recall",
        {
            "command": command,
            "queries": args.queries,
            "seed": args.seed,
            "epsilons": args.epsilons,
            "ef_epsilon": args.ef_epsilon,
            "ef_search": args.ef_search,
            "hnsw_defaults": DEFAULTS,
            "cells": cells,
            "seconds": {"total": elapsed, **seconds},
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
