"""Reading objects pickled by earlier builds of this library."""

from __future__ import annotations

from typing import Any


def renamed_properties(cls: type, state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with plain attributes of an earlier build stored under the private names of
    the read-only properties that replaced them (``embeddings`` -> ``_embeddings``)."""
    renamed = dict(state)
    for key in state:
        if isinstance(getattr(cls, key, None), property) and f"_{key}" not in state:
            renamed[f"_{key}"] = renamed.pop(key)
    return renamed
