"""The one normalisation applied to a word before vocabulary lookup (PRIVACY.md 21), and
what counts as invisible (passed through like whitespace, never privatized)."""

from __future__ import annotations

import unicodedata


def normalize_word(word: str) -> str:
    """Unicode NFKC, invisible format characters removed, then lower case: the lookup key
    of ``word`` (so a byte-order mark or zero-width space glued to a word does not make it
    out-of-vocabulary).

    The input's capitalisation is never re-applied to an output word.
    """
    if word.isascii():
        return word.lower()
    return "".join(
        char for char in unicodedata.normalize("NFKC", word) if not _is_format(char)
    ).lower()


def is_invisible(text: str) -> bool:
    """Only whitespace and invisible format characters (Unicode category Cf: zero-width
    space and joiners, word joiner, byte-order mark, soft hyphen...), or nothing at all."""
    stripped = text.strip()
    if not stripped:
        return True
    return not stripped.isascii() and all(_is_format(char) or char.isspace() for char in stripped)


def _is_format(char: str) -> bool:
    return unicodedata.category(char) == "Cf"
