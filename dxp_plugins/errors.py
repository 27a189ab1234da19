"""Exceptions and warnings raised by dxp_plugins.

Messages never contain the text being privatized (PRIVACY.md 18): they name the
problem and, where useful, a position, never a token.
"""

from __future__ import annotations


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


class PrivacyWarning(UserWarning):
    """Something weakens the guarantee on purpose (seeding, pass-through, ...)."""


class SeededRandomnessWarning(PrivacyWarning):
    """Noise comes from a seeded, reproducible generator instead of a secure one."""
