"""BRR audit, PRIVACY.md layers T1 (flip law), T2 (exact output law by enumerating every
8-bit code), T3 (black-box audit in Hamming distance) and T4 (mutants must FAIL).

Fixtures: the full 8-bit codebook (decoding is the identity, so the bound is tight) and the
128 even-weight codes (every noisy code of odd weight is at distance 1 from 8 codewords: ties
on about half of all draws).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

import dxp_plugins as dxp
from dxp_plugins.audit import epsilon_lower_bound, g_test, independence_scores, output_counts
from dxp_plugins.embeddings.binary import hamming
from dxp_plugins.mechanisms import brr as brr_module
from tests.audit.spies import record_calls
from tests.fixtures import all_codes, even_weight_codes, one_faiss_thread  # noqa: F401

pytestmark = [pytest.mark.statistical, pytest.mark.usefixtures("one_faiss_thread")]

EPSILONS = [0.5, 2.0]
P_FAIL = 1e-6
DRAWS = 100_000
BITS = 8


def codebook(kind: str, epsilon: float) -> dxp.BRR:
    codes = all_codes(BITS) if kind == "full" else even_weight_codes(BITS)
    return dxp.BRR.from_codes([f"c{i}" for i in range(len(codes))], codes, epsilon)


def reference_law(codes: np.ndarray, row: int, epsilon: float, prefer_input: bool = False):
    """Exact law by enumeration, written independently of the library."""
    every = all_codes(BITS)
    to_words = (every[:, None, :] != codes[None, :, :]).sum(axis=2)
    nearest = to_words == to_words.min(axis=1, keepdims=True)
    decode = nearest / nearest.sum(axis=1, keepdims=True)
    if prefer_input:
        decode[nearest[:, row]] = np.eye(len(codes))[row]
    p = expit(-epsilon)
    flips = (every != codes[row]).sum(axis=1)
    return (p**flips * (1 - p) ** (BITS - flips)) @ decode


# -- mutants ------------------------------------------------------------------------------
def flip_with_two_epsilon(epsilon):
    return float(expit(-2.0 * epsilon))


def sample_ties_prefer_input(self, ids, rng, epsilon):
    """Peer bug: among equally near codes, return the input word when it is one of them."""
    flips = np.packbits(brr_module.sample_flips(rng, len(ids), self.n_bits, epsilon), axis=1)
    noisy = self.codes.packed[ids] ^ flips
    distances = hamming(noisy, self.codes.packed)
    nearest = distances == distances.min(axis=1, keepdims=True)
    uniform = np.argmax(np.where(nearest, rng.random(nearest.shape), -1.0), axis=1)
    return np.where(nearest[np.arange(len(ids)), ids], ids, uniform)


# -- T1: the flip sampler ----------------------------------------------------------------------
def flip_pvalues(epsilon: float, draws: int = 50_000, n_bits: int = 64) -> dict[str, float]:
    flips = brr_module.sample_flips(np.random.default_rng(), draws, n_bits, epsilon)
    p = 1.0 / (1.0 + np.exp(epsilon))
    per_code = np.bincount(flips.sum(axis=1), minlength=n_bits + 1)
    # Independence: the joint law of two fixed bits is the product of the marginals.
    pair = np.bincount(2 * flips[:, 0] + flips[:, 1], minlength=4)
    return {
        "binomial": g_test(per_code, stats.binom(n_bits, p).pmf(np.arange(n_bits + 1))),
        "pair": g_test(pair, [(1 - p) ** 2, (1 - p) * p, p * (1 - p), p**2]),
    }


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_flip_law(epsilon):
    pvalues = flip_pvalues(epsilon)
    assert min(pvalues.values()) > P_FAIL, pvalues


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_flip_law_rejects_two_epsilon(monkeypatch, epsilon):
    monkeypatch.setattr(brr_module, "flip_probability", flip_with_two_epsilon)
    pvalues = flip_pvalues(epsilon)
    assert pvalues["binomial"] < P_FAIL, pvalues


def test_flip_probability_never_overflows():
    """expit(-epsilon), never 1 / (1 + exp(epsilon)): exp overflows from epsilon ~709.8
    (numpy warns, math raises). The mechanisms cap epsilon at 700, where both forms still
    agree, so the function is called directly beyond the cap, with overflow made an error."""
    assert brr_module.flip_probability(700.0) == pytest.approx(np.exp(-700.0), rel=1e-12)
    assert brr_module.flip_probability(1e-12) == pytest.approx(0.5)
    with warnings.catch_warnings(), np.errstate(over="raise"):
        warnings.simplefilter("error")
        for epsilon in (720.0, 1e300):
            assert 0.0 <= brr_module.flip_probability(epsilon) < 1e-300


# -- T2: the exact law, every 8-bit code enumerated ---------------------------------------------
@pytest.mark.parametrize("kind", ["full", "even"])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_exact_output_law(kind, epsilon):
    mech = codebook(kind, epsilon)
    codes = mech.codes.bits()
    # The UNK code is the per-bit majority (ties -> 0): here the all-zero code of row 0.
    np.testing.assert_array_equal(mech._unk_code, mech.codes.packed[0])
    for row in (0, 5, -1):
        law = reference_law(codes, max(row, 0), epsilon)
        np.testing.assert_allclose(mech.distribution(row), law, rtol=1e-9)
        counts = np.bincount(mech.privatize_ids(np.full(DRAWS, row)), minlength=len(codes))
        assert g_test(counts, law) > P_FAIL, (row, counts)


def test_even_codebook_hits_ties():
    """Path coverage: about half of all noisy codes tie between 8 codewords."""
    mech = codebook("even", 0.5)
    flips = brr_module.sample_flips(np.random.default_rng(), 20_000, BITS, 0.5)
    noisy = np.packbits(mech.codes.bits_of(np.zeros(20_000, dtype=np.int64)) ^ flips, axis=1)
    distances, _ = mech.binary_index.search_raw(noisy, 8)
    tied = distances[:, 1] == distances[:, 0]
    assert tied.mean() > 0.4
    assert np.all(distances[tied, 7] == distances[tied, 0])  # all 8 neighbours tie


def test_ties_are_uniform():
    """A noisy code at distance 1 from 8 codewords decodes to each with probability 1/8."""
    mech = codebook("even", 1.0)
    query = np.packbits(np.r_[True, np.zeros(BITS - 1, dtype=bool)])[None, :]
    rng = np.random.default_rng()
    found = mech.binary_index.search(np.repeat(query, 80_000, axis=0), rng)
    words = np.flatnonzero((mech.codes.bits() != np.unpackbits(query)[None, :BITS]).sum(1) == 1)
    assert len(words) == BITS
    counts = np.bincount(found, minlength=len(mech.codes))
    assert counts[np.setdiff1d(np.arange(len(mech.codes)), words)].sum() == 0
    assert g_test(counts[words], np.full(BITS, 1 / BITS)) > P_FAIL


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_exact_output_law_rejects_mutants(monkeypatch, epsilon):
    mech = codebook("even", epsilon)
    law = reference_law(mech.codes.bits(), 0, epsilon)
    with monkeypatch.context() as patch:
        patch.setattr(brr_module, "flip_probability", flip_with_two_epsilon)
        counts = np.bincount(mech.privatize_ids(np.full(50_000, 0)), minlength=len(law))
        assert g_test(counts, law) < P_FAIL
    with monkeypatch.context() as patch:
        patch.setattr(dxp.BRR, "_sample", sample_ties_prefer_input)
        counts = np.bincount(mech.privatize_ids(np.full(50_000, 0)), minlength=len(law))
        assert g_test(counts, law) < P_FAIL


# -- T3: black-box audit in Hamming distance -----------------------------------------------------
PAIRS = {"full": [(0, 1), (0, 3), (5, 10)], "even": [(0, 1), (0, 2), (5, 9)]}


def audit_codebook(mech: dxp.BRR, kind: str, draws: int = DRAWS):
    codes = mech.codes.bits()
    pairs = PAIRS[kind]
    inputs = sorted({row for pair in pairs for row in pair})
    position = {row: index for index, row in enumerate(inputs)}
    counts = output_counts(
        lambda row, n: mech.privatize_ids(np.full(n, row)), inputs, draws, len(codes)
    )
    distances = [float((codes[a] != codes[b]).sum()) for a, b in pairs]
    assert min(distances) >= 1
    return epsilon_lower_bound(
        counts, [(position[a], position[b]) for a, b in pairs], distances, mech.epsilon
    )


TIGHTNESS = {"full": 0.6, "even": 0.45}


@pytest.mark.parametrize("kind", ["full", "even"])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_black_box_audit_passes(kind, epsilon):
    result = audit_codebook(codebook(kind, epsilon), kind)
    assert result.passed, str(result)
    # Not vacuous. Measured over 15 runs of 100k draws: full 0.75-0.95 of the claim; even
    # 0.60-0.68 at epsilon 0.5 (a floor of 0.6 failed a CI run at 0.598), 0.72-0.74 at 2.
    assert result.epsilon_lower_bound > TIGHTNESS[kind] * epsilon, str(result)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_black_box_audit_fails_on_two_epsilon_flips(monkeypatch, epsilon):
    monkeypatch.setattr(brr_module, "flip_probability", flip_with_two_epsilon)
    result = audit_codebook(codebook("full", epsilon), "full")
    assert not result.passed, str(result)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_black_box_audit_fails_when_ties_prefer_the_input(monkeypatch, epsilon):
    monkeypatch.setattr(dxp.BRR, "_sample", sample_ties_prefer_input)
    # Exact loss of this mutant: 4.8x the claim at epsilon 0.5, 1.16x at 2 (more draws).
    draws = DRAWS if epsilon < 1 else 300_000
    result = audit_codebook(codebook("even", epsilon), "even", draws=draws)
    assert not result.passed, str(result)


# -- T3 on pre-declared events: one event per pair, chosen from the exact law ----------------
# Metric DP bounds every event, not only single outputs: Pr[M(a) in S] <= e^(eps d)
# Pr[M(b) in S]. S = {y : p_a(y) > p_b(y)} (its complement for the reverse direction) is
# where the exact laws differ most; it is fixed before drawing, so the Bonferroni split
# covers 2 directions x pairs x 2 bins instead of x 256 outputs, and each bin pools many
# outputs. Correct code then reaches 0.92-0.98 of the claim on the full codebook (0.75-0.95
# per output) and a flip rate at 1.1 epsilon fails 6 of 6 runs at each epsilon (review 11).
# It complements the per-output audit, not replaces it: ties that prefer the input put
# their excess on one output, which a bin of the correct law's events dilutes (bound
# 0.94-0.95 of the claim at 100k draws: passed).
POOLED_TIGHTNESS = 0.9


def audit_pooled_events(mech: dxp.BRR, kind: str, draws: int = DRAWS, exact: bool = False):
    """The pooled-event audit on ``draws`` outputs per input, or (``exact``) on the counts
    the exact law expects: the bound a correct mechanism reaches on average."""
    codes = mech.codes.bits()
    pairs = PAIRS[kind]
    inputs = sorted({row for pair in pairs for row in pair})
    if exact:
        laws = [draws * reference_law(codes, row, mech.epsilon) for row in inputs]
    else:
        laws = output_counts(
            lambda row, n: mech.privatize_ids(np.full(n, row)), inputs, draws, len(codes)
        )
    counts = dict(zip(inputs, laws, strict=True))
    bins, tested, distances = [], [], []
    for a, b in pairs:
        event = reference_law(codes, a, mech.epsilon) > reference_law(codes, b, mech.epsilon)
        bins += [[counts[row][event].sum(), counts[row][~event].sum()] for row in (a, b)]
        tested.append((len(bins) - 2, len(bins) - 1))
        distances.append(float((codes[a] != codes[b]).sum()))
    return epsilon_lower_bound(np.rint(bins), tested, distances, mech.epsilon)


@pytest.mark.parametrize("kind", ["full", "even"])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pooled_event_audit_passes(kind, epsilon):
    result = audit_pooled_events(codebook(kind, epsilon), kind)
    assert result.passed, str(result)
    # Not vacuous: near what the exact law's expected counts give (of the claim: full 0.937
    # at eps 0.5, 0.974 at 2; even 0.692, 0.778). 30 runs of even at 0.5 gave 0.682-0.710
    # (2026-11-23); a fixed floor of 0.7 x the claim, set from a mis-measured "0.78-0.82",
    # failed a CI run at 0.698.
    expected = audit_pooled_events(codebook(kind, epsilon), kind, exact=True)
    assert result.epsilon_lower_bound > POOLED_TIGHTNESS * expected.epsilon_lower_bound, (
        f"{result}; the exact law's expected counts give {expected.epsilon_lower_bound:.4f}"
    )


def flip_with_110_epsilon(epsilon):
    return float(expit(-1.1 * epsilon))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_pooled_event_audit_fails_on_a_ten_percent_flip_error(monkeypatch, epsilon):
    """The per-output audit misses a flip rate at 1.1 epsilon at epsilon 0.5 (0/6 runs):
    the pooled events catch it (bound 1.03-1.08 of the claim over 6 runs each)."""
    monkeypatch.setattr(brr_module, "flip_probability", flip_with_110_epsilon)
    result = audit_pooled_events(codebook("full", epsilon), "full")
    assert not result.passed, str(result)


# -- fresh flips for every token and every call (PRIVACY.md 11) -------------------------------
@pytest.mark.parametrize("kind", ["full", "even"])
def test_tokens_and_calls_draw_independent_flips(kind):
    """Each output alone keeps its exact law when flips are shared between tokens or replayed
    by the next call; pairs of outputs must coincide only as often as independent draws."""
    scores = independence_scores(codebook(kind, 2.0), 0, 3 if kind == "even" else 1)
    assert max(map(abs, scores.values())) < 6.0, scores


# -- the flip probability that reaches the sampler, end to end (PRIVACY.md T4) ---------------
_true_flips = dxp.BRR._flips


def flips_at_102_epsilon(self, rng, count, epsilon):
    """Bits flipped at 1.02 epsilon in the release path while the record claims epsilon:
    T1 tests sample_flips only at the epsilon the test passes, T2 missed x1.02 at 0.5 and
    T3 is blind below x1.1 there (review 11)."""
    return _true_flips(self, rng, count, 1.02 * epsilon)


def flip_probabilities(monkeypatch, epsilon: float) -> list[float]:
    """The flip probability of every sample_flips call made by ``privatize`` (the real
    sampler runs): what the module's flip_probability returned inside each call."""
    flips = record_calls(monkeypatch, brr_module, "sample_flips")
    probabilities = record_calls(monkeypatch, brr_module, "flip_probability")
    mech = codebook("full", epsilon)
    tokens = ["c0", "c5", "zq-not-a-word", "c255", "c0"]
    assert len(mech.privatize(tokens)) == len(tokens)
    assert mech.last_guarantee is not None and mech.last_guarantee.epsilon == epsilon
    assert sum(call["count"] for call in flips) == len(tokens)  # every token flipped
    assert all(call["n_bits"] == BITS for call in flips)
    assert len(probabilities) == len(flips)  # one probability per sampler call
    return [call["returned"] for call in probabilities]


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_flips_are_drawn_at_the_claimed_probability(monkeypatch, epsilon):
    """Catches any factor between ``privatize`` and the flips, however small: the
    probability used must be 1 / (1 + e^epsilon) of the claimed epsilon."""
    used = flip_probabilities(monkeypatch, epsilon)
    expected = 1.0 / (1.0 + np.exp(epsilon))
    assert used and all(p == pytest.approx(expected, rel=1e-12) for p in used), used


def test_flip_probability_check_rejects_a_scaled_caller(monkeypatch):
    monkeypatch.setattr(dxp.BRR, "_flips", flips_at_102_epsilon)
    used = flip_probabilities(monkeypatch, 0.5)
    expected = 1.0 / (1.0 + np.exp(0.5))
    assert any(p != pytest.approx(expected, rel=1e-12) for p in used), used
