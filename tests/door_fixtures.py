"""Helpers shared by the front-door tests: registrations undone after each test, a GloVe-format
file of the audit plane, a second mechanism to show the doors are generic, and canaries."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import catalogue
import numpy as np

import dxp_plugins as dxp
from dxp_plugins.mechanisms.base import Mechanism
from tests.fixtures import plane_fixture
from tests.optional import HAS_GENSIM

#: Strings that must never reach a default output (PRIVACY.md 14): OOV strings, digits and
#: e-mail addresses. Each test checks they are out of its vocabulary first.
CANARIES = ["zq7canaryxx", "4242424242", "8675309", "alice.smith@example.org", "bob@corp.example"]


def register(monkeypatch: Any, kind: str, name: str, entry: Any) -> None:
    """Register ``entry`` in ``dxp_plugins.registry.<kind>`` for one test only."""
    monkeypatch.setitem(catalogue.REGISTRY, ("dxp_plugins", kind, name), entry)


@contextlib.contextmanager
def own_registrations_undone() -> Iterator[None]:
    """Names registered in this library's registries meanwhile are removed afterwards (only
    those: spaCy registers its own functions lazily, into the same dict, and replacing the
    dict for a test lost them for every later test)."""
    before = {key for key in catalogue.REGISTRY if key[0] == "dxp_plugins"}
    try:
        yield
    finally:
        for key in [k for k in catalogue.REGISTRY if k[0] == "dxp_plugins" and k not in before]:
            del catalogue.REGISTRY[key]


def write_glove(table: dxp.EmbeddingTable, path: Path) -> Path:
    """``table`` as a header-less GloVe text file (read back by ``keyed-vectors.v1``)."""
    lines = [
        word + " " + " ".join(repr(float(x)) for x in row)
        for word, row in zip(table.words, table.vectors, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def plane_glove(tmp_path: Path, epsilon: float, monkeypatch: Any) -> dict[str, Any]:
    """Embeddings settings of the audit plane (tests/fixtures.py) through a real GloVe file
    (``keyed-vectors.v1``, read by gensim); where gensim is not installed (Python 3.14)
    through a loader registered for the test, so that the doors' audits still run."""
    words = ["a", "b", "sinkaxis", "c", "sinkdiag"]  # one token each for the tokenizer
    plane = dxp.EmbeddingTable(words, plane_fixture(epsilon).vectors)
    if HAS_GENSIM:
        path = write_glove(plane, tmp_path / f"plane-{epsilon}.txt")
        return {"embeddings": "keyed-vectors.v1", "path": str(path), "no_header": True}
    register(monkeypatch, "embeddings", "audit-plane-test", lambda: plane)
    return {"embeddings": "audit-plane-test"}


class KaryRandomizedResponse(Mechanism):
    """k-ary randomized response over the vocabulary: epsilon-DP for the discrete metric.

    Keeps the word with probability e^eps / (e^eps + k - 1), else a uniform other word.
    ``restrict_to`` is an option only to show mechanism options travel through the doors.
    """

    name = "k-rr-test"
    metric = "discrete"

    def __init__(
        self,
        embeddings: Any,
        epsilon: float,
        *,
        restrict_to: int | None = None,
        oov: str = "unk",
        random_state: Any = None,
        accountant: Any = None,
    ) -> None:
        super().__init__(
            embeddings, epsilon, oov=oov, random_state=random_state, accountant=accountant
        )
        self.restrict_to = restrict_to

    def _sample(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        k = len(self.embeddings) if self.restrict_to is None else self.restrict_to
        ids = np.where(ids < 0, 0, ids)
        keep = rng.random(len(ids)) < np.exp(epsilon) / (np.exp(epsilon) + k - 1)
        other = rng.integers(0, k - 1, len(ids))
        other = other + (other >= ids)  # uniform over the k - 1 other rows
        return np.where(keep, ids, other).astype(np.int64)
