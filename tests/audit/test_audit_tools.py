"""The audit statistics themselves: each must flag what it is built to flag, on data whose
answer is known, and refuse inputs it cannot judge."""

from __future__ import annotations

import numpy as np
import pytest

from dxp_plugins.audit import coincidence_z, epsilon_lower_bound, g_test, output_counts


def test_coincidence_z_separates_independent_from_shared_draws():
    rng = np.random.default_rng(0)
    law = np.full(10, 0.1)
    first, second = rng.integers(0, 10, 50_000), rng.integers(0, 10, 50_000)
    assert abs(coincidence_z(first, second, law, law)) < 6.0
    shared = np.where(rng.random(50_000) < 0.05, first, second)  # 5% of draws reused
    assert coincidence_z(first, shared, law, law) > 6.0


@pytest.mark.parametrize(
    ("first", "second", "law", "message"),
    [
        ([1, 2], [1], [0.5, 0.5], "equal-length"),
        ([], [], [0.5, 0.5], "non-empty"),
        ([0, 0], [0, 0], [1.0, 0.0], "must lie in"),
    ],
)
def test_coincidence_z_refuses_what_it_cannot_judge(first, second, law, message):
    with pytest.raises(ValueError, match=message):
        coincidence_z(np.array(first), np.array(second), np.array(law), np.array(law))


def test_g_test_and_epsilon_bound_on_known_answers():
    rng = np.random.default_rng(1)
    law = np.array([0.5, 0.3, 0.2])
    assert g_test(np.bincount(rng.choice(3, 20_000, p=law), minlength=3), law) > 1e-6
    assert g_test(np.bincount(rng.choice(3, 20_000, p=[0.4, 0.4, 0.2]), minlength=3), law) < 1e-6
    assert g_test(np.array([5, 0, 1]), np.array([0.5, 0.5, 0.0])) == 0.0  # impossible output
    # Two inputs at distance 1 whose output laws differ by a factor e^2 at most.
    p = np.array([0.7, 0.3])
    q = np.array([0.7 / np.e**2, 1 - 0.7 / np.e**2])
    counts = np.array([rng.multinomial(200_000, p), rng.multinomial(200_000, q)])
    strict = epsilon_lower_bound(counts, [(0, 1)], [1.0], 1.0)
    loose = epsilon_lower_bound(counts, [(0, 1)], [1.0], 3.0)
    assert not strict.passed and 1.0 < strict.epsilon_lower_bound <= 2.0 and loose.passed


def test_epsilon_bound_tests_both_directions_of_a_pair():
    """Pr[M(1)=0] = e^2 Pr[M(0)=0] while every ratio the other way stays below e^1: only the
    direction (1, 0) of the pair (0, 1) refutes epsilon = 1, whichever way the pair is given."""
    n = 100_000
    q0 = round(n * 0.5 * np.exp(-2.0))
    counts = np.array([[q0, n - q0], [n // 2, n // 2]])  # input 0: q, input 1: (1/2, 1/2)
    for pair in ((0, 1), (1, 0)):
        result = epsilon_lower_bound(counts, [pair], [1.0], 1.0)
        assert not result.passed and result.worst == (1, 0, 0), (pair, str(result))
        assert 1.8 < result.epsilon_lower_bound < 2.0


def test_epsilon_bound_equals_clopper_pearson_at_the_bonferroni_level():
    """The bound, recomputed from scipy's beta quantiles: per-bound level alpha / (2 * tests)
    with tests = 2 directions x pairs x outputs (each test uses one lower and one upper
    bound), rows of different totals, distances dividing the log-ratio."""
    from scipy.stats import beta

    counts = np.array([[600, 300, 100], [200, 500, 300], [50, 250, 1700]])
    pairs, distances, alpha = [(0, 1), (1, 2)], [0.5, 2.0], 1e-6
    level = alpha / (2 * (2 * len(pairs) * counts.shape[1]))
    n = counts.sum(axis=1, keepdims=True)
    lower = beta.ppf(level, counts, n - counts + 1)
    upper = beta.ppf(1 - level, counts + 1, n - counts)
    expected = max(
        np.max(np.log(lower[x]) - np.log(upper[y])) / distance
        for (a, b), distance in zip(pairs, distances, strict=True)
        for x, y in ((a, b), (b, a))
    )
    result = epsilon_lower_bound(counts, pairs, distances, 1.0, alpha=alpha)
    assert expected > 0 and result.tests == 12
    assert result.epsilon_lower_bound == pytest.approx(expected, rel=1e-12)


def test_output_counts_tallies_each_input_row():
    counts = output_counts(lambda value, n: np.full(n, value), [2, 0], 7, 3)
    assert counts.tolist() == [[0, 0, 7], [7, 0, 0]]
    assert output_counts(lambda value, n: [], [0], 0, 2).tolist() == [[0, 0]]  # no draws


@pytest.mark.parametrize(
    ("produced", "message"),
    [
        (np.array([0, 7, 0, 7]), r"outside \[0, 2\)"),  # was dropped: counts [[2, 0]]
        (np.array([0, -1, 0, 1]), r"outside \[0, 2\)"),
        (np.array([0, 1, 0]), "expected 4 integer"),  # a short sample
        (np.array([0.0, 1.0, 0.0, 1.0]), "expected 4 integer"),
    ],
)
def test_output_counts_refuses_outputs_the_table_cannot_hold(produced, message):
    """Ids at or past ``outputs`` were cut off, so an audit never saw a mechanism's
    out-of-range outputs and bounded epsilon from the rest."""
    with pytest.raises(ValueError, match=message):
        output_counts(lambda value, n: produced, [0], 4, 2)
