"""Making epsilon interpretable and comparable: plausible deniability, choosing epsilon,
and the privacy ratio between metrics.

Plausible deniability (Feyisetan et al., WSDM 2020, Section 4.1). For a word w and a
mechanism M, ``N_w = Pr[M(w) = w]`` (Renyi min-entropy proxy ``H_inf ~ log(1 / N_w)``,
exact when w is its own most likely output, as at large epsilon) and ``S_w``, the size of
the smallest output set holding at least ``1 - eta`` of the mass (Renyi-0 proxy
``H_0 ~ log S_w``). Both describe the outputs of one input word: small N_w and large S_w
mean its releases are spread over many words; N_w grows and S_w shrinks as epsilon grows.

Privacy ratio (BRR paper, Section 5 and Appendix A). Mechanisms in different metrics are
compared through a statistic P_d of each metric over the vocabulary (the average pairwise
distance ``P_d^avg`` or the maximum ``P_d^max``) and ``R = P_dA / P_dB``: metric B with
``epsilon_B = R * epsilon_A`` spends the same privacy on a typical (or the farthest) pair of
words as metric A with ``epsilon_A``.

Modules (one job each): :mod:`.support` (S_w from a law or from draws, with confidence
bounds), :mod:`.result` (:class:`PlausibleDeniability`), :mod:`.deniability`
(:func:`plausible_deniability`: exact or Monte Carlo), :mod:`.choose` (:func:`choose_epsilon`,
the Section 4.1 search), :mod:`.words` (:func:`sample_words`, :func:`neighbor_distances`:
``epsilon * median d_NN``, PRIVACY.md 15), :mod:`.spaces` (a vocabulary as a metric space),
:mod:`.pairwise` (:func:`distance_summary`: P_d^avg and P_d^max) and :mod:`.ratio`
(:func:`privacy_ratio`, :func:`equivalent_epsilon`).

Everything here reads public data only (vocabulary words, never user text). Monte Carlo
draws go through ``mech.privatize_ids`` and so are charged to ``mech.accountant``: calibrate
on a mechanism built for the purpose, not on one whose accountant guards a real budget
(:func:`choose_epsilon` builds its own, each with a fresh accountant).
"""

from __future__ import annotations

from .choose import DEFAULT_GRID, EpsilonChoice, MechanismFactory, choose_epsilon
from .deniability import DEFAULT_ETA, MC_BATCH, METHODS, plausible_deniability
from .pairwise import DEFAULT_MAX_WORK, DistanceSummary, distance_summary
from .ratio import PrivacyRatio, equivalent_epsilon, privacy_ratio
from .result import PlausibleDeniability
from .support import support_size
from .words import neighbor_distances, sample_words

__all__ = [
    "DEFAULT_ETA",
    "DEFAULT_GRID",
    "DEFAULT_MAX_WORK",
    "MC_BATCH",
    "METHODS",
    "DistanceSummary",
    "EpsilonChoice",
    "MechanismFactory",
    "PlausibleDeniability",
    "PrivacyRatio",
    "choose_epsilon",
    "distance_summary",
    "equivalent_epsilon",
    "neighbor_distances",
    "plausible_deniability",
    "privacy_ratio",
    "sample_words",
    "support_size",
]
