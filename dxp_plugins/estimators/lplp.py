"""LPLPTransformer: bag-of-words counts in, (N, epsilon)-LPLP private counts out.

A scikit-learn transformer for the counts of ``CountVectorizer`` (sparse, non-negative
integers): ``fit`` builds the public grouping and decompression weights (and, only when
asked, a DP corpus histogram with its own budget); every ``transform`` draws fresh noise
and returns non-negative int64 counts over the same features (sparse for sparse input), ready for
``LatentDirichletAllocation`` or ``TruncatedSVD``. ``last_guarantee_`` records what the
last release guarantees (it lives on the fitted ``release_`` object, so ``transform`` leaves
the estimator's own attributes unchanged).

``privatize_at="fit"`` releases only in ``fit_transform`` (what ``Pipeline.fit`` calls) and
passes counts through ``transform`` unchanged, as ``TextPrivatizer``'s does: a model trained
on private counts and scored on clean ones (the paper's evaluation), so ``cross_val_score``
and ``GridSearchCV`` neither charge nor add noise to the validation folds.

The vocabulary must be public (PRIVACY.md 3): give ``CountVectorizer(vocabulary=words)`` a
fixed public word list (e.g. frequent GloVe words) and pass the same list (or dict) as
``vocabulary=`` here, which the embedding-based groupings need.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence, Set
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, check_is_fitted, validate_data

from .._random import FreshTaskToken, RandomSource
from .._validation import check_epsilon, check_int, check_no_fit_params
from ..embeddings.table import EmbeddingTable
from ..errors import PrivacyWarning, warn
from ..guarantee import Accountant
from ..lplp import calibration as lplp_calibration
from ..lplp.calibration import CalibrationMode, NoiseCalibration, lplp_unit
from ..lplp.compression import check_counts
from ..lplp.groupings import GroupingContext, identity_grouping, make_groups
from ..lplp.guarantee import LPLPGuarantee
from ..lplp.histogram import check_histogram, dp_histogram
from ..lplp.release import LPLPRelease
from ..lplp.weights import public_weights
from ._params import snapshot
from ._privatize_at import PrivatizeAt, check_privatize_at, warn_if_fitted_without_release
from ._seeding import RefusesEnsembleSeeds

#: Sparse formats taken as they are (others, e.g. DOK, are converted to the first).
_SPARSE = ("csr", "csc", "coo")
#: Side streams for fitting: the grouping is published, so its draws must never be the
#: noise draws (or the DP histogram's), which one seeded generator would hand them.
_GROUPING_STREAM, _HISTOGRAM_STREAM = 0x4C504C50, 0x48495354  # "LPLP", "HIST"
#: Parameters added after the first release, with the value pickles made before them had
#: (the behaviour those fits got: no loader arguments, the whole table, a release per call).
_ADDED_PARAMS: dict[str, Any] = {
    "embeddings_params": None,
    "vocab_size": None,
    "privatize_at": "always",
}
#: A fitted setting that was not recorded (differs from every value).
_ABSENT = object()


class _HistogramOnce:
    """The DP corpus histogram a grouping or the weights ask for (``context.histogram()``),
    released at most once per ``fit``, with its own budget ``epsilon`` (PRIVACY.md 9).

    ``release``: the calibration of the release of the same counts that follows
    (:meth:`LPLPTransformer.fit_transform`); then the histogram and that release are charged
    together, as one charge, before the histogram is drawn (a cap either allows both or
    refuses both with nothing spent), and :attr:`charged_release` says so."""

    def __init__(
        self,
        counts: Any,
        epsilon: float | None,
        n_changes: int,
        rng: np.random.Generator,
        accountant: Accountant,
        release: NoiseCalibration | None,
    ) -> None:
        self._counts, self._epsilon, self._n_changes = counts, epsilon, n_changes
        self._rng, self._accountant, self._release = rng, accountant, release
        self.counts: np.ndarray | None = None
        self.charged_release: NoiseCalibration | None = None

    def __call__(self) -> np.ndarray:
        if self.counts is not None:
            return self.counts
        epsilon, release = self._epsilon, self._release
        if epsilon is None:
            raise ValueError("a DP corpus histogram needs histogram_epsilon (its budget)")
        ledger: Accountant | None = self._accountant
        if release is not None:
            check_histogram(self._counts, epsilon, self._n_changes)  # before the joint charge
            self._accountant.charge(
                epsilon + release.epsilon,
                self._counts.shape[0],
                unit=lplp_unit(self._n_changes),
            )
            self.charged_release = release
            ledger = None  # charged above: dp_histogram must not charge it again
        self.counts = dp_histogram(self._counts, epsilon, self._n_changes, self._rng, ledger)
        return self.counts


class LPLPTransformer(FreshTaskToken, RefusesEnsembleSeeds, TransformerMixin, BaseEstimator):
    """(N, epsilon)-LPLP release of bag-of-words counts with horizontal compression.

    Parameters
    ----------
    epsilon:
        Per-document privacy parameter of (N, epsilon)-LPLP; default 1.0. The word doors
        have no default epsilon (theirs is per unit of the mechanism's metric, so a value's
        meaning depends on the table); this one has a single scale once N is fixed, the
        count: with the default N = 1, adding or removing one word occurrence changes the
        probability of any output by at most a factor e^epsilon, on every corpus and
        vocabulary of single-word columns (each compressed entry gets two-sided geometric
        noise with ``alpha = exp(-epsilon / N)``; n-gram columns of lengths 1 to n move n^2
        counts per word: a vocabulary of them warns unless N covers that). The record
        states the (N, epsilon) used.
    n_changes:
        N (default 1): documents whose counts differ by at most N in total (L1) are
        epsilon-indistinguishable. Replacing one word is a change of 2; documents further
        apart get the weaker e^(epsilon * distance / N): raise N to cover more of a
        document (the noise grows with N / epsilon).
    n_groups:
        K compressed features; None (default) releases the M features uncompressed.
    grouping:
        Registry name of the grouping (``"random"``, ``"frequency"``, ``"glove-cluster"``,
        ``"glove-disperse"`` or a third-party one); ignored when ``n_groups`` is None or the
        number of features (K = M: nothing is compressed).
    grouping_params:
        Keyword arguments of the grouping (e.g. ``{"order": "histogram"}``).
    vocabulary:
        The public words of the features, as given to ``CountVectorizer(vocabulary=...)``:
        a sequence in column order or a dict word -> column index (ordered by its values);
        a set is refused (unordered: pass ``sorted(words)``, CountVectorizer's order). When X
        is a DataFrame, its column names must be these words in this order (ValueError
        otherwise, as scikit-learn refuses reordered columns). Needed by embedding-based
        groupings and weights; the feature names out follow it.
    embeddings:
        Public embeddings: None (default; enough for groupings and weights that read no
        vector or rank, e.g. ``"random"``, ``"uniform"``, a DP histogram), an
        ``EmbeddingTable`` or a registry name (e.g. ``"glove-6b-50d"``, or
        ``"keyed-vectors.v1"`` with ``embeddings_params``).
    embeddings_params, vocab_size:
        As for the word doors (``TextPrivatizer``, the spaCy component, the CLI), resolved by
        the same code (:class:`~dxp_plugins.doors.DoorSettings`) with the same checks:
        ``embeddings_params`` are the registry loader's arguments (e.g. ``{"path": ...,
        "no_header": True}``; refused with an ``EmbeddingTable``, which is already loaded),
        ``vocab_size`` keeps the most frequent words (a table needs a frequency rank). Tables
        of the same name and arguments are loaded once per process and shared with the
        doors. Both need ``embeddings``.
    weights:
        Decompression weights: ``"uniform"``, ``"zipf"`` (public frequency rank),
        ``"dp-histogram"`` or an array of public counts; never the documents' own counts.
    histogram_epsilon:
        Budget of the DP corpus histogram computed at ``fit`` (only when something uses it:
        with K = M neither grouping nor decompression does, and nothing is spent).
    calibration:
        ``"sound"`` (default) or ``"paper"`` (reproduces the paper's per-entry
        ``M epsilon / K``; the guarantee states the TRUE epsilon).
    random_state:
        None (secure randomness) or an int seed (reproducible; warns).
    privatize_at:
        ``"always"`` (default) or ``"fit"``: release in ``fit_transform`` only (what
        ``Pipeline.fit`` calls); ``transform`` then returns the counts unchanged (validated
        and in the container it would release them in), charges nothing and sets
        ``last_guarantee_`` to None, with a PrivacyWarning when the estimator was fitted by
        ``fit``, which releases nothing. For cross-validation and grid search: train on
        private counts, score on clean held-out counts.
    accountant:
        An :class:`~dxp_plugins.Accountant` charged per release (and once for a DP
        histogram). Used as given, never copied: clones (``clone``, ``GridSearchCV``,
        ``cross_val_score``) in one process charge the same ledger, so its cap holds across
        them. A process-based ``n_jobs`` worker gets a pickled copy, which refuses to
        charge when a cap is set (see :class:`~dxp_plugins.Accountant`) and without one
        records its releases in the worker only: this process's ledger does not move.
        None (default): a fresh one per ``fit``.

    Every parameter is keyword-only. ``transform`` refuses (ValueError, nothing charged)
    after ``set_params`` changed any of them since ``fit``.

    Attributes
    ----------
    release_:
        The fitted :class:`~dxp_plugins.lplp.LPLPRelease` (grouping, weights, noise
        calibration, random source and accountant) that every ``transform`` draws from.
    accountant_:
        The accountant charged: ``accountant`` when given, else the one made by ``fit``
        (the same object as ``release_.accountant``).
    groups_:
        The group (0 .. K-1) of each feature: the public partition.
    n_groups_:
        K, the number of compressed features (M when nothing is compressed).
    weights_:
        The decompression weight of each feature (public, or the DP histogram's).
    histogram_:
        The DP corpus histogram released by ``fit`` (None when nothing used one).
    calibration_:
        The :class:`~dxp_plugins.lplp.NoiseCalibration`: per-entry noise rate and the true
        (N, epsilon) it gives.
    last_guarantee_:
        The :class:`~dxp_plugins.lplp.LPLPGuarantee` of the latest ``transform`` (None
        before the first, and after a ``transform`` with ``privatize_at="fit"``: raw
        counts out, no guarantee describes them).
    n_features_in_, feature_names_in_:
        M, and the column names when ``fit`` was given a DataFrame (scikit-learn's own).
    """

    def __init__(
        self,
        *,
        epsilon: float = 1.0,
        n_changes: int = 1,
        n_groups: int | None = None,
        grouping: str = "random",
        grouping_params: dict[str, Any] | None = None,
        vocabulary: Sequence[str] | Mapping[str, int] | None = None,
        embeddings: EmbeddingTable | str | None = None,
        embeddings_params: dict[str, Any] | None = None,
        vocab_size: int | None = None,
        weights: Any = "uniform",
        histogram_epsilon: float | None = None,
        calibration: CalibrationMode = "sound",
        random_state: int | None = None,
        privatize_at: PrivatizeAt = "always",
        accountant: Accountant | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.n_changes = n_changes
        self.n_groups = n_groups
        self.grouping = grouping
        self.grouping_params = grouping_params
        self.vocabulary = vocabulary
        self.embeddings = embeddings
        self.embeddings_params = embeddings_params
        self.vocab_size = vocab_size
        self.weights = weights
        self.histogram_epsilon = histogram_epsilon
        self.calibration = calibration
        self.random_state = random_state
        self.privatize_at = privatize_at
        self.accountant = accountant

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # fresh noise on every call (PRIVACY.md 11)
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.input_tags.categorical = True  # integer counts: the checks feed rounded data
        tags.transformer_tags.preserves_dtype = []  # always int64 counts
        return tags

    # -- fitting: public structures only -------------------------------------------------
    def _vocabulary(self, n_features: int) -> tuple[str, ...] | None:
        """The words of X's columns, in column order (checked against X's column names)."""
        if self.vocabulary is None:
            return None
        words = _words_in_column_order(self.vocabulary)
        if any(not isinstance(word, str) or not word for word in words):
            raise ValueError("vocabulary must hold non-empty strings")
        if len(set(words)) != len(words):
            raise ValueError("vocabulary words must be unique")
        if len(words) != n_features:
            raise ValueError(f"vocabulary has {len(words)} words but X has {n_features} features")
        names = getattr(self, "feature_names_in_", None)
        if names is not None and tuple(names) != words:
            raise ValueError(
                "X's column names differ from vocabulary (other words or another order): "
                "reorder the columns as vocabulary or pass vocabulary=list(X.columns)"
            )
        return words

    def _embeddings(self) -> EmbeddingTable | None:
        """The public table, resolved as the word doors resolve theirs."""
        if self.embeddings is None:
            given = [
                name
                for name, value in (
                    ("embeddings_params", self.embeddings_params),
                    ("vocab_size", self.vocab_size),
                )
                if value is not None
            ]
            if given:
                raise ValueError(
                    f"{' and '.join(given)} given without embeddings: set embeddings= (a "
                    "registry name, or an EmbeddingTable for vocab_size)"
                )
            return None
        from ..doors import check_embeddings_setting
        from ..embeddings.shared import load_embeddings_setting

        # The doors' own checks (registered name, loader arguments, vocab_size) and loads.
        return load_embeddings_setting(
            *check_embeddings_setting(self.embeddings, self.embeddings_params, self.vocab_size)
        )

    def fit(self, X: Any, y: Any = None) -> LPLPTransformer:
        """Build the public grouping and decompression weights for X's features."""
        self._fit(X, releasing=False)
        return self

    def fit_transform(self, X: Any, y: Any = None, **fit_params: Any) -> Any:
        """Fit, then release X. One call, one outcome: when ``fit`` releases a DP histogram,
        its budget and the release's are charged together, as one charge, so a cap that the
        release would exceed (also with other threads charging it) refuses the call with
        nothing spent. ``fit`` takes no parameters, so any ``fit_params`` is refused."""
        check_no_fit_params(self, fit_params)
        _refuse_sparse_frames(self, X)  # before the joint charge
        private = self._transform(X, charged=self._fit(X, releasing=True), fitting=True)
        self._released_at_fit = True
        return private

    def _fit(self, X: Any, *, releasing: bool) -> NoiseCalibration | None:
        """:meth:`fit`; ``releasing``: a release of X follows (:meth:`fit_transform`).
        Returns the calibration at which that release was charged with the histogram (None:
        not charged yet)."""
        X = _validate_counts(self, X, reset=True)
        counts = check_counts(X)
        n_features = counts.shape[1]
        n_changes, n_groups = self._checked_settings(n_features)
        # Refuse bad release settings before the DP histogram spends anything.
        calibrated = lplp_calibration.calibrate(
            self.epsilon, n_changes, n_features, n_groups, self.calibration
        )
        accountant = self.accountant if self.accountant is not None else Accountant.default()
        source = RandomSource(self.random_state)  # the noise: used only by release_
        table = self._embeddings()
        histogram = _HistogramOnce(
            counts,
            self.histogram_epsilon,
            n_changes,
            source.independent(_HISTOGRAM_STREAM),
            accountant,
            # fit_transform: the histogram and the release in one charge, or neither
            release=calibrated if releasing and counts.shape[0] else None,
        )
        context = GroupingContext(
            n_features=n_features,
            n_groups=n_groups,
            rng=source.independent(_GROUPING_STREAM),
            words=self._vocabulary(n_features),
            embeddings=table,
            histogram=histogram,
        )
        _warn_multiword_features(context.words, n_changes)
        # Nothing spends before every setting is checked: weights that need no histogram
        # first (a bad array is refused before a grouping can release the histogram), then
        # the grouping (an unknown name, parameter or missing vocabulary fails before it
        # spends), histogram weights last.
        histogram_weights = (
            isinstance(self.weights, str)
            and self.weights == "dp-histogram"
            and n_groups < n_features
        )
        if not histogram_weights:
            weights, weights_source = public_weights(self.weights, context)
            if not isinstance(self.weights, str):
                _warn_own_totals(weights, counts)
        if n_groups == n_features:  # nothing to compress: no grouping (nor histogram) needed
            groups, grouping = identity_grouping(context), "none"
        else:
            groups = make_groups(self.grouping, context, **(self.grouping_params or {}))
            grouping = self.grouping
        if histogram_weights:
            weights, weights_source = public_weights(self.weights, context)
        self.release_ = LPLPRelease(
            groups,
            epsilon=self.epsilon,
            n_changes=n_changes,
            weights=weights,
            calibration=self.calibration,
            grouping=grouping,
            weights_source=weights_source,
            histogram_epsilon=self.histogram_epsilon if histogram.counts is not None else None,
            embeddings=table.fingerprint if table is not None else "",
            random_state=source,
            accountant=accountant,
        )
        self.groups_ = self.release_.groups
        self.n_groups_ = self.release_.n_groups
        self.weights_ = weights
        self.histogram_ = histogram.counts
        self.calibration_ = calibrated
        self.accountant_ = accountant
        self._released_at_fit = False  # set by fit_transform once it released
        # Containers and arrays copied at every depth: an in-place edit after fit
        # (weights[:] = ..., embeddings_params["path"] = ..., an array in grouping_params)
        # is a change too.
        self._fitted_params = snapshot(self.get_params(deep=False))
        return histogram.charged_release

    def _checked_settings(self, n_features: int) -> tuple[int, int]:
        """``(n_changes, n_groups)`` checked, and every other setting ``fit`` reads before
        anything spends; warns when no public vocabulary names the columns."""
        if self.vocabulary is None:
            warn(
                "LPLPTransformer without a vocabulary: its guarantee holds only if the count "
                "columns are public (a fixed word list, not one CountVectorizer learned from "
                "the private texts, whose names would be released noiselessly); pass that "
                "public list as vocabulary= to say so",
                PrivacyWarning,
            )
        n_changes = check_int(self.n_changes, "n_changes", minimum=1)
        if self.n_groups is None:
            n_groups = n_features
        else:
            n_groups = check_int(self.n_groups, "n_groups", minimum=1)
            if n_groups > n_features:
                raise ValueError(
                    f"n_groups ({n_groups}) exceeds the features: n_features = {n_features}"
                )
        if self.grouping_params is not None and not isinstance(self.grouping_params, dict):
            raise TypeError("grouping_params must be a dict or None")
        if self.histogram_epsilon is not None:  # checked even when K = M leaves it unused
            check_epsilon(self.histogram_epsilon, "histogram_epsilon")
        check_privatize_at(self.privatize_at)
        return n_changes, n_groups

    def _check_params_unchanged(self) -> None:
        """ValueError when a setting was changed (``set_params``) after ``fit``: the fitted
        release would otherwise draw and charge with the old settings (an accountant set
        after fit was never charged; a smaller epsilon was silently not applied)."""
        fitted = getattr(self, "_fitted_params", None)
        if fitted is None:  # a pickle of an early build: its settings cannot be compared
            raise ValueError(
                "this LPLPTransformer was fitted by an earlier build of dxp_plugins that did "
                "not record its settings: call fit again before transform"
            )
        changed = [
            name
            for name, value in self.get_params(deep=False).items()
            if not _same_param(value, fitted.get(name, _ABSENT))
        ]
        if changed:
            raise ValueError(
                f"{', '.join(changed)} changed since fit: call fit again before transform "
                "(the fitted release still uses the old settings)"
            )

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Pickles of earlier versions lack the parameters added since: they get the value
        those fits used (:data:`_ADDED_PARAMS`)."""
        for name, value in _ADDED_PARAMS.items():
            state.setdefault(name, value)
            fitted = state.get("_fitted_params")
            if fitted is not None:
                fitted.setdefault(name, value)
        super().__setstate__(state)

    # -- releasing --------------------------------------------------------------------------
    def transform(self, X: Any) -> sp.csr_matrix | sp.csr_array | np.ndarray:
        """Private counts of each row of X (int64, same features; CSR for sparse input, a
        ``csr_array`` for a sparse array, an array for dense input, as scikit-learn's
        transformers keep the container); fresh noise per call. With
        ``privatize_at="fit"``: X's counts unchanged, in that container, charging nothing."""
        _refuse_sparse_frames(self, X)
        return self._transform(X, charged=None, fitting=False)

    def _transform(
        self, X: Any, charged: NoiseCalibration | None, *, fitting: bool
    ) -> sp.csr_matrix | sp.csr_array | np.ndarray:
        """:meth:`transform`; ``charged``: the release was charged already, at it;
        ``fitting``: called by :meth:`fit_transform`, which releases whatever
        ``privatize_at`` says."""
        check_is_fitted(self, "release_")
        self._check_params_unchanged()  # privatize_at too: it is the fitted one below
        X = _validate_counts(self, X, reset=False)
        if not fitting and self.privatize_at == "fit":
            warn_if_fitted_without_release(self, "counts")
            counts = check_counts(X, self.release_.n_features)  # the release's own checks
            self.release_.last_guarantee = None  # raw counts out: no guarantee describes them
            return _in_container_of(X, counts)
        if charged is None:
            private, _ = self.release_.release(X)
        else:
            private, _ = self.release_.release(X, charged=charged)
        return _in_container_of(X, private)

    @property
    def last_guarantee_(self) -> LPLPGuarantee | None:
        """The record of the latest ``transform`` (None before the first)."""
        check_is_fitted(self, "release_")
        return self.release_.last_guarantee

    def guarantee(self, documents: int) -> LPLPGuarantee:
        """What releasing ``documents`` rows with the fitted settings guarantees."""
        check_is_fitted(self, "release_")
        self._check_params_unchanged()
        return self.release_.guarantee(documents)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The same features as the input (the vocabulary's words in column order when
        given)."""
        check_is_fitted(self, "n_features_in_")
        if self.vocabulary is None:
            names: np.ndarray = _check_feature_names_in(self, input_features)
            return names
        words = np.asarray(self._vocabulary(self.n_features_in_), dtype=object)
        if input_features is not None and list(input_features) != list(words):
            raise ValueError("input_features differ from the vocabulary")
        return words


def _warn_multiword_features(words: tuple[str, ...] | None, n_changes: int) -> None:
    """PrivacyWarning for vocabulary entries of several words (n-grams, phrases): one word
    occurrence then moves several counts (up to n^2 for n-grams of lengths 1..n), so N = 1
    does not protect one occurrence (bigrams measured at 4 epsilon)."""
    if not words:
        return
    moved = max(len(word.split()) for word in words) ** 2
    if moved > n_changes:
        warn(
            f"vocabulary holds features of several words (n-grams or phrases): one word "
            f"occurrence changes up to {moved} counts, so with n_changes={n_changes} it is "
            f"protected only at e^({moved}*epsilon/{n_changes}), not the record's "
            f"e^(epsilon/{n_changes}); set n_changes={moved} to cover one occurrence",
            PrivacyWarning,
        )


def _warn_own_totals(weights: np.ndarray, counts: sp.csr_matrix) -> None:
    """PrivacyWarning for public weights equal (or proportional) to the fitted corpus's own
    column totals: the paper decompresses with corpus frequencies, so a replication passes
    ``X.sum(0)``, which the record would call public (PRIVACY.md 9)."""
    totals = np.asarray(counts.sum(axis=0), dtype=np.float64).ravel()
    if np.ptp(weights) == 0 or np.unique(totals).size < 3:
        return  # uniform weights are public by construction; a balanced corpus says nothing
    if np.allclose(weights * totals.sum(), totals * weights.sum()):
        warn(
            "weights are proportional to the column totals of the counts being fitted: "
            "decompression weights from the private corpus itself are not public (the "
            "record would say they are); use weights='dp-histogram' (with "
            "histogram_epsilon) or counts from a public corpus",
            PrivacyWarning,
        )


def _same_param(value: Any, fitted: Any) -> bool:
    """The same setting: the same object, or equal numbers (1 == 1.0 == numpy.float64(1)),
    strings, arrays or containers; any other object (a table, an accountant) by identity."""
    if value is fitted:
        return True
    if isinstance(value, np.ndarray) or isinstance(fitted, np.ndarray):
        return bool(np.array_equal(np.asarray(value), np.asarray(fitted)))
    if isinstance(value, numbers.Number) and isinstance(fitted, numbers.Number):
        return bool(value == fitted) and isinstance(value, bool) == isinstance(fitted, bool)
    if isinstance(value, str) and isinstance(fitted, str):
        return str(value) == str(fitted)
    if isinstance(value, (list, tuple, dict)) and type(value) is type(fitted):
        try:
            return bool(value == fitted)
        except (TypeError, ValueError):  # an array inside: compare item by item
            if isinstance(value, dict) and isinstance(fitted, dict):
                return value.keys() == fitted.keys() and all(
                    _same_param(value[key], fitted[key]) for key in value
                )
            return len(value) == len(fitted) and all(
                _same_param(a, b) for a, b in zip(value, fitted, strict=True)
            )
    return False


def _refuse_sparse_frames(estimator: LPLPTransformer, X: Any) -> None:
    """Refuse, before any charge, a sparse release that scikit-learn's pandas/polars output
    wrapper would reject only after it was charged and drawn (every retry paying again)."""
    try:
        from sklearn.utils._set_output import _get_output_config
    except ImportError:  # pragma: no cover - a scikit-learn without the wrapper
        return
    container = _get_output_config("transform", estimator)["dense"]
    if sp.issparse(X) and container != "default":
        raise ValueError(
            f"transform output is set to {container!r}, which cannot hold the sparse counts "
            f"this release returns for sparse input: pass dense counts (X.toarray()) or "
            f"set_output(transform='default'); nothing was charged"
        )


def _in_container_of(X: Any, counts: sp.csr_matrix) -> sp.csr_matrix | sp.csr_array | np.ndarray:
    """CSR int64 ``counts`` in X's kind of container, as scikit-learn's transformers keep it:
    a ``csr_array`` for a sparse array, a ``csr_matrix`` for a sparse matrix, else an array."""
    if isinstance(X, sp.sparray):
        return sp.csr_array(counts)
    if sp.issparse(X):
        return counts
    dense: np.ndarray = counts.toarray()
    return dense


def _words_in_column_order(vocabulary: Any) -> tuple[Any, ...]:
    """A vocabulary's words by column: a sequence as it is, a dict by its column indices."""
    if isinstance(vocabulary, str):
        raise TypeError("vocabulary must be a sequence of words, not one string")
    if isinstance(vocabulary, Set):
        raise ValueError(
            "vocabulary is an unordered set: pass a list in column order, e.g. sorted(words) "
            "(CountVectorizer's order for a set), or a dict word -> column index"
        )
    if not isinstance(vocabulary, Mapping):
        return tuple(vocabulary)
    indices = list(vocabulary.values())
    integral = all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in indices)
    if not integral or sorted(indices) != list(range(len(indices))):
        raise ValueError("a vocabulary dict must map its words to the columns 0, 1, ..., M - 1")
    return tuple(sorted(vocabulary, key=vocabulary.__getitem__))


def _validate_counts(estimator: LPLPTransformer, X: Any, *, reset: bool) -> Any:
    """scikit-learn's ``validate_data``, with messages that never quote the counts: its
    errors print the array (``array=[0 3 0 7]``) or a value that failed to convert."""
    if _holds_texts(X):
        raise TypeError(
            "LPLPTransformer takes bag-of-words counts, not texts: put "
            "CountVectorizer(vocabulary=PUBLIC_WORDS) before it"
        )
    try:
        # fit needs documents; a transform of none releases none (PRIVACY.md 22)
        return validate_data(
            estimator,
            X,
            accept_sparse=_SPARSE,
            dtype="numeric",
            reset=reset,
            ensure_min_samples=1 if reset else 0,
        )
    except (ValueError, TypeError) as error:
        raise type(error)(_without_data(str(error)) or "X is not a valid count matrix") from None


def _holds_texts(X: Any) -> bool:
    """Whether X is a text or a 1-D sequence/array of texts (a common first mistake)."""
    if isinstance(X, str | bytes):
        return True
    if isinstance(X, list | tuple):
        return bool(X) and isinstance(X[0], str | bytes)
    if isinstance(X, np.ndarray) and X.ndim == 1 and X.size:
        return isinstance(X.flat[0], str | bytes)
    return False


def _without_data(message: str) -> str:
    """``message`` without printed arrays (any bracketed text, however it wraps), without
    the lines holding no word (a sparse matrix prints as ``(row, col) value`` lines, without
    brackets), and cut at its first quote (a value that did not convert, which a repr may
    escape in ways no pattern of quotes follows), on one line."""
    previous = None
    while previous != message:  # innermost brackets first: nested and multi-line arrays
        previous, message = message, re.sub(r"\[[^\[\]]*\]", "", message)
    message = re.sub(r"array=\.?", "", message)
    message = "\n".join(
        line
        for line in message.splitlines()
        if re.search(r"[A-Za-z]{3}", line) and not re.match(r"\s*\(\d", line)
    )
    quote = re.search(r"['\"]", message)
    if quote:
        head = re.sub(r"\b(?:dtype=|b)$", "", message[: quote.start()]).rstrip(" :=")
        message = f"{head}: (the value is withheld)" if head else ""
    return " ".join(message.split()).rstrip(" :")
