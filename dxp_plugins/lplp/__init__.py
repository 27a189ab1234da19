"""LPLP: limited-precision local privacy for bag-of-words counts, with horizontal compression.

Modules (one job each): :mod:`.noise` (exact integer two-sided geometric sampler),
:mod:`.calibration` (per-entry noise and the true guarantee), :mod:`.groupings` (public
partitions of the vocabulary, a registry), :mod:`.balanced` (equal-size k-means),
:mod:`.compression` (group sums and multinomial decompression), :mod:`.histogram` (a DP corpus
histogram with its own budget), :mod:`.weights` (public decompression weights),
:mod:`.release` (the release itself) and :mod:`.guarantee` (its record).

References. LPLP is Schein et al. (ICML 2019); the compression, the four groupings and the
LDA/LSA evaluation follow Schofield, Yauney & Mimno, "Combatting the Challenges of Local
Privacy for Distributional Semantics with Compression". That paper is not available offline
where this library is developed, so no module here cites its sections, equations or
algorithms, and docs/lplp.md quotes none of its numbers. What the code relies on is stated,
and tested, in the privacy contract instead: PRIVACY.md 8 (the sound calibration
``alpha = exp(-epsilon / N)`` per compressed entry, and the paper's ``M epsilon / K`` with
its true guarantee), 9 (public groupings and decompression weights, or a DP histogram with
its own budget) and 10 (the exact integer two-sided geometric sampler).
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
