"""The LPLP release: compress, add two-sided geometric noise, clamp, decompress.

Schofield, Yauney & Mimno, "Combatting the Challenges of Local Privacy for Distributional
Semantics with Compression": each document's count vector ``y`` (M features) is compressed
to ``C y`` (K group sums), each entry gets independent two-sided geometric noise calibrated
by :mod:`.calibration` (sound default: ``alpha = exp(-epsilon/N)``, which makes the whole
release (N, epsilon)-LPLP for any partition, K = M included), negative noisy counts are
clamped to zero and each group count is spread back over the group's words by multinomial
resampling with public weights (:mod:`.compression`). Clamping and decompression are
post-processing of the noisy counts, so they keep the guarantee.
"""

from __future__ import annotations

import functools
import os
import secrets
import threading
from typing import Any, cast

import numpy as np
import scipy.sparse as sp

from .._random import RandomSource
from .._validation import check_choice, check_epsilon, check_int
from ..embeddings.table import EmbeddingTable
from ..guarantee import Accountant
from . import calibration, noise
from .calibration import CALIBRATIONS, CalibrationMode, NoiseCalibration, lplp_unit
from .compression import DecompressionPlan, check_counts, decompress, indicator
from .groupings import check_partition
from .guarantee import LPLPGuarantee

#: Output entries per internal chunk (bounds memory on huge corpora, PRIVACY.md 24).
CHUNK_ENTRIES = 1 << 21
#: A chunk of at least this many noisy entries draws the noise of its second half of rows
#: on a helper thread from a second generator (:meth:`RandomSource.helper`): two ChaCha20
#: streams fill at once, 0.5x the noise time on 2 cores. Smaller releases, and sparse
#: noise (few draws: the thread would cost more than it saves), draw all of it from the
#: source's generator, as they always did.
SPLIT_ENTRIES = 1 << 16


class LPLPRelease:
    """(N, epsilon)-LPLP release of bag-of-words count vectors with horizontal compression.

    Parameters
    ----------
    groups:
        The group (0..K-1) of each of the M features: a public partition (see
        :mod:`.groupings`). ``numpy.arange(M)`` is the uncompressed release.
    epsilon, n_changes:
        The target (N, epsilon)-LPLP guarantee of each document's release.
    weights:
        Public (or DP) non-negative decompression weight of each feature (default uniform).
    calibration:
        ``"sound"`` (default) or ``"paper"`` (the paper's per-entry ``epsilon' = M
        epsilon / K``, reported with its TRUE epsilon ``M epsilon / K``).
    embeddings:
        The public embeddings the grouping used: an :class:`EmbeddingTable` (its
        fingerprint is recorded, as every record names embeddings) or a fingerprint string;
        "" for none.
    grouping, weights_source, histogram_epsilon:
        Public descriptions recorded in the guarantee. Without ``grouping`` the record says
        ``"none"`` for K = M and "given by the caller" otherwise; without
        ``weights_source``, "uniform (public)" when ``weights`` is None and "given by the
        caller (not described)" otherwise: the record never names weights it was not told.
    random_state:
        None (secure), an int seed (warns), or a :class:`RandomSource` to share.
    accountant:
        Charged the true per-document epsilon before any noise is drawn.
    """

    def __init__(
        self,
        groups: Any,
        *,
        epsilon: float,
        n_changes: int = 1,
        weights: Any = None,
        calibration: CalibrationMode = "sound",
        grouping: str | None = None,
        weights_source: str | None = None,
        histogram_epsilon: float | None = None,
        embeddings: EmbeddingTable | str = "",
        random_state: int | RandomSource | None = None,
        accountant: Accountant | None = None,
    ) -> None:
        labels = np.asarray(groups)
        n_features = len(labels) if labels.ndim == 1 else -1
        n_groups = int(labels.max()) + 1 if labels.ndim == 1 and labels.size else 0
        self.groups = check_partition(labels, n_features, max(n_groups, 1))
        self.n_features, self.n_groups = len(self.groups), max(n_groups, 1)
        self.epsilon = check_epsilon(epsilon)
        self.n_changes = check_int(n_changes, "n_changes", minimum=1)
        self.calibration = cast(
            CalibrationMode, check_choice(calibration, "calibration", CALIBRATIONS)
        )
        self.noise_calibration()  # refuse noise beyond int64 now, not at the first release
        self.plan = DecompressionPlan.build(
            self.groups, self.n_groups, np.ones(self.n_features) if weights is None else weights
        )
        if grouping is None:
            grouping = "none" if self.n_groups == self.n_features else "given by the caller"
        if weights_source is None:
            weights_source = (
                "uniform (public)" if weights is None else "given by the caller (not described)"
            )
        self.grouping = grouping
        self.weights_source = weights_source
        self.histogram_epsilon = (
            None
            if histogram_epsilon is None
            else check_epsilon(histogram_epsilon, "histogram_epsilon")
        )
        #: Names the histogram release this object's records pay for (merge refuses others).
        self.histogram_id = None if self.histogram_epsilon is None else secrets.token_hex(8)
        if isinstance(embeddings, EmbeddingTable):
            embeddings = embeddings.fingerprint
        elif not isinstance(embeddings, str):  # refused now, not at the first release
            raise TypeError(
                f"embeddings must be an EmbeddingTable or its fingerprint (str), got "
                f"{type(embeddings).__name__}"
            )
        elif embeddings and not _is_fingerprint(embeddings):  # e.g. a registry name
            raise ValueError(
                "embeddings must be an EmbeddingTable or its fingerprint (64 hex digits, "
                "EmbeddingTable.fingerprint), as every record names its embeddings"
            )
        self.embeddings = embeddings
        self._random = (
            random_state if isinstance(random_state, RandomSource) else RandomSource(random_state)
        )
        self.accountant = accountant if accountant is not None else Accountant.default()
        self._indicator = indicator(self.groups, self.n_groups)
        #: The record of the latest :meth:`release` (None before the first).
        self.last_guarantee: LPLPGuarantee | None = None

    def noise_calibration(self) -> NoiseCalibration:
        """Per-entry noise rate and the true guarantee (looked up at every release)."""
        return calibration.calibrate(
            self.epsilon, self.n_changes, self.n_features, self.n_groups, self.calibration
        )

    def guarantee(
        self, documents: int, calibrated: NoiseCalibration | None = None
    ) -> LPLPGuarantee:
        """The record of releasing ``documents`` count vectors with these settings, or with
        the ``calibrated`` noise a release was charged and drawn at."""
        if calibrated is None:
            calibrated = self.noise_calibration()
        return LPLPGuarantee(
            epsilon=calibrated.epsilon,
            claimed_epsilon=calibrated.claimed_epsilon,
            n_changes=calibrated.n_changes,
            n_features=self.n_features,
            n_groups=self.n_groups,
            grouping=self.grouping,
            weights=self.weights_source,
            histogram_epsilon=self.histogram_epsilon,
            histogram_id=self.histogram_id,
            calibration=calibrated.calibration,
            documents=documents,
            # no document, no release: nothing is charged (PRIVACY.md 22), nothing recorded
            releases=1 if documents else 0,
            embeddings=self.embeddings,
            rng=self._random.mode,
        )

    def release(
        self, counts: Any, *, charged: NoiseCalibration | None = None
    ) -> tuple[sp.csr_matrix, LPLPGuarantee]:
        """Private counts (CSR int64, same features) of each row of ``counts``, and the record.
        ``charged``: the caller charged this release already, at this calibration (with the
        DP histogram, as one charge): it is drawn at it and not charged again."""
        matrix = check_counts(counts, self.n_features)
        documents = matrix.shape[0]
        # One calibration for the charge, the noise and the record, whatever another thread
        # assigns to epsilon or n_changes meanwhile.
        calibrated = self.noise_calibration() if charged is None else charged
        record = self.guarantee(documents, calibrated)
        if documents == 0:  # no document, no release: nothing charged (PRIVACY.md 22)
            self.last_guarantee = record
            return sp.csr_matrix((0, self.n_features), dtype=np.int64), record
        rng = self._random.generator()  # keyed first: a keying that fails spends nothing
        step = max(1, CHUNK_ENTRIES // (self.n_features + 1))
        # The layout of the draws depends on the release only (never on the host's CPUs),
        # so a seeded release gives the same output on any machine; the helper thread is
        # only a way of filling the second half faster.
        split = min(step, documents) * self.n_groups >= SPLIT_ENTRIES and noise.is_dense(
            calibrated.rate
        )
        secure = self._random.mode == "secure"
        helper = self._random.helper(rng) if split and secure else None  # a fresh OS key
        if charged is None:  # before any noise; a refusal leaves the last record as it was
            unit = lplp_unit(calibrated.n_changes)
            self.accountant.charge(calibrated.epsilon, documents, unit=unit)
        if split and not secure:  # after the charge: a refusal leaves the seeded stream as is
            helper = self._random.helper(rng)
        self.last_guarantee = record
        compressed = (matrix @ self._indicator).tocsr()
        pieces = []
        for start in range(0, documents, step):
            exact = compressed[start : start + step].toarray()
            noisy = exact + _noise(rng, helper, exact.shape, calibrated.rate)
            np.maximum(noisy, 0, out=noisy)
            pieces.append(decompress(noisy, self.plan, rng))
        output = pieces[0] if len(pieces) == 1 else sp.vstack(pieces, format="csr")
        return output, record

    def __repr__(self) -> str:
        return (
            f"LPLPRelease(N={self.n_changes}, epsilon={self.epsilon:g}, M={self.n_features}, "
            f"K={self.n_groups}, grouping={self.grouping!r}, calibration={self.calibration!r}, "
            f"{self._random!r})"
        )


@functools.cache
def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def _noise(
    rng: np.random.Generator,
    helper: np.random.Generator | None,
    shape: tuple[int, int],
    rate: float,
) -> np.ndarray:
    """Two-sided geometric noise of ``shape`` (rows, K) at ``rate``: from ``rng`` alone, or
    (``helper`` given, at least :data:`SPLIT_ENTRIES` entries) the first half of the rows
    from ``rng`` on this thread and the second half from ``helper`` on a helper thread.
    Every entry is an independent draw of the same law either way (two independent
    ChaCha20 streams; PRIVACY.md 11); each generator is used by one thread only."""
    rows, columns = shape
    if helper is None or rows < 2 or rows * columns < SPLIT_ENTRIES:
        return noise.sample_two_sided_geometric(rng, shape, rate)
    half = rows // 2
    out = np.empty(shape, dtype=np.int64)
    if _usable_cpus() < 2:  # the same draws, one after the other
        out[:half] = noise.sample_two_sided_geometric(rng, (half, columns), rate)
        out[half:] = noise.sample_two_sided_geometric(helper, (rows - half, columns), rate)
        return out
    failed: list[BaseException] = []

    def second_half() -> None:
        try:
            out[half:] = noise.sample_two_sided_geometric(helper, (rows - half, columns), rate)
        except BaseException as error:  # raised in the caller's thread
            failed.append(error)

    thread = threading.Thread(target=second_half, name="dxp-lplp-noise", daemon=True)
    thread.start()
    try:
        out[:half] = noise.sample_two_sided_geometric(rng, (half, columns), rate)
    finally:
        thread.join()
    if failed:
        error = failed.pop()  # no cycle (list -> error -> frame -> list) keeps the noise alive
        try:
            raise error
        finally:
            del error
    return out


def _is_fingerprint(text: str) -> bool:
    """Whether ``text`` reads as an :attr:`EmbeddingTable.fingerprint` (SHA-256, hex)."""
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)
