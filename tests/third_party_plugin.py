"""Stands in for a third-party package that adds an embedding loader with one entry-point
line: ``"tiny-plane.v1" = "tests.third_party_plugin:load_tiny_plane"``."""

from __future__ import annotations

import numpy as np

from dxp_plugins import EmbeddingTable


def load_tiny_plane(scale: float = 1.0) -> EmbeddingTable:
    """Four words on a square (a third-party loader)."""
    points = scale * np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    return EmbeddingTable(["north", "south", "east", "west"], points, name="tiny-plane")


def load_broken() -> EmbeddingTable:
    """Never reached: importing the entry point fails."""
    raise AssertionError
