"""A differentially private corpus histogram, for groupings and decompression weights.

``h_j = max(sum_d X[d, j] + Z_j, 0)`` with two-sided geometric ``Z_j`` of rate
``epsilon / N``. Changing one document by at most N in L1 changes the exact histogram by at
most N in L1, so the release is epsilon-DP for that neighbour relation (the same one LPLP
uses), with its own budget. It is a *central* release -- whoever computes it sees the exact
corpus counts -- so it fits a trusted aggregator; a purely local deployment should use public
weights instead. Everything derived from it (a frequency order, decompression weights) is
post-processing and costs nothing more.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_epsilon, check_int
from ..guarantee import Accountant
from . import noise
from .calibration import lplp_unit
from .compression import check_totals


def dp_histogram(
    counts: sp.csr_matrix,
    epsilon: float,
    n_changes: int,
    rng: np.random.Generator,
    accountant: Accountant | None = None,
) -> np.ndarray:
    """Noisy, clamped feature totals of the corpus ``counts`` (int64, one per feature).

    ``accountant`` is charged ``epsilon`` after the inputs are checked and before any noise
    is drawn (PRIVACY.md 13).
    """
    epsilon, n_changes, rate = check_histogram(counts, epsilon, n_changes)
    if accountant is not None:
        accountant.charge(epsilon, 0, unit=lplp_unit(n_changes))
    totals = np.asarray(counts.sum(axis=0), dtype=np.int64).ravel()
    noisy = totals + noise.sample_two_sided_geometric(rng, totals.shape, rate)
    return np.maximum(noisy, 0)


def check_histogram(
    counts: sp.csr_matrix, epsilon: float, n_changes: int
) -> tuple[float, int, float]:
    """What :func:`dp_histogram` checks before it charges: ``(epsilon, n_changes, rate)``,
    or the error it would raise (a caller charging it with another release checks first)."""
    epsilon = check_epsilon(epsilon, "histogram_epsilon")
    n_changes = check_int(n_changes, "n_changes", minimum=1)
    rate = noise.check_rate(epsilon / n_changes, "histogram_epsilon / n_changes")
    check_totals(counts, 0, "each feature's corpus total")
    return epsilon, n_changes, rate
