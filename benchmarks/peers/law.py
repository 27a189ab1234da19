"""TEM's output law as the paper states it and as the peers implement it (exact, no sampling).

TEM (Carvalho et al., SDM 2023, Alg. 1): candidates ``L_w = {y : d(w, y) <= gamma}`` score
``-d(w, y)``; a ⊥ element scores ``-gamma + (2/eps) ln|W \\ L_w|``; Gumbel(0, 2/eps) noise and
argmax, so ``Pr[y] ∝ exp(eps * score(y) / 2)``; ⊥ then draws uniformly from ``W \\ L_w``;
``gamma = (2/eps) ln((1 - beta)(|W| - 1) / beta)`` (Thm 4.2).

* mldp-text 0.1.2 rounds gamma to 0.1 with ``|W|`` for ``|W| - 1``, and scores ⊥ with
  ``(2/eps) ln(34573 / |L_w|)`` (the size of its bundled word list, not ``|W \\ L_w|``).
* pypantera 1.0.2 scores ⊥ as the paper does, but when ⊥ wins its uniform draw crashes
  (``np.random.choice`` on a list of vectors) and the input word is returned instead.

Because the law is a softmax over public distances, these probabilities are computed exactly
from the same vectors the benchmark uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from benchmarks.peers.harness import BETA

__all__ = ["BETA", "compare", "mldp_law", "paper_law"]

#: Size of mldp-text's bundled vocabulary list, which its TEM uses in the ⊥ score.
MLDP_LIST_SIZE = 34_573


def paper_gamma(epsilon: float, beta: float, vocab_size: int) -> float:
    """Thm 4.2: ``(2/eps) ln((1 - beta)(|W| - 1) / beta)``."""
    return (2.0 / epsilon) * math.log((1.0 - beta) * (vocab_size - 1) / beta)


def mldp_gamma(epsilon: float, beta: float, vocab_size: int) -> float:
    """mldp-text's threshold: ``round((2/eps) ln((1 - beta)|W| / beta), 1)``."""
    return round((2.0 / epsilon) * math.log((1.0 - beta) * vocab_size / beta), 1)


@dataclass(frozen=True)
class Law:
    """For one input: Pr[⊥ wins] and Pr[output = input]."""

    p_bottom: float
    p_self: float
    candidates: int


def tem_law(distances: np.ndarray, epsilon: float, gamma: float, bottom_score: float) -> Law:
    """Gumbel-max law over ``L_w`` plus ⊥ (``bottom_score = -inf`` when ⊥ is impossible).

    ``distances`` holds d(w, y) for every vocabulary word y (the input's own entry is 0).
    """
    inside = distances[distances <= gamma]
    logits = -0.5 * epsilon * inside
    bottom = 0.5 * epsilon * bottom_score
    top = max(float(logits.max(initial=-np.inf)), bottom)
    total = float(np.exp(logits - top).sum()) + math.exp(bottom - top)
    return Law(
        p_bottom=math.exp(bottom - top) / total,
        p_self=math.exp(-top) / total,
        candidates=len(inside),
    )


def paper_law(distances: np.ndarray, epsilon: float, beta: float) -> Law:
    """TEM as published (⊥ only when ``W \\ L_w`` is non-empty)."""
    gamma = paper_gamma(epsilon, beta, len(distances))
    outside = int(np.sum(distances > gamma))
    score = -gamma + (2.0 / epsilon) * math.log(outside) if outside else -math.inf
    return tem_law(distances, epsilon, gamma, score)


def mldp_law(distances: np.ndarray, epsilon: float, beta: float) -> Law:
    """mldp-text 0.1.2's TEM (its ⊥ score; ⊥ with empty ``W \\ L_w`` raises there)."""
    gamma = mldp_gamma(epsilon, beta, len(distances))
    inside = int(np.sum(distances <= gamma))
    score = -gamma + (2.0 / epsilon) * math.log(MLDP_LIST_SIZE / inside)
    return tem_law(distances, epsilon, gamma, score)


def distances_to_all(vectors: np.ndarray, rows: np.ndarray, block: int = 64) -> np.ndarray:
    """Euclidean distances (float64) from each of ``rows`` to every row, in blocks."""
    data = np.asarray(vectors, dtype=np.float64)
    norms = np.einsum("ij,ij->i", data, data)
    out = np.empty((len(rows), len(data)))
    for start in range(0, len(rows), block):
        query = data[rows[start : start + block]]
        squared = norms[rows[start : start + block], None] + norms[None, :] - 2.0 * query @ data.T
        out[start : start + block] = np.sqrt(np.maximum(squared, 0.0))
        out[start + np.arange(len(query)), rows[start : start + block]] = 0.0
    return out


def compare(
    vectors: np.ndarray, rows: np.ndarray, epsilons: list[float], beta: float, block: int = 64
) -> list[dict[str, float]]:
    """Token-averaged Pr[⊥] and Pr[output = input] per epsilon: paper, mldp-text, pypantera.

    ``rows`` are the in-vocabulary input tokens' row ids (repeats count as often as they
    occur). pypantera's Pr[output = input] is the paper's plus Pr[⊥] (⊥ returns the input).
    """
    unique, counts = np.unique(np.asarray(rows, dtype=np.int64), return_counts=True)
    sums = {eps: np.zeros(5) for eps in epsilons}
    for start in range(0, len(unique), block):
        distances = distances_to_all(vectors, unique[start : start + block], block)
        for row_distances, count in zip(distances, counts[start : start + block], strict=True):
            for eps in epsilons:
                paper = paper_law(row_distances, eps, beta)
                mldp = mldp_law(row_distances, eps, beta)
                sums[eps] += count * np.array(
                    [paper.p_bottom, paper.p_self, mldp.p_bottom, mldp.p_self, paper.candidates]
                )
    total = float(counts.sum())
    return [
        {
            "epsilon": eps,
            "paper_p_bottom": sums[eps][0] / total,
            "paper_p_self": sums[eps][1] / total,
            "mldp_p_bottom": sums[eps][2] / total,
            "mldp_p_self": sums[eps][3] / total,
            "pypantera_p_self": (sums[eps][1] + sums[eps][0]) / total,
            "mean_candidates": sums[eps][4] / total,
        }
        for eps in epsilons
    ]
