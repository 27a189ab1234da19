"""The one normalisation applied to a word before vocabulary lookup (PRIVACY.md 21), and
which characters count as invisible layout."""

from __future__ import annotations

import unicodedata

#: Invisible characters treated as layout: soft hyphen, zero-width space, non-joiner and
#: joiner, left-to-right and right-to-left marks, word joiner, byte-order mark. A fixed,
#: short list on purpose: other format characters (e.g. the TAG characters U+E0020-E007F,
#: which can spell ASCII invisibly) are words like any other and get privatized.
INVISIBLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"
_DELETE_INVISIBLE = str.maketrans("", "", INVISIBLE)


def normalize_word(word: str) -> str:
    """Unicode NFKC, :data:`INVISIBLE` characters removed, then lower case: the lookup key
    of ``word`` (a byte-order mark or zero-width space glued to a word does not make it
    out-of-vocabulary).

    The input's capitalisation is never re-applied to an output word.
    """
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", word).translate(_DELETE_INVISIBLE).lower()


def is_invisible(text: str) -> bool:
    """Only whitespace and :data:`INVISIBLE` characters, or nothing at all."""
    stripped = text.strip()
    return not stripped or (
        not stripped.isascii() and not stripped.translate(_DELETE_INVISIBLE).strip()
    )


def without_invisible(text: str) -> str:
    """``text`` with the :data:`INVISIBLE` characters removed (layout whitespace kept)."""
    return text if text.isascii() else text.translate(_DELETE_INVISIBLE)
