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
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, get_args

from ._locks import fork_safe_lock
from ._process import this_process
from ._validation import is_integral, is_real
from .errors import BudgetExceededError, PrivacyWarning, warn

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


def counted(count: int, noun: str) -> str:
    """``"1 token"``, ``"3 tokens"``: counts in the statements users read."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def number(value: float) -> str:
    """A number as statements show it: the shortest text that reads back as exactly this
    float, without a trailing ``.0`` (``10.0`` -> ``"10"``, ``2.0000004`` -> ``"2.0000004"``),
    so a statement never rounds an epsilon or a total down."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def total(epsilon: float, count: int, extra: float = 0.0) -> str:
    """``epsilon * count + extra`` as statements show it: computed in decimal from the
    numbers :func:`number` shows, so ``5.9`` over 7,749 tokens reads ``45719.1``, not the
    binary product ``45719.100000000006`` (the float ``spend`` keeps the binary value)."""
    value = Decimal(repr(float(epsilon))) * count + Decimal(repr(float(extra)))
    text = format(value.normalize(), "f")
    return text if len(text) <= 24 else number(float(epsilon) * count + float(extra))


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
        if not (_is_amount(value) and float(value) > 0):
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


#: (process id, ledger id) of the ledgers whose copies warned in this process.
_WARNED_COPIES: set[tuple[tuple[int, int], str]] = set()


class Accountant:
    """Sums spend across releases; with ``cap`` set, refuses releases that would exceed it.

    The total is kept as aggregates (not a list of records), so streaming a huge corpus
    through one accountant uses constant memory. Thread-safe. ``releases`` counts charges:
    one per mechanism call that privatizes something, so one per batch of documents, but
    one for a whole capped :func:`~dxp_plugins.text.privatize_all` call (as
    ``TextPrivatizer`` makes) or a long text, and one for an LPLP ``fit_transform``'s DP
    histogram and release together (a :class:`Guarantee`'s ``releases`` counts the
    per-document records merged into it).
    ``cap`` may be reassigned (validated: a NaN or negative cap is refused); ``spent``,
    ``tokens_privatized``, ``releases`` and ``unit`` are read-only: only :meth:`charge`
    moves them.

    An accountant is a shared ledger: ``copy.copy``/``copy.deepcopy`` (and so scikit-learn's
    ``clone``, which ``GridSearchCV`` uses) return the same object, so every fit of a clone
    is charged to it. A pickle, and so a worker process (``n_jobs`` with processes,
    ``nlp.pipe(n_process=2)``) or a saved and loaded model, gets a copy that the original
    never hears from; so does a forked child (``nlp.pipe(n_process=2)`` forks on Linux). A
    copy without a cap records its own releases, and the first it records in a process
    warns (:class:`~dxp_plugins.PrivacyWarning`) that the original's total leaves them out,
    unless the library made the ledger as a default nobody passed in; a copy *with* a cap
    refuses every charge (fails closed), because each copy would otherwise enforce the cap
    on its own and their total could exceed it. ``refuse_copies=True`` makes the copies of an
    uncapped ledger refuse too: every release is then made, and counted, where the ledger
    lives (a process-based ``n_jobs`` fails instead of charging copies nobody reads).

    Spends add up only in one unit: a Madlib ε is per unit of Euclidean distance between
    vectors, a BRR ε per bit in which two words' codes differ, an LPLP ε per document of L1
    distance N. The first release fixes ``unit``; a release in another unit is refused
    (ValueError), with or without a cap, rather than summed into a meaningless total.
    Convert between metrics with :func:`dxp_plugins.calibration.equivalent_epsilon` and keep
    one accountant each.
    """

    def __init__(self, cap: float | None = None, *, refuse_copies: bool = False) -> None:
        self._lock = fork_safe_lock(self)
        self._cap: float | None = None
        self.cap = cap
        if not isinstance(refuse_copies, bool):
            raise TypeError(f"refuse_copies must be True or False, got {refuse_copies!r}")
        self._refuse_copies = refuse_copies
        self._is_copy = False
        self._owner = this_process()
        # The sum of the charges, compensated (Neumaier): a plain float total loses any
        # charge below half an ulp of it (1,000 charges of 1e-12 add nothing to 16,800);
        # _spent + _spent_low stays within a few ulps of the exact sum.
        self._spent = 0.0
        self._spent_low = 0.0
        self._tokens_privatized = 0
        self._releases = 0
        self._words_released_raw = 0
        self._unit: str | None = None
        #: False for the ledger a mechanism or door makes when none is passed in: a copy of
        #: it charged elsewhere does not warn (nobody reads that total across processes).
        self._passed_in = True
        #: Names the ledger in its copies: a process warns once per ledger, however many
        #: copies it unpickles (scikit-learn's n_jobs unpickles one per fit).
        self._ledger_id = secrets.token_hex(8)

    @classmethod
    def default(cls) -> Accountant:
        """The uncapped ledger an object makes when none is passed in (a copy of it charged
        in another process does not warn)."""
        ledger = cls()
        ledger._passed_in = False
        return ledger

    @property
    def cap(self) -> float | None:
        """The most the ledger may total (None: no cap). Assignable, validated like the
        constructor's ``cap`` (a finite number >= 0 or None): a NaN would switch it off."""
        return self._cap

    @cap.setter
    def cap(self, value: float | None) -> None:
        if value is not None and not _is_amount(value):
            raise ValueError("cap must be a finite number >= 0 or None")
        with self._lock:
            self._cap = None if value is None else float(value)

    @property
    def refuse_copies(self) -> bool:
        """Whether a copy (pickled, forked) refuses every charge even without a cap (a
        capped ledger's copies always do)."""
        return self._refuse_copies

    def _copies_refuse(self) -> bool:
        """Whether this object is a copy that must refuse charges."""
        return (self._cap is not None or self._refuse_copies) and self.is_copy

    @property
    def spent(self) -> float:
        """The spend charged so far (read-only: only :meth:`charge` adds to it), summed
        with compensation (no charge is lost however small beside the total)."""
        return self._spent + self._spent_low

    @property
    def tokens_privatized(self) -> int:
        """The tokens (or documents, for LPLP) charged so far (read-only)."""
        return self._tokens_privatized

    @property
    def releases(self) -> int:
        """The charges so far (read-only)."""
        return self._releases

    @property
    def words_released_raw(self) -> int:
        """Words the releases charged here let out raw and unprotected (``oov="passthrough"``,
        words a restricted selection left out): they spend nothing, so only this count
        shows them (read-only; the doors add to it through :meth:`record_raw`)."""
        return self._words_released_raw

    @property
    def unit(self) -> str | None:
        """What the ledger's epsilon is per, fixed by the first release (read-only)."""
        return self._unit

    @property
    def remaining(self) -> float:
        """Budget left before the cap (inf without a cap)."""
        return math.inf if self.cap is None else max(self.cap - self.spent, 0.0)

    def charge(self, spend: float, tokens: int, unit: str | None = None) -> None:
        """Record a release; over the cap raise BudgetExceededError and charge nothing.

        ``spend`` must be a finite number >= 0: a NaN or negative charge would disable the
        cap for every later release (PRIVACY.md 13).
        """
        with self._lock:
            self._refusal(spend, unit)
            self._add(float(spend))
            self._tokens_privatized += tokens
            self._releases += 1
            if unit is not None:
                self._unit = unit
            seen = (this_process(), self._ledger_id)
            warn_copy = self._passed_in and self.is_copy and seen not in _WARNED_COPIES
        if warn_copy:
            warn(
                "this Accountant is a copy (pickled, or in a worker process): it records "
                "this release, but the ledger it was copied from never sees it, so that "
                "total leaves it out. Combine the releases' guarantees where that ledger "
                "lives (Guarantee.combine), release in one process or with threads, "
                "continue a saved ledger with Accountant.resume, or make copies refuse: "
                "Accountant(refuse_copies=True), or a cap",
                PrivacyWarning,
            )
            # Marked once warned: a warning made an error (warnings.filterwarnings) stopped
            # this release, and must stop the next one too.
            _WARNED_COPIES.add(seen)

    def _add(self, spend: float) -> None:
        """Neumaier's compensated summation step (called holding the lock)."""
        total = self._spent + spend
        if abs(self._spent) >= abs(spend):
            self._spent_low += (self._spent - total) + spend
        else:
            self._spent_low += (spend - total) + self._spent
        self._spent = total

    def record_raw(self, words: int) -> None:
        """Count ``words`` released raw beside a release (no spend, so never refused)."""
        if not is_integral(words) or words < 0:
            raise ValueError(f"words must be an int >= 0, got {words!r}")
        with self._lock:
            self._words_released_raw += int(words)

    def check(self, spend: float, unit: str | None = None) -> None:
        """Raise what :meth:`charge` would raise for ``spend``, charging nothing (a release
        made in parts checks its total first; another thread may still spend meanwhile)."""
        with self._lock:
            self._refusal(spend, unit)

    def _refusal(self, spend: float, unit: str | None) -> None:
        """Raise if ``spend`` in ``unit`` may not be charged (called holding the lock)."""
        if not _is_amount(spend):
            raise ValueError("spend must be a finite number >= 0")
        if self._copies_refuse():
            held = "refuse_copies=True" if self.cap is None else f"cap {number(self.cap)}"
            raise BudgetExceededError(
                f"this Accountant ({held}) is a copy in another process or made by "
                "pickling (a forked or spawned worker, a loaded object): the original "
                "would never see its releases, nor could a cap hold across copies. Release "
                "in one process (n_jobs=1, "
                "n_process=1, num_proc=None or a thread backend), or build an "
                "Accountant(cap=share) in each worker (a pool initializer): the workers are "
                "then bounded only by the sum of the shares, while no worker is restarted or "
                "replaced. A loaded estimator: set_params("
                "accountant=Accountant.resume(saved ledger)) and fit again"
            )
        if unit is not None and self.unit is not None and unit != self.unit:
            raise ValueError(
                f"this Accountant sums epsilon per {self.unit}; a release measured per "
                f"{unit} cannot be added to it. {_one_ledger_each(self.unit, unit)}"
            )
        if self.cap is not None and self.spent + spend > self.cap * (1 + 1e-12):
            raise BudgetExceededError(
                f"release of {number(spend)} would exceed the privacy budget cap "
                f"{number(self.cap)} ({number(self.spent)} already spent)"
            )

    def to_dict(self) -> dict[str, Any]:
        """The ledger as a JSON-ready dict (``spent``, ``tokens_privatized``, ``releases``,
        ``words_released_raw``, ``unit``, ``cap``, ``refuse_copies``), for :meth:`resume` in
        a later session. A copy that refuses charges (with a cap, or ``refuse_copies``;
        pickled, forked) refuses (BudgetExceededError): resumed, it would count apart from
        the original. Save the original."""
        with self._lock:
            if self._copies_refuse():
                raise BudgetExceededError(
                    "this Accountant is a copy that refuses charges (pickled, or in another "
                    "process; a cap or refuse_copies=True): "
                    "only the original ledger can be saved for resume"
                )
            return {
                "spent": self.spent,
                "tokens_privatized": self._tokens_privatized,
                "releases": self._releases,
                "words_released_raw": self._words_released_raw,
                "unit": self._unit,
                "cap": self._cap,
                "refuse_copies": self._refuse_copies,
            }

    @classmethod
    def resume(cls, record: Mapping[str, Any]) -> Accountant:
        """A ledger that owns its cap again, starting from a :meth:`to_dict` record (a
        pickled accountant is a copy that refuses capped charges). Resume a ledger once, and
        only after everything that charged it has stopped: two live ledgers would each hold
        the cap alone, and their total could exceed it. Unknown or missing keys and values
        that no ledger holds are refused."""
        if not isinstance(record, Mapping):
            raise TypeError(f"an accountant record must be a dict, got {type(record).__name__}")
        keys = {"spent", "tokens_privatized", "releases", "words_released_raw", "unit", "cap"}
        optional = {"refuse_copies"}  # records saved before it were written without it
        if not keys <= set(record) <= keys | optional:
            wrong = sorted(map(str, (set(record) ^ keys) - optional))
            raise ValueError(
                f"an accountant record has exactly {sorted(keys)} (and may have "
                f"{sorted(optional)}); not {wrong}"
            )
        spent, unit = record["spent"], record["unit"]
        if not _is_amount(spent):
            raise ValueError(f"spent must be a finite number >= 0, got {spent!r}")
        for name in ("tokens_privatized", "releases", "words_released_raw"):
            value = record[name]
            if not is_integral(value) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if not (unit is None or isinstance(unit, str)):
            raise TypeError(f"unit must be a str or None, got {type(unit).__name__}")
        if record["releases"] == 0 and (unit is not None or spent or record["tokens_privatized"]):
            raise ValueError("a ledger without releases has no unit, spend or tokens")
        ledger = cls(cap=record["cap"], refuse_copies=record.get("refuse_copies", False))
        ledger._spent = float(spent)
        ledger._tokens_privatized = int(record["tokens_privatized"])
        ledger._releases = int(record["releases"])
        ledger._words_released_raw = int(record["words_released_raw"])
        ledger._unit = unit
        return ledger

    @property
    def is_copy(self) -> bool:
        """True for a pickled copy or in a forked child: the original never hears of its
        charges, so with a cap it refuses them."""
        return self._is_copy or this_process() != self._owner

    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {
            "_refuse_copies": False,  # pickled before the option
            "_unit": None,
            "_owner": (-1, -1),
            "_words_released_raw": 0,
            "_spent_low": 0.0,
            "_passed_in": True,
            "_ledger_id": secrets.token_hex(8),
            **state,
        }
        for name in ("cap", "spent", "tokens_privatized", "releases", "unit"):
            if name in state:  # pickled when these were plain attributes
                state[f"_{name}"] = state.pop(name)
        state.pop("_owner_pid", None)  # pickled before the fork count (a copy either way)
        self.__dict__.update(state)
        self._is_copy = True
        self._lock = fork_safe_lock(self)

    def __repr__(self) -> str:
        cap = "no cap" if self.cap is None else f"cap={number(self.cap)}"
        if self._refuse_copies:
            cap += ", refuse_copies=True"
        if self._copies_refuse():
            cap += ", a copy: refuses charges"
        raw = self.words_released_raw
        raw_words = f", {counted(raw, 'word')} released raw" if raw else ""
        return f"Accountant(spent={number(self.spent)}, releases={self.releases}{raw_words}, {cap})"


def _one_ledger_each(unit: str, other: str) -> str:
    """What to do instead of adding releases in ``other`` to a ledger in ``unit``."""
    lplp = ("LPLP" in unit) + ("LPLP" in other)
    if lplp == 2:
        return "Keep one Accountant per n_changes (N)."
    if lplp == 1:
        return "Keep one Accountant for word-level releases and one for LPLP releases."
    return (
        "Keep one Accountant per metric and embeddings, or convert epsilon with "
        "dxp_plugins.calibration.equivalent_epsilon."
    )


def _is_amount(value: Any) -> bool:
    """A finite real number >= 0 (bools and NaN are not amounts)."""
    if not is_real(value):
        return False
    try:
        return math.isfinite(value) and float(value) >= 0
    except OverflowError:  # an int beyond float: not a finite amount
        return False
