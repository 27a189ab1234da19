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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._wording import counted, number, total
from ..guarantee import RNG_MODES, _check_in, _library_version, check_record, merged, read_record
from .calibration import CALIBRATIONS


@dataclass(frozen=True)
class LPLPGuarantee:
    """What an LPLP release of ``documents`` count vectors guarantees for each of them."""

    #: The TRUE epsilon of each document's release: what it gets, whatever was asked.
    epsilon: float
    #: What was asked for; differs from ``epsilon`` only under ``calibration="paper"``.
    claimed_epsilon: float
    #: N: documents within L1 distance N are epsilon-indistinguishable.
    n_changes: int
    #: M, the vocabulary's features.
    n_features: int
    #: K, the groups (K == M: uncompressed).
    n_groups: int
    #: How the features were grouped (``"random"``, ``"frequency"``, ..., or a description).
    grouping: str
    #: Source of the decompression weights (public, or a DP histogram).
    weights: str
    #: Budget of the DP corpus histogram, when one was used (spent once per fit).
    histogram_epsilon: float | None
    #: ``"sound"`` or ``"paper"``.
    calibration: str
    #: Count vectors released.
    documents: int
    #: Fingerprint of the public embeddings the grouping used, or "".
    embeddings: str
    #: ``"secure"`` or ``"seeded"``.
    rng: str
    #: Releases merged into this record.
    releases: int = 1
    #: Which DP histogram release (one per fit) ``histogram_epsilon`` paid for.
    histogram_id: str | None = None
    mechanism: str = "lplp"
    library_version: str = field(default_factory=_library_version)

    def __post_init__(self) -> None:
        check_record(
            self,
            _TEXT_FIELDS,
            ("epsilon", "claimed_epsilon", "histogram_epsilon"),
            ("n_changes", "n_features", "n_groups", "documents", "releases"),
            optional=("histogram_epsilon", "histogram_id"),
        )
        _check_in(self.rng, "rng", RNG_MODES)
        _check_in(self.calibration, "calibration", CALIBRATIONS)

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
        eps, n = number(self.epsilon), self.n_changes
        release_spend = total(self.epsilon, self.releases)
        vectors = (
            f"two count vectors differing by at most {n} in total (L1) give outputs within a "
            f"factor e^{eps}"
        )
        if self.releases > 1:  # the same documents may be among them: say what k releases give
            text = (
                f"LPLP: {counted(self.releases, 'release')} of "
                f"{counted(self.documents, 'document')} in all; each release of a document is "
                f"({n}, {eps})-LPLP: {vectors}; a document in k of the releases is "
                f"({n}, k*{eps})-LPLP, in all of them ({n}, {release_spend})-LPLP. "
            )
        else:
            each = (
                "the 1 document" if self.documents == 1 else f"each of {self.documents} documents"
            )
            text = f"LPLP: {each} is ({n}, {eps})-LPLP: {vectors}. "
        text += self._in_words()
        features = (
            f"{self.n_features} features, uncompressed"
            if self.n_groups == self.n_features
            else f"{self.n_features} features compressed into {self.n_groups} groups "
            f"({self.grouping})"
        )
        text += f"{features}; decompression weights: {self.weights}; noise {self.rng}."
        if self.calibration == "paper":
            text += (
                f" Paper parametrization (per-entry epsilon' = M*epsilon/K): claimed "
                f"{number(self.claimed_epsilon)}, TRUE epsilon {eps}."
            )
        if self.histogram_epsilon is not None:
            histogram = number(self.histogram_epsilon)
            text += (
                f" A DP corpus histogram ({n}, {histogram}) "
                f"was released centrally for the grouping/weights: documents in that corpus "
                f"spend {histogram} more. This record's spend: "
                f"{total(self.epsilon, self.releases, self.histogram_epsilon)} "
                f"({release_spend} for {counted(self.releases, 'release')} + "
                f"{histogram} for the histogram, once)."
            )
        elif self.releases > 1:
            text += (
                f" This record's spend: {release_spend} "
                f"({counted(self.releases, 'release')} x {eps})."
            )
        return text

    def __str__(self) -> str:
        """The :attr:`statement`; ``repr`` lists the fields."""
        return self.statement

    def _in_words(self) -> str:
        """The L1 bound in word occurrences: removing or adding one occurrence changes a
        count vector by 1 in L1, replacing one word by another by 2, and the two-sided
        geometric noise's loss is linear in L1 (``epsilon / N`` per unit), so a change of c
        occurrences costs ``c * epsilon / N``. That holds when each column counts one word;
        with n-grams of lengths 1..n one occurrence moves up to n^2 counts (bigrams: 4,
        measured at 4 epsilon), so the sentence says so."""
        eps, n = number(self.epsilon), self.n_changes
        per, up_to = (eps, "") if n == 1 else (f"{eps}/{n}", f"e^{eps} for c up to {n}; ")
        each = " (per release)" if self.releases > 1 else ""
        return (
            f"In words{each}: adding or removing c word occurrences in a document changes "
            f"the probability of any output by at most a factor e^(c*{per}) ({up_to}"
            "replacing a word by another is c = 2), so whether a document holds a word c "
            "times is protected only at that factor; this counts one column per word (with "
            "n-gram columns of lengths 1 to n, one word moves up to n^2 counts: c = n^2). "
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived ``release_spend``, ``spend`` (the total) and
        ``statement`` included."""
        record = dataclasses.asdict(self)
        record["release_spend"] = self.release_spend
        record["spend"] = self.spend
        record["statement"] = self.statement
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> LPLPGuarantee:
        """The inverse of :meth:`to_dict`, checked as
        :meth:`dxp_plugins.guarantee.Guarantee.from_dict` is (the derived ``release_spend``
        and ``spend`` must follow from the fields)."""
        loaded: LPLPGuarantee = read_record(cls, record, ("release_spend", "spend"))
        return loaded

    def merge(self, other: LPLPGuarantee) -> LPLPGuarantee:
        """Both releases together (same settings and library version; documents and
        releases add up; TypeError for a record of another kind). A DP histogram is
        counted once, so records of different histogram releases (different fits) are
        refused: each of those charged its own histogram."""
        merged_record: LPLPGuarantee = merged(
            self, other, ("documents", "releases"), "LPLP guarantees"
        )
        return merged_record


_TEXT_FIELDS = (
    "grouping",
    "weights",
    "calibration",
    "embeddings",
    "rng",
    "histogram_id",
    "mechanism",
    "library_version",
)
