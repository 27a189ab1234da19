"""The statistic P_d of a metric over a vocabulary (BRR paper, Section 5 and Appendix A):
P_d^avg from sampled pairs with a confidence interval, and P_d^max by an exact search pruned
with the triangle inequality."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int, check_probability
from .spaces import _Space, _space

#: Default budget of the exact P_d^max search, in (row, word) distance evaluations.
DEFAULT_MAX_WORK = 200_000_000


@dataclass(frozen=True)
class DistanceSummary:
    """P_d^avg and P_d^max of one metric over a vocabulary."""

    metric: str
    vocab_size: int
    average: float
    average_interval: tuple[float, float]
    confidence: float
    pairs: int
    average_exact: bool
    maximum: float  # exact when maximum_exact, else the largest distance found
    maximum_upper: float  # an upper bound of the true maximum
    maximum_exact: bool


def _check_sampling(n_pairs: Any, confidence: Any, max_work: Any) -> tuple[int, float, int]:
    """The checked ``(n_pairs, confidence, max_work)`` of :func:`distance_summary` and
    :func:`~dxp_plugins.calibration.privacy_ratio`."""
    return (
        check_int(n_pairs, "n_pairs", minimum=2),
        check_probability(confidence, "confidence"),
        check_int(max_work, "max_work", minimum=0),
    )


def _sample_pairs(
    size: int, count: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, bool]:
    """``count`` uniform pairs of distinct words ``(i, j, False)``, or every pair
    ``(i, j, True)`` when there are fewer."""
    if size * (size - 1) // 2 <= count:
        i, j = np.triu_indices(size, k=1)
        return i, j, True
    i = rng.integers(0, size, count)
    j = rng.integers(0, size - 1, count)
    j += j >= i
    return i, j, False


def _mean_interval(values: np.ndarray, z: float, exact: bool) -> tuple[float, tuple[float, float]]:
    mean = float(values.mean())
    if exact:
        return mean, (mean, mean)
    half = z * float(values.std(ddof=1)) / math.sqrt(len(values))
    return mean, (mean - half, mean + half)


def _z(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


def _maximum(space: _Space, max_work: int) -> tuple[float, float, bool]:
    """Exact diameter within a work budget: rows in decreasing distance ``r`` from a public
    centre ``c``, pruned by ``d(i, j) <= r_i + r_j <= 2 max(r_i, r_j)`` (a pair is found from
    its farther row), so ``(maximum, upper bound, exact)``."""
    radius = space.center_distances()
    if not np.all(np.isfinite(radius)):
        raise ValueError("the centre of the P_d^max search has no finite distances")
    # d(i, j) <= r_i + r_j <= 2 max(r_i, r_j): the pair is found from its larger-radius row.
    upper_each = np.minimum(2.0 * radius, space.diameter_bound)
    best = 0.0
    start = int(np.argmax(radius))
    for _ in range(3):  # double sweeps: a good lower bound, cheaply
        value, far = space.farthest(np.array([start]))
        best = max(best, float(value[0]))
        start = int(far[0])
    order = np.argsort(-upper_each, kind="stable")
    block = max(1, min(256, (64 << 20) // (8 * space.size)))
    work = 0
    for offset in range(0, space.size, block):
        rows = order[offset : offset + block]
        if upper_each[rows[0]] <= best:
            return best, best, True
        if work + len(rows) * space.size > max_work:
            return best, max(best, float(upper_each[rows[0]])), False
        best = max(best, float(space.farthest(rows)[0].max()))
        work += len(rows) * space.size
    return best, best, True


def _summarise(
    space: _Space, values: np.ndarray, exact: bool, confidence: float, max_work: int
) -> DistanceSummary:
    """The summary of ``space`` from its sampled pair distances ``values`` (every pair when
    ``exact``): their mean with a ``confidence`` interval, and the P_d^max search."""
    average, interval = _mean_interval(values, _z(confidence), exact)
    maximum, upper, maximum_exact = _maximum(space, max_work)
    return DistanceSummary(
        metric=space.metric,
        vocab_size=space.size,
        average=average,
        average_interval=interval,
        confidence=confidence,
        pairs=len(values),
        average_exact=exact,
        maximum=maximum,
        maximum_upper=upper,
        maximum_exact=maximum_exact,
    )


def distance_summary(
    space: Any,
    *,
    metric: Any = None,
    n_pairs: int = 100_000,
    confidence: float = 0.99,
    max_work: int = DEFAULT_MAX_WORK,
    random_state: int | None = None,
) -> DistanceSummary:
    """P_d^avg (sampled, with a ``confidence`` interval) and P_d^max of a space.

    ``n_pairs`` uniform pairs of distinct words estimate the average (every pair when the
    vocabulary has fewer). The maximum is searched exactly; when that needs more than
    ``max_work`` distance evaluations the result is a bracket
    ``[maximum, maximum_upper]`` with ``maximum_exact=False``.
    """
    resolved = _space(space, metric)
    n_pairs, confidence, max_work = _check_sampling(n_pairs, confidence, max_work)
    i, j, exact = _sample_pairs(resolved.size, n_pairs, np.random.default_rng(random_state))
    values = resolved.pairs(i, j)
    return _summarise(resolved, values, exact, confidence, max_work)
