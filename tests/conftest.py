"""Shared fixtures: small *real* embeddings (the most frequent GloVe rows)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

import dxp_plugins as dxp

# Property tests keep no example database in the clone, and draw the same examples on CI
# (the mechanisms' noise stays random: a failure there is a real one, rerun it locally).
settings.register_profile("dxp", database=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("dxp")


@pytest.fixture(scope="session")
def glove_5k() -> dxp.EmbeddingTable:
    """The 5,000 most frequent GloVe 6B 50d words (real vectors, fast to search)."""
    return dxp.load_embeddings("glove-6b-50d", vocab_size=5000)
