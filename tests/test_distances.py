"""Metrics between word vectors (dxp_plugins.distances)."""

from __future__ import annotations

import numpy as np

from dxp_plugins.distances import _euclidean_tolerance, get_metric
from dxp_plugins.embeddings import EmbeddingTable


def test_ball_membership_does_not_depend_on_the_other_queries_of_the_block():
    """The guard that skips the radius re-check used the *smallest* per-query tolerance: a
    far query's entry inside its own rounding band, but below the band of a query near the
    origin, kept its fast (BLAS) value, so whether it lay in the ball depended on which
    other queries shared the block (review 7, F5)."""
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((200, 2)).astype(np.float32)
    table = EmbeddingTable([f"w{i}" for i in range(200)], vectors)
    metric = get_metric("euclidean")
    far = rng.standard_normal(2) * 3e6
    queries = np.vstack([np.zeros(2), far])
    tolerance = _euclidean_tolerance(queries, table)
    assert tolerance[1] > 1e6 * tolerance[0]

    direct = metric.pairs(np.repeat(queries, 200, axis=0), np.tile(vectors, (2, 1)))
    direct = direct.reshape(2, 200)
    row = int(np.argmax(direct[1]))  # the far query's farthest row
    squared = direct[1, row] ** 2 - tolerance[1] / 4  # the row lies just outside the ball
    radius = float(np.sqrt(squared))
    assert direct[1, row] > radius

    # "Fast" values as BLAS could return them: exact, except the far query's farthest row,
    # off by half its rounding bound onto the inside of the ball.
    fast = direct**2
    fast[1, row] = squared - tolerance[1] / 2
    assert fast.max() <= squared - tolerance[0]  # the old guard skipped the re-check

    together = fast.copy()
    metric.finish_block(queries, together, table, radius)
    alone = fast[1:].copy()
    metric.finish_block(queries[1:], alone, table, radius)
    assert together[1, row] == alone[0, row] == direct[1, row] > radius
    np.testing.assert_array_equal(together[1], alone[0])


def test_to_table_agrees_with_the_direct_formula_on_ball_membership():
    """End to end: membership of every entry equals the direct formula's, block or not."""
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 4)).astype(np.float32)
    table = EmbeddingTable([f"w{i}" for i in range(300)], vectors)
    metric = get_metric("euclidean")
    queries = np.vstack([np.zeros(4), rng.standard_normal((3, 4)) * 1e6, vectors[:2]])
    exact = np.array([metric.exact_to_table(q, table) for q in queries])
    for radius in (float(np.median(exact[1])), float(np.median(exact[4])), 1.0):
        block = metric.to_table(queries, table, radius)
        np.testing.assert_array_equal(block <= radius, exact <= radius)
        for i, query in enumerate(queries):
            alone = metric.to_table(query[None], table, radius)[0]
            np.testing.assert_array_equal(alone <= radius, block[i] <= radius)


def test_angular_angles_near_zero_and_pi_are_computed_directly():
    """arccos of a dot product loses ~sqrt(u) near cos = +-1 (an error of ~1e-10 rad at an
    angle of 1e-6): fast angles within ~1e-3 of 0 or pi are recomputed with
    2 atan2(|a - b|, |a + b|), the formula of exact_to_table (and of TEM.distribution).
    The existing diagonal check (d(x, x) == 0) passes when the dot product rounds to 1."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal(50)
    near = base + rng.standard_normal((20, 50)) * 1e-5  # angles ~1e-6 to 1e-5 from base
    vectors = np.vstack([base, near, -base, -near]).astype(np.float32)
    table = EmbeddingTable([f"w{i}" for i in range(len(vectors))], vectors)
    metric = get_metric("angular")
    queries = vectors[[0, 1, 2, 21, 22]].astype(np.float64)  # near base and near -base
    fast = metric.to_table(queries, table)  # every entry within 1e-4 of 0 or of pi
    exact = np.array([metric.exact_to_table(query, table) for query in queries])
    assert np.all((exact < 1e-4) | (exact > np.pi - 1e-4))
    assert np.any((exact > 0) & (exact < 1e-4)) and np.any(exact > np.pi - 1e-4)
    np.testing.assert_allclose(fast, exact, rtol=0, atol=1e-13)
