"""How much noise each compressed entry gets, and what that really guarantees (PRIVACY.md 8).

(N, epsilon)-LPLP (Schein et al. 2019): for count vectors ``y, y'`` with ``||y - y'||_1 <= N``,
``Pr[R(y) in S] <= e^epsilon Pr[R(y') in S]``. Two-sided geometric noise with
``alpha = exp(-rate)`` on each entry gives likelihood ratios at most
``exp(rate * ||y - y'||_1)``. Compression sums disjoint groups of features, ``C y``, and
``||C y - C y'||_1 <= ||y - y'||_1``, so

* **sound** (default): ``rate = epsilon / N`` on each of the K compressed entries gives
  (N, epsilon)-LPLP for the whole release, whatever K (K = M is the uncompressed release);
* **paper**: Schofield, Yauney & Mimno rescale the per-entry parameter to
  ``epsilon' = M epsilon / K`` (``rate = M epsilon / (K N)``). Neighbours that put all N
  changes into one group move one compressed entry by N, so the release is only
  (N, M epsilon / K)-LPLP, and that bound is attained. This mode exists to reproduce the
  paper's settings; every record states the true epsilon beside the claimed one. (The
  paper's final bound of the form ``Pr <= m e^epsilon Pr'`` likewise certifies only
  ``epsilon + ln m``, not epsilon.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from .._validation import check_choice, check_epsilon, check_int
from .noise import check_rate

CalibrationMode = Literal["sound", "paper"]
CALIBRATIONS: tuple[str, ...] = get_args(CalibrationMode)


@dataclass(frozen=True)
class NoiseCalibration:
    """Per-entry noise rate (``-ln alpha``) and the guarantee it gives."""

    rate: float
    epsilon: float  # the true epsilon of (N, epsilon)-LPLP for the whole release
    claimed_epsilon: float  # what was asked for (differs from epsilon in "paper" mode)
    n_changes: int
    calibration: CalibrationMode  # "sound" or "paper", as the transformer's setting names it

    @property
    def alpha(self) -> float:
        """The geometric parameter ``exp(-rate)``."""
        import math

        return math.exp(-self.rate)


def calibrate(
    epsilon: float,
    n_changes: int,
    n_features: int,
    n_groups: int,
    calibration: CalibrationMode = "sound",
) -> NoiseCalibration:
    """The noise of each compressed entry for (N, epsilon)-LPLP (see module docstring).
    ``calibration`` is the setting ``LPLPTransformer`` and ``LPLPRelease`` take."""
    epsilon = check_epsilon(epsilon)
    n_changes = check_int(n_changes, "n_changes", minimum=1)
    n_features = check_int(n_features, "n_features", minimum=1)
    n_groups = check_int(n_groups, "n_groups", minimum=1)
    if n_groups > n_features:
        raise ValueError(f"n_groups ({n_groups}) cannot exceed the {n_features} features")
    check_choice(calibration, "calibration", CALIBRATIONS)
    true_epsilon = epsilon if calibration == "sound" else n_features * epsilon / n_groups
    if calibration == "paper":  # the rescaled epsilon must itself be a valid one
        true_epsilon = check_epsilon(
            true_epsilon,
            f"the paper calibration's true epsilon M*epsilon/K = {n_features}*"
            f"{epsilon:g}/{n_groups}",
        )
    rate = check_rate(true_epsilon / n_changes)
    return NoiseCalibration(rate, true_epsilon, epsilon, n_changes, calibration)


def lplp_unit(n_changes: int) -> str:
    """What an LPLP epsilon is per (accountants add only equal units): the neighbouring
    relation of documents within L1 distance ``n_changes``."""
    return f"(N={n_changes})-LPLP document (L1 distance up to {n_changes})"
