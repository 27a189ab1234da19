"""Nearest-neighbour decoding over the public vocabulary (PRIVACY.md 2-4).

Decoding maps a noisy vector to a vocabulary row and is a pure function of that vector
(plus fresh, input-independent randomness for exact ties): it never sees the input word,
never excludes it, never falls back to it.

* ``"exact"`` (default): exact L2 search as faiss's brute-force inner product
  (``faiss.knn``) over rows ``[y, -||y||^2/2]`` with queries ``[q, 1]`` (the largest score
  is the nearest row). faiss's ``IndexFlatL2`` adds ``||q||^2`` in float32, which swamps
  the differences between rows when the noise is huge (small epsilon): at epsilon = 1e-4 on
  GloVe it decoded 2% of queries to a farther word, at 1e-6 88%; the score form agreed with
  float64 search on all of them.
* ``"hnsw"``: faiss ``IndexHNSWFlat`` -- approximate, faster on large vocabularies; its
  misses cost utility, not privacy (the graph is built from the public table only).
  Measure its recall with :func:`recall_at_1`. Queries the graph cannot answer are searched
  exactly.

Ties: rows with identical vectors are exact ties for every query; the search returns one of
them uniformly at random. Ties between distinct vectors have probability zero under
continuous noise and resolve in faiss's fixed index order.
"""

from __future__ import annotations

import functools
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import check_choice, check_int

if TYPE_CHECKING:
    from .embeddings.table import EmbeddingTable

INDEX_METHODS = ("exact", "hnsw")
#: Parameters each index method accepts.
INDEX_PARAMS: dict[str, tuple[str, ...]] = {
    "exact": (),
    "hnsw": ("m", "ef_construction", "ef_search", "disk_cache"),
}


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


@functools.cache
def _faiss() -> Any:
    """faiss, imported on first use; forked child processes search single-threaded.

    GNU OpenMP is not fork-safe: a forked child that enters an OpenMP region its parent had
    already used waits forever for the parent's worker threads (seen with spaCy's
    ``nlp.pipe(n_process=2)``). Forked workers are parallel already, so one thread each.
    """
    import faiss

    os.register_at_fork(after_in_child=functools.partial(faiss.omp_set_num_threads, 1))
    return faiss


class NeighborIndex:
    """Nearest vocabulary row of each query vector."""

    method = "exact"

    def __init__(self, table: EmbeddingTable) -> None:
        faiss = _faiss()
        self.dim = table.dim
        self.size = len(table)
        self._vectors = table.vectors
        self._data = self._build(faiss, table.vectors)
        self._ties = TieGroups.find(table.vectors)

    def _build(self, faiss: Any, vectors: np.ndarray) -> Any:
        """The rows ``[y - c, -||y - c||^2 / 2]`` (float32) for the table's centroid ``c``,
        searched in place by ``faiss.knn``: no index holds a second copy, and no temporary is
        as large as the table. Centring keeps the scores small when the whole table sits far
        from the origin (float32 would round away the differences between rows)."""
        self._center = _mean_row(vectors)
        augmented = np.empty((len(vectors), self.dim + 1), dtype=np.float32)
        for start in range(0, len(vectors), 8192):
            rows = vectors[start : start + 8192].astype(np.float64) - self._center
            augmented[start : start + 8192, : self.dim] = rows
            augmented[start : start + 8192, self.dim] = -0.5 * np.einsum("ij,ij->i", rows, rows)
        return augmented

    def _nearest(self, queries: np.ndarray) -> np.ndarray:
        """Row of the largest score ``(q - c).(y - c) - ||y - c||^2 / 2`` per query."""
        faiss = _faiss()
        augmented = np.ones((len(queries), self.dim + 1), dtype=np.float32)
        augmented[:, : self.dim] = queries - self._center
        _, ids = faiss.knn(augmented, self._data, 1, metric=faiss.METRIC_INNER_PRODUCT)
        return np.asarray(ids[:, 0], dtype=np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes the search structure holds beside the table's own vectors."""
        return int(self._data.nbytes)

    @property
    def params(self) -> dict[str, int]:
        """The index's tunable parameters."""
        return {}

    def search_raw(self, queries: np.ndarray) -> np.ndarray:
        """faiss's nearest row per query, without tie-breaking (-1 where it found none)."""
        queries = np.asarray(queries)  # float64 noisy vectors are centred before float32
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise ValueError(f"queries must have shape (n, {self.dim})")
        if len(queries) == 0:
            return np.empty(0, dtype=np.int64)
        return self._nearest(queries)

    def search(self, queries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Nearest row of each query (ties between identical rows broken with ``rng``)."""
        ids = self.search_raw(queries)
        missing = ids < 0
        if missing.any():  # never the input: search those queries exactly
            ids[missing] = exact_search(self._vectors, queries[missing])
        if self._ties is not None:
            ids = self._ties.break_ties(ids, rng)
        return ids


class HNSWIndex(NeighborIndex):
    """faiss HNSW graph (approximate). ``m``: links per node; ``ef_*``: beam widths.

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
        super().__init__(table)

    def _cache_path(self) -> Path | None:
        """The cached graph's file, or None when the cache folder cannot be made."""
        from ._cache import cache_dir

        name = f"hnsw-{self._fingerprint[:32]}-m{self._m}-efc{self._ef_construction}.faiss"
        try:
            return cache_dir("indexes") / name
        except OSError:
            return None

    def _build(self, faiss: Any, vectors: np.ndarray) -> Any:
        """Build the graph, or read the copy a previous run stored (public data only).

        The cache is an optimisation: an unreadable, truncated or foreign file is rebuilt
        (a stored graph is used only if it holds these very vectors), and a folder that
        cannot be written leaves the graph in memory.
        """
        path = self._cache_path() if self._disk_cache else None
        index = self._read_cached(faiss, path, vectors) if path is not None else None
        if index is None:
            index = faiss.IndexHNSWFlat(vectors.shape[1], self._m)
            index.hnsw.efConstruction = self._ef_construction
            index.add(vectors)
            if path is not None:
                partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
                try:
                    faiss.write_index(index, str(partial))
                    os.replace(partial, path)
                except (OSError, RuntimeError):  # read-only or full: keep it in memory
                    pass
                finally:
                    partial.unlink(missing_ok=True)
        index.hnsw.efSearch = self._ef_search
        return index

    @staticmethod
    def _read_cached(faiss: Any, path: Path, vectors: np.ndarray) -> Any:
        """The stored graph if it is an HNSW graph over exactly ``vectors``, else None."""
        if not path.exists():
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

    def _nearest(self, queries: np.ndarray) -> np.ndarray:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        _, ids = self._data.search(queries, 1)  # an L2 graph: approximate, misses cost utility
        return np.asarray(ids[:, 0], dtype=np.int64)

    @property
    def nbytes(self) -> int:
        return int(_faiss().serialize_index(self._data).nbytes)

    @property
    def params(self) -> dict[str, int]:
        return {
            "m": self._m,
            "ef_construction": self._ef_construction,
            "ef_search": self._ef_search,
        }


def _mean_row(vectors: np.ndarray) -> np.ndarray:
    """The float64 mean of the rows (summed in blocks: no float64 copy of the table)."""
    total = np.zeros(vectors.shape[1], dtype=np.float64)
    for start in range(0, len(vectors), 8192):
        total += vectors[start : start + 8192].sum(axis=0, dtype=np.float64)
    return total / max(len(vectors), 1)


def exact_search(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact nearest row by float64 brute force (small query batches only)."""
    data = vectors.astype(np.float64)
    sq = np.einsum("ij,ij->i", data, data)
    out = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), 256):
        block = np.asarray(queries[start : start + 256], dtype=np.float64)
        out[start : start + 256] = np.argmin(sq[None, :] - 2.0 * block @ data.T, axis=1)
    return out


def check_index_params(method: str, params: dict[str, Any]) -> None:
    """Raise ValueError for an unknown method or a parameter it does not take."""
    check_choice(method, "index", INDEX_METHODS)
    unknown = sorted(set(params) - set(INDEX_PARAMS[method]))
    if unknown:
        raise ValueError(f"index {method!r} does not take parameter(s) {unknown}")
    if method == "hnsw":  # values too, when the mechanism is made, not at its first use
        _check_hnsw_values(**params)


def _check_hnsw_values(**values: Any) -> None:
    minimum = {"m": 2, "ef_construction": 1, "ef_search": 1}
    for name, value in values.items():
        if name == "disk_cache":
            if not isinstance(value, bool | np.bool_):
                raise TypeError("disk_cache must be True or False")
        else:
            check_int(value, name, minimum=minimum[name])


def get_index(table: EmbeddingTable, method: str = "exact", **params: Any) -> NeighborIndex:
    """The index of ``table`` for ``method``, built once and cached on the table."""
    check_index_params(method, params)
    key = ("neighbor-index", method, tuple(sorted(params.items())))
    index = table.cache.get(key)
    if index is None:
        index = NeighborIndex(table) if method == "exact" else HNSWIndex(table, **params)
        table.cache[key] = index
    assert isinstance(index, NeighborIndex)
    return index


def recall_at_1(approximate: NeighborIndex, exact: NeighborIndex, queries: np.ndarray) -> float:
    """Share of queries whose approximate nearest row equals the exact one."""
    if len(queries) == 0:
        raise ValueError("recall needs at least one query")
    found = approximate.search_raw(queries)
    truth = exact.search_raw(queries)
    return float(np.mean(found == truth))


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
            limits, _, found = self._faiss.range_search(queries[rows], radius + 1)
            limits = limits.astype(np.int64)
            out[rows] = found[limits[:-1] + rng.integers(0, np.diff(limits))]
        return out


def get_binary_index(packed: np.ndarray, cache: dict[Any, Any], key: Any) -> BinaryIndex:
    """A :class:`BinaryIndex` over ``packed``, built once and kept in ``cache[key]``."""
    index = cache.get(("binary-index", key))
    if index is None:
        index = BinaryIndex(packed)
        cache[("binary-index", key)] = index
    assert isinstance(index, BinaryIndex)
    return index
