"""TextPrivatizer: a scikit-learn transformer from texts to private texts.

The first step of a text Pipeline, before ``CountVectorizer``/``TfidfVectorizer``::

    Pipeline([("private", TextPrivatizer(epsilon=10, vocab_size=20_000)),
              ("tfidf", TfidfVectorizer()), ("clf", LogisticRegression())])

It takes the settings of the spaCy component (:mod:`dxp_plugins.doors`) and privatizes
through the same text path (:func:`dxp_plugins.text.privatize_texts`), so the doors agree.
``fit`` learns nothing from the data: it builds the mechanism from the public embeddings.

``privatize_at="fit"`` privatizes only in ``fit_transform`` (what ``Pipeline.fit`` calls) and
passes text through ``transform`` unchanged: a model trained on private text and evaluated on
clean text (the "training time" setting of Feyisetan et al., WSDM 2020, Section 5). Such a
``transform`` releases raw text under no guarantee, so it sets ``last_guarantee_`` to None.

Randomness follows PRIVACY.md 16-19: ``random_state=None`` (default) draws secure noise;
an int opts in to seeded, reproducible noise (warns; guarantees say ``"seeded"``). Pickles
hold the settings and the spend so far, never a generator or its state; the mechanism is
rebuilt on first use and must find the same embeddings (fingerprint).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, _get_feature_names, check_is_fitted

from .._random import FreshTaskToken, RandomSource
from .._validation import check_int, check_no_fit_params, check_text
from ..doors import DEFAULT_BATCH_SIZE, DoorSettings
from ..embeddings.table import EmbeddingTable
from ..guarantee import Accountant, Guarantee, OOVPolicy
from ..mechanisms.base import Mechanism
from ..text import privatize_all
from ._params import snapshot
from ._privatize_at import PrivatizeAt, check_privatize_at, warn_if_fitted_without_release
from ._seeding import RefusesEnsembleSeeds


@dataclass(frozen=True)
class FitSettings:
    """What ``fit`` records (``settings_``) and ``transform`` compares: every parameter that
    decides a release. ``batch_size`` only groups texts into mechanism calls (the guarantee
    and the accounting do not depend on it) and may change after ``fit``."""

    door: DoorSettings
    privatize_at: str
    spacy_model: str | None
    accountant: Accountant | None  # compared by identity: an Accountant is a ledger


class TextPrivatizer(  # type: ignore[call-arg]
    FreshTaskToken,
    RefusesEnsembleSeeds,
    TransformerMixin,
    BaseEstimator,
    auto_wrap_output_keys=None,
):
    """Replace the words of each text by private words (iterable of str -> list of str).

    Parameters
    ----------
    mechanism, epsilon, mechanism_params, embeddings, embeddings_params, vocab_size, oov,
    pos, entities, token_filter:
        As for the spaCy component (see :mod:`dxp_plugins.doors`). ``epsilon`` is required.
        ``embeddings`` may also be an :class:`~dxp_plugins.EmbeddingTable`.
    mask:
        None (default) or the name of a registered mask (:mod:`dxp_plugins.masks`, e.g.
        ``"identifiers"``): what it finds becomes ``[...]`` before privatizing; what it hides
        is never released.
    spacy_model:
        Name of an installed spaCy pipeline used to tag the texts; needed for selection by
        ``pos`` or ``entities``. None (default): the public tokenizer of every door.
    random_state:
        None (secure, default) or an int seed (reproducible; not for private releases).
    privatize_at:
        ``"always"`` (default) or ``"fit"``: privatize in ``fit_transform`` only; ``transform``
        then returns the texts unchanged and sets ``last_guarantee_`` to None (with a
        PrivacyWarning when the estimator was fitted by ``fit``, which privatizes nothing:
        ``fit(X).transform(X)`` is not ``fit_transform(X)`` here).
    batch_size:
        Texts per mechanism call (default 1000, as spaCy's ``nlp.pipe``: one seed then
        gives the same words through every door; the seeded draws of every mechanism depend
        on the batch); a batch also closes at 4 Mi characters, whichever comes first.
        The one parameter that may change between ``fit`` and ``transform``: any other
        change makes ``transform`` refuse until the next ``fit``.
    accountant:
        An :class:`~dxp_plugins.Accountant` that every release charges (its cap refuses a
        release before any noise is drawn), kept across fits and shared by clones in one
        process; None (default): a fresh one per ``fit``. A pickled copy (a process-based
        ``n_jobs`` worker, a loaded model) refuses to charge when a cap is set, and without
        one records its releases in that copy only (this process's ledger does not move).

    The output is always a list of str: ``set_output`` (which ``Pipeline.set_output`` calls
    on every step) is accepted and leaves it so.

    Attributes
    ----------
    mechanism_:
        The mechanism (rebuilt lazily after unpickling).
    accountant_:
        The accountant charged: ``accountant`` when given, else the one made by ``fit``.
    last_guarantee_:
        The guarantee of the texts returned by the last call (a
        :class:`~dxp_plugins.Guarantee`; ``.to_dict()`` for JSON); None before any, and
        None after a ``transform`` with ``privatize_at="fit"`` (it privatized nothing).
    embeddings_fingerprint_:
        SHA-256 fingerprint of the public embeddings.
    n_features_in_, feature_names_in_:
        1 after a fit on a one-column table (2-D input), and that column's name when it is a
        string (a DataFrame's); neither after a fit on a 1-D iterable of texts.
    """

    def __init__(
        self,
        *,
        mechanism: str = "madlib",
        epsilon: float | None = None,
        mechanism_params: dict[str, Any] | None = None,
        embeddings: str | EmbeddingTable = "glove-6b-50d",
        embeddings_params: dict[str, Any] | None = None,
        vocab_size: int | None = None,
        oov: OOVPolicy = "unk",
        pos: str | Sequence[str] | None = None,
        entities: str | Sequence[str] | None = None,
        token_filter: str | None = None,
        mask: str | None = None,
        spacy_model: str | None = None,
        random_state: int | None = None,
        privatize_at: PrivatizeAt = "always",
        batch_size: int = DEFAULT_BATCH_SIZE,
        accountant: Accountant | None = None,
    ) -> None:
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.mechanism_params = mechanism_params
        self.embeddings = embeddings
        self.embeddings_params = embeddings_params
        self.vocab_size = vocab_size
        self.oov = oov
        self.pos = pos
        self.entities = entities
        self.token_filter = token_filter
        self.mask = mask
        self.spacy_model = spacy_model
        self.random_state = random_state
        self.privatize_at = privatize_at
        self.batch_size = batch_size
        self.accountant = accountant

    # -- scikit-learn API -------------------------------------------------------------------
    def fit(self, X: Iterable[str] | None, y: Any = None) -> TextPrivatizer:
        """Check the settings and build the mechanism (nothing is learned from ``X``, which
        may be None, as for scikit-learn's stateless ``HashingVectorizer``).

        A fit that fails leaves the transformer unfitted: a failed re-fit that kept the
        previous mechanism would have ``transform`` use it under the new settings (releasing
        at the old epsilon, charging the old ledger past a new one's cap)."""
        for attribute in _FITTED:
            self.__dict__.pop(attribute, None)
        if X is not None:
            _documents(X)  # a one-column table (2-D) is one feature, named as sklearn names it
        shape = getattr(X, "shape", None)
        names = None if X is None else _get_feature_names(X)
        for attribute, value in (
            ("n_features_in_", 1 if shape is not None and len(shape) == 2 else None),
            ("feature_names_in_", names),
        ):
            if value is None:
                self.__dict__.pop(attribute, None)
            else:
                setattr(self, attribute, value)
        fitted = self._fit_settings()
        fitted.door.tagging_pipeline(fitted.spacy_model)  # loads it; refuses bad pipelines
        params = snapshot(self._raw_params())
        random_source = RandomSource(fitted.door.seed)
        accountant = Accountant.default() if self.accountant is None else self.accountant
        mechanism = fitted.door.build_mechanism(random_source, accountant)
        # Every fitted attribute at once, after everything that can fail (see _FITTED).
        self.settings_ = fitted
        self._fitted_params = params
        self.random_source_ = random_source
        self.accountant_ = accountant
        self.mechanism_ = mechanism
        self.embeddings_fingerprint_ = mechanism.embeddings.fingerprint
        self.last_guarantee_: Guarantee | None = None
        self._released_at_fit = False  # set by fit_transform
        return self

    def transform(self, X: Iterable[str]) -> list[str]:
        """Private texts (with ``privatize_at="fit"``: the texts unchanged)."""
        check_is_fitted(self, "settings_")
        given = _get_feature_names(X)
        X = _documents(X)  # one text column first
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and given is not None and list(given) != list(fitted):
            # scikit-learn's rule: another column than the fitted one is a mistake, refused.
            raise ValueError(
                f"The feature names should match those that were passed during fit: fitted "
                f"on {list(fitted)!r}, given {list(given)!r}"
            )
        # The full check resolves the registries (every entry point and registration) and
        # inspects signatures: ~0.9 ms, most of a one-text transform. Parameters identical to
        # those fit checked (same values; the same objects for tables and accountants) give
        # the same settings, so only a changed parameter is checked again.
        unchanged = _same(self._raw_params(), getattr(self, "_fitted_params", _MISSING))
        if not unchanged and self._fit_settings() != self.settings_:
            raise ValueError("parameters changed since fit; call fit again")
        if self.settings_.privatize_at == "fit":
            warn_if_fitted_without_release(self, "texts")
            texts = [check_text(text, f"text {i}") for i, text in enumerate(X)]
            self.last_guarantee_ = None  # raw text out: no guarantee describes it
            return texts
        return self._privatize(X)

    def fit_transform(self, X: Iterable[str], y: Any = None, **fit_params: Any) -> list[str]:
        """Fit, then privatize ``X`` (whatever ``privatize_at`` says). ``fit`` takes no
        parameters, so any ``fit_params`` is refused, as scikit-learn's own steps do."""
        check_no_fit_params(self, fit_params)
        documents = _documents(X)  # once: X may be a generator
        # An array or table is read again by fit (its shape and column name), an iterator not.
        self.fit(X if hasattr(X, "shape") else documents, y)
        private = self._privatize(documents)
        self._released_at_fit = True
        return private

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """One text column in, the same column out (names pass through, so ``Pipeline``
        and ``ColumnTransformer`` can name the features of the vectorizer after it).

        ``input_features`` must name one column and, after a fit on a named column, be that
        name (sklearn's rule); without either name the column is called ``"text"``."""
        check_is_fitted(self, "settings_")
        if input_features is not None:
            size = np.asarray(input_features, dtype=object).size
            if size != 1:
                raise ValueError(f"input_features must name the one text column, got {size}")
        elif getattr(self, "feature_names_in_", None) is None:
            return np.asarray(["text"], dtype=object)
        names: np.ndarray = _check_feature_names_in(self, input_features)
        return names

    def set_output(self, *, transform: str | None = None) -> TextPrivatizer:
        """Accept ``Pipeline.set_output``: text output stays a list of str whatever the
        container asked for (the next step, e.g. a vectorizer, reads it as usual)."""
        if transform not in (None, "default", "pandas", "polars"):
            raise ValueError(
                "transform must be 'default', 'pandas', 'polars' or None, got " + repr(transform)
            )
        return self

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # fresh noise on every call
        tags.input_tags.two_d_array = False
        tags.input_tags.one_d_array = True
        tags.input_tags.string = True
        tags.transformer_tags.preserves_dtype = []
        return tags

    # -- internals -------------------------------------------------------------------------------
    def _raw_params(self) -> dict[str, Any]:
        """The constructor parameters as set now (``get_params(deep=False)`` without its
        signature inspection)."""
        return {name: getattr(self, name) for name in _param_names(type(self))}

    def _fit_settings(self) -> FitSettings:
        """The parameters that decide a release, checked (see :class:`FitSettings`)."""
        privatize_at = check_privatize_at(self.privatize_at)
        check_int(self.batch_size, "batch_size", minimum=1)
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            kind = type(self.accountant).__name__
            raise TypeError(f"accountant must be a dxp_plugins.Accountant or None, got {kind}")
        door = DoorSettings.create(
            epsilon=self.epsilon,
            mechanism=self.mechanism,
            mechanism_params=self.mechanism_params,
            embeddings=self.embeddings,
            embeddings_params=self.embeddings_params,
            vocab_size=self.vocab_size,
            oov=self.oov,
            pos=self.pos,
            entities=self.entities,
            token_filter=self.token_filter,
            seed=self.random_state,
            mask=self.mask,
            names={"seed": "random_state"},
        )
        door.check_tagger(self.spacy_model)
        return FitSettings(door, privatize_at, self.spacy_model, self.accountant)

    def _get_mechanism(self) -> Mechanism:
        mechanism = self.__dict__.get("mechanism_")
        if mechanism is None:  # unpickled: rebuild from the settings, same randomness policy
            mechanism = self.settings_.door.build_mechanism(self.random_source_, self.accountant_)
            if mechanism.embeddings.fingerprint != self.embeddings_fingerprint_:
                raise ValueError(
                    "the embeddings differ from those this TextPrivatizer was fit with"
                )
            self.mechanism_ = mechanism
        return mechanism

    def _privatize(self, X: Iterable[str]) -> list[str]:
        """One call, one outcome (``privatize_all``): what would refuse a later batch (the
        accountant's cap, an OOV token under ``oov="raise"``, a text too long for the
        tagger) refuses the call before any noise, since the outputs of the earlier
        batches would be discarded anyway."""
        results = privatize_all(
            X,
            self._get_mechanism(),
            batch_size=self.batch_size,
            select=self.settings_.door.selector(),
            nlp=self.settings_.door.tagging_pipeline(self.settings_.spacy_model),
            mask=self.settings_.door.mask,
        )
        record = Guarantee.combine(result.guarantee for result in results)
        self.last_guarantee_ = record or self.settings_.door.nothing_released(self.mechanism_)
        return [result.text for result in results]

    def __getstate__(self) -> dict[str, Any]:
        state: dict[str, Any] = dict(super().__getstate__())  # a copy: never the live __dict__
        state.pop("mechanism_", None)  # carries the table; rebuilt on first use
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        settings = state.get("settings_")
        if isinstance(settings, DoorSettings):  # pickled by a version that recorded only these
            state = dict(state)
            state["settings_"] = FitSettings(
                settings, state["privatize_at"], state["spacy_model"], state["accountant"]
            )
        super().__setstate__(state)


#: What ``fit`` sets besides the input's feature names; dropped when a fit starts.
_FITTED = (
    "settings_",
    "_fitted_params",
    "random_source_",
    "accountant_",
    "mechanism_",
    "embeddings_fingerprint_",
    "last_guarantee_",
    "_released_at_fit",
)
_MISSING = object()
_PLAIN = (str, int, float, bool, type(None), PurePath)


_PARAM_NAMES: dict[type, tuple[str, ...]] = {}


def _param_names(kind: type[BaseEstimator]) -> tuple[str, ...]:
    """``kind``'s constructor parameters, read from its signature once per class."""
    names = _PARAM_NAMES.get(kind)
    if names is None:
        names = _PARAM_NAMES[kind] = tuple(kind._get_param_names())
    return names


def _same(now: Any, then: Any) -> bool:
    """Whether ``now`` is certainly the parameter value ``then`` was: the same type, equal
    immutable values, containers item by item, a table, ledger or function the very same
    object. False whenever in doubt (any other object: it may have changed in place), and
    the caller runs the full check."""
    if type(now) is not type(then):
        return False
    if isinstance(now, dict):
        return now.keys() == then.keys() and all(_same(now[key], then[key]) for key in now)
    if isinstance(now, list | tuple):
        return len(now) == len(then) and all(map(_same, now, then))
    if isinstance(now, set | frozenset):
        return all(isinstance(item, _PLAIN) for item in now) and bool(now == then)
    if isinstance(now, _PLAIN):
        return bool(now == then)
    if isinstance(now, EmbeddingTable | Accountant) or inspect.isfunction(now):
        return now is then  # tables are read-only; a ledger's spend is not a setting
    return False


def _documents(X: Any) -> Iterable[Any]:
    """``X`` as a 1-D iterable of texts; a one-column 2-D input (what ``ColumnTransformer``
    passes for ``["text"]``, a one-column DataFrame) gives its column. Iterating a wider
    table would privatize its column names, one "text" per column."""
    if isinstance(X, str | bytes):
        raise TypeError("X must be an iterable of texts, not a single str (wrap it: [text])")
    if isinstance(X, Mapping | AbstractSet):  # a dict iterates its keys; a set, no order
        raise TypeError(
            f"X must be a sequence of texts, not a {type(X).__name__} (a dict would give its "
            "keys, a set or a keys view its texts in no fixed order): give a list of the "
            "texts in the order the labels follow"
        )
    if sp.issparse(X):
        raise TypeError(
            "X is a sparse matrix: TextPrivatizer takes texts (LPLPTransformer takes counts)"
        )
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 2:
        if len(shape) > 2 or shape[1] != 1:
            raise ValueError(
                f"X must hold one text per row: got shape {tuple(shape)}; select the text "
                f"column (e.g. df['text'])"
            )
        column: np.ndarray = np.asarray(X, dtype=object)[:, 0]
        return column
    if not isinstance(X, Iterable):
        raise TypeError(f"X must be an iterable of str, got {type(X).__name__}")
    return X
