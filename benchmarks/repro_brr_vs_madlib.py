"""Reproduce BRR (Carvalho et al.) Sections 5-6: BRR against Madlib at matched privacy.

Madlib's epsilon is per unit of Euclidean distance between GloVe vectors, BRR's per flipped
bit of a binary code, so equal numbers are not equal privacy. The BRR paper matches them by
the privacy ratio R = P_d(Euclidean) / P_d(Hamming) (P_d: the average pairwise distance over
the vocabulary, or the maximum): BRR at epsilon_BRR = R * epsilon_Madlib spends the same
privacy on a typical pair of words. Here, on GloVe 6B 50d with 256-bit SimHash codes:

1. R (average and maximum) from :func:`dxp_plugins.calibration.privacy_ratio`;
2. plausible deniability (mean / worst N_w and S_w) of both at each matched pair of epsilon;
3. the sentiment task of benchmarks/sentiment.py (Pang & Lee reviews, train on private,
   test on clean, 5 repeats, 95% intervals);
4. storage: codes + binary index against float vectors + float index (``BRR.storage()``).

    python benchmarks/repro_brr_vs_madlib.py            # default: minutes
    python benchmarks/repro_brr_vs_madlib.py --full     # all 1,200 training reviews, 100k words

Writes benchmarks/results/repro_brr_vs_madlib.json (`--full`: repro_brr_vs_madlib_full.json;
`--name`).
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
    markdown_table,
    plot_accuracy_by_n_w,
    positive_int,
    save,
    set_faiss_threads,
)
from sentiment import Task, add_task_options, figure_name, result_name, run, task_size

import dxp_plugins as dxp
from dxp_plugins.calibration import plausible_deniability, privacy_ratio, sample_words

NOTES = """\
How this compares with the paper (qualitative: its numbers are not restated here). As we
read it, BRR's claim is utility close to Madlib's at a matched privacy ratio, with a small
fraction of the storage and cheap operations on device. Deviations: 50d GloVe and SimHash
codes of 256 bits (the paper's binarization and dimensions may differ), a vocabulary of the
most frequent words, Pang & Lee reviews instead of the paper's data sets, and a TF-IDF +
logistic-regression classifier. The privacy ratio matches an *average* (or worst) pair of
words, not every pair: per pair, the two guarantees still differ, which is why the
plausible-deniability columns are printed beside the accuracies: in the default run BRR at
the average-matched epsilon kept words less often than Madlib (lower N_w) and was somewhat
less accurate at Madlib epsilon 5-10, and the two met at 20; brr_vs_madlib_accuracy_by_n_w.png
puts both on the N_w axis."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_task_options(parser)
    parser.add_argument(
        "--epsilons",
        type=epsilon_list,
        default="5,10,20",
        help="Madlib epsilons (comma-separated, default 5,10,20)",
    )
    parser.add_argument("--n-bits", type=positive_int, default=256, help="BRR code length")
    parser.add_argument(
        "--statistic", choices=["average", "maximum"], default="average", help="P_d used for R"
    )
    parser.add_argument("--words", type=positive_int, default=100, help="words for N_w / S_w")
    parser.add_argument(
        "--samples", type=positive_int, default=300, help="draws per word for N_w / S_w"
    )
    parser.add_argument("--figures", type=Path, help="write the privacy-utility PNG here")
    add_faiss_threads(parser)
    args = parser.parse_args(argv)
    set_faiss_threads(args)
    epsilons = args.epsilons
    train_docs, vocab_size = task_size(args)
    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    started = time.perf_counter()

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab_size)
    reference = dxp.BRR(table, 1.0, n_bits=args.n_bits)
    tic = time.perf_counter()
    ratio = privacy_ratio(dxp.Madlib(table, 1.0), reference, random_state=0)
    ratio_seconds = time.perf_counter() - tic
    r_value = ratio.average if args.statistic == "average" else ratio.maximum

    def brr_epsilon(epsilon: float) -> float:
        return ratio.equivalent_epsilon(epsilon, statistic=args.statistic)

    print(f"## Privacy ratio on GloVe 6B 50d ({vocab_size:,} words), {args.n_bits}-bit codes\n")
    print(
        markdown_table(
            ["statistic", "Euclidean P_d", "Hamming P_d", "R"],
            [
                [
                    "average",
                    ratio.a.average,
                    ratio.b.average,
                    f"{ratio.average:.4f} [{ratio.average_interval[0]:.4f}, "
                    f"{ratio.average_interval[1]:.4f}]",
                ],
                ["maximum", ratio.a.maximum, ratio.b.maximum, f"{ratio.maximum:.4f}"],
            ],
        )
    )
    print(f"\nmatching by the {args.statistic}: epsilon_BRR = {r_value:.4f} x epsilon_Madlib\n")

    words = sample_words(table, args.words, random_state=0)
    pd_rows = []
    deniability: list[dict[str, object]] = []
    for epsilon in epsilons:
        for label, mech in (
            ("madlib", dxp.Madlib(table, epsilon)),
            ("brr", dxp.BRR(table, brr_epsilon(epsilon), n_bits=args.n_bits)),
        ):
            summary = plausible_deniability(mech, words, args.samples).summary()
            deniability.append(summary)
            pd_rows.append(
                [
                    f"{epsilon:g}",
                    label,
                    f"{mech.epsilon:.3g}",
                    summary["mean_n_w"],
                    summary["max_n_w"],
                    summary["mean_s_w"],
                    summary["min_s_w"],
                ]
            )
    print(
        f"## Plausible deniability at matched epsilon ({args.words} words, {args.samples} "
        "draws, eta = 0.05)\n"
    )
    header = ["Madlib eps", "mechanism", "its eps", "mean N_w", "max N_w", "mean S_w", "min S_w"]
    print(markdown_table(header, pd_rows))

    task = Task.load(args.repeats, train_docs)
    mechanisms = {
        "madlib": lambda epsilon: dxp.Madlib(table, epsilon),
        "brr": lambda epsilon: dxp.BRR(table, brr_epsilon(epsilon), n_bits=args.n_bits),
    }
    n_train = len(task.splits[0][0])
    runs, baseline = run(task, epsilons, mechanisms, log=lambda line: print(line, file=sys.stderr))
    rows = []
    for record in runs:
        row = record.row()
        own = record.epsilon if record.label == "madlib" else brr_epsilon(record.epsilon)
        rows.append(
            [
                f"{record.epsilon:g}",
                record.label,
                f"{own:.3g}",
                row["accuracy"],
                f"[{row['low']:.3f}, {row['high']:.3f}]",
                row["tokens_per_s"],
            ]
        )
    print(
        f"\n## Sentiment: {n_train} private training / {len(task.splits[0][1])} clean test "
        f"reviews, {args.repeats} repeats\n"
    )
    header = ["Madlib eps", "mechanism", "its eps", "accuracy", "95% interval", "tokens/s"]
    print(markdown_table(header, rows))
    print(
        f"\nclean training text: accuracy {baseline[0]:.3f} "
        f"[{baseline[1]:.3f}, {baseline[2]:.3f}]; chance 0.5\n"
    )
    storage = reference.storage()
    print(f"## Storage ({vocab_size:,} words)\n")
    print(
        markdown_table(
            ["", "BRR (codes + binary index)", "Madlib (vectors + float index)", "BRR / Madlib"],
            [
                [
                    "MB",
                    storage["brr_total"] / 1e6,
                    storage["madlib_total"] / 1e6,
                    storage["ratio"],
                ]
            ],
        )
    )
    print("\n" + NOTES)
    if args.figures:
        from dxp_plugins import plotting

        args.figures.mkdir(parents=True, exist_ok=True)
        curves: dict[str, list[tuple[float, float, float, float]]] = {}
        for record in runs:
            row = record.row()
            label = "madlib" if record.label == "madlib" else f"brr (eps = {r_value:.3f} x)"
            curves.setdefault(label, []).append(
                (record.epsilon, row["accuracy"], row["low"], row["high"])
            )
        figure = plotting.privacy_utility(
            curves,
            baseline=baseline[0],
            baseline_label="clean training text",
            title=f"Pang & Lee, GloVe 50d {vocab_size // 1000}k; x: Madlib ε",
        )
        figure.savefig(
            args.figures / figure_name(args, "repro_brr_vs_madlib", "brr_vs_madlib_accuracy"),
            dpi=90,
        )
        mean_n_w = {(row["mechanism"], row["epsilon"]): row["mean_n_w"] for row in deniability}
        by_n_w: dict[str, list[tuple[float, float, float, float]]] = {}
        for record in runs:
            row = record.row()
            own = record.epsilon if record.label == "madlib" else brr_epsilon(record.epsilon)
            by_n_w.setdefault(record.label, []).append(
                (mean_n_w[record.label, own], row["accuracy"], row["low"], row["high"])
            )
        plot_accuracy_by_n_w(
            by_n_w,
            args.figures
            / figure_name(args, "repro_brr_vs_madlib", "brr_vs_madlib_accuracy_by_n_w"),
            baseline[0],
        )
    elapsed = time.perf_counter() - started
    print(f"\ntotal {elapsed:.0f} s")
    path = save(
        result_name(args, "repro_brr_vs_madlib"),
        {
            "command": " ".join(["python", *sys.argv]),
            "vocab_size": vocab_size,
            "n_bits": args.n_bits,
            "statistic": args.statistic,
            "ratio": {
                "average": ratio.average,
                "average_interval": ratio.average_interval,
                "maximum": ratio.maximum,
                "seconds": ratio_seconds,
            },
            "deniability": deniability,
            "train_docs": n_train,
            "repeats": args.repeats,
            "baseline": baseline,
            "runs": [record.row() for record in runs],
            "storage": storage,
            "seconds": elapsed,
        },
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
