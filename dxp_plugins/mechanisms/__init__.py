"""Word mechanisms and the registry-backed constructor."""

from __future__ import annotations

from typing import Any

from ..embeddings.table import EmbeddingTable
from .base import OOV_POLICIES, Mechanism

__all__ = ["OOV_POLICIES", "Mechanism", "make_mechanism"]


def make_mechanism(name: str, embeddings: EmbeddingTable | str, **params: Any) -> Mechanism:
    """Build a mechanism by registry name (entry-point group ``dxp_plugins_mechanisms``).

    >>> mech = make_mechanism("madlib", emb, epsilon=10.0)  # doctest: +SKIP
    """
    from .. import registry

    factory = registry.resolve(registry.mechanisms, name)
    mechanism = factory(embeddings, **params)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism {name!r} did not build a Mechanism")
    return mechanism
