"""Calibration decisions at their edges, and callable metrics' checks.

From a mutation review (review 11): user metrics returning -0.5, NaN or inf, and a wrong
CallableMetric.pairs, went unnoticed; several thresholds of the Monte Carlo bounds and the
log-scale bisection were untested. (Its choose_epsilon finding, a later failure taken as the
bracket's end, is covered by test_deniability's non-monotone test.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import dxp_plugins as dxp
from dxp_plugins.calibration import choose_epsilon
from dxp_plugins.calibration.support import _fewest_successes
from dxp_plugins.distances import get_metric
from tests.fixtures import one_faiss_thread  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_faiss_thread")


def test_bisection_is_on_a_log_scale(glove_5k):
    """The refinement evaluates the geometric middle of the bracket (docstring: log scale)."""
    table = glove_5k.most_frequent(500)
    asked = []

    def build(epsilon: float) -> dxp.TEM:
        asked.append(epsilon)
        return dxp.TEM(table, epsilon)

    choose_epsilon(build, ["music"], max_n_w=0.5, min_s_w=None, epsilons=[0.25, 64.0], refine=1)
    assert asked[2] == math.sqrt(0.25 * 64.0) == 4.0


def test_monte_carlo_s_w_target_at_the_reachable_limit_is_accepted(glove_5k):
    """The refusal threshold is exact: min_s_w equal to the largest s_w_low that n_samples
    draws can give is accepted, one more is refused."""
    n, eta, confidence = 200, 0.05, 0.95
    reach = _fewest_successes(n, 1.0 - eta, (1.0 - confidence) / 2.0, upper=True)
    table = glove_5k.most_frequent(500)
    kwargs = dict(
        embeddings=table,
        random_state=0,
        max_n_w=None,
        epsilons=[0.25],
        n_samples=n,
        method="monte_carlo",
        refine=0,
    )
    with pytest.warns(dxp.SeededRandomnessWarning):  # an integer seed warns (only that)
        choose_epsilon("tem", ["music"], min_s_w=reach, **kwargs)  # accepted
    with pytest.raises(ValueError, match="n_samples"):
        choose_epsilon("tem", ["music"], min_s_w=reach + 1, **kwargs)


def test_meets_accepts_n_w_equal_to_the_target(glove_5k):
    result = calibration_result(glove_5k)
    worst_n, worst_s = result.worst_case()
    assert result.meets(max_n_w=worst_n) and result.meets(min_s_w=worst_s)


def calibration_result(table):
    from dxp_plugins.calibration import plausible_deniability

    return plausible_deniability(dxp.TEM(table.most_frequent(500), 3.0), ["music", "city"])


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf])
def test_callable_metric_refuses_any_negative_or_non_finite_distance(bad):
    """check_points refuses a distance below 0 (not only below -1) and NaN or inf."""

    def metric(x, y):
        d = cdist(x, y)
        d[0, -1] = bad
        return d

    points = np.random.default_rng(0).standard_normal((5, 3))
    with pytest.raises(ValueError, match="negative or non-finite"):
        get_metric(metric).check_points(points, "rows")


def test_callable_metric_pairs_is_the_diagonal_for_many_pairs():
    """pairs(a, b)[k] = d(a[k], b[k]) over several chunks of 256 (P_d^avg of a callable
    metric is computed from it)."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((700, 3)), rng.standard_normal((700, 3))
    metric = get_metric(lambda x, y: cdist(x, y, "cityblock"))
    np.testing.assert_array_equal(metric.pairs(a, b), np.abs(a - b).sum(axis=1))


@pytest.mark.parametrize("shift", [(-0.1, 0.1), (0.01, 0.0)])
def test_plausible_deniability_refuses_a_law_that_is_not_a_probability_vector(glove_5k, shift):
    """A negative entry (even with total mass 1) or a total of 1.01 is refused."""
    from dxp_plugins.calibration import plausible_deniability

    table = glove_5k.most_frequent(500)
    mech = dxp.TEM(table, 3.0)
    law = mech.distribution("music").copy()
    law[0] += shift[0]
    law[1] += shift[1]
    mech.distribution = lambda word: law  # type: ignore[method-assign]
    with pytest.raises(ValueError, match="probability vector"):
        plausible_deniability(mech, ["music"])


def test_every_pair_is_used_when_n_pairs_equals_their_number():
    from dxp_plugins.calibration import distance_summary

    vectors = np.random.default_rng(2).standard_normal((20, 3)).astype(np.float32)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(20)], vectors)
    summary = distance_summary(table, n_pairs=20 * 19 // 2, random_state=0)
    assert summary.average_exact and summary.pairs == 190


def test_monte_carlo_plug_in_s_w_is_the_support_of_the_empirical_law(glove_5k):
    """s_w (Monte Carlo) = support_size of the empirical law of the draws."""
    from dxp_plugins.calibration import plausible_deniability, support_size

    table = glove_5k.most_frequent(500)
    mech = dxp.TEM(table, 2.0)
    rng = np.random.default_rng(3)
    fixed = rng.zipf(1.6, size=400) % len(table)  # a long-tailed law of outputs

    def privatize_ids(ids):
        return np.tile(fixed, len(ids) // len(fixed))

    mech.privatize_ids = privatize_ids  # type: ignore[method-assign]
    result = plausible_deniability(mech, ["music"], n_samples=400, method="monte_carlo")
    empirical = np.bincount(fixed, minlength=len(table)) / 400
    assert result.s_w[0] == support_size(empirical, 0.05)


def test_s_w_upper_bound_needs_the_whole_confirmation_count():
    """s_w_high: the first half picks {0}; the second half confirms it only when at least
    enough_second of its draws fall in it (here all 100: 99 are not enough)."""
    from dxp_plugins.calibration.support import _support_bounds

    alpha = 0.025
    need = _fewest_successes(100, 0.95, alpha, upper=False)
    assert need == 100
    second = np.zeros(100, dtype=np.int64)
    second[: 100 - need + 1] = np.arange(1, 100 - need + 2)  # need - 1 draws of 0
    draws = np.r_[np.zeros(100, dtype=np.int64), second][None, :]
    _, high = _support_bounds(draws, 0.05, alpha, 1000)
    assert high[0] == 1000
    draws[0, 100:] = 0
    assert _support_bounds(draws, 0.05, alpha, 1000)[1][0] == 1


def test_monte_carlo_with_eta_zero_refuses_a_s_w_target_above_the_draws(glove_5k):
    """eta = 0: S_w is the number of distinct outputs, at most n_samples."""
    with pytest.raises(ValueError, match="n_samples"):
        choose_epsilon(
            "tem",
            ["music"],
            embeddings=glove_5k.most_frequent(500),
            max_n_w=None,
            min_s_w=201,
            eta=0.0,
            epsilons=[1.0],
            n_samples=200,
            method="monte_carlo",
        )


def test_two_different_vocabularies_of_the_same_size_are_not_paired():
    from dxp_plugins.calibration import privacy_ratio

    rng = np.random.default_rng(4)
    a = dxp.EmbeddingTable(
        [f"a{i}" for i in range(50)], rng.standard_normal((50, 3)).astype(np.float32)
    )
    b = dxp.EmbeddingTable(
        [f"b{i}" for i in range(50)], rng.standard_normal((50, 3)).astype(np.float32)
    )
    assert not privacy_ratio(a, b, n_pairs=100, random_state=0).paired


def test_sampled_pairs_are_of_distinct_words():
    from dxp_plugins.calibration.pairwise import _sample_pairs

    i, j, exact = _sample_pairs(100, 2000, np.random.default_rng(0))
    assert not exact and np.all(i != j) and j.max() == 99


def test_s_w_lower_bound_is_at_least_one():
    """eta = 0.99 with 200 draws: the upper bound of 0 hits already reaches 1 - eta, yet
    a word always has S_w >= 1."""
    from dxp_plugins.calibration.support import _support_bounds

    draws = np.random.default_rng(0).integers(0, 50, (3, 200))
    assert np.all(_support_bounds(draws, 0.99, 0.025, 50)[0] >= 1)


def test_choose_epsilon_refuses_a_s_w_target_below_one(glove_5k):
    with pytest.raises(ValueError, match="min_s_w"):
        choose_epsilon("tem", ["music"], embeddings=glove_5k, min_s_w=0.5)


def test_monotone_flag_judges_the_verdicts_the_search_used(glove_5k, monkeypatch):
    """The search judged conservatively (n_w_high); the monotone check must judge the same
    way. Point estimates pass everywhere; the upper bounds pass, fail, pass."""
    import dataclasses

    from dxp_plugins.calibration import choose as choose_module

    table = glove_5k.most_frequent(500)
    real = choose_module.plausible_deniability

    def fake(mech, words, n_samples, eta, **kwargs):
        result = real(mech, words, n_samples, eta, **{**kwargs, "method": "exact"})
        high = 0.9 if mech.epsilon == 2.0 else 0.1
        return dataclasses.replace(
            result,
            method="monte_carlo",
            n_samples=n_samples,
            n_w=np.full(len(words), 0.05),
            n_w_high=np.full(len(words), high),
        )

    monkeypatch.setattr(choose_module, "plausible_deniability", fake)
    with pytest.warns(RuntimeWarning, match="not monotone"):
        choice = choose_epsilon(
            lambda e: dxp.TEM(table, e),
            ["music"],
            max_n_w=0.5,
            min_s_w=None,
            epsilons=[1.0, 2.0, 4.0],
            refine=0,
            stop_at_failure=False,
        )
    assert not choice.monotone


def test_a_target_not_given_is_not_applied():
    """API review (twenty-second session): ``min_s_w`` defaulted to 50, so asking only for
    ``max_n_w=0.9`` on a 30-word table also demanded S_w >= 50 and returned no epsilon where
    ``dxp calibrate --max-n-w 0.9`` returned 4."""
    rng = np.random.default_rng(0)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(30)], rng.normal(size=(30, 2)))
    words = [f"w{i}" for i in range(10)]
    choice = choose_epsilon(
        lambda e: dxp.TEM(table, e), words, max_n_w=0.9, epsilons=[0.5, 1, 2, 4, 8], refine=0
    )
    assert choice.min_s_w is None and choice.epsilon == 4.0
    with pytest.raises(ValueError, match="give a target"):
        choose_epsilon(lambda e: dxp.TEM(table, e), words)


def test_an_s_w_target_above_the_vocabulary_is_refused_before_any_draw():
    """S_w counts vocabulary words: min_s_w = 31 on 30 words can never be met; the search
    drew every epsilon and said "no epsilon" instead of naming the impossible target."""
    rng = np.random.default_rng(0)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(30)], rng.normal(size=(30, 2)))
    drawn = []

    def build(epsilon):
        mechanism = dxp.TEM(table, epsilon)
        mechanism.privatize_ids = lambda ids: drawn.append(len(ids))
        return mechanism

    with pytest.raises(ValueError, match=r"min_s_w=31 cannot be met.*vocabulary has 30"):
        choose_epsilon(build, ["w1"], min_s_w=31, method="monte_carlo", epsilons=[1.0])
    assert drawn == []
    choose_epsilon(lambda e: dxp.TEM(table, e), ["w1"], min_s_w=30, epsilons=[0.01])  # exact


@pytest.mark.parametrize("max_work", [-1, 2.5, True])
def test_privacy_ratio_checks_max_work_as_distance_summary_does(max_work):
    """A bad budget of the P_d^max search is refused by both entry points (privacy_ratio
    used to pass it on unchecked: -1 silently gave a bracket instead of a ValueError)."""
    from dxp_plugins.calibration import distance_summary, privacy_ratio

    rng = np.random.default_rng(0)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(20)], rng.normal(size=(20, 3)))
    errors = (TypeError, ValueError)
    with pytest.raises(errors, match="max_work"):
        distance_summary(table, max_work=max_work)
    with pytest.raises(errors, match="max_work"):
        privacy_ratio(table, table, metric_b="manhattan", max_work=max_work)
