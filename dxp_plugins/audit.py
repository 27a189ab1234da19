"""Statistical audits of a privacy guarantee (PRIVACY.md T2 and T3), usable on any mechanism.

* :func:`epsilon_lower_bound` -- the black-box metric-DP audit: from output counts of pairs
  of inputs, a Clopper-Pearson lower bound on ``Pr[M(a)=y]`` over an upper bound on
  ``Pr[M(b)=y]``, divided by ``d(a, b)``, Bonferroni-corrected over pairs x outputs x
  directions. A bound above the claimed epsilon is statistical evidence of a violation
  (at family-wise level ``alpha``); a bound below it is not a proof of privacy.
* :func:`g_test` -- goodness of fit of observed counts to an exact output law.
* :func:`coincidence_z` -- independence of paired outputs (noise reused across tokens);
  :func:`independence_scores` applies it to a mechanism with an exact law.

The suite's chance-failure rate under correct code (about 4e-6 per test, 1e-4 overall) and
its measured power are documented in ``tests/audit/__init__.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "coincidence_z",
    "epsilon_lower_bound",
    "g_test",
    "independence_scores",
    "output_counts",
]


def clopper_pearson(
    successes: np.ndarray, trials: np.ndarray | int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds: each holds with probability >= 1 - alpha."""
    from scipy.stats import beta

    k = np.asarray(successes, dtype=np.float64)
    n = np.broadcast_to(np.asarray(trials, dtype=np.float64), k.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        lower = np.where(k > 0, beta.ppf(alpha, k, n - k + 1), 0.0)
        upper = np.where(k < n, beta.ppf(1 - alpha, k + 1, n - k), 1.0)
    return lower, upper


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`epsilon_lower_bound`."""

    epsilon_lower_bound: float
    claimed_epsilon: float
    worst: tuple[int, int, int] | None  # (input a, input b, output y) of the largest bound
    tests: int

    @property
    def passed(self) -> bool:
        """True when the data do not refute the claimed epsilon."""
        return self.epsilon_lower_bound <= self.claimed_epsilon

    def __str__(self) -> str:
        verdict = "consistent with" if self.passed else "VIOLATES"
        return (
            f"epsilon lower bound {self.epsilon_lower_bound:.4g} {verdict} claimed "
            f"{self.claimed_epsilon:.4g} (worst {self.worst}, {self.tests} tests)"
        )


def epsilon_lower_bound(
    counts: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    distances: Sequence[float],
    claimed_epsilon: float,
    *,
    alpha: float = 1e-6,
) -> AuditResult:
    """Black-box audit of ``Pr[M(a)=y] <= exp(eps*d(a,b)) Pr[M(b)=y]`` (PRIVACY.md T3).

    ``counts[i, y]`` is how often input ``i`` produced output ``y`` in its own independent
    draws (rows may have different totals). ``distances[k]`` is ``d`` of ``pairs[k]``; both
    directions of each pair are tested.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2:
        raise ValueError("counts must be (inputs x outputs)")
    if len(pairs) != len(distances) or not len(pairs):
        raise ValueError("give one positive distance per pair")
    trials = counts.sum(axis=1)
    tests = 2 * len(pairs) * counts.shape[1]
    # Each test uses one lower and one upper bound: split alpha over both.
    lower, upper = clopper_pearson(counts, trials[:, None], alpha / (2 * tests))
    best, worst = -np.inf, None
    for (a, b), distance in zip(pairs, distances, strict=True):
        if not distance > 0:
            raise ValueError("pair distances must be > 0")
        for x, y in ((a, b), (b, a)):
            with np.errstate(divide="ignore"):
                bound = np.log(lower[x]) - np.log(upper[y])
            output = int(np.argmax(bound))
            value = float(bound[output]) / distance
            if value > best:
                best, worst = value, (x, y, output)
    return AuditResult(max(best, 0.0), float(claimed_epsilon), worst, tests)


def output_counts(
    sample: Callable[[int, int], np.ndarray], inputs: Sequence[int], draws: int, outputs: int
) -> np.ndarray:
    """Counts of ``sample(input, draws)`` (an array of output ids) per input.

    ValueError unless each call gives ``draws`` ids in ``[0, outputs)``: an output the
    table cannot hold, dropped, would hide the mechanism's worst outputs from the audit.
    """
    table = np.zeros((len(inputs), outputs), dtype=np.int64)
    for row, value in enumerate(inputs):
        produced = np.asarray(sample(value, draws))
        if produced.shape != (draws,) or (draws and produced.dtype.kind not in "iu"):
            raise ValueError(
                f"sample({value}, {draws}) gave an array of shape {produced.shape} and dtype "
                f"{produced.dtype}; expected {draws} integer output ids"
            )
        if draws and (produced.min() < 0 or produced.max() >= outputs):
            raise ValueError(
                f"sample({value}, {draws}) gave output ids outside [0, {outputs}): "
                f"{int(produced.min())}..{int(produced.max())}"
            )
        table[row] = np.bincount(produced.astype(np.int64), minlength=outputs)
    return table


def g_test(observed: np.ndarray, probabilities: np.ndarray, *, min_expected: float = 5.0) -> float:
    """p-value of a G-test of ``observed`` counts against exact ``probabilities`` (T2).

    Bins whose expected count is below ``min_expected`` are pooled into one bin; an
    observation in a bin of probability zero gives p = 0.
    """
    observed = np.asarray(observed, dtype=np.float64).ravel()
    probabilities = np.asarray(probabilities, dtype=np.float64).ravel()
    if observed.shape != probabilities.shape:
        raise ValueError("observed and probabilities must have the same shape")
    if np.any(observed[probabilities <= 0] > 0):
        return 0.0
    total = observed.sum()
    expected = probabilities / probabilities.sum() * total
    small = expected < min_expected
    obs = np.r_[observed[~small], observed[small].sum()]
    exp = np.r_[expected[~small], expected[small].sum()]
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    if len(obs) < 2:
        return 1.0
    from scipy.stats import chi2

    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(obs > 0, obs * np.log(obs / exp), 0.0)
    statistic = 2.0 * terms.sum()
    return float(chi2.sf(statistic, len(obs) - 1))


def coincidence_z(
    first: np.ndarray, second: np.ndarray, law_first: np.ndarray, law_second: np.ndarray
) -> float:
    """z-score of how often paired outputs coincide (``first[i] == second[i]``) against
    ``sum_y p(y) q(y)``, their rate when they are independent draws from the exact laws
    ``p`` and ``q`` (PRIVACY.md 11). Noise reused across the tokens of a call, or across
    calls, makes outputs coincide far more often; each output alone keeps its exact law,
    so a per-word test cannot see it."""
    first, second = np.asarray(first), np.asarray(second)
    if first.shape != second.shape or first.ndim != 1 or len(first) == 0:
        raise ValueError("first and second must be equal-length non-empty 1-D arrays")
    rate = float(np.dot(law_first, law_second))
    if not 0.0 < rate < 1.0:
        raise ValueError(f"the coincidence rate of the laws must lie in (0, 1), got {rate}")
    hits = int(np.count_nonzero(first == second))
    return (hits - len(first) * rate) / float(np.sqrt(len(first) * rate * (1.0 - rate)))


def independence_scores(mechanism: Any, a: int, b: int, repeats: int = 40_000) -> dict[str, float]:
    """:func:`coincidence_z` of outputs that fresh noise makes independent (PRIVACY.md 11):
    words ``a`` and ``b`` alternating ``repeats`` times in one ``privatize_ids`` call, and the
    same call again. Needs the exact law (``mechanism.distribution``); |z| above ~6 means
    noise is shared between tokens or replayed by the next call."""
    ids = np.tile([a, b], repeats)
    first, second = mechanism.privatize_ids(ids), mechanism.privatize_ids(ids)
    law_a, law_b = mechanism.distribution(a), mechanism.distribution(b)
    of_a = first[0::2]
    return {
        "two words in one call": coincidence_z(of_a, first[1::2], law_a, law_b),
        "one word twice in a call": coincidence_z(of_a[0::2], of_a[1::2], law_a, law_a),
        "one token in two calls": coincidence_z(of_a, second[0::2], law_a, law_a),
    }
