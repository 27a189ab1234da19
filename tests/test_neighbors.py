"""Nearest-neighbour decoding (PRIVACY.md 2-4)."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.audit import g_test
from dxp_plugins.embeddings import EmbeddingTable
from dxp_plugins.neighbors import (
    CANDIDATES,
    HNSWIndex,
    NeighborIndex,
    TieGroups,
    _rerank,
    exact_search,
    get_index,
    recall_at_1,
)


def fresh(table):
    """The same words and vectors without ``table``'s in-memory cache: an HNSW graph built
    for it is shared by every index of the table, so disk-cache tests need a table whose
    graph comes from the cache folder."""
    return EmbeddingTable(table.words, table.vectors)


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
    assert poor._data.hnsw.efConstruction == 1


def test_every_ef_search_shares_one_graph_and_searches_with_its_own(glove_5k):
    """A second ``ef_search`` value built a second graph (+179 MiB at 400k words); now the
    graph is shared and each index passes its beam width to the search. Its answers are the
    graph's own at that ``efSearch``, also while threads search with other widths at once."""
    table = EmbeddingTable(glove_5k.words[:3000], glove_5k.vectors[:3000])
    widths = (1, 4, 64)
    indexes = [get_index(table, "hnsw", m=8, ef_search=ef, disk_cache=False) for ef in widths]
    assert len({id(index._data) for index in indexes}) == 1
    graph = indexes[0]._data
    queries = noisy_queries(table, 400, 0.3)
    expected = {}
    for ef, index in zip(widths, indexes, strict=True):
        graph.hnsw.efSearch = ef  # what each index's own graph was set to before
        _, found = graph.search(queries.astype(np.float32), min(CANDIDATES, ef))
        expected[ef] = _rerank(table.vectors, queries, found.astype(np.int64))
        np.testing.assert_array_equal(index.search_raw(queries), expected[ef])
    assert not np.array_equal(expected[1], expected[64])  # the width matters here
    graph.hnsw.efSearch = 16  # the graph's own setting is not what the indexes use
    with ThreadPoolExecutor(3) as pool:
        rounds = [pool.submit(index.search_raw, queries) for index in indexes * 4]
        answers = [job.result() for job in rounds]
    for ef, answer in zip(widths * 4, answers, strict=True):
        np.testing.assert_array_equal(answer, expected[ef])


def test_hnsw_nbytes_counts_the_graph_without_serializing_it(glove_5k):
    index = HNSWIndex(EmbeddingTable(glove_5k.words[:2000], glove_5k.vectors[:2000]), m=8)
    serialized = int(dxp.neighbors._faiss().serialize_index(index._data).nbytes)
    tracemalloc.start()
    try:
        nbytes = index.nbytes
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert serialized - 1024 < nbytes <= serialized  # all but the file's header
    assert peak < serialized / 100  # serializing to measure allocated the graph's size again


def test_a_stored_graph_is_never_served_to_another_table(glove_5k, tmp_path, monkeypatch):
    """Tables of one shape but other vectors must not share the disk-cached HNSW graph."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    other = EmbeddingTable(glove_5k.words, glove_5k.vectors[::-1].copy())
    HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
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
    first = HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
    assert len(list((tmp_path / "indexes").glob("hnsw-*-m8-efc20.faiss"))) == 1
    built = []
    monkeypatch.setattr(faiss, "IndexHNSWFlat", lambda *args: built.append(args))
    again = fresh(glove_5k)
    second = HNSWIndex(again, m=8, ef_construction=20)
    narrow = HNSWIndex(again, m=8, ef_construction=20, ef_search=4)
    assert built == []  # read back, not rebuilt
    queries = noisy_queries(glove_5k, 300, 0.3)
    np.testing.assert_array_equal(second.search_raw(queries), first.search_raw(queries))
    assert narrow.params["ef_search"] == 4
    assert not np.array_equal(narrow.search_raw(queries), first.search_raw(queries))


def test_hnsw_disk_cache_can_be_disabled(glove_5k, tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    HNSWIndex(fresh(glove_5k), m=8, ef_construction=20, disk_cache=False)
    assert not (tmp_path / "indexes").exists() or not any((tmp_path / "indexes").iterdir())


def test_a_bad_hnsw_cache_is_rebuilt_never_used(glove_5k, tmp_path, monkeypatch):
    """The cached file was trusted: garbage or a flat index crashed every later run, and a
    graph of other vectors of the same shape was used (agreement with exact search 0)."""
    import faiss

    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    path = HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)._cache_path()
    assert path is not None and path.exists()
    queries = glove_5k.vectors[:200]
    other = faiss.IndexHNSWFlat(glove_5k.dim, 8)
    other.add(np.random.default_rng(0).standard_normal(glove_5k.vectors.shape, dtype=np.float32))
    for bad in (b"garbage", faiss.IndexFlatL2(glove_5k.dim), other):
        if isinstance(bad, bytes):
            path.write_bytes(bad)
        else:
            faiss.write_index(bad, str(path))
        index = HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
        # > 0.9: a small graph built by several threads varies between builds (0.95 was
        # reached exactly under faiss 1.8); a wrong graph agrees ~0
        assert np.mean(index.search_raw(queries) == np.arange(200)) > 0.9
    assert faiss.read_index(str(path)).ntotal == len(glove_5k)  # replaced by a good graph


def test_an_unusable_cache_folder_keeps_the_graph_in_memory(glove_5k, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("DXP_CACHE", str(blocker / "cache"))  # cannot be created
    index = HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
    assert np.mean(index.search_raw(glove_5k.vectors[:100]) == np.arange(100)) > 0.9


# -- review 7: float64 decoding, bounded fallback memory, one build, HNSW limits -------------
def _direct_nearest(vectors, queries):
    """Reference: float64 squared distances to every row, the lowest row on ties."""
    data = np.asarray(vectors, dtype=np.float64)
    out = []
    for query in np.asarray(queries, dtype=np.float64):
        distances = ((data - query) ** 2).sum(axis=1)
        out.append(int(np.flatnonzero(distances == distances.min())[0]))
    return np.array(out)


def _bisector_queries(table, count, deltas, seed=0):
    """Points just on row a's side of the bisector between a and its nearest row b."""
    data = table.vectors.astype(np.float64)
    rng = np.random.default_rng(seed)
    queries = []
    for a in rng.integers(0, len(table), count):
        distances = ((data - data[a]) ** 2).sum(axis=1)
        distances[a] = np.inf
        b = int(np.argmin(distances))
        unit = (data[a] - data[b]) / np.linalg.norm(data[a] - data[b])
        queries += [(data[a] + data[b]) / 2 + delta * unit for delta in deltas]
    return np.array(queries)


def test_the_exact_index_decodes_to_the_float64_nearest_row(glove_5k):
    """faiss scores in float32 only: (0.5 + 1e-9, 0) went to (0, 0), not (1, 0), and queries
    just beside a bisector of GloVe went to the farther word (review 7, F6)."""
    for words, vectors in (
        (["a", "b"], [[0.0, 0.0], [1.0, 0.0]]),
        (["b", "a"], [[1.0, 0.0], [0.0, 0.0]]),
    ):
        table = EmbeddingTable(words, vectors)
        queries = np.array([[0.5 + 1e-9, 0.0], [0.5 - 1e-9, 0.0]])
        np.testing.assert_array_equal(
            get_index(table, "exact").search_raw(queries), _direct_nearest(vectors, queries)
        )
    queries = _bisector_queries(glove_5k, 150, [1e-7, 1e-6, 1e-5])
    truth = _direct_nearest(glove_5k.vectors, queries)
    np.testing.assert_array_equal(get_index(glove_5k, "exact").search_raw(queries), truth)
    np.testing.assert_array_equal(exact_search(glove_5k.vectors, queries), truth)


def test_the_hnsw_candidates_are_re_ranked_in_float64(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    table = EmbeddingTable(["a", "b", "c"], [[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    queries = np.array([[0.5 + 1e-9, 0.0], [0.5 - 1e-9, 0.0]])
    assert get_index(table, "hnsw").search_raw(queries).tolist() == [1, 0]


def test_decoding_is_the_same_alone_and_in_a_batch(glove_5k):
    """Only float64 values of the query and a row decide, never faiss's float32 scores,
    which depend on how a batch is blocked."""
    queries = np.vstack(
        [
            _bisector_queries(glove_5k, 40, [0.0, 1e-9, 1e-7], seed=2),
            noisy_queries(glove_5k, 60, 1.0),
        ]
    )
    index = get_index(glove_5k, "exact")
    batch = index.search_raw(queries)
    alone = [index.search_raw(query[None])[0] for query in queries]
    np.testing.assert_array_equal(batch, alone)


def test_equal_distances_to_distinct_rows_resolve_to_the_lowest_row():
    """A query exactly on a bisector: the fixed index order of PRIVACY.md 2 (lowest row),
    whatever the order of the rows and through every search path."""
    for vectors in ([[2.0, 0.0], [0.0, 0.0], [9.0, 9.0]], [[0.0, 0.0], [2.0, 0.0], [9.0, 9.0]]):
        table = EmbeddingTable(["a", "b", "c"], vectors)
        query = np.array([[1.0, 0.0]])
        assert get_index(table, "exact").search_raw(query).tolist() == [0]
        assert exact_search(table.vectors, query).tolist() == [0]
        ids = get_index(table, "exact").search(
            np.repeat(query, 200, axis=0), np.random.default_rng()
        )
        assert set(ids.tolist()) == {0}


def test_twins_never_crowd_the_nearest_row_out_of_the_candidates():
    """Eight identical rows nearer than the float64-nearest distinct row's float32 tie: the
    candidates are distinct vectors (one row per group), and the twins still tie uniformly."""
    vectors = np.array([[0.0, 0.0]] + [[1.0, 0.0]] * 8 + [[3.0, 0.0]])
    table = EmbeddingTable([f"w{i}" for i in range(10)], vectors)
    index = get_index(table, "exact")
    assert index.search_raw(np.array([[0.5 - 1e-9, 0.0], [0.5 + 1e-9, 0.0]])).tolist() == [0, 1]
    ids = index.search(np.tile([[0.9, 0.0]], (16_000, 1)), np.random.default_rng())
    counts = np.bincount(ids, minlength=10)
    assert counts[[0, 9]].sum() == 0 and g_test(counts[1:9], np.ones(8) / 8) > 1e-6


def test_queries_the_float32_candidates_may_miss_are_searched_exactly(monkeypatch):
    """Rows on a circle around the query: float32 cannot order them, so the query goes to
    the exact float64 search (and ordinary queries do not)."""
    import dxp_plugins.neighbors as neighbors

    angles = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    table = EmbeddingTable([f"w{i}" for i in range(64)], np.c_[np.cos(angles), np.sin(angles)])
    calls = []
    real = neighbors.exact_search
    monkeypatch.setattr(neighbors, "exact_search", lambda v, q: calls.append(len(q)) or real(v, q))
    queries = np.array([[0.0, 0.0], [0.999, 0.0]])
    found = get_index(table, "exact").search_raw(queries)
    np.testing.assert_array_equal(found, _direct_nearest(table.vectors, queries))
    assert calls == [1]


def test_exact_search_agrees_across_slab_and_block_boundaries(monkeypatch):
    import dxp_plugins._exact_search as kernels

    monkeypatch.setattr(kernels, "EXACT_SLAB_ROWS", 7)
    monkeypatch.setattr(kernels, "EXACT_QUERY_BLOCK", 3)
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((50, 3)).astype(np.float32)
    vectors[20] = vectors[3]  # a twin in a later slab: the lower row wins
    queries = np.vstack([vectors[[3, 0, 49]], rng.standard_normal((8, 3)), [vectors[3] + 1e-3]])
    np.testing.assert_array_equal(exact_search(vectors, queries), _direct_nearest(vectors, queries))
    assert exact_search(vectors, queries[:0]).shape == (0,)


def test_exact_search_does_not_copy_the_table_to_float64():
    """The HNSW miss fallback converted the whole table per call (257 MB at 400k words for
    three queries); it streams slabs now (review 7, F10)."""
    import tracemalloc

    vectors = np.random.default_rng(0).standard_normal((200_000, 50), dtype=np.float32)
    queries = vectors[:3].astype(np.float64)
    tracemalloc.start()
    try:
        found = exact_search(vectors, queries)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found.tolist() == [0, 1, 2]
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MiB (a float64 copy is 76 MiB)"


def test_the_exact_index_refuses_rows_whose_squared_norms_overflow_float32(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    table = EmbeddingTable(["a", "b", "c"], [[0.0, 0.0], [1.0, 0.0], [1e20, 0.0]])
    for method in ("exact", "hnsw"):
        with pytest.raises(ValueError, match="rescale the vectors"):
            get_index(table, method)
    wide = EmbeddingTable(
        ["a", "b", "c", "d", "e"], [[0, 0], [1, 0], [2, 0], [1e17, 0], [-1e17, 1]]
    )
    queries = np.array([[0.8, 0.0], [1.6, 0.0], [9e16, 0.0]])
    np.testing.assert_array_equal(
        get_index(wide, "exact").search_raw(queries), _direct_nearest(wide.vectors, queries)
    )


def test_search_refuses_non_finite_queries(glove_5k):
    with pytest.raises(ValueError, match="finite"):
        get_index(glove_5k).search_raw(np.full((1, glove_5k.dim), np.nan))


def test_concurrent_first_users_build_the_index_once(glove_5k, monkeypatch):
    """Four threads that first used a table together built the exact index twice or more."""
    import threading
    import time

    import dxp_plugins.neighbors as neighbors

    table = EmbeddingTable(glove_5k.words, glove_5k.vectors)
    builds = []

    class Slow(neighbors.NeighborIndex):
        def __init__(self, table):
            builds.append(1)
            time.sleep(0.2)
            super().__init__(table)

    monkeypatch.setattr(neighbors, "NeighborIndex", Slow)
    barrier = threading.Barrier(4)
    results = []

    def first_use():
        barrier.wait()
        results.append(neighbors.get_index(table, "exact"))

    threads = [threading.Thread(target=first_use) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1 and len(results) == 4 and all(r is results[0] for r in results)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"m": 513}, "m must be <= 512"),
        ({"m": 10**9}, "m must be <= 512"),
        ({"ef_construction": 100_001}, "ef_construction must be <= 100,000"),
        ({"ef_search": 10**12}, "ef_search must be <= 100,000"),
        ({"m": 1}, "m must be >= 2"),
    ],
)
def test_hnsw_parameters_are_capped(params, message):
    """m=10**9 was accepted when the mechanism was made and exhausted memory at build."""
    from dxp_plugins.neighbors import check_index_params

    with pytest.raises(ValueError, match=message):
        check_index_params("hnsw", params)
    check_index_params("hnsw", {"m": 512, "ef_construction": 100_000, "ef_search": 100_000})


def test_recall_counts_an_identical_twin_as_a_hit(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    table = EmbeddingTable(list("abcd"), [[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 5.0]])
    exact = get_index(table, "exact")
    approximate = get_index(table, "hnsw")
    monkeypatch.setattr(approximate, "search_raw", lambda q: np.full(len(q), 2))
    assert recall_at_1(approximate, exact, np.array([[0.9, 0.0], [0.1, 0.0]])) == 0.5


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_does_not_wait_for_a_build_lock_its_parent_held(glove_5k):
    import os
    import threading

    from dxp_plugins.neighbors import _build_once

    cache: dict = {}
    started, release = threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return "parent"

    builder = threading.Thread(target=_build_once, args=(cache, "k", slow))
    builder.start()
    started.wait(10)
    pid = os.fork()
    if pid == 0:  # the child: the builder thread does not exist here
        code = 1
        try:
            code = 0 if _build_once(cache, "k", lambda: "child") == "child" else 1
        finally:
            os._exit(code)
    release.set()
    builder.join()
    import signal
    import time

    deadline = time.monotonic() + 20
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if done[0] == 0:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail("the forked child waited for its parent's build lock")
    assert os.waitstatus_to_exitcode(done[1]) == 0 and cache["k"] == "parent"


_FAISS = "from dxp_plugins._faiss_runtime import _faiss; _faiss()"
_LOAD_OPENMP = {
    "faiss through the library": _FAISS,
    "scikit-learn through the library": "from dxp_plugins import TextPrivatizer",
    "POT through the library": "from dxp_plugins.lplp import balanced; import ot",
    "scikit-learn first": f"import sklearn.base; {_FAISS}",
}


@pytest.mark.parametrize(
    ("given", "load", "spin", "policy"),
    [
        (None, "faiss through the library", "0", "PASSIVE"),
        (None, "scikit-learn through the library", "0", "PASSIVE"),
        (None, "POT through the library", "0", "PASSIVE"),
        ("ACTIVE", "faiss through the library", None, "ACTIVE"),  # the user's choice
        (None, "scikit-learn first", "300000", None),  # too late: the runtime read its env
    ],
    ids=lambda value: str(value),
)
def test_openmp_threads_sleep_when_idle_unless_told_otherwise(given, load, spin, policy):
    """Spinning OpenMP threads made search 1.9-5x slower beside any other busy process. What
    the runtime applied is its spin count (0 under PASSIVE, 300,000 by GNU's default), which
    it prints when it loads under OMP_DISPLAY_ENV; the variable is set only before a
    runtime loads (afterwards it would only mislead) and never over a user's value."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env["OMP_DISPLAY_ENV"] = "VERBOSE"
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    code = f"import os; {_LOAD_OPENMP[load]}; print(os.environ.get('OMP_WAIT_POLICY'))"
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert run.stdout.strip() == str(policy)
    if spin is not None:
        assert f"GOMP_SPINCOUNT = '{spin}'" in run.stderr, run.stderr


# -- the exact fallback: taken when needed, not otherwise (review 8) -------------------------
def _count_exact_searches(monkeypatch):
    import dxp_plugins.neighbors as neighbors

    calls: list[int] = []
    real = neighbors.exact_search
    monkeypatch.setattr(neighbors, "exact_search", lambda v, q: calls.append(len(q)) or real(v, q))
    return calls


def test_queries_whose_float32_scores_differ_only_by_rounding_are_searched_exactly(monkeypatch):
    """Kills N6 (rounding bound 0: the fallback only when the best and the k-th float32
    scores are exactly equal). Rows around the query at radii differing by ~1e-9 (below
    float32 resolution) get float32 scores ordered by rounding, not all equal: the float64
    nearest row is then usually not among the 4 candidates (mutant: 0 of 20 right). The
    bound of NeighborIndex._nearest guarantees these queries are searched exactly."""
    rng = np.random.default_rng(0)
    dim = 8
    centre = np.full(dim, 3.0)
    units = rng.standard_normal((64, dim))
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    shell = centre + units * (1 + 1e-9 * rng.standard_normal(64))[:, None]
    cluster = -10 + rng.standard_normal((16, dim))  # moves the table's mean off the query
    table = EmbeddingTable([f"w{i}" for i in range(80)], np.vstack([shell, cluster]))
    queries = centre + 1e-10 * rng.standard_normal((20, dim))
    calls = _count_exact_searches(monkeypatch)
    found = get_index(table, "exact").search_raw(queries)
    np.testing.assert_array_equal(found, _direct_nearest(table.vectors, queries))
    assert calls == [20]


def test_a_table_far_from_the_origin_rarely_needs_the_exact_fallback(monkeypatch):
    """Kills N11 (the exact index not centred: still exact, but the rounding bound grows
    with ||y|| ~ 1200, and every query goes to the slow float64 search: 500 of 500; centred:
    0). Speed only; the docstring's 'runs at the speed it had in float32 alone'."""
    rng = np.random.default_rng(3)
    points = 300.0 + rng.normal(0, 0.05, (2000, 16))
    table = EmbeddingTable([f"w{i}" for i in range(2000)], points)
    queries = table.vectors[rng.integers(0, 2000, 500)] + rng.normal(0, 0.02, (500, 16))
    calls = _count_exact_searches(monkeypatch)
    found = get_index(table, "exact").search_raw(queries)
    np.testing.assert_array_equal(found, _direct_nearest(table.vectors, queries))
    assert sum(calls) < 25, calls  # < 5% of the queries


def test_identical_rows_do_not_send_queries_to_the_exact_fallback(monkeypatch):
    """Kills N12 (all twins kept in the faiss data: 4 tied twin candidates make every query
    near them 'unsure', 1000 of 1000 searched exactly; one row per group: 0). Speed only;
    the twins still tie uniformly (checked by test_twins_never_crowd_...)."""
    vectors = np.array(
        [[0.0, 0.0]]
        + [[1.0, 0.0]] * 8
        + [[3.0, 0.0]]
        + [[9.0, 9.0]]
        + [[-9.0, 9.0], [9.0, -9.0], [-9.0, -9.0]]
    )
    table = EmbeddingTable([f"w{i}" for i in range(len(vectors))], vectors)
    calls = _count_exact_searches(monkeypatch)
    ids = get_index(table, "exact").search(
        np.tile([[0.9, 0.0]], (1000, 1)), np.random.default_rng()
    )
    assert set(ids.tolist()) <= set(range(1, 9)) and calls == []


def test_equal_hnsw_settings_spelled_differently_share_one_index(glove_5k, tmp_path, monkeypatch):
    """The cache key was the parameters as spelled: ``{}`` and ``{"ef_search": 64}`` built
    two identical graphs (review 10, N3). The graph's file keeps its name."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    table = EmbeddingTable(glove_5k.words[:500], glove_5k.vectors[:500])
    first = get_index(table, "hnsw")
    assert get_index(table, "hnsw", ef_search=64) is first
    assert get_index(table, "hnsw", m=32, ef_construction=40, disk_cache=True) is first
    assert get_index(table, "hnsw", ef_search=np.int64(64)) is first
    assert get_index(table, "hnsw", ef_search=32).params["ef_search"] == 32
    assert get_index(table, "hnsw", ef_search=32) is not first  # its own width, one graph
    assert get_index(table, "hnsw", ef_search=32)._data is first._data
    assert [p.name for p in (tmp_path / "indexes").iterdir()] == [
        f"hnsw-{table.fingerprint[:32]}-m32-efc40.faiss"
    ]


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_graph_another_user_wrote_is_never_read(glove_5k, tmp_path, monkeypatch):
    """Security review F4: a stored graph is checked for its vectors, not its links; a
    graph whose links were rewritten decoded every query to one word (and crashes faiss
    1.9). Files, and folders, another user owns or can write are not read."""
    import faiss

    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    path = HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)._cache_path()
    assert path is not None and path.exists()
    read = []
    real = faiss.read_index
    monkeypatch.setattr(faiss, "read_index", lambda name: read.append(name) or real(name))
    os.chown(path, 65534, 65534)
    HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
    assert read == [] and path.stat().st_uid == 0  # rebuilt and stored again, as ours
    HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
    assert read == [str(path)]
    path.chmod(0o666)  # ours, but anyone could have rewritten it: rebuilt, not read
    HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)
    assert read == [str(path)] and path.stat().st_mode & 0o777 == 0o644
    os.chown(tmp_path / "indexes", 65534, 65534)
    assert HNSWIndex(fresh(glove_5k), m=8, ef_construction=20)._cache_path() is None


@pytest.mark.parametrize("method", ["exact", "hnsw"])
def test_a_table_too_small_to_tell_apart_is_warned_about(glove_5k, method, tmp_path, monkeypatch):
    """Plugin review F13: at scale 1e-20 every noisy query was nearest to row 0 (float64
    ties), silently: an output independent of the input, a utility trap."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    tiny = dxp.EmbeddingTable(glove_5k.words[:300], glove_5k.vectors[:300] * np.float32(1e-20))
    with pytest.warns(dxp.DxpWarning, match="cannot tell the rows apart"):
        mech = dxp.Madlib(tiny, 5.0, index=method)
        mech.privatize(["the"])
    fine = dxp.EmbeddingTable(glove_5k.words[:300], glove_5k.vectors[:300] * np.float32(1e-6))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dxp.Madlib(fine, 5.0, index=method).privatize(["the"])


def test_the_disk_cache_setting_keeps_its_own_graph(tmp_path, monkeypatch):
    """Diff review F6: with one graph per (m, ef_construction), an index asking for no disk
    cache used a graph read from it, and one asking for the cache never stored a graph a
    no-cache index had built first."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    rng = np.random.default_rng(0)
    table = EmbeddingTable([f"w{i}" for i in range(600)], rng.normal(size=(600, 8)))
    off = get_index(table, "hnsw", m=8, disk_cache=False)
    assert not (tmp_path / "indexes").exists() or not any((tmp_path / "indexes").iterdir())
    on = get_index(table, "hnsw", m=8, disk_cache=True, ef_search=32)
    assert on._data is not off._data
    assert len(list((tmp_path / "indexes").glob("hnsw-*-m8-efc40.faiss"))) == 1
