"""Compression (sum each group's counts) and decompression (multinomial resampling).

Decompression spreads a non-negative group count ``c`` over the group's words by drawing
``Multinomial(c, p)`` with ``p`` the group's *public* weights, normalised within the group
(a group whose weights are all zero is spread uniformly). It is post-processing of the noisy
counts: it may use public data or a DP histogram, never the document's own counts
(PRIVACY.md 9). Its sampler's float residual therefore costs utility only, never privacy.

Two exact samplers of that multinomial are mixed for speed: a group count no larger than
twice the group's size is drawn unit by unit (inverse CDF, one ``searchsorted`` over all
groups), a larger one by numpy's conditional-binomial multinomial over the padded group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

#: Group counts up to this multiple of the group size are drawn unit by unit.
_UNITWISE_FACTOR = 2
#: Above this expected fraction of non-zero outputs, draws are assembled in a dense block.
_DENSE_ABOVE = 0.05
#: Totals must stay below this (a document's total, a feature's corpus total): group sums plus
#: noise below 2**62 in magnitude (:data:`.noise.MIN_RATE`) then fit in int64.
MAX_TOTAL = 2**62


def check_totals(counts: sp.csr_matrix, axis: int, what: str) -> None:
    """ValueError if a sum of ``counts`` along ``axis`` (in float64) reaches :data:`MAX_TOTAL`.

    The message states the bound only, never a data value (as every message of
    :mod:`dxp_plugins.errors`).
    """
    if counts.nnz == 0:
        return
    # Cheap sufficient bound first (largest entry x most entries in one line), so the usual
    # case does not pay for a float64 copy of the data.
    lines = np.diff(counts.indptr) if axis == 1 else np.bincount(counts.indices)
    if float(counts.data.max()) * float(np.max(lines)) < MAX_TOTAL:
        return
    totals = np.asarray(counts.astype(np.float64).sum(axis=axis))
    if totals.max() >= MAX_TOTAL:
        raise ValueError(f"counts are too large: {what} must stay below 2**62 (int64 range)")


def _wide_dtype(dtype: np.dtype) -> type | None:
    """64-bit for narrower sparse numbers before CSR conversion sums duplicate entries
    (int8 100 + 100 + 56 wrapped to 0); None to keep the dtype."""
    if np.issubdtype(dtype, np.bool_) or (np.issubdtype(dtype, np.integer) and dtype.itemsize < 8):
        return np.int64
    if np.issubdtype(dtype, np.floating) and dtype.itemsize < 8:
        return np.float64
    return None


def _check_duplicate_totals(X: Any) -> None:
    """Sparse input that may repeat an entry (COO, non-canonical CSR/CSC): each document's
    total checked in float64 (:func:`check_totals`) before scipy sums the duplicates in the
    input's integer type, where 2**63 + 2**63 wrapped to 0."""
    if not (X.format == "coo" or (X.format in ("csr", "csc") and not X.has_canonical_format)):
        return
    coo = X.tocoo()
    if not np.issubdtype(coo.data.dtype, np.number):
        return
    magnitude = np.abs(coo.data.astype(np.float64))
    summed = sp.csr_matrix((magnitude, (coo.row, coo.col)), shape=coo.shape)  # in float64
    check_totals(summed, 1, "each document's total count")


def check_counts(X: Any, n_features: int | None = None) -> sp.csr_matrix:
    """``X`` as a CSR int64 matrix of non-negative integer counts (ValueError otherwise,
    also when a document's total reaches :data:`MAX_TOTAL`, e.g. a float 1e19 or uint64)."""
    if sp.issparse(X):
        _check_duplicate_totals(X)
        wide = _wide_dtype(X.dtype)
        matrix = sp.csr_matrix(X if wide is None else X.astype(wide))
    else:
        array = np.asarray(X)
        if array.ndim != 2:
            raise ValueError(f"counts must be a 2-D matrix, got {array.ndim} dimension(s)")
        # A dense array repeats no entry: kept as it is (no 64-bit copy of the whole
        # matrix), except float16, which scipy refuses (float32 holds all its integers).
        matrix = sp.csr_matrix(array.astype(np.float32) if array.dtype == np.float16 else array)
    data = matrix.data
    if not (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.bool_)):
        if not np.issubdtype(data.dtype, np.floating):
            raise ValueError(f"counts must be numbers, got dtype {data.dtype}")
        if not np.isfinite(data).all():
            raise ValueError("counts must be finite")
        if (data != np.round(data)).any():
            raise ValueError(
                "counts must be integers (LPLP releases count vectors: use CountVectorizer, "
                "not TfidfVectorizer, before it)"
            )
    if len(data) and data.min() < 0:
        raise ValueError("Negative values in data passed to LPLP: counts must be non-negative")
    if n_features is not None and matrix.shape[1] != n_features:
        raise ValueError(f"counts have {matrix.shape[1]} features, expected {n_features}")
    check_totals(matrix, 1, "each document's total count")  # before the int64 cast wraps
    matrix = sp.csr_matrix(matrix, dtype=np.int64)
    matrix.sum_duplicates()
    return matrix


def indicator(labels: np.ndarray, n_groups: int) -> sp.csr_matrix:
    """The M x K 0/1 matrix of a partition: ``X @ indicator`` sums each group's counts."""
    n_features = len(labels)
    return sp.csr_matrix(
        (np.ones(n_features, dtype=np.int64), (np.arange(n_features), labels)),
        shape=(n_features, n_groups),
    )


@dataclass(frozen=True)
class DecompressionPlan:
    """Public per-group sampling tables, built once from a partition and public weights."""

    n_features: int
    n_groups: int
    order: np.ndarray  # features sorted by group
    starts: np.ndarray  # group g occupies order[starts[g]:starts[g+1]]
    upper: np.ndarray  # g + cumulative within-group probability, per position in order
    last: np.ndarray  # position of each group's last word of positive probability
    probabilities: np.ndarray  # (K, largest group) padded with zeros
    columns: np.ndarray  # (K, largest group) feature of each slot (M for padding)

    @classmethod
    def build(cls, labels: np.ndarray, n_groups: int, weights: Any) -> DecompressionPlan:
        """Tables for ``labels`` (a partition) and non-negative public ``weights`` per feature."""
        labels = np.asarray(labels, dtype=np.int64)
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != labels.shape:
            raise ValueError(f"weights must hold one number per feature ({len(labels)})")
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError("weights must be finite and non-negative")
        sizes = np.bincount(labels, minlength=n_groups)
        order = np.argsort(labels, kind="stable")
        starts = np.r_[0, np.cumsum(sizes)]
        group = labels[order]
        ordered = weights[order]
        # Scale each group by its largest weight: totals of huge finite weights overflowed to
        # inf, every probability became 0 and the group's counts went to another group.
        largest = np.zeros(n_groups)
        np.maximum.at(largest, group, ordered)
        ordered = ordered / np.where(largest > 0, largest, 1.0)[group]
        totals = np.bincount(group, weights=ordered, minlength=n_groups)
        empty = totals[group] <= 0  # groups without weight are spread uniformly
        ordered = np.where(empty, 1.0, ordered)
        totals = np.bincount(group, weights=ordered, minlength=n_groups)
        probability = ordered / totals[group]
        cumulative = np.cumsum(probability)
        before = np.r_[0.0, cumulative][starts[:-1]]
        within = np.minimum(cumulative - before[group], 1.0)
        within[starts[1:] - 1] = 1.0
        positions = np.arange(len(order))
        last = starts[:-1].copy()  # never outside the group
        np.maximum.at(last, group, np.where(probability > 0, positions, starts[group]))
        width = int(np.max(sizes))
        slot = positions - starts[group]
        padded = np.zeros((n_groups, width))
        padded[group, slot] = probability
        columns = np.full((n_groups, width), len(labels), dtype=np.int64)
        columns[group, slot] = order
        return cls(len(labels), n_groups, order, starts, group + within, last, padded, columns)

    @property
    def sizes(self) -> np.ndarray:
        """Number of features in each group."""
        return np.diff(self.starts)


def decompress(counts: np.ndarray, plan: DecompressionPlan, rng: np.random.Generator) -> Any:
    """Multinomial resampling of non-negative group ``counts`` (D x K) over the features.

    Entries (document, group) land in distinct columns. When the output is dense enough the
    draws are written into a D x (M + 1) block (column M absorbs padding slots) and converted
    to CSR once; otherwise (document, feature, count) triplets are assembled directly.
    """
    if plan.n_groups == plan.n_features:  # K = M: every group is one feature, nothing to draw
        matrix = sp.csr_matrix(counts)
        column = plan.order[plan.starts[:-1]]
        if (column != np.arange(len(column))).any():
            matrix.indices = column[matrix.indices].astype(matrix.indices.dtype)
            matrix.has_sorted_indices = False
            matrix.sort_indices()
        return matrix
    rows, groups = np.nonzero(counts)
    totals = counts[rows, groups]
    sizes = plan.sizes[groups]
    single = np.flatnonzero(sizes == 1)
    bulk = np.flatnonzero((sizes > 1) & (totals > _UNITWISE_FACTOR * sizes))
    unitwise = np.flatnonzero((sizes > 1) & (totals <= _UNITWISE_FACTOR * sizes))
    draws = rng.multinomial(totals[bulk], plan.probabilities[groups[bulk]])
    bulk_columns = plan.columns[groups[bulk]]
    units = np.repeat(unitwise, totals[unitwise])
    unit_group = groups[units]
    position = np.searchsorted(plan.upper, unit_group + rng.random(len(units)), side="right")
    unit_columns = plan.order[np.minimum(position, plan.last[unit_group])]  # k + u may round up
    single_columns = plan.order[plan.starts[groups[single]]]
    shape = (len(counts), plan.n_features)
    if np.minimum(totals, sizes).sum() > _DENSE_ABOVE * shape[0] * shape[1]:
        block = np.zeros((shape[0], shape[1] + 1), dtype=np.int64)
        block[rows[single], single_columns] = totals[single]
        block[rows[bulk][:, None], bulk_columns] = draws
        np.add.at(block, (rows[units], unit_columns), 1)
        return sp.csr_matrix(block[:, : shape[1]])
    entry, slot = np.nonzero(draws)
    matrix = sp.csr_matrix(
        (
            np.concatenate([totals[single], draws[entry, slot], np.ones(len(units), np.int64)]),
            (
                np.concatenate([rows[single], rows[bulk][entry], rows[units]]),
                np.concatenate([single_columns, bulk_columns[entry, slot], unit_columns]),
            ),
        ),
        shape=shape,
    )
    matrix.sum_duplicates()
    return matrix
