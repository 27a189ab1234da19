"""The ``dxp_privatizer`` component: a thin shell over :mod:`dxp_plugins.text` and a mechanism.

Per batch of docs (``__call__`` is a batch of one, ``pipe`` batches ``batch_size`` docs) the
selected tokens of all docs go through one mechanism call, so the nearest-neighbour search
is shared (:func:`dxp_plugins.text.privatize_tokenized`, the core every door uses).

Randomness (PRIVACY.md 16-19): the component owns one
:class:`~dxp_plugins._random.RandomSource`, created where the component is configured, and
lends it to the lazily built mechanism. Worker processes of ``nlp.pipe(n_process=2)``
(forked or unpickled) therefore re-key: secure sources draw a fresh OS key, seeded sources a
stream derived from (seed, pid, n), so no two workers replay one noise stream.

Serialization stores configuration only (and the fingerprint of the embeddings, loading
them if need be, to refuse different embeddings later): never noise, generator state or input text.
With a saved fingerprint, a file location among the embeddings' loader arguments (``path``) may
differ on load: the fingerprint, checked on first use, proves the moved file holds the same table.
The component keeps no reference to ``nlp.vocab``, whose StringStore collects every raw word
processed, so its pickles carry none (``nlp.to_bytes()`` does: see docs/front-doors.md).

Threads may share a component: one lock builds the mechanism once and hands it the
component's current accountant. Assigning an accountant waits for a build in progress (with
large embeddings that takes a while); every release that starts after the assignment returns
charges it (a Doc already past the build may charge the previous one): assign a capped
accountant before the first Doc. Code run by the build (embedding loaders, mechanism
plugins) must not use this component. Each batch reads all it needs from its Docs (token
texts, whitespace, selection) before the mechanism charges the accountant, so a Doc whose
strings are gone (freed by another thread's ``nlp.memory_zone()``) fails before any spend.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import srsly
from spacy import util
from spacy.tokens import Doc, Token

from .._locks import fork_safe_lock
from .._normalize import is_invisible
from .._random import FreshTaskToken, RandomSource
from .._tokenization import (
    TokenizedText,
    detokenize,
    mask_tokens,
    private_spaces,
    vocabulary_test,
)
from .._validation import check_choice
from ..doors import DEFAULT_BATCH_SIZE, DoorSettings
from ..errors import DxpWarning, OOVError, SeededRandomnessWarning, warn
from ..guarantee import Accountant
from ..text import batch_is_full, privatize_tokenized
from . import DEFAULT_CONFIG

if TYPE_CHECKING:
    from spacy.language import Language

    from ..mechanisms.base import Mechanism

MODES = ("annotate", "replace")
_OUTPUT_KEYS = ("mode", "token_attr", "doc_attr", "guarantee_attr")
_FORMAT = 1
#: Loader arguments that only say where the embeddings file is: a saved pipeline may load
#: with another value when it saved the embeddings fingerprint (checked on first use). So
#: may any other argument whose saved and new values are both str and whose new value
#: names an existing file or folder (a plugin's ``data_dir``).
_FILE_LOCATION_PARAMS = ("path",)


class Privatizer(FreshTaskToken):
    """Privatize the words of each Doc (see :mod:`dxp_plugins.pipeline` for the config).

    ``accountant`` sums the spend of the releases made in this process (PRIVACY.md 13). With
    ``nlp.pipe(n_process=2)`` the releases happen in worker processes, each on its own copy:
    the parent's accountant does not move, while every ``doc._.dxp_guarantee`` is right. The
    total is then the sum of the docs' guarantees::

        total = Guarantee.combine(Guarantee.from_dict(doc._.dxp_guarantee) for doc in docs)
    """

    def __init__(self, nlp: Language, name: str = "dxp_privatizer", **config: Any) -> None:
        self.name = name
        # Not even a reference to nlp.vocab: its StringStore holds every raw word processed.
        # A weak one to nlp (never pickled) to see the components placed after this one.
        self._nlp: weakref.ref[Language] | None = weakref.ref(nlp)
        self._host_checked = False  # Docs seen from the pipeline that built it (_check_host)
        self._accountant = Accountant.default()
        # Guards building and storing the mechanism and passing it a new accountant.
        self._lock = fork_safe_lock(self)
        self._mechanism: Mechanism | None = None
        self._built_settings: dict[str, Any] | None = None  # the mechanism's, when built
        self._fingerprint: str | None = None
        self._configure(config)
        self.settings.check_entities(nlp)  # the entity types this pipeline can assign
        self._check_attributes_free(nlp)
        if nlp.lang != "en":
            # The host pipeline's tokens are privatized, but the punctuation allow-list and
            # the spacing of private words (_tokenization.private_spaces) are English rules.
            warn(
                f"dxp_privatizer in a {nlp.lang!r} pipeline: it privatizes that pipeline's "
                f"tokens, but its punctuation allow-list and spacing rules are English, so "
                f"the private text may be spaced oddly and differ from the other doors'",
                DxpWarning,
            )

    # -- configuration -----------------------------------------------------------------------
    def _check_attributes_free(self, nlp: Language) -> None:
        """Refuse attribute names another privatizer of ``nlp`` writes: the second would
        refuse every Doc the first released (a Doc holds one release per attribute)."""
        for name, other in nlp.pipeline:
            if isinstance(other, Privatizer) and other is not self:
                taken = sorted(self._written() & other._written())
                if taken:
                    raise ValueError(
                        f"{name!r} already writes "
                        f"{', '.join(f'{kind}._.{attr}' for kind, attr in taken)}: give this "
                        f"privatizer other token_attr, doc_attr and guarantee_attr"
                    )

    def _written(self) -> set[tuple[str, str]]:
        """The extension attributes this component writes, as ``(owner, name)``."""
        return {("token", self.token_attr), ("doc", self.doc_attr), ("doc", self.guarantee_attr)}

    def _configure(self, config: dict[str, Any]) -> None:
        values = {**DEFAULT_CONFIG, **config}
        unknown = sorted(set(values) - set(DEFAULT_CONFIG) - {"epsilon"})
        if unknown:
            raise ValueError(f"unknown dxp_privatizer setting(s): {', '.join(unknown)}")
        output = {key: values.pop(key) for key in _OUTPUT_KEYS}
        mode = check_choice(output["mode"], "mode", MODES)
        for key in ("token_attr", "doc_attr", "guarantee_attr"):
            if not isinstance(output[key], str) or not output[key].isidentifier():
                raise ValueError(f"{key} must be a Python identifier, got {output[key]!r}")
        if output["doc_attr"] == output["guarantee_attr"]:
            raise ValueError("doc_attr and guarantee_attr must differ")
        # Config keys are the settings' own names; the accountant is an attribute here.
        settings = DoorSettings.create(
            **values, names={"accountant": "the component's accountant attribute"}
        )
        _install_extension(Token, output["token_attr"])
        _install_extension(Doc, output["doc_attr"])
        _install_extension(Doc, output["guarantee_attr"])
        self.settings = settings
        self.mode: str = mode
        self.token_attr: str = output["token_attr"]
        self.doc_attr: str = output["doc_attr"]
        self.guarantee_attr: str = output["guarantee_attr"]
        self._select: Callable[[Doc], list[bool] | None] | None = settings.selector()
        self._select_resolved = True
        self._mask = settings.masker()
        self._random = RandomSource(settings.seed)
        self._mechanism = None
        self._built_settings = None
        self._fingerprint = None

    @property
    def accountant(self) -> Accountant:
        """Sums the spend of this component's releases in this process; assign one with a
        cap to enforce it (it reaches the mechanism even once that is built). One assigned
        to the built mechanism (``component.mechanism.accountant``) is this one too: it is
        what the mechanism charges, and what a pickled copy (a spawned worker) carries."""
        built = self._mechanism
        return self._accountant if built is None else built.accountant

    @accountant.setter
    def accountant(self, accountant: Accountant) -> None:
        if not isinstance(accountant, Accountant):
            raise TypeError("accountant must be an Accountant")
        # Under the build lock: a mechanism being built now gets this accountant once built
        # (a cap assigned during the first Doc would otherwise never apply).
        with self._lock:
            self._accountant = accountant
            if self._mechanism is not None:
                self._mechanism.accountant = accountant

    @property
    def cfg(self) -> dict[str, Any]:
        """The component's JSON config (what ``to_bytes``/``to_disk`` store)."""
        return {
            **self.settings.to_config(),
            "mode": self.mode,
            "token_attr": self.token_attr,
            "doc_attr": self.doc_attr,
            "guarantee_attr": self.guarantee_attr,
        }

    @property
    def mechanism(self) -> Mechanism:
        """The mechanism, built (and its embeddings loaded) on first use, once even when
        threads ask together."""
        mechanism = self._mechanism
        if mechanism is not None:
            return mechanism
        with self._lock:
            mechanism = self._mechanism  # built by another thread while this one waited?
            if mechanism is None:
                mechanism = self.settings.build_mechanism(self._random, self._accountant)
                expected = self._fingerprint
                if expected is not None and mechanism.embeddings.fingerprint != expected:
                    raise ValueError(
                        f"embeddings {self.settings.embeddings!r} differ from those this "
                        f"pipeline was saved with (fingerprint "
                        f"{mechanism.embeddings.fingerprint[:12]}..., expected {expected[:12]}...)"
                    )
                self._built_settings = mechanism._settings()
                self._mechanism = mechanism
            return mechanism

    def _unchanged(self, built: Mechanism | None, action: str) -> None:
        """Refuse to ``action`` when the built mechanism's settings (epsilon, TEM's beta...)
        were reassigned after the component built it: the saved or pickled component
        rebuilds its mechanism from its config, so it would release at other settings than
        the ones this process uses (a spawned worker at the configured, weaker epsilon)."""
        if built is None or self._built_settings is None:
            return
        now = built._settings()
        changed = sorted(key for key in now if now[key] != self._built_settings.get(key))
        if changed:
            details = ", ".join(
                f"{key} {self._built_settings.get(key)!r} -> {now[key]!r}" for key in changed
            )
            raise ValueError(
                f"cannot {action}: the mechanism's settings were changed after it was built "
                f"({details}), but the component's config still says otherwise; add a "
                f"dxp_privatizer configured with the settings you want "
                f"(nlp.add_pipe(..., config=...))"
            )

    def initialize(
        self, get_examples: Callable[[], Iterable[Any]] | None = None, *, nlp: Any = None
    ) -> None:
        """Check the entity types against the whole pipeline (an entity recognizer may
        have been added after this component), load the embeddings and build the
        mechanism and its search index now (otherwise on first use): before
        ``nlp.pipe(..., n_process=N)``, forked workers then share them instead of each
        loading its own."""
        if nlp is not None:
            self.settings.check_entities(nlp)
        self.mechanism._prepare_release(np.empty(0, dtype=np.int64))  # builds the indexes

    # -- processing ----------------------------------------------------------------------------
    def __call__(self, doc: Doc, **config: Any) -> Doc:
        """The private Doc. ``config`` is spaCy's ``component_cfg`` for this component:
        ``batch_size`` (what :meth:`pipe` takes) means nothing for one Doc; anything else
        is a TypeError. In ``mode="replace"`` a Doc that fails goes to the error handler
        here: spaCy's ``nlp(text)`` goes on with the Doc it had when a handler returns
        (``ignore_error``), which would release the raw text as the private one to the
        caller and the later components (also when the call itself fails, on a
        ``component_cfg``); an empty Doc goes
        on instead, holding no word and no guarantee, as ``nlp.pipe`` drops it."""
        try:
            unknown = sorted(set(config) - {"batch_size"})
            if unknown:
                raise TypeError(f"{self.name}: unknown component_cfg key(s) {unknown}")
            return self._privatize([doc], in_batch=False)[0]
        except Exception as error:
            if self.mode != "replace":
                raise  # annotate: the raw Doc stays raw, holding no private value
            handler = self.get_error_handler()
            if handler is util.raise_error:
                raise  # spaCy calls it again: once is enough
            handler(self.name, self, [doc], error)
            return Doc(doc.vocab, words=[])

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = DEFAULT_BATCH_SIZE) -> Iterator[Doc]:
        """Privatize ``batch_size`` docs per mechanism call (one shared neighbour search;
        fewer when a batch reaches 4 Mi characters first).

        A batch that fails goes to the error handler (``nlp.set_error_handler``), as in
        spaCy's own components, and its docs are not yielded. A refused batch (an OOV token
        under ``oov="raise"``, the accountant's cap, a Doc already privatized) is refused
        before any noise is drawn or any spend charged.
        """
        error_handler = self.get_error_handler()
        for docs in _batches(stream, batch_size):
            try:
                processed = self._privatize(docs, in_batch=True)
            except Exception as error:
                error_handler(self.name, self, docs, error)
                continue
            yield from processed

    def set_error_handler(
        self, error_handler: Callable[[str, Any, list[Doc], Exception], Any]
    ) -> None:
        """The function called with ``(name, component, docs, exception)`` for a batch
        that fails in :meth:`pipe` (``nlp.set_error_handler`` sets it on every component)."""
        self.error_handler = error_handler

    def get_error_handler(self) -> Callable[[str, Any, list[Doc], Exception], Any]:
        """The error handler; by default ``spacy.util.raise_error`` (re-raise)."""
        handler: Callable[[str, Any, list[Doc], Exception], Any] = getattr(
            self, "error_handler", util.raise_error
        )
        return handler

    def _privatize(self, docs: list[Doc], in_batch: bool) -> list[Doc]:
        for doc in docs:
            held = self._released_in(doc)
            if held is not None:
                # A second release would overwrite the first's values and record while the
                # accountant is charged for both: each private value is written once.
                raise ValueError(
                    f"a Doc already holds a private release in {held}: privatize each Doc "
                    f"once (make a new one with nlp(text)), or give this component other "
                    f"attribute names"
                )
        # Everything read from the Docs (token texts, whitespace, selection, blankness) is
        # read here, before the charge: a Doc whose strings are gone (another thread's
        # nlp.memory_zone() freed them) then fails before any spend, not after.
        if not self._select_resolved:  # both resolved, or this Doc fails (before any charge)
            self._select, self._mask = self.settings.selector(), self.settings.masker()
            self._select_resolved = True
        select = self._select
        try:
            texts = [
                TokenizedText.from_doc(doc, None if select is None else select(doc)) for doc in docs
            ]
        except KeyError as error:
            if "[E018]" not in str(error):
                raise
            # spaCy's message carries the hash of a raw word, which a dictionary inverts.
            raise ValueError(
                "a Doc's strings are gone (another thread's nlp.memory_zone() ended while "
                "it was processed?): give each thread its own nlp; nothing was charged"
            ) from None
        # doc.text is the tokens' texts with their whitespace (no second read of the Doc).
        blank = [is_invisible(detokenize(text.words, text.spaces)) for text in texts]
        masker = self._mask
        if masker is not None:  # on the tokens' offsets, as in every door
            texts = [mask_tokens(text, masker) for text in texts]
        # Where token._.set would store each token's value: its character offset, read
        # from the Doc now (summing token lengths would miss a Doc whose whitespace was
        # edited through from_array).
        offsets = [[] if self.mode == "replace" else doc.to_array("IDX").tolist() for doc in docs]
        self._check_host(docs[0].vocab)
        if self.mode == "replace":
            self._check_no_listeners_after()
        mechanism = self.mechanism
        try:
            selection = None if select is None else self.settings.selection_label()
            results = privatize_tokenized(texts, mechanism, selection, mask=self.settings.mask)
        except OOVError as error:  # its index counts docs of this batch, not of the stream
            if error.document is None or not in_batch:
                raise
            raise OOVError(
                f"out-of-vocabulary token under oov='raise' in document {error.document} of "
                f"this batch of {len(docs)} (token {error.token})",
                document=error.document,
                token=error.token,
            ) from None
        # From here on nothing reads the Docs' strings: only their user data is written.
        is_word = vocabulary_test(mechanism)
        processed = []
        for doc, text, is_blank, starts, (words, guarantee) in zip(
            docs, texts, blank, offsets, results, strict=True
        ):
            spaces = private_spaces(words, text.spaces, text.selected, is_word)
            if self.mode == "replace":
                doc = self._replacement(doc, words, spaces, is_blank)
            else:
                _set_token_values(doc, starts, words, self.token_attr)
                # Whitespace-only input releases "" like the other doors (PRIVACY.md 22).
                private = "" if is_blank else detokenize(words, spaces)
                doc._.set(self.doc_attr, private)
            doc._.set(self.guarantee_attr, guarantee.to_dict())
            processed.append(doc)
        return processed

    def _check_host(self, vocab: Any) -> None:
        """Warn once when this component processes Docs of another pipeline than the one
        that built it, or after that pipeline is gone: the signs of a component added with
        ``source=``, where spaCy hands over the same object with its saved settings and
        silently ignores the block's other settings, command-line overrides and
        ``config=``, and replace mode checks the placement in the pipeline that built it.
        A Doc of another pipeline passed to the component
        directly warns too (the message says both cases); a source sharing the new
        pipeline's vocabulary, or a spawned worker's copy, cannot be told apart."""
        if self._nlp is None or self._host_checked:  # a pickled copy: no pipeline to compare
            return
        nlp = self._nlp()
        if nlp is not None and nlp.vocab is vocab:
            self._host_checked = True
            return
        seen = (
            "the pipeline that built it is gone"
            if nlp is None
            else "it privatizes a Doc of another pipeline than the one that built it"
        )
        placement = (
            "; its placement before listening components (tok2vec, transformer) cannot be "
            "checked there"
            if self.mode == "replace"
            else ""
        )
        warn(
            f"{self.name!r}: {seen}. If it was added to this pipeline with source=, spaCy "
            f"ignored the settings given beside source=: the saved ones are in use "
            f"(epsilon={self.settings.epsilon:g}, mechanism={self.settings.mechanism!r})"
            f"{placement}; add it with its factory and settings instead: "
            f"nlp.add_pipe('dxp_privatizer', config={{...}})",
            DxpWarning,
        )
        self._host_checked = True  # after the warning: one raised as an error is raised again

    def _check_no_listeners_after(self) -> None:
        """Refuse (before any charge) a replace-mode placement that breaks the pipeline:
        components after this one listening to an embedding layer (tok2vec, transformer)
        before it read that layer's features of the raw Doc, which the private Doc cannot
        carry, so they would silently predict from nothing (every POS a NOUN)."""
        nlp = None if self._nlp is None else self._nlp()
        if nlp is None:  # a pickled copy (a spawned worker) or a pipeline gone
            return
        pipeline = nlp.pipeline
        mine = next((i for i, (_, component) in enumerate(pipeline) if component is self), None)
        if mine is None:
            return
        after = {name for name, _ in pipeline[mine + 1 :]}
        listeners = sorted(
            {
                (listener, name)
                for name, component in pipeline[:mine]
                for listener in getattr(component, "listening_components", ())
                if listener in after
            }
        )
        if listeners:
            described = ", ".join(
                f"{listener!r} (listens to {name!r})" for listener, name in listeners
            )
            raise ValueError(
                f"mode='replace': {described} after {pipeline[mine][0]!r} would get no "
                f"features: the private Doc cannot carry those its embedding layer computed "
                f"from the raw text. Place the privatizer after them, or before that layer "
                f"(first=True); nothing was charged"
            )

    def _released_in(self, doc: Doc) -> str | None:
        """Where ``doc`` already holds a release of this component's attributes, or None.

        The guarantee marks a release; token values count too: ``Doc.from_docs`` of
        privatized Docs keeps the token extensions but drops the Doc's (spaCy W101).
        """
        if doc._.get(self.guarantee_attr) is not None:
            return f"doc._.{self.guarantee_attr}"
        attr = self.token_attr
        for key, value in doc.user_data.items():
            # spaCy stores token._.<attr> under ("._.", attr, token.idx, None).
            if (
                value is not None
                and isinstance(key, tuple)
                and len(key) == 4
                and key[0] == "._."
                and key[1] == attr
                and isinstance(key[2], int)
                and key[3] is None
            ):
                return f"token._.{attr}"
        return None

    @staticmethod
    def _replacement(doc: Doc, words: list[str], spaces: list[str], blank: bool) -> Doc:
        """A new Doc of the private words; nothing derived from the raw words is copied.

        Its text is what the other doors release: empty for a blank document (``blank``,
        PRIVACY.md 22), and a dropped invisible token (an emptied word, which a Doc cannot
        hold) leaves only its trailing whitespace, as a whitespace token.
        """
        kept_words: list[str] = []
        kept_spaces: list[bool] = []
        if not blank:
            for word, space in zip(words, spaces, strict=True):
                if word:
                    kept_words.append(word)
                    kept_spaces.append(bool(space))
                elif space:
                    kept_words.append(space)
                    kept_spaces.append(False)
        private = Doc(doc.vocab, words=kept_words, spaces=kept_spaces)
        private._context = doc._context  # nlp.pipe(as_tuples=True) context, not text
        return private

    # -- serialization: configuration only ---------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        # Known from a load or a built mechanism; otherwise load the (shared) table now, so
        # a pipeline saved before its first doc still refuses other embeddings when loaded.
        fingerprint: str | None
        built = self._mechanism  # read once: another thread's from_bytes may reset it
        self._unchanged(built, "save the component")
        if built is not None:
            fingerprint = built.embeddings.fingerprint
        elif self._fingerprint is not None:
            fingerprint = self._fingerprint
        else:
            fingerprint = self._fingerprint_if_available()
        if self.settings.seed is not None:
            warn(
                "saving a seeded dxp_privatizer: its seed is in what is saved (and in "
                "config.cfg), so every process that loads or installs the pipeline draws "
                "the same noise and anyone with the files can regenerate it; save it "
                "without a seed for private releases",
                SeededRandomnessWarning,
            )
        return {"format": _FORMAT, "config": self.cfg, "embeddings_fingerprint": fingerprint}

    def _fingerprint_if_available(self) -> str | None:
        """The embeddings' fingerprint, or None (with a warning) when they cannot be loaded
        here, e.g. a pipeline configured for vectors that exist only where it will run."""
        try:
            return self.settings.load_embeddings().fingerprint
        except (OSError, ValueError, ImportError) as error:  # ImportError: no gensim here
            warn(
                f"saving without the embeddings fingerprint (they cannot be loaded here: "
                f"{type(error).__name__}); the loaded pipeline cannot check its embeddings",
                DxpWarning,
            )
            return None

    def _load_state(self, state: Any) -> None:
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise ValueError("not a saved dxp_privatizer configuration (unknown format)")
        fingerprint = state.get("embeddings_fingerprint")
        saved, current = state["config"], self.cfg
        if isinstance(saved, dict) and "mask" not in saved:  # saved before masks existed
            saved = {**saved, "mask": None}
        if fingerprint is not None:
            # The moved embeddings file: the fingerprint, checked on first use, proves it
            # holds the same table (without one, a new path could hold other vectors).
            saved, current = _without_file_locations(saved, current)
        # Files of earlier versions hold floats rounded by srsly (~10 digits: ln 3 came back
        # as 1.0986122887): those match the configured value they were written from.
        if saved != current and saved != srsly.json_loads(srsly.json_dumps(current)):
            # Loading settings over different ones silently undid spacy.load(config=...)
            # overrides and edited config.cfg files (epsilon 1 asked, 10 used): refuse.
            changed = sorted(
                key for key in {**saved, **current} if saved.get(key) != current.get(key)
            )
            details = ", ".join(
                f"{key}: saved {saved.get(key)!r}, configured {current.get(key)!r}"
                for key in changed
            )
            raise ValueError(
                f"the saved dxp_privatizer settings differ from this component's ({details}): "
                f"load the pipeline with spacy.load(path) and no overrides, or add a new "
                f"dxp_privatizer with the settings you want"
            )
        with self._lock:
            self._fingerprint = fingerprint
            built = self._mechanism
            if built is not None and built.embeddings.fingerprint != self._fingerprint:
                self._accountant = built.accountant  # the ledger it charged stays this one
                self._mechanism = self._built_settings = None  # rebuilt (and checked) on use

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        """The configuration as bytes."""
        # The standard json module: its floats round-trip exactly (srsly's do not).
        data: bytes = util.to_bytes({"cfg": lambda: json.dumps(self._state()).encode()}, exclude)
        return data

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = ()) -> Privatizer:
        """Restore the configuration saved by :meth:`to_bytes`."""
        util.from_bytes(bytes_data, {"cfg": lambda b: self._load_state(json.loads(b))}, exclude)
        return self

    def to_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> None:
        """Write the configuration to ``path/cfg`` (JSON)."""
        util.to_disk(path, {"cfg": self._write_state}, exclude)

    def _write_state(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self._state()))

    def from_disk(self, path: str | Path, *, exclude: Iterable[str] = ()) -> Privatizer:
        """Restore the configuration saved by :meth:`to_disk`."""
        util.from_disk(
            path, {"cfg": lambda p: self._load_state(json.loads(Path(p).read_text()))}, exclude
        )
        return self

    # -- pickling (spawned workers): configuration and randomness policy, no mechanism ----------
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        built = state["_mechanism"]
        self._unchanged(built, "pickle the component (nlp.pipe(n_process=...) workers)")
        if built is not None:
            state["_fingerprint"] = built.embeddings.fingerprint
            state["_accountant"] = built.accountant  # assigned to it, or the component's
        state["_mechanism"] = state["_built_settings"] = None
        state["_nlp"] = None  # a weak reference cannot be pickled
        state["_select"] = state["_mask"] = None
        state.pop("_select_resolved", None)
        state.pop("_lock", None)  # a lock cannot be pickled: __setstate__ makes a new one
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "accountant" in state:  # pickled by a version with a plain attribute
            state["_accountant"] = state.pop("accountant")
        state.setdefault("_built_settings", None)  # pickled by an earlier version
        state["_nlp"] = None
        self.__dict__.update(state)
        self._lock = fork_safe_lock(self)
        # A token filter registered in code that a spawned worker does not run is missing
        # here: failing now would kill the worker while it unpickles, before spaCy can pass
        # the error on (the parent would see a bare EOFError), so only then
        # is it resolved on first use (and that use fails, before any charge).
        try:
            self._select, self._select_resolved = self.settings.selector(), True
            self._mask = self.settings.masker()
        except ValueError:  # an unknown name, or a plugin that failed to load (PluginLoadError)
            self._select, self._mask, self._select_resolved = None, None, False
        _install_extension(Token, self.token_attr)
        _install_extension(Doc, self.doc_attr)
        _install_extension(Doc, self.guarantee_attr)

    def __repr__(self) -> str:
        """The settings that decide what is protected; those at their defaults are left out
        but for the mechanism, epsilon and embeddings (so a component that lets words out raw,
        by a selection or ``oov="passthrough"``, never prints like one that protects all)."""
        settings = self.settings
        shown = [
            f"name={self.name!r}",
            f"mechanism={settings.mechanism!r}",
            f"epsilon={settings.epsilon:g}",
            f"embeddings={settings.embeddings!r}",
        ]
        if settings.mechanism_params:
            shown.append(f"mechanism_params={dict(settings.mechanism_params)!r}")
        if settings.vocab_size is not None:
            shown.append(f"vocab_size={settings.vocab_size}")
        if settings.oov != "unk":
            shown.append(f"oov={settings.oov!r}")
        if settings.restricted:
            shown.append(f"selection={settings.selection_label()!r}")
        if settings.mask is not None:
            shown.append(f"mask={settings.mask!r}")
        shown += [f"mode={self.mode!r}", f"rng={self._random.mode!r}"]
        return f"Privatizer({', '.join(shown)})"


def _batches(stream: Iterable[Doc], batch_size: int) -> Iterator[list[Doc]]:
    """``stream`` in batches closed as every door closes them (:func:`batch_is_full`)."""
    batch: list[Doc] = []
    chars = 0
    for doc in stream:
        batch.append(doc)
        chars += len(doc.text)
        if batch_is_full(len(batch), chars, batch_size):
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _without_file_locations(
    saved: dict[str, Any], current: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both configs without the file locations that both give among their loader arguments
    (a location given on one side only is a change of loader arguments, still compared)."""
    saved_params, current_params = saved.get("embeddings_params"), current.get("embeddings_params")
    if not (isinstance(saved_params, dict) and isinstance(current_params, dict)):
        return saved, current
    moved = {
        key
        for key in set(saved_params) & set(current_params)
        if key in _FILE_LOCATION_PARAMS
        or (
            isinstance(saved_params[key], str)
            and isinstance(current_params[key], str)
            and os.path.exists(current_params[key])
        )
    }
    if not moved:
        return saved, current

    def without(config: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        kept = {key: value for key, value in params.items() if key not in moved}
        return {**config, "embeddings_params": kept}

    return without(saved, saved_params), without(current, current_params)


def _set_token_values(doc: Doc, starts: list[int], words: list[str], attr: str) -> None:
    """``token._.<attr>`` of each token of ``doc`` set to its private word. For a plain-value
    extension (what :func:`_install_extension` registers) the value goes where spaCy's
    ``token._.set`` puts it, ``doc.user_data[("._.", attr, token.idx, None)]``, with the
    tokens' offsets ``starts`` read before the charge: no Token object per token (~6x
    faster). An extension re-registered since with a getter, setter or method is set
    through spaCy."""
    _default, method, getter, setter = Token.get_extension(attr) or (None,) * 4
    if method is not None or getter is not None or setter is not None:
        for token, word in zip(doc, words, strict=True):
            token._.set(attr, word)
        return
    user_data: dict[Any, Any] = doc.user_data
    for word, start in zip(words, starts, strict=True):
        user_data[("._.", attr, start, None)] = word


def _install_extension(owner: type[Doc] | type[Token], attr: str) -> None:
    """Register a plain-value extension once; refuse a name taken by a getter or method."""
    if owner.has_extension(attr):
        _default, method, getter, setter = owner.get_extension(attr)
        if method is not None or getter is not None or setter is not None:
            raise ValueError(
                f"{owner.__name__}._.{attr} is already registered with a getter or method; "
                f"choose another name"
            )
        return
    owner.set_extension(attr, default=None)
