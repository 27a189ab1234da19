"""Word mechanisms (Madlib, TEM, BRR) and the registry-backed constructor. The mechanism
classes are imported on first use, as ``dxp_plugins`` imports them."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._random import RandomSource
from ..embeddings.table import EmbeddingTable
from .base import OOV_POLICIES, Mechanism

_LAZY = {"Madlib": ".madlib", "TEM": ".tem", "BRR": ".brr", "madlib_noise": ".madlib"}

__all__ = [
    "BRR",
    "OOV_POLICIES",
    "TEM",
    "Madlib",
    "Mechanism",
    "RandomSource",
    "madlib_noise",
    "make_mechanism",
]

if TYPE_CHECKING:
    from .brr import BRR as BRR
    from .madlib import Madlib as Madlib
    from .madlib import madlib_noise as madlib_noise
    from .tem import TEM as TEM
else:
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def make_mechanism(name: str, embeddings: EmbeddingTable | str, **params: Any) -> Mechanism:
    """Build a mechanism by registry name (entry-point group ``dxp_plugins_mechanisms``).

    >>> mech = make_mechanism("madlib", emb, epsilon=10.0)  # doctest: +SKIP
    """
    from .. import registry

    return _build(name, registry.resolve(registry.mechanisms, name), embeddings, params)


def _build(
    name: str, factory: Callable[..., Any], embeddings: Any, params: dict[str, Any]
) -> Mechanism:
    """``factory(embeddings, **params)``, refused with a TypeError naming ``name`` unless it
    takes these arguments and builds a :class:`Mechanism` holding its base settings (also
    what :func:`dxp_plugins.testing.check_mechanism` builds through)."""
    _check_arguments(name, inspect.signature(factory), embeddings, params)
    mechanism = factory(embeddings, **params)
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism {name!r} did not build a Mechanism")
    _check_kept(name, mechanism, params)
    return mechanism


def _check_kept(name: str, mechanism: Mechanism, params: dict[str, Any]) -> None:
    """TypeError when the mechanism built does not hold the base settings it was given. A
    constructor taking ``**kwargs`` and not passing them on to :class:`Mechanism` would
    release past the user's capped accountant (which would read 0 spent) and draw secure
    noise for a seeded door, and a factory could build another epsilon than the door
    states: the doors and records would describe settings the mechanism does not use."""
    import numbers

    from .._validation import check_epsilon

    dropped = []
    # As the base class stores it (a Fraction 1/10 is kept as 0.1).
    if "epsilon" in params and mechanism.epsilon != check_epsilon(params["epsilon"]):
        dropped.append(f"epsilon (given {params['epsilon']!r}, holds {mechanism.epsilon!r})")
    if "oov" in params and mechanism.oov != params["oov"]:
        dropped.append(f"oov (given {params['oov']!r}, holds {mechanism.oov!r})")
    accountant = params.get("accountant")
    if accountant is not None and mechanism.accountant is not accountant:
        dropped.append("accountant (it charges another ledger)")
    seed = params.get("random_state")
    if isinstance(seed, RandomSource) and mechanism._random is not seed:
        dropped.append("random_state (it draws from another random source)")
    elif isinstance(seed, numbers.Integral) and mechanism._random.seed != seed:
        dropped.append(f"random_state (given {seed}, holds {mechanism._random.seed})")
    if dropped:
        raise TypeError(
            f"mechanism {name!r} did not keep {'; '.join(dropped)}: its constructor must pass "
            "epsilon, oov, random_state and accountant on to Mechanism.__init__ unchanged"
        )


#: What every door passes a mechanism's constructor, which it must keep (:func:`_check_kept`).
BASE_SETTINGS = ("epsilon", "oov", "random_state", "accountant")


def check_factory(name: str, factory: Any, options: dict[str, Any]) -> None:
    """TypeError now when ``factory`` cannot take what every door passes (``epsilon``,
    ``oov``, ``random_state``, ``accountant``) with ``options``: a constructor without them
    would otherwise fail only at the first document or ``fit``, after ``add_pipe`` and a
    saved pipeline had succeeded. Not introspectable: it checks itself."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    _check_arguments(name, signature, None, {**options, **dict.fromkeys(BASE_SETTINGS)})


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
