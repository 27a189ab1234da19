"""scikit-learn transformers: TextPrivatizer (text -> private text) and LPLPTransformer
(bag-of-words counts -> private counts). Imported lazily so ``import dxp_plugins`` stays cheap."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .._openmp import prefer_sleeping_threads

prefer_sleeping_threads()  # before scikit-learn loads OpenMP

_LAZY = {"TextPrivatizer": ".text", "LPLPTransformer": ".lplp"}

__all__ = sorted(_LAZY)


if TYPE_CHECKING:  # type checkers see the classes; a misspelt name is an error there too
    from .lplp import LPLPTransformer as LPLPTransformer
    from .text import TextPrivatizer as TextPrivatizer
else:

    def __getattr__(name: str) -> Any:
        if name in _LAZY:
            return getattr(importlib.import_module(_LAZY[name], __name__), name)
        raise AttributeError(f"module 'dxp_plugins.estimators' has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*globals(), *_LAZY})
