"""The audit statistics themselves: each must flag what it is built to flag, on data whose
answer is known, and refuse inputs it cannot judge."""

from __future__ import annotations

import numpy as np
import pytest

from dxp_plugins.audit import coincidence_z, epsilon_lower_bound, g_test


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
