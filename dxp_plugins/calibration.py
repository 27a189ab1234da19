"""Making epsilon interpretable and comparable across mechanisms.

Privacy ratio (BRR paper, Section 5 and Appendix A). Mechanisms in different metrics are not
comparable by epsilon alone: Madlib's epsilon is per unit of Euclidean distance between
GloVe vectors, BRR's per flipped bit. The BRR paper compares them through a statistic P_d of
the metric over the vocabulary -- the average pairwise distance ``P_d^avg`` or the maximum
``P_d^max`` -- and the ratio ``R = P_dA / P_dB``: a mechanism in metric B with
``epsilon_B = R * epsilon_A`` spends the same privacy on a "typical" (or the farthest) pair
of words as one in metric A with ``epsilon_A``.

* :func:`distance_summary` -- P_d^avg from uniformly sampled pairs of distinct words with a
  confidence interval (exact when the vocabulary is small), and P_d^max by an exact search
  pruned with the triangle inequality (a bracket when a work budget runs out);
* :func:`privacy_ratio` -- R for two spaces (paired samples when they share a vocabulary);
* :func:`equivalent_epsilon` -- ``epsilon_B = R * epsilon_A``.

A space is a mechanism (its own metric: Madlib Euclidean, TEM its metric, BRR Hamming on its
codes), an :class:`~dxp_plugins.embeddings.table.EmbeddingTable` (with ``metric=``), or
:class:`~dxp_plugins.embeddings.binary.BinaryCodes`. Everything here reads public data only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_choice, check_int, check_probability
from .distances import Metric, get_metric
from .embeddings.binary import BinaryCodes, hamming
from .embeddings.table import EmbeddingTable

#: Default budget of the exact P_d^max search, in (row, word) distance evaluations.
DEFAULT_MAX_WORK = 200_000_000


# -- metric spaces over a vocabulary ------------------------------------------------------------
class _Space:
    metric: str
    size: int
    identity: Any  # vocabulary identity: paired sampling when two spaces share it
    diameter_bound = math.inf  # no two points of the space are farther apart

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(max_j d(i, j), argmax_j)`` for each i in ids."""
        raise NotImplementedError

    def center_distances(self) -> np.ndarray:
        """d(c, j) for every word j from one public centre point c."""
        raise NotImplementedError


class _VectorSpace(_Space):
    def __init__(self, table: EmbeddingTable, metric: Metric) -> None:
        self.table, self.distance = table, metric
        self.metric, self.size, self.identity = metric.name, len(table), table.fingerprint
        if metric.name == "angular":
            self.diameter_bound = math.pi

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        vectors = self.table.vectors
        return self.distance.pairs(vectors[i].astype(np.float64), vectors[j].astype(np.float64))

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = self.table.vectors[ids].astype(np.float64)
        distances = self.distance.to_table(points, self.table)
        far = np.argmax(distances, axis=1)
        return distances[np.arange(len(ids)), far], far

    def center_distances(self) -> np.ndarray:
        return self.distance.exact_to_table(self.table.unk_vector(), self.table)


class _CodeSpace(_Space):
    def __init__(self, codes: BinaryCodes, identity: Any = None) -> None:
        import faiss

        self.codes = codes
        self.metric, self.size = "hamming", len(codes)
        self.identity = identity if identity is not None else codes.fingerprint
        self.diameter_bound = float(codes.n_bits)
        self._index = faiss.IndexBinaryFlat(codes.packed.shape[1] * 8)
        self._index.add(np.ascontiguousarray(codes.packed))

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        from .embeddings.binary import _POPCOUNT

        xor = np.bitwise_xor(self.codes.packed[i], self.codes.packed[j])
        return _POPCOUNT[xor].sum(axis=1).astype(np.float64)

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The farthest code from c is the nearest to its complement (padding bits included).
        complement = np.ascontiguousarray(np.bitwise_not(self.codes.packed[ids]))
        distances, far = self._index.search(complement, 1)
        total = self.codes.packed.shape[1] * 8
        return (total - distances[:, 0]).astype(np.float64), far[:, 0].astype(np.int64)

    def center_distances(self) -> np.ndarray:
        return hamming(self.codes.majority()[None, :], self.codes.packed)[0].astype(np.float64)


def _space(space: Any, metric: Any) -> _Space:
    from .mechanisms.base import Mechanism

    if isinstance(space, BinaryCodes):
        return _CodeSpace(space)
    if isinstance(space, EmbeddingTable):
        return _VectorSpace(space, get_metric("euclidean" if metric is None else metric))
    if isinstance(space, Mechanism):
        if metric is not None:
            raise ValueError("a mechanism brings its own metric; do not pass metric=")
        codes = getattr(space, "codes", None)
        if isinstance(codes, BinaryCodes):
            return _CodeSpace(codes, identity=space.embeddings.fingerprint)
        distance = getattr(space, "distance_metric", None)
        if isinstance(distance, Metric):
            return _VectorSpace(space.embeddings, distance)
        return _VectorSpace(space.embeddings, get_metric(space.metric))
    raise TypeError(
        f"expected a Mechanism, EmbeddingTable or BinaryCodes, got {type(space).__name__}"
    )


# -- P_d ------------------------------------------------------------------------------------
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


def _sample_pairs(size: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``count`` uniform pairs of distinct words, or every pair when there are fewer."""
    if size * (size - 1) // 2 <= count:
        i, j = np.triu_indices(size, k=1)
        return i, j, np.array(True)
    i = rng.integers(0, size, count)
    j = rng.integers(0, size - 1, count)
    j += j >= i
    return i, j, np.array(False)


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
    """Exact diameter via ``d(i, j) <= d(i, c) + max_k d(c, k)``, within a work budget."""
    radius = space.center_distances()
    upper_each = np.minimum(radius + radius.max(), space.diameter_bound)
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
    n_pairs = check_int(n_pairs, "n_pairs", minimum=2)
    confidence = check_probability(confidence, "confidence")
    max_work = check_int(max_work, "max_work", minimum=0)
    if resolved.size < 2:
        raise ValueError("a distance summary needs at least 2 words")
    i, j, exact = _sample_pairs(resolved.size, n_pairs, np.random.default_rng(random_state))
    values = resolved.pairs(i, j)
    average, interval = _mean_interval(values, _z(confidence), bool(exact))
    maximum, upper, maximum_exact = _maximum(resolved, max_work)
    return DistanceSummary(
        metric=resolved.metric,
        vocab_size=resolved.size,
        average=average,
        average_interval=interval,
        confidence=confidence,
        pairs=len(values),
        average_exact=bool(exact),
        maximum=maximum,
        maximum_upper=upper,
        maximum_exact=maximum_exact,
    )


# -- the privacy ratio ----------------------------------------------------------------------
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

    def equivalent_epsilon(self, epsilon_a: float, statistic: str = "average") -> float:
        """``epsilon_B = R * epsilon_A``."""
        return equivalent_epsilon(epsilon_a, self, statistic=statistic)


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
    method with their covariance; otherwise the samples are independent.
    """
    space_a, space_b = _space(a, metric_a), _space(b, metric_b)
    n_pairs = check_int(n_pairs, "n_pairs", minimum=2)
    confidence = check_probability(confidence, "confidence")
    rng = np.random.default_rng(random_state)
    paired = space_a.identity == space_b.identity and space_a.size == space_b.size
    i, j, exact_a = _sample_pairs(space_a.size, n_pairs, rng)
    if paired:
        ib, jb, exact_b = i, j, exact_a
    else:
        ib, jb, exact_b = _sample_pairs(space_b.size, n_pairs, rng)
    values_a, values_b = space_a.pairs(i, j), space_b.pairs(ib, jb)
    z = _z(confidence)
    summaries = []
    for space, values, exact in ((space_a, values_a, exact_a), (space_b, values_b, exact_b)):
        average, interval = _mean_interval(values, z, bool(exact))
        maximum, upper, maximum_exact = _maximum(space, max_work)
        summaries.append(
            DistanceSummary(
                space.metric,
                space.size,
                average,
                interval,
                confidence,
                len(values),
                bool(exact),
                maximum,
                upper,
                maximum_exact,
            )
        )
    sa, sb = summaries
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
    half = z * ratio * math.sqrt(max(variance, 0.0))
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
    epsilon_a: float, ratio: PrivacyRatio | float, *, statistic: str = "average"
) -> float:
    """The epsilon in metric B matching ``epsilon_a`` in metric A: ``R * epsilon_a``.

    ``ratio`` is a :class:`PrivacyRatio` (``statistic`` "average" or "maximum" picks R) or
    R itself.
    """
    from ._validation import check_epsilon

    epsilon_a = check_epsilon(epsilon_a, "epsilon_a")
    check_choice(statistic, "statistic", ("average", "maximum"))
    if isinstance(ratio, PrivacyRatio):
        value = ratio.average if statistic == "average" else ratio.maximum
    elif isinstance(ratio, int | float) and not isinstance(ratio, bool):
        value = float(ratio)
    else:
        raise TypeError("ratio must be a PrivacyRatio or a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"the privacy ratio must be a finite number > 0, got {value:g}")
    return check_epsilon(value * epsilon_a, "equivalent epsilon")
