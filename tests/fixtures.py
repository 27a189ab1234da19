"""Audit fixtures shared by the statistical tests (PRIVACY.md "Fixtures")."""

from __future__ import annotations

import numpy as np

import dxp_plugins as dxp


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
