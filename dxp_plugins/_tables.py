"""Generic table helpers: records as CSV text, and JSON-safe floats (no inf or nan)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def finite_or_none(value: float) -> float | None:
    """``value``, or None when it is inf or nan (JSON has neither)."""
    return value if math.isfinite(value) else None


def write_csv(records: Sequence[dict[str, Any]], path: str | Path | None = None) -> str:
    """Records (dicts with the same keys) as CSV text, also written to ``path`` when given."""
    buffer = io.StringIO()
    if records:
        writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
    text = buffer.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
