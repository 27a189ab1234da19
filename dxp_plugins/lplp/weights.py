"""Public decompression weights (PRIVACY.md 9: public, or a DP histogram with its own budget).

* ``"uniform"``: every word of a group equally likely;
* ``"zipf"``: Zipf's law over the embeddings' public frequency rank, ``1 / (rank + 1)``;
  words without a rank weigh as much as the rarest ranked word would after the table ends,
  ``1 / (len(table) + 1)``;
* ``"dp-histogram"``: the DP corpus histogram (:mod:`.histogram`), released (and paid for)
  only when something is decompressed, i.e. K < M;
* an array of public counts (e.g. from a public corpus), one per feature.

The document's own counts are never an option.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..embeddings.table import OOV_ID
from .groupings import GroupingContext

WEIGHTS = ("uniform", "zipf", "dp-histogram")


def public_weights(weights: Any, context: GroupingContext) -> tuple[np.ndarray, str]:
    """Decompression weight of each feature and a description for the guarantee."""
    if isinstance(weights, str):
        if weights == "uniform":
            return np.ones(context.n_features), "uniform (public)"
        if weights == "zipf":
            ids = context.word_ids("weights='zipf'")
            assert context.embeddings is not None
            rank = context.embeddings.frequency_rank
            if rank is None:
                raise ValueError("weights='zipf' needs embeddings with a public frequency rank")
            ranks = np.where(ids != OOV_ID, rank[np.maximum(ids, 0)], len(rank))
            return 1.0 / (ranks + 1.0), "zipf over the public frequency rank"
        if weights == "dp-histogram":
            if context.n_groups == context.n_features:  # K = M: no histogram is released
                return np.ones(context.n_features), "not needed (K = M: nothing is decompressed)"
            return context.dp_histogram().astype(np.float64), "DP corpus histogram"
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)} or public counts")
    try:
        array = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError("weights must be a name or an array of public counts") from error
    if array.shape != (context.n_features,):
        raise ValueError(f"public weights must hold one number per feature ({context.n_features})")
    if not np.isfinite(array).all() or (array < 0).any():
        raise ValueError("public weights must be finite and non-negative")
    return array, "public counts given by the user"
