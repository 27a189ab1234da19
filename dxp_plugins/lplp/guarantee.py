"""The record of an LPLP release (PRIVACY.md 8, 9, 12).

:class:`~dxp_plugins.guarantee.Guarantee` describes word-level metric DP: a metric, tokens
privatized, an OOV policy, and ``spend = epsilon * tokens`` (composition over token
positions). None of that fits a bag-of-words release, where each document's whole count
vector is *one* (N, epsilon)-LPLP release: the unit is a document, the neighbour relation is
an L1 ball of radius N, and what matters is the grouping (K of M features) and where the
decompression weights come from. Hence this separate record, with the same interface
(``spend``, ``statement``, ``to_dict``, ``merge``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..guarantee import _library_version, counted


@dataclass(frozen=True)
class LPLPGuarantee:
    """What an LPLP release of ``documents`` count vectors guarantees for each of them."""

    epsilon: float  # true epsilon of each document's release
    claimed_epsilon: float  # what was asked for; != epsilon only in calibration="paper"
    n_changes: int  # N: documents within L1 distance N are epsilon-indistinguishable
    n_features: int  # M
    n_groups: int  # K (K == M: uncompressed)
    grouping: str
    weights: str  # source of the decompression weights (public, or a DP histogram)
    histogram_epsilon: float | None  # budget of the DP corpus histogram, when one was used
    calibration: str  # "sound" or "paper"
    documents: int
    embeddings: str  # fingerprint of the public embeddings used by the grouping, or ""
    rng: str
    releases: int = 1
    #: Which DP histogram release (one per fit) ``histogram_epsilon`` paid for.
    histogram_id: str | None = None
    mechanism: str = "lplp"
    library_version: str = field(default_factory=_library_version)

    @property
    def release_spend(self) -> float:
        """Per-document epsilon of the LPLP releases alone (each document is one local release)."""
        return self.epsilon * self.releases

    @property
    def spend(self) -> float:
        """What the accountant was charged (PRIVACY.md 13): :attr:`release_spend` plus, once,
        ``histogram_epsilon`` -- spent by every document of the corpus the histogram counts."""
        return self.release_spend + (self.histogram_epsilon or 0.0)

    @property
    def statement(self) -> str:
        """One paragraph a user can read."""
        each = "the 1 document" if self.documents == 1 else f"each of {self.documents} documents"
        text = (
            f"LPLP: {each} is ({self.n_changes}, "
            f"{self.epsilon:g})-LPLP: two count vectors differing by at most "
            f"{self.n_changes} in total (L1) give outputs within a factor "
            f"e^{self.epsilon:g}. "
            + (
                f"{self.n_features} features, uncompressed"
                if self.n_groups == self.n_features
                else f"{self.n_features} features compressed into {self.n_groups} groups "
                f"({self.grouping})"
            )
            + f"; decompression weights: {self.weights}; noise {self.rng}."
        )
        if self.calibration == "paper":
            text += (
                f" Paper parametrization (per-entry epsilon' = M*epsilon/K): claimed "
                f"{self.claimed_epsilon:g}, TRUE epsilon {self.epsilon:g}."
            )
        if self.histogram_epsilon is not None:
            text += (
                f" A DP corpus histogram ({self.n_changes}, {self.histogram_epsilon:g}) "
                f"was released centrally for the grouping/weights: documents in that corpus "
                f"spend {self.histogram_epsilon:g} more. This record's spend: {self.spend:g} "
                f"({self.release_spend:g} for {counted(self.releases, 'release')} + "
                f"{self.histogram_epsilon:g} for the histogram, once)."
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived ``release_spend``, ``spend`` (the total) and
        ``statement`` included."""
        record = dataclasses.asdict(self)
        record["release_spend"] = self.release_spend
        record["spend"] = self.spend
        record["statement"] = self.statement
        return record

    def merge(self, other: LPLPGuarantee) -> LPLPGuarantee:
        """Both releases together (same settings; documents and releases add up). A DP
        histogram is counted once, so records of different histogram releases (different
        fits) are refused: each of those charged its own histogram."""
        keys = (
            "epsilon",
            "claimed_epsilon",
            "n_changes",
            "n_features",
            "n_groups",
            "grouping",
            "weights",
            "histogram_epsilon",
            "calibration",
            "embeddings",
            "rng",
            "histogram_id",
        )
        for key in keys:
            if getattr(self, key) != getattr(other, key):
                raise ValueError(f"cannot merge LPLP guarantees with different {key}")
        return dataclasses.replace(
            self,
            documents=self.documents + other.documents,
            releases=self.releases + other.releases,
        )
