"""Calibration and evaluation figures (matplotlib, the optional ``plot`` extra).

* :func:`deniability_histograms` -- N_w and S_w histograms, one column per epsilon
  (Madlib paper, Fig. 2);
* :func:`deniability_curves` -- mean (and worst-case) N_w and S_w against epsilon for
  several embeddings or mechanisms (Madlib paper, Figs. 3-4);
* :func:`privacy_utility` -- a utility score with its interval against epsilon, one line per
  mechanism.

matplotlib is imported only when a figure is drawn, through ``matplotlib.figure.Figure``
(no pyplot, no GUI backend, safe in scripts and threads). Each function returns the Figure
and writes it to ``path`` when given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = [
    "deniability_curves",
    "deniability_histograms",
    "privacy_utility",
]

if TYPE_CHECKING:
    from .calibration import PlausibleDeniability


def _figure(width: float, height: float) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "figures need matplotlib: pip install matplotlib (the [plot] extra of dxp_plugins)"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def _save(figure: Any, path: str | Path | None) -> Any:
    if path is not None:
        figure.savefig(path, dpi=90)
    return figure


#: Labelled epsilon ticks are at least this fraction of the axis's log range apart.
_TICK_GAP = 0.06


def _epsilon_ticks(axis: Any, epsilons: Sequence[float], label: str = "ε") -> None:
    """Log-scale x axis with a tick at every evaluated epsilon, labelled (3 significant
    digits) where it is not crowded by the previous label: a bisection's points (5, 5.21,
    5.44) do not print over one another."""
    from matplotlib.ticker import FixedLocator, NullLocator

    values = sorted(set(epsilons))
    axis.set_xscale("log")
    axis.xaxis.set_major_locator(FixedLocator(values))
    axis.xaxis.set_minor_locator(NullLocator())
    logs = np.log(values)
    gap = _TICK_GAP * max(float(logs[-1] - logs[0]), 1e-12)
    labels, last = [], -np.inf
    for value, position in zip(values, logs, strict=True):
        crowded = position - last < gap and value != values[-1]
        labels.append("" if crowded else f"{value:.3g}")
        last = last if crowded else position
    axis.set_xticklabels(labels)
    axis.set_xlabel(label)


def _label(result: PlausibleDeniability) -> str:
    return f"{result.mechanism}, ε = {result.epsilon:g}"


def deniability_histograms(
    results: Sequence[PlausibleDeniability],
    path: str | Path | None = None,
    *,
    bins: int = 20,
    title: str | None = None,
) -> Any:
    """N_w (top row) and S_w (bottom row) histograms over the word sample, per epsilon."""
    from .calibration import PlausibleDeniability

    if isinstance(results, PlausibleDeniability | Mapping) or not all(
        isinstance(result, PlausibleDeniability) for result in results
    ):
        raise TypeError(
            "results must be a list of PlausibleDeniability results, e.g. [stats] (a dict "
            "of label -> results is what deniability_curves takes)"
        )
    if not results:
        raise ValueError("give at least one result")
    columns = len(results)
    figure = _figure(2.6 * columns + 0.6, 4.6)
    axes = figure.subplots(2, columns, squeeze=False)
    top = max(int(result.s_w.max()) for result in results)
    s_bins = np.unique(np.geomspace(1, max(top, 2) + 1, bins + 1).round())
    for column, result in enumerate(results):
        n_axis, s_axis = axes[0][column], axes[1][column]
        n_axis.hist(result.n_w, bins=np.linspace(0, 1, bins + 1), color="tab:blue")
        n_axis.set_title(_label(result), fontsize=9)
        n_axis.set_xlabel("N_w = Pr[M(w) = w]")
        s_axis.hist(result.s_w, bins=s_bins, color="tab:orange")
        s_axis.set_xscale("log")
        s_axis.set_xlabel(f"S_w (mass ≥ {1 - result.eta:g})")
        if column == 0:
            n_axis.set_ylabel("words")
            s_axis.set_ylabel("words")
    if title:
        figure.suptitle(title, fontsize=10)
    return _save(figure, path)


def deniability_curves(
    curves: Mapping[str, Sequence[PlausibleDeniability]],
    path: str | Path | None = None,
    *,
    worst_case: bool = True,
    title: str | None = None,
) -> Any:
    """Mean N_w and mean S_w against epsilon (log scale), one line per label.

    ``curves`` maps a label (an embedding, a mechanism) to its results at several epsilon.
    With ``worst_case`` a dashed line of the same colour shows max N_w / min S_w.
    """
    _check_curves(
        curves,
        "curves must map a label to results, e.g. {'madlib': results} (a list of "
        "results is what deniability_histograms takes)",
    )
    figure = _figure(8.0, 3.4)
    n_axis, s_axis = figure.subplots(1, 2)
    every: list[float] = []
    for index, (label, results) in enumerate(curves.items()):
        ordered = sorted(results, key=lambda result: result.epsilon)
        every += [result.epsilon for result in ordered]
        epsilons = [result.epsilon for result in ordered]
        colour = f"C{index % 10}"
        n_axis.plot(epsilons, [r.n_w.mean() for r in ordered], "o-", color=colour, label=label)
        s_axis.plot(epsilons, [r.s_w.mean() for r in ordered], "o-", color=colour, label=label)
        if worst_case:
            n_axis.plot(epsilons, [r.n_w.max() for r in ordered], "--", color=colour, alpha=0.6)
            s_axis.plot(epsilons, [r.s_w.min() for r in ordered], "--", color=colour, alpha=0.6)
    for axis in (n_axis, s_axis):
        _epsilon_ticks(axis, every)
        axis.grid(True, alpha=0.3)
    n_axis.set_ylabel("mean N_w" + (" (dashed: max)" if worst_case else ""))
    n_axis.set_ylim(-0.02, 1.02)
    s_axis.set_ylabel("mean S_w" + (" (dashed: min)" if worst_case else ""))
    s_axis.set_yscale("log")
    n_axis.legend(fontsize=8)
    if title:
        figure.suptitle(title, fontsize=10)
    return _save(figure, path)


def _check_curves(curves: Any, expected: str) -> None:
    """A non-empty mapping of labels to non-empty curves."""
    if not isinstance(curves, Mapping):
        raise TypeError(expected)
    if not curves:
        raise ValueError("give at least one curve")
    empty = [label for label, points in curves.items() if len(points) == 0]
    if empty:
        raise ValueError(f"curve {empty[0]!r} has no points")


def privacy_utility(
    curves: Mapping[str, Sequence[tuple[float, float, float, float]]],
    path: str | Path | None = None,
    *,
    baseline: float | None = None,
    baseline_label: str = "no privacy",
    ylabel: str = "accuracy",
    xlabel: str = "ε",
    log_x: bool = True,
    title: str | None = None,
) -> Any:
    """Utility against epsilon: ``curves[label] = [(epsilon, mean, low, high), ...]``.

    The x value can be any privacy measure: e.g. mean N_w with ``xlabel="mean N_w"`` and
    ``log_x=False`` compares mechanisms at equal plausible deniability.
    """
    _check_curves(curves, "curves must map a label to [(epsilon, mean, low, high), ...]")
    figure = _figure(5.0, 3.4)
    axis = figure.subplots()
    every: list[float] = []
    for index, (label, points) in enumerate(curves.items()):
        rows = np.asarray(sorted(points), dtype=np.float64)
        if rows.ndim != 2 or rows.shape[1] != 4:
            raise ValueError(f"curve {label!r}: give (epsilon, mean, low, high) points")
        every += rows[:, 0].tolist()
        colour = f"C{index % 10}"
        axis.plot(rows[:, 0], rows[:, 1], "o-", color=colour, label=label)
        axis.fill_between(rows[:, 0], rows[:, 2], rows[:, 3], color=colour, alpha=0.2)
    if baseline is not None:
        axis.axhline(baseline, color="grey", linestyle=":", label=baseline_label)
    if log_x:
        _epsilon_ticks(axis, every, xlabel)
    else:
        axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)
    if title:
        axis.set_title(title, fontsize=10)
    return _save(figure, path)
