"""Reproduce TEM (Carvalho et al.) Fig. 1a: TEM against Madlib at the same epsilon.

Both mechanisms are Euclidean on GloVe 6B 50d (the same vocabulary table), so their epsilon
means the same thing. Task (benchmarks/sentiment.py): Pang & Lee movie reviews, a classifier
trained on privatized reviews and tested on clean ones, several epsilon, 5 repeats (a fresh
stratified split and fresh noise each), Student-t 95% intervals.

    python benchmarks/repro_tem_fig1a.py                 # default: minutes
    python benchmarks/repro_tem_fig1a.py --full          # all 1,200 training reviews, 100k words
    python benchmarks/repro_tem_fig1a.py --figures docs/figures

The paper (as cited in issue 6) reports 52% for Madlib against 75% for TEM at epsilon = 2,
with 300d GloVe on IMDb; 50% is chance on these balanced data sets.
Writes benchmarks/results/repro_tem_fig1a.json.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from common import markdown_table, save
from sentiment import Task, run

import dxp_plugins as dxp

PAPER = {("madlib", 2.0): 0.52, ("tem", 2.0): 0.75}

NOTES = """\
Deviations from the paper's setting, and what they do:
* GloVe 6B 50d instead of 300d, and a vocabulary of the most frequent words (default 20k):
  epsilon is per unit of Euclidean distance, and distances in 50d GloVe are much shorter
  than in 300d, so the same epsilon is a different privacy level; compare the shapes (the
  gap between TEM and Madlib at small epsilon), not the epsilon at which they occur.
* Pang & Lee reviews (1,500, default 200 of them private for training) instead of IMDb
  (50k): lower clean accuracy and wider intervals; the classifier is TF-IDF + logistic
  regression, not the paper's model.
* Madlib's noise radius has mean n/epsilon = 25 at epsilon = 2 in 50 dimensions, far beyond
  the spread of the vocabulary, so its outputs are nearly independent of the input (chance
  accuracy); TEM's output law exp(-epsilon min(d, gamma) / 2) always favours near words."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="1,200 training reviews, 100k words")
    parser.add_argument("--epsilons", default=None, help="comma-separated (default 1,2,5,10)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--train-docs", type=int, help="private training reviews (default 200)")
    parser.add_argument("--vocab-size", type=int, help="most frequent GloVe words (default 20k)")
    parser.add_argument("--beta", type=float, default=1e-3, help="TEM's beta (Theorem 4.2)")
    parser.add_argument("--figures", type=Path, help="write the privacy-utility PNG here")
    args = parser.parse_args()
    epsilons = [float(e) for e in (args.epsilons or "1,2,5,10").split(",")]
    if args.full and args.epsilons is None:
        epsilons = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
    train_docs = args.train_docs if args.train_docs else (None if args.full else 200)
    vocab_size = args.vocab_size or (100_000 if args.full else 20_000)
    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    started = time.perf_counter()

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab_size)
    task = Task.load(args.repeats, train_docs)
    # Large enough to hold every law the corpus needs at 20k words (each ~8 bytes x |W|).
    cache_mb = 2048

    mechanisms = {
        "madlib": lambda epsilon: dxp.Madlib(table, epsilon),
        "tem": lambda epsilon: dxp.TEM(table, epsilon, beta=args.beta, cache_mb=cache_mb),
    }
    n_train = len(task.splits[0][0])
    print(
        f"TEM vs Madlib, GloVe 6B 50d ({vocab_size:,} words), Pang & Lee reviews: "
        f"{n_train} private training / {len(task.splits[0][1])} clean test reviews, "
        f"{args.repeats} repeats\n",
        file=sys.stderr,
    )
    runs, baseline = run(task, epsilons, mechanisms, log=lambda line: print(line, file=sys.stderr))
    rows = []
    for record in runs:
        row = record.row()
        paper = PAPER.get((record.label, record.epsilon))
        rows.append(
            [
                record.label,
                f"{record.epsilon:g}",
                row["accuracy"],
                f"[{row['low']:.3f}, {row['high']:.3f}]",
                "" if paper is None else f"{paper:.2f} (IMDb, 300d)",
                row["tokens_per_s"],
            ]
        )
    header = ["mechanism", "epsilon", "accuracy", "95% interval", "paper", "tokens/s"]
    print(f"## TEM paper Fig. 1a on Pang & Lee reviews (GloVe 50d, {vocab_size // 1000}k words)\n")
    print(markdown_table(header, rows))
    print(
        f"\nclean training text: accuracy {baseline[0]:.3f} "
        f"[{baseline[1]:.3f}, {baseline[2]:.3f}]; chance 0.5\n"
    )
    print(NOTES)
    if args.figures:
        from dxp_plugins import plotting

        args.figures.mkdir(parents=True, exist_ok=True)
        curves: dict[str, list[tuple[float, float, float, float]]] = {}
        for record in runs:
            row = record.row()
            curves.setdefault(record.label, []).append(
                (record.epsilon, row["accuracy"], row["low"], row["high"])
            )
        plotting.privacy_utility(
            curves,
            args.figures / "tem_vs_madlib_accuracy.png",
            baseline=baseline[0],
            baseline_label="clean training text",
            title=f"Pang & Lee reviews, GloVe 50d {vocab_size // 1000}k, {n_train} private",
        )
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s")
    path = save(
        "repro_tem_fig1a",
        {
            "command": " ".join(["python", *sys.argv]),
            "vocab_size": vocab_size,
            "train_docs": n_train,
            "test_docs": len(task.splits[0][1]),
            "repeats": args.repeats,
            "beta": args.beta,
            "baseline": baseline,
            "runs": [record.row() for record in runs],
            "seconds": elapsed,
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
