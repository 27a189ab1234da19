"""The sentiment task of the reproductions: train on private text, test on clean text.

Pang & Lee movie reviews (1,500 full reviews, 750/750, dxp_plugins/datasets.py), the closest
offline substitute for the IMDb reviews of the TEM paper. Each repeat draws a stratified
split and fresh noise; the private training reviews go through the library's one text path
(:func:`dxp_plugins.text.privatize_texts`), a TF-IDF + logistic-regression classifier is
trained on them and scored on the clean test reviews. Intervals are Student-t 95%
intervals over the repeats.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from common import file_stem, glove_vocab, int_range, positive_int

from dxp_plugins.datasets import load_pang_lee
from dxp_plugins.text import privatize_texts

#: Private training reviews a split can hold: 1,500 Pang & Lee reviews less 300 (20%) for test.
MAX_TRAIN_DOCS = 1200


def add_task_options(parser: argparse.ArgumentParser) -> None:
    """``--full``, ``--repeats``, ``--train-docs``, ``--vocab-size`` and ``--name`` of a
    reproduction on this task; :func:`task_size` reads the sizes, :func:`result_name` the name."""
    parser.add_argument("--full", action="store_true", help="1,200 training reviews, 100k words")
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument(
        "--train-docs",
        type=int_range(2, MAX_TRAIN_DOCS),
        help=f"private training reviews (default 200; full {MAX_TRAIN_DOCS:,})",
    )
    parser.add_argument(
        "--vocab-size", type=glove_vocab, help="most frequent GloVe words (default 20k; full 100k)"
    )
    parser.add_argument(
        "--name",
        type=file_stem,
        help="results file benchmarks/results/NAME.json (default: the script's name, "
        "plus _full with --full)",
    )


def task_size(args: argparse.Namespace) -> tuple[int | None, int]:
    """``(train_docs, vocab_size)``: the options, else 200 and 20k (``--full``: all and 100k)."""
    train_docs = (None if args.full else 200) if args.train_docs is None else args.train_docs
    vocab_size = (100_000 if args.full else 20_000) if args.vocab_size is None else args.vocab_size
    return train_docs, vocab_size


def result_name(args: argparse.Namespace, script: str) -> str:
    """``--name``, else ``script`` (``script_full`` under ``--full``, so a full run keeps the
    default run's results)."""
    if args.name is not None:
        return str(args.name)
    return f"{script}_full" if args.full else script


def figure_name(args: argparse.Namespace, script: str, stem: str) -> str:
    """``stem.png`` for the default run, else with the run's suffix (``stem_full.png``,
    ``stem_NAME.png``): figures of another run do not replace those the docs show."""
    name = result_name(args, script)
    suffix = name[len(script) :] if name.startswith(script) else f"_{name}"
    return f"{stem}{suffix}.png"


@dataclass
class Task:
    """Texts, labels and the train/test splits of every repeat."""

    texts: list[str]
    labels: np.ndarray
    splits: list[tuple[np.ndarray, np.ndarray]]

    @classmethod
    def load(cls, repeats: int, train_docs: int | None, test_fraction: float = 0.2) -> Task:
        """``repeats`` stratified splits; ``train_docs`` caps the (private) training set."""
        from sklearn.model_selection import StratifiedShuffleSplit

        texts, labels = load_pang_lee("reviews")
        y = np.asarray(labels)
        n_test = round(test_fraction * len(texts))
        n_train = len(texts) - n_test if train_docs is None else train_docs
        splitter = StratifiedShuffleSplit(
            n_splits=repeats, train_size=n_train, test_size=n_test, random_state=0
        )
        splits = list(splitter.split(np.zeros(len(y)), y))
        return cls(texts, y, splits)


def accuracy(
    train_texts: Sequence[str], train_y: np.ndarray, test_texts: Sequence[str], test_y: np.ndarray
) -> float:
    """TF-IDF (unigrams, min_df 2, sublinear tf) + logistic regression, test accuracy."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    model = make_pipeline(
        TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"(?u)\b\w+\b"),
        LogisticRegression(C=10.0, max_iter=2000),
    )
    model.fit(list(train_texts), train_y)
    return float(np.mean(model.predict(list(test_texts)) == test_y))


def interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t ``confidence`` interval over repeats."""
    from scipy.stats import t

    array = np.asarray(values, dtype=np.float64)
    mean = float(array.mean())
    if len(array) < 2:
        return mean, math.nan, math.nan
    half = float(
        t.ppf(0.5 + confidence / 2, len(array) - 1) * array.std(ddof=1) / math.sqrt(len(array))
    )
    return mean, mean - half, mean + half


@dataclass
class Run:
    """Accuracy per repeat and privatization throughput of one (mechanism, epsilon)."""

    label: str
    epsilon: float
    accuracies: list[float] = field(default_factory=list)
    tokens: int = 0
    seconds: float = 0.0

    def row(self) -> dict[str, Any]:
        mean, low, high = interval(self.accuracies)
        return {
            "mechanism": self.label,
            "epsilon": self.epsilon,
            "accuracy": mean,
            "low": low,
            "high": high,
            "repeats": self.accuracies,
            "tokens_per_s": self.tokens / self.seconds if self.seconds else None,
        }


def run(
    task: Task,
    epsilons: Sequence[float],
    mechanisms: dict[str, Callable[[float], Any]],
    *,
    log: Callable[[str], None] = print,
) -> tuple[list[Run], tuple[float, float, float]]:
    """Every mechanism at every epsilon over every split; plus the clean baseline.

    ``mechanisms[label](epsilon)`` builds a mechanism (once per epsilon: caches such as
    TEM's per-word laws then serve all repeats; every call still draws fresh noise).
    """
    baseline = [
        accuracy(
            [task.texts[i] for i in train],
            task.labels[train],
            [task.texts[i] for i in test],
            task.labels[test],
        )
        for train, test in task.splits
    ]
    runs = []
    for epsilon in epsilons:
        for label, build in mechanisms.items():
            mech = build(epsilon)
            record = Run(label, epsilon)
            for repeat, (train, test) in enumerate(task.splits):
                texts = [task.texts[i] for i in train]
                tic = time.perf_counter()
                private = [result.text for result in privatize_texts(texts, mech, batch_size=256)]
                record.seconds += time.perf_counter() - tic
                score = accuracy(
                    private, task.labels[train], [task.texts[i] for i in test], task.labels[test]
                )
                record.accuracies.append(score)
                log(f"  {label} eps={epsilon:g} repeat {repeat + 1}: accuracy {score:.3f}")
            record.tokens = mech.accountant.tokens_privatized
            runs.append(record)
    return runs, interval(baseline)
