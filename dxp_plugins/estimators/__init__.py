"""scikit-learn transformers: TextPrivatizer (text -> private text) and LPLPTransformer
(bag-of-words counts -> private counts). Imported lazily so ``import dxp_plugins`` stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._openmp import prefer_sleeping_threads

prefer_sleeping_threads()  # before scikit-learn loads OpenMP

_LAZY = {"TextPrivatizer": ".text", "LPLPTransformer": ".lplp"}

__all__ = sorted(_LAZY)


if TYPE_CHECKING:  # type checkers see the classes; a misspelt name is an error there too
    from .lplp import LPLPTransformer as LPLPTransformer
    from .text import TextPrivatizer as TextPrivatizer
else:
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, _LAZY)
