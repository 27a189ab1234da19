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
Writes benchmarks/results/repro_tem_fig1a.json (`--full`: repro_tem_fig1a_full.json; `--name`).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

from common import (
    add_faiss_threads,
    epsilon_list,
    float_range,
    markdown_table,
    plot_accuracy_by_n_w,
    positive_int,
    save,
    set_faiss_threads,
)
from sentiment import Task, add_task_options, figure_name, result_name, run, task_size

import dxp_plugins as dxp
from dxp_plugins.calibration import plausible_deniability, sample_words

PAPER = {("madlib", 2.0): 0.52, ("tem", 2.0): 0.75}

NOTES = """\
How this compares with the paper, and why it deviates:
* Same direction: at every epsilon TEM is at least as accurate as Madlib, Madlib is at chance
  at epsilon = 2 like the paper's 52%, and the gap is largest where Madlib's noise still
  swamps the embedding while TEM already favours near words. But TEM at epsilon = 2 is far
  below the paper's 75%: here the largest gap is at epsilon = 5.
* Epsilon is per unit of Euclidean distance in the embedding, so its meaning depends on the
  embedding's geometry: 50d GloVe (the only one installable offline) instead of 300d, and a
  20k-word vocabulary by default. Compare the shapes, not the epsilon where they occur; the
  deniability table shows what each epsilon means here.
* Same epsilon is not the same plausible deniability: at equal epsilon TEM keeps the input
  word more often than Madlib (higher N_w, smaller S_w), which is part of its utility. Both
  are epsilon*d-private; calibrate each by N_w / S_w (docs/choosing-epsilon.md) rather than
  by the number.
* Pang & Lee reviews (1,500; 200 private training reviews by default) instead of IMDb (50k),
  and a TF-IDF + logistic-regression classifier instead of the paper's model: lower clean
  accuracy and wider intervals.
* Madlib's noise radius has mean n/epsilon = 25 at epsilon = 2 in 50 dimensions, far beyond
  the distances between GloVe words (median nearest-neighbour distance about 2.7), so its
  outputs barely depend on the input; TEM's law exp(-epsilon min(d, gamma) / 2) always puts
  more weight on nearer words."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_task_options(parser)
    parser.add_argument(
        "--epsilons",
        type=epsilon_list,
        help="comma-separated (default 1,2,3,5,10; full 0.5,1,2,5,10,20)",
    )
    parser.add_argument(
        "--beta",
        type=float_range(0.0, 1.0, open_low=True, open_high=True),
        default=1e-3,
        help="TEM's beta (Theorem 4.2), in (0, 1)",
    )
    parser.add_argument("--words", type=positive_int, default=100, help="words for N_w / S_w")
    parser.add_argument("--samples", type=positive_int, default=300, help="Madlib draws per word")
    parser.add_argument("--figures", type=Path, help="write the privacy-utility PNG here")
    add_faiss_threads(parser)
    args = parser.parse_args(argv)
    set_faiss_threads(args)
    epsilons = args.epsilons
    if epsilons is None:
        epsilons = [0.5, 1.0, 2.0, 5.0, 10.0, 20.0] if args.full else [1.0, 2.0, 3.0, 5.0, 10.0]
    train_docs, vocab_size = task_size(args)
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
    words = sample_words(table, args.words, random_state=0)
    pd_rows = []
    deniability = []
    for epsilon in epsilons:
        for label, build in mechanisms.items():
            summary = plausible_deniability(build(epsilon), words, args.samples).summary()
            deniability.append(summary)
            pd_rows.append(
                [
                    label,
                    f"{epsilon:g}",
                    summary["method"],
                    summary["mean_n_w"],
                    summary["max_n_w"],
                    summary["mean_s_w"],
                    summary["min_s_w"],
                ]
            )
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
    print(
        f"## Plausible deniability at the same epsilon ({args.words} words; TEM exact, "
        f"Madlib {args.samples} draws; eta = 0.05)\n"
    )
    header = ["mechanism", "epsilon", "method", "mean N_w", "max N_w", "mean S_w", "min S_w"]
    print(markdown_table(header, pd_rows))
    print(
        f"\n(Monte Carlo S_w cannot exceed the {args.samples} draws: Madlib's true S_w at small "
        "epsilon is larger than shown; TEM's is exact.)\n"
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
            args.figures / figure_name(args, "repro_tem_fig1a", "tem_vs_madlib_accuracy"),
            baseline=baseline[0],
            baseline_label="clean training text",
            title=f"Pang & Lee reviews, GloVe 50d {vocab_size // 1000}k, {n_train} private",
        )
        mean_n_w = {(row["mechanism"], row["epsilon"]): row["mean_n_w"] for row in deniability}
        by_n_w = {
            label: [(mean_n_w[label, eps], acc, low, high) for eps, acc, low, high in points]
            for label, points in curves.items()
        }
        plot_accuracy_by_n_w(
            by_n_w,
            args.figures / figure_name(args, "repro_tem_fig1a", "tem_vs_madlib_accuracy_by_n_w"),
            baseline[0],
        )
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s")
    path = save(
        result_name(args, "repro_tem_fig1a"),
        {
            "command": " ".join(["python", *sys.argv]),
            "vocab_size": vocab_size,
            "train_docs": n_train,
            "test_docs": len(task.splits[0][1]),
            "repeats": args.repeats,
            "beta": args.beta,
            "baseline": baseline,
            "deniability": deniability,
            "runs": [record.row() for record in runs],
            "seconds": elapsed,
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
