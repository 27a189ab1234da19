"""Horizontal compression: partitions of the M vocabulary features into K groups.

Schofield, Yauney & Mimno compare four groupings; each is a function registered in the
``groupings`` catalogue registry (entry-point group ``dxp_plugins_groupings``), so users can
add their own with one entry-point line. A grouping function takes a
:class:`GroupingContext` and keyword parameters and returns ``labels``: the group
(0..K-1) of every feature. :func:`make_groups` checks that the result is a partition.

Groupings must be public (PRIVACY.md 9): built from the feature names, public embeddings,
randomness, or a DP corpus histogram released with its own stated budget -- never from the
documents being released.

Words without a vector (or without a public rank) follow one documented public rule:

* clustering groupings place them at the embeddings' public UNK point (the centroid, the
  same point the word mechanisms use for OOV tokens), so they cluster like any word;
* FREQUENCY orders them after every ranked word, in feature order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_choice, check_int
from ..embeddings.table import OOV_ID, EmbeddingTable
from .balanced import balanced_kmeans


@dataclass
class GroupingContext:
    """Everything public a grouping may use.

    ``histogram`` is a callable releasing the DP corpus histogram on first use (it charges
    its own budget), or None when no histogram budget was given.
    """

    n_features: int
    n_groups: int
    rng: np.random.Generator
    words: tuple[str, ...] | None = None
    embeddings: EmbeddingTable | None = None
    histogram: Callable[[], np.ndarray] | None = None
    _ids: np.ndarray | None = field(default=None, repr=False)

    def word_ids(self, needed_by: str = "this grouping") -> np.ndarray:
        """Row of each feature in the embeddings (``OOV_ID`` = -1 when absent)."""
        hints = {
            "vocabulary=": "vocabulary= (the public word list in column order, the one "
            "given to CountVectorizer(vocabulary=...))",
            "embeddings=": "embeddings= (e.g. 'glove-6b-50d')",
        }
        missing = [
            hints[argument]
            for argument, value in (("vocabulary=", self.words), ("embeddings=", self.embeddings))
            if value is None
        ]
        if missing:
            raise ValueError(
                f"{needed_by} needs the feature words and public embeddings: missing "
                + " and ".join(missing)
            )
        assert self.words is not None and self.embeddings is not None
        if self._ids is None:
            self._ids = self.embeddings.lookup(list(self.words))
        return self._ids

    def word_vectors(self) -> np.ndarray:
        """float64 vector of each feature; words without one get the public UNK point."""
        ids = self.word_ids("this grouping (GloVe clusters)")
        assert self.embeddings is not None
        vectors = np.empty((len(ids), self.embeddings.dim), dtype=np.float64)
        known = ids != OOV_ID
        vectors[known] = self.embeddings.vectors[ids[known]]
        vectors[~known] = self.embeddings.unk_vector()
        return vectors

    def dp_histogram(self) -> np.ndarray:
        """The DP corpus counts of each feature (released on first use)."""
        if self.histogram is None:
            raise ValueError(
                "this grouping needs a DP corpus histogram: set histogram_epsilon (its budget)"
            )
        return self.histogram()


def check_partition(labels: Any, n_features: int, n_groups: int) -> np.ndarray:
    """``labels`` as int64 if it maps each of ``n_features`` features to one of ``n_groups``
    non-empty groups (PRIVACY.md 26); ValueError otherwise."""
    try:
        array = np.asarray(labels)
    except (TypeError, ValueError) as error:
        raise ValueError("groups must be an integer array, one group per feature") from error
    if array.shape != (n_features,) or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"groups must be {n_features} integers, one group per feature")
    if len(array) and (array.min() < 0 or array.max() >= n_groups):
        raise ValueError(f"group labels must lie in 0..{n_groups - 1}")
    if len(np.unique(array)) != n_groups:
        raise ValueError(f"every one of the {n_groups} groups must hold at least one feature")
    return array.astype(np.int64)


def round_robin(order: np.ndarray, n_groups: int) -> np.ndarray:
    """Labels dealing features in ``order`` to groups 0, 1, ..., K-1, 0, 1, ..."""
    labels = np.empty(len(order), dtype=np.int64)
    labels[order] = np.arange(len(order)) % n_groups
    return labels


def random_grouping(context: GroupingContext) -> np.ndarray:
    """RANDOM: a uniformly random partition into K groups of equal size (+-1)."""
    return round_robin(context.rng.permutation(context.n_features), context.n_groups)


def frequency_grouping(context: GroupingContext, *, order: str = "rank") -> np.ndarray:
    """FREQUENCY: round-robin over a public frequency order.

    ``order="rank"``: the embeddings' public frequency rank (unranked words last, in feature
    order); ``order="histogram"``: the DP corpus histogram, most frequent first (ties in
    feature order), released with its own budget.
    """
    check_choice(order, "order", ("rank", "histogram"))
    if order == "histogram":
        keys = -np.asarray(context.dp_histogram(), dtype=np.float64)
    else:
        ids = context.word_ids("grouping 'frequency' (order='rank')")
        assert context.embeddings is not None
        rank = context.embeddings.frequency_rank
        if rank is None:
            raise ValueError("the embeddings have no public frequency rank; use order='histogram'")
        keys = np.where(ids != OOV_ID, rank[np.maximum(ids, 0)], len(rank)).astype(np.float64)
    return round_robin(np.argsort(keys, kind="stable"), context.n_groups)


def glove_cluster_grouping(
    context: GroupingContext,
    *,
    solver: str = "auto",
    max_iter: int = 20,
    progress: bool | None = None,
) -> np.ndarray:
    """GLOVE-CLUSTER: K equal-size k-means clusters of the word vectors (balanced k-means;
    ``progress``: a bar over its iterations, None = when stderr is a terminal)."""
    return balanced_kmeans(
        context.word_vectors(),
        context.n_groups,
        context.rng,
        solver=solver,
        max_iter=max_iter,
        progress=progress,
    )


def glove_disperse_grouping(
    context: GroupingContext,
    *,
    solver: str = "auto",
    max_iter: int = 20,
    progress: bool | None = None,
) -> np.ndarray:
    """GLOVE-DISPERSE: each group takes one word from each of ceil(M/K) equal-size clusters.

    Clusters have at most K words; cluster c's words, in random order, are dealt to the
    groups ``(offset_c + j) mod K`` where ``offset_c`` counts the words dealt before it, so
    no group gets two words of one cluster and group sizes differ by at most one. When K
    divides M every group holds exactly one word of every cluster.
    """
    n_clusters = -(-context.n_features // context.n_groups)
    clusters = balanced_kmeans(
        context.word_vectors(),
        n_clusters,
        context.rng,
        solver=solver,
        max_iter=max_iter,
        progress=progress,
    )
    return disperse(clusters, context.n_groups, context.rng)


def disperse(clusters: np.ndarray, n_groups: int, rng: np.random.Generator) -> np.ndarray:
    """Deal each cluster's members, in random order, to consecutive groups (mod K)."""
    n_clusters = int(clusters.max()) + 1
    if np.max(np.bincount(clusters, minlength=n_clusters)) > n_groups:
        raise ValueError("a cluster larger than n_groups cannot be dispersed")
    dealt = np.concatenate(
        [rng.permutation(np.flatnonzero(clusters == c)) for c in range(n_clusters)]
    )
    return round_robin(dealt, n_groups)


def identity_grouping(context: GroupingContext) -> np.ndarray:
    """No compression (K = M): every feature is its own group."""
    if context.n_groups != context.n_features:
        raise ValueError("the identity grouping needs n_groups == n_features")
    return np.arange(context.n_features, dtype=np.int64)


def make_groups(name: str, context: GroupingContext, **params: Any) -> np.ndarray:
    """Labels of the registered grouping ``name``, checked to be a partition."""
    from .. import registry

    n_features = check_int(context.n_features, "n_features", minimum=1)
    n_groups = check_int(context.n_groups, "n_groups", minimum=1)
    if n_groups > n_features:
        raise ValueError(f"n_groups ({n_groups}) cannot exceed the {n_features} features")
    grouping = registry.resolve(registry.groupings, name)
    return check_partition(grouping(context, **params), n_features, n_groups)
