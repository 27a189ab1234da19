"""The one normalisation applied to a word before vocabulary lookup (PRIVACY.md 21)."""

from __future__ import annotations

import unicodedata


def normalize_word(word: str) -> str:
    """Unicode NFKC, then lower case: the lookup key of ``word``.

    The input's capitalisation is never re-applied to an output word.
    """
    if word.isascii():
        return word.lower()
    return unicodedata.normalize("NFKC", word).lower()
