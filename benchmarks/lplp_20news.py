"""LPLP on 20 Newsgroups: no compression vs RANDOM / FREQUENCY / GLOVE-CLUSTER / GLOVE-DISPERSE.

For epsilon in {0.5, 5} and N in {1, 10}, under SOUND accounting (every row is a true
(N, epsilon)-LPLP release), measure:

* LDA (20 topics) on the private training counts: mean best Jaccard of the top-20 words of
  each non-private topic against the private topics, u_mass coherence of the private topics
  on the real counts, and topic exclusivity;
* LSA (TF-IDF, 100-dim TruncatedSVD, logistic regression) trained on private counts, tested
  on real held-out counts: accuracy over the 20 classes; and the relative reconstruction
  error of the real counts in the private subspace;
* documents/s of compress + noise + decompress.

A second block reproduces the paper's per-entry epsilon' = M*epsilon/K (calibration="paper")
for GLOVE-CLUSTER and states its TRUE epsilon beside the claimed one.

Each private row is repeated ``--repeats`` times (default 3) with the groupings' and the
noise's seeds 0, 1, 2, ...: one seed's topic Jaccard moves by as much as the groupings
differ at heavy noise, so the table gives the mean and the range. LDA's own seed stays 0 (the
non-private reference topics are fixed).

Default: a public vocabulary of M = 1000 frequent GloVe words (stop words removed), K = M/4,
2,000 training and 2,000 test documents; ``--full`` uses all 11,293 / 7,528 and writes
``results/lplp_20news_full.*`` beside the default-size results.

    .venv/bin/python benchmarks/lplp_20news.py [--full] [--vocab 2000] [--ratio 4] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import dxp_plugins as dxp
from benchmarks.common import RESULTS, best_time, machine, markdown_table, positive_int, save
from dxp_plugins import topics
from dxp_plugins.datasets import load_20newsgroups
from dxp_plugins.lplp import GroupingContext, LPLPRelease, make_groups
from dxp_plugins.lplp.weights import public_weights

SETTINGS = [(0.5, 1), (0.5, 10), (5.0, 1), (5.0, 10)]
#: The public vocabulary is drawn from the PUBLIC_POOL most frequent GloVe words.
PUBLIC_POOL = 50_000
GROUPINGS = ["none", "random", "frequency", "glove-cluster", "glove-disperse"]
N_TOPICS = 20
SEED = 0
#: Metrics averaged over the repeats (the table shows mean and range).
METRICS = ("jaccard", "coherence", "exclusivity", "lsa_accuracy", "reconstruction")


def public_vocabulary(table: dxp.EmbeddingTable, size: int) -> list[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    order = np.argsort(table.frequency_rank)
    words = (table.words[i] for i in order)
    chosen = [w for w in words if w.isalpha() and len(w) > 2 and w not in ENGLISH_STOP_WORDS]
    return chosen[:size]


def lda_topics(counts, vocabulary):
    from sklearn.decomposition import LatentDirichletAllocation

    lda = LatentDirichletAllocation(
        n_components=N_TOPICS, max_iter=8, learning_method="batch", random_state=SEED
    )
    lda.fit(counts)
    return lda.components_, topics.top_words(lda.components_, vocabulary)


def evaluate(private, data, vocabulary, reference_topics):
    from sklearn.decomposition import TruncatedSVD

    components, words = lda_topics(private, vocabulary)
    svd = TruncatedSVD(100, random_state=SEED).fit(private.astype(np.float64))
    return {
        "jaccard": float(topics.topic_jaccard(words, reference_topics).mean()),
        "coherence": topics.coherence(words, data["train"], vocabulary),
        "exclusivity": topics.exclusivity(components),
        "lsa_accuracy": topics.lsa_accuracy(
            private, data["train_labels"], data["test"], data["test_labels"], 100
        ),
        "reconstruction": topics.reconstruction_error(svd, data["train"]),
    }


def grouping(
    name: str, vocabulary: list[str], n_groups: int, table: dxp.EmbeddingTable, seed: int
) -> tuple[np.ndarray, np.ndarray, str, float]:
    """The partition of ``name`` (``"none"``: no compression) drawn with ``seed``, the zipf
    decompression weights, their source and the grouping's fit seconds."""
    context = GroupingContext(
        n_features=len(vocabulary),
        n_groups=n_groups,
        rng=np.random.default_rng(seed),
        words=tuple(vocabulary),
        embeddings=table,
    )
    weights, weights_source = public_weights("zipf", context)
    if name == "none":
        return np.arange(len(vocabulary)), weights, weights_source, 0.0
    start = time.perf_counter()
    partition = make_groups(name, context)
    return partition, weights, weights_source, time.perf_counter() - start


def spread(repeats: list[dict[str, float]], key: str) -> list[float]:
    """``[min, max]`` of ``key`` over the repeats."""
    values = [r[key] for r in repeats]
    return [float(min(values)), float(max(values))]


def with_range(row: dict[str, object], key: str) -> str:
    """``mean (min to max)`` of a metric, 3 significant digits."""
    low, high = row[f"{key}_range"]  # type: ignore[misc]
    if low == high:
        return f"{row[key]:.3g}"
    return f"{row[key]:.3g} ({low:.3g} to {high:.3g})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="all 11,293 / 7,528 documents")
    parser.add_argument("--vocab", type=positive_int, default=1000, help="public vocabulary size M")
    parser.add_argument("--ratio", type=positive_int, default=4, help="compression M/K")
    parser.add_argument(
        "--throughput", action="store_true", help="only docs/s on the whole training set"
    )
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=3,
        help="seeds per private row (groupings and noise; default 3)",
    )
    args = parser.parse_args(argv)
    if args.ratio > args.vocab:
        parser.error(f"--ratio {args.ratio} leaves no group: it must be at most --vocab")
    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=PUBLIC_POOL)
    vocabulary = public_vocabulary(table, args.vocab)
    if len(vocabulary) < args.vocab:
        parser.error(
            f"--vocab {args.vocab:,}: only {len(vocabulary):,} public words (alphabetic, "
            f"longer than 2 letters, not stop words) among the {PUBLIC_POOL:,} most frequent"
        )
    if args.throughput:
        throughput(vocabulary, args.vocab, args.ratio)
        return
    from sklearn.feature_extraction.text import CountVectorizer

    n_groups = len(vocabulary) // args.ratio
    vectorizer = CountVectorizer(vocabulary=vocabulary)
    train_texts, train_labels = load_20newsgroups("train")
    test_texts, test_labels = load_20newsgroups("test")
    rng = np.random.default_rng(SEED)
    n_train, n_test = (len(train_texts), len(test_texts)) if args.full else (2000, 2000)
    train_rows = np.sort(rng.permutation(len(train_texts))[:n_train])
    test_rows = np.sort(rng.permutation(len(test_texts))[:n_test])
    data = {
        "train": vectorizer.transform([train_texts[i] for i in train_rows]),
        "test": vectorizer.transform([test_texts[i] for i in test_rows]),
        "train_labels": [train_labels[i] for i in train_rows],
        "test_labels": [test_labels[i] for i in test_rows],
    }
    print(f"M={len(vocabulary)} K={n_groups} train={n_train} test={n_test}", flush=True)

    _, reference_topics = lda_topics(data["train"], vocabulary)
    baseline = evaluate(data["train"], data, vocabulary, reference_topics)
    print("non-private", baseline, flush=True)

    rows = []
    runs = [(name, "sound") for name in GROUPINGS] + [("glove-cluster", "paper")]
    fit_seconds: dict[str, list[float]] = {}
    partitions: dict[tuple[str, int], tuple[np.ndarray, np.ndarray, str]] = {}
    for name in dict.fromkeys(name for name, _ in runs):  # once per seed, for every setting
        for seed in range(SEED, SEED + args.repeats):
            *partitions[name, seed], fitted = grouping(name, vocabulary, n_groups, table, seed)
            fit_seconds.setdefault(name, []).append(fitted)
    weights_source = ""
    for epsilon, n_changes in SETTINGS:
        for name, mode in runs:
            repeats = []
            for seed in range(SEED, SEED + args.repeats):
                partition, weights, weights_source = partitions[name, seed]
                release = LPLPRelease(
                    partition,
                    epsilon=epsilon,
                    n_changes=n_changes,
                    weights=weights,
                    calibration=mode,
                    grouping=name,
                    weights_source=weights_source,
                    random_state=seed,
                )
                start = time.perf_counter()
                private, record = release.release(data["train"])
                seconds = time.perf_counter() - start
                repeats.append(
                    {
                        "seed": seed,
                        "docs_per_s": n_train / seconds,
                        "tokens_per_doc": float(private.sum() / n_train),
                        **evaluate(private, data, vocabulary, reference_topics),
                    }
                )
            row = {
                "grouping": name,
                "calibration": mode,
                "claimed_epsilon": record.claimed_epsilon,
                "true_epsilon": record.epsilon,
                "N": n_changes,
                "K": record.n_groups,
                "docs_per_s": float(np.median([r["docs_per_s"] for r in repeats])),
                **{key: float(np.mean([r[key] for r in repeats])) for key in METRICS},
                **{f"{key}_range": spread(repeats, key) for key in METRICS},
                "repeats": repeats,
            }
            rows.append(row)
            print({k: v for k, v in row.items() if k != "repeats"}, flush=True)

    headers = [
        "grouping",
        "calibration",
        "claimed ε",
        "TRUE ε",
        "N",
        "K",
        "topic Jaccard",
        "u_mass",
        "exclusivity",
        "LSA acc.",
        "recon. err.",
        "docs/s (median)",
    ]
    table_rows = [
        ["non-private", "-", "-", "∞", "-", len(vocabulary)]
        + [baseline[k] for k in ("jaccard", "coherence", "exclusivity", "lsa_accuracy")]
        + [baseline["reconstruction"], "-"]
    ]
    table_rows += [
        [
            r["grouping"],
            r["calibration"],
            r["claimed_epsilon"],
            r["true_epsilon"],
            r["N"],
            r["K"],
            *(with_range(r, key) for key in METRICS),
            r["docs_per_s"],
        ]
        for r in rows
    ]
    markdown = markdown_table(headers, table_rows)
    print(markdown)
    command = "benchmarks/lplp_20news.py" + (" --full" if args.full else "")
    command += f" --repeats {args.repeats}"
    name = "lplp_20news_full" if args.full else "lplp_20news"  # both sizes stay side by side
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text(
        f"# LPLP on 20 Newsgroups\n\n`{command} --vocab {args.vocab} --ratio {args.ratio}` on "
        f"{machine()}; M={len(vocabulary)}, K={n_groups}, {n_train} train / {n_test} test "
        f"documents; decompression weights: {weights_source}; grouping fit seconds "
        f"(median): "
        + ", ".join(f"{k} {np.median(v):.1f}" for k, v in fit_seconds.items())
        + f". Private rows: mean (min to max) over {args.repeats} seeds of the groupings and the "
        f"noise; ε/N = 0.5 appears twice (ε 0.5, N 1 and ε 5, N 10: the same noise law).\n\n"
        + markdown
        + "\n"
    )
    save(
        name,
        {
            "command": command,
            "vocab": len(vocabulary),
            "groups": n_groups,
            "train": n_train,
            "test": n_test,
            "baseline": baseline,
            "repeats": args.repeats,
            "grouping_fit_seconds": fit_seconds,
            "rows": rows,
        },
    )
    plot(rows, baseline, RESULTS / f"{name}.png")


def throughput(vocabulary: list[str], vocab: int, ratio: int) -> None:
    """docs/s of compress + noise + decompress on all 11,293 training posts (secure noise)."""
    from sklearn.feature_extraction.text import CountVectorizer

    counts = CountVectorizer(vocabulary=vocabulary).transform(load_20newsgroups("train")[0])
    context = GroupingContext(len(vocabulary), len(vocabulary) // ratio, np.random.default_rng())
    groups = {
        "K=M (none)": np.arange(len(vocabulary)),
        f"K=M/{ratio}": make_groups("random", context),
    }
    rows = []
    for epsilon, n_changes in SETTINGS:
        for label, partition in groups.items():
            release = LPLPRelease(partition, epsilon=epsilon, n_changes=n_changes)
            seconds = best_time(lambda release=release: release.release(counts), repeats=2)
            rows.append([epsilon, n_changes, label, counts.shape[0] / seconds])
            print(rows[-1], flush=True)
    markdown = markdown_table(["ε", "N", "compression", "docs/s"], rows)
    print(markdown)
    (RESULTS / "lplp_throughput.md").write_text(
        f"# LPLP throughput (compress + noise + decompress)\n\n`benchmarks/lplp_20news.py "
        f"--throughput --vocab {vocab} --ratio {ratio}` on {machine()}; {counts.shape[0]} "
        f"20 Newsgroups training posts, M={len(vocabulary)}, secure ChaCha20 noise (a large "
        f"dense release draws half its rows on a second thread).\n\n{markdown}\n"
    )


def plot(rows, baseline, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [("jaccard", "LDA topic Jaccard (top 20)"), ("coherence", "u_mass coherence")]
    metrics.append(("lsa_accuracy", "LSA accuracy (20 classes)"))
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    labels = [f"ε={e:g}, N={n}" for e, n in SETTINGS]
    series = [(name, "sound") for name in GROUPINGS] + [("glove-cluster", "paper")]
    width = 0.8 / len(series)
    for axis, (key, title) in zip(axes, metrics, strict=True):
        for index, (name, mode) in enumerate(series):
            chosen = [
                next(
                    r
                    for r in rows
                    if r["grouping"] == name
                    and r["calibration"] == mode
                    and (r["claimed_epsilon"], r["N"]) == setting
                )
                for setting in SETTINGS
            ]
            values = np.array([r[key] for r in chosen])
            ranges = np.array([r.get(f"{key}_range", [r[key], r[key]]) for r in chosen])
            label = name if mode == "sound" else "glove-cluster, paper ε' (true ε = 4ε)"
            axis.bar(
                np.arange(len(SETTINGS)) + index * width,
                values,
                width,
                yerr=np.abs(ranges.T - values),  # the range over the seeds
                capsize=2,
                label=label,
                hatch="//" if mode == "paper" else None,
            )
        axis.axhline(baseline[key], color="black", linestyle="--", label="non-private")
        axis.set_xticks(np.arange(len(SETTINGS)) + 0.4 - width / 2, labels)
        axis.set_title(title)
    axes[0].legend(fontsize=7)
    figure.suptitle(
        "LPLP on 20 Newsgroups (sound accounting unless marked; bars: mean, whiskers: range "
        "over the seeds)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
