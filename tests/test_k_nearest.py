"""``NeighborIndex.k_nearest``: the k nearest rows of noisy vectors, for plugins that choose
among them (a Vickrey-style mechanism). Exact means the k smallest float64 distances of
:func:`squared_distances`, lower row first on equal ones, checked against a brute-force
sort of every row."""

from __future__ import annotations

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import neighbors
from dxp_plugins.neighbors import (
    exact_k_nearest,
    get_index,
    squared_distances,
)


def brute_force(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    size = len(vectors)
    rows = np.arange(size)
    out = np.empty((len(queries), k), dtype=np.int64)
    for i, query in enumerate(queries):
        distances = squared_distances(np.repeat(query[None], size, axis=0), vectors)
        out[i] = np.lexsort((rows, distances))[:k]
    return out


def noisy_queries(table: dxp.EmbeddingTable, count: int, scale: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(table), count)
    return table.vectors[rows].astype(np.float64) + rng.normal(0, scale, (count, table.dim))


def spy_on_the_exact_search(monkeypatch) -> list[int]:
    searched: list[int] = []
    real = neighbors._exact_k_rows

    def spy(vectors, queries, k):
        searched.append(len(queries))
        return real(vectors, queries, k)

    monkeypatch.setattr(neighbors, "_exact_k_rows", spy)
    return searched


@pytest.mark.parametrize("k", [1, 2, 7])
def test_exact_index_gives_the_k_smallest_float64_distances(glove_5k, k):
    queries = noisy_queries(glove_5k, 120, 0.5)
    ids, distances = get_index(glove_5k).k_nearest(queries, k)
    assert ids.shape == distances.shape == (120, k)
    np.testing.assert_array_equal(ids, brute_force(glove_5k.vectors, queries, k))
    expected = squared_distances(np.repeat(queries, k, axis=0), glove_5k.vectors[ids.ravel()])
    np.testing.assert_array_equal(distances, expected.reshape(120, k))
    assert (np.diff(distances, axis=1) >= 0).all()


def test_k_of_one_is_the_decoded_word(glove_5k):
    queries = noisy_queries(glove_5k, 300, 2.0, seed=1)
    index = get_index(glove_5k)
    np.testing.assert_array_equal(index.k_nearest(queries, 1)[0][:, 0], index.search_raw(queries))


def test_queries_float32_cannot_separate_are_searched_exactly(monkeypatch):
    # A tight cluster 1e-3 wide beside rows 1000 away: float32 scores carry errors far
    # larger than the cluster's distances, so faiss's candidates cannot be trusted there.
    rng = np.random.default_rng(2)
    vectors = 1e-3 * rng.normal(size=(300, 8))
    vectors[:3] = 1000.0 * rng.normal(size=(3, 8))
    table = dxp.EmbeddingTable([f"w{i}" for i in range(300)], vectors)
    queries = 1e-3 * rng.normal(size=(40, 8))
    searched = spy_on_the_exact_search(monkeypatch)
    ids, _ = get_index(table).k_nearest(queries, 5)
    assert sum(searched) == 40
    np.testing.assert_array_equal(ids, brute_force(table.vectors, queries, 5))


def test_faiss_candidates_answer_almost_every_glove_query(glove_5k, monkeypatch):
    searched = spy_on_the_exact_search(monkeypatch)
    get_index(glove_5k).k_nearest(noisy_queries(glove_5k, 2000, 0.5, seed=6), 3)
    assert sum(searched) < 20  # the float64 search is the rare path (0 in this run)


def test_equal_distances_among_candidates_go_to_the_lower_row():
    vectors = np.array([[9.0, 9.0], [0.0, 1.0], [1.0, 0.0], [0.0, -1.0], [-1.0, 0.0]])
    found = np.array([[4, 2, 0, 3, 1]])  # candidates in faiss's order, four at distance 1
    ids, _ = neighbors._top_k(vectors, np.zeros((1, 2)), found, 3)
    assert ids.tolist() == [[1, 2, 3]]


def test_identical_rows_are_listed_one_by_one_lower_first():
    vectors = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 5.0], [1.0, 0.0]])
    table = dxp.EmbeddingTable(list("abcde"), vectors)
    ids, distances = get_index(table).k_nearest(np.array([[0.9, 0.0]]), 4)
    assert ids.tolist() == [[1, 2, 4, 0]]
    np.testing.assert_allclose(distances, [[0.01, 0.01, 0.01, 0.81]])


@pytest.mark.parametrize("k", [1, 3, 50])
def test_exact_k_nearest_matches_a_full_sort(k):
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(5000, 6)).astype(np.float32)
    vectors[100] = vectors[4000]  # a tie: the lower row first
    queries = np.r_[rng.normal(size=(300, 6)), vectors[[4000]].astype(np.float64)]
    found, distances = exact_k_nearest(vectors, queries, k)
    np.testing.assert_array_equal(distances, neighbors._distances_of(vectors, queries, found))
    np.testing.assert_array_equal(found, brute_force(vectors, queries, k))


def test_every_row_can_be_asked_for():
    rng = np.random.default_rng(4)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(30)], rng.normal(size=(30, 4)))
    queries = rng.normal(size=(10, 4))
    ids, _ = get_index(table).k_nearest(queries, 30)
    np.testing.assert_array_equal(ids, brute_force(table.vectors, queries, 30))


def test_hnsw_candidates_are_reranked_and_ordered(glove_5k):
    queries = noisy_queries(glove_5k, 300, 0.5, seed=5)
    ids, distances = get_index(glove_5k, "hnsw", disk_cache=False).k_nearest(queries, 3)
    truth = brute_force(glove_5k.vectors, queries, 3)
    assert (np.diff(distances, axis=1) >= 0).all()
    assert np.mean(ids == truth) > 0.9  # approximate: most rows found
    expected = squared_distances(np.repeat(queries, 3, axis=0), glove_5k.vectors[ids.ravel()])
    np.testing.assert_array_equal(distances, expected.reshape(300, 3))


def test_bad_arguments_are_refused(glove_5k):
    index = get_index(glove_5k)
    with pytest.raises(ValueError, match="k must be at most the 5000 rows"):
        index.k_nearest(np.zeros((1, 50)), 5001)
    with pytest.raises(ValueError, match="k must be"):
        index.k_nearest(np.zeros((1, 50)), 0)
    with pytest.raises(ValueError, match="queries must have shape"):
        index.k_nearest(np.zeros((1, 3)), 2)
    with pytest.raises(ValueError, match="finite"):
        index.k_nearest(np.full((1, 50), np.nan), 2)
    ids, distances = index.k_nearest(np.zeros((0, 50)), 2)
    assert ids.shape == distances.shape == (0, 2)


def test_rows_that_only_rounding_tells_apart_are_decided_by_the_float64_distance():
    # Permutations of one set of coordinates: equal distances from the origin but for the
    # rounding of the sums, which the matrix product and the ordered sum do differently.
    rng = np.random.default_rng(7)
    coordinates = rng.normal(size=12)  # float64: their squares round
    vectors = np.array([rng.permutation(coordinates) for _ in range(400)])
    queries = np.zeros((1, 12)) + 1e-30
    for k in (1, 5):
        np.testing.assert_array_equal(
            exact_k_nearest(vectors, queries, k).ids, brute_force(vectors, queries, k)
        )


@pytest.mark.parametrize("scale", [1e6, 1e12, 1e15])
def test_queries_far_beyond_the_table_still_get_the_smallest_float64_distances(glove_5k, scale):
    # Madlib's noise at a tiny epsilon: every row is nearly equidistant, and the float64
    # distances round by more than they differ; the answer is still their k smallest.
    queries = noisy_queries(glove_5k, 60, scale, seed=8)
    ids, _ = get_index(glove_5k).k_nearest(queries, 3)
    np.testing.assert_array_equal(ids, brute_force(glove_5k.vectors, queries, 3))


def test_a_table_with_identical_rows_keeps_the_fast_path(glove_5k, monkeypatch):
    # One pair of twins made every query an exact float64 search (14x slower, a plugin
    # author's review): each candidate now stands for its group.
    vectors = glove_5k.vectors.copy()
    vectors[4999] = vectors[4998]
    vectors[10] = vectors[3]
    table = dxp.EmbeddingTable(list(glove_5k.words), vectors)
    queries = np.r_[noisy_queries(table, 300, 0.5, seed=9), vectors[[3, 4998]].astype(float)]
    searched = spy_on_the_exact_search(monkeypatch)
    found = get_index(table).k_nearest(queries, 3)
    assert sum(searched) < 5
    np.testing.assert_array_equal(found.ids, brute_force(table.vectors, queries, 3))
    assert found.ids[-2, :2].tolist() == [3, 10] and found.ids[-1, :2].tolist() == [4998, 4999]


def test_a_huge_group_of_identical_rows_is_searched_exactly(monkeypatch):
    rng = np.random.default_rng(10)
    vectors = rng.normal(size=(1000, 6))
    vectors[100:400] = 0.0  # 300 zero rows, as some tables pad with
    table = dxp.EmbeddingTable([f"w{i}" for i in range(1000)], vectors)
    queries = 0.01 * rng.normal(size=(20, 6))
    searched = spy_on_the_exact_search(monkeypatch)
    ids, _ = get_index(table).k_nearest(queries, 4)
    assert sum(searched) == 20
    np.testing.assert_array_equal(ids, brute_force(table.vectors, queries, 4))
    assert ids[:, :4].tolist() == [[100, 101, 102, 103]] * 20


def test_the_result_names_its_fields(glove_5k):
    found = get_index(glove_5k).k_nearest(noisy_queries(glove_5k, 5, 0.5), 2)
    assert found.ids.dtype == np.int64 and found.squared_distances.dtype == np.float64
    ids, distances = found
    assert ids is found.ids and distances is found.squared_distances


def test_exact_k_nearest_checks_its_arguments():
    vectors = np.eye(4)
    with pytest.raises(TypeError, match="k must be an integer"):
        exact_k_nearest(vectors, np.zeros((1, 4)), 2.0)
    with pytest.raises(ValueError, match="k must be at most the 4 rows of the table"):
        exact_k_nearest(vectors, np.zeros((1, 4)), 5)
    with pytest.raises(ValueError, match="finite"):
        exact_k_nearest(vectors, np.full((1, 4), np.nan), 2)
    with pytest.raises(ValueError, match=r"queries must have shape \(n, 4\)"):
        exact_k_nearest(vectors, np.zeros((1, 3)), 2)
    with pytest.raises(ValueError, match=r"queries must have shape \(n, 4\)"):
        exact_k_nearest(vectors, np.zeros(4), 2)


def test_a_clear_nearest_row_does_not_certify_the_k_th():
    # The nearest row stands far ahead, but the 2nd and 3rd sit in a cluster float32
    # cannot order: the certificate is the k-th candidate's lead, not the first's.
    rng = np.random.default_rng(11)
    dim = 8
    far = 1000.0 * rng.normal(size=(3, dim))
    cluster = np.full(dim, 10.0 / np.sqrt(dim)) + 1e-6 * rng.normal(size=(200, dim))
    vectors = np.r_[far, np.zeros((1, dim)), cluster]
    table = dxp.EmbeddingTable([f"w{i}" for i in range(len(vectors))], vectors)
    queries = 1e-4 * rng.normal(size=(30, dim))
    ids, _ = get_index(table).k_nearest(queries, 3)
    assert (ids[:, 0] == 3).all()
    np.testing.assert_array_equal(ids, brute_force(table.vectors, queries, 3))


def test_queries_whose_distances_would_overflow_are_refused(glove_5k):
    index = get_index(glove_5k)
    huge = np.full((1, 50), 1e160)
    with pytest.raises(ValueError, match="queries must lie within 1e"):
        index.search(huge, np.random.default_rng(0))  # it returned row -1
    with pytest.raises(ValueError, match="queries must lie within 1e"):
        index.k_nearest(huge, 1)
    with pytest.raises(ValueError, match="queries must lie within 1e"):
        exact_k_nearest(glove_5k.vectors, huge, 1)
    ids, _ = index.k_nearest(np.full((1, 50), 1e14), 1)  # Madlib's noise at epsilon 1e-12
    assert ids.shape == (1, 1)


def test_recall_at_k_counts_queries_whose_k_nearest_rows_all_match(glove_5k):
    from dxp_plugins.neighbors import recall_at_1, recall_at_k

    queries = noisy_queries(glove_5k, 400, 1.5, seed=12)
    exact = get_index(glove_5k)
    poor = get_index(glove_5k, "hnsw", m=4, ef_search=4, disk_cache=False)
    found, truth = poor.k_nearest(queries, 2).ids, exact.k_nearest(queries, 2).ids
    expected = np.mean((np.sort(found, axis=1) == np.sort(truth, axis=1)).all(axis=1))
    assert recall_at_k(poor, exact, queries, 2) == pytest.approx(expected)
    assert recall_at_k(poor, exact, queries, 2) <= recall_at_1(poor, exact, queries) + 0.05
    assert recall_at_k(exact, exact, queries, 3) == 1.0
    with pytest.raises(ValueError, match="at least one query"):
        recall_at_k(poor, exact, np.zeros((0, 50)), 2)
