"""Word mechanisms (Madlib, TEM, BRR) and the registry-backed constructor. The mechanism
classes are imported on first use, as ``dxp_plugins`` imports them."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ..embeddings.table import EmbeddingTable
from .base import OOV_POLICIES, Mechanism

_LAZY = {"Madlib": ".madlib", "TEM": ".tem", "BRR": ".brr"}

__all__ = ["BRR", "OOV_POLICIES", "TEM", "Madlib", "Mechanism", "make_mechanism"]

if TYPE_CHECKING:
    from .brr import BRR as BRR
    from .madlib import Madlib as Madlib
    from .tem import TEM as TEM
else:
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def make_mechanism(name: str, embeddings: EmbeddingTable | str, **params: Any) -> Mechanism:
    """Build a mechanism by registry name (entry-point group ``dxp_plugins_mechanisms``).

    >>> mech = make_mechanism("madlib", emb, epsilon=10.0)  # doctest: +SKIP
    """
    from .. import registry

    factory = registry.resolve(registry.mechanisms, name)
    _check_arguments(name, inspect.signature(factory), embeddings, params)
    mechanism = factory(embeddings, **params)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism {name!r} did not build a Mechanism")
    return mechanism


def _check_arguments(
    name: str, signature: inspect.Signature, embeddings: Any, params: dict[str, Any]
) -> None:
    """A TypeError naming the mechanism and the argument (Python's own names neither)."""
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = [] if accepts_any else sorted(set(params) - set(signature.parameters))
    if unknown:
        accepted = ", ".join(p for p in signature.parameters if p != "embeddings")
        raise TypeError(f"mechanism {name!r}: unknown argument(s) {unknown}; accepted: {accepted}")
    try:
        signature.bind(embeddings, **params)
    except TypeError as error:
        if "epsilon" in signature.parameters and "epsilon" not in params:
            raise TypeError(
                f"mechanism {name!r}: epsilon is required (no default: its scale depends on "
                f"the mechanism's metric)"
            ) from None
        raise TypeError(f"mechanism {name!r}: {error}") from None
