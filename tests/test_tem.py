"""TEM: API, validation, gamma, caches (PRIVACY.md 6), OOV, exact ball boundary, precompute."""

from __future__ import annotations

import dataclasses
import math
import pickle
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import dxp_plugins as dxp
from dxp_plugins import registry
from dxp_plugins.audit import g_test
from dxp_plugins.embeddings import OOV_ID
from dxp_plugins.errors import OOVError, PrivacyWarning, SeededRandomnessWarning
from dxp_plugins.mechanisms import tem as tem_module


@pytest.fixture(scope="module")
def plane() -> dxp.EmbeddingTable:
    rng = np.random.default_rng(2)
    return dxp.EmbeddingTable([f"w{i}" for i in range(30)], rng.normal(size=(30, 2)))


def test_registry_and_lazy_export(glove_5k):
    assert {"tem", "brr"} <= set(registry.names(registry.mechanisms))
    mech = dxp.make_mechanism("tem", glove_5k, epsilon=2.0, beta=0.01)
    assert isinstance(mech, dxp.TEM)
    assert mech.metric == "euclidean" and mech.name == "tem"
    assert "beta=0.01" in repr(mech) and "gamma" not in repr(mech)


def test_gamma_from_theorem_4_2(glove_5k):
    mech = dxp.TEM(glove_5k, epsilon=2.0)
    expected = 2.0 / 2.0 * math.log((1 - 1e-3) * (len(glove_5k) - 1) / 1e-3)
    assert mech.gamma == pytest.approx(expected, rel=1e-15)
    assert mech.beta == tem_module.DEFAULT_BETA
    assert dxp.TEM(glove_5k, epsilon=2.0, gamma=3.5).gamma == 3.5


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"beta": 0.1, "gamma": 1.0}, ValueError),
        ({"beta": 0.0}, ValueError),
        ({"beta": 1.0}, ValueError),
        ({"beta": True}, TypeError),
        ({"beta": "0.1"}, TypeError),
        ({"gamma": -1.0}, ValueError),
        ({"gamma": math.nan}, ValueError),
        ({"gamma": math.inf}, ValueError),
        ({"gamma": True}, TypeError),
        ({"metric": "cosine"}, ValueError),
        ({"metric": 3}, TypeError),
        ({"constant_work": "yes"}, TypeError),
        ({"cache_mb": -1}, ValueError),
        ({"cache_mb": None}, TypeError),
        ({"epsilon": math.nan}, ValueError),
        ({"epsilon": "1"}, TypeError),
    ],
)
def test_validation(plane, params, error):
    arguments = {"epsilon": 1.0, **params}
    with pytest.raises(error):
        dxp.TEM(plane, **arguments)


@pytest.mark.parametrize(
    ("beta", "error"), [(0.0, ValueError), (math.nan, ValueError), (True, TypeError)]
)
def test_beta_is_validated_on_assignment(plane, beta, error):
    mech = dxp.TEM(plane, epsilon=1.0, beta=0.1)
    with pytest.raises(error):
        mech.beta = beta
    assert mech.beta == 0.1 and math.isfinite(mech.gamma)
    with pytest.raises(ValueError, match="beta"):
        mech.beta = 0.99  # a probability, but gamma <= 0 for 30 words (Theorem 4.2)
    assert mech.beta == 0.1 and math.isfinite(mech.gamma)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("metric", "angular"),
        ("cache_mb", 0),
        ("constant_work", True),
        ("oov", "passthrough"),
        ("embeddings", "glove-6b-50d"),
        ("ledger_unit", "unit of nothing"),
    ],
)
def test_other_settings_are_fixed(plane, setting, value):
    """Only epsilon and beta can change after construction (the caches are keyed by the
    gamma and epsilon they give). A reassigned metric used to rename the guarantee and the
    ledger unit while distances stayed Euclidean; cache_mb changed repr, not the cache."""
    mech = dxp.TEM(plane, epsilon=1.0, gamma=1.0)
    before = repr(mech), mech.ledger_unit
    with pytest.raises(AttributeError, match="build a new TEM"):
        setattr(mech, setting, value)
    with pytest.raises(AttributeError):
        mech.cache.max_bytes = 0
    mech.privatize(["w1"])
    assert (repr(mech), mech.ledger_unit) == before
    assert mech.last_guarantee.metric == mech.distance_metric.name == "euclidean"


def test_beta_too_large_for_the_vocabulary():
    two = dxp.EmbeddingTable(["a", "b"], [[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="beta"):
        dxp.TEM(two, epsilon=1.0, beta=0.6)  # (1 - beta)(|W| - 1) / beta < 1
    one = dxp.EmbeddingTable(["a"], [[0.0, 0.0]])
    with pytest.raises(ValueError, match="at least 2"):
        dxp.TEM(one, epsilon=1.0)
    assert dxp.TEM(one, epsilon=1.0, gamma=1.0).privatize(["a", "zzz"]) == ["a", "a"]


def test_angular_rejects_zero_vectors():
    table = dxp.EmbeddingTable(["a", "b", "c"], [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="zero"):
        dxp.TEM(table, epsilon=1.0, metric="angular")


def test_angular_needs_a_usable_unk_point_only_when_it_is_used():
    """A zero centroid makes the UNK point unusable for angles; under oov="raise" or
    "passthrough" it is never used, so the table is fine -- until an id -1 asks for it,
    which is refused before the accountant is charged."""
    table = dxp.EmbeddingTable(["up", "down"], [[1.0, 0.0], [-1.0, 0.0]])
    with pytest.raises(ValueError, match="UNK point"):
        dxp.TEM(table, epsilon=1.0, gamma=1.0, metric="angular")  # oov="unk" needs it
    with pytest.warns(PrivacyWarning):
        passthrough = dxp.TEM(table, epsilon=1.0, gamma=1.0, metric="angular", oov="passthrough")
    assert passthrough.privatize(["up", "sideways"])[1] == "sideways"
    mech = dxp.TEM(table, epsilon=1.0, gamma=1.0, metric="angular", oov="raise")
    assert mech.privatize(["up", "down"])[0] in ("up", "down")
    np.testing.assert_allclose(mech.distribution("up").sum(), 1.0)
    spent = mech.accountant.spent
    with pytest.raises(ValueError, match="UNK point"):
        mech.privatize_ids(np.array([0, OOV_ID]))
    with pytest.raises(ValueError, match="UNK point"):
        mech.distribution(OOV_ID)
    assert mech.accountant.spent == spent


def test_callable_metric_output_is_validated_before_any_charge(plane):
    """A metric function that returns a wrong shape or a negative distance is refused when
    the mechanism is built, not on the first release after the accountant was charged."""
    with pytest.raises(ValueError, match="shape"):
        dxp.TEM(plane, epsilon=1.0, metric=lambda x, y: np.zeros(3))
    with pytest.raises(ValueError, match="negative"):
        dxp.TEM(plane, epsilon=1.0, metric=lambda x, y: -cdist(x, y))
    mech = dxp.TEM(plane, epsilon=1.0, metric=lambda x, y: cdist(x, y))
    assert mech.metric.startswith("callable:")
    assert mech.privatize(["w1"])[0] in plane


def test_unhashable_callable_metric_object(glove_5k):
    """A callable object need not be hashable (an unfrozen dataclass is not): caches are
    keyed by the metric's unique name, and one release is charged once."""

    @dataclasses.dataclass
    class Minkowski:
        p: float = 3.0

        def __call__(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
            return cdist(x, y, "minkowski", p=self.p)

    metric = Minkowski()
    mech = dxp.TEM(glove_5k, epsilon=1.0, metric=metric)
    assert mech.privatize(["the", "game", "the"])[0] in glove_5k
    assert mech.accountant.spent == 3.0 and len(mech.cache) == 2
    other = dxp.TEM(glove_5k, epsilon=1.0, metric=Minkowski())  # equal, but another object
    assert other.metric != mech.metric


def test_different_metric_functions_are_different_units(plane):
    """Two partials of one function, or two lambdas, are different metrics: an accountant
    must not add their epsilons (they were all named after the function's qualname)."""
    from functools import partial

    from sklearn.metrics import DistanceMetric

    from dxp_plugins.guarantee import Accountant

    city, cheb = partial(cdist, metric="cityblock"), partial(cdist, metric="chebyshev")
    doubled = lambda x, y: 2 * cdist(x, y)  # noqa: E731
    l1, linf = (DistanceMetric.get_metric(name) for name in ("manhattan", "chebyshev"))
    weighted = [partial(cdist, metric="seuclidean", V=np.full(2, v)) for v in (1.0, 4.0)]
    pairs = [(city, cheb), (lambda x, y: cdist(x, y), doubled), (l1.pairwise, linf.pairwise)]
    for first, second in [*pairs, weighted]:
        accountant = Accountant()
        mech = dxp.TEM(plane, epsilon=1.0, gamma=1.0, metric=first, accountant=accountant)
        mech.privatize(["w1"])
        again = dxp.TEM(plane, epsilon=1.0, gamma=1.0, metric=first, accountant=accountant)
        again.privatize(["w1"])  # the same function object: one unit, spends add
        assert accountant.spent == 2.0
        other = dxp.TEM(plane, epsilon=1.0, gamma=1.0, metric=second, accountant=accountant)
        with pytest.raises(ValueError, match="cannot be added"):
            other.privatize(["w1"])
        assert other.metric != mech.metric
    assert dxp.TEM(plane, epsilon=1.0, gamma=1.0, metric=city).metric == (
        "callable:partial(scipy.spatial.distance.cdist, metric='cityblock')"
    )


def test_distribution_and_candidates(glove_5k):
    mech = dxp.TEM(glove_5k, epsilon=5.0)
    law = mech.distribution("house")
    assert law.shape == (len(glove_5k),) and law.sum() == pytest.approx(1.0)
    row = int(glove_5k.lookup(["house"])[0])
    assert np.argmax(law) == row
    ball = mech.candidates("house")
    assert row in ball and 1 < len(ball) < len(glove_5k)
    outside = np.setdiff1d(np.arange(len(glove_5k)), ball)
    assert np.allclose(law[outside], law[outside][0])  # every outside word weighs exp(-eps g/2)
    assert law[ball].min() >= law[outside][0]


def test_ball_is_decided_in_direct_float64():
    """Points with large norms: BLAS rounding would misplace d == gamma without re-checks."""
    rng = np.random.default_rng(4)
    points = rng.normal(size=(200, 8)) + 1000.0
    table = dxp.EmbeddingTable([f"p{i}" for i in range(200)], points)
    vectors = table.vectors.astype(np.float64)
    for metric in ("euclidean", "angular", "manhattan", "chebyshev"):
        reference = tem_module.get_metric(metric)
        for a, b in [(0, 1), (5, 17), (33, 99)]:
            exact = float(reference.pairs(vectors[[a]], vectors[[b]])[0])
            on = dxp.TEM(table, epsilon=1.0, gamma=exact, metric=metric)
            assert b in on.candidates(a)
            below = dxp.TEM(table, epsilon=1.0, gamma=np.nextafter(exact, 0.0), metric=metric)
            assert b not in below.candidates(a)
            direct = reference.exact_to_table(vectors[a], table)
            np.testing.assert_array_equal(on.candidates(a), np.flatnonzero(direct <= exact))


def test_manhattan_ball_uses_the_formula_of_the_exact_law():
    """scipy's cdist sums in another order than the direct formula: decide d == gamma once."""
    rng = np.random.default_rng(7)
    table = dxp.EmbeddingTable(
        [f"w{i}" for i in range(3000)], rng.standard_normal((3000, 30)) * 1e-2
    )
    metric = tem_module.get_metric("manhattan")
    direct = metric.exact_to_table(table.unk_vector(), table)
    fast = metric.fast_block(table.unk_vector()[None, :], table)[0]
    differ = np.flatnonzero(fast > direct)[:5]
    assert len(differ) > 0  # the fixture has words where the two sums round apart
    for row in differ:
        mech = dxp.TEM(table, epsilon=1.0, gamma=float(direct[row]), metric="manhattan")
        assert row in mech.candidates(-1)


def test_identical_vectors_score_zero():
    table = dxp.EmbeddingTable(["a", "b", "c"], [[1e3, 2e3], [1e3, 2e3], [0.0, 0.0]])
    law = dxp.TEM(table, epsilon=1.0, gamma=1.0).distribution("a")
    assert law[0] == law[1]


def test_oov_policies(glove_5k):
    token = "qzxv-not-a-word"
    assert dxp.TEM(glove_5k, epsilon=1.0).privatize([token])[0] in glove_5k
    with pytest.raises(OOVError):
        dxp.TEM(glove_5k, epsilon=1.0, oov="raise").privatize([token])
    with pytest.warns(PrivacyWarning):
        mech = dxp.TEM(glove_5k, epsilon=1.0, oov="passthrough")
    assert mech.privatize([token]) == [token]
    assert mech.last_guarantee.tokens_passed_through == 1


def test_guarantee_records_the_metric(plane):
    mech = dxp.TEM(plane, epsilon=2.0, metric="manhattan")
    mech.privatize(["w1", "w2", "w3"])
    record = mech.last_guarantee
    assert record.metric == "manhattan" and record.mechanism == "tem"
    assert record.spend == 6.0 and record.embeddings == plane.fingerprint
    assert "manhattan distance" in record.statement


def test_fresh_draw_per_occurrence(plane):
    mech = dxp.TEM(plane, epsilon=0.5, gamma=1.0)
    out = mech.privatize_ids(np.zeros(2000, dtype=np.int64))
    assert len(np.unique(out)) > 5


# -- caches: keyed by (fingerprint, metric, gamma, epsilon); never stale --------------------------
def test_changing_epsilon_or_beta_never_reuses_a_stale_law(plane):
    mech = dxp.TEM(plane, epsilon=0.5, beta=0.1)
    mech.privatize_ids(np.zeros(10, dtype=np.int64))
    first_keys = set(mech.cache.cached_keys())
    mech.epsilon = 4.0
    law = mech.distribution(0)
    counts = np.bincount(mech.privatize_ids(np.zeros(50_000, dtype=np.int64)), minlength=30)
    assert g_test(counts, law) > 1e-6
    assert first_keys < set(mech.cache.cached_keys())
    gammas = {key[0][2] for key in mech.cache.cached_keys()}
    epsilons = {key[0][3] for key in mech.cache.cached_keys()}
    assert epsilons == {0.5, 4.0} and len(gammas) == 2  # gamma follows epsilon (Thm 4.2)
    mech.beta = 0.3
    law = mech.distribution(0)
    counts = np.bincount(mech.privatize_ids(np.zeros(50_000, dtype=np.int64)), minlength=30)
    assert g_test(counts, law) > 1e-6
    assert len({key[0][2] for key in mech.cache.cached_keys()}) == 3
    fingerprints = {key[0][0] for key in mech.cache.cached_keys()}
    assert fingerprints == {plane.fingerprint}


def test_a_release_draws_and_caches_at_the_epsilon_it_was_charged(plane):
    """gamma (Theorem 4.2) and the law cache follow the epsilon read once by the release,
    not an epsilon another thread assigns meanwhile (here: right after the charge)."""

    class Reassigning(dxp.Accountant):
        def charge(self, spend, tokens, unit=None):
            super().charge(spend, tokens, unit)
            mech.epsilon = 40.0

    mech = dxp.TEM(plane, epsilon=0.5, beta=0.1, accountant=Reassigning())
    law = dxp.TEM(plane, epsilon=0.5, beta=0.1).distribution(0)
    counts = np.bincount(mech.privatize_ids(np.zeros(50_000, dtype=np.int64)), minlength=30)
    assert g_test(counts, law) > 1e-6  # the law at 0.5 (at 40 it is nearly the identity)
    (settings,) = {key[0] for key in mech.cache.cached_keys()}
    assert settings[2:] == (tem_module.theorem_4_2_gamma(0.5, 0.1, 30), 0.5)
    assert mech.last_guarantee.epsilon == 0.5 and mech.accountant.spent == 0.5 * 50_000


def test_explicit_gamma_cache_still_keyed_by_epsilon(plane):
    mech = dxp.TEM(plane, epsilon=0.5, gamma=1.0)
    mech.privatize_ids(np.zeros(10, dtype=np.int64))
    mech.epsilon = 3.0
    law = mech.distribution(0)
    counts = np.bincount(mech.privatize_ids(np.zeros(50_000, dtype=np.int64)), minlength=30)
    assert g_test(counts, law) > 1e-6


def test_cache_is_bounded(glove_5k):
    mech = dxp.TEM(glove_5k, epsilon=1.0, cache_mb=0.1)  # each full-ball law is ~40 kB
    mech.privatize_ids(np.arange(50))
    assert 0 < len(mech.cache) <= 3 and mech.cache.nbytes <= 0.1 * 2**20
    off = dxp.TEM(glove_5k, epsilon=1.0, cache_mb=0)
    off.privatize_ids(np.arange(5))
    assert len(off.cache) == 0


def test_cache_bound_counts_what_the_laws_really_hold(glove_5k):
    """Small balls make small laws, so per-entry overhead (array headers, the law object,
    dict and heap entries) dominates: cache_mb must bound the memory really held."""
    import gc
    import tracemalloc

    mech = dxp.TEM(glove_5k, epsilon=12.0, cache_mb=0.25)
    mech.privatize_ids(np.arange(10))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        mech.privatize_ids(np.arange(len(glove_5k)))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(mech.cache) > 100 and mech.cache.nbytes <= mech.cache.max_bytes
    assert held <= 1.08 * mech.cache.max_bytes, held


def test_precompute_then_sample_from_cache(glove_5k, monkeypatch):
    mech = dxp.TEM(glove_5k, epsilon=5.0)
    assert mech.precompute(20, progress=False) == 20
    assert mech.precompute(["the", "house", "qzxv-not-a-word"], progress=False) == 22
    calls = []
    monkeypatch.setattr(mech, "_laws", lambda *args: calls.append(args) or [])
    out = mech.privatize(["the", "house", "qzxv-not-a-word", "the"])
    assert not calls and all(word in glove_5k for word in out)


def test_precompute_fills_the_cache_until_full(glove_5k):
    mech = dxp.TEM(glove_5k, epsilon=1.0, cache_mb=0.5)
    count = mech.precompute(progress=False)
    assert 0 < count < len(glove_5k) and mech.cache.nbytes <= 0.5 * 2**20
    with pytest.raises(TypeError):
        mech.precompute("the")
    with pytest.raises(ValueError, match="constant_work"):
        dxp.TEM(glove_5k, epsilon=1.0, constant_work=True).precompute(5)


def test_seeded_output_does_not_depend_on_the_cache(glove_5k):
    """The cache is a speed/memory setting: with one seed the same calls give the same
    words with the cache off, on, small, or filled ahead by precompute (cached words used
    to draw before the others, so from the second call on the words differed)."""
    calls = [["the", "game", "city"], ["people", "game", "a"], ["a", "city", "of", "the"]] * 2

    def run(cache_mb: float, precompute: list[str] | int | None = None) -> list[list[str]]:
        with pytest.warns(SeededRandomnessWarning):
            mech = dxp.TEM(glove_5k, epsilon=2.0, random_state=7, cache_mb=cache_mb)
        if precompute is not None:
            mech.precompute(precompute, progress=False)
        return [mech.privatize(tokens) for tokens in calls]

    expected = run(0)
    assert run(tem_module.DEFAULT_CACHE_MB) == expected
    assert run(0.05) == expected  # some laws cached, the others built in the scratch buffer
    assert run(tem_module.DEFAULT_CACHE_MB, ["game"]) == expected
    assert run(tem_module.DEFAULT_CACHE_MB, 100) == expected


def test_pickle_drops_the_cache(plane):
    mech = dxp.TEM(plane, epsilon=1.0, gamma=1.0)
    mech.privatize_ids(np.arange(30))
    copy = pickle.loads(pickle.dumps(mech))
    assert len(copy.cache) == 0 and len(mech.cache) == 30
    assert copy.privatize(["w3"])[0] in plane


def test_constant_work_matches_the_same_law(plane):
    fast = dxp.TEM(plane, epsilon=1.0, gamma=0.8)
    steady = dxp.TEM(plane, epsilon=1.0, gamma=0.8, constant_work=True)
    np.testing.assert_array_equal(fast.distribution(4), steady.distribution(4))
    counts = np.bincount(steady.privatize_ids(np.full(40_000, 4)), minlength=30)
    assert g_test(counts, fast.distribution(4)) > 1e-6
    assert len(steady.cache) == 0


def test_constant_work_does_the_same_work_whatever_the_ball(plane, monkeypatch):
    """PRIVACY.md 27: every token measures its distance to every word and draws Gumbel noise
    over all |W| + 1 entries (the ball is masked, never cut out), for a one-word ball as for
    a nine-word one. The default sampler's work follows the ball and draws no Gumbel noise,
    so a constant-work mode that silently fell back to it fails here."""
    mech = dxp.TEM(plane, epsilon=1.0, gamma=0.8, constant_work=True)
    sizes = {row: len(mech.candidates(row)) for row in (1, 3)}
    assert sizes == {1: 1, 3: 9}  # the smallest and the largest ball of this vocabulary
    gumbel_shapes, distance_shapes = [], []
    sample_gumbel, balls = tem_module.sample_gumbel, mech._balls

    def recorded_gumbel(rng, shape, epsilon):
        gumbel_shapes.append(tuple(shape))
        return sample_gumbel(rng, shape, epsilon)

    def recorded_balls(ids, gamma):
        distances, mask = balls(ids, gamma)
        distance_shapes.append(distances.shape)
        return distances, mask

    monkeypatch.setattr(tem_module, "sample_gumbel", recorded_gumbel)
    monkeypatch.setattr(mech, "_balls", recorded_balls)
    for row in sizes:
        gumbel_shapes.clear()
        distance_shapes.clear()
        mech.privatize_ids(np.full(7, row))
        assert gumbel_shapes == [(7, len(plane) + 1)], (row, gumbel_shapes)
        assert distance_shapes == [(7, len(plane))], (row, distance_shapes)


def test_large_ball_batch_on_real_embeddings(glove_5k):
    """Small epsilon: balls hold the whole vocabulary; in a batch of interleaved, repeated
    words (several chunks) each word's outputs follow its own exact law, G-tested over 20
    bins of equal probability under that law (the laws are nearly uniform at epsilon 0.5,
    so it takes 70,000 tokens). T4 (review of the suite, M3): with ``targets =
    order[::-1][...]`` in ``TEM._sample`` (one word's draws written into another word's
    positions) it fails (smallest p 2.5e-22; correct code 0.27 or more). Seeded: never a chance
    failure; about 1 s."""
    mech = dxp.TEM(glove_5k, epsilon=0.5, random_state=0)
    assert len(mech.candidates("the")) == len(glove_5k)
    words = ["the", "film", "the", "was", "a", "quiet", "triumph"] * 10_000
    assert len(words) > 2 * mech.chunk_size
    out = glove_5k.lookup(mech.privatize(words))
    inputs = np.array(words)
    for word in sorted(set(words)):
        law = mech.distribution(word)
        ranked = np.argsort(law)
        bins = np.empty(len(law), dtype=np.int64)
        bins[ranked] = np.minimum((np.cumsum(law[ranked]) * 20).astype(np.int64), 19)
        counts = np.bincount(bins[out[inputs == word]], minlength=20)
        assert g_test(counts, np.bincount(bins, weights=law, minlength=20)) > 1e-6, word


def test_uncached_laws_share_a_scratch_buffer_safely(plane):
    """cache_mb=0: every law is built in the scratch buffer; interleaved words stay exact."""
    mech = dxp.TEM(plane, epsilon=1.0, gamma=1.2, cache_mb=0)
    ids = np.tile(np.array([3, 11, -1, 27]), 20_000)
    out = mech.privatize_ids(ids)
    assert len(mech.cache) == 0
    for word in (3, 11, -1, 27):
        counts = np.bincount(out[ids == word], minlength=30)
        assert g_test(counts, mech.distribution(word)) > 1e-6


def test_law_cache_keeps_the_most_frequent_words():
    law = tem_module.WordLaw.build(
        np.array([0.0, 1.0, 2.0]), np.array([True, True, False]), 1.5, 1.0
    )
    cache = tem_module.LawCache(3 * law.nbytes)
    for rank in (5, 9, 7):
        assert cache.put(("k", rank), law, rank)
    assert not cache.admits(law.nbytes, 12) and not cache.put(("k", 12), law, 12)
    assert cache.admits(law.nbytes, 2) and cache.put(("k", 2), law, 2)
    assert sorted(key[1] for key in cache.cached_keys()) == [2, 5, 7]  # rank 9 evicted
    assert cache.nbytes == 3 * law.nbytes
    assert not tem_module.LawCache(law.nbytes - 1).put(("k", 0), law, 0)


def test_a_gamma_beyond_the_metric_diameter_warns(glove_5k):
    """Theorem 4.2's gamma ignores the metric: angular distances stop at pi, so at an
    epsilon meant for Euclidean distances nothing is truncated and TEM is near uniform."""
    with pytest.warns(UserWarning, match="nothing is truncated"):
        dxp.TEM(glove_5k, epsilon=2.0, metric="angular")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dxp.TEM(glove_5k, epsilon=2.0, metric="angular", gamma=1.0)
        dxp.TEM(glove_5k, epsilon=2.0)  # euclidean: no known diameter, no warning


def test_word_law_ignores_what_its_buffer_held():
    """A law built in a dirty scratch buffer (what the previous, larger law left there) must
    not count the padding of its last block: the realized law is exact."""
    distances = np.linspace(0.0, 3.0, 600)
    gamma, epsilon = 2.0, 1.5
    mask = distances <= gamma  # 400 words: blocks of 256, 112 padding slots
    dirty = np.full(len(distances) + tem_module.LAW_BLOCK, 7.0)
    law = tem_module.WordLaw.build(distances, mask, gamma, epsilon, out=dirty)
    assert law.block == tem_module.LAW_BLOCK and law.ball_size % law.block  # padded
    weights = np.exp(-epsilon * np.minimum(distances, gamma) / 2)
    np.testing.assert_allclose(
        law.probabilities(len(distances)), weights / weights.sum(), rtol=1e-12
    )


def test_copies_do_not_carry_the_law_cache():
    """Which words are cached is private (the words privatized so far): a shallow copy
    shared the live cache, while pickles and deep copies started empty."""
    import copy

    table = dxp.EmbeddingTable([f"w{i}" for i in range(30)], np.arange(60.0).reshape(30, 2))
    mech = dxp.TEM(table, epsilon=1.0, gamma=5.0)
    mech.privatize(["w1", "w2"])
    assert len(mech.cache) == 2
    for duplicate in (copy.copy(mech), copy.deepcopy(mech), pickle.loads(pickle.dumps(mech))):
        assert duplicate.cache is not mech.cache and len(duplicate.cache) == 0
        assert duplicate.cache.max_bytes == mech.cache.max_bytes
    assert len(mech.cache) == 2


# -- review 10: a bounded law-cache heap, one epsilon read in precompute ---------------------
def test_re_putting_cached_laws_keeps_the_heap_bounded():
    """Each put of a key already cached left its old heap entry behind (review 10, F5):
    150 puts of 3 keys made a heap of 150. Eviction still takes the rarest word."""
    law = tem_module.WordLaw.build(
        np.array([0.0, 1.0, 2.0]), np.array([True, True, False]), 1.5, 1.0
    )
    cache = tem_module.LawCache(4 * law.nbytes)
    for _ in range(50):
        for rank in (5, 9, 7):
            assert cache.put(("k", rank), law, rank)
    assert len(cache) == 3 and len(cache._rarest) <= 2 * len(cache)
    assert cache.put(("k", 2), law, 2) and cache.put(("k", 1), law, 1)  # full: evicts 9
    assert sorted(key[1] for key in cache.cached_keys()) == [1, 2, 5, 7]
    assert cache.nbytes == 4 * law.nbytes


def test_precompute_of_cached_words_neither_rebuilds_nor_grows_the_heap(glove_5k, monkeypatch):
    """precompute rebuilt and re-put every cached word: 50 calls on 5 words left a heap of
    250 (review 10, F5)."""
    mech = dxp.TEM(glove_5k, epsilon=5.0)
    words = ["the", "house", "city", "game", "people"]
    for _ in range(50):
        assert mech.precompute(words, progress=False) == 5
    assert len(mech.cache._rarest) == len(mech.cache) == 5
    calls = []
    laws = mech._laws
    monkeypatch.setattr(
        mech, "_laws", lambda *args, **kwargs: calls.append(args) or laws(*args, **kwargs)
    )
    assert mech.precompute([*words, "river"], progress=False) == 6
    assert [args[0].tolist() for args in calls] == [glove_5k.lookup(["river"]).tolist()]


def test_precompute_reads_epsilon_once(plane):
    """precompute read epsilon twice (``self.epsilon, self.gamma``): an epsilon reassigned
    by another thread in between cached a law under a gamma of the other epsilon (review
    10, N2). Each read here sees another value, as that interleaving would."""

    class EpsilonChangesBetweenReads(dxp.TEM):
        name = "tem-epsilon-flips-test"
        flip = False

        @property
        def epsilon(self) -> float:
            if self.flip:
                self._reads = getattr(self, "_reads", 0) + 1
                return self._epsilon * (1 + self._reads % 2)
            return self._epsilon

        @epsilon.setter
        def epsilon(self, value: float) -> None:
            self._epsilon = value

    mech = EpsilonChangesBetweenReads(plane, epsilon=1.0)
    mech.flip = True
    mech.precompute(["w1", "w2"], progress=False)
    keys = [key for key, _ in mech.cache.cached_keys()]
    assert len(keys) == 2
    for key in keys:
        assert key[2] == mech._gamma_at(key[3])


def test_an_exact_distribution_keeps_no_float64_copy_of_the_table():
    """Memory review F6: ``distribution()`` cached a float64 copy of the whole table (153 MiB
    at 400k words) to save ~3 ms per call; it converts slab by slab unless one is cached,
    and both paths give the same law."""
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=3001)  # its own cache
    tem = dxp.TEM(table, epsilon=2.0)
    law = tem.distribution("good")
    assert "vectors-f64" not in table.cache
    other = dxp.load_embeddings("glove-6b-50d", vocab_size=3001)  # a fresh cache
    other.cache["vectors-f64"] = other.vectors.astype(np.float64)
    np.testing.assert_array_equal(dxp.TEM(other, epsilon=2.0).distribution("good"), law)
