"""``privatize_at``: where a private transformer releases, shared by ``TextPrivatizer`` and
``LPLPTransformer`` so both take the same values, refuse the same way and warn alike.

``"always"`` privatizes in ``fit_transform`` and ``transform``; ``"fit"`` only in
``fit_transform`` (what ``Pipeline.fit`` calls), so a Pipeline trains on private data and
``transform`` (scoring, prediction) passes its input through: the "training time" setting.
"""

from __future__ import annotations

from typing import Literal, get_args

from .._validation import check_choice
from ..errors import PrivacyWarning, warn

PrivatizeAt = Literal["always", "fit"]
PRIVATIZE_AT: tuple[str, ...] = get_args(PrivatizeAt)


def check_privatize_at(value: object) -> str:
    """``value`` if it is one of :data:`PRIVATIZE_AT` (ValueError otherwise)."""
    return check_choice(value, "privatize_at", PRIVATIZE_AT)


def warn_if_fitted_without_release(estimator: object, output: str) -> None:
    """Warn that a ``privatize_at="fit"`` ``transform`` returns its ``output`` (e.g.
    ``"texts"``) unchanged although ``estimator`` never released anything: it was fitted by
    ``fit``, not ``fit_transform`` (``_released_at_fit`` False), so ``fit(X).transform(X)``
    hands back raw data where ``fit_transform(X)`` would have privatized it."""
    if getattr(estimator, "_released_at_fit", True):  # True also in pickles made before
        return
    warn(
        f'privatize_at="fit": transform returns the {output} unchanged, and this '
        f"{type(estimator).__name__} was fitted by fit(), which privatizes nothing: use "
        f"fit_transform (as Pipeline.fit does) for private training {output}",
        PrivacyWarning,
    )
