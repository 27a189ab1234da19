"""The effective support S_w of an output law (Madlib paper, Section 4.1).

S_w is the size of the smallest set of outputs holding at least ``1 - eta`` of the mass:
exact from a closed-form law (:func:`support_size`), or from Monte Carlo draws as a plug-in
value with Clopper-Pearson confidence bounds. Pure numpy: no mechanisms.
"""

from __future__ import annotations

import numpy as np


def support_size(probabilities: np.ndarray, eta: float) -> int:
    """Size of the smallest set of outputs with mass ``>= 1 - eta`` (the largest first).

    ``eta = 0`` gives the full support (every output with positive probability).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if eta == 0.0:
        return int(np.count_nonzero(p > 0))
    ranked = np.sort(p)[::-1]
    cumulative = np.cumsum(ranked)
    # Relative slack for float rounding in the running sum.
    target = (1.0 - eta) * cumulative[-1] * (1.0 - 1e-12)
    return int(min(np.searchsorted(cumulative, target, side="left") + 1, len(p)))


def _sampled_support(draws: np.ndarray, needed: float) -> tuple[np.ndarray, np.ndarray]:
    """Fewest outputs (most frequent first) whose counts reach ``needed``, and the number of
    distinct outputs, for each row of ``draws`` (W x n)."""
    words, n = draws.shape
    ordered = np.sort(draws, axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    flat = np.flatnonzero(starts.ravel())
    run_row = flat // n
    run_length = np.diff(np.r_[flat, words * n])
    # Sort runs by (row, length descending) with one integer sort.
    keys = np.sort(run_row * (n + 1) + (n - run_length))
    row = keys // (n + 1)
    length = n - keys % (n + 1)
    cumulative = np.cumsum(length)
    first = np.searchsorted(row, np.arange(words), side="left")
    before = cumulative - length - np.r_[0, cumulative][first][row]
    support = np.bincount(row[before < needed - 1e-9], minlength=words)
    distinct = np.bincount(row, minlength=words)
    return support.astype(np.int64), distinct.astype(np.int64)


def _fewest_successes(trials: int, mass: float, alpha: float, upper: bool) -> int | None:
    """Smallest count whose one-sided Clopper-Pearson bound (upper or lower) reaches
    ``mass``, or None when even ``trials`` successes do not."""
    from ..audit import clopper_pearson

    bounds = clopper_pearson(np.arange(trials + 1), trials, alpha)[1 if upper else 0]
    reached = np.flatnonzero(bounds >= mass * (1.0 - 1e-12))
    return int(reached[0]) if reached.size else None


def _support_bounds(
    draws: np.ndarray, eta: float, alpha: float, vocab_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence bounds on the true S_w from ``draws`` (W x n), each holding with
    probability >= 1 - alpha per word.

    Lower: if T is the true top-S_w set, Pr[T] >= 1 - eta and its count is at most the count
    of the sample's top S_w outputs, so the Clopper-Pearson upper bound of that count reaches
    1 - eta: S_w is at least the fewest sample outputs whose count does. Upper (sample
    split): the top outputs of the first half holding enough mass form a set A chosen
    without the second half; when the second half's lower bound of Pr[A] reaches 1 - eta,
    S_w <= |A|, else only the vocabulary size bounds it.
    """
    words, n = draws.shape
    needed = _fewest_successes(n, 1.0 - eta, alpha, upper=True)
    low = _sampled_support(draws, needed if needed is not None else n)[0]
    high = np.full(words, vocab_size, dtype=np.int64)
    half = n // 2
    enough_first = _fewest_successes(half, 1.0 - eta, alpha, upper=False) if half else None
    enough_second = _fewest_successes(n - half, 1.0 - eta, alpha, upper=False)
    if enough_first is None or enough_second is None:
        return np.maximum(low, 1), high
    rows = np.arange(words, dtype=np.int64)[:, None]
    keys, counts = np.unique(rows * vocab_size + draws[:, :half], return_counts=True)
    key_row = keys // vocab_size
    order = np.lexsort((keys, -counts, key_row))  # per row: most frequent first
    start = np.searchsorted(key_row[order], np.arange(words))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys)) - start[key_row[order]] + 1
    cumulative = np.cumsum(counts[order])
    within = cumulative - np.r_[0, cumulative][start][key_row[order]]
    size = np.full(words, vocab_size, dtype=np.int64)
    reached = within >= enough_first
    np.minimum.at(size, key_row[order][reached], rank[order][reached])
    second = rows * vocab_size + draws[:, half:]
    position = np.minimum(np.searchsorted(keys, second), len(keys) - 1)
    inside = (keys[position] == second) & (rank[position] <= size[:, None])
    confirmed = np.count_nonzero(inside, axis=1) >= enough_second
    high[confirmed] = size[confirmed]
    return np.maximum(low, 1), high
