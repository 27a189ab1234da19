"""The privacy ratio ``R = P_dA / P_dB`` between two metrics and the epsilon it translates to
(BRR paper, Section 5 and Appendix A)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_choice, check_epsilon
from ..errors import CalibrationWarning, DxpWarning, warn
from .pairwise import (
    DEFAULT_MAX_WORK,
    DistanceSummary,
    _check_sampling,
    _sample_pairs,
    _summarise,
    _z,
)
from .spaces import _space


@dataclass(frozen=True)
class PrivacyRatio:
    """``R = P_dA / P_dB`` for the average and the maximum (BRR §5)."""

    a: DistanceSummary
    b: DistanceSummary
    average: float
    average_interval: tuple[float, float]
    maximum: float
    maximum_interval: tuple[float, float]  # from the P_d^max brackets (a point when exact)
    paired: bool

    def equivalent_epsilon(
        self, epsilon_a: float, statistic: str = "average", *, conservative: bool = False
    ) -> float:
        """``epsilon_B = R * epsilon_A`` (see :func:`equivalent_epsilon`)."""
        return equivalent_epsilon(epsilon_a, self, statistic=statistic, conservative=conservative)


def privacy_ratio(
    a: Any,
    b: Any,
    *,
    metric_a: Any = None,
    metric_b: Any = None,
    n_pairs: int = 100_000,
    confidence: float = 0.99,
    max_work: int = DEFAULT_MAX_WORK,
    random_state: int | None = None,
) -> PrivacyRatio:
    """The privacy ratio ``R = P_dA / P_dB`` of two spaces (mechanisms, tables or codes).

    When both spaces share a vocabulary (e.g. Madlib on a table and BRR on its codes) the
    same sampled pairs serve both, and the interval of the average ratio uses the delta
    method with their covariance; otherwise the samples are independent. Two spaces that
    are one metric on one table (Madlib and TEM on it) warn: R is 1 by construction.
    """
    space_a, space_b = _space(a, metric_a), _space(b, metric_b)
    n_pairs, confidence, max_work = _check_sampling(n_pairs, confidence, max_work)
    rng = np.random.default_rng(random_state)
    paired = space_a.identity == space_b.identity and space_a.size == space_b.size
    i, j, exact_a = _sample_pairs(space_a.size, n_pairs, rng)
    if paired:
        ib, jb, exact_b = i, j, exact_a
    else:
        ib, jb, exact_b = _sample_pairs(space_b.size, n_pairs, rng)
    values_a, values_b = space_a.pairs(i, j), space_b.pairs(ib, jb)
    if paired and np.allclose(values_a, values_b, rtol=1e-9, atol=0.0):
        warn(
            f"both spaces give the same {space_a.metric} distances on the same words: R is 1 "
            "and the equivalent epsilon is epsilon itself. The ratio translates epsilon "
            "between metrics; to compare mechanisms in one metric (Madlib and TEM), "
            "calibrate each by plausible deniability (choose_epsilon)",
            DxpWarning,
        )
    sa = _summarise(space_a, values_a, exact_a, confidence, max_work)
    sb = _summarise(space_b, values_b, exact_b, confidence, max_work)
    if sb.average <= 0 or sb.maximum <= 0:
        raise ValueError("P_dB is zero: every pair of words is at distance 0 in metric B")
    ratio = sa.average / sb.average
    variance = 0.0
    if not exact_a:
        variance += float(values_a.var(ddof=1)) / len(values_a) / sa.average**2
    if not exact_b:
        variance += float(values_b.var(ddof=1)) / len(values_b) / sb.average**2
    if paired and not exact_a:
        covariance = float(np.cov(values_a, values_b)[0, 1]) / len(values_a)
        variance -= 2.0 * covariance / (sa.average * sb.average)
    half = _z(confidence) * ratio * math.sqrt(max(variance, 0.0))
    return PrivacyRatio(
        a=sa,
        b=sb,
        average=ratio,
        average_interval=(ratio - half, ratio + half),
        maximum=sa.maximum / sb.maximum,
        maximum_interval=(sa.maximum / sb.maximum_upper, sa.maximum_upper / sb.maximum),
        paired=paired,
    )


def equivalent_epsilon(
    epsilon_a: float,
    ratio: PrivacyRatio | float,
    *,
    statistic: str = "average",
    conservative: bool = False,
) -> float:
    """The epsilon in metric B matching ``epsilon_a`` in metric A: ``R * epsilon_a``, with
    R's point estimate by default (the BRR paper's procedure, §5).

    ``ratio`` is a :class:`PrivacyRatio` (``statistic`` "average" or "maximum" picks R) or
    R itself. A sampled R may overstate the true ratio, which gives B a larger epsilon
    than A's equivalent; ``conservative=True`` takes the low end of R's interval instead
    of its estimate (the average's confidence interval; the maximum's bracket when its
    search was cut), the smaller epsilon_B. That guards against R's sampling error only:
    R matches the two metrics on average (or at their maximum), not pair by pair, so B's
    bound stays looser than A's for many pairs (BRR against Madlib at 10 on 100k words:
    26% of nearest-neighbour pairs, docs/tem-brr.md). Calibrate B on its own (N_w / S_w)
    before deploying it.
    """
    epsilon_a = check_epsilon(epsilon_a, "epsilon_a")
    check_choice(statistic, "statistic", ("average", "maximum"))
    if not isinstance(conservative, bool):
        raise TypeError("conservative must be True or False")
    if isinstance(ratio, PrivacyRatio):
        if conservative:
            low = ratio.average_interval[0] if statistic == "average" else ratio.maximum_interval[0]
            if not (math.isfinite(low) and low > 0):
                raise ValueError(
                    f"the low end of the {statistic} ratio's interval is {low:.4g}, not > 0: "
                    "sample more pairs (n_pairs) for a usable conservative epsilon"
                )
            return check_epsilon(low * epsilon_a, "equivalent epsilon")
        value = ratio.average if statistic == "average" else ratio.maximum
        if statistic == "maximum" and not (ratio.a.maximum_exact and ratio.b.maximum_exact):
            low, high = ratio.maximum_interval
            warn(
                "P_d^max was bracketed, not found exactly (its search ran out of budget): "
                f"the maximum ratio lies in [{low:.4g}, {high:.4g}] and "
                f"{ratio.maximum:.4g} is the ratio of the largest distances found "
                "(conservative=True uses the low end)",
                CalibrationWarning,
            )
    elif isinstance(ratio, int | float) and not isinstance(ratio, bool):
        if conservative:
            raise ValueError("conservative=True needs a PrivacyRatio (a number has no interval)")
        value = float(ratio)
    else:
        raise TypeError("ratio must be a PrivacyRatio or a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"the privacy ratio must be a finite number > 0, got {value:g}")
    return check_epsilon(value * epsilon_a, "equivalent epsilon")
