"""A vocabulary as a metric space (BRR paper, Section 5): a mechanism in its own metric, an
embedding table with a metric, or binary codes in Hamming distance, with the pairwise,
farthest-point and centre distances that P_d needs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..distances import Metric, get_metric
from ..embeddings.binary import BinaryCodes, hamming
from ..embeddings.table import EmbeddingTable


class _Space:
    metric: str
    size: int
    identity: Any  # vocabulary identity: paired sampling when two spaces share it
    diameter_bound = math.inf  # no two points of the space are farther apart

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(max_j d(i, j), argmax_j)`` for each i in ids."""
        raise NotImplementedError

    def center_distances(self) -> np.ndarray:
        """d(c, j) for every word j from one public centre point c."""
        raise NotImplementedError


class _VectorSpace(_Space):
    def __init__(self, table: EmbeddingTable, metric: Metric) -> None:
        self.table, self.distance = table, metric
        self.metric, self.size, self.identity = metric.name, len(table), table.fingerprint
        if metric.name == "angular":
            self.diameter_bound = math.pi

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        vectors = self.table.vectors
        return self.distance.pairs(vectors[i].astype(np.float64), vectors[j].astype(np.float64))

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = self.table.vectors[ids].astype(np.float64)
        distances = self.distance.to_table(points, self.table)
        far = np.argmax(distances, axis=1)
        return distances[np.arange(len(ids)), far], far

    def center_distances(self) -> np.ndarray:
        centre = self.table.unk_vector()
        if self.metric == "angular" and not np.linalg.norm(centre) > 0:
            centre = self.table.vectors[0].astype(np.float64)  # any point with a direction
        return self.distance.exact_to_table(centre, self.table)


class _CodeSpace(_Space):
    def __init__(self, codes: BinaryCodes, identity: Any = None) -> None:
        from .._faiss_runtime import _faiss

        faiss = _faiss()

        self.codes = codes
        self.metric, self.size = "hamming", len(codes)
        self.identity = identity if identity is not None else codes.fingerprint
        self.diameter_bound = float(codes.n_bits)
        self._index = faiss.IndexBinaryFlat(codes.packed.shape[1] * 8)
        self._index.add(np.ascontiguousarray(codes.packed))

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        from ..embeddings.binary import _POPCOUNT

        xor = np.bitwise_xor(self.codes.packed[i], self.codes.packed[j])
        return _POPCOUNT[xor].sum(axis=1).astype(np.float64)

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The farthest code from c is the nearest to its complement (padding bits included).
        complement = np.ascontiguousarray(np.bitwise_not(self.codes.packed[ids]))
        distances, far = self._index.search(complement, 1)
        total = self.codes.packed.shape[1] * 8
        return (total - distances[:, 0]).astype(np.float64), far[:, 0].astype(np.int64)

    def center_distances(self) -> np.ndarray:
        return hamming(self.codes.majority()[None, :], self.codes.packed)[0].astype(np.float64)


def _space(space: Any, metric: Any) -> _Space:
    """The space's distances; P_d needs a pair of words, so at least 2."""
    resolved = _resolve_space(space, metric)
    if resolved.size < 2:
        raise ValueError("P_d needs at least 2 words: a 1-word space has no pairs")
    return resolved


def _resolve_space(space: Any, metric: Any) -> _Space:
    from ..mechanisms.base import Mechanism

    if isinstance(space, BinaryCodes):
        if metric is not None and metric != "hamming":
            raise ValueError("binary codes are compared in Hamming distance; do not pass metric=")
        return _CodeSpace(space)
    if isinstance(space, EmbeddingTable):
        return _VectorSpace(space, get_metric("euclidean" if metric is None else metric))
    if isinstance(space, Mechanism):
        if metric is not None:
            raise ValueError("a mechanism brings its own metric; do not pass metric=")
        codes = getattr(space, "codes", None)
        if isinstance(codes, BinaryCodes):
            return _CodeSpace(codes, identity=space.embeddings.fingerprint)
        distance = getattr(space, "distance_metric", None)
        if isinstance(distance, Metric):
            return _VectorSpace(space.embeddings, distance)
        return _VectorSpace(space.embeddings, get_metric(space.metric))
    raise TypeError(
        f"expected a Mechanism, EmbeddingTable or BinaryCodes, got {type(space).__name__}"
    )
