"""dxp_plugins: word-level metric differential privacy for spaCy, scikit-learn and gensim.

Public names are imported lazily (PEP 562), so ``import dxp_plugins`` -- which every
``spacy.blank()`` triggers through the entry points -- loads no faiss, gensim or data.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    BudgetExceededError,
    DxpError,
    OOVError,
    PrivacyWarning,
    SeededRandomnessWarning,
)

__version__ = "0.1.0"

_LAZY: dict[str, tuple[str, str]] = {
    "EmbeddingTable": (".embeddings.table", "EmbeddingTable"),
    "load_embeddings": (".embeddings", "load_embeddings"),
    "Mechanism": (".mechanisms.base", "Mechanism"),
    "make_mechanism": (".mechanisms", "make_mechanism"),
    "Madlib": (".mechanisms.madlib", "Madlib"),
    "TEM": (".mechanisms.tem", "TEM"),
    "BRR": (".mechanisms.brr", "BRR"),
    "Guarantee": (".guarantee", "Guarantee"),
    "Accountant": (".guarantee", "Accountant"),
    "privatize_text": (".text", "privatize_text"),
    "privatize_texts": (".text", "privatize_texts"),
    "TextPrivatizer": (".estimators", "TextPrivatizer"),
    "LPLPTransformer": (".estimators", "LPLPTransformer"),
}
_SUBMODULES = (
    "audit",
    "calibration",
    "datasets",
    "doors",
    "embeddings",
    "estimators",
    "guarantee",
    "lplp",
    "mechanisms",
    "neighbors",
    "pipeline",
    "plotting",
    "registry",
    "text",
    "topics",
)

__all__ = [
    "BudgetExceededError",
    "DxpError",
    "OOVError",
    "PrivacyWarning",
    "SeededRandomnessWarning",
    "__version__",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module_name, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module_name, __name__), attribute)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dxp_plugins' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*__all__, *_SUBMODULES})


if TYPE_CHECKING:
    from .embeddings import load_embeddings
    from .embeddings.table import EmbeddingTable
    from .guarantee import Accountant, Guarantee
    from .mechanisms import make_mechanism
    from .mechanisms.base import Mechanism
    from .mechanisms.brr import BRR
    from .mechanisms.madlib import Madlib
    from .mechanisms.tem import TEM
    from .text import privatize_text, privatize_texts
