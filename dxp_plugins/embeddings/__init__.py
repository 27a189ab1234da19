"""Embedding tables and the registry-backed loader."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import InvalidTableError
from .table import OOV_ID, EmbeddingTable

__all__ = ["OOV_ID", "EmbeddingTable", "load_embeddings"]


def load_embeddings(name: str = "glove-6b-50d", **kwargs: Any) -> EmbeddingTable:
    """Load embeddings by registry name (entry-point group ``dxp_plugins_embeddings``).

    Loads of the same name and arguments (and unchanged files) return one table while it is
    alive, the one the doors use too: tables are immutable, and a second 400k-word copy
    cost 279 MiB.

    >>> emb = load_embeddings("glove-6b-50d", vocab_size=100_000)  # doctest: +SKIP
    """
    from .. import registry
    from .shared import shared_table, takes

    loader = registry.resolve(registry.embeddings, name)

    def load() -> EmbeddingTable:
        return checked_table(name, lambda: loader(**kwargs))

    if "vocab_size" in kwargs and not takes(loader, "vocab_size"):
        return load()  # its TypeError; a door would cut the table itself (not this table)
    return shared_table(name, loader, kwargs, load)


def checked_table(name: str, load: Callable[[], Any]) -> EmbeddingTable:
    """``load()``, which must return an :class:`EmbeddingTable`; a table it builds that
    fails validation names the embeddings (a plugin's table says which plugin)."""
    try:
        table = load()
    except InvalidTableError as error:
        raise InvalidTableError(f"embeddings {name!r}: {error}") from None
    if not isinstance(table, EmbeddingTable):
        raise TypeError(
            f"embedding loader {name!r} returned {type(table).__name__}, not an EmbeddingTable"
        )
    return table
