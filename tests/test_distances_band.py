"""The rounding band of the fast distances: ball membership (d <= gamma) is the direct float64
formula's on both sides of the radius, with the tolerance the code documents.

From a mutation review (review 11): removing the "fast inside, truly outside" half of the
Euclidean or angular band, or shrinking the tolerance (factor 8 -> 1, no 2|q.y| term, no
largest-norm term), passed every earlier test, while with real BLAS rounding TEM's candidate
set then differed from the direct formula's ball at 14 of 60 radii."""

from __future__ import annotations

import numpy as np
import pytest

from dxp_plugins.distances import get_metric
from dxp_plugins.embeddings import EmbeddingTable

U = float(np.finfo(np.float64).eps)


def _table(vectors):
    vectors = np.asarray(vectors, dtype=np.float32)
    return EmbeddingTable([f"w{i}" for i in range(len(vectors))], vectors)


def _geometries():
    """(table, query, row): a query parallel to its row (2|q.y| is as large as it gets) and
    a small query against the one large row of a table of small rows."""
    rng = np.random.default_rng(5)
    small = rng.standard_normal((40, 6))
    y = rng.standard_normal(6)
    parallel = _table(np.vstack([small, 10.0 * y]))  # the row of largest norm
    q_parallel = 2.0 * parallel.vectors[-1].astype(np.float64)
    big = _table(np.vstack([small, 1e3 * y]))
    q_small = rng.standard_normal(6)
    return [(parallel, q_parallel, 40), (big, q_small, 40)]


@pytest.mark.parametrize("case", range(2))
@pytest.mark.parametrize("side", ["fast_outside", "fast_inside"])
def test_euclidean_band_covers_the_documented_bound_on_both_sides_of_the_radius(case, side):
    """finish_block promises that a BLAS value within 8x the bound
    (n + 2) u (||q||^2 + ||y||^2 + 2|q.y|) of radius^2 is recomputed directly. A fast value
    6x that bound off, on the wrong side of the radius, must come back as the direct
    distance, so membership d <= radius is the direct formula's on both sides."""
    table, query, row = _geometries()[case]
    metric = get_metric("euclidean")
    y = table.vectors[row].astype(np.float64)
    direct = float(metric.pairs(query[None], y[None])[0])
    bound = (table.dim + 2) * U * (query @ query + y @ y + 2 * abs(query @ y))
    if side == "fast_outside":  # truly inside the ball, fast value says outside
        radius = direct
        fast_row = radius * radius + 6 * bound
    else:  # truly outside, fast value says inside
        radius = float(np.nextafter(direct, 0.0))
        fast_row = radius * radius - 6 * bound
    exact = metric.exact_to_table(query, table)
    values = exact**2
    values[row] = fast_row
    values = values[None, :].copy()
    metric.finish_block(query[None], values, table, radius)
    assert values[0, row] == direct
    assert (values[0, row] <= radius) == (side == "fast_outside")


@pytest.mark.parametrize("side", ["fast_outside", "fast_inside"])
def test_angular_band_covers_both_sides_of_cos_radius(side):
    """Angular: a dot product within 8 (n + 2) u of cos(radius), on either side, is
    recomputed with the atan2 formula (the one TEM.distribution uses)."""
    rng = np.random.default_rng(6)
    vectors = rng.standard_normal((30, 8))
    table = _table(vectors)
    metric = get_metric("angular")
    query = rng.standard_normal(8)
    exact = metric.exact_to_table(query, table)
    row = 7
    direct = float(exact[row])
    tolerance = 8.0 * (table.dim + 2) * U
    if side == "fast_outside":  # angle <= radius, fast cosine below cos(radius)
        radius = direct
        fast = np.cos(radius) - tolerance / 2
    else:
        radius = float(np.nextafter(direct, 0.0))
        fast = np.cos(radius) + tolerance / 2
    values = np.cos(exact)
    values[row] = fast
    values = values[None, :].copy()
    metric.finish_block(query[None], values, table, radius)
    assert values[0, row] == direct
    assert (values[0, row] <= radius) == (side == "fast_outside")


def test_manhattan_band_is_relative_to_the_radius():
    """Manhattan: cdist and pairs sum in different orders, each within n u d of the truth,
    so entries within 8 (n + 2) u radius of a large radius are recomputed by pairs."""
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((30, 8)) * 1e4
    table = _table(vectors)
    metric = get_metric("manhattan")
    query = rng.standard_normal(8) * 1e4
    exact = metric.exact_to_table(query, table)
    row = 3
    radius = float(exact[row])
    values = exact.copy()
    values[row] = radius + 4.0 * (table.dim + 2) * U * radius  # within 8x: recomputed
    values = values[None, :].copy()
    metric.finish_block(query[None], values, table, radius)
    assert values[0, row] == exact[row] <= radius


@pytest.mark.parametrize("name", ["euclidean", "angular"])
def test_to_table_membership_is_the_direct_formulas_at_radii_equal_to_distances(name):
    """End to end with real BLAS rounding, every radius equal to some word's direct
    distance (and the float just below it), so fast values land on both sides of the
    radius while the direct formula puts the word inside (resp. outside). Euclidean: words
    clustered far from the origin (||q||^2 + ||y||^2 ~ 1e8 cancels down to d^2 ~ 1, an
    error of ~1e-8 in d); angular: generic directions (angles ~ pi/2, away from the
    near-0/pi re-check)."""
    rng = np.random.default_rng(8)
    if name == "euclidean":
        vectors = rng.standard_normal(16) * 2.5e3 + rng.standard_normal((400, 16))
    else:
        vectors = rng.standard_normal((400, 16))
    table = _table(vectors)
    metric = get_metric(name)
    queries = table.vectors[:4].astype(np.float64)
    exact = np.array([metric.exact_to_table(q, table) for q in queries])
    for distance in exact[:, 10:40].ravel():  # 120 words' direct distances
        for radius in (float(distance), float(np.nextafter(distance, 0.0))):
            block = metric.to_table(queries, table, radius)
            np.testing.assert_array_equal(block <= radius, exact <= radius)


def test_angular_recheck_reaches_angles_of_a_few_1e_4():
    """The near-0/pi re-check covers fast cosines within 5e-7 of +-1, i.e. angles up to
    ~1e-3 from 0 or pi, where arccos of a rounded dot product is still off by ~1e-12 rad;
    angles of 1e-4 to 8e-4 must come back as the direct atan2 value."""
    rng = np.random.default_rng(9)
    base = rng.standard_normal(50)
    base /= np.linalg.norm(base)
    ortho = rng.standard_normal((30, 50))
    ortho -= ortho @ base[:, None] * base
    ortho /= np.linalg.norm(ortho, axis=1, keepdims=True)
    angles = np.linspace(1e-4, 8e-4, 30)
    near = np.cos(angles)[:, None] * base + np.sin(angles)[:, None] * ortho
    vectors = np.vstack([base, near, -near]).astype(np.float32)
    table = _table(vectors)
    metric = get_metric("angular")
    query = table.vectors[:1].astype(np.float64)
    exact = metric.exact_to_table(query[0], table)
    inner = (exact > 5e-5) & (exact < 1e-3)
    assert inner.sum() >= 25 and np.sum(exact > np.pi - 1e-3) >= 25
    np.testing.assert_array_equal(metric.to_table(query, table)[0], exact)
