"""Sentiment on the Pang & Lee movie reviews, trained on private text, tested on clean text.

    python examples/sklearn_sentiment.py [--epsilons 2 5 10 25] [--vocab-size 20000] [--hnsw]

The "training time" setting of Feyisetan et al. (WSDM 2020, Section 5): the model never sees
a raw training review, only its Madlib-privatized version, and is evaluated on clean test
reviews. One scikit-learn Pipeline does both, because ``TextPrivatizer(privatize_at="fit")``
privatizes in ``fit`` and passes text through at prediction time:

    TextPrivatizer -> TfidfVectorizer -> LogisticRegression

Data: 1,500 full reviews (750 positive / 750 negative) of the Pang & Lee polarity corpus
(dxp_plugins.datasets.load_pang_lee), split 70/30 stratified. Prints a table of accuracy
against the clean baseline per epsilon and draws it to examples/output/sentiment_accuracy.png.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import Pipeline

from dxp_plugins import TextPrivatizer
from dxp_plugins.datasets import load_pang_lee

OUTPUT = Path(__file__).resolve().parent / "output"


def classifier_steps() -> list[tuple[str, object]]:
    return [
        ("tfidf", TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, 2))),
        ("classifier", LogisticRegression(C=10.0, max_iter=2000)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--epsilons",
        type=float,
        nargs="+",
        default=[2.0, 5.0, 10.0, 25.0],
        help="privacy per unit of embedding distance, one model each (larger keeps more "
        "words; default 2 5 10 25)",
    )
    parser.add_argument("--vocab-size", type=int, default=20_000, help="GloVe words kept")
    parser.add_argument(
        "--hnsw", action="store_true", help="approximate search: faster, a little less utility"
    )
    parser.add_argument("--test-size", type=float, default=0.3)
    parser.add_argument("--figure", type=Path, default=OUTPUT / "sentiment_accuracy.png")
    args = parser.parse_args()
    if not all(0 < epsilon <= 700 for epsilon in args.epsilons):
        parser.error("every --epsilons value must be in (0, 700]")
    if not 1 <= args.vocab_size <= 400_000:
        parser.error("--vocab-size must be between 1 and 400,000 (GloVe 6B's size)")
    if not 0 < args.test_size < 1:
        parser.error("--test-size must be a fraction in (0, 1)")

    texts, labels = load_pang_lee("reviews")
    train, test, y_train, y_test = train_test_split(
        texts, labels, test_size=args.test_size, stratify=labels, random_state=0
    )
    words = sum(len(text.split()) for text in train)
    print(f"Pang & Lee reviews: {len(train)} train ({words:,} words), {len(test)} test\n")

    start = time.perf_counter()
    clean = Pipeline(classifier_steps()).fit(train, y_train)
    baseline = clean.score(test, y_test)
    rows = [("clean", baseline, 0, time.perf_counter() - start)]
    for epsilon in sorted(args.epsilons):
        start = time.perf_counter()
        private = Pipeline(
            [
                (
                    "private",
                    TextPrivatizer(
                        epsilon=epsilon,
                        vocab_size=args.vocab_size,
                        mechanism_params={"index": "hnsw" if args.hnsw else "exact"},
                        privatize_at="fit",
                    ),
                ),
                *classifier_steps(),
            ]
        )
        private.fit(train, y_train)
        guarantee = private.named_steps["private"].last_guarantee_  # the training release
        accuracy = private.score(test, y_test)  # clean test text passes through (no guarantee)
        seconds = time.perf_counter() - start
        rows.append((f"{epsilon:g}", accuracy, guarantee.tokens_privatized, seconds))
        print(f"  epsilon {epsilon:g}: accuracy {accuracy:.3f} ({rows[-1][3]:.0f} s)", flush=True)

    print("\n| epsilon | test accuracy | vs clean | training tokens privatized | seconds |")
    print("|---|---|---|---|---|")
    for name, accuracy, tokens, seconds in rows:
        delta = "" if name == "clean" else f"{accuracy - baseline:+.3f}"
        print(f"| {name} | {accuracy:.3f} | {delta} | {tokens:,} | {seconds:.1f} |")
    print(
        "\nEach privatized token is epsilon*d-private (d: Euclidean distance in GloVe 6B 50d, "
        f"{args.vocab_size:,} most frequent words). Noise is secure (not seeded), so each run "
        "trains on a different private text: accuracies vary from run to run by more than the "
        f"test set's standard error ({(baseline * (1 - baseline) / len(test)) ** 0.5:.3f}), "
        "most at middling epsilon. benchmarks/repro_tem_fig1a.py repeats runs for intervals."
    )
    draw(rows, baseline, args.figure)


def draw(rows: list[tuple[str, float, int, float]], baseline: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epsilons = [float(name) for name, *_ in rows[1:]]
    accuracies = [accuracy for _, accuracy, *_ in rows[1:]]
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot(epsilons, accuracies, "o-", label="trained on private text (Madlib)")
    axis.axhline(baseline, color="grey", linestyle="--", label="trained on clean text")
    axis.axhline(0.5, color="lightgrey", linestyle=":", label="chance")
    axis.set_xscale("log")
    axis.minorticks_off()
    axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    axis.set_xlabel("epsilon per token")
    axis.set_ylabel("accuracy on clean test reviews")
    axis.set_title("Pang & Lee sentiment: training-time privatization")
    axis.legend(loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    print(f"figure: {path}")


if __name__ == "__main__":
    main()
