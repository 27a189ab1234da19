"""Nearest-neighbour decoding over the public vocabulary (PRIVACY.md 2-4).

Decoding maps a noisy vector to a vocabulary row and is a pure function of that vector
(plus fresh, input-independent randomness for exact ties): it never sees the input word,
never excludes it, never falls back to it.

* ``"exact"`` (default): the row ``y`` with the smallest float64 squared distance
  ``sum_i (q_i - y_i)^2`` (:func:`squared_distances`, summed over the coordinates in order,
  so the value of a pair never depends on the other queries), the lowest row on ties. faiss
  finds :data:`CANDIDATES` candidates in float32 -- a brute-force inner product
  (``faiss.knn``) over rows ``[y - c, -||y - c||^2/2]`` with queries ``[q - c, 1]``, ``c`` the
  table's mean row -- and they are re-ranked in float64. float32 alone decoded a query just
  on one side of a bisector to the farther word (130 of 600 such queries on GloVe 20k, and
  ``(0.5 + 1e-9, 0)`` between ``(0, 0)`` and ``(1, 0)``). A query whose float32 scores of the
  best and the last candidate lie within twice a rounding bound of each other (the float64
  nearest row might not be among the candidates) is searched exactly in float64
  (:func:`exact_search`, a few ms per query): on GloVe 100k, 1 Madlib query in 200,000 at
  epsilon = 5 (commit 8d5b097), none in 20,000 at each epsilon from 1e-12 to 200, so the
  exact index runs at the speed it had in float32 alone. The result is the float64 nearest
  row whichever path answers, and the same bits whatever other queries share the batch. The index
  refuses a table with a row farther than ``1e18`` from its mean (squared norms that do not
  fit in float32). ``faiss.IndexFlatL2`` adds ``||q||^2`` in float32, which swamps the
  differences between rows when the noise is huge (small epsilon: at epsilon = 1e-6 it
  decoded 88% of GloVe queries to a farther word); the centred score form does not.
* ``"hnsw"``: faiss ``IndexHNSWFlat`` -- approximate, faster on large vocabularies; its
  misses cost utility, not privacy (the graph is built from the public table only). The
  graph's :data:`CANDIDATES` best rows (at most ``ef_search``) are re-ranked in float64.
  Measure its recall with :func:`recall_at_1`: it falls with epsilon and with the
  vocabulary size. GloVe with the defaults, Madlib queries of uniformly drawn words, recall@1
  at epsilon = 1 / 5 / 10 / 20: 20k words 0.80 / 0.96 / 0.99 / 1.00; 100k 0.49 / 0.84 /
  0.96 / 0.995; 400k 0.33 / 0.62 / 0.81 / 0.95 (frequent words, as in real text, fare
  better: 0.98-0.99 at epsilon = 10 on all three; benchmarks/results/hnsw_recall.md).
  Queries the graph cannot answer are searched exactly.

Ties: rows with identical vectors are exact ties for every query; the search returns one of
them uniformly at random (the exact index holds one row of each group). Rows at exactly
the same float64 distance from a query but with different vectors resolve to the lowest
row (a fixed index order, PRIVACY.md 2).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import numpy as np

from ._exact_search import (
    _U64,
    Neighbors,
    _check_finite,
    _checked_k,
    _distances_of,
    _exact_k_rows,
    _rerank,
    _rerank_ties,
    _top_k,
    exact_k_nearest,
    exact_search,
    squared_distances,
)
from ._faiss_runtime import BLAS_THRESHOLD, _faiss, _search_threads
from ._locks import key_lock
from ._validation import check_choice, check_int

__all__ = [
    "BLAS_THRESHOLD",
    "HNSW_LIMITS",
    "INDEX_METHODS",
    "INDEX_PARAMS",
    "BinaryIndex",
    "HNSWIndex",
    "IndexMethod",
    "NeighborIndex",
    "Neighbors",
    "TieGroups",
    "exact_k_nearest",
    "exact_search",
    "get_binary_index",
    "get_index",
    "recall_at_1",
    "recall_at_k",
    "squared_distances",
]

if TYPE_CHECKING:
    from .embeddings.table import EmbeddingTable

#: The nearest-neighbour searches a mechanism may use.
IndexMethod = Literal["exact", "hnsw"]
INDEX_METHODS: tuple[str, ...] = get_args(IndexMethod)
#: Parameters each index method accepts.
INDEX_PARAMS: dict[str, tuple[str, ...]] = {
    "exact": (),
    "hnsw": ("m", "ef_construction", "ef_search", "disk_cache"),
}
#: Bounds of the HNSW parameters: larger values only exhaust memory or time (``m`` links
#: per node cost ``8 m`` bytes per row and layer; beams wider than the table scan it all).
HNSW_LIMITS: dict[str, tuple[int, int]] = {
    "m": (2, 512),
    "ef_construction": (1, 100_000),
    "ef_search": (1, 100_000),
}
#: Exact searches of fewer queries than this (from 2 up) run on one OpenMP thread: faiss's
#: team costs more than it saves there (3-4.5x slower for 8 queries, 1.6-2.9x for 32, about
#: equal at 128 on 2 cores; benchmarks/bench_search_threads.py).
SMALL_BATCH = 128

#: Rows faiss proposes per query (float32), re-ranked in float64.
CANDIDATES = 4
#: The exact index refuses rows farther than this from the table's mean: their squared
#: norms (about 1e36) must fit in float32 (3.4e38) with room for the scores.
MAX_ROW_RADIUS = 1e18
#: Below this spread (every row this close to the table's mean) float64 distances from a
#: noisy point tie, and every output is the lowest row: warned about.
MIN_ROW_RADIUS = 1e-10
_U32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff


#: Expanded candidates per query past which a table's identical rows are searched exactly
#: instead (a group of thousands of identical rows, such as zero vectors, would otherwise
#: list all of them for every query).
MAX_TWIN_CANDIDATES = 256


@dataclass(frozen=True)
class TieGroups:
    """Rows with identical vectors: ``members[offsets[g]:offsets[g+1]]`` form group g."""

    group_of_row: np.ndarray  # int64, -1 for rows without a twin
    members: np.ndarray
    offsets: np.ndarray

    @classmethod
    def find(cls, vectors: np.ndarray) -> TieGroups | None:
        """Groups of identical rows, or None when every row is unique (the usual case).

        Rows are hashed in small chunks (no copy of the table), candidates with equal hashes
        are then compared exactly (``-0.0 == 0.0``).
        """
        hashes = _row_hashes(vectors)
        order = np.argsort(hashes, kind="stable")
        ordered = hashes[order]
        boundary = np.r_[True, ordered[1:] != ordered[:-1], True]
        starts = np.flatnonzero(boundary)
        runs = [(a, b) for a, b in itertools.pairwise(starts) if b - a > 1]
        groups: list[np.ndarray] = []
        for a, b in runs:
            rows = np.sort(order[a:b])
            _, label = np.unique(vectors[rows] + np.float32(0.0), axis=0, return_inverse=True)
            for value in np.unique(label):
                members = rows[label.ravel() == value]
                if len(members) > 1:
                    groups.append(members)
        if not groups:
            return None
        offsets = np.r_[0, np.cumsum([len(g) for g in groups])].astype(np.int64)
        members = np.concatenate(groups).astype(np.int64)
        group_of_row = np.full(len(vectors), -1, dtype=np.int64)
        group_of_row[members] = np.repeat(np.arange(len(groups)), np.diff(offsets))
        return cls(group_of_row, members, offsets)

    def break_ties(self, ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Replace each id that has twins by a uniformly random member of its group."""
        groups = self.group_of_row[ids]
        tied = groups >= 0
        if tied.any():
            group = groups[tied]
            start = self.offsets[group]
            size = self.offsets[group + 1] - start
            pick = start + np.floor(rng.random(len(group)) * size).astype(np.int64)
            ids = ids.copy()
            ids[tied] = self.members[np.minimum(pick, self.offsets[group + 1] - 1)]
        return ids


#: Fixed public odd multipliers of the row hash (any fixed values work).
_HASH_MULTIPLIERS = np.random.default_rng(0x7E5).integers(1, 2**63, 4096, dtype=np.uint64) | 1


def _row_hashes(vectors: np.ndarray, chunk: int = 8192) -> np.ndarray:
    """A 64-bit hash of each float32 row's bits (equal rows -> equal hashes; -0.0 as 0.0)."""
    rows, dim = vectors.shape
    bits = np.ascontiguousarray(vectors, dtype=np.float32).view(np.uint32)
    multipliers = np.resize(_HASH_MULTIPLIERS, dim)
    multipliers = multipliers + np.arange(dim, dtype=np.uint64) * np.uint64(2)  # stays odd
    hashes = np.empty(rows, dtype=np.uint64)
    for start in range(0, rows, chunk):
        block = bits[start : start + chunk].astype(np.uint64)
        block[block == 0x80000000] = 0  # -0.0
        block *= multipliers
        hashes[start : start + chunk] = block.sum(axis=1, dtype=np.uint64)
    return hashes


class NeighborIndex:
    """Float64-nearest vocabulary row of each query vector (see the module docstring)."""

    method = "exact"

    def __init__(self, table: EmbeddingTable) -> None:
        faiss = _faiss()
        self.dim = table.dim
        self.size = len(table)
        self._vectors = table.vectors
        self._ties = TieGroups.find(table.vectors)
        self._data = self._build(faiss, table.vectors)

    def _build(self, faiss: Any, vectors: np.ndarray) -> Any:
        """The rows ``[y - c, -||y - c||^2 / 2]`` (float32) for the table's centroid ``c``,
        searched in place by ``faiss.knn``: no index holds a second copy, and no temporary is
        as large as the table. Centring keeps the scores small when the whole table sits far
        from the origin (float32 would round away the differences between rows).

        Of a group of identical rows only the first is kept (the search returns the group's
        first row, and :meth:`search` draws uniformly among the group): the candidates are
        distinct vectors, so twins never crowd out the float64 nearest row."""
        self._center = _mean_row(vectors)
        rows: np.ndarray | None = None
        if self._ties is not None:
            keep = np.ones(len(vectors), dtype=bool)
            keep[self._ties.members] = False
            keep[self._ties.members[self._ties.offsets[:-1]]] = True
            rows = np.flatnonzero(keep)
        self._rows = rows
        count = len(vectors) if rows is None else len(rows)
        augmented = np.empty((count, self.dim + 1), dtype=np.float32)
        farthest = 0.0
        for start in range(0, count, 8192):
            chunk = (
                vectors[start : start + 8192]
                if rows is None
                else vectors[rows[start : start + 8192]]
            )
            centred = chunk.astype(np.float64) - self._center
            squared = np.einsum("ij,ij->i", centred, centred)
            farthest = max(farthest, float(squared.max(initial=0.0)))
            _check_spread(farthest, self.method)
            augmented[start : start + 8192, : self.dim] = centred
            augmented[start : start + 8192, self.dim] = -0.5 * squared
        self._radius = math.sqrt(farthest)  # max ||y - c|| over the rows
        _warn_if_collapsed(farthest, count)
        return augmented

    def _nearest(self, queries: np.ndarray) -> np.ndarray:
        """Float64-nearest row of each query: faiss's float32 candidates re-ranked in float64,
        and an exact float64 search where the candidates may miss it."""
        k = min(CANDIDATES, len(self._data))
        scores, found, unsure, bound = self._faiss_candidates(queries, k)
        if k < len(self._data):
            # If the float64 nearest row is not among the k candidates, its float32 score is
            # at most the k-th's, so the best and the k-th candidates are within 2B: those
            # queries are searched exactly.
            with np.errstate(invalid="ignore"):
                unsure |= ~(scores[:, 0] - scores[:, k - 1] > 2.0 * bound)
        if self._rows is not None:
            found = np.where(found < 0, -1, self._rows[np.maximum(found, 0)])
        # When every candidate is within float64 rounding of the best (a table whose spread is
        # below the float64 resolution of the query), the float64 nearest row, or the lowest
        # tied one, may be none of them.
        ids, all_tied = _rerank_ties(self._vectors, queries, found, self._rounding(queries))
        if k < len(self._data):
            unsure |= all_tied
        if unsure.any():
            ids[unsure] = exact_search(self._vectors, queries[unsure])
        return ids

    def _rounding(self, queries: np.ndarray) -> np.ndarray:
        """Float64 distances carry (d + 2) u64 (||q|| + ||y||)^2 of rounding: 8x that bound
        (exact_search's tolerance), for every row of the table."""
        largest = float(np.linalg.norm(self._center)) + self._radius
        norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
        return 8.0 * (self.dim + 2) * _U64 * (norms + largest) ** 2

    def _faiss_candidates(
        self, queries: np.ndarray, wanted: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """faiss's ``wanted`` best positions of each query in float32 and their scores; the
        queries whose candidates are missing or not finite (beyond float32); and B, 8x the
        bound ``(d + 3) u32 (||q - c|| R + R^2 / 2)`` (R = max ||y - c||) on the difference
        between a row's float32 score and its exact score."""
        faiss = _faiss()
        centred = queries - self._center
        augmented = np.ones((len(queries), self.dim + 1), dtype=np.float32)
        with np.errstate(over="ignore"):  # beyond float32: non-finite scores, searched exactly
            augmented[:, : self.dim] = centred
        with _search_threads(one_thread=1 < len(queries) < SMALL_BATCH):
            scores, found = faiss.knn(
                augmented, self._data, wanted, metric=faiss.METRIC_INNER_PRODUCT
            )
        found = np.asarray(found, dtype=np.int64)
        unsure = (found < 0).any(axis=1) | ~np.isfinite(scores).all(axis=1)
        norm = np.sqrt(np.einsum("ij,ij->i", centred, centred))
        radius = self._radius
        bound = 8.0 * (self.dim + 3) * _U32 * (norm * radius + radius * radius / 2.0)
        return scores, found, unsure, bound

    @property
    def nbytes(self) -> int:
        """Bytes the search structure holds beside the table's own vectors."""
        return int(self._data.nbytes)

    @property
    def params(self) -> dict[str, int]:
        """The index's tunable parameters."""
        return {}

    def search_raw(self, queries: np.ndarray) -> np.ndarray:
        """Nearest row per query, without tie-breaking between identical rows (the first of
        a group; -1 where an approximate index found none)."""
        queries = self._checked(queries)
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        return self._nearest(queries)

    def _checked(self, queries: np.ndarray) -> np.ndarray:
        queries = np.asarray(queries, dtype=np.float64)  # float64 noisy vectors stay float64
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (n, {self.dim})")
        _check_finite(queries)
        return queries

    def k_nearest(self, queries: np.ndarray, k: int) -> Neighbors:
        """The ``k`` rows nearest each query, nearest first, and their float64 squared
        distances (:func:`squared_distances`): :class:`Neighbors` ``(ids,
        squared_distances)``, each ``(n, k)``.

        For mechanisms that choose among the nearest words of a noisy vector (a
        Vickrey-style plugin: take ``np.sqrt`` for Euclidean distances); decoding to one
        word is :meth:`search`. The exact index gives the ``k`` smallest distances exactly,
        the lower row first on equal ones, as :func:`exact_k_nearest` does: identical rows
        are listed one by one, lower first (where the mechanism wants one word per vector,
        ask for more and draw among twins with the release's generator). faiss's float32
        candidates serve where they provably hold the answer. At a tiny epsilon rows tie to
        within rounding, and only :func:`squared_distances` reproduces this order (a numpy
        ``sum`` or a matrix product may not). An approximate index re-ranks its candidates
        in float64 and misses rows more often than for one word (GloVe 20k, default HNSW:
        the top 2 differed from the exact top 2 for 31% of queries at epsilon 1, 9% at 5,
        1.4% at 10)."""
        queries = self._checked(queries)
        k = _checked_k(k, self.size)
        if len(queries) == 0:
            return Neighbors(np.empty((0, k), dtype=np.int64), np.empty((0, k), dtype=np.float64))
        found, unsure, tolerance = self._k_candidates(queries, k)
        ids, spread = _top_k(self._vectors, queries, found, k)
        unsure |= (ids < 0).any(axis=1)
        if tolerance is not None:  # rows beyond the candidates may win by float64 rounding
            unsure |= ~(spread > tolerance)
        if unsure.any():
            ids[unsure] = _exact_k_rows(self._vectors, queries[unsure], k)
        return Neighbors(ids, _distances_of(self._vectors, queries, ids))

    def _k_candidates(
        self, queries: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """faiss's float32 candidates for :meth:`k_nearest`, the queries they may not answer,
        and the float64 rounding a candidate's distance must clear (None: nothing to clear).
        ``k + CANDIDATES - 1`` rows, sure when the k-th's score is more than twice the
        float32 bound of :meth:`_nearest` above the last one's (a row outside them is then
        farther than the k-th) and, in float64, the last candidate is farther than the k-th
        by more than :meth:`_rounding` (no row outside them can win by rounding). A table
        with identical rows: the index holds one row of each group, and each candidate
        stands for its whole group (up to :data:`MAX_TWIN_CANDIDATES` rows per query; more
        are searched exactly); the k-th row then belongs to a candidate among the first k,
        so the same certificate holds."""
        wanted = min(k + CANDIDATES - 1, len(self._data))
        scores, found, unsure, bound = self._faiss_candidates(queries, wanted)
        if self._rows is not None:
            expanded = self._with_twins(found)
            if expanded is None:
                none = np.full((len(queries), k), -1, dtype=np.int64)
                return none, np.ones(len(queries), dtype=bool), None
            found = expanded
        if wanted == len(self._data):
            return found, unsure, None  # every row is a candidate
        with np.errstate(invalid="ignore"):
            unsure |= ~(scores[:, k - 1] - scores[:, wanted - 1] > 2.0 * bound)
        return found, unsure, self._rounding(queries)

    def _with_twins(self, found: np.ndarray) -> np.ndarray | None:
        """Candidates (positions in the index) as table rows, each followed by the other
        rows identical to it (-1 padding); None past :data:`MAX_TWIN_CANDIDATES` per query."""
        assert self._rows is not None and self._ties is not None
        ties = self._ties
        rows = np.where(found < 0, -1, self._rows[np.maximum(found, 0)])
        groups = np.where(rows < 0, -1, ties.group_of_row[np.maximum(rows, 0)])
        safe = np.maximum(groups, 0)
        sizes = np.where(groups >= 0, ties.offsets[safe + 1] - ties.offsets[safe], 1)
        per_query = sizes.sum(axis=1)
        if per_query.max() > MAX_TWIN_CANDIDATES:
            return None
        flat_sizes = sizes.ravel()
        first = np.repeat(np.cumsum(flat_sizes) - flat_sizes, flat_sizes)
        within = np.arange(int(flat_sizes.sum())) - first
        group = np.repeat(groups.ravel(), flat_sizes)
        member = ties.members[ties.offsets[np.maximum(group, 0)] + within]
        expanded = np.where(group >= 0, member, np.repeat(rows.ravel(), flat_sizes))
        owner = np.repeat(np.arange(len(found)), per_query)
        column = np.arange(len(owner)) - np.repeat(np.cumsum(per_query) - per_query, per_query)
        out = np.full((len(found), int(per_query.max())), -1, dtype=np.int64)
        out[owner, column] = expanded
        return out

    def search(self, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Nearest row of each query (ties between identical rows broken with ``rng``)."""
        ids = self.search_raw(queries)
        missing = ids < 0
        if missing.any():  # never the input: search those queries exactly
            ids[missing] = exact_search(self._vectors, np.asarray(queries)[missing])
        if self._ties is not None:
            ids = self._ties.break_ties(ids, rng)
        return ids


class HNSWIndex(NeighborIndex):
    """faiss HNSW graph (approximate). ``m``: links per node (2-512); ``ef_construction``,
    ``ef_search``: beam widths (1-100,000). The graph's best :data:`CANDIDATES` rows (at most
    ``ef_search``) are re-ranked in float64.

    Building the graph takes tens of seconds on 400k words, so it is stored in the cache
    folder (keyed by the table's fingerprint and the build parameters) and read back on
    later runs; ``disk_cache=False`` disables that.
    """

    method = "hnsw"

    def __init__(
        self,
        table: EmbeddingTable,
        *,
        m: int = 32,
        ef_construction: int = 40,
        ef_search: int = 64,
        disk_cache: bool = True,
    ) -> None:
        _check_hnsw_values(m=m, ef_construction=ef_construction, ef_search=ef_search)
        self._m = int(m)
        self._ef_construction = int(ef_construction)
        self._ef_search = int(ef_search)
        self._fingerprint = table.fingerprint
        _check_hnsw_values(disk_cache=disk_cache)
        self._disk_cache = bool(disk_cache)
        self._graphs = table.cache  # one graph per (m, ef_construction), whatever ef_search
        super().__init__(table)

    def _cache_path(self) -> Path | None:
        """The cached graph's file, or None when the cache folder cannot be made or is not
        this user's alone (:func:`dxp_plugins._cache.trusted`)."""
        from ._cache import cache_dir, trusted

        name = f"hnsw-{self._fingerprint[:32]}-m{self._m}-efc{self._ef_construction}.faiss"
        try:
            folder = cache_dir("indexes")
        except OSError:
            return None
        return folder / name if trusted(folder) else None

    def _build(self, faiss: Any, vectors: np.ndarray) -> Any:
        """The table's graph for ``m``, ``ef_construction`` and ``disk_cache``, shared by
        the indexes of every ``ef_search`` (each passes its own to the search): a second
        ``ef_search`` value would otherwise cost a second graph, +179 MiB at 400k words."""
        # disk_cache in the key: an index that asked for no cache must not be served a
        # graph read from it, nor keep one that is to be stored from being stored.
        key = ("hnsw-graph", self._m, self._ef_construction, self._disk_cache)
        return _build_once(self._graphs, key, lambda: self._build_graph(faiss, vectors))

    def _build_graph(self, faiss: Any, vectors: np.ndarray) -> Any:
        """Build the graph, or read the copy a previous run stored (public data only).

        The cache is an optimisation: an unreadable, truncated or foreign file is rebuilt
        (a stored graph is used only if it holds these very vectors), and a folder that
        cannot be written leaves the graph in memory.
        """
        center = _mean_row(vectors)
        farthest = 0.0
        for start in range(0, len(vectors), 8192):  # float32 distances must stay finite
            centred = vectors[start : start + 8192].astype(np.float64) - center
            farthest = max(farthest, float(np.einsum("ij,ij->i", centred, centred).max()))
            _check_spread(farthest, self.method)
        _warn_if_collapsed(farthest, len(vectors))
        path = self._cache_path() if self._disk_cache else None
        index = self._read_cached(faiss, path, vectors) if path is not None else None
        if index is None:
            index = faiss.IndexHNSWFlat(vectors.shape[1], self._m)
            index.hnsw.efConstruction = self._ef_construction
            index.add(vectors)
            if path is not None:
                from ._cache import partial_path, remove_stale_partials, write_private

                remove_stale_partials(path.parent)  # those of killed writers (~470 MB each)
                partial = partial_path(path)  # one per writer (threads share the pid)
                try:
                    os.close(write_private(partial))  # 0644 whatever the umask; faiss fills it
                    faiss.write_index(index, str(partial))
                    os.replace(partial, path)
                except (OSError, RuntimeError):  # read-only or full: keep it in memory
                    pass
                finally:
                    partial.unlink(missing_ok=True)
        return index

    @staticmethod
    def _read_cached(faiss: Any, path: Path, vectors: np.ndarray) -> Any:
        """The stored graph if it is an HNSW graph over exactly ``vectors``, else None. A
        file another user wrote, or could rewrite, is not read: the check below covers the
        vectors, not the graph's links (a rewritten graph can decode every query to one
        word, and links out of range crash faiss 1.9)."""
        from ._cache import trusted

        if not path.exists() or not trusted(path):
            return None
        try:
            index = faiss.read_index(str(path))
        except (OSError, RuntimeError):
            return None
        if not hasattr(index, "hnsw") or (index.ntotal, index.d) != vectors.shape:
            return None  # e.g. a flat index, or a graph of another size
        storage = faiss.downcast_index(index.storage)
        if not hasattr(storage, "get_xb"):  # not a flat store of the vectors themselves
            return None
        stored = faiss.rev_swig_ptr(storage.get_xb(), index.ntotal * index.d)  # a view
        if not np.array_equal(stored.reshape(index.ntotal, index.d), vectors):
            return None  # another table's graph under this name
        return index

    def _k_candidates(
        self, queries: np.ndarray, k: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The graph's ``k + CANDIDATES - 1`` best rows (approximate: nothing certified;
        queries it answers with fewer than ``k`` rows are searched exactly)."""
        found = self._graph_search(queries, min(k + CANDIDATES - 1, self.size))
        return found, np.zeros(len(queries), dtype=bool), None

    def _nearest(self, queries: np.ndarray) -> np.ndarray:
        found = self._graph_search(queries, min(CANDIDATES, self._ef_search, self.size))
        return _rerank(self._vectors, queries, found)

    def _graph_search(self, queries: np.ndarray, wanted: int) -> np.ndarray:
        """The graph's ``wanted`` best rows of each query (-1 where it found fewer), with a
        beam of at least ``ef_search`` (an L2 graph: approximate, misses cost utility)."""
        with np.errstate(over="ignore"):
            single = np.ascontiguousarray(queries, dtype=np.float32)
        beam = _faiss().SearchParametersHNSW(efSearch=max(self._ef_search, wanted))  # per call
        with _search_threads():
            _, found = self._data.search(single, wanted, params=beam)
        return np.asarray(found, dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes of the graph (links, levels, offsets) and its float32 copy of the vectors,
        read from the sizes of its arrays (serializing the graph to measure it allocated
        its size again: +360 MiB at 400k words)."""
        graph = self._data.hnsw
        arrays = (
            (graph.neighbors, 4),  # storage_idx_t
            (graph.offsets, 8),  # size_t
            (graph.levels, 4),
            (graph.assign_probas, 8),
            (graph.cum_nneighbor_per_level, 4),
            (_faiss().downcast_index(self._data.storage).codes, 1),
        )
        return sum(int(array.size()) * width for array, width in arrays)

    @property
    def params(self) -> dict[str, int]:
        return {
            "m": self._m,
            "ef_construction": self._ef_construction,
            "ef_search": self._ef_search,
        }


def _warn_if_collapsed(farthest_squared: float, rows: int) -> None:
    """Warn when every row lies within :data:`MIN_ROW_RADIUS` of the mean (two rows or
    more): the search then returns the lowest row whatever the input."""
    if rows > 1 and farthest_squared < MIN_ROW_RADIUS**2:
        from .errors import DxpWarning, warn

        warn(
            f"every row of the table lies within {MIN_ROW_RADIUS:g} of its mean: float64 "
            "distances from a noisy point cannot tell the rows apart, so every output is "
            "the same word whatever the input; rescale the vectors",
            DxpWarning,
        )


def _check_spread(farthest_squared: float, method: str) -> None:
    """Refuse a table with a row farther than :data:`MAX_ROW_RADIUS` from its mean."""
    if not farthest_squared <= MAX_ROW_RADIUS**2:
        raise ValueError(
            f"the {method} index needs every row within {MAX_ROW_RADIUS:g} of the table's mean "
            f"(squared distances must fit in float32); a row is "
            f"{math.sqrt(farthest_squared):.3g} away: rescale the vectors"
        )


def _mean_row(vectors: np.ndarray) -> np.ndarray:
    """The float64 mean of the rows (summed in blocks: no float64 copy of the table)."""
    total = np.zeros(vectors.shape[1], dtype=np.float64)
    for start in range(0, len(vectors), 8192):
        total += vectors[start : start + 8192].sum(axis=0, dtype=np.float64)
    return total / max(len(vectors), 1)


def check_index_params(method: str, params: dict[str, Any]) -> None:
    """Raise ValueError for an unknown method or a parameter it does not take."""
    check_choice(method, "index", INDEX_METHODS)
    unknown = sorted(set(params) - set(INDEX_PARAMS[method]))
    if unknown:
        raise ValueError(f"index {method!r} does not take parameter(s) {unknown}")
    if method == "hnsw":  # values too, when the mechanism is made, not at its first use
        _check_hnsw_values(**params)


def _check_hnsw_values(**values: Any) -> None:
    for name, value in values.items():
        if name == "disk_cache":
            if not isinstance(value, bool | np.bool_):
                raise TypeError("disk_cache must be True or False")
            continue
        low, high = HNSW_LIMITS[name]
        if check_int(value, name, minimum=low) > high:
            raise ValueError(f"{name} must be <= {high:,}, got {int(value):,}")


def _build_once(cache: dict[Any, Any], key: Any, build: Callable[[], Any]) -> Any:
    """``cache[key]``, built by ``build()`` once even when several threads ask at first
    (a lock per key from :func:`~dxp_plugins._locks.key_lock`, kept in the same cache:
    other keys do not wait; a lock made by another process is replaced)."""
    value = cache.get(key)
    if value is not None:
        return value
    with key_lock(cache, ("build-lock", key)):
        value = cache.get(key)
        if value is None:
            value = build()
            cache[key] = value
    return value


def _full_params(method: str, params: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Every parameter's value, defaults filled in (checked ``params``): the cache key of
    :func:`get_index`, so that ``{}`` and ``{"ef_search": 64}`` share one index.
    Indexes that differ only in ``ef_search`` share one graph (:meth:`HNSWIndex._build`);
    the graph's file name holds ``m`` and ``ef_construction``."""
    if method == "exact":
        return ()
    values = {**_hnsw_defaults(), **params}
    return tuple(
        sorted((name, bool(v) if name == "disk_cache" else int(v)) for name, v in values.items())
    )


@functools.cache
def _hnsw_defaults() -> dict[str, Any]:
    """The default of each HNSW parameter, read from :class:`HNSWIndex`'s signature."""
    parameters = inspect.signature(HNSWIndex.__init__).parameters
    return {name: parameters[name].default for name in INDEX_PARAMS["hnsw"]}


def _index_key(method: str, params: dict[str, Any]) -> tuple[Any, ...]:
    return ("neighbor-index", method, _full_params(method, params))


def get_index(table: EmbeddingTable, method: str = "exact", **params: Any) -> NeighborIndex:
    """The index of ``table`` for ``method``, built once and cached on the table."""
    check_index_params(method, params)
    key = _index_key(method, params)

    def build() -> NeighborIndex:
        return NeighborIndex(table) if method == "exact" else HNSWIndex(table, **params)

    index = _build_once(table.cache, key, build)
    assert isinstance(index, NeighborIndex)
    return index


def exact_index_nbytes(table: EmbeddingTable) -> int:
    """:attr:`NeighborIndex.nbytes` of ``table``'s exact index, without building it: one
    float32 row of ``dim + 1`` values per distinct vector (``BRR.storage`` built the index
    to read its size, +93 MiB at 400k words)."""
    built = table.cache.get(_index_key("exact", {}))
    if isinstance(built, NeighborIndex):
        return built.nbytes
    ties = TieGroups.find(table.vectors)
    twins = 0 if ties is None else len(ties.members) - (len(ties.offsets) - 1)
    return (len(table) - twins) * (table.dim + 1) * np.dtype(np.float32).itemsize


def recall_at_1(approximate: NeighborIndex, exact: NeighborIndex, queries: np.ndarray) -> float:
    """Share of queries whose approximate nearest row equals the exact one (or is an
    identical twin of it: the search draws among those anyway)."""
    if len(queries) == 0:
        raise ValueError("recall needs at least one query")
    found = approximate.search_raw(queries)
    truth = exact.search_raw(queries)
    hit = found == truth
    ties = exact._ties
    if ties is not None:
        group = ties.group_of_row[truth]
        hit |= (group >= 0) & (found >= 0) & (ties.group_of_row[np.maximum(found, 0)] == group)
    return float(np.mean(hit))


def recall_at_k(
    approximate: NeighborIndex, exact: NeighborIndex, queries: np.ndarray, k: int
) -> float:
    """Share of queries whose approximate :meth:`~NeighborIndex.k_nearest` rows are the
    exact ones, as a set (distances equal row for row where twins swap places): what a
    plugin choosing among the ``k`` nearest words loses to an approximate index (on GloVe
    20k with the default graph, the top 2 missed more often than the top 1)."""
    if len(queries) == 0:
        raise ValueError("recall needs at least one query")
    found, found_distances = approximate.k_nearest(queries, k)
    truth, true_distances = exact.k_nearest(queries, k)
    same_rows = (np.sort(found, axis=1) == np.sort(truth, axis=1)).all(axis=1)
    same_distances = (found_distances == true_distances).all(axis=1)
    return float(np.mean(same_rows | same_distances))


class BinaryIndex:
    """Exact nearest binary code in Hamming distance (faiss ``IndexBinaryFlat``), for BRR.

    Decoding is a pure function of the noisy code (PRIVACY.md 2): every code at the minimum
    distance is a tie, and one of them is returned uniformly at random with ``rng``.
    """

    #: Neighbours fetched per query to see the ties; rows whose ``TIE_K`` nearest are all
    #: tied are completed with a range search.
    TIE_K = 8

    def __init__(self, packed: np.ndarray) -> None:
        faiss = _faiss()  # registers the fork hook (a forked BRR worker would hang without)
        codes = np.ascontiguousarray(packed, dtype=np.uint8)
        if codes.ndim != 2 or codes.size == 0:
            raise ValueError("packed codes must be a non-empty (n, bytes) uint8 matrix")
        self.size = len(codes)
        self.n_bytes = int(codes.shape[1])
        index: Any = faiss.IndexBinaryFlat(self.n_bytes * 8)
        # One OpenMP region per search instead of one per 32 queries (faiss's default):
        # on a busy machine each region's barrier can cost a scheduler time slice.
        index.query_batch_size = 8192
        index.add(codes)
        self._faiss = index

    @property
    def nbytes(self) -> int:
        """Serialized size of the faiss index (its own copy of the codes plus a header)."""
        return int(_faiss().serialize_index_binary(self._faiss).nbytes)

    def _check(self, queries: np.ndarray) -> np.ndarray:
        queries = np.ascontiguousarray(queries, dtype=np.uint8)
        if queries.ndim != 2 or queries.shape[1] != self.n_bytes:
            raise ValueError(f"queries must have shape (n, {self.n_bytes})")
        return queries

    def search_raw(self, queries: np.ndarray, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """faiss's ``k`` nearest codes per query: (distances, ids), ties in faiss's order."""
        queries = self._check(queries)
        with _search_threads():
            distances, ids = self._faiss.search(queries, min(k, self.size))
        return distances.astype(np.int64), ids.astype(np.int64)

    def search(self, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Nearest code of each query, ties broken uniformly at random."""
        queries = self._check(queries)
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        distances, ids = self.search_raw(queries, self.TIE_K)
        best = distances[:, 0]
        ties = np.count_nonzero(distances == best[:, None], axis=1)
        out = ids[np.arange(len(queries)), rng.integers(0, ties)]
        overflow = np.flatnonzero((ties == distances.shape[1]) & (self.size > distances.shape[1]))
        for radius in np.unique(best[overflow]).tolist():
            rows = overflow[best[overflow] == radius]
            with _search_threads():
                limits, _, found = self._faiss.range_search(queries[rows], radius + 1)
            limits = limits.astype(np.int64)
            out[rows] = found[limits[:-1] + rng.integers(0, np.diff(limits))]
        return out


def get_binary_index(packed: np.ndarray, cache: dict[Any, Any], key: Any) -> BinaryIndex:
    """A :class:`BinaryIndex` over ``packed``, built once and kept in ``cache[key]``."""
    index = _build_once(cache, ("binary-index", key), lambda: BinaryIndex(packed))
    assert isinstance(index, BinaryIndex)
    return index
