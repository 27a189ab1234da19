"""Madlib: multivariate Laplace noise on word embeddings, then the nearest word.

Feyisetan, Balle, Drake, Diethe, WSDM 2020, Algorithm 1 and Section 2.6: for a word w with
embedding phi(w) in R^n, release ``argmin_y ||phi(w) + Z - phi(y)||`` where Z has density
proportional to ``exp(-epsilon * ||z||_2)``. Sampled exactly as Z = r * g / ||g|| with
g ~ N(0, I_n) (uniform direction) and r ~ Gamma(shape=n, scale=1/epsilon). The release is
epsilon*d-private for d the Euclidean distance between embeddings; decoding is
post-processing of the noisy vector (PRIVACY.md 1-4).

Float residual (PRIVACY.md 10): numpy's Gamma (Marsaglia-Tsang) and normal (ziggurat)
samplers draw from float grids with bounded support, so outputs whose exact probability is
astronomically small (below ~1e-100, e.g. a word at distance >= 0.5 at epsilon = 700) have
realised probability 0: a delta of that order beside the pure epsilon*d bound (the noise
is added in float64).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._random import RandomSource
from ..embeddings.table import EmbeddingTable
from ..guarantee import Accountant, OOVPolicy
from ..neighbors import IndexMethod, NeighborIndex, check_index_params, get_index
from .base import Mechanism


def sample_noise(rng: np.random.Generator, count: int, dim: int, epsilon: float) -> np.ndarray:
    """``count`` draws of Z with density proportional to exp(-epsilon ||z||) in R^dim (§2.6)."""
    direction = rng.standard_normal((count, dim))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    radius = rng.gamma(shape=dim, scale=1.0 / epsilon, size=count)
    direction *= radius[:, None]
    return direction


def madlib_noise(rng: np.random.Generator, count: int, dim: int, epsilon: float) -> np.ndarray:
    """``count`` noise vectors of Madlib's law, density proportional to
    ``exp(-epsilon ||z||)`` in R^dim (§2.6: a uniform direction times a Gamma(dim,
    1/epsilon) radius), for plugins that add Madlib's noise before another decoding (a
    Vickrey-style choice): the sampler the T1 audit checks, drawn from ``rng``."""
    return sample_noise(rng, count, dim, epsilon)


class Madlib(Mechanism):
    """Madlib (Algorithm 1): ``epsilon * ||phi(w) - phi(w')||``-private word replacement.

    Feyisetan, Balle, Drake, Diethe, "Privacy- and Utility-Preserving Textual Analysis via
    Calibrated Multivariate Perturbations", WSDM 2020 (the module docstring has the details).

    Parameters
    ----------
    embeddings:
        The public vocabulary and vectors (an :class:`EmbeddingTable` or a registry name
        such as ``"glove-6b-50d"``).
    epsilon:
        Privacy per unit of Euclidean distance between embeddings, per token. Calibrate it
        (:func:`dxp_plugins.calibration.choose_epsilon`): on GloVe 50d ε = 10 keeps about
        half of review words unchanged.
    index:
        ``"exact"`` (default, exact faiss search) or ``"hnsw"`` (approximate, faster on big
        vocabularies; misses cost utility, never privacy); see :mod:`dxp_plugins.neighbors`.
    index_params:
        HNSW's ``m``, ``ef_construction``, ``ef_search``, ``disk_cache``.
    oov:
        ``"unk"`` (default: privatize from the table's public centroid), ``"raise"`` or
        ``"passthrough"`` (releases OOV tokens unchanged; warns, counted).
    random_state:
        None (default: ChaCha20 keyed by the OS) or an int seed for reproducible
        experiments (warns; recorded as ``"seeded"``; not for private releases).
    accountant:
        An :class:`~dxp_plugins.Accountant` to charge (share one to cap total spend).

    Use :meth:`privatize` (token lists), :meth:`privatize_ids`, or
    :func:`dxp_plugins.privatize_text` for raw text; ``last_guarantee`` records each release.
    """

    name = "madlib"
    #: The guarantee is per unit of Euclidean distance between vectors (Algorithm 1).
    metric = "euclidean"

    def __init__(
        self,
        embeddings: EmbeddingTable | str,
        epsilon: float,
        *,
        index: IndexMethod = "exact",
        index_params: dict[str, Any] | None = None,
        oov: OOVPolicy = "unk",
        random_state: int | RandomSource | None = None,
        accountant: Accountant | None = None,
    ) -> None:
        super().__init__(
            embeddings, epsilon, oov=oov, random_state=random_state, accountant=accountant
        )
        self.check_options(index=index, index_params=index_params)
        self._index = index
        self._index_params = dict(index_params or {})

    @classmethod
    def check_options(cls, *, index: Any = "exact", index_params: Any = None, **_: Any) -> None:
        """A known index and parameters it takes (values too for HNSW)."""
        if index_params is not None and not isinstance(index_params, Mapping):
            raise TypeError("index_params must be a dict of HNSW parameters")
        check_index_params(index, dict(index_params or {}))

    @property
    def index(self) -> str:
        """``"exact"`` or ``"hnsw"`` (fixed)."""
        return self._index

    @property
    def index_params(self) -> dict[str, Any]:
        """A copy of the HNSW parameters (fixed)."""
        return dict(self._index_params)

    @property
    def neighbor_index(self) -> NeighborIndex:
        """The (cached) nearest-neighbour index over the public table."""
        return get_index(self.embeddings, self._index, **self._index_params)

    def _prepare_release(self, ids: np.ndarray) -> None:
        self.neighbor_index  # noqa: B018 -- built (or loaded) before any charge

    def _sample(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        noisy = self._points(ids)
        noisy += sample_noise(rng, len(ids), self.embeddings.dim, epsilon)
        return self.neighbor_index.search(noisy, rng)

    def _settings(self) -> dict[str, Any]:
        settings = super()._settings()
        settings["index"] = self.index
        if self.index_params:
            settings["index_params"] = self.index_params
        return settings
