"""Helpers shared by the benchmark scripts: timing, peak memory, Markdown tables.

Benchmarks report *ratios measured in one run* (machines here are noisy, 2 cores); the
absolute numbers are for orientation only.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def best_time(function: Callable[[], Any], repeats: int = 3) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``function`` (seconds)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


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
        type=int,
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
