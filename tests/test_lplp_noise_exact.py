"""The two-sided geometric sampler at the edges of the accepted rates (numerical review,
sixteenth session; PRIVACY.md 10): tiny rates, where ``floor(E / rate)`` sits on a grid
coarser than one integer, and probabilities below ``2**-53``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dxp_plugins.audit import g_test
from dxp_plugins.lplp import noise
from dxp_plugins.lplp.calibration import calibrate
from dxp_plugins.lplp.release import LPLPRelease


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def _binned_law_pvalue(draws: np.ndarray, rate: float, edges: np.ndarray) -> float:
    """Chi-square p-value of ``draws`` against ``Pr[g] = (1-a) a^g`` over ``[edges[i],
    edges[i+1])`` bins (the last bin open-ended)."""
    observed = np.bincount(np.searchsorted(edges, draws, side="right") - 1, minlength=len(edges))
    upper = np.exp(-rate * edges.astype(np.float64))  # Pr[G >= edge]
    expected = len(draws) * -np.diff(np.append(upper, 0.0))
    return float(stats.chisquare(observed, expected).pvalue)


def _split_law_pvalue(rate: float) -> float:
    """Bins inside the first block (B's law), at block boundaries and in the tail (A's)."""
    m = math.ceil(1 / rate)
    edges = np.unique(
        np.r_[np.linspace(0, m, 17)[:-1], m * np.array([1, 1.5, 2, 3, 4, 6])].astype(np.int64)
    )
    return _binned_law_pvalue(noise.geometric(_rng(1), 400_000, rate), rate, edges)


@pytest.mark.parametrize("rate", [2.0**-11, 1e-6])
def test_split_draws_follow_the_geometric_law_within_and_across_blocks(rate):
    assert _split_law_pvalue(rate) > 1e-6


def _accept_every_proposal(rng, count, rate, m):
    return rng.integers(0, m, count)  # B uniform on [0, m): the acceptance step dropped


def _blocks_at_half_the_rate(rng, count, rate, cap=None):
    m = math.ceil(1.0 / rate)  # A with ratio alpha**(m/2) instead of alpha**m
    blocks = np.floor(rng.standard_exponential(count) / (0.5 * rate * m)).astype(np.int64)
    return m * blocks + noise._truncated_geometric(rng, count, rate, m)


@pytest.mark.parametrize(
    ("name", "mutant"),
    [("_truncated_geometric", _accept_every_proposal), ("geometric", _blocks_at_half_the_rate)],
    ids=["B uniform", "A at half the rate"],
)
def test_mutants_of_the_split_draw_are_caught(monkeypatch, name, mutant):
    """PRIVACY.md T4 for the split sampler: each mutant fails the law test above."""
    monkeypatch.setattr(noise, name, mutant)
    assert _split_law_pvalue(2.0**-11) < 1e-6


def _residue_law_pvalue(rate: float, seed: int = 2) -> float:
    """G-test of ``G mod m`` (the within-block value ``B``, law ``∝ exp(-rate b)`` on
    ``[0, m)``) over 16 pooled bins of ``[0, m - 1)`` and the last residue ``m - 1`` alone:
    :func:`_split_law_pvalue` pools it with 127 others, where a missing residue is lost."""
    m = math.ceil(1 / rate)
    residues = noise.geometric(_rng(seed), 400_000, rate) % m
    edges = np.r_[np.linspace(0, m - 1, 17)[:-1].astype(np.int64), m - 1, m]
    observed = np.bincount(np.searchsorted(edges, residues, side="right") - 1, minlength=17)
    upper = np.exp(-rate * edges.astype(np.float64))  # proportional to Pr[B >= edge]
    assert len(observed) == len(upper) - 1 == 17
    return g_test(observed, -np.diff(upper))


def test_split_draws_reach_the_last_residue_of_a_block():
    """PRIVACY.md T4 (review of the suite, M2): with ``rng.integers(0, m - 1, ...)`` in
    :func:`noise._truncated_geometric` (``B`` never ``m - 1``; a 31% epsilon violation by
    the exact pmf) this test fails (p = 7e-41 at 400k seeded draws; correct code 0.87); the
    residue-0 to m-2 bins alone cannot see it. Seeded draws: never a chance failure."""
    assert _residue_law_pvalue(2.0**-11) > 1e-6


@pytest.mark.parametrize(("m", "rate"), [(2, 1.0), (4, 0.3), (5, 0.25)])
def test_truncated_geometric_has_its_exact_law_at_small_m(m, rate):
    """Every value of ``[0, m)`` with ``Pr[b] ∝ exp(-rate b)`` (``rate (m - 1) <= 1``, the
    sampler's domain; also its use under a cap ``<= m``). Fails on the ``[0, m - 1)``
    proposal mutant (value ``m - 1`` never drawn: p = 0). Seeded: never a chance failure."""
    draws = noise._truncated_geometric(_rng(3), 50_000, rate, m)
    law = np.exp(-rate * np.arange(m))
    assert g_test(np.bincount(draws, minlength=m), law / law.sum()) > 1e-6


def test_a_bernoulli_without_its_fair_bits_is_caught(monkeypatch):
    """T4: exact_bernoulli with its power of two dropped (only ``U < mantissa``) draws
    0.7 * 2**-13 as 0.7 and fails the chained-bits rate check."""

    def mantissa_only(rng, count, probability):
        return rng.random(count) < math.frexp(probability)[0]

    monkeypatch.setattr(noise, "exact_bernoulli", mantissa_only)
    with pytest.raises(AssertionError):
        test_exact_bernoulli_chains_its_fair_bits(monkeypatch)


@pytest.mark.parametrize("rate", [noise.MIN_RATE, 1e-16, 1e-15])
def test_noise_parity_is_fair_at_the_smallest_rates(rate):
    """The ziggurat grid made Pr[Z even] 0.92 at 1e-17 and 0.58 at 1e-16 (exact: 1/2 + O(rate))."""
    z = noise.sample_two_sided_geometric(_rng(2), (1_000_000,), rate)
    assert abs(np.mean(z % 2 == 0) - 0.5) < 6 * math.sqrt(0.25 / len(z))
    assert abs(np.mean(z % 3 == 0) - 1 / 3) < 6 * math.sqrt(2 / 9 / len(z))
    assert np.abs(z).max() < 2**62


def test_a_release_at_a_tiny_rate_does_not_reveal_the_parity_of_a_count():
    """End to end: (N = 1e13, epsilon = 1e-3)-LPLP on neighbouring counts 2^40 and 2^40 + 1
    gave odd outputs 8% and 92% of the time before the fix."""
    release = LPLPRelease(np.arange(1), epsilon=1e-3, n_changes=10**13, random_state=0)

    def odd_share(count: int) -> float:
        out, _ = release.release(np.full((200_000, 1), count, dtype=np.int64))
        values = out.toarray().ravel()
        return float(np.mean(values[values > 0] % 2 == 1))

    assert abs(math.log(odd_share(2**40 + 1) / odd_share(2**40))) < 0.05


def test_exact_bernoulli_chains_its_fair_bits(monkeypatch):
    """4 bits per draw make 0.7 * 2**-13 take four draws; the rate must still be exact."""
    monkeypatch.setattr(noise, "_BITS_PER_DRAW", 4)
    probability = 0.7 * 2.0**-13
    hits = int(noise.exact_bernoulli(_rng(3), 8_000_000, probability).sum())
    expected = 8_000_000 * probability
    assert abs(hits - expected) < 6 * math.sqrt(expected)


@pytest.mark.parametrize("probability", [0.0, 1.0, 0.3, 2.0**-1074])
def test_exact_bernoulli_edges(probability):
    draws = noise.exact_bernoulli(_rng(4), 200_000, probability)
    if probability in (0.0, 2.0**-1074):
        assert not draws.any()
    elif probability == 1.0:
        assert draws.all()
    else:
        assert abs(draws.mean() - 0.3) < 6 * math.sqrt(0.21 / 200_000)


def test_capped_gaps_at_a_tiny_rate_are_below_the_cap_as_often_as_they_should_be():
    """Pr[G < cap] = 1 - a^cap; the draws below the cap follow the truncated law."""
    rate, cap, count = 1e-9, 2**14, 4_000_000
    draws = noise.geometric(_rng(5), count, rate, cap=cap)
    below = draws[draws < cap]
    expected = count * -math.expm1(-rate * cap)
    assert abs(len(below) - expected) < 6 * math.sqrt(expected)
    assert set(np.unique(draws[draws >= cap]).tolist()) == {cap}
    assert stats.kstest(below / cap, "uniform").pvalue > 1e-6  # nearly flat at rate * cap ~ 2e-5


def _first_word_zero(seed: int) -> np.random.Generator:
    """A generator whose first raw 64-bit word is 0 (an event of probability 2**-64), then
    PCG64 words."""
    from randomgen import UserBitGenerator

    rest = _rng(seed)
    words = iter([0])

    def next_raw(_: object = None) -> int:
        word = next(words, None)
        return int(rest.integers(0, 2**64, dtype=np.uint64)) if word is None else word

    return np.random.Generator(UserBitGenerator(next_raw, 64))


def test_a_rare_first_word_does_not_put_noise_on_the_first_entry():
    """The sparse path at rate 50 (Pr[Z != 0] = 3.9e-22 per entry): a bare uniform turned a
    first raw word below 2**11 (probability 2**-53) into a gap of 0, noise on entry 0 every
    time; the exact Bernoulli needs 68 zero bits for that, so the 0 word alone is not enough."""
    rate = 50.0
    assert not noise.is_dense(rate)
    hits = sum(
        int(noise.sample_two_sided_geometric(_first_word_zero(seed), (8,), rate).any())
        for seed in range(40)
    )
    assert hits <= 4  # ~0.5 expected (2**-6 x 0.6 per run); the old sampler: 40 of 40


def test_rates_beyond_700_are_refused_in_every_calibration():
    """alpha = exp(-rate) is 0 above ~745: the release would carry no noise at all."""
    with pytest.raises(ValueError, match="at most 700"):
        noise.check_rate(745.5)
    with pytest.raises(ValueError, match=r"M\*epsilon/K = 8\*700/1 must lie in"):
        calibrate(700.0, 1, 8, 1, "paper")
    with pytest.raises(ValueError, match="must lie in"):
        LPLPRelease(np.zeros(8, dtype=int), epsilon=700.0, calibration="paper")
    assert calibrate(700.0, 1, 8, 8, "paper").rate == 700.0
