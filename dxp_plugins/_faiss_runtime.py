"""faiss in this process: imported once, its OpenMP threads sized for the caller.

One OpenMP team per searching thread: searches from several Python threads at once, and
small batches, run on one thread each (:func:`_search_threads`); forked and spawned workers
search single-threaded (:func:`_faiss`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
from collections.abc import Iterator
from typing import Any

from ._openmp import prefer_sleeping_threads

#: Queries from which faiss's flat search uses BLAS matrix products (see :func:`_faiss`).
BLAS_THRESHOLD = 20


@functools.cache
def _faiss() -> Any:
    """faiss, imported on first use; worker processes search single-threaded.

    GNU OpenMP is not fork-safe: a forked child that enters an OpenMP region its parent had
    already used waits forever for the parent's worker threads (seen with spaCy's
    ``nlp.pipe(n_process=2)``). Workers are parallel already, so one thread each: forked
    ones by the fork hook, spawned ones (macOS, Windows; forkserver, Python 3.14's Linux
    default) here, which would otherwise each run a team as wide as the machine. That is
    every ``multiprocessing`` child (a single service process too), unless the environment
    sets ``OMP_NUM_THREADS``; ``faiss.omp_set_num_threads(n)`` after the first search
    changes it in a process.

    Flat search uses BLAS from 20 queries on (faiss 1.8's threshold; later versions raised it
    to 128,000 and compare one pair at a time below about 2,500 queries: 4-5x slower for
    a batch of 2,000 tokens at 100k-400k words). Process-wide; it changes speed only, and
    the candidates are re-ranked in float64 anyway.

    Idle OpenMP threads sleep instead of spinning (:mod:`dxp_plugins._openmp`).
    """
    prefer_sleeping_threads()
    import faiss

    if faiss.cvar.distance_compute_blas_threshold > BLAS_THRESHOLD:
        faiss.cvar.distance_compute_blas_threshold = BLAS_THRESHOLD
    if hasattr(os, "register_at_fork"):  # not on Windows
        os.register_at_fork(after_in_child=functools.partial(faiss.omp_set_num_threads, 1))
    from multiprocessing import parent_process

    if parent_process() is not None and "OMP_NUM_THREADS" not in os.environ:
        faiss.omp_set_num_threads(1)  # a multiprocessing child; OMP_NUM_THREADS overrides
    return faiss


_searching = 0  # searches in flight in this process, from any thread (_search_threads)
_searching_lock = threading.Lock()


def _reset_searching() -> None:
    """In a forked child: no search is in flight, and a lock held at the fork is not."""
    global _searching, _searching_lock
    _searching = 0
    _searching_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows (no fork there)
    os.register_at_fork(after_in_child=_reset_searching)


@contextlib.contextmanager
def _search_threads(one_thread: bool = False) -> Iterator[None]:
    """Run the faiss search inside on one OpenMP thread when ``one_thread`` or while another
    Python thread is searching. Each calling thread gets its own OpenMP team, so threads that
    share an index and search at once put several teams on the cores: 4 threads sharing an
    exact index ran 20-70x slower than one. The
    setting is the calling thread's own (an OpenMP ICV) and is restored afterwards."""
    global _searching
    faiss = _faiss()
    with _searching_lock:
        _searching += 1
        crowded = _searching > 1
    previous = faiss.omp_get_max_threads()
    narrow = (one_thread or crowded) and previous > 1
    try:
        if narrow:
            faiss.omp_set_num_threads(1)
        yield
    finally:
        if narrow:
            faiss.omp_set_num_threads(previous)
        with _searching_lock:
            _searching -= 1
