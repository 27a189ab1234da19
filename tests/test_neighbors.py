"""Nearest-neighbour decoding (PRIVACY.md 2-4)."""

from __future__ import annotations

import numpy as np
import pytest

from dxp_plugins.audit import g_test
from dxp_plugins.embeddings import EmbeddingTable
from dxp_plugins.neighbors import (
    HNSWIndex,
    NeighborIndex,
    TieGroups,
    exact_search,
    get_index,
    recall_at_1,
)


def noisy_queries(table, count, scale, seed=0):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(table), count)
    return table.vectors[rows] + rng.normal(0, scale, (count, table.dim)).astype(np.float32)


def test_exact_index_matches_float64_brute_force(glove_5k):
    queries = noisy_queries(glove_5k, 500, 0.3)
    index = get_index(glove_5k, "exact")
    found = index.search(queries, np.random.default_rng())
    truth = exact_search(glove_5k.vectors, queries)
    # float32 faiss vs float64 brute force may disagree only on near-ties.
    assert np.mean(found == truth) > 0.995


@pytest.mark.parametrize("epsilon", [1e-4, 1e-6, 1e-9])
def test_exact_index_stays_exact_when_the_noise_is_huge(glove_5k, epsilon):
    """Small epsilon: ||q|| is ~n/epsilon; an L2 index adding ||q||^2 in float32 misdecodes."""
    from dxp_plugins.mechanisms.madlib import sample_noise

    rng = np.random.default_rng(1)
    rows = rng.integers(0, len(glove_5k), 500)
    queries = glove_5k.vectors[rows] + sample_noise(rng, 500, glove_5k.dim, epsilon)
    found = get_index(glove_5k, "exact").search_raw(queries)
    np.testing.assert_array_equal(found, exact_search(glove_5k.vectors, queries))


def test_exact_index_stays_exact_for_a_table_far_from_the_origin():
    """Scores q.y - ||y||^2/2 of rows near 300 lose their differences in float32: centre."""
    rng = np.random.default_rng(3)
    points = 300.0 + rng.normal(0, 0.05, (2000, 16))
    table = EmbeddingTable([f"w{i}" for i in range(2000)], points)
    queries = table.vectors[rng.integers(0, 2000, 500)] + rng.normal(0, 0.02, (500, 16))
    found = get_index(table, "exact").search_raw(queries)
    np.testing.assert_array_equal(found, exact_search(table.vectors, queries))


def test_index_is_cached_per_table_and_settings(glove_5k):
    assert get_index(glove_5k, "exact") is get_index(glove_5k, "exact")
    hnsw = get_index(glove_5k, "hnsw", m=16, ef_search=32)
    assert isinstance(hnsw, HNSWIndex) and hnsw.params["m"] == 16
    assert hnsw is not get_index(glove_5k, "hnsw", m=16, ef_search=64)


def test_hnsw_recall_is_measured_against_exact(glove_5k, tmp_path, monkeypatch):
    queries = noisy_queries(glove_5k, 1000, 0.3)
    exact = get_index(glove_5k, "exact")
    recall = recall_at_1(get_index(glove_5k, "hnsw"), exact, queries)
    assert 0.9 < recall <= 1.0
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    poor = HNSWIndex(glove_5k, m=2, ef_construction=1, ef_search=1)
    truth = np.mean(poor.search_raw(queries) == exact_search(glove_5k.vectors, queries))
    assert recall_at_1(poor, exact, queries) == pytest.approx(truth) and truth < 0.9
    assert poor.params == {"m": 2, "ef_construction": 1, "ef_search": 1}
    graph = poor._data
    assert (graph.hnsw.efSearch, graph.hnsw.efConstruction) == (1, 1)


def test_a_stored_graph_is_never_served_to_another_table(glove_5k, tmp_path, monkeypatch):
    """Tables of one shape but other vectors must not share the disk-cached HNSW graph."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    other = EmbeddingTable(glove_5k.words, glove_5k.vectors[::-1].copy())
    HNSWIndex(glove_5k, m=8, ef_construction=20)
    index = HNSWIndex(other, m=8, ef_construction=20)
    queries = noisy_queries(other, 300, 0.3)
    truth = exact_search(other.vectors, queries)
    assert np.mean(index.search_raw(queries) == truth) > 0.9


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("annoy", {}, "index must be one of"),
        ("exact", {"m": 8}, "does not take"),
        ("hnsw", {"ef": 8}, "does not take"),
    ],
)
def test_index_settings_are_validated(glove_5k, method, params, message):
    with pytest.raises(ValueError, match=message):
        get_index(glove_5k, method, **params)


def test_search_is_a_function_of_the_query_only(glove_5k):
    """Same noisy vector, same output: the decoder has no access to the input word."""
    queries = noisy_queries(glove_5k, 300, 0.5)
    index = get_index(glove_5k, "exact")
    first = index.search(queries, np.random.default_rng(1))
    second = index.search(queries.copy(), np.random.default_rng(2))
    np.testing.assert_array_equal(first, second)


def test_identical_rows_tie_uniformly():
    vectors = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [-0.0, 5.0], [1.0, 1.0], [0.0, 5.0]])
    table = EmbeddingTable(list("abcdef"), vectors)
    ties = TieGroups.find(table.vectors)
    assert ties is not None
    assert ties.group_of_row[[1, 2, 4]].tolist() == [ties.group_of_row[1]] * 3
    assert ties.group_of_row[3] == ties.group_of_row[5] != ties.group_of_row[1]
    assert ties.group_of_row[3] >= 0  # -0.0 and 0.0 are one vector
    assert ties.group_of_row[0] == -1
    index = NeighborIndex(table)
    draws = 30_000
    ids = index.search(np.tile([[1.1, 0.9]], (draws, 1)), np.random.default_rng())
    counts = np.bincount(ids, minlength=6)
    assert counts[[0, 3, 5]].sum() == 0
    assert g_test(counts[[1, 2, 4]], np.ones(3) / 3) > 1e-6  # uniform over the twins
    assert TieGroups.find(np.eye(3, dtype=np.float32)) is None


def test_unanswered_queries_are_searched_exactly_never_passed_through(glove_5k, monkeypatch):
    index = get_index(glove_5k, "exact")
    queries = noisy_queries(glove_5k, 50, 0.2)
    monkeypatch.setattr(index, "search_raw", lambda q: np.full(len(q), -1, dtype=np.int64))
    ids = index.search(queries, np.random.default_rng())
    np.testing.assert_array_equal(ids, exact_search(glove_5k.vectors, queries))


def test_query_shape_is_checked(glove_5k):
    with pytest.raises(ValueError, match="shape"):
        get_index(glove_5k).search(np.zeros((2, 3)), np.random.default_rng())


def test_hnsw_graph_is_stored_and_reused(glove_5k, tmp_path, monkeypatch):
    import faiss

    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    first = HNSWIndex(glove_5k, m=8, ef_construction=20)
    assert len(list((tmp_path / "indexes").glob("hnsw-*-m8-efc20.faiss"))) == 1
    built = []
    monkeypatch.setattr(faiss, "IndexHNSWFlat", lambda *args: built.append(args))
    second = HNSWIndex(glove_5k, m=8, ef_construction=20)
    narrow = HNSWIndex(glove_5k, m=8, ef_construction=20, ef_search=4)
    assert built == []  # read back, not rebuilt
    queries = noisy_queries(glove_5k, 300, 0.3)
    np.testing.assert_array_equal(second.search_raw(queries), first.search_raw(queries))
    assert narrow.params["ef_search"] == 4
    assert not np.array_equal(narrow.search_raw(queries), first.search_raw(queries))


def test_hnsw_disk_cache_can_be_disabled(glove_5k, tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    HNSWIndex(glove_5k, m=8, ef_construction=20, disk_cache=False)
    assert not (tmp_path / "indexes").exists() or not any((tmp_path / "indexes").iterdir())


def test_a_bad_hnsw_cache_is_rebuilt_never_used(glove_5k, tmp_path, monkeypatch):
    """The cached file was trusted: garbage or a flat index crashed every later run, and a
    graph of other vectors of the same shape was used (agreement with exact search 0)."""
    import faiss

    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    path = HNSWIndex(glove_5k, m=8, ef_construction=20)._cache_path()
    assert path is not None and path.exists()
    queries = glove_5k.vectors[:200]
    other = faiss.IndexHNSWFlat(glove_5k.dim, 8)
    other.add(np.random.default_rng(0).standard_normal(glove_5k.vectors.shape, dtype=np.float32))
    for bad in (b"garbage", faiss.IndexFlatL2(glove_5k.dim), other):
        if isinstance(bad, bytes):
            path.write_bytes(bad)
        else:
            faiss.write_index(bad, str(path))
        index = HNSWIndex(glove_5k, m=8, ef_construction=20)
        assert np.mean(index.search_raw(queries) == np.arange(200)) > 0.95
    assert faiss.read_index(str(path)).ntotal == len(glove_5k)  # replaced by a good graph


def test_an_unusable_cache_folder_keeps_the_graph_in_memory(glove_5k, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DXP_CACHE", str(blocker / "cache"))  # cannot be created
    index = HNSWIndex(glove_5k, m=8, ef_construction=20)
    assert np.mean(index.search_raw(glove_5k.vectors[:100]) == np.arange(100)) > 0.95
