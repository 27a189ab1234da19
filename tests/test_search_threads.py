"""OpenMP threads of the nearest-neighbour search (service review, seventeenth session):
Python threads sharing an exact index each opened faiss's full OpenMP team, and 4 threads
ran 20-70x slower than one; batches of 2-127 queries ran 1.4-4x slower on the team than on
one thread (benchmarks/bench_search_threads.py). The real faiss search runs; a spy records
the calling thread's OpenMP setting at each call."""

from __future__ import annotations

import contextlib
import threading

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import _faiss_runtime as faiss_runtime
from dxp_plugins import neighbors


@pytest.fixture
def faiss_threads(monkeypatch):
    """The calling thread's OpenMP threads at each ``faiss.knn`` / HNSW search."""
    faiss = faiss_runtime._faiss()
    if faiss.omp_get_max_threads() < 2:
        pytest.skip("one OpenMP thread on this machine: nothing to narrow")
    seen: list[int] = []
    knn = faiss.knn

    def spy(*args, **kwargs):
        seen.append(faiss.omp_get_max_threads())
        return knn(*args, **kwargs)

    monkeypatch.setattr(faiss, "knn", spy)
    return seen


def queries(emb, n):
    rng = np.random.default_rng(n)
    return emb.vectors[rng.integers(0, len(emb), n)].astype(np.float64) + 0.01


@contextlib.contextmanager
def another_search_in_flight():
    """Another thread inside ``_search_threads`` until the block ends."""
    inside, leave = threading.Event(), threading.Event()

    def other_search():
        with faiss_runtime._search_threads():
            inside.set()
            leave.wait(30)

    other = threading.Thread(target=other_search)
    other.start()
    try:
        assert inside.wait(30)
        yield
    finally:
        leave.set()
        other.join(30)


def test_small_exact_batches_search_on_one_thread(glove_5k, faiss_threads):
    faiss = faiss_runtime._faiss()
    default = faiss.omp_get_max_threads()
    index = dxp.Madlib(glove_5k, 10.0).neighbor_index
    for n in (1, 2, 8, neighbors.SMALL_BATCH - 1, neighbors.SMALL_BATCH, 300):
        index.search_raw(queries(glove_5k, n))
    assert faiss_threads == [default, 1, 1, 1, default, default]
    assert faiss.omp_get_max_threads() == default  # restored
    assert faiss_runtime._searching == 0


def test_a_search_while_another_thread_searches_uses_one_thread(glove_5k, faiss_threads):
    faiss = faiss_runtime._faiss()
    default = faiss.omp_get_max_threads()
    index = dxp.Madlib(glove_5k, 10.0).neighbor_index
    with another_search_in_flight():
        index.search_raw(queries(glove_5k, 300))  # a large batch, but not alone
    index.search_raw(queries(glove_5k, 300))  # alone again: the whole team
    assert faiss_threads == [1, default]
    assert faiss.omp_get_max_threads() == default
    assert faiss_runtime._searching == 0


def test_the_setting_is_restored_when_the_search_fails(glove_5k, monkeypatch):
    faiss = faiss_runtime._faiss()
    default = faiss.omp_get_max_threads()
    index = dxp.Madlib(glove_5k, 10.0).neighbor_index

    def failing(*args, **kwargs):
        raise RuntimeError("faiss failed")

    monkeypatch.setattr(faiss, "knn", failing)
    with pytest.raises(RuntimeError, match="faiss failed"):
        index.search_raw(queries(glove_5k, 8))
    assert faiss.omp_get_max_threads() == default
    assert faiss_runtime._searching == 0


def test_threads_sharing_an_index_decode_as_one_thread_does(glove_5k):
    """The same float64-nearest rows from 4 threads at once as from one (small batches)."""
    index = dxp.Madlib(glove_5k, 10.0).neighbor_index
    batches = [queries(glove_5k, n) + 0.3 * i for i, n in enumerate((3, 8, 40, 130))]
    expected = [index.search_raw(batch) for batch in batches]
    results: list[list[np.ndarray]] = [[] for _ in batches]

    def run(i):
        for _ in range(20):
            results[i].append(index.search_raw(batches[i]))

    workers = [threading.Thread(target=run, args=(i,)) for i in range(len(batches))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    for i, runs in enumerate(results):
        assert len(runs) == 20 and all(np.array_equal(r, expected[i]) for r in runs)
    assert faiss_runtime._searching == 0


# Python 3.12+ warns that forking a multi-threaded process may deadlock: what is tested here.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_starts_with_no_search_in_flight(glove_5k):
    """A fork while another thread searched left the child's count (and maybe its lock)
    as the parent's: every search in the child would have counted as crowded, or hung."""
    import multiprocessing

    index = dxp.Madlib(glove_5k, 10.0).neighbor_index
    fork = multiprocessing.get_context("fork")
    # A search in flight and the count's lock held at the fork (the pool forks its worker).
    with another_search_in_flight(), faiss_runtime._searching_lock, fork.Pool(1) as pool:
        job = pool.apply_async(_search_in_child, (index, queries(glove_5k, 8)))
        count, found = job.get(timeout=60)  # the inherited held lock hung here
    assert count == 0
    assert np.array_equal(found, index.search_raw(queries(glove_5k, 8)))


def _search_in_child(index, batch):
    count = faiss_runtime._searching
    return count, index.search_raw(batch)
