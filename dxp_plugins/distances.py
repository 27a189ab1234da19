"""Metrics between word vectors in float64, for TEM and calibration.

TEM (Carvalho et al.) works with any metric; this module gives the built-in ones and wraps a
user function:

* ``"euclidean"`` (default): ``||a - b||_2``;
* ``"manhattan"``: ``||a - b||_1``;
* ``"chebyshev"``: ``||a - b||_inf``;
* ``"angular"``: ``arccos(cos(a, b))`` in radians. Cosine *distance* ``1 - cos`` is not a
  metric (no triangle inequality), so metric DP cannot be stated in it; the angle is.
* a callable ``f(X, Y) -> D`` with ``D[i, j] = d(X[i], Y[j])`` (like ``scipy.spatial.distance
  .cdist``), float64 in and out. It must be a metric; that is the caller's promise.

:meth:`Metric.fast_block` computes one value per (query, row) for a block of query points in
one shared pass over the table; :meth:`Metric.finish_row` turns one row of it into
distances in place. Euclidean and angular use BLAS (``||q||^2 + ||y||^2 - 2 q.y`` and
normalised dot products, float64) and then recompute directly -- ``sqrt(sum((q - y)^2))``
and ``2 atan2(||a - b||, ||a + b||)`` on unit vectors -- every entry whose fast value lies
within a rounding bound of a radius or of zero, so membership of a ball ``d <= radius`` is
decided by the direct float64 formula. :meth:`Metric.exact_to_table` and :meth:`Metric.pairs` are
direct everywhere.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

__all__ = [
    "METRIC_NAMES",
    "Angular",
    "CallableMetric",
    "Chebyshev",
    "Euclidean",
    "Manhattan",
    "Metric",
    "MetricFunction",
    "get_metric",
]

if TYPE_CHECKING:
    from .embeddings.table import EmbeddingTable

METRIC_NAMES = ("euclidean", "manhattan", "chebyshev", "angular")
#: Vocabulary rows converted to float64 per step of a pass.
SLAB_ROWS = 32_768
#: Tables up to this size (bytes in float64) keep a float64 copy of their vectors.
FLOAT64_COPY_BYTES = 256 << 20
#: float64 machine epsilon, twice the unit roundoff u of neighbors._U64: the tolerances below,
#: written as bounds in u, are doubled by it (a wider band only sends more entries to the
#: exact recomputation).
_U = float(np.finfo(np.float64).eps)
#: Rows a user metric function is tried on when a mechanism is built.
CHECKED_ROWS = 8
#: Nearest rows (by the function itself) of each checked row that join the probe set on
#: which a user function's metric axioms are checked.
PROBE_NEIGHBOURS = 4
#: Tolerance of those checks, relative to the largest probe distance: true metrics computed
#: the usual ways round by up to ~1e-3 of it (d(x, x) = 3e-3 from the float32 expansion
#: ||x||^2 + ||y||^2 - 2 x.y, 4e-8 from arccos of a clipped cosine), while squared, cosine,
#: correlation and Bray-Curtis distances break the triangle by 0.21-0.28 of it on GloVe.
AXIOM_TOLERANCE = 1e-3

MetricFunction = Callable[[np.ndarray, np.ndarray], np.ndarray]


class Metric:
    """A metric over table rows (float64). Use :func:`get_metric` to build one.

    Distances to the whole table come in two steps so that a block of queries shares one
    pass over the vocabulary while each row is finished while it is hot in the CPU cache:
    :meth:`fast_block` (one value per query and row, e.g. a squared distance from BLAS) and
    :meth:`finish_row` (in place: exact float64 distances, re-checked against a radius).
    """

    #: Name recorded in guarantees.
    name: str = ""
    #: The largest possible distance, when the metric has one (None: unbounded or unknown).
    diameter: float | None = None

    @property
    def key(self) -> Any:
        """Hashable identity for caches."""
        return self.name

    def check_points(self, points: np.ndarray, what: str) -> None:
        """Raise ValueError when the metric is undefined on some of ``points``."""

    # -- passes ---------------------------------------------------------------------------
    def fast_block(
        self, queries: np.ndarray, table: EmbeddingTable, out: np.ndarray | None = None
    ) -> np.ndarray:
        """One value per (query, row) from one shared pass; see :meth:`finish_row`.

        ``out``: a C-contiguous float64 buffer of shape (len(queries), len(table)) to reuse
        (fresh memory costs page faults on every block).
        """
        queries = np.ascontiguousarray(queries, dtype=np.float64)
        out = _output(out, len(queries), len(table))
        for start in range(0, len(table), SLAB_ROWS):
            stop = min(start + SLAB_ROWS, len(table))
            out[:, start:stop] = self._block(queries, float64_rows(table, start, stop))
        return out

    def finish_block(
        self, queries: np.ndarray, values: np.ndarray, table: EmbeddingTable, radius: float
    ) -> None:
        """Turn ``fast_block`` values into distances, in place.

        Entries the fast pass could place on the wrong side of ``radius`` (or that are
        inaccurate near 0) are recomputed with the direct formula.
        """

    def finish_row(
        self, query: np.ndarray, row: np.ndarray, table: EmbeddingTable, radius: float
    ) -> None:
        """:meth:`finish_block` for one query (a row is finished while it is in cache)."""
        self.finish_block(np.asarray(query)[None, :], row[None, :], table, radius)

    def to_table(
        self, queries: np.ndarray, table: EmbeddingTable, radius: float = math.inf
    ) -> np.ndarray:
        """``D[i, j] = d(queries[i], row j)`` for every row (float64)."""
        queries = np.asarray(queries, dtype=np.float64)
        values = self.fast_block(queries, table)
        self.finish_block(queries, values, table, radius)
        return values

    def exact_to_table(self, point: np.ndarray, table: EmbeddingTable) -> np.ndarray:
        """Direct float64 distances from one point to every row. Converts slab by slab
        unless a float64 copy of the table is cached already: making one here would keep
        153 MiB at 400k words for ~3 ms per call."""
        point = np.asarray(point, dtype=np.float64)
        out = np.empty(len(table), dtype=np.float64)
        for start in range(0, len(table), SLAB_ROWS):
            stop = min(start + SLAB_ROWS, len(table))
            slab = float64_rows(table, start, stop, keep=False)
            out[start:stop] = self.pairs(np.broadcast_to(point, slab.shape), slab)
        return out

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Direct float64 ``d(a[k], b[k])`` for each k."""
        raise NotImplementedError

    def _block(self, queries: np.ndarray, slab: np.ndarray) -> np.ndarray:
        from scipy.spatial.distance import cdist

        return np.asarray(cdist(queries, slab, self.name))

    def _recompute(
        self, queries: np.ndarray, values: np.ndarray, table: EmbeddingTable, suspect: np.ndarray
    ) -> None:
        if len(suspect) == 1:  # one row: flatnonzero is cheaper than a 2-D nonzero
            cols = np.flatnonzero(suspect[0])
            rows = np.zeros(len(cols), dtype=np.int64)
        else:
            rows, cols = np.nonzero(suspect)
        if len(rows):
            slab = table.vectors[cols].astype(np.float64)
            values[rows, cols] = self.pairs(np.asarray(queries, dtype=np.float64)[rows], slab)

    def __repr__(self) -> str:
        return f"Metric({self.name!r})"


class Euclidean(Metric):
    """``||a - b||_2``: squared distances from one BLAS product, direct re-checks."""

    name = "euclidean"

    def fast_block(
        self, queries: np.ndarray, table: EmbeddingTable, out: np.ndarray | None = None
    ) -> np.ndarray:
        # [q, ||q||^2, 1] . [-2y, 1, ||y||^2] = ||q - y||^2 in one matrix product.
        queries = np.asarray(queries, dtype=np.float64)
        augmented = np.empty((len(queries), table.dim + 2), dtype=np.float64)
        augmented[:, : table.dim] = queries
        augmented[:, table.dim] = np.einsum("ij,ij->i", queries, queries)
        augmented[:, table.dim + 1] = 1.0
        rows = _augmented_rows(table)
        out = _output(out, len(queries), len(table))
        if rows is not None:
            return np.matmul(augmented, rows.T, out=out)
        for start in range(0, len(table), SLAB_ROWS):
            stop = min(start + SLAB_ROWS, len(table))
            out[:, start:stop] = augmented @ _augment(table, start, stop).T
        return out

    def finish_block(
        self, queries: np.ndarray, values: np.ndarray, table: EmbeddingTable, radius: float
    ) -> None:
        # |fl(d^2) - d^2| <= (n + 2) u (||q||^2 + ||y||^2 + 2|q.y|): anything within 8x that
        # bound of radius^2 or of 0 is recomputed directly.
        tolerance = _euclidean_tolerance(queries, table)[:, None]
        suspect = values <= tolerance  # near 0 (may even be negative)
        squared = radius * radius
        # The band is skipped only when no entry can be in any query's band: the test uses
        # the largest tolerance, so one query's membership never depends on the others.
        if math.isfinite(radius) and float(values.max()) > squared - float(tolerance.max()):
            suspect |= (values > squared - tolerance) & (values <= squared + tolerance)
        with np.errstate(invalid="ignore"):  # negative entries are suspects, recomputed
            np.sqrt(values, out=values)
        self._recompute(queries, values, table, suspect)

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
        return np.sqrt(np.einsum("ij,ij->i", diff, diff))


class Manhattan(Metric):
    """``||a - b||_1`` (scipy ``cdist``, direct)."""

    name = "manhattan"

    def _block(self, queries: np.ndarray, slab: np.ndarray) -> np.ndarray:
        from scipy.spatial.distance import cdist

        return np.asarray(cdist(queries, slab, "cityblock"))

    def finish_block(
        self, queries: np.ndarray, values: np.ndarray, table: EmbeddingTable, radius: float
    ) -> None:
        # cdist and :meth:`pairs` sum in different orders (each within n u d of the truth),
        # so entries within 8x that bound of the radius are decided by :meth:`pairs`, the
        # formula the exact law (TEM.distribution) uses.
        if math.isfinite(radius):
            tolerance = 8.0 * (table.dim + 2) * _U * radius
            self._recompute(queries, values, table, np.abs(values - radius) <= tolerance)

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.abs(np.asarray(a, dtype=np.float64) - b).sum(axis=1)


class Chebyshev(Metric):
    """``||a - b||_inf`` (scipy ``cdist``, direct)."""

    name = "chebyshev"

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.abs(np.asarray(a, dtype=np.float64) - b).max(axis=1)


class Angular(Metric):
    """Angle between vectors, ``arccos(cos(a, b))`` in [0, pi] (zero vectors rejected)."""

    name = "angular"
    diameter = math.pi

    def check_points(self, points: np.ndarray, what: str) -> None:
        points = np.atleast_2d(np.asarray(points))
        for start in range(0, len(points), SLAB_ROWS):  # no float64 copy of a whole table
            slab = points[start : start + SLAB_ROWS].astype(np.float64)
            if not np.all(np.linalg.norm(slab, axis=1) > 0):
                raise ValueError(f"the angular metric is undefined for zero vectors ({what})")

    def fast_block(
        self, queries: np.ndarray, table: EmbeddingTable, out: np.ndarray | None = None
    ) -> np.ndarray:
        units = _unit(np.asarray(queries, dtype=np.float64))
        inverse = 1.0 / np.sqrt(_squared_norms(table))
        out = _output(out, len(units), len(table))
        for start in range(0, len(table), SLAB_ROWS):
            stop = min(start + SLAB_ROWS, len(table))
            slab = float64_rows(table, start, stop) * inverse[start:stop, None]
            out[:, start:stop] = units @ slab.T
        return out

    def finish_block(
        self, queries: np.ndarray, values: np.ndarray, table: EmbeddingTable, radius: float
    ) -> None:
        # The dot product of unit vectors is within ~(n + 2) u of the truth; arccos amplifies
        # that error near 0 and pi, so those angles and angles near the radius are recomputed
        # with 2 atan2(||a - b||, ||a + b||).
        tolerance = 8.0 * (table.dim + 2) * _U
        suspect = (values >= 1.0 - 5e-7) | (values <= -1.0 + 5e-7)  # within ~1e-3 of 0 or pi
        if radius < math.pi:
            cosine = math.cos(radius)
            suspect |= (values >= cosine - tolerance) & (values <= cosine + tolerance)
        np.clip(values, -1.0, 1.0, out=values)
        np.arccos(values, out=values)
        self._recompute(queries, values, table, suspect)

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ua, ub = _unit(np.asarray(a, dtype=np.float64)), _unit(np.asarray(b, dtype=np.float64))
        diff, total = ua - ub, ua + ub
        return 2.0 * np.arctan2(
            np.sqrt(np.einsum("ij,ij->i", diff, diff)), np.sqrt(np.einsum("ij,ij->i", total, total))
        )


#: Objects named by a number (lambdas, callable objects, methods' objects, partials), in order: an
#: address could be reused once the object is gone, a number never is (they are kept).
_SERIALS: dict[int, tuple[Any, int]] = {}
_SERIALS_LOCK = threading.Lock()
#: The object first named by each import path (a later one under that path gets a number).
_PATHS: dict[str, Any] = {}
#: Every metric function named so far, with its name (kept: ids are never reused).
_NAMES: dict[int, tuple[Any, str]] = {}


def _serial(function: Any) -> int:
    with _SERIALS_LOCK:
        kept = _SERIALS.get(id(function))
        if kept is None:
            kept = _SERIALS[id(function)] = (function, len(_SERIALS) + 1)
        return kept[1]


def _describe(function: Any) -> str:
    """A name that tells user metric functions apart (it is the ledger unit): the import
    path of a function that its module still holds under that name, a partial with its
    literal arguments, a method with its object; anything else (lambdas, local, wrapped or
    redefined functions, callable objects, partials of arrays) gets a number, kept for the
    process (the object is kept with it, so the number is never reused)."""
    if isinstance(function, functools.partial):
        arguments = [*function.args, *function.keywords.values()]
        if all(_is_literal(value) for value in arguments):
            shown = [repr(value) for value in function.args]
            shown += [f"{name}={value!r}" for name, value in function.keywords.items()]
            return f"partial({', '.join([_describe(function.func), *shown])})"
        return f"partial({_describe(function.func)}, ...)#{_serial(function)}"
    owner = getattr(function, "__self__", None)
    if owner is not None and not isinstance(owner, types.ModuleType):
        return _method_name(function, owner)  # named by its object: no memo of the method
    with _SERIALS_LOCK:
        named = _NAMES.get(id(function))
    if named is not None:  # named once, named so for good (even if later redefined)
        return named[1]
    name = _first_name(function)
    with _SERIALS_LOCK:
        return _NAMES.setdefault(id(function), (function, name))[1]


def _method_name(method: Any, owner: Any) -> str:
    """A bound method (a new object at each attribute access) by its object and name."""
    name = getattr(method, "__name__", "method")
    base = _import_path(owner)
    return f"{base}.{name}" if base else f"{type(owner).__qualname__}#{_serial(owner)}.{name}"


def _first_name(function: Any) -> str:
    path = _import_path(function)
    if path:
        return path
    label = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{label}#{_serial(function)}"


def _import_path(thing: Any) -> str | None:
    """``module.qualname`` when importing it gives back this very object (and no other
    object was named so before: a function redefined in ``__main__``), else None."""
    module = getattr(thing, "__module__", None)
    qualname = getattr(thing, "__qualname__", None) or getattr(thing, "__name__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    target: Any = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is not thing:
        return None
    path = f"{module}.{qualname}"
    with _SERIALS_LOCK:
        first = _PATHS.setdefault(path, thing)
    return path if first is thing else None


def _is_literal(value: Any) -> bool:
    if isinstance(value, tuple | frozenset):
        return all(_is_literal(item) for item in value)
    return value is None or type(value) in (str, int, float, bool, complex, bytes)


class CallableMetric(Metric):
    """A user metric ``f(X, Y) -> D`` (float64, ``D[i, j] = d(X[i], Y[j])``)."""

    def __init__(self, function: MetricFunction) -> None:
        self.function = function
        # The name is the ledger unit and the record's metric: two different functions
        # must never share it (two lambdas did, so an accountant summed their epsilons).
        self.name = f"callable:{_describe(function)}"

    @property
    def key(self) -> Any:
        # The name, not the function: it is unique per function object (numbered and kept
        # by :func:`_describe`) and hashable even when the object is not.
        return self.name

    def check_points(self, points: np.ndarray, what: str) -> None:
        """Try the function when the mechanism is built, not after a release is charged:
        the first :data:`CHECKED_ROWS` of ``points`` against every point (a wrong shape, a
        negative or non-finite distance is refused), then the metric axioms on those rows
        and their :data:`PROBE_NEIGHBOURS` nearest points, where a squared or cosine
        distance breaks the triangle inequality most readily: ``d(x, x) = 0``,
        ``d(x, y) = d(y, x)``, ``d(x, z) <= d(x, y) + d(y, z)``. TEM's guarantee needs a
        metric (its utility must be 1-Lipschitz); a check on a sample cannot prove one, so
        the function stays the caller's promise. (Pairs of other rows are checked when
        used.)"""
        sample = np.asarray(points[:CHECKED_ROWS], dtype=np.float64)
        self._call(sample, sample.copy())
        # The PROBE_NEIGHBOURS + 1 nearest rows of each sampled row over the whole table
        # (itself included), kept as a running top list across slabs.
        take = PROBE_NEIGHBOURS + 1
        best = np.empty((len(sample), 0), dtype=np.float64)
        best_rows = np.empty((len(sample), 0), dtype=np.int64)
        for start in range(0, len(points), SLAB_ROWS):
            slab = np.asarray(points[start : start + SLAB_ROWS], dtype=np.float64)
            here = np.arange(start, start + len(slab))
            slab_rows = np.broadcast_to(here, (len(sample), len(slab)))
            block = np.concatenate([best, self._call(sample, slab)], axis=1)
            ids = np.concatenate([best_rows, slab_rows], axis=1)
            keep = np.argpartition(block, min(take, block.shape[1]) - 1, axis=1)[:, :take]
            best = np.take_along_axis(block, keep, axis=1)
            best_rows = np.take_along_axis(ids, keep, axis=1)
        rows = np.unique(np.concatenate([np.arange(len(sample)), best_rows.ravel()]))
        probe = np.asarray(points[rows], dtype=np.float64)
        _check_axioms(self._call(probe, probe.copy()), rows, self.name, what)

    def _call(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = np.asarray(self.function(x, y), dtype=np.float64)
        if result.shape != (len(x), len(y)):
            raise ValueError(
                f"metric function returned shape {result.shape}, expected {(len(x), len(y))}"
            )
        if not np.all(np.isfinite(result)) or np.any(result < 0):
            raise ValueError("metric function returned a negative or non-finite distance")
        return result

    def _block(self, queries: np.ndarray, slab: np.ndarray) -> np.ndarray:
        return self._call(queries, slab)

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        out = np.empty(len(a), dtype=np.float64)
        for start in range(0, len(a), 256):
            block = self._call(a[start : start + 256], b[start : start + 256])
            out[start : start + 256] = np.diagonal(block)
        return out

    def exact_to_table(self, point: np.ndarray, table: EmbeddingTable) -> np.ndarray:
        return self.to_table(np.asarray(point, dtype=np.float64)[None, :], table)[0]


_BUILTIN: dict[str, type[Metric]] = {
    "euclidean": Euclidean,
    "manhattan": Manhattan,
    "chebyshev": Chebyshev,
    "angular": Angular,
}


def get_metric(metric: str | MetricFunction | Metric) -> Metric:
    """A :class:`Metric` from a name in :data:`METRIC_NAMES`, a callable or a Metric."""
    if isinstance(metric, Metric):
        return metric
    if isinstance(metric, str):
        if metric not in _BUILTIN:
            raise ValueError(
                f"metric must be one of {', '.join(map(repr, METRIC_NAMES))} or a callable, "
                f"got {metric!r}"
            )
        return _BUILTIN[metric]()
    if callable(metric):
        return CallableMetric(metric)
    raise TypeError(f"metric must be a name or a callable, got {type(metric).__name__}")


def float64_rows(table: EmbeddingTable, start: int, stop: int, *, keep: bool = True) -> np.ndarray:
    """Rows ``start:stop`` of the table in float64 (a cached copy when it is small; with
    ``keep=False`` one is used if cached, never made)."""
    key = "vectors-f64"
    if key not in table.cache:
        if not keep:
            return table.vectors[start:stop].astype(np.float64)
        small = len(table) * table.dim * 8 <= FLOAT64_COPY_BYTES
        table.cache[key] = table.vectors.astype(np.float64) if small else None
    copy: np.ndarray | None = table.cache[key]
    if copy is None:
        return table.vectors[start:stop].astype(np.float64)
    return copy[start:stop]


def _output(out: np.ndarray | None, rows: int, columns: int) -> np.ndarray:
    if out is None:
        return np.empty((rows, columns), dtype=np.float64)
    if out.shape != (rows, columns) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {(rows, columns)}")
    return out


def _augment(table: EmbeddingTable, start: int, stop: int) -> np.ndarray:
    # Straight from the float32 rows (the cast and the factor -2 are exact), so Euclidean
    # never needs the float64 copy of the table beside its augmented one.
    rows = table.vectors[start:stop]
    out = np.empty((len(rows), table.dim + 2), dtype=np.float64)
    np.multiply(rows, -2.0, out=out[:, : table.dim], dtype=np.float64)
    out[:, table.dim] = 1.0
    out[:, table.dim + 1] = _squared_norms(table)[start:stop]
    return out


def _augmented_rows(table: EmbeddingTable) -> np.ndarray | None:
    """``[-2y, 1, ||y||^2]`` for every row, cached when small (else None: use slabs)."""
    key = "euclidean-augmented-f64"
    if key not in table.cache:
        small = len(table) * (table.dim + 2) * 8 <= FLOAT64_COPY_BYTES
        table.cache[key] = _augment(table, 0, len(table)) if small else None
    rows: np.ndarray | None = table.cache[key]
    return rows


def _euclidean_tolerance(queries: np.ndarray, table: EmbeddingTable) -> np.ndarray:
    """Per query: 8x a bound on the rounding error of the BLAS squared distances."""
    key = "squared-norms-max"
    if key not in table.cache:
        table.cache[key] = float(_squared_norms(table).max())
    q2 = np.einsum("ij,ij->i", queries, queries)
    return 8.0 * (table.dim + 2) * _U * 2.0 * (q2 + float(table.cache[key]))


def _squared_norms(table: EmbeddingTable) -> np.ndarray:
    key = "squared-norms-f64"
    if key not in table.cache:
        computed = np.empty(len(table), dtype=np.float64)
        for start in range(0, len(table), SLAB_ROWS):  # slabs: no full float64 copy
            slab = table.vectors[start : start + SLAB_ROWS].astype(np.float64)
            computed[start : start + len(slab)] = np.einsum("ij,ij->i", slab, slab)
        table.cache[key] = computed
    norms: np.ndarray = table.cache[key]
    return norms


def _unit(points: np.ndarray) -> np.ndarray:
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def _check_axioms(distances: np.ndarray, rows: np.ndarray, name: str, what: str) -> None:
    """ValueError naming the first metric axiom the square matrix ``distances`` (between
    ``rows`` of ``what``) breaks beyond :data:`AXIOM_TOLERANCE`."""
    tolerance = AXIOM_TOLERANCE * max(float(distances.max(initial=0.0)), 1e-300)
    hint = (
        f": {name} is not a metric on {what}, and TEM's guarantee needs one (cosine and "
        "squared distances are not; metric='angular' and 'euclidean' are)"
    )
    diagonal = np.abs(np.diagonal(distances))
    if diagonal.max(initial=0.0) > tolerance:
        at = int(np.argmax(diagonal))
        raise ValueError(f"d(x, x) = {diagonal[at]:.6g} for row {rows[at]}{hint}")
    asymmetry = np.abs(distances - distances.T)
    if asymmetry.max(initial=0.0) > tolerance:
        a, b = (int(n) for n in np.unravel_index(int(np.argmax(asymmetry)), asymmetry.shape))
        raise ValueError(
            f"d(x, y) = {distances[a, b]:.6g} but d(y, x) = {distances[b, a]:.6g} for rows "
            f"{rows[a]}, {rows[b]}{hint}"
        )
    worst, worst_at = 0.0, (0, 0, 0)
    for j in range(len(distances)):  # d(x, z) <= d(x, y_j) + d(y_j, z) for every x, z
        excess = distances - (distances[:, j, None] + distances[None, j, :])
        flat = int(np.argmax(excess))
        if excess.flat[flat] > worst:
            worst = float(excess.flat[flat])
            i, k = (int(n) for n in np.unravel_index(flat, excess.shape))
            worst_at = (i, j, k)
    if worst > tolerance:  # the worst violation, as a fraction of the largest distance
        i, j, k = worst_at
        raise ValueError(
            f"d(x, z) = {distances[i, k]:.6g} > d(x, y) + d(y, z) = "
            f"{distances[i, j] + distances[j, k]:.6g} for rows {rows[i]}, {rows[j]}, "
            f"{rows[k]}{hint}"
        )
