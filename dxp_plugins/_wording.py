"""How guarantee records and ledgers write numbers in the statements users read."""

from __future__ import annotations

from decimal import Decimal


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
