"""Equal-size k-means (Malinen & Fränti 2014, "Balanced K-means for clustering").

Lloyd iterations whose assignment step is the *balanced assignment*: put every point into
a cluster so that cluster ``k`` receives exactly ``sizes[k]`` points (sizes differ by at
most one) and the total squared distance to the centroids is minimal. The update step takes
the cluster means. Both steps never increase the objective, so the iterations converge.

The assignment step is solved exactly by one of two solvers that return optimal solutions
of the same problem (tests check that their optimal costs agree):

* ``"hungarian"``: :func:`scipy.optimize.linear_sum_assignment` on the M x M cost matrix
  whose columns are the clusters' slots (each centroid repeated ``sizes[k]`` times), as in
  the paper. Memory O(M^2), time O(M^3): for vocabularies up to about 1,500 words.
* ``"transport"``: the same problem is a transportation problem (M sources of supply 1, C
  sinks of demand ``sizes[k]``) on the M x C cost matrix instead of M x M. Its constraint
  matrix is totally unimodular, so the optimal vertex a network simplex returns is an
  integral, optimal assignment: the same optimum as the Hungarian algorithm (ties aside).
  Solved by POT's exact network simplex (``ot.emd``). Measured on GloVe rows: 10,000 words
  into 4 clusters in 0.2 s, into 2,500 clusters in 26 s per iteration (O(M x C) memory).

``"auto"`` takes ``"hungarian"`` up to :data:`HUNGARIAN_MAX` points, else ``"transport"``.
The transport solver needs about :data:`TRANSPORT_BYTES_PER_ENTRY` bytes per point and
cluster (the cost matrix, the plan and the simplex's arcs); :func:`balanced_kmeans` refuses
up front, with MemoryError, a problem whose estimate exceeds the memory available, instead
of running the k-means warm start and then swapping or being killed.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._openmp import prefer_sleeping_threads
from .._validation import check_choice, check_int

prefer_sleeping_threads()  # before POT and scikit-learn load OpenMP

SOLVERS = ("auto", "hungarian", "transport")
#: Largest number of points ``solver="auto"`` gives to the Hungarian algorithm.
HUNGARIAN_MAX = 1500
#: Iteration cap of the network simplex (far above what these problems need).
_MAX_SIMPLEX = 10**9
_CHUNK = 4096
#: Peak bytes per (point, cluster) entry of a transport assignment: measured 45-51 for one
#: assignment of 8,000-12,000 points, 42-48 over whole glove-cluster fits (docs/lplp.md).
TRANSPORT_BYTES_PER_ENTRY = 52


def available_memory() -> int | None:
    """Bytes this process may still allocate: Linux's MemAvailable, lowered by a cgroup v2
    memory limit when one is set; None where neither can be read."""
    limits = []
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with (
            open("/sys/fs/cgroup/memory.max") as limit,
            open("/sys/fs/cgroup/memory.current") as current,
        ):
            text = limit.read().strip()
            if text != "max":
                limits.append(int(text) - int(current.read().strip()))
    except (OSError, ValueError):
        pass
    return min(limits) if limits else None


def check_transport_memory(n_points: int, n_clusters: int) -> None:
    """MemoryError when the transport assignment of ``n_points`` into ``n_clusters`` would
    need more than the available memory (:func:`available_memory`)."""
    needed = TRANSPORT_BYTES_PER_ENTRY * n_points * n_clusters
    available = available_memory()
    if available is not None and needed > available:
        raise MemoryError(
            f"balanced k-means of {n_points:,} words into {n_clusters:,} clusters needs about "
            f"{needed / 2**30:.1f} GiB ({TRANSPORT_BYTES_PER_ENTRY} bytes per word and "
            f"cluster), {max(available, 0) / 2**30:.1f} GiB are available: use fewer features "
            "(e.g. CountVectorizer(max_features=...)), fewer clusters, or the 'random' or "
            "'frequency' grouping"
        )


def cluster_sizes(n_points: int, n_clusters: int) -> np.ndarray:
    """Sizes of ``n_clusters`` equal clusters of ``n_points``: the first ``n % C`` get one more."""
    base, extra = divmod(n_points, n_clusters)
    return np.full(n_clusters, base, dtype=np.int64) + (np.arange(n_clusters) < extra)


def _squared_distances(points: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """M x C squared Euclidean distances (float64, clipped at 0), filled ``_CHUNK`` rows at a
    time into one array (no second M x C copy)."""
    centroid_norms = np.einsum("ij,ij->i", centroids, centroids)
    cost = np.empty((len(points), len(centroids)), dtype=np.float64)
    for start in range(0, len(points), _CHUNK):
        block = points[start : start + _CHUNK]
        norms = np.einsum("ij,ij->i", block, block)
        rows = cost[start : start + _CHUNK]
        np.matmul(block, centroids.T, out=rows)
        rows *= -2.0
        rows += norms[:, None]
        rows += centroid_norms[None]
        np.maximum(rows, 0.0, out=rows)
    return cost


def assignment_cost(points: np.ndarray, centroids: np.ndarray, labels: np.ndarray) -> float:
    """Total squared distance of each point to its cluster's centroid."""
    return float(((points - centroids[labels]) ** 2).sum())


def _hungarian(points: np.ndarray, centroids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    from scipy.optimize import linear_sum_assignment

    slot_cluster = np.repeat(np.arange(len(centroids)), sizes)
    cost = _squared_distances(points, centroids)[:, slot_cluster]
    rows, columns = linear_sum_assignment(cost)
    labels = np.empty(len(points), dtype=np.int64)
    labels[rows] = slot_cluster[columns]
    return labels


def _transport(points: np.ndarray, centroids: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    import ot

    cost = _squared_distances(points, centroids)
    plan, log = ot.emd(
        np.ones(len(points)), sizes.astype(np.float64), cost, numItermax=_MAX_SIMPLEX, log=True
    )
    if log.get("warning"):
        raise RuntimeError(f"balanced assignment did not reach the optimum: {log['warning']}")
    labels = plan.argmax(axis=1)
    if not np.array_equal(plan[np.arange(len(points)), labels], np.ones(len(points))):
        raise RuntimeError("balanced assignment returned a fractional transport plan")
    return labels.astype(np.int64)


def balanced_assignment(
    points: np.ndarray,
    centroids: np.ndarray,
    sizes: np.ndarray,
    *,
    solver: str = "auto",
) -> np.ndarray:
    """Optimal assignment of ``points`` to ``centroids`` with cluster ``k`` of ``sizes[k]``."""
    check_choice(solver, "solver", SOLVERS)
    points = np.asarray(points, dtype=np.float64)
    centroids = np.asarray(centroids, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.sum() != len(points) or len(sizes) != len(centroids) or (sizes < 0).any():
        raise ValueError("cluster sizes must be non-negative and add up to the number of points")
    if solver == "auto":
        solver = "hungarian" if len(points) <= HUNGARIAN_MAX else "transport"
    if solver == "hungarian":
        return _hungarian(points, centroids, sizes)
    return _transport(points, centroids, sizes)


def balanced_kmeans(
    points: np.ndarray,
    n_clusters: int,
    rng: np.random.Generator,
    *,
    solver: str = "auto",
    max_iter: int = 20,
    progress: bool | None = None,
) -> np.ndarray:
    """Labels of ``n_clusters`` equal-size k-means clusters (sizes from :func:`cluster_sizes`).

    Centroids start from scikit-learn's k-means (k-means++ seeding from ``rng``, a few
    unbalanced Lloyd steps); then up to ``max_iter`` balanced Lloyd iterations run until the
    assignment stops changing. A progress bar over the iterations is shown on stderr
    (``progress``: None = when stderr is a terminal). MemoryError, before any work, when the
    transport solver would need more memory than is available.
    """
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    from .._progress import progress_bar

    points = np.asarray(points, dtype=np.float64)
    n_points = len(points)
    n_clusters = check_int(n_clusters, "n_clusters", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    if n_clusters > n_points:
        raise ValueError(f"cannot make {n_clusters} non-empty clusters of {n_points} points")
    sizes = cluster_sizes(n_points, n_clusters)
    if n_clusters == 1:
        return np.zeros(n_points, dtype=np.int64)
    if n_clusters == n_points:
        return np.arange(n_points, dtype=np.int64)
    check_choice(solver, "solver", SOLVERS)
    if solver == "transport" or (solver == "auto" and n_points > HUNGARIAN_MAX):
        check_transport_memory(n_points, n_clusters)
    distinct = len(np.unique(points, axis=0))
    seed = int(rng.integers(2**31 - 1))
    if distinct >= n_clusters:
        with warnings.catch_warnings():  # only a warm start: duplicates may merge clusters
            warnings.simplefilter("ignore", ConvergenceWarning)
            kmeans = KMeans(n_clusters, n_init=1, max_iter=10, random_state=seed).fit(points)
        centroids = kmeans.cluster_centers_
    else:  # fewer distinct points than clusters: start from random points
        centroids = points[rng.choice(n_points, n_clusters, replace=False)]
    labels: np.ndarray | None = None
    with progress_bar(
        progress,
        total=max_iter,
        desc=f"balanced k-means ({n_points:,} words, {n_clusters:,} clusters)",
        unit="iteration",
    ) as bar:
        for _ in range(max_iter):
            new = balanced_assignment(points, centroids, sizes, solver=solver)
            bar.update()
            if labels is not None and np.array_equal(new, labels):
                bar.total = bar.n  # converged: the bar ends full
                bar.refresh()
                break
            labels = new
            sums = np.zeros_like(centroids)
            np.add.at(sums, labels, points)
            centroids = sums / np.maximum(sizes, 1)[:, None]
    assert labels is not None
    return labels
