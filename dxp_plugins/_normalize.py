"""The one normalisation applied to a word before vocabulary lookup (PRIVACY.md 21), and
which characters count as invisible layout."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Literal, NamedTuple

#: Invisible characters treated as layout: soft hyphen, zero-width space, non-joiner and
#: joiner, word joiner, byte-order mark, and the bidirectional controls (Unicode's
#: Bidi_Control set: LRM/RLM, the Arabic letter mark, embeddings, overrides and isolates,
#: which editors put around names and numbers in right-to-left text). A fixed, short list
#: on purpose: other format characters (e.g. the TAG characters U+E0020-E007F, which can
#: spell ASCII invisibly) are words like any other and get privatized.
INVISIBLE = (
    "\u00ad\u200b\u200c\u200d\u2060\ufeff"
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_DELETE_INVISIBLE = str.maketrans("", "", INVISIBLE)


#: Runs of at least this many non-starters (combining class above 0) are put in canonical
#: order before Unicode normalisation (:func:`normalize`).
ORDERED_RUN = 32


def normalize(form: Literal["NFC", "NFD", "NFKC", "NFKD"], text: str) -> str:
    """``unicodedata.normalize(form, text)``, in time linear in long runs of combining
    marks. CPython puts a run in canonical order by insertion sort (before the fix of
    gh-149079; Python 3.11 has it): 100 kB of alternating marks took 8 s, 1 MB about half an
    hour. Such runs are sorted here first, stably by combining class, which is the canonical
    ordering itself: the text is canonically equivalent, so its normal forms are the same.
    The few starters that decompose into non-starters (U+0F73, and U+FF9E in the K forms)
    would cut a run where the decomposition joins it: they are decomposed first (an
    equivalent text again, canonically or, for the K forms, in compatibility)."""
    if len(text) >= ORDERED_RUN and not text.isascii():
        tables = _unicode_tables()
        expansions, present = tables.compatibility if form in ("NFKC", "NFKD") else tables.canonical
        if present.search(text) is not None:
            text = text.translate(expansions)
        text = tables.runs.sub(_canonical_order, text)
    return unicodedata.normalize(form, text)


def _canonical_order(run: re.Match[str]) -> str:
    return "".join(sorted(run.group(), key=unicodedata.combining))


class _Tables(NamedTuple):
    """What :func:`normalize` reads from this Python's Unicode tables."""

    runs: re.Pattern[str]  # ORDERED_RUN or more non-starters in a row
    canonical: tuple[dict[int, str], re.Pattern[str]]  # starters whose NFD starts with a mark
    compatibility: tuple[dict[int, str], re.Pattern[str]]  # the same for NFKD


@functools.cache
def _unicode_tables() -> _Tables:
    """Built on first use, in one pass over the code points (about 0.2 s)."""
    ranges: list[list[int]] = []
    canonical: dict[int, str] = {}
    compatibility: dict[int, str] = {}
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        if unicodedata.combining(char):
            if ranges and ranges[-1][1] == code - 1:
                ranges[-1][1] = code
            else:
                ranges.append([code, code])
        elif unicodedata.decomposition(char):
            decomposed = unicodedata.normalize("NFD", char)
            if unicodedata.combining(decomposed[0]):
                canonical[code] = decomposed
            decomposed = unicodedata.normalize("NFKD", char)
            if unicodedata.combining(decomposed[0]):
                compatibility[code] = decomposed
    members = "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    )

    def expanding(table: dict[int, str]) -> tuple[dict[int, str], re.Pattern[str]]:
        return table, re.compile("[" + "".join(re.escape(chr(code)) for code in table) + "]")

    return _Tables(
        re.compile(f"[{members}]{{{ORDERED_RUN},}}"), expanding(canonical), expanding(compatibility)
    )


def normalize_word(word: str) -> str:
    """Unicode NFKC, :data:`INVISIBLE` characters removed, then lower case: the lookup key
    of ``word`` (a byte-order mark or zero-width space glued to a word does not make it
    out-of-vocabulary).

    The input's capitalisation is never re-applied to an output word.
    """
    if word.isascii():
        return word.lower()
    return normalize("NFKC", word).translate(_DELETE_INVISIBLE).lower()


def composed(text: str) -> str:
    """``text`` in Unicode NFC, as the text path tokenizes it: canonically equivalent
    texts (``café`` typed as one character or as ``e`` + U+0301, as macOS and some PDF
    extractors write it) then give the same tokens. spaCy's English rules expect composed
    letters: a period after a combining accent was not split off, so the word and the
    period became one out-of-vocabulary token."""
    if text.isascii() or unicodedata.is_normalized("NFC", text):
        return text
    return normalize("NFC", text)


def original_offset(text: str, offset: int) -> int | None:
    """Where character ``offset`` of ``composed(text)`` starts in ``text``: the shortest
    prefix of ``text`` whose NFC form is the first ``offset`` characters of the composed
    text (a token boundary always has one); None if there is none nearby. A binary search
    over prefix lengths finds the place (they almost never fall as a prefix grows; a
    window around it absorbs the exceptions)."""
    whole = composed(text)
    if whole is text:
        return offset
    target = whole[:offset]
    low, high = 0, len(text)
    while low < high:
        middle = (low + high) // 2
        if len(normalize("NFC", text[:middle])) < offset:
            low = middle + 1
        else:
            high = middle
    for k in range(max(0, low - _OFFSET_WINDOW), min(len(text), low + _OFFSET_WINDOW) + 1):
        if normalize("NFC", text[:k]) == target:
            return k
    return None


#: Characters either side of the binary search's answer that :func:`original_offset` tries.
_OFFSET_WINDOW = 16


def without_dot_above(key: str) -> str:
    """A lookup key with Turkish capital I's dot dropped: ``"İstanbul".lower()`` is
    ``"i\u0307stanbul"`` (an ``i`` and a combining dot above); tried when the key misses,
    so a table's own rows holding that dot still match first. Composed again: ``İ`` with a
    second accent leaves ``i`` + U+0307 + that accent, which then becomes one letter."""
    return normalize("NFKC", key.replace("i\u0307", "i"))


def is_invisible(text: str) -> bool:
    """Only whitespace and :data:`INVISIBLE` characters, or nothing at all."""
    stripped = text.strip()
    return not stripped or (
        not stripped.isascii() and not stripped.translate(_DELETE_INVISIBLE).strip()
    )


def without_invisible(text: str) -> str:
    """``text`` with the :data:`INVISIBLE` characters removed (layout whitespace kept)."""
    return text if text.isascii() else text.translate(_DELETE_INVISIBLE)
