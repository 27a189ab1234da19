"""Helpers shared by the benchmark scripts: timing, peak memory, Markdown tables.

Benchmarks report *ratios measured in one run* (machines here are noisy, 2 cores); the
absolute numbers are for orientation only.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import resource
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"
#: Rows of GloVe 6B 50d: the largest vocabulary a benchmark can ask for.
GLOVE_WORDS = 400_000


# -- argparse types: bad values fail at parse time with one line (exit 2), before any work ----
def int_range(low: int, high: int | None = None, why: str = "") -> Callable[[str], int]:
    """An argparse ``type``: an integer in [low, high] (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            allowed = f">= {low:,}" if high is None else f"between {low:,} and {high:,}"
            raise argparse.ArgumentTypeError(f"must be an integer {allowed}{why}, got {text}")
        return value

    return parse


def float_range(
    low: float, high: float = math.inf, *, open_low: bool = False, open_high: bool = False
) -> Callable[[str], float]:
    """An argparse ``type``: a finite number in the interval from ``low`` to ``high``."""
    interval = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        above = value > low if open_low else value >= low
        below = value < high if open_high else value <= high
        if not (math.isfinite(value) and above and below):
            raise argparse.ArgumentTypeError(f"must be a number in {interval}, got {text}")
        return value

    return parse


positive_int = int_range(1)
positive_float = float_range(0.0, open_low=True)
#: A vocabulary size of GloVe 6B 50d (a larger one would silently measure the 400k table).
glove_vocab = int_range(1, GLOVE_WORDS, why=f" (GloVe 6B has {GLOVE_WORDS:,} words)")


def epsilon_arg(text: str) -> float:
    """An argparse ``type``: an epsilon the mechanisms accept."""
    from dxp_plugins._validation import MAX_EPSILON, MIN_EPSILON

    return float_range(MIN_EPSILON, MAX_EPSILON)(text)


def epsilon_list(text: str) -> list[float]:
    """An argparse ``type``: comma-separated epsilons, e.g. ``1,2,5``."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return [epsilon_arg(item) for item in items]


def file_stem(text: str) -> str:
    """An argparse ``type``: a file name without folders (results go to a fixed folder)."""
    if not text or text in {".", ".."} or "/" in text or "\\" in text:
        raise argparse.ArgumentTypeError(f"must be a file name without folders, got {text!r}")
    return text


def best_time(function: Callable[[], Any], repeats: int = 3) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``function`` (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def alternating_times(
    systems: dict[str, Callable[[], Any]], rounds: int = 7
) -> dict[str, list[float]]:
    """Wall-clock seconds of each of ``systems`` per round, the order reversed every other
    round (ABC, CBA, ...), so every system meets the same machine: ratios of the same
    round stay meaningful when the load changes between rounds."""
    seconds: dict[str, list[float]] = {name: [] for name in systems}
    order = list(systems)
    for round_number in range(rounds):
        for name in order if round_number % 2 == 0 else order[::-1]:
            start = time.perf_counter()
            systems[name]()
            seconds[name].append(time.perf_counter() - start)
    return seconds


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """Median over rounds of ``numerators[i] / denominators[i]``."""
    return float(statistics.median(a / b for a, b in zip(numerators, denominators, strict=True)))


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (MiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def machine() -> str:
    """One line describing where the numbers were measured."""
    import os

    return (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {sys.version.split()[0]}, {datetime.now(UTC):%Y-%m-%d}"
    )


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub Markdown table; floats get 3 significant digits."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return "\n".join(lines)


def save(name: str, payload: dict[str, Any]) -> Path:
    """Write ``payload`` (plus the machine line) to ``benchmarks/results/NAME.json``."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **payload}, indent=2) + "\n")
    return path


def add_faiss_threads(parser: argparse.ArgumentParser) -> None:
    """``--faiss-threads`` (default 1); apply it with :func:`set_faiss_threads` after parsing."""
    parser.add_argument(
        "--faiss-threads",
        type=positive_int,
        default=1,
        help="OpenMP threads for faiss (default 1: on a shared 2-core machine hand-offs cost more)",
    )


def set_faiss_threads(args: argparse.Namespace) -> None:
    import faiss

    faiss.omp_set_num_threads(args.faiss_threads)


def plot_accuracy_by_n_w(
    by_n_w: dict[str, list[tuple[float, float, float, float]]], path: Path, baseline: float
) -> None:
    """Accuracy (with its interval) against mean N_w per mechanism: utility at equal deniability."""
    from dxp_plugins import plotting

    plotting.privacy_utility(
        by_n_w,
        path,
        baseline=baseline,
        baseline_label="clean training text",
        xlabel="mean N_w = Pr[M(w) = w] (less deniability →)",
        log_x=False,
        title="Accuracy against plausible deniability (mean N_w)",
    )
