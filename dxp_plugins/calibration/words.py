"""Public calibration words and the scale of epsilon (PRIVACY.md 15): vocabulary samples,
word -> row resolution, and nearest-neighbour distances."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._validation import check_int
from ..distances import get_metric
from ..embeddings.table import OOV_ID, EmbeddingTable
from ..errors import DxpWarning, warn


def _word_ids(
    table: EmbeddingTable, words: Sequence[str | int]
) -> tuple[np.ndarray, tuple[str, ...]]:
    if isinstance(words, str) or not isinstance(words, Sequence | np.ndarray):
        raise TypeError("words must be a sequence of vocabulary words or row ids")
    if len(words) == 0:
        raise ValueError("give at least one word")
    as_array = np.asarray(words)
    if np.issubdtype(as_array.dtype, np.integer):
        ids = as_array.astype(np.int64).ravel()
        if np.min(ids) < 0 or np.max(ids) >= len(table):
            raise ValueError(f"word ids must lie in [0, {len(table)})")
    else:
        if not all(isinstance(word, str) for word in words):
            raise TypeError("words must be all str or all integer row ids")
        ids = table.lookup(list(words))  # type: ignore[arg-type]
        if np.any(ids == OOV_ID):
            # Calibration words are public vocabulary words; N_w is undefined off it.
            raise ValueError(
                f"{int(np.sum(ids == OOV_ID))} calibration word(s) are not in the vocabulary"
            )
    names = table.word_array()[ids]
    return ids, tuple(str(name) for name in names)


def sample_words(
    embeddings: EmbeddingTable,
    n: int,
    *,
    pool: int | None = None,
    random_state: int | None = None,
) -> list[str]:
    """``n`` distinct words drawn uniformly from the ``pool`` most frequent (all by default;
    fewer, with a warning, when the pool is smaller than ``n``).

    Only words that look up to their own row are drawn: a few rows (``ﬁrst``, ``…``) are
    unreachable because normalisation (PRIVACY.md 21) sends their word to another row. The
    vocabulary is public, so the sample needs no secure randomness; ``random_state`` makes
    it reproducible.
    """
    if not isinstance(embeddings, EmbeddingTable):
        raise TypeError("embeddings must be an EmbeddingTable")
    n = check_int(n, "n", minimum=1)
    if random_state is not None:  # numpy's own error would name no argument
        random_state = check_int(random_state, "random_state", minimum=0)
    if pool is not None:
        pool = check_int(pool, "pool", minimum=1)
        embeddings_pool = embeddings.most_frequent(pool) if pool < len(embeddings) else embeddings
    else:
        embeddings_pool = embeddings
    candidates = np.asarray(embeddings_pool.words, dtype=object)
    reachable = candidates[
        embeddings.word_array()[embeddings.lookup(list(candidates))] == candidates
    ]
    size = len(reachable)
    if n > size:
        warn(
            f"asked for {n} words but the pool holds {size}: sampling all {size}",
            DxpWarning,
        )
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(size, size=min(n, size), replace=False))
    return [str(word) for word in reachable[rows]]


def neighbor_distances(embeddings: EmbeddingTable, words: Sequence[str | int]) -> np.ndarray:
    """Euclidean distance from each word to its nearest *other* vocabulary row.

    ``epsilon * d`` bounds the log-likelihood ratio between a word and its nearest neighbour
    under an ``epsilon * d``-private mechanism, so ``epsilon * median(d)`` makes a Euclidean
    epsilon readable (PRIVACY.md 15). Brute force in float64 blocks with TEM's Euclidean
    metric (:mod:`dxp_plugins.distances`): a row within rounding of the query, an identical
    vector above all, is recomputed directly (0, not the ~1e-7 that the cancelling
    ``||q||^2 + ||y||^2 - 2 q.y`` leaves).
    """
    ids, _ = _word_ids(embeddings, words)
    euclidean = get_metric("euclidean")
    out = np.empty(len(ids))
    step = max(1, (32 << 20) // (8 * len(embeddings)))
    for start in range(0, len(ids), step):
        block = ids[start : start + step]
        distances = euclidean.to_table(embeddings.vectors[block], embeddings)
        distances[np.arange(len(block)), block] = np.inf
        out[start : start + len(block)] = distances.min(axis=1)
    return out
