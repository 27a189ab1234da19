"""Refusing the seeds scikit-learn's ensembles hand out, shared by ``TextPrivatizer`` and
``LPLPTransformer``.

``BaggingClassifier``, ``BaggingRegressor`` and the ``AdaBoost`` estimators set every
parameter named ``random_state`` (or ``*__random_state``) of the estimators they build to an
int drawn from their own ``random_state``, or from numpy's global generator when that is
None (``sklearn.ensemble._base._set_random_states``). A privatizing step inside one would
draw seeded noise nobody asked for, predictable from the ensemble's seed or
``np.random.seed`` (PRIVACY.md 16, 17), and would release each
document once per bag. The step refuses those seeds; the privatizer belongs before the
ensemble, releasing once.
"""

from __future__ import annotations

import sys
from typing import Any

#: The scikit-learn function that seeds an ensemble's estimators.
_ENSEMBLE_SEEDER = "_set_random_states"


class RefusesEnsembleSeeds:
    """``set_params`` refuses a ``random_state`` set by an ensemble (mixed in before
    ``BaseEstimator``)."""

    def set_params(self, **params: Any) -> Any:
        """scikit-learn's ``set_params``, refusing a ``random_state`` that an ensemble
        (Bagging, AdaBoost) sets: the privatizer belongs before the ensemble."""
        if params.get("random_state") is not None and _set_by_an_ensemble():
            name = type(self).__name__
            raise ValueError(
                f"a scikit-learn ensemble (Bagging, AdaBoost) seeds every random_state of "
                f"its estimators from its own random_state or numpy's global one: this "
                f"{name}'s noise would be predictable from it, and each document released "
                f"once per bag. Put the {name} before the ensemble, e.g. "
                f"make_pipeline({name}(...), CountVectorizer(), BaggingClassifier(...))"
            )
        return super().set_params(**params)  # type: ignore[misc]


def _set_by_an_ensemble() -> bool:
    """Whether scikit-learn's ensemble seeder is among the callers."""
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if code.co_name == _ENSEMBLE_SEEDER and frame.f_globals.get("__name__", "").startswith(
            "sklearn."
        ):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False
