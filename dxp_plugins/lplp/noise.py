"""Two-sided geometric noise, integer-valued (PRIVACY.md 10; Ghosh et al. 2012).

The two-sided geometric law with parameter ``alpha = exp(-rate)`` has pmf

    Pr[Z = k] = (1 - alpha) / (1 + alpha) * alpha ** |k|,    k in Z.

It is the difference of two independent geometric variables counting failures,
``G ~ (1 - alpha) alpha^g`` for ``g >= 0``; and ``G = floor(E / rate)`` for ``E ~ Exp(1)``
because ``Pr[floor(E/rate) = g] = e^{-rate g} - e^{-rate (g+1)}``. So

    Z = floor(E1 / rate) - floor(E2 / rate)

is exactly two-sided geometric whenever ``E1, E2`` are exact exponentials (for small alpha
an equivalent sparse construction draws only the non-zero entries, see
:func:`sample_two_sided_geometric`). The output is an
integer, so there is no floating-point leakage of the low-order bits of a real-valued sample
(Mironov 2012). In the body of numpy's ziggurat (``E < 7.697``, all but ``e**-7.697`` =
4.5e-4 of the mass) ``E`` lies on a grid of spacing at most ``7.7 * 2**-53`` (about
8.5e-16), so ``floor(E / rate)`` puts a relative error of about ``8.5e-16 / rate`` on each
value's probability: negligible at ordinary rates, but above 1 below ``rate`` ~ 1e-15,
where the grid is coarser than one integer step and the parity of a noisy count would give
away the parity of the true one. So :func:`geometric`
uses ``floor(E / rate)`` only for ``rate >= SPLIT_BELOW`` (2**-10: body error below
9e-13) and below it splits a draw into blocks of ``m = ceil(1 / rate)`` values,
``G = m A + B``: ``A`` is geometric with ratio ``alpha**m = e**-(rate m)`` (``rate m >= 1``,
so ``floor(E / (rate m))`` is well resolved: a body error of a few ``2**-52``) and ``B``
in ``[0, m)`` has ``Pr[b] ∝ alpha**b``, drawn by proposing exact uniform integers and
accepting each with probability ``alpha**b >= 1/e`` (error below ``e * 2**-53`` plus the
rounding of ``exp``). Probabilities far below ``2**-53`` (the sparse construction's
positions at large rates) come from :func:`exact_bernoulli`, which draws the power of two
of a probability as fair bits.

What remains is the ziggurat's tail branch, ``E = 7.697 - log1p(-U)`` with a 53-bit ``U``:
its grid coarsens as ``e**(E - 7.697) * 2**-53``, so the relative error grows along the
tail (past 9e-13 at rate 2**-10 from E ~ 10, mass 4.5e-5), reaching 100% near its end,
``E <= 44.44``: a geometric draw never exceeds its ``44.44 / rate`` quantile (split draws:
``45.44 / rate``), and above rate 44.44 the sparse path's magnitude is always 1. Counted
as delta (the exact sum of ``max(0, D(z) - e**rate D(z - 1))`` over the tail grid):
1.1e-19 to 6.7e-19 per entry in the dense path (rates 2**-10 to 1.9), at most
7.4e-20 in the sparse path. A release of K entries is therefore (N, epsilon,
delta)-LPLP with ``delta <= K * 1e-18`` besides the body errors above, far below any other
error in practice.

:func:`sample_two_sided_geometric` is a module-level function so tests can replace it (the
mutant hook of PRIVACY.md T4).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import MAX_EPSILON

#: Largest standard exponential numpy's ziggurat can return (see module docstring).
MAX_EXPONENTIAL = 7.69711747013104972 + 53 * np.log(2.0)

#: Smallest rate: noise then stays below ``2**62`` in magnitude (a split draw is below
#: ``(MAX_EXPONENTIAL + 1) / rate``), so counts below :data:`.compression.MAX_TOTAL` plus
#: noise fit in int64. A smaller rate (e.g. epsilon = 1e-6 with N = 1e14) made both geometric
#: draws saturate at the same int64 value and cancel, releasing the exact counts.
MIN_RATE = (MAX_EXPONENTIAL + 1.0) / 2**62
#: Largest rate: ``exp(-rate)`` must not underflow (above ~745 it is 0 and no noise is drawn
#: at all); the same bound as every epsilon (PRIVACY.md 23).
MAX_RATE = MAX_EPSILON

#: Below this probability of a non-zero draw, only the non-zero entries are sampled.
SPARSE_BELOW = 0.25
#: Below this rate a geometric draw is split into blocks (module docstring).
SPLIT_BELOW = 2.0**-10
#: Fair bits per integer draw of :func:`exact_bernoulli`.
_BITS_PER_DRAW = 62


def check_rate(rate: float, name: str = "epsilon / n_changes") -> float:
    """``rate`` if it lies in [:data:`MIN_RATE`, :data:`MAX_RATE`] (ValueError otherwise,
    also for NaN)."""
    if not rate >= MIN_RATE:
        raise ValueError(
            f"{name} must be at least {MIN_RATE:.3g}: smaller ones give noise beyond int64"
        )
    if not rate <= MAX_RATE:
        raise ValueError(
            f"{name} must be at most {MAX_RATE:g}, got {rate:g}: beyond it the noise "
            "parameter exp(-rate) underflows and the counts would be released without noise"
        )
    return rate


def exact_bernoulli(rng: np.random.Generator, count: int, probability: float) -> np.ndarray:
    """``count`` independent booleans, each True with ``probability`` in [0, 1], to a relative
    error below ``2**-52`` however small it is: ``probability = q * 2**-k`` with ``q`` in
    [1/2, 1), and ``Pr[k fair bits are all 0] = 2**-k`` exactly (bits drawn
    :data:`_BITS_PER_DRAW` at a time, only for the entries still alive), then ``U < q`` with a
    53-bit uniform ``U``. A bare ``U < probability`` is coarse below ``2**-40`` and exactly 0
    or ``2**-53`` below ``2**-53``."""
    if probability >= 1.0:
        return np.ones(count, dtype=bool)
    out = np.zeros(count, dtype=bool)
    if probability <= 0.0:
        return out
    mantissa, exponent = math.frexp(probability)  # probability = mantissa * 2**exponent
    alive, bits = np.arange(count), -exponent
    while bits > 0 and len(alive):
        step = min(bits, _BITS_PER_DRAW)
        alive = alive[rng.integers(0, 1 << step, len(alive)) == 0]
        bits -= step
    out[alive[rng.random(len(alive)) < mantissa]] = True
    return out


def _truncated_geometric(rng: np.random.Generator, count: int, rate: float, m: int) -> np.ndarray:
    """``count`` draws on ``[0, m)`` with ``Pr[b] ∝ exp(-rate b)``, for ``rate (m - 1) <= 1``:
    exact uniform proposals, each accepted with probability ``exp(-rate b) >= 1/e``."""
    out = np.empty(count, dtype=np.int64)
    todo = np.arange(count)
    while len(todo):
        proposal = rng.integers(0, m, len(todo))
        accepted = rng.random(len(todo)) < np.exp(-rate * proposal)
        out[todo[accepted]] = proposal[accepted]
        todo = todo[~accepted]
    return out


def geometric(
    rng: np.random.Generator, count: int, rate: float, cap: int | None = None
) -> np.ndarray:
    """``count`` geometric failure counts, ``Pr[g] = (1-a) a**g`` with ``a = exp(-rate)``
    (int64; residuals in the module docstring).

    ``rate >= SPLIT_BELOW``: ``floor(E / rate)``. Below: ``G = m A + B`` with
    ``m = ceil(1 / rate)``. With ``cap``, values above it are returned as ``cap`` (a gap
    that leads past the end of an array): when ``cap <= m`` only whether ``A = 0`` matters,
    an event of probability ``1 - a**cap`` drawn by :func:`exact_bernoulli`, so a tiny rate
    neither overflows int64 nor needs a probability below ``2**-53`` from one uniform.
    """
    if rate >= SPLIT_BELOW:
        failures = np.floor(rng.standard_exponential(count) / rate)
        if cap is not None:
            np.minimum(failures, cap, out=failures)
        return failures.astype(np.int64)
    m = math.ceil(1.0 / rate)
    if cap is not None and cap <= m:
        below = exact_bernoulli(rng, count, -math.expm1(-rate * cap))  # A == 0: G < cap
        out = np.full(count, cap, dtype=np.int64)
        out[below] = _truncated_geometric(rng, int(below.sum()), rate, cap)
        return out
    blocks = np.floor(rng.standard_exponential(count) / (rate * m)).astype(np.int64)
    failures = m * blocks + _truncated_geometric(rng, count, rate, m)
    if cap is not None:
        np.minimum(failures, cap, out=failures)
    return failures


def _bernoulli_positions(rng: np.random.Generator, size: int, probability: float) -> np.ndarray:
    """Indices in ``range(size)`` each chosen independently with ``probability``: the gaps
    between chosen indices are geometric failure counts of rate ``-log1p(-probability)``.

    A gap of ``size`` or more always leads past the end, so gaps are capped at ``size``: the
    positions kept have the exact law, and ``probability`` down to ``2 e^-700`` (gaps of
    ~1e305) cannot overflow int64 (:func:`geometric` decides such rare gaps exactly).
    """
    rate = -np.log1p(-probability)
    expected = size * probability
    batch = int(expected + 6.0 * np.sqrt(expected) + 16)
    chunks, end = [], -1
    while end < size:
        positions = end + np.cumsum(geometric(rng, batch, rate, cap=size) + 1)
        chunks.append(positions)
        end = int(positions[-1])
    positions = np.concatenate(chunks)
    return positions[positions < size]


def is_dense(rate: float) -> bool:
    """Whether :func:`sample_two_sided_geometric` draws two exponentials for every entry at
    ``rate`` (else only the non-zero entries are drawn)."""
    alpha = np.exp(-rate)
    return bool(2.0 * alpha / (1.0 + alpha) >= SPARSE_BELOW)


def sample_two_sided_geometric(
    rng: np.random.Generator, shape: int | tuple[int, ...], rate: float
) -> np.ndarray:
    """Integer noise with ``Pr[Z = k] ∝ exp(-rate |k|)``: ``alpha = exp(-rate)`` (int64).

    Dense regime: ``Z = G1 - G2``. When ``Pr[Z != 0] = 2 alpha / (1 + alpha)`` is below
    :data:`SPARSE_BELOW`, the same law is drawn as: non-zero entries at Bernoulli positions,
    each a fair sign times ``1 + G`` -- since ``Pr[|Z| = k | Z != 0] = (1-alpha) alpha^(k-1)``
    -- which costs draws per non-zero entry instead of per entry.
    """
    check_rate(rate, "rate")
    size = int(np.prod(shape))
    alpha = np.exp(-rate)
    nonzero = 2.0 * alpha / (1.0 + alpha)
    if is_dense(rate):  # the release's own split decision (same expression)
        return (geometric(rng, size, rate) - geometric(rng, size, rate)).reshape(shape)
    noise = np.zeros(size, dtype=np.int64)
    if nonzero > 0:
        positions = _bernoulli_positions(rng, size, nonzero)
        signs = 2 * rng.integers(0, 2, len(positions)) - 1
        noise[positions] = signs * (1 + geometric(rng, len(positions), rate))
    return noise.reshape(shape)


def two_sided_geometric_pmf(values: np.ndarray, rate: float) -> np.ndarray:
    """Exact ``Pr[Z = k]`` of :func:`sample_two_sided_geometric` for integer ``values``."""
    alpha = np.exp(-rate)
    magnitude = np.abs(np.asarray(values, dtype=np.float64))
    return np.asarray(-np.expm1(-rate) / (1.0 + alpha) * np.exp(-rate * magnitude))


def clamped_pmf(true_count: int, outputs: np.ndarray, rate: float) -> np.ndarray:
    """Exact law of ``max(true_count + Z, 0)`` at non-negative integer ``outputs``."""
    outputs = np.asarray(outputs, dtype=np.int64)
    pmf = two_sided_geometric_pmf(outputs - true_count, rate)
    if true_count < 0:
        raise ValueError("counts are non-negative")
    # Pr[t + Z <= 0] = Pr[Z <= -t] = alpha^t / (1 + alpha) for t >= 0.
    alpha = np.exp(-rate)
    at_zero = np.exp(-rate * true_count) / (1.0 + alpha)
    return np.where(outputs == 0, at_zero, pmf)
