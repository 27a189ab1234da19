"""TEM: the truncated exponential mechanism over any metric.

Carvalho, Vasiloudis, Feyisetan, Wang, "TEM: High Utility Metric Differential Privacy on
Text" (SDM 2023), Algorithm 2 (TEM), Algorithm 3 (precomputed candidate lists) and
Theorem 4.2. For an input word with point x (the public UNK point for OOV tokens):

1. the candidates ``L_w = {y in W : d(x, y) <= gamma}`` -- the exact gamma-ball, float64;
2. scores ``-d(x, y)`` for ``y in L_w`` and, when ``W \\ L_w`` is not empty, a ⊥ element
   scored ``-gamma + 2 ln|W \\ L_w| / epsilon`` (:func:`bottom_score`);
3. Gumbel(0, 2/epsilon) noise on every score (:func:`sample_gumbel`), argmax;
4. if ⊥ wins, a uniform draw from ``W \\ L_w`` (:func:`uniform_outside`, a rank-select over
   the sorted ball ids: ``W \\ L_w`` is never built).

Its output law is ``p(y | x) ∝ exp(-epsilon * min(d(x, y), gamma) / 2)``: the exponential
mechanism for the utility ``-min(d, gamma)``, which is 1-Lipschitz in x, so the release is
``epsilon * d``-private for every gamma (PRIVACY.md 5). One global gamma comes from Theorem
4.2, ``gamma = (2/epsilon) ln((1 - beta)(|W| - 1) / beta)`` (:func:`theorem_4_2_gamma`), or
is given explicitly.

Two exact samplers of that one law (Gumbel-max over scores s with scale 2/epsilon is a draw
from the categorical law ``∝ exp(s * epsilon / 2)``; so is an inverse-CDF draw):

* default: per *distinct* word of a batch the scores of ``L_w`` plus ⊥ become a two-level
  cumulative table (:class:`WordLaw`); each occurrence costs two uniforms and two short
  searches. Distances for a block of
  distinct words come from one shared BLAS pass over the vocabulary (the large-ball case at
  small epsilon, where ``L_w`` is most of the vocabulary), and the tables are kept in a
  bounded cache keyed by ``(embedding fingerprint, metric, gamma, epsilon, word)`` that
  keeps the most frequent words (public rank) when full
  (:meth:`TEM.precompute` fills it, Algorithm 3). Draws follow the sorted distinct ids
  whatever the cache holds, so a seeded run gives the same words with any ``cache_mb``;
* ``constant_work=True`` (PRIVACY.md 27): Algorithm 2 literally, Gumbel noise on all
  ``|W| + 1`` entries of every token (entries outside the ball masked), the uniform draw
  from ``W \\ L_w`` done for every token, no caches. The work per token depends only on
  ``|W|``, not on the ball, the word or what was seen before; it is about 10x slower.

Floating point: scores use float64 distances; the realized probability of an output differs
from the exact law by a relative error of about ``2^-52 * (block total) / w_y`` (``w_y`` its
weight), measured at most 1.1e-8 on GloVe 100k for epsilon 1 to 10
(``benchmarks/tem_float_residual.py``). The Gumbel sampler
uses 53-bit uniforms, so outputs whose weight is below ~1e-17 of the top weight never win.
"""

from __future__ import annotations

import contextlib
import heapq
import math
import threading
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._locks import fork_safe_lock
from .._random import RandomSource
from .._validation import check_int, check_probability, is_real
from ..distances import Metric, MetricFunction, get_metric
from ..embeddings.table import OOV_ID, EmbeddingTable
from ..errors import DxpWarning, warn
from ..guarantee import Accountant, OOVPolicy
from .base import Mechanism

#: Theorem 4.2's failure probability used when neither ``beta`` nor ``gamma`` is given.
DEFAULT_BETA = 1e-3
#: Default bound of the per-word law cache (MiB).
DEFAULT_CACHE_MB = 64
#: Scratch memory per block of distinct words (distances, masks), bytes. At 400k words a
#: block is 20 rows; 32 MiB (10 rows) re-read the table twice as often: 400 distinct words
#: took 1.00 : 0.82 : 0.74 at 32 : 64 : 128 MiB (one run).
BLOCK_BYTES = 64 << 20
#: Words per block of a :class:`WordLaw` (two-level inverse CDF).
LAW_BLOCK = 256
#: Bytes a cached law costs beside its arrays (array headers, the law object, its dict,
#: key and heap entries): 940-990 measured with tracemalloc (numpy 1.26 and 2.4).
ENTRY_OVERHEAD = 1000


# -- the paper's formulas: module-level so tests can inject mutants by monkeypatch ------------
def theorem_4_2_gamma(epsilon: float, beta: float, vocab_size: int) -> float:
    """Theorem 4.2: ``gamma = (2/epsilon) ln((1 - beta)(|W| - 1) / beta)``."""
    if vocab_size < 2:
        raise ValueError("gamma from beta needs a vocabulary of at least 2 words")
    gamma = 2.0 / epsilon * math.log((1.0 - beta) * (vocab_size - 1) / beta)
    if not gamma > 0:
        raise ValueError(
            f"beta={beta!r} gives gamma <= 0 for {vocab_size} words; use a smaller beta"
        )
    if not math.isfinite(gamma):  # a subnormal beta overflows the ratio
        raise ValueError(f"beta={beta!r} gives an infinite gamma; use a larger beta")
    return gamma


def gumbel_scale(epsilon: float) -> float:
    """Scale of the Gumbel noise in Algorithm 2: ``2 / epsilon`` (utility sensitivity 1)."""
    return 2.0 / epsilon


def sample_gumbel(rng: np.random.Generator, shape: Any, epsilon: float) -> np.ndarray:
    """Gumbel(0, 2/epsilon) noise of ``shape`` (TEM, Algorithm 2, step 3)."""
    return rng.gumbel(0.0, gumbel_scale(epsilon), size=shape)


def bottom_score(gamma: float, n_outside: Any, n_inside: Any, epsilon: float) -> Any:
    """Score of ⊥ (TEM, Algorithm 2): ``-gamma + 2 ln|W \\ L_w| / epsilon`` (for ``n_outside > 0``).

    ``exp(epsilon/2 * score)`` is then exactly the total weight of the ``|W \\ L_w|`` words
    outside the ball, each weighted as if at distance gamma. ``n_inside`` (``|L_w|``) is
    unused by the correct formula; it is part of the signature so that known wrong variants
    (``ln(|W| / |L_w|)``) can be injected as test mutants.
    """
    return -gamma + 2.0 * np.log(n_outside) / epsilon


def ball_mask(distances: np.ndarray, gamma: float) -> np.ndarray:
    """``distances <= gamma``: membership of the gamma-ball, row by row (never capped)."""
    return distances <= gamma


def uniform_outside(inside: np.ndarray | None, ranks: np.ndarray) -> np.ndarray:
    """The ``ranks``-th ids (0-based) of ``W \\ L_w`` given the sorted ids ``inside`` of L_w.

    Below ``inside[i]`` lie ``inside[i] - i`` outside ids, a non-decreasing sequence, so the
    r-th outside id is ``r + #{i : inside[i] - i <= r}``. With ``ranks`` uniform on
    ``[0, |W \\ L_w|)`` this is a uniform draw from ``W \\ L_w`` in O(log |L_w|).
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    if inside is None or len(inside) == 0:
        return ranks
    shifted = inside.astype(np.int64) - np.arange(len(inside), dtype=np.int64)
    return ranks + np.searchsorted(shifted, ranks, side="right")


# -- per-word output law ---------------------------------------------------------------------
@dataclass(frozen=True)
class WordLaw:
    """The categorical law of one input over ``L_w`` plus ⊥, ready for inverse-CDF draws.

    ``inside``: sorted ids of L_w (None when L_w is the whole vocabulary); ``weights``:
    ``exp((score - top) / scale)`` over L_w in id order, zero-padded to whole blocks of
    ``block`` words (:data:`LAW_BLOCK`, or fewer for a small ball); ``block_cdf``: running
    sums of the block totals, then ⊥'s weight last when ``n_outside > 0``. A draw picks a
    block (or ⊥) from ``block_cdf``, then a word inside the block from the block's own
    running sums: two small cumulative tables instead of one over the whole vocabulary
    (cheaper, and each uniform resolves a range of moderate dynamic range, which keeps the
    float residual small).
    """

    inside: np.ndarray | None
    weights: np.ndarray
    block_cdf: np.ndarray
    n_outside: int
    ball_size: int
    block: int

    @staticmethod
    def size_of(mask: np.ndarray, size: int) -> int:
        """Bytes :meth:`build` will hold for a ball ``mask`` over ``size`` words."""
        n_inside = int(np.count_nonzero(mask))
        block = max(1, min(LAW_BLOCK, n_inside))
        padded = -(-n_inside // block) * block
        return 8 * padded + (0 if n_inside == size else 4 * n_inside)

    @property
    def nbytes(self) -> int:
        """Memory held by the law, with what a cache entry costs beside its arrays."""
        extra = 0 if self.inside is None else self.inside.nbytes
        return int(self.weights.nbytes + self.block_cdf.nbytes + extra + ENTRY_OVERHEAD)

    @classmethod
    def build(
        cls,
        distances: np.ndarray,
        mask: np.ndarray,
        gamma: float,
        epsilon: float,
        top_score: float | None = None,
        out: np.ndarray | None = None,
    ) -> WordLaw:
        """The law of one input from its distances to every word.

        ``top_score``: an upper bound of the best ball score, known in advance for a
        vocabulary word (its own score, 0); computed when None. ``out``: a scratch buffer
        of at least ``len(distances) + LAW_BLOCK`` floats to hold the weights (the law is
        then only valid until the buffer is reused).
        """
        size = len(distances)
        inside = None if mask.all() else np.flatnonzero(mask).astype(np.int32)
        n_inside = size if inside is None else len(inside)
        n_outside = size - n_inside
        block = max(1, min(LAW_BLOCK, n_inside))
        blocks = -(-n_inside // block)
        if out is None:
            weights = np.empty(blocks * block, dtype=np.float64)
        else:
            weights = out[: blocks * block]
        weights[n_inside:] = 0.0
        scale = gumbel_scale(epsilon)
        # weights = exp((score - top) / scale) with score = -d, in as few passes as possible
        scores = weights[:n_inside]
        if inside is None:
            np.multiply(distances, -1.0 / scale, out=scores)
        else:
            np.take(distances, inside, out=scores)
            scores *= -1.0 / scale
        if top_score is not None:
            top = top_score / scale
        else:
            top = float(np.max(scores)) if n_inside else -math.inf
        bottom = -math.inf
        if n_outside:
            bottom = float(bottom_score(gamma, n_outside, n_inside, epsilon)) / scale
            top = max(top, bottom)
        if top != 0.0:
            scores -= top
        np.exp(scores, out=scores)
        block_cdf = np.empty(blocks + (1 if n_outside else 0), dtype=np.float64)
        np.cumsum(weights.reshape(blocks, block).sum(axis=1), out=block_cdf[:blocks])
        if n_outside:
            block_cdf[-1] = (block_cdf[-2] if blocks else 0.0) + math.exp(bottom - top)
        return cls(inside, weights, block_cdf, n_outside, n_inside, block)

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """``count`` independent output ids (inverse CDF; ⊥ resolved by a uniform draw)."""
        block = self.block
        blocks = len(self.weights) // block
        picks = np.searchsorted(
            self.block_cdf, rng.random(count) * self.block_cdf[-1], side="right"
        )
        np.minimum(picks, len(self.block_cdf) - 1, out=picks)
        out = np.empty(count, dtype=np.int64)
        in_ball = picks < blocks
        chosen = picks[in_ball]
        if len(chosen):
            running = np.cumsum(self.weights.reshape(blocks, block)[chosen], axis=1)
            targets = rng.random(len(chosen)) * running[:, -1]
            offsets = np.count_nonzero(running <= targets[:, None], axis=1)
            # Clipping only matters when u * total rounds up to total (probability ~2^-53).
            position = chosen * block + np.minimum(offsets, block - 1)
            np.minimum(position, self.ball_size - 1, out=position)
            out[in_ball] = position if self.inside is None else self.inside[position]
        hits = count - len(chosen)
        if hits:
            ranks = rng.integers(0, self.n_outside, size=hits)
            out[~in_ball] = uniform_outside(self.inside, ranks)
        return out

    def probabilities(self, size: int) -> np.ndarray:
        """The law this table realizes, over all ``size`` words (⊥ spread uniformly)."""
        total = self.block_cdf[-1]
        law = np.zeros(size, dtype=np.float64)
        if self.n_outside:
            blocks = len(self.weights) // self.block
            previous = self.block_cdf[blocks - 1] if blocks else 0.0
            law += (total - previous) / total / self.n_outside
        ids = np.arange(size) if self.inside is None else self.inside
        law[ids] = self.weights[: self.ball_size] / total
        return law


class LawCache:
    """A thread-safe cache of :class:`WordLaw` tables, bounded by total bytes.

    Each entry has a priority rank (the word's public frequency rank; lower = more
    frequent). While there is room every law is kept; when full, a law is admitted only by
    evicting laws of rarer words. The cache converges to the most frequent words seen and,
    unlike an LRU, does not thrash on a stream of distinct words.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._entries: dict[Hashable, tuple[WordLaw, int]] = {}
        self._rarest: list[tuple[int, int, Hashable]] = []  # heap of (-rank, serial, key)
        self._serial = 0
        self._lock = threading.Lock()
        self.nbytes = 0

    @property
    def max_bytes(self) -> int:
        """The bound (read-only: it is the mechanism's ``cache_mb``)."""
        return self._max_bytes

    def get(self, key: Hashable) -> WordLaw | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def admits(self, nbytes: int, rank: int) -> bool:
        """Whether a law of ``nbytes`` for a word of ``rank`` would be stored."""
        if nbytes > self.max_bytes:
            return False
        if self.nbytes + nbytes <= self.max_bytes:
            return True
        with self._lock:
            self._drop_stale()
            return bool(self._rarest) and -self._rarest[0][0] > rank

    def put(self, key: Hashable, law: WordLaw, rank: int = 0) -> bool:
        """Store ``law``, evicting rarer words if needed; False if it is not stored."""
        if law.nbytes > self.max_bytes:
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.nbytes -= old[0].nbytes
            while self.nbytes + law.nbytes > self.max_bytes:
                self._drop_stale()
                if not self._rarest or -self._rarest[0][0] <= rank:
                    return False
                _, _, evicted = heapq.heappop(self._rarest)
                self.nbytes -= self._entries.pop(evicted)[0].nbytes
            self._entries[key] = (law, rank)
            self.nbytes += law.nbytes
            self._serial += 1
            heapq.heappush(self._rarest, (-rank, self._serial, key))
            if len(self._rarest) > 2 * len(self._entries):
                self._rebuild_heap()
        return True

    def _drop_stale(self) -> None:
        while self._rarest and self._rarest[0][2] not in self._entries:
            heapq.heappop(self._rarest)

    def _rebuild_heap(self) -> None:
        """Keep only the newest heap entry of each cached key (under the lock): a re-put
        key leaves its old entry behind, so repeated puts of cached keys would grow the heap
        without bound. Rebuilt at twice the entries: amortised O(1)."""
        newest: dict[Hashable, tuple[int, int, Hashable]] = {}
        for entry in self._rarest:
            key = entry[2]
            if key in self._entries and (key not in newest or entry[1] > newest[key][1]):
                newest[key] = entry
        self._rarest = list(newest.values())
        heapq.heapify(self._rarest)

    def fits(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more would fit without evicting anything."""
        return self.nbytes + nbytes <= self.max_bytes

    def cached_keys(self) -> list[Hashable]:
        """The cached ``(settings, word id)`` keys: private (the words privatized so far)."""
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._rarest.clear()
            self.nbytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickles carry the bound only: the laws are public, large and rebuilt on demand,
        # and which words are cached is private (the words privatized so far).
        return (LawCache, (self.max_bytes,))


class TEM(Mechanism):
    """TEM (Algorithm 2): ``epsilon * d``-private word replacement for a metric d.

    Carvalho, Vasiloudis, Feyisetan, Wang, "TEM: High Utility Metric Differential Privacy on
    Text", SDM 2023 (the module docstring has the details).

    Parameters
    ----------
    embeddings, epsilon, oov, random_state, accountant:
        As for every :class:`~dxp_plugins.mechanisms.base.Mechanism`.
    beta:
        Theorem 4.2's beta in (0, 1) (default 1e-3): gamma is set so that, for an input
        vocabulary word, a word outside its gamma-ball is output with probability at most
        beta (see the paper). The public point OOV tokens are drawn from is no vocabulary
        word, and the bound does not hold for it; privacy holds for every gamma.
    gamma:
        An explicit truncation radius >= 0 instead of beta.
    metric:
        ``"euclidean"`` (default), ``"manhattan"``, ``"chebyshev"``, ``"angular"`` or a
        callable ``f(X, Y) -> D`` (see :mod:`dxp_plugins.distances`).
    constant_work:
        Same work for every token (PRIVACY.md 27; slower). See the module docstring.
    cache_mb:
        Bound of the per-word law cache in MiB (0 disables it). The cache is private
        state: it fills with the words privatized (see :attr:`cache`).
    """

    name = "tem"

    def __init__(
        self,
        embeddings: EmbeddingTable | str,
        epsilon: float,
        *,
        beta: float | None = None,
        gamma: float | None = None,
        metric: str | MetricFunction = "euclidean",
        constant_work: bool = False,
        cache_mb: float = DEFAULT_CACHE_MB,
        oov: OOVPolicy = "unk",
        random_state: int | RandomSource | None = None,
        accountant: Accountant | None = None,
    ) -> None:
        super().__init__(
            embeddings, epsilon, oov=oov, random_state=random_state, accountant=accountant
        )
        self.check_options(
            beta=beta, gamma=gamma, metric=metric, constant_work=constant_work, cache_mb=cache_mb
        )
        self._metric: Metric = get_metric(metric)
        self.metric = self._metric.name  # fixed from here on (Mechanism.__setattr__)
        self._gamma = None if gamma is None else _check_gamma(gamma)
        self.beta = None if gamma is not None else (DEFAULT_BETA if beta is None else beta)
        self._constant_work = bool(constant_work)
        self._cache_mb = cache_mb
        self._cache = LawCache(int(cache_mb * (1 << 20)))
        self._buffers = _Buffers()  # distance blocks and scratch for uncached laws
        self._metric.check_points(self.embeddings.vectors, "embeddings")
        if self.oov == "unk":  # otherwise checked only if an id -1 asks for it
            self._check_unk_point()
        self._warn_if_untruncated()

    @classmethod
    def check_options(
        cls,
        *,
        beta: Any = None,
        gamma: Any = None,
        metric: Any = "euclidean",
        constant_work: Any = False,
        cache_mb: Any = DEFAULT_CACHE_MB,
        **_: Any,
    ) -> None:
        """The options' own checks (beta in (0, 1), gamma >= 0, a metric name or callable,
        ...); whether beta gives a radius for the table's size is checked in ``__init__``."""
        if beta is not None and gamma is not None:
            raise ValueError("give beta or gamma, not both")
        if beta is not None:
            check_probability(beta, "beta")
        if gamma is not None:
            _check_gamma(gamma)
        if not callable(metric):  # a callable is tried on the table's rows in __init__
            get_metric(metric)
        if not isinstance(constant_work, bool | np.bool_):
            raise TypeError("constant_work must be True or False")
        if isinstance(cache_mb, bool) or not isinstance(cache_mb, int | float):
            raise TypeError("cache_mb must be a number")
        if not (math.isfinite(cache_mb) and cache_mb >= 0):
            raise ValueError("cache_mb must be a finite number >= 0")

    def _check_unk_point(self) -> None:
        """ValueError if the metric is undefined at the UNK point (angles at a zero centroid)."""
        self._metric.check_points(self.embeddings.unk_vector()[None, :], "the UNK point")

    def _warn_if_untruncated(self) -> None:
        """A gamma beyond the metric's diameter truncates nothing: at an epsilon chosen for
        Euclidean distances an angular TEM is then close to uniform (a utility trap)."""
        diameter = self._metric.diameter
        if diameter is None or self.gamma < diameter:
            return
        spread = math.exp(min(self.epsilon * diameter / 2, 700.0))
        warn(
            f"gamma = {self.gamma:.3g} exceeds the largest {self.metric} distance "
            f"({diameter:.3g}): nothing is truncated, and output probabilities differ by at "
            f"most a factor {spread:.3g} across the vocabulary. epsilon is per unit of "
            f"{self.metric} distance: calibrate it for this metric (dxp_plugins.calibration)",
            DxpWarning,
        )

    # -- parameters: epsilon and beta can be reassigned (validated; caches are keyed by the
    # -- gamma and epsilon they give); metric, constant_work and cache_mb are fixed ---------
    @property
    def constant_work(self) -> bool:
        """Whether every token costs the same work (fixed; PRIVACY.md 27)."""
        return self._constant_work

    @property
    def cache_mb(self) -> float:
        """The bound of the law cache in MiB (fixed)."""
        return self._cache_mb

    @property
    def beta(self) -> float | None:
        """Theorem 4.2's beta (None when an explicit gamma is set); validated on assignment."""
        return self._beta

    @beta.setter
    def beta(self, value: float | None) -> None:
        if value is None and self._gamma is None:
            raise ValueError("beta is required when no explicit gamma is set")
        beta = None if value is None else check_probability(value, "beta")
        if beta is not None and self._gamma is None:
            theorem_4_2_gamma(self.epsilon, beta, len(self.embeddings))  # validates, or raises
        self._beta = beta  # only once valid: a refused value leaves the old one

    @property
    def gamma(self) -> float:
        """The truncation radius: explicit, or Theorem 4.2 from the current epsilon and beta."""
        return self._gamma_at(self.epsilon)

    def _gamma_at(self, epsilon: float) -> float:
        """The truncation radius at ``epsilon``: explicit, or Theorem 4.2 with the current
        beta (any radius gives ``epsilon * d``; gamma only shapes utility)."""
        if self._gamma is not None:
            return self._gamma
        beta = self.beta
        assert beta is not None
        return theorem_4_2_gamma(epsilon, beta, len(self.embeddings))

    @property
    def distance_metric(self) -> Metric:
        """The metric object (see :mod:`dxp_plugins.distances`)."""
        return self._metric

    @property
    def cache(self) -> LawCache:
        """The per-word law cache. Each law is public (a function of the embeddings), but
        which words are cached is not: the cache fills with the words this object has
        privatized. Keep a live mechanism as private as the text; pickles and copies carry
        no cache, and ``cache.clear()`` empties it."""
        return self._cache

    def _cache_key(self, epsilon: float, gamma: float) -> tuple[Any, ...]:
        return (self.embeddings.fingerprint, self._metric.key, gamma, epsilon)

    def _settings(self) -> dict[str, Any]:
        settings = super()._settings()
        settings["metric"] = self.metric
        if self._gamma is not None:
            settings["gamma"] = self._gamma
        else:
            settings["beta"] = self.beta
        settings["constant_work"] = self.constant_work
        settings["cache_mb"] = self.cache_mb
        return settings

    # -- closed forms ------------------------------------------------------------------------
    def distribution(self, word: str | int) -> np.ndarray:
        """Exact output law ``p(y) ∝ exp(-epsilon min(d(x, y), gamma) / 2)`` (direct float64)."""
        row = self._input_id(word)
        self._prepare_release(np.array([row]))
        point = self._points(np.array([row], dtype=np.int64))[0]
        distances = self._metric.exact_to_table(point, self.embeddings)
        logits = -0.5 * self.epsilon * np.minimum(distances, self.gamma)
        law = np.exp(logits - logits.max())
        return law / law.sum()

    def candidates(self, word: str | int) -> np.ndarray:
        """The sorted ids of the gamma-ball ``L_w`` of ``word`` (Algorithm 3's list)."""
        row = self._input_id(word)
        self._prepare_release(np.array([row]))
        _, mask = self._balls(np.array([row], dtype=np.int64), self.gamma)
        return np.flatnonzero(mask[0])

    # -- sampling ----------------------------------------------------------------------------
    def _prepare_release(self, ids: np.ndarray) -> None:
        """The UNK point (id -1) must be measurable by the metric (checked at construction
        under ``oov="unk"``; here when an id asks for it under another policy)."""
        if self.oov != "unk" and np.any(ids == OOV_ID):
            self._check_unk_point()

    def _sample(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        gamma = self._gamma_at(epsilon)  # the charged epsilon's radius, not a reassigned one
        if self.constant_work:
            return self._sample_constant_work(ids, rng, epsilon, gamma)
        unique, inverse = np.unique(ids, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.r_[0, np.cumsum(np.bincount(inverse, minlength=len(unique)))]
        out = np.empty(len(ids), dtype=np.int64)
        # Draws in sorted word order whatever the cache holds: a seeded run gives the same
        # words with any cache_mb and before or after precompute().
        for position, law in enumerate(self._word_laws(unique, epsilon, gamma)):
            targets = order[bounds[position] : bounds[position + 1]]
            out[targets] = law.sample(rng, len(targets))
        return out

    def _word_laws(self, unique: np.ndarray, epsilon: float, gamma: float) -> Iterator[WordLaw]:
        """The law of each of the ``unique`` inputs, in order: from the cache, or built
        block by block (an uncached law is valid until the next one is yielded)."""
        key = self._cache_key(epsilon, gamma)
        cached = [self._cache.get((key, word)) for word in unique.tolist()]
        missing = np.array([law is None for law in cached], dtype=bool)
        built = self._built_laws(unique[missing], key, epsilon, gamma)
        for law in cached:
            yield next(built) if law is None else law

    def _built_laws(
        self, ids: np.ndarray, key: tuple[Any, ...], epsilon: float, gamma: float
    ) -> Iterator[WordLaw]:
        """Laws of ``ids`` in order, in blocks sharing a distance pass; the cache keeps
        those it admits."""
        step = self._block_rows(8)
        for start in range(0, len(ids), step):
            block = ids[start : start + step]
            for word, (law, admitted) in zip(
                block.tolist(), self._laws(block, epsilon, gamma), strict=True
            ):
                if admitted:
                    self._cache.put((key, word), law, self._rank(word))
                yield law

    def _laws(
        self, ids: np.ndarray, epsilon: float, gamma: float, *, admit_all: bool = False
    ) -> Iterator[tuple[WordLaw, bool]]:
        """Laws of a block of inputs from one shared distance pass over the vocabulary.

        Yields ``(law, admitted)``: whether the cache will take the law (see
        :class:`LawCache`). Laws it will not take are built in a scratch buffer lent to
        this call (no fresh memory per word), valid until the next law is built: use each
        one before asking for the next.
        """
        points = self._points(ids)
        size = len(self.embeddings)
        rows = max(len(ids), self._block_rows(8))  # one size, so a lent buffer always fits
        with self._buffers.lend(rows * size + size + LAW_BLOCK) as buffer:
            block = buffer[: len(ids) * size].reshape(len(ids), size)
            scratch = buffer[rows * size :]
            values = self._metric.fast_block(points, self.embeddings, out=block)
            for i, word in enumerate(ids.tolist()):
                row = values[i]
                self._metric.finish_row(points[i], row, self.embeddings, gamma)
                mask = ball_mask(row[None, :], gamma)[0]
                nbytes = WordLaw.size_of(mask, size)
                admitted = admit_all or self._cache.admits(nbytes, self._rank(word))
                out = None if admitted else scratch
                # A vocabulary word is at distance 0 from itself under a metric: its best
                # score is 0. Where a user function says otherwise, the best score is computed
                # (with 0 every weight could underflow and the law turn deterministic).
                top = 0.0 if word != OOV_ID and row[word] == 0.0 else None
                yield WordLaw.build(row, mask, gamma, epsilon, top, out=out), admitted

    def _rank(self, word: int) -> int:
        """Cache priority: the public frequency rank (row order when unknown; UNK first)."""
        if word == OOV_ID:
            return 0
        ranks = self.embeddings.frequency_rank
        return word if ranks is None else int(ranks[word])

    def _balls(self, ids: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
        """Distances to every word (re-checked at gamma) and gamma-ball membership."""
        distances = self._metric.to_table(self._points(ids), self.embeddings, gamma)
        return distances, ball_mask(distances, gamma)

    def _block_rows(self, bytes_per_entry: int) -> int:
        return max(1, BLOCK_BYTES // (bytes_per_entry * len(self.embeddings) + 1))

    def _sample_constant_work(
        self, ids: np.ndarray, rng: np.random.Generator, epsilon: float, gamma: float
    ) -> np.ndarray:
        """Algorithm 2 over the whole vocabulary for every token (no caches, no dedup)."""
        size = len(self.embeddings)
        out = np.empty(len(ids), dtype=np.int64)
        step = self._block_rows(40)
        for start in range(0, len(ids), step):
            block = ids[start : start + step]
            scores, mask, n_outside = self._constant_work_scores(block, epsilon, gamma)
            # -d + g is bit for bit the g - d this loop computed before the scores had
            # their own method (IEEE: x - y = x + (-y), and + commutes): seeded runs unchanged.
            scores += sample_gumbel(rng, scores.shape, epsilon)
            winners = np.argmax(scores, axis=1)
            # The uniform draw from W \ L_w, done for every token whether or not ⊥ won.
            ranks = rng.integers(0, np.maximum(n_outside, 1))
            outside_count = np.cumsum(~mask, axis=1, dtype=np.int64)
            drawn = np.count_nonzero(outside_count <= ranks[:, None], axis=1)
            out[start : start + len(block)] = np.where(winners == size, drawn, winners)
        return out

    def _constant_work_scores(
        self, block: np.ndarray, epsilon: float, gamma: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scores :meth:`_sample_constant_work` adds Gumbel noise to, for a block of
        inputs: ``(scores, mask, n_outside)`` with ``scores[:, :|W|]`` = ``-d`` in the ball
        and ``-inf`` outside it, ``scores[:, |W|]`` = ⊥'s score (``-inf`` when ``W \\ L_w``
        is empty), ``mask`` the ball and ``n_outside`` = ``|W \\ L_w|`` per row. Its own
        method so that tests can compare this law with the closed form without sampling.
        """
        size = len(self.embeddings)
        distances, mask = self._balls(block, gamma)
        n_inside = mask.sum(axis=1)
        n_outside = size - n_inside
        scores = np.empty((len(block), size + 1), dtype=np.float64)
        # Branch-free: the same work whatever the ball (a masked write, or an argmax
        # that stops early, would take time that depends on |L_w|, PRIVACY.md 27).
        np.negative(np.where(mask, distances, np.inf), out=scores[:, :size])
        bottom = bottom_score(gamma, np.maximum(n_outside, 1), n_inside, epsilon)
        scores[:, size] = np.where(n_outside > 0, bottom, -np.inf)
        return scores, mask, n_outside

    # -- Algorithm 3: precomputed candidate lists ---------------------------------------------
    def precompute(
        self, words: Sequence[str] | int | None = None, *, progress: bool | None = None
    ) -> int:
        """Compute and cache the output laws of ``words`` ahead of time (Algorithm 3).

        ``words``: a list of words, an int n (the n most frequent words) or None (the most
        frequent words until the cache is full). Progress is shown on stderr (``progress``:
        None = when stderr is a terminal). Returns how many laws are cached afterwards.
        """
        from .._progress import progress_bar

        if self.constant_work:
            raise ValueError("constant_work=True uses no caches; nothing to precompute")
        fill = words is None
        epsilon = self.epsilon  # read once: another thread may reassign it
        gamma = self._gamma_at(epsilon)
        key = self._cache_key(epsilon, gamma)
        ids = self._precompute_ids(words)
        # Laws already cached for this key are not rebuilt (nor put again).
        ids = ids[np.array([self._cache.get((key, w)) is None for w in ids.tolist()], bool)]
        step = self._block_rows(8)
        with progress_bar(progress, total=len(ids), desc="TEM candidate lists", unit="word") as bar:
            for start in range(0, len(ids), step):
                block = ids[start : start + step]
                laws = self._laws(block, epsilon, gamma, admit_all=True)
                for word, (law, _) in zip(block.tolist(), laws, strict=True):
                    if fill and not self._cache.fits(law.nbytes):
                        return len(self._cache)
                    self._cache.put((key, word), law, self._rank(word))
                bar.update(len(block))
        return len(self._cache)

    def _precompute_ids(self, words: Sequence[str] | int | None) -> np.ndarray:
        table = self.embeddings
        if isinstance(words, str):
            raise TypeError("words must be a list of words, an int or None")
        if words is None or not isinstance(words, Sequence):
            count = len(table) if words is None else check_int(words, "words", minimum=0)
            return table.frequency_order()[: min(count, len(table))]
        ids = table.lookup(list(words))
        return np.unique(ids[ids != OOV_ID]) if self.oov != "unk" else np.unique(ids)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_buffers"]
        # Which words are cached is private: copies (also ``copy.copy``) start empty.
        state["_cache"] = LawCache(self._cache.max_bytes)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._buffers = _Buffers()


#: Work buffers a TEM keeps between releases (one per core here); threads share them, one
#: release at a time each, and a release that finds none free allocates its own, dropped
#: afterwards. Per-thread buffers would keep up to 64 MiB per thread that had ever run a
#: release (1.36 GB for 32 pooled threads at 400k words).
KEPT_BUFFERS = 2


class _Buffers:
    """Float64 buffers (a distance block and the scratch of uncached laws) lent to one
    release at a time; at most :data:`KEPT_BUFFERS` are kept. The buffers keep the last
    distance rows of the words privatized, like the law cache, never the words."""

    def __init__(self) -> None:
        self._free: list[np.ndarray] = []
        self._lock = fork_safe_lock(self)

    @contextlib.contextmanager
    def lend(self, size: int) -> Iterator[np.ndarray]:
        with self._lock:
            buffer = self._free.pop() if self._free else None
        if buffer is None or len(buffer) < size:
            buffer = np.empty(size, dtype=np.float64)
        try:
            yield buffer
        finally:
            with self._lock:
                if len(self._free) < KEPT_BUFFERS:
                    self._free.append(buffer)

    def __len__(self) -> int:
        return len(self._free)


def _check_gamma(value: Any) -> float:
    if not is_real(value):
        raise TypeError(f"gamma must be a real number, got {type(value).__name__}")
    gamma = float(value)
    if not (math.isfinite(gamma) and gamma >= 0):
        raise ValueError(f"gamma must be a finite number >= 0, got {gamma:g}")
    return gamma
