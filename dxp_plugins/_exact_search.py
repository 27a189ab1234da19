"""Exact float64 nearest-row search (PRIVACY.md 2): the answer every index is checked
against, and the kernels that re-rank an index's float32 candidates.

A pair's squared distance is summed over the coordinates in index order
(:func:`squared_distances`), so its value is the same bits whatever batch it sits in; ties
go to the lowest row.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from ._validation import check_int

#: :func:`exact_search` converts this many table rows to float64 per step.
EXACT_SLAB_ROWS = 4096
#: :func:`exact_search` handles this many queries per matrix product.
EXACT_QUERY_BLOCK = 256
#: Largest query coordinate searched: squared distances of d coordinates stay finite in
#: float64 (Madlib's noise at the smallest epsilon, 1e-12, reaches about 1e14).
MAX_QUERY = 1e150
#: Query-row pairs whose float64 distances are computed at once (8 d bytes each, twice).
PAIR_CHUNK = 16_384
_U64 = float(np.finfo(np.float64).eps) / 2  # unit roundoff


class Neighbors(NamedTuple):
    """The ``k`` rows nearest each query and their float64 squared distances (take
    ``np.sqrt`` for Euclidean ones), each ``(n, k)``, nearest first."""

    ids: np.ndarray
    squared_distances: np.ndarray


def squared_distances(queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``sum_i (q_i - y_i)^2`` in float64 for each pair ``(queries[k], rows[k])``.

    The coordinates are added one after the other in index order (elementwise operations
    only, no BLAS, no SIMD reduction), so the value of a pair is the same bits whatever
    array it sits in: the re-ranking and :func:`exact_search` agree exactly, ties included.
    """
    diff = np.asarray(queries, dtype=np.float64) - np.asarray(rows, dtype=np.float64)
    columns = np.ascontiguousarray(diff.T)
    total = columns[0] * columns[0]
    for column in columns[1:]:
        total += column * column
    return total


def _rerank(vectors: np.ndarray, queries: np.ndarray, found: np.ndarray) -> np.ndarray:
    """The candidate with the smallest :func:`squared_distances` per query (the lowest row
    on ties); ``-1`` entries are no candidates, and a query without any gets -1."""
    return _rerank_ties(vectors, queries, found)[0]


def _rerank_ties(
    vectors: np.ndarray,
    queries: np.ndarray,
    found: np.ndarray,
    tolerance: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_rerank`, and which queries have every candidate within ``tolerance`` of the
    best float64 distance (rows beyond the candidates may tie too, or win by rounding: only
    an exact search knows)."""
    valid = found >= 0
    rows = np.where(valid, found, 0)
    distances = _distances_of(vectors, queries, rows)
    distances[~valid] = np.inf
    best = distances.min(axis=1, keepdims=True)
    tied = valid & (distances == best)
    ids = np.where(tied, found, np.iinfo(np.int64).max).min(axis=1)
    ids[~tied.any(axis=1)] = -1
    spread = np.where(valid, distances, -np.inf).max(axis=1) - best[:, 0]
    return ids, valid.all(axis=1) & (spread <= tolerance)


def _top_k(
    vectors: np.ndarray, queries: np.ndarray, found: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` candidates of each query with the smallest :func:`squared_distances`, the
    lower row first on equal ones (-1 where a query has fewer than ``k``), and how much
    farther its farthest candidate is than its k-th."""
    valid = found >= 0
    rows = np.where(valid, found, 0)
    distances = np.where(valid, _distances_of(vectors, queries, rows), np.inf)
    order = np.lexsort((np.where(valid, found, np.iinfo(np.int64).max), distances), axis=-1)
    best = np.take_along_axis(found, order[:, :k], axis=1)
    ids = np.where(np.take_along_axis(valid, order[:, :k], axis=1), best, -1)
    kth = np.take_along_axis(distances, order[:, k - 1 : k], axis=1)[:, 0]
    farthest = np.where(valid, distances, -np.inf).max(axis=1)
    return ids, farthest - kth


def _check_finite(queries: np.ndarray) -> None:
    """Finite, and small enough that a squared distance stays finite in float64 (beyond
    :data:`MAX_QUERY` every distance overflowed and the search found no row: -1)."""
    if not np.isfinite(queries).all():
        raise ValueError("queries must be finite")
    if queries.size and float(np.abs(queries).max()) > MAX_QUERY:
        raise ValueError(f"queries must lie within {MAX_QUERY:g} of the origin")


def _checked_k(k: int, size: int) -> int:
    k = check_int(k, "k", minimum=1)
    if k > size:
        raise ValueError(f"k must be at most the {size} rows of the table, got {k}")
    return k


def _distances_of(vectors: np.ndarray, queries: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """:func:`squared_distances` of each query to each of its rows ``ids`` (``(n, k)``), one
    column at a time: a copy of every pair's vectors would take n k d float64 (1.8 GB for
    2,000 queries, k = 100, d = 300)."""
    distances = np.empty(ids.shape, dtype=np.float64)
    for column in range(ids.shape[1]):
        distances[:, column] = squared_distances(queries, vectors[ids[:, column]])
    return distances


def _pair_distances(
    queries: np.ndarray, rows: np.ndarray, which: np.ndarray, cols: np.ndarray
) -> np.ndarray:
    """:func:`squared_distances` of the pairs ``(queries[which[i]], rows[cols[i]])``,
    :data:`PAIR_CHUNK` at a time (at a tiny epsilon nearly every row is a candidate of
    every query, and one copy of all the pairs took gigabytes)."""
    out = np.empty(len(which), dtype=np.float64)
    for start in range(0, len(which), PAIR_CHUNK):
        part = slice(start, start + PAIR_CHUNK)
        out[part] = squared_distances(queries[which[part]], rows[cols[part]])
    return out


def exact_k_nearest(vectors: np.ndarray, queries: np.ndarray, k: int) -> Neighbors:
    """The ``k`` rows of ``vectors`` with the smallest :func:`squared_distances` to each
    query, nearest first, the lower row first on equal ones: :class:`Neighbors` ``(ids,
    squared_distances)``, :func:`exact_search` for ``k`` (what
    :meth:`NeighborIndex.k_nearest` gives on the exact index, without an index)."""
    vectors = np.asarray(vectors)
    queries = np.asarray(queries, dtype=np.float64)
    if vectors.ndim != 2 or queries.ndim != 2 or queries.shape[1] != vectors.shape[1]:
        raise ValueError(f"queries must have shape (n, {vectors.shape[-1]})")
    _check_finite(queries)
    k = _checked_k(k, len(vectors))
    ids = _exact_k_rows(vectors, queries, k)
    return Neighbors(ids, _distances_of(vectors, queries, ids))


def _exact_k_rows(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """The row ids of :func:`exact_k_nearest` (``(n, k)``; arguments checked by the caller).

    Two passes over float64 slabs: the first finds each query's ``k``-th smallest value of
    ``||y||^2 - 2 q.y``; the second recomputes with :func:`squared_distances` every row
    within the rounding tolerance of :func:`exact_search` of it, which decide."""
    count = len(queries)
    result = np.empty((count, k), dtype=np.int64)
    if count == 0:
        return result
    factor = 8.0 * (vectors.shape[1] + 2) * _U64
    for first in range(0, count, EXACT_QUERY_BLOCK):
        block = queries[first : first + EXACT_QUERY_BLOCK]
        largest = 0.0
        kept = np.full((len(block), 0), np.inf)
        for _, slab, squared in _slabs(vectors):
            largest = max(largest, float(squared.max()))
            values = squared - 2.0 * (block @ slab.T)
            kept = np.concatenate([kept, values], axis=1)
            if kept.shape[1] > k:
                kept = np.partition(kept, k - 1, axis=1)[:, :k]
        kth = kept.max(axis=1)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        ceiling = kth + factor * (norms + math.sqrt(largest)) ** 2
        which_all, rows_all, direct_all = [], [], []
        for start, slab, squared in _slabs(vectors):
            values = squared - 2.0 * (block @ slab.T)
            which, cols = np.nonzero(values <= ceiling[:, None])
            which_all.append(which)
            rows_all.append(start + cols)
            direct_all.append(_pair_distances(block, slab, which, cols))
        which, rows, direct = (np.concatenate(a) for a in (which_all, rows_all, direct_all))
        order = np.lexsort((rows, direct, which))
        which, rows = which[order], rows[order]
        starts = np.searchsorted(which, np.arange(len(block)))
        picks = starts[:, None] + np.arange(k)
        result[first : first + len(block)] = rows[picks]
    return result


def _slabs(vectors: np.ndarray) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """``(first row, float64 slab, its squared norms)`` of :data:`EXACT_SLAB_ROWS` rows."""
    for start in range(0, len(vectors), EXACT_SLAB_ROWS):
        slab = np.asarray(vectors[start : start + EXACT_SLAB_ROWS], dtype=np.float64)
        yield start, slab, np.einsum("ij,ij->i", slab, slab)


def exact_search(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact float64 nearest row of each query: the smallest :func:`squared_distances`,
    the lowest row on ties (what every index's answer is checked against).

    The table is read in float64 slabs of :data:`EXACT_SLAB_ROWS` rows (no float64 copy of
    the table: a few MB whatever its size). A matrix product gives
    ``||y||^2 - 2 q.y = ||q - y||^2 - ||q||^2`` for each slab; rows within a rounding bound of
    the smallest value so far are recomputed with :func:`squared_distances`, which decides.
    """
    queries = np.asarray(queries, dtype=np.float64)
    count = len(queries)
    best = np.full(count, np.inf)
    best_row = np.full(count, -1, dtype=np.int64)
    if count == 0 or len(vectors) == 0:
        return best_row
    # Every value (and the direct formula) lies within (d + 2) u (||q|| + ||y||)^2 of the
    # truth; 8x that is the tolerance. ``ceiling``: an upper bound on the least value.
    factor = 8.0 * (vectors.shape[1] + 2) * _U64
    norms = np.sqrt(np.einsum("ij,ij->i", queries, queries))
    ceiling = np.full(count, np.inf)
    for start, slab, squared in _slabs(vectors):
        slab_norm = math.sqrt(float(squared.max()))
        for first in range(0, count, EXACT_QUERY_BLOCK):
            block = slice(first, first + EXACT_QUERY_BLOCK)
            values = squared - 2.0 * (queries[block] @ slab.T)
            tolerance = factor * (norms[block] + slab_norm) ** 2
            ceiling[block] = np.minimum(ceiling[block], values.min(axis=1) + tolerance)
            which, cols = np.nonzero(values <= (ceiling[block] + tolerance)[:, None])
            if len(which) == 0:  # every query's nearest row is in an earlier slab
                continue
            which += first
            direct = _pair_distances(queries, slab, which, cols)
            order = np.lexsort((cols, direct, which))  # per query: least value, lowest row
            which, cols, direct = which[order], cols[order], direct[order]
            first_of_query = np.r_[True, which[1:] != which[:-1]]
            which, cols, direct = (
                which[first_of_query],
                cols[first_of_query],
                direct[first_of_query],
            )
            better = direct < best[which]  # strictly: an earlier slab holds lower rows
            best[which[better]] = direct[better]
            best_row[which[better]] = start + cols[better]
    return best_row
