"""LPLP: limited-precision local privacy for bag-of-words counts, with horizontal compression.

Modules (one job each): :mod:`.noise` (exact integer two-sided geometric sampler),
:mod:`.calibration` (per-entry noise and the true guarantee), :mod:`.groupings` (public
partitions of the vocabulary, a registry), :mod:`.balanced` (equal-size k-means),
:mod:`.compression` (group sums and multinomial decompression), :mod:`.histogram` (a DP corpus
histogram with its own budget), :mod:`.weights` (public decompression weights),
:mod:`.release` (the release itself) and :mod:`.guarantee` (its record).
"""

from __future__ import annotations

from .calibration import CALIBRATIONS, NoiseCalibration, calibrate
from .groupings import GroupingContext, check_partition, make_groups
from .guarantee import LPLPGuarantee
from .release import LPLPRelease

__all__ = [
    "CALIBRATIONS",
    "GroupingContext",
    "LPLPGuarantee",
    "LPLPRelease",
    "NoiseCalibration",
    "calibrate",
    "check_partition",
    "make_groups",
]
