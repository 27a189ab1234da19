"""Exceptions and warnings raised by dxp_plugins.

Messages never contain the text being privatized: they name the problem and, where useful,
a position, never a token.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import sys
import warnings
from typing import Any

__all__ = [
    "BudgetExceededError",
    "CalibrationWarning",
    "DxpError",
    "DxpWarning",
    "InvalidTableError",
    "OOVError",
    "OOVWarning",
    "PluginLoadError",
    "PluginWarning",
    "PrivacyWarning",
    "SeededRandomnessWarning",
    "TextTooLongError",
]


class DxpError(Exception):
    """Base class of every error this package raises on purpose."""


class BudgetExceededError(DxpError):
    """A release would push an :class:`~dxp_plugins.guarantee.Accountant` past its cap."""


class OOVError(DxpError, ValueError):
    """An out-of-vocabulary token met the ``oov="raise"`` policy.

    ``document`` and ``token`` give its position in the batch when known, so a caller can
    name its own place (a text's index, an input line).
    """

    def __init__(
        self, message: str, *, document: int | None = None, token: int | None = None
    ) -> None:
        super().__init__(message)
        self.document = document
        self.token = token

    def __reduce__(self) -> tuple[Any, ...]:  # keyword fields survive a pickle (workers)
        return _rebuilt, (
            type(self),
            (str(self),),
            {"document": self.document, "token": self.token},
        )


class TextTooLongError(DxpError, ValueError):
    """A text is longer than the spaCy pipeline that must tag it whole can read
    (``max_length``): ``document`` is its index among the caller's texts, ``length`` and
    ``limit`` the two sizes."""

    def __init__(self, *, document: int, length: int, limit: int) -> None:
        super().__init__(
            f"text {document} has {length:,} characters, more than the spaCy pipeline's "
            f"max_length ({limit:,}) that a tagged selection (pos, entities, token filter) "
            f"needs whole: split it, or raise max_length"
        )
        self.document, self.length, self.limit = document, length, limit

    def __reduce__(self) -> tuple[Any, ...]:
        fields = {"document": self.document, "length": self.length, "limit": self.limit}
        return _rebuilt, (type(self), (), fields)


class InvalidTableError(DxpError, ValueError):
    """An :class:`~dxp_plugins.EmbeddingTable`'s words, vectors or frequency rank failed
    validation (PRIVACY.md 26); from a registry loader, the message names the embeddings."""


class PluginLoadError(DxpError, ValueError):
    """A registry entry that failed to import or is not callable; ``reason`` is the cause
    (the message names the registry name and the plugin's distribution and target)."""

    def __init__(self, message: str, reason: Exception) -> None:
        super().__init__(message)
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        return _rebuilt, (type(self), (str(self), self.reason), {})


def _rebuilt(kind: type[Exception], args: tuple[Any, ...], fields: dict[str, Any]) -> Exception:
    """An exception of ``kind`` made again from a pickle (their fields are keywords)."""
    return kind(*args, **fields)


def os_reason(error: OSError) -> str:
    """The operating system's reason for ``error`` ("No such file or directory"), or its
    type's name for an OSError made without an errno (whose ``strerror`` is None): never
    its message, which may quote a path or input."""
    return error.strerror or type(error).__name__


class DxpWarning(UserWarning):
    """Base class of every warning this package issues: filter them all with
    ``warnings.filterwarnings("ignore", category=DxpWarning)`` (or ``-W`` in pytest)."""


class PrivacyWarning(DxpWarning):
    """Something weakens the guarantee on purpose (seeding, pass-through, ...)."""


class SeededRandomnessWarning(PrivacyWarning):
    """Noise comes from a seeded, reproducible generator instead of a secure one."""


class PluginWarning(DxpWarning, RuntimeWarning):
    """A registry entry point failed to load, or shadows a built-in name (the built-in is
    used). Also a RuntimeWarning."""


class CalibrationWarning(DxpWarning, RuntimeWarning):
    """A calibration result is less certain than it looks: checks not monotone in epsilon,
    or a maximum bracketed rather than found. Also a RuntimeWarning."""


class OOVWarning(DxpWarning):
    """Most tokens of a release were out of the embeddings' vocabulary: under
    ``oov="unk"`` each was privatized from the one public UNK point, so the private text
    keeps nothing of them (text in another language, or a small ``vocab_size``)."""


#: Packages whose frames a warning skips to reach the user's line: the user calls them,
#: and they call this package (e.g. ``nlp.add_pipe`` -> the factory, ``Pipeline.fit``).
_CALLER_SKIPS = (
    "dxp_plugins",
    "spacy",
    "thinc",
    "confection",
    "catalogue",
    "sklearn",
    "joblib",
)


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn`` attributed to the first frame outside this package and the
    frameworks that call it, so the warning names the user's line whatever the door."""
    prefixes = tuple(_CALLER_PREFIXES.get(name) or _prefix(name) for name in _CALLER_SKIPS)
    skipped = (*filter(None, prefixes), functools.__file__, contextlib.__file__, copy.__file__)
    frame = sys._getframe(1)
    level = 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(skipped):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


_CALLER_PREFIXES: dict[str, str] = {}


def _prefix(name: str) -> str:
    """The directory of an imported package (with a trailing separator), else ""."""
    module = sys.modules.get(name)
    path = getattr(module, "__file__", None)
    if path is None:
        return ""
    _CALLER_PREFIXES[name] = prefix = os.path.dirname(path) + os.sep
    return prefix
