"""spaCy pipeline component ``dxp_privatizer`` (declared under the ``spacy_factories`` entry
point, so ``nlp.add_pipe("dxp_privatizer", config={...})`` and ``spacy.load(path)`` work without
importing dxp_plugins).

This module is what spaCy imports through the entry point: it must stay cheap and must not
fail, so it only registers the factory; the component, the embeddings and faiss load on use.

    nlp.add_pipe("dxp_privatizer", config={"epsilon": 10, "vocab_size": 50000})
    doc = nlp("Send the keys to Alice.")
    doc._.dxp_text, doc._.dxp_guarantee

Config (see :mod:`dxp_plugins.doors` for the shared settings): ``epsilon`` (required),
``mechanism``, ``mechanism_params``, ``embeddings``, ``embeddings_params``, ``vocab_size``,
``oov``, ``pos``, ``entities``, ``token_filter``, ``seed``, ``mask`` (a registered mask such
as ``"identifiers"``: what it finds becomes ``[...]`` before privatizing, see
:mod:`dxp_plugins.masks`), and the output ``mode``:

* ``"annotate"`` (default): ``token._.dxp_text`` and ``doc._.dxp_text`` hold the private
  words and text (attribute names: ``token_attr``, ``doc_attr``); the Doc keeps its raw words.
* ``"replace"``: later components receive a new Doc made of the private words with the
  original whitespace; no raw word, annotation or extension value is carried over (but a
  pickle of the Doc carries ``nlp.vocab``'s strings: use ``nlp.memory_zone()``).

In both modes ``doc._.dxp_guarantee`` (``guarantee_attr``) holds the guarantee of the doc's
release as a dict.
"""

from typing import TYPE_CHECKING, Any

from spacy.language import Language

#: Default config of the factory (``epsilon`` has no default and must be given).
DEFAULT_CONFIG: dict[str, Any] = {
    "mechanism": "madlib",
    "mechanism_params": {},
    "embeddings": "glove-6b-50d",
    "embeddings_params": {},
    "vocab_size": None,
    "oov": "unk",
    "pos": None,
    "entities": None,
    "token_filter": None,
    "seed": None,
    "mask": None,
    "mode": "annotate",
    "token_attr": "dxp_text",
    "doc_attr": "dxp_text",
    "guarantee_attr": "dxp_guarantee",
}


@Language.factory(
    "dxp_privatizer",
    default_config=DEFAULT_CONFIG,
    assigns=["doc._.dxp_text", "token._.dxp_text", "doc._.dxp_guarantee"],
)
def make_privatizer(
    nlp: Language,
    name: str,
    epsilon: float,
    mechanism: str,
    mechanism_params: dict[str, Any],
    embeddings: str,
    embeddings_params: dict[str, Any],
    vocab_size: int | None,
    oov: str,
    pos: str | list[str] | None,
    entities: str | list[str] | None,
    token_filter: str | None,
    seed: int | None,
    mask: str | None,
    mode: str,
    token_attr: str,
    doc_attr: str,
    guarantee_attr: str,
) -> Any:
    """Build a :class:`~dxp_plugins.pipeline.component.Privatizer` (embeddings load lazily)."""
    from .component import Privatizer

    return Privatizer(
        nlp,
        name,
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
        seed=seed,
        mask=mask,
        mode=mode,
        token_attr=token_attr,
        doc_attr=doc_attr,
        guarantee_attr=guarantee_attr,
    )


__all__ = ["DEFAULT_CONFIG", "Privatizer", "make_privatizer"]


if TYPE_CHECKING:  # an explicit re-export for type checkers
    from .component import Privatizer as Privatizer
else:  # Privatizer (the component's class, for cast/isinstance), imported on first use
    from .._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(__name__, {"Privatizer": ".component"})
