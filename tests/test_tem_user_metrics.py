"""User metric functions for TEM: the metric axioms checked when the mechanism is built,
and the default sampler's law when a function's self-distance is not 0 (numerical review,
sixteenth session, F4 and F5)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import dxp_plugins as dxp
from dxp_plugins import distances

#: 1-D words 0, 1 and 10 (x, x', y of the review): squared distances break the triangle.
LINE = dxp.EmbeddingTable(["x", "xp", "y"], np.array([[0.0, 1.0], [1.0, 1.0], [10.0, 1.0]]))


@pytest.mark.parametrize(
    ("function", "axiom"),
    [
        (lambda X, Y: cdist(X, Y, "sqeuclidean"), r"d\(x, z\) = .* > d\(x, y\) \+ d\(y, z\)"),
        (lambda X, Y: cdist(X, Y, "cosine"), r"d\(x, z\) = .* > d\(x, y\) \+ d\(y, z\)"),
        (lambda X, Y: cdist(X, Y) + 1.0, r"d\(x, x\) = 1 for row 0"),
        (
            lambda X, Y: cdist(X, Y) + 0.5 * np.maximum(X[:, :1] - Y[:, 0], 0),
            r"d\(x, y\) = .* but d\(y, x\) = ",
        ),
    ],
    ids=["sqeuclidean", "cosine", "self-distance", "asymmetric"],
)
def test_functions_that_are_not_metrics_are_refused_when_built(function, axiom):
    """With squared Euclidean the realised log-ratio was 0.94 against a claimed 0.1."""
    with pytest.raises(ValueError, match=axiom + ".*TEM's guarantee needs one"):
        dxp.TEM(LINE, 0.1, metric=function, gamma=1000.0)


def test_squared_and_cosine_distances_are_refused_on_real_embeddings(glove_5k):
    """On GloVe rows the triangle breaks between a row and its nearest neighbours, which
    the probe set includes (eight random 50-d rows alone are nearly equilateral)."""
    for name in ("sqeuclidean", "cosine", "correlation"):
        with pytest.raises(ValueError, match="is not a metric on embeddings"):
            dxp.TEM(glove_5k, 2.0, metric=lambda X, Y, n=name: cdist(X, Y, n))


@pytest.mark.parametrize("name", ["euclidean", "cityblock", "chebyshev", "canberra"])
def test_metric_functions_are_accepted(glove_5k, name):
    tem = dxp.TEM(glove_5k, 2.0, metric=lambda X, Y: cdist(X, Y, name))
    assert len(tem.privatize(["hockey", "the"])) == 2


def test_a_function_failing_against_a_later_row_is_refused_before_any_charge():
    """F6: the function is tried on the first rows against every row, so a NaN beyond the
    first eight rows no longer surfaces only after a release was charged."""
    vectors = np.random.default_rng(0).normal(size=(20, 3))
    vectors[15] = 100.0
    table = dxp.EmbeddingTable([f"w{i}" for i in range(20)], vectors)

    def partial(X, Y):
        d = cdist(X, Y)
        d[d > 50] = np.nan
        return d

    ledger = dxp.Accountant()
    with pytest.raises(ValueError, match="negative or non-finite"):
        dxp.TEM(table, 1.0, metric=partial, accountant=ledger)
    assert ledger.spent == 0.0


def test_the_default_sampler_keeps_the_law_when_self_distance_is_not_zero(monkeypatch):
    """F5: laws of vocabulary words were built with a best score of 0; with d(w, w) = 2000
    every weight underflowed and the output was deterministic ([0, 0, 0, 1])."""
    monkeypatch.setattr(distances, "_check_axioms", lambda *args: None, raising=False)
    table = dxp.EmbeddingTable(["a", "b", "c", "d"], np.array([[0, 0], [1, 0], [0, 1], [3, 3]]))
    tem = dxp.TEM(table, 1.0, metric=lambda X, Y: cdist(X, Y) + 2000.0, gamma=3000.0)
    draws = np.bincount(tem.privatize_ids(np.zeros(40_000, dtype=np.int64)), minlength=4)
    law = tem.distribution("a")
    assert law.min() > 0.04
    np.testing.assert_allclose(draws / 40_000, law, atol=6 * np.sqrt(0.25 / 40_000))


def _angular(X, Y):
    cos = (X @ Y.T) / np.outer(np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1))
    return np.arccos(np.clip(cos, -1.0, 1.0))


def _expansion32(X, Y):
    X, Y = X.astype(np.float32), Y.astype(np.float32)
    squared = (X * X).sum(1)[:, None] + (Y * Y).sum(1)[None] - 2 * X @ Y.T
    return np.sqrt(np.maximum(squared, 0)).astype(np.float64)


@pytest.mark.parametrize("function", [_angular, _expansion32], ids=["arccos", "float32"])
def test_true_metrics_that_round_are_accepted(glove_5k, function):
    """Review of the sixteenth session's check: a tolerance of 1e-9 of the largest distance
    refused arccos of a clipped cosine (d(x, x) = 4e-8) and the float32 expansion (3e-3)."""
    tem = dxp.TEM(glove_5k, 30.0, metric=function)
    assert len(tem.privatize(["hockey"])) == 1


def test_the_probe_keeps_the_nearest_rows_of_the_whole_table(monkeypatch):
    """The nearest rows were taken per 32,768-row slab: 280 probe rows on a 200k table, and
    the triangle check is cubic in them. Now at most 8 x 5 rows, the table's nearest."""
    monkeypatch.setattr(distances, "SLAB_ROWS", 7)
    vectors = np.random.default_rng(1).normal(size=(60, 3))
    table = dxp.EmbeddingTable([f"w{i}" for i in range(60)], vectors)
    seen = []

    def recording(matrix, rows, *args):
        seen.append(rows)

    monkeypatch.setattr(distances, "_check_axioms", recording)
    dxp.TEM(table, 1.0, metric=lambda X, Y: cdist(X, Y))
    rows = seen[0]
    assert len(rows) <= 8 * (distances.PROBE_NEIGHBOURS + 1)
    nearest = np.argsort(cdist(vectors[:8], vectors), axis=1)[:, : distances.PROBE_NEIGHBOURS + 1]
    assert set(nearest.ravel().tolist()) <= set(rows.tolist())
