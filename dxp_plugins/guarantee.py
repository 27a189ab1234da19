"""What a release guarantees (PRIVACY.md 12-13).

A :class:`Guarantee` describes one release: which mechanism, epsilon and metric, which
public embeddings (fingerprint), how many tokens were privatized and how many passed
through unchanged (and how many of those were words released raw, unprotected), the OOV
policy and whether the noise was secure or seeded.

A record travels with the private text (``doc._.dxp_guarantee``, ``--report``), so it holds
only what the release already shows: token counts (the output's length and its unchanged
tokens). It never holds a count of out-of-vocabulary inputs: under the default ``oov="unk"``
they are privatized like any word, and their number is a noiseless function of the private
text (the leak PRIVACY.md 20 forbids "drop" for). ``words_passed_through`` counts only
words released raw by the caller's choice (``oov="passthrough"``, a restricted selection):
it is ``tokens_passed_through`` less the allow-listed punctuation, which is unprotected by
design, so it states nothing the release does not already leave unprotected.

Metric DP composes additively over token positions: two documents of equal length
``x, x'`` give outputs whose likelihood ratio is at most ``exp(sum_i epsilon * d(x_i, x'_i))``.
``spend`` is ``sum_i epsilon`` over privatized tokens, i.e. the bound per unit of the
largest per-token distance. An :class:`Accountant` sums spend over releases and can refuse
a release that would exceed a cap *before* any noise is drawn.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from ._accountant import Accountant
from ._validation import is_amount, is_integral, is_real
from ._wording import counted, number, total

__all__ = [
    "ALL_WORDS",
    "OOV_POLICIES",
    "RNG_MODES",
    "Accountant",
    "Guarantee",
    "OOVPolicy",
]

#: ``Guarantee.selection`` when every word is privatized (the default text path: only
#: whitespace and the public punctuation allow-list pass through).
ALL_WORDS = "every word"

#: ``"unk"`` (default): an OOV token is privatized from the table's public UNK point;
#: ``"raise"``: OOVError; ``"passthrough"``: explicit opt-in, the token is released
#: unchanged and counted in the guarantee. There is no "drop" (it would leak the count).
OOVPolicy = Literal["unk", "raise", "passthrough"]
OOV_POLICIES: tuple[str, ...] = get_args(OOVPolicy)

#: The randomness modes a record may state (:mod:`dxp_plugins._random`).
RNG_MODES = ("secure", "seeded")


def _library_version() -> str:
    from ._revision import library_version

    return library_version()


@dataclass(frozen=True)
class Guarantee:
    """The guarantee of one release (a token batch, a document or a corpus).

    ``embeddings`` is the fingerprint of the public space the release searched: the
    table's :attr:`~dxp_plugins.EmbeddingTable.fingerprint`, or for BRR a hash of the
    table's and the binary codes' fingerprints (the codes are what it searches).

    ``words_passed_through`` is the part of ``tokens_passed_through`` that is words released
    raw and unprotected: out-of-vocabulary words under ``oov="passthrough"`` and words a
    restricted selection left out. The rest of ``tokens_passed_through`` is allow-listed
    punctuation (:data:`dxp_plugins.text.PUNCTUATION`). For a mechanism called directly
    every token passed through is a word (it privatizes every token it is given).

    ``max_document_tokens`` is the most tokens privatized in one of the per-document
    records merged into this one (every door makes one record per document; a mechanism
    call is one document), or None when that is ``tokens_privatized`` (a single document):
    ``max_document_spend`` bounds what any one document spent in one release. A merge
    cannot tell whether its records are of different documents: a document released k
    times (``fit_transform`` then ``transform`` of the same texts, cross-validation folds)
    spent the sum of its releases, up to k times that and never more than ``spend``.
    Records written before the field existed read back as None, which overstates, never
    understates, the bound.

    Every field is checked when a record is built (:meth:`from_dict` included): a record
    with a negative, NaN or non-numeric epsilon or count, or an unknown RNG mode or OOV
    policy, would state or total a spend that no release made (TypeError/ValueError), and
    so is one with more words than tokens passed through.
    """

    #: The mechanism's registry name (``"madlib"``, ``"tem"``, ``"brr"`` or a plugin's).
    mechanism: str
    #: Per token, per unit of ``metric``: each privatized token is ``epsilon * d``-private.
    epsilon: float
    #: The distance ``d`` that ``epsilon`` is per unit of (e.g. ``"euclidean"``).
    metric: str
    #: Fingerprint of the public space searched (see above).
    embeddings: str
    #: Words in that space: the outputs a token can become.
    vocab_size: int
    #: Tokens privatized (each charged ``epsilon``) and tokens left as they were.
    tokens_privatized: int
    tokens_passed_through: int
    #: The ``oov`` setting of the release (``"unk"``, ``"passthrough"`` or ``"raise"``).
    oov_policy: str
    #: ``"secure"`` (an OS-seeded ChaCha20 stream) or ``"seeded"`` (reproducible, weaker).
    rng: str
    words_passed_through: int = 0
    #: Releases merged into this record (1 for one release).
    releases: int = 1
    max_document_tokens: int | None = None
    #: Which tokens the release privatized: every word, or a door's pos/entities/filter.
    selection: str = ALL_WORDS
    #: The registered mask that hid identifiers before privatizing (``mask="identifiers"``),
    #: or None; ``spans_masked``: the placeholders it wrote, each one of the tokens passed
    #: through (what the placeholders hid is never released nor counted).
    mask: str | None = None
    spans_masked: int = 0
    #: The dxp_plugins version that made the record.
    library_version: str = field(default_factory=_library_version)

    def __post_init__(self) -> None:
        check_record(self, _TEXT_FIELDS, ("epsilon",), _COUNT_FIELDS, optional=("mask",))
        _check_in(self.rng, "rng", RNG_MODES)
        _check_in(self.oov_policy, "oov_policy", OOV_POLICIES)
        if self.words_passed_through > self.tokens_passed_through:
            raise ValueError(
                f"guarantee field words_passed_through ({self.words_passed_through}) must not "
                f"exceed tokens_passed_through ({self.tokens_passed_through}): the words "
                "released raw are some of the tokens passed through"
            )
        if self.spans_masked:
            if self.mask is None:
                raise ValueError("guarantee field spans_masked must be 0 when mask is None")
            if self.words_passed_through + self.spans_masked > self.tokens_passed_through:
                raise ValueError(
                    f"guarantee fields words_passed_through ({self.words_passed_through}) and "
                    f"spans_masked ({self.spans_masked}) must not exceed tokens_passed_through "
                    f"({self.tokens_passed_through}) together: raw words and placeholders are "
                    "different tokens passed through"
                )
        if self.max_document_tokens is not None:
            check_record(self, (), (), ("max_document_tokens",))
            most, releases = self.max_document_tokens, max(self.releases, 1)
            if not self.tokens_privatized <= most * releases or most > self.tokens_privatized:
                raise ValueError(
                    f"guarantee field max_document_tokens ({most}) must lie between "
                    f"tokens_privatized / releases ({self.tokens_privatized} / {releases}) and "
                    f"tokens_privatized: the largest of the documents merged here"
                )
            if self.max_document_tokens == self.tokens_privatized:  # one form per record
                object.__setattr__(self, "max_document_tokens", None)

    @property
    def spend(self) -> float:
        """``epsilon * tokens_privatized``: the bound per unit of per-token distance."""
        return self.epsilon * self.tokens_privatized

    @property
    def max_document_spend(self) -> float:
        """``epsilon`` times the most tokens privatized in one document: what any one
        document spent in one release, the figure to quote when one document is one person
        and each document was released once (a document released k times spent up to k
        times it; ``spend`` bounds changing every document of every release at once)."""
        return self.epsilon * _most_tokens(self)

    @property
    def statement(self) -> str:
        """One sentence a user can read."""
        unit = {
            "euclidean": "Euclidean distance between word embeddings",
            "hamming": "Hamming distance between binary word codes",
            # A plugin's randomized response over words.
            "discrete": "discrete distance between words (1 for any two different words)",
        }.get(self.metric, f"{self.metric} distance between word embeddings")
        each = (
            "the 1 privatized token is"
            if self.tokens_privatized == 1
            else f"each of {self.tokens_privatized} privatized tokens is"
        )
        text = (
            f"{self.mechanism}: {each} "
            f"{number(self.epsilon)}*d-private for d = {unit} "
            f"(total {total(self.epsilon, self.tokens_privatized)} per unit distance"
            f"{self._most_in_one()}); "
            f"{counted(self.tokens_passed_through, 'token')} "
            f"passed through unchanged{self._raw_words()}; noise {self.rng}."
        )
        if self.selection != ALL_WORDS:
            text += (
                " Which tokens were privatized was decided from the raw text "
                f"({self.selection}): that decision is not protected, so the bound holds "
                "between texts that select the same tokens and share the unselected ones."
            )
        if self.mask is not None:
            text += (
                f" Mask {self.mask!r} replaced {counted(self.spans_masked, 'run')} of tokens "
                "by [...] (passed through; what it hid was not released): where it did was "
                "decided from the raw text, so the bound holds between texts that mask the "
                "same tokens."
            )
        if self.oov_policy == "passthrough":
            text += (
                " Out-of-vocabulary tokens were released unchanged and unprotected (oov="
                '"passthrough"): which tokens those are was decided from the raw text, so '
                "the bound holds between texts that have the same out-of-vocabulary tokens "
                "in the same places."
            )
        return text

    def __str__(self) -> str:
        """The :attr:`statement`; ``repr`` lists the fields."""
        return self.statement

    def _most_in_one(self) -> str:
        """``"; at most 39 tokens, 230.1, per document per release"`` when a merged record's
        largest release privatized fewer tokens than all of them ("" otherwise)."""
        most = self.max_document_tokens
        if most is None:
            return ""
        spent = total(self.epsilon, most)
        return f"; at most {counted(most, 'token')}, {spent}, per document per release"

    def _raw_words(self) -> str:
        """``" (2 of them words released raw)"`` after the tokens passed through ("" for
        none)."""
        words = self.words_passed_through
        if words == 0:
            return ""
        if words == self.tokens_passed_through:
            return " (a word released raw)" if words == 1 else " (all of them words released raw)"
        return f" ({words} of them {'a word' if words == 1 else 'words'} released raw)"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived ``spend``, ``max_document_spend`` and
        ``statement`` included (``words_passed_through`` right after
        ``tokens_passed_through``, which it is part of)."""
        # The fields are str, int, float or None: asdict's deep copies of them are the
        # same values (and cost two thirds of a spaCy Doc's record).
        fields = {item.name: getattr(self, item.name) for item in dataclasses.fields(self)}
        record: dict[str, Any] = {}
        for key, value in fields.items():
            if key != "words_passed_through":
                record[key] = value
            if key == "tokens_passed_through":
                record["words_passed_through"] = fields["words_passed_through"]
        record["spend"] = self.spend
        record["max_document_spend"] = self.max_document_spend
        record["statement"] = self.statement
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Guarantee:
        """The inverse of :meth:`to_dict` (e.g. of ``doc._.dxp_guarantee``).

        Refuses (ValueError) a key the record does not have, a missing ``library_version``
        or ``words_passed_through`` (every record this library writes has both: a record
        without the count of raw words cannot say none were released), and a ``spend``
        that the fields do not give. ``statement`` is checked too when the record comes
        from this library version (the wording may differ between versions; the loaded
        record states it with this version's wording).
        """
        return read_record(
            cls,
            record,
            ("spend", "max_document_spend"),
            required=("library_version", "words_passed_through"),
        )

    def merge(self, other: Guarantee) -> Guarantee:
        """The guarantee of both releases together (same mechanism settings and library
        version only; TypeError for a record of another kind)."""
        return _fold(self, (other,))

    def _merge_checked(self, other: Guarantee) -> Guarantee:
        """:meth:`merge` one step at a time, every intermediate record built and checked:
        what :func:`_fold` falls back to for the exact error of a merge that fails."""
        unset = dataclasses.replace(self, max_document_tokens=None)  # valid while summing
        record = merged(unset, other, _MERGED_COUNTS, "guarantees", largest=_MERGED_LARGEST)
        most = max(_most_tokens(self), _most_tokens(other))
        return dataclasses.replace(record, max_document_tokens=most)

    def add_passed_through(self, count: int, words: int = 0, masked: int = 0) -> Guarantee:
        """This guarantee with ``count`` more tokens passed through unchanged, ``words`` of
        them words released raw and ``masked`` of them a mask's placeholders (the rest
        allow-listed punctuation)."""
        return dataclasses.replace(
            self,
            tokens_passed_through=self.tokens_passed_through + count,
            words_passed_through=self.words_passed_through + words,
            spans_masked=self.spans_masked + masked,
        )

    @staticmethod
    def combine(guarantees: Iterable[Guarantee]) -> Guarantee | None:
        """Merge an iterable of compatible guarantees (None when empty)."""
        records = iter(guarantees)
        total = next(records, None)
        if total is not None and getattr(type(total), "merge", None) is _MERGE:
            return _fold(total, records)
        for guarantee in records:  # another kind of record (or merge): its own merge
            total = total.merge(guarantee)  # type: ignore[union-attr]
        return total


def _most_tokens(record: Guarantee) -> int:
    """The most tokens privatized in one document of ``record``."""
    most = record.max_document_tokens
    return record.tokens_privatized if most is None else most


#: What merging two guarantees adds up, and what it takes the largest of.
_MERGED_COUNTS = (
    "tokens_privatized",
    "tokens_passed_through",
    "words_passed_through",
    "releases",
    "spans_masked",
)
_MERGED_LARGEST = ("max_document_tokens",)
#: The fields two merged guarantees must agree on (every other field).
_MERGE_KEY = operator.attrgetter(
    *(
        item.name
        for item in dataclasses.fields(Guarantee)
        if item.name not in (*_MERGED_COUNTS, *_MERGED_LARGEST)
    )
)


_MERGE = Guarantee.merge


def _fold(first: Guarantee, others: Iterable[Guarantee]) -> Guarantee:
    """``first.merge(o1).merge(o2)...`` built once instead of three records per merge (the
    doors merge one record per document: this was ~5% of a TextPrivatizer call).

    It sums the counts in the same order and checks at each step what that step's records
    would be checked for (same kind, the same settings, the largest document within the
    running totals); a step that would fail is redone one merge at a time from ``first``
    (:meth:`Guarantee._merge_checked`), which raises that step's own error. ``others`` is
    read lazily, one record per step, as the step-by-step merge reads it."""
    kind, key = type(first), _MERGE_KEY(first)
    tokens, passed = first.tokens_privatized, first.tokens_passed_through
    words, releases = first.words_passed_through, first.releases
    masked = first.spans_masked
    most = _most_tokens(first)
    seen: list[Guarantee] = []
    for other in others:
        seen.append(other)
        if type(other) is not kind or _MERGE_KEY(other) != key:
            return _fold_checked(first, seen)
        tokens += other.tokens_privatized
        passed += other.tokens_passed_through
        words += other.words_passed_through
        releases += other.releases
        masked += other.spans_masked
        most = max(most, _most_tokens(other))
        if not tokens <= most * max(releases, 1):  # what the step's record would refuse
            return _fold_checked(first, seen)
    if not seen:
        return first
    return dataclasses.replace(
        first,
        tokens_privatized=tokens,
        tokens_passed_through=passed,
        words_passed_through=words,
        releases=releases,
        spans_masked=masked,
        max_document_tokens=most,
    )


def _fold_checked(first: Guarantee, others: list[Guarantee]) -> Guarantee:
    total = first
    for other in others:
        total = total._merge_checked(other)
    return total


_TEXT_FIELDS = (
    "mechanism",
    "metric",
    "embeddings",
    "oov_policy",
    "rng",
    "selection",
    "mask",
    "library_version",
)
_COUNT_FIELDS = (
    "vocab_size",
    "tokens_privatized",
    "tokens_passed_through",
    "words_passed_through",
    "releases",
    "spans_masked",
)


def check_record(
    record: Any,
    texts: Iterable[str],
    epsilons: Iterable[str],
    counts: Iterable[str],
    *,
    optional: Iterable[str] = (),
) -> None:
    """TypeError/ValueError naming the first field of ``record`` that is not what it must
    be: a str (``texts``), a finite real > 0 (``epsilons``), an int >= 0 (``counts``); bool
    is never a number. Fields in ``optional`` may also be None."""
    maybe = set(optional)
    for name in texts:
        value = getattr(record, name)
        if not (isinstance(value, str) or (value is None and name in maybe)):
            raise TypeError(f"guarantee field {name} must be a str, got {type(value).__name__}")
    for name in epsilons:
        value = getattr(record, name)
        if type(value) is float and 0.0 < value < math.inf:  # the usual case, no ABC check
            continue
        if value is None and name in maybe:
            continue
        if not is_real(value):
            raise TypeError(
                f"guarantee field {name} must be a real number, got {type(value).__name__}"
            )
        if not (is_amount(value) and float(value) > 0):
            raise ValueError(f"guarantee field {name} must be a finite number > 0, got {value!r}")
    for name in counts:
        value = getattr(record, name)
        if type(value) is int and value >= 0:  # the usual case, no ABC check
            continue
        if not is_integral(value):
            raise TypeError(f"guarantee field {name} must be an int, got {type(value).__name__}")
        if int(value) < 0:
            raise ValueError(f"guarantee field {name} must be >= 0, got {value}")


def _check_in(value: str, name: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"guarantee field {name} must be one of {allowed}, got {value!r}")


def read_record(
    cls: Any,
    record: Mapping[str, Any],
    derived: Iterable[str],
    *,
    required: Iterable[str] = ("library_version",),
) -> Any:
    """``cls`` (a record dataclass) from its ``to_dict`` form: unknown keys and a missing
    ``required`` field (one with a default that every record written has) are refused, and
    each ``derived`` value given (``spend``, ...) must equal the one the fields give; so
    must ``statement`` when the record comes from this library version."""
    if not isinstance(record, Mapping):
        raise TypeError(f"a guarantee record must be a dict, got {type(record).__name__}")
    names = {item.name for item in dataclasses.fields(cls)}
    checked = {*derived, "statement"}
    unknown = sorted(str(key) for key in record if key not in names | checked)
    if unknown:
        raise ValueError(f"not a field of a {cls.__name__} record: {', '.join(unknown)}")
    for key in required:
        if key not in record:
            raise ValueError(f"the record has no {key} (every record dxp_plugins writes has one)")
    loaded = cls(**{key: value for key, value in record.items() if key in names})
    if loaded.library_version != _library_version():
        checked.discard("statement")  # worded by another version
    for key in sorted(checked & set(record)):
        if record[key] != getattr(loaded, key):
            raise ValueError(
                f"the record's {key} does not follow from its fields ({record[key]!r}, "
                f"its fields give {getattr(loaded, key)!r})"
            )
    return loaded


def merged(
    record: Any, other: Any, counts: tuple[str, ...], kind: str, largest: tuple[str, ...] = ()
) -> Any:
    """``record`` with ``other``'s ``counts`` added: TypeError unless ``other`` is a record of
    the same type, ValueError naming the first other field on which they differ (``kind``
    names the records in the message) but ``largest`` (which the caller sets)."""
    if type(other) is not type(record):
        raise TypeError(
            f"cannot merge a {type(record).__name__} with a {type(other).__name__}: "
            "records of different kinds (word-level, LPLP) state different guarantees"
        )
    for item in dataclasses.fields(record):
        key = item.name
        if key not in (*counts, *largest) and getattr(record, key) != getattr(other, key):
            raise ValueError(f"cannot merge {kind} with different {key}")
    return dataclasses.replace(
        record, **{key: getattr(record, key) + getattr(other, key) for key in counts}
    )
