"""Shared fixtures: small *real* embeddings (the most frequent GloVe rows)."""

from __future__ import annotations

import pytest

import dxp_plugins as dxp


@pytest.fixture(scope="session")
def glove_5k() -> dxp.EmbeddingTable:
    """The 5,000 most frequent GloVe 6B 50d words (real vectors, fast to search)."""
    return dxp.load_embeddings("glove-6b-50d", vocab_size=5000)
