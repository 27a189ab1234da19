"""Masks: identifiers replaced by a placeholder before anything is privatized (``mask=``).

Privatizing re-draws a word; it does not remove it, and a vocabulary word (a number, a
common name, one of GloVe's e-mail addresses) can come out as itself. A mask removes what
must never appear: every door takes ``mask="identifiers"`` (``--mask`` in the CLI, ``mask``
in the spaCy component's config, ``TextPrivatizer(mask=...)``, ``privatize_text(s)``).

**What a mask is.** A function ``text -> iterable of (start, end)``: the half-open character
spans of ``text`` to hide (spans may overlap, come in any order or be empty; each must lie
within the text). It must be a pure function of the text, like a token filter: a long text
and a capped or ``oov="raise"`` release read it more than once. Masks are registered by name
in :data:`dxp_plugins.registry.masks` (entry-point group ``dxp_plugins_masks``);
:func:`regex_mask` makes one from a regular expression::

    dxp.registry.masks.register("order-ids", func=dxp.masks.regex_mask(r"ORD-\\d+"))

**What masking does** (:func:`apply_mask`, one implementation for every door, on the tokens
and their offsets). The spans are found on the text as tokenized (composed to NFC by the
library's doors; the Doc's text in the spaCy component) as vocabulary lookup reads it:
without the invisible characters lookup drops and in NFKC form, each character with the
combining marks after it, so a decomposed ``e`` + U+0301 reads ``é`` in every door
(:func:`visible_spans`): the text a mask function is given. A long text, privatized in
pieces, is read and searched once, whole. Every token that overlaps a span
is hidden, whole: a span that cuts a token in two hides the whole token, never a part of
it (a partial mask is worse than none: ``Mary.O'Brien@...`` cut after ``O'`` would leave
``Mary``, a vocabulary word). The tokens a span overlaps, from the first to the last, become
one token :data:`PLACEHOLDER` ``[...]`` followed by the whitespace after the last of them
(spans whose tokens overlap make one placeholder; a span over whitespace only hides
nothing). The placeholder is made of punctuation only and is never selected: it passes
through unchanged, spending nothing, and counts in ``tokens_passed_through`` (never as a
raw word) and in the record's
``spans_masked``; the record names the mask (``mask``). What was hidden is never released,
privatized or counted. The spaCy component's per-token values give the placeholder to the
first hidden token and ``""`` to the others.

**What the built-ins do not find** (their words are privatized like any other): a domain
without ``http://``, ``https://`` or ``www.`` (``yahoo.com`` is a GloVe row), other
schemes (``ftp://``), a quoted local part holding a space (``"john doe"@...``), a domain
holding a combining mark with no precomposed letter (``\u0301`` after ``x``; Devanagari
and Thai domains), the words of a date (``March``), an
IBAN's bank code, Roman numerals (``Ⅷ`` reads ``viii``), numbers written as words,
an ``@`` glued to a word (``cc:bob@team`` without a dotted domain), spelled-out
addresses (``bob [at] example [dot] com``) and names. "Numbers" are digits, in any script.
No bare-domain rule is built in: ``word.word`` is also ordinary text (a missing space after
a full stop, file names), and top-level domains include words.

Not protected: the masking is decided from the raw text, so where the placeholders are and
how many there are shows (like the layout), and the guarantee's bound holds between texts
that mask the same tokens. A mask cannot find names: see docs/front-doors.md.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ._normalize import INVISIBLE, is_invisible, normalize, without_invisible

if TYPE_CHECKING:
    from ._tokenization import TokenizedText

__all__ = [
    "EMAILS",
    "HANDLES",
    "IDENTIFIERS",
    "NUMBERS",
    "NUMBER_JOIN_CHARS",
    "PLACEHOLDER",
    "URLS",
    "Mask",
    "MaskFunction",
    "apply_mask",
    "emails",
    "handles",
    "identifiers",
    "numbers",
    "regex_mask",
    "resolve_mask",
    "urls",
    "visible_spans",
]

#: A mask: ``text -> iterable of (start, end)`` character spans to hide.
MaskFunction = Callable[[str], Iterable[tuple[int, int]]]

#: What a masked run of tokens becomes: punctuation only, never selected (it is not on the
#: allow-list :data:`dxp_plugins.text.PUNCTUATION`; the raw-word count leaves it out), so it
#: passes through and spends nothing.
PLACEHOLDER = "[...]"

_EMAIL = r"[^\s@<>()\[\],;:\"]+@[\w-]+(?:\.[\w-]+)+"
_URL = r"(?i:https?://|www\.)[^\s<>()]*[^\s<>().,;:!?'\"]"
_HANDLE = r"(?<![\w@])@\w(?:[\w.-]*\w)?"
#: A number's digits are joined across at most this many characters: a longer run (a
#: table of numbers separated by spaces) is masked in parts, one placeholder each, so that a
#: long text can still be cut between them into pieces (PRIVACY.md 24): one span of
#: millions of numbers made the whole text one piece (1.1 GB for a 10 MB line).
NUMBER_JOIN_CHARS = 1000
_NUMBER = rf"\+?\d(?:[\d ()./-]{{0,{NUMBER_JOIN_CHARS}}}\d)?(?!\w)|[\w-]*\d[\w-]*"

#: E-mail addresses (a local part without spaces, ``@``, a dotted domain).
EMAILS = re.compile(_EMAIL)
#: URLs starting ``http://``, ``https://`` or ``www.`` (any case), without trailing punctuation.
URLS = re.compile(_URL)
#: ``@handles`` (``@bob_smith``, ``@ops.team``): an ``@`` not glued to a word character or
#: another ``@`` before it (``*@bob*``, ``{@bob}`` and ``/@bob`` too), then
#: word characters (inner ``.`` and ``-`` allowed); ``bob@team`` is not one.
HANDLES = re.compile(_HANDLE)
#: Numbers, phone numbers, dates and card numbers (digits joined by spaces, ``( ) . / -``,
#: with an optional leading ``+``), and words holding a digit (``AB-48213``, ``h2o``, ``4th``).
NUMBERS = re.compile(_NUMBER)
#: All four: e-mail addresses first, then URLs, ``@handles``, numbers and words holding digits.
#: (These patterns define the spans; ``finditer`` on them takes quadratic time on a long
#: run of word characters. :func:`identifiers` and the other built-ins find the same spans
#: in linear time: use them, not ``regex_mask(IDENTIFIERS)``, on untrusted text.)
IDENTIFIERS = re.compile(f"{_EMAIL}|{_URL}|{_HANDLE}|{_NUMBER}")

#: What each part needs to match at all: an ``@``, a URL's start, an ``@``, a digit. A text without
#: one is searched without that part, which finds the same spans (the part could not match
#: anywhere) in a fraction of the time: the e-mail part alone cost ~25 us per sentence.
_URL_START = re.compile(r"(?i:https?://|www\.)")
#: The ideographic full stops U+3002 and U+FF61 are the dots of a domain name as IDNA (UTS
#: #46) reads one, and NFKC keeps them: the built-ins read them as ``.`` (one character for
#: one, so the spans' offsets hold). A registered mask sees the text as it is.
_DOTS = str.maketrans({"\u3002": ".", "\uff61": "."})
_DIGIT = re.compile(r"\d")
_PARTS = (_EMAIL, _URL, _HANDLE, _NUMBER)

#: The parts again, each able to start only where it could not have started one character
#: earlier: an address's local part, and a word holding a digit, at the start of their run
#: of characters. Searched from every position, the parts themselves rescan the run from
#: each start: ``"a" * 40_000 + " 1"`` took 15 s, ``"a" * 40_000 + "@"`` 5 s. Where the
#: search failed at the position before, the two read the same (a run holding a digit, or
#: ending in ``@`` and a domain, from a position does from the position before it in the
#: run), so :func:`_finditer` uses these there and the parts themselves only where a match
#: ended: exactly the spans of ``finditer`` on the parts, in linear time.
_GUARDED_PARTS = (
    r'(?<![^\s@<>()\[\],;:"])' + _EMAIL,
    _URL,
    _HANDLE,  # starts at an "@" only: nothing to rescan
    _NUMBER.replace("|", r"|(?<![\w-])", 1),
)


def _alternatives(parts: tuple[str, ...], on: tuple[bool, ...]) -> re.Pattern[str] | None:
    chosen = [part for part, wanted in zip(parts, on, strict=True) if wanted]
    return re.compile("|".join(chosen)) if chosen else None


class _Parts(NamedTuple):
    """The patterns :func:`_finditer` tries for one choice of parts."""

    first: re.Pattern[str]  # every part chosen, in IDENTIFIERS' order; e-mail as group "email"
    others: re.Pattern[str] | None  # the parts chosen but the e-mail part
    guarded: re.Pattern[str]  # every part chosen, guarded (_GUARDED_PARTS)
    email: bool  # whether the e-mail part is chosen


#: The run of local-part characters from a position: where the e-mail part's local part
#: would have to end, whatever position of the run it started from.
_LOCAL_RUN = re.compile(r'[^\s@<>()\[\],;:"]*')

_COMBINED: dict[tuple[bool, ...], _Parts | None] = {}
for _on in itertools.product((False, True), repeat=len(_PARTS)):
    _guarded = _alternatives(_GUARDED_PARTS, _on)
    _others = _alternatives(_PARTS[1:], _on[1:])
    _first = _alternatives((f"(?P<email>{_EMAIL})", *_PARTS[1:]), _on)
    _COMBINED[_on] = (
        None if _guarded is None or _first is None else _Parts(_first, _others, _guarded, _on[0])
    )
del _on, _guarded, _others, _first


def _finditer(parts: _Parts, text: str) -> Iterator[tuple[int, int]]:
    """The spans of ``finditer`` on the parts (whose matches are never empty), in linear
    time: the parts themselves are tried where the search starts or a match ended (the
    e-mail part first, as in IDENTIFIERS), the guarded ones from the next position on.

    Where the e-mail part failed, it fails from every later start in the same run of
    local-part characters (its local part would end at the same character, before the
    same ``@``), so only the other parts are tried there: a run holding many short matches
    (``"1!" * n`` before an ``@``) was rescanned after each one, quadratic (100 kB: 23 s).
    """
    position, email_fails_before = 0, 0
    while position < len(text):
        if not parts.email or position >= email_fails_before:
            match = parts.first.match(text, position)
            if parts.email and (match is None or match.lastgroup != "email"):
                run = _LOCAL_RUN.match(text, position)
                email_fails_before = run.end() if run is not None else position
        else:
            match = None if parts.others is None else parts.others.match(text, position)
        match = match or parts.guarded.search(text, position + 1)
        if match is None:
            return
        yield match.span()
        position = match.end()


def _search(
    text: str, email: bool, url: bool, handle: bool, number: bool
) -> Iterable[tuple[int, int]]:
    """The spans of the parts asked for (in IDENTIFIERS' order) that ``text`` can hold, the
    ideographic full stops read as dots (:data:`_DOTS`)."""
    if not text.isascii():
        text = text.translate(_DOTS)
    at = "@" in text
    patterns = _COMBINED[
        (
            email and at,
            url and _URL_START.search(text) is not None,
            handle and at,
            number and _DIGIT.search(text) is not None,
        )
    ]
    return () if patterns is None else _finditer(patterns, text)


def regex_mask(pattern: str | re.Pattern[str], flags: int = 0) -> MaskFunction:
    """A mask hiding every match of ``pattern`` (empty matches hide nothing)."""
    compiled = re.compile(pattern, flags)

    def mask(text: str) -> Iterable[tuple[int, int]]:
        return (match.span() for match in compiled.finditer(text))

    mask.__doc__ = f"Hide every match of {compiled.pattern!r}."
    return mask


def identifiers(text: str) -> Iterable[tuple[int, int]]:
    """E-mail addresses, URLs (http://, https://, www.), @handles, numbers written in digits
    (phones, dates, cards) and words holding digits; not bare domains, month names, number
    words."""
    return _search(text, True, True, True, True)


def emails(text: str) -> Iterable[tuple[int, int]]:
    """E-mail addresses."""
    return _search(text, True, False, False, False)


def urls(text: str) -> Iterable[tuple[int, int]]:
    """URLs starting http://, https:// or www. (not bare domains such as example.com)."""
    return _search(text, False, True, False, False)


def numbers(text: str) -> Iterable[tuple[int, int]]:
    """Numbers, phones, dates, card numbers and words holding digits (IDs)."""
    return _search(text, False, False, False, True)


def handles(text: str) -> Iterable[tuple[int, int]]:
    """@handles and @mentions (an "@" not glued to a word before it)."""
    return _search(text, False, False, True, False)


@dataclass(frozen=True)
class Mask:
    """A registered mask, resolved: its registry ``name`` (what records show) and its
    function ``find``."""

    name: str
    find: MaskFunction

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The non-empty spans ``find`` gives for ``text``, checked and sorted."""
        given = self.find(text)
        try:
            spans = iter(given)
        except TypeError:
            raise TypeError(
                f"mask {self.name!r} must give an iterable of (start, end) pairs, "
                f"got {type(given).__name__}"
            ) from None
        found = []
        for span in spans:
            try:
                start, end = span
            except (TypeError, ValueError):
                raise TypeError(
                    f"mask {self.name!r} must give (start, end) pairs, got {type(span).__name__}"
                ) from None
            if not all(
                isinstance(offset, int | np.integer) and not isinstance(offset, bool)
                for offset in (start, end)
            ):
                raise TypeError(
                    f"mask {self.name!r} must give int offsets, got {type(start).__name__} "
                    f"and {type(end).__name__}"
                )
            if not 0 <= start <= end <= len(text):
                raise ValueError(
                    f"mask {self.name!r} gave a span outside the text (offsets {int(start)} to "
                    f"{int(end)} in a text of {len(text)} characters)"
                )
            if start < end:
                found.append((int(start), int(end)))
        found.sort()
        return found


def resolve_mask(name: Any, setting: str = "mask") -> Mask | None:
    """The registered mask ``name`` (None for None): a ValueError listing the known names
    for an unknown one, a TypeError for anything but a str."""
    if name is None:
        return None
    if isinstance(name, Mask):
        return name
    if not isinstance(name, str):
        raise TypeError(
            f"{setting} must be the name of a registered mask or None, got {type(name).__name__}"
        )
    from . import registry

    return Mask(name, registry.resolve(registry.masks, name, setting=setting))


def visible_spans(mask: Mask, text: str) -> list[tuple[int, int]]:
    """``mask``'s spans of ``text`` read as vocabulary lookup reads a word, mapped back to
    offsets into ``text``: without the invisible characters lookup drops
    (:data:`~dxp_plugins._normalize.INVISIBLE`) and in NFKC compatibility form, each
    character together with the combining marks after it (full-width U+FF20 and U+FF0E are
    ``@`` and ``.``; ``e`` + U+0301 is ``é``, as the text doors compose it). An address
    written with a zero-width space, full-width marks or decomposed accents, which lookup
    still finds as a vocabulary row, does not escape the mask. ASCII text and text already
    in that form are read as they are; only the others go through a Python loop over their
    non-ASCII characters (:class:`Reading`)."""
    reading = Reading.of(text)
    return [reading.original(a, b) for a, b in mask.spans(reading.text)]


#: Non-ASCII characters: the only ones a reading can change (or a combining mark join).
_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def _is_mark(char: str) -> bool:
    return unicodedata.category(char)[0] == "M"


class Reading:
    """A text as vocabulary lookup reads it (:func:`visible_spans`), with the way back:
    ``text``, the reading; :meth:`original` maps a span of it to offsets into the text as
    written, :meth:`visible` an offset of the written text to one of the reading.

    Internal. The map is kept as records, one per run of characters read as written (an
    offset) or per character read otherwise (its span), so a long text costs memory in
    proportion to what changes, not to its length. A combining mark after whitespace is
    read alone, so a reading never joins characters across whitespace: the reading of a
    part of the text cut after whitespace is the same part of the whole's reading."""

    __slots__ = ("_keys", "_records", "_starts", "text")

    def __init__(self, text: str, keys: list[int], records: list[int | tuple[int, int]]):
        self.text = text
        self._keys = keys  # where each record starts in the reading
        self._records = records  # an int: a run read as written from there; a pair: a span
        self._starts = [r if isinstance(r, int) else r[0] for r in records]

    @classmethod
    def of(cls, text: str) -> Reading:
        """The reading of ``text``."""
        if text.isascii() or (  # a mark left in NFKC text composes with nothing
            unicodedata.is_normalized("NFKC", text) and len(without_invisible(text)) == len(text)
        ):
            return cls(text, [0], [0])
        parts: list[str] = []
        keys: list[int] = []
        records: list[int | tuple[int, int]] = []
        read = 0  # characters read so far

        def as_written(start: int, stop: int) -> None:
            nonlocal read
            if start >= stop:
                return
            last = records[-1] if records else None
            if not (isinstance(last, int) and last + read - keys[-1] == start):
                keys.append(read)
                records.append(start)
            parts.append(text[start:stop])
            read += stop - start

        position, size = 0, len(text)
        while position < size:
            found = _NON_ASCII.search(text, position)
            if found is None:
                as_written(position, size)
                break
            start = found.start()
            if _is_mark(text[start]) and start > position and not text[start - 1].isspace():
                start -= 1  # the mark joins the character before it
            as_written(position, start)
            stop = start + 1
            if text[start] in INVISIBLE:
                position = stop
                continue
            if not text[start].isspace():
                while stop < size and _is_mark(text[stop]):
                    stop += 1
            written = text[start:stop]
            form = normalize("NFKC", written)
            if form == written:
                as_written(start, stop)
            elif form:
                keys.append(read)
                records.append((start, stop))
                parts.append(form)
                read += len(form)
            position = stop
        return cls("".join(parts), keys or [0], records or [0])

    def _record(self, offset: int) -> tuple[int, int]:
        """Where character ``offset`` of the reading was written: its start and end."""
        k = bisect.bisect_right(self._keys, offset) - 1
        record = self._records[k]
        if isinstance(record, int):
            start = record + offset - self._keys[k]
            return start, start + 1
        return record

    def original(self, start: int, end: int) -> tuple[int, int]:
        """A non-empty span of the reading as offsets into the text as written."""
        return self._record(start)[0], self._record(end - 1)[1]

    def visible(self, offset: int) -> int:
        """Where the written text from ``offset`` on starts in the reading (``offset`` at the
        start of a character as read: never inside one read otherwise)."""
        k = bisect.bisect_right(self._starts, offset) - 1
        if k < 0:
            return 0
        record = self._records[k]
        following = self._keys[k + 1] if k + 1 < len(self._keys) else len(self.text)
        if isinstance(record, int) and offset - record < following - self._keys[k]:
            return self._keys[k] + offset - record
        if not isinstance(record, int) and offset == record[0]:
            return self._keys[k]
        return following


def apply_mask(doc: TokenizedText, spans: Iterable[tuple[int, int]]) -> TokenizedText:
    """``doc`` with every token a span overlaps hidden: each run of such tokens becomes one
    :data:`PLACEHOLDER` carrying the run's last whitespace, the run's other tokens ``""``
    (no whitespace), none of them selected. ``spans``: sorted ``(start, end)`` offsets into
    ``detokenize(doc.words, doc.spaces)``. Returns ``doc`` itself when nothing is hidden."""
    spans = list(spans)
    if not spans or not doc.words:
        return doc
    lengths = np.fromiter(map(len, doc.words), dtype=np.int64, count=len(doc.words))
    gaps = np.fromiter(map(len, doc.spaces), dtype=np.int64, count=len(doc.spaces))
    starts = np.concatenate(([0], np.cumsum(lengths + gaps)[:-1]))
    ends = starts + lengths
    bounds = np.asarray(spans, dtype=np.int64)
    first = np.searchsorted(ends, bounds[:, 0], side="right")  # first token ending after start
    last = np.searchsorted(starts, bounds[:, 1], side="left") - 1  # last starting before end
    runs: list[list[int]] = []
    for a, b in zip(first.tolist(), last.tolist(), strict=True):
        if a > b:
            continue  # whitespace only
        if runs and a <= runs[-1][1]:  # shares a token with the run before: one placeholder
            runs[-1][1] = max(runs[-1][1], b)
        else:
            runs.append([a, b])
    words, spaces, selected = list(doc.words), list(doc.spaces), list(doc.selected)
    masked = 0
    for a, b in runs:
        if all(is_invisible(word) for word in doc.words[a : b + 1]):
            continue  # layout only: nothing to hide
        spaces[a] = doc.spaces[b]
        words[a] = PLACEHOLDER
        selected[a] = False
        for k in range(a + 1, b + 1):
            words[k], spaces[k], selected[k] = "", "", False
        masked += 1
    if not masked:
        return doc
    return dataclasses.replace(
        doc, words=words, spaces=spaces, selected=selected, masked=doc.masked + masked
    )
