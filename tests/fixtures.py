"""Audit fixtures shared by the statistical tests (PRIVACY.md "Fixtures")."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.mechanisms.base import BUILTIN_NAMES

#: The library's own mechanisms, for tests that run on each of them: a new built-in added to
#: ``BUILTIN_NAMES`` is tested by every such test (docs/plugins.md, "Adding a built-in
#: mechanism"). Sorted: pytest ids and order stay the same on every run.
BUILTIN_MECHANISMS = sorted(BUILTIN_NAMES)
#: Options that keep a built-in fast in tests (BRR's default 256-bit codes are slower).
FAST_OPTIONS: dict[str, dict[str, int]] = {"brr": {"n_bits": 64}}


def plane_fixture(epsilon: float) -> dxp.EmbeddingTable:
    """A 2-D vocabulary scaled so that epsilon * d(a, b) = 2 for the audited pairs.

    a=(0,0), b=(2u,0) on an axis; c=2u*(1,1)/sqrt2 diagonal from a; sinks beyond a on the
    far side of b ("sink_axis") and of c ("sink_diag"), where the likelihood ratio of
    outputs approaches its bound (u = 1/epsilon).
    """
    u = 1.0 / epsilon
    s = 1.0 / np.sqrt(2.0)
    points = np.array(
        [[0, 0], [2 * u, 0], [-2.5 * u, 0], [2 * u * s, 2 * u * s], [-2.5 * u * s, -2.5 * u * s]]
    )
    return dxp.EmbeddingTable(["a", "b", "sink_axis", "c", "sink_diag"], points)


#: Audited pairs of ``plane_fixture`` rows: axis pair, diagonal pair, and b-c.
PLANE_PAIRS = [(0, 1), (0, 3), (1, 3)]


def grid_fixture(epsilon: float, side: int = 7) -> dxp.EmbeddingTable:
    """A side x side grid with spacing u = 1/epsilon (TEM fixtures: epsilon * d = 1 per step).

    Row ``side * x + y`` is the point (x u, y u). With side 7, :data:`GRID_PAIRS` holds the
    centre and its axis neighbour, the centre and its diagonal neighbour, and the same two
    pairs at a corner (where balls are smallest and the ⊥ element weighs most).
    """
    u = 1.0 / epsilon
    points = np.array([(x, y) for x in range(side) for y in range(side)], dtype=np.float64) * u
    return dxp.EmbeddingTable([f"g{x}_{y}" for x in range(side) for y in range(side)], points)


#: Audited pairs of ``grid_fixture`` rows (side 7): centre-axis, centre-diagonal, corner pairs.
GRID_PAIRS = [(24, 25), (24, 32), (0, 1), (0, 8)]


def all_codes(n_bits: int) -> np.ndarray:
    """Every ``n_bits``-bit code as a bool row, in counting order (BRR fixtures)."""
    values = np.arange(2**n_bits)[:, None] >> np.arange(n_bits)[::-1]
    return (values & 1).astype(bool)


def even_weight_codes(n_bits: int = 8) -> np.ndarray:
    """The codes of even weight: every noisy code of odd weight ties between n_bits words."""
    codes = all_codes(n_bits)
    return codes[codes.sum(axis=1) % 2 == 0]


@pytest.fixture(scope="module")
def one_faiss_thread() -> Iterator[None]:
    """Run faiss single-threaded: many small searches on a busy 2-core machine otherwise
    spend seconds in OpenMP hand-offs. Use with ``pytest.mark.usefixtures``."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)
