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
* ``mask``: a registered mask (:mod:`dxp_plugins.masks`, e.g. ``"identifiers"``) whose
  matches are replaced by the placeholder ``[...]`` before anything is privatized; what it
  hides is never released. Guarantees record it (``mask``, ``spans_masked``).

spaCy's config validation checks types but not ranges: :meth:`DoorSettings.create` raises a
ValueError naming the setting for every out-of-range value.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._random import RandomSource, check_seed
from ._validation import check_choice, check_epsilon, check_int
from .embeddings.shared import load_embeddings_setting

if TYPE_CHECKING:
    from .embeddings.table import EmbeddingTable
    from .guarantee import Accountant, Guarantee
    from .masks import Mask
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
    mask: str | None = None

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
        mask: Any = None,
        names: Mapping[str, str | None] | None = None,
    ) -> DoorSettings:
        """Check every setting; raise TypeError/ValueError naming the first bad one.

        ``names`` maps a setting to the door's own spelling of it in messages (e.g.
        ``{"seed": "random_state"}``; None: a setting the door does not have).
        """
        from . import registry
        from .mechanisms import check_factory
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
        check_factory(mechanism, factory, mechanism_params)
        if isinstance(factory, type) and issubclass(factory, Mechanism):
            _check_option_values(factory, mechanism_params)
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
        if mask is not None:
            mask = _check_registered(registry.masks, mask, label("mask"))
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
            mask=mask,
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
            from ._optional import tagger_hint

            hint = tagger_hint(quote="'")
            raise ValueError(
                f"selection by pos or entities needs a tagging pipeline: set spacy_model to {hint}"
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
        from ._tokenization import check_english

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

    def masker(self) -> Mask | None:
        """The resolved mask (None for none): what the text path's ``mask`` takes."""
        from .masks import resolve_mask

        return resolve_mask(self.mask, "mask")

    def nothing_released(self, mechanism: Mechanism) -> Guarantee:
        """The record of a run that held no document: no release, no spend (PRIVACY.md 22),
        with this door's selection and mask."""
        record = dataclasses.replace(mechanism._record(), releases=0, mask=self.mask)
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
                "pos selection needs part-of-speech tags: in a spaCy pipeline put a tagger "
                "or morphologizer before the privatizer; to TextPrivatizer or the CLI give a "
                f"spacy_model (--spacy-model) that has one{tags_only}"
            )
        chosen |= np.isin(doc.to_array("POS"), [IDS[tag] for tag in pos])
    if entities:
        if not doc.has_annotation("ENT_IOB"):
            raise ValueError(
                "entity selection needs named entities: in a spaCy pipeline put an entity "
                "recognizer before the privatizer; to TextPrivatizer or the CLI give a "
                "spacy_model (--spacy-model) that has one"
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


def _check_params(params: Any, setting: str) -> dict[str, Any]:
    if params is None:
        return {}
    if not isinstance(params, Mapping):
        raise TypeError(f"{setting} must be a dict, got {type(params).__name__}")
    for key in params:
        if not isinstance(key, str) or not key.isidentifier():
            raise ValueError(f"{setting}: keys must be parameter names, got {key!r}")
    return dict(params)


def _check_option_values(factory: Any, options: dict[str, Any]) -> None:
    """``factory.check_options(**options)``: values checked before any table is loaded. A
    plugin's refusal is raised again from here, as the library's own: it sees settings,
    never input, so the CLI shows its message (rather than withhold a plugin's ``t must be
    in [0, 1]`` as "unexpected ValueError"). Only a plain TypeError or
    ValueError: a subclass (a library error, a UnicodeError) keeps its type and handling."""
    try:
        factory.check_options(**options)
    except (TypeError, ValueError) as error:
        if type(error) not in (TypeError, ValueError):  # a DxpError, a UnicodeError: as is
            raise
        raise type(error)(str(error)) from error


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
