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
(Mironov 2012); the only float residual is in the law of ``E``:

* numpy's ziggurat draws ``E`` on a grid of spacing at most ``7.7 * 2**-53`` (about 1e-15),
  so each integer value's probability carries a relative error of about ``1e-15 / rate``
  (below 1e-9 for ``rate >= 1e-6``, i.e. ``epsilon / N >= 1e-6``);
* its tail branch is ``7.697 - log1p(-U)`` with a 53-bit ``U``, so ``E <= 44.44``: noise of
  magnitude above ``44.44 / rate`` is never drawn although its exact probability is at most
  ``e^{-44.44}``, about 5e-20. A release of K entries is therefore (N, epsilon, delta)-LPLP
  with ``delta <= 2 K * 5e-20`` besides the relative rounding above, far below any other
  error in practice.

:func:`sample_two_sided_geometric` is a module-level function so tests can replace it (the
mutant hook of PRIVACY.md T4).
"""

from __future__ import annotations

import numpy as np

#: Largest standard exponential numpy's ziggurat can return (see module docstring).
MAX_EXPONENTIAL = 7.69711747013104972 + 53 * np.log(2.0)


#: Smallest rate: noise then stays below ``2**62`` in magnitude, so counts below
#: :data:`.compression.MAX_TOTAL` plus noise fit in int64. A smaller rate (e.g. epsilon = 1e-6
#: with N = 1e14) made both geometric draws saturate at the same int64 value and cancel,
#: releasing the exact counts.
MIN_RATE = MAX_EXPONENTIAL / 2**62

#: Below this probability of a non-zero draw, only the non-zero entries are sampled.
SPARSE_BELOW = 0.25


def check_rate(rate: float, name: str = "epsilon / n_changes") -> float:
    """``rate`` if it is at least :data:`MIN_RATE` (ValueError otherwise, also for NaN)."""
    if not rate >= MIN_RATE:
        raise ValueError(
            f"{name} must be at least {MIN_RATE:.3g}: smaller ones give noise beyond int64"
        )
    return rate


def _failures(
    rng: np.random.Generator, count: int, rate: float, cap: int | None = None
) -> np.ndarray:
    """``count`` geometric failure counts ``floor(E / rate)``: ``Pr[g] = (1-a) a^g``, a=e^-rate.

    With ``cap``, values above it become ``cap`` while still floats, so a tiny ``rate`` never
    overflows the int64 cast.
    """
    failures = np.floor(rng.standard_exponential(count) / rate)
    if cap is not None:
        np.minimum(failures, cap, out=failures)
    return failures.astype(np.int64)


def _bernoulli_positions(rng: np.random.Generator, size: int, probability: float) -> np.ndarray:
    """Indices in ``range(size)`` each chosen independently with ``probability``: the gaps
    between chosen indices are geometric failure counts of rate ``-log1p(-probability)``.

    A gap of ``size`` or more always leads past the end, so gaps are capped at ``size``: the
    positions kept have the exact law, and ``probability`` down to ``2 e^-700`` (gaps of
    ~1e305) cannot overflow int64.
    """
    rate = -np.log1p(-probability)
    expected = size * probability
    batch = int(expected + 6.0 * np.sqrt(expected) + 16)
    chunks, end = [], -1
    while end < size:
        positions = end + np.cumsum(_failures(rng, batch, rate, cap=size) + 1)
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
    if nonzero >= SPARSE_BELOW:
        return (_failures(rng, size, rate) - _failures(rng, size, rate)).reshape(shape)
    noise = np.zeros(size, dtype=np.int64)
    if nonzero > 0:
        positions = _bernoulli_positions(rng, size, nonzero)
        signs = 2 * rng.integers(0, 2, len(positions)) - 1
        noise[positions] = signs * (1 + _failures(rng, len(positions), rate))
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
