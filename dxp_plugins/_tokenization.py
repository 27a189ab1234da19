"""Tokenize, select and detokenize: the layout half of the text path (PRIVACY.md 14, 21, 25).

The public tokenizer is spaCy's rule-based English one (``spacy.blank("en")``), one shared
copy per thread (:mod:`dxp_plugins._pipelines`), always used inside a memory zone
(:func:`forgetting`) so that it forgets the raw words it read. Every token keeps its
trailing whitespace; :func:`should_privatize` is the default selection and
:func:`private_spaces` the spacing of private words. What a release charges and draws is
:mod:`dxp_plugins.text`'s job.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _pipelines
from ._normalize import composed, is_invisible
from ._validation import check_text

__all__ = [
    "PUNCTUATION",
    "Selector",
    "TokenizedText",
    "blank_pipeline",
    "check_english",
    "detokenize",
    "forgetting",
    "mask_tokens",
    "private_spaces",
    "shared_pipeline",
    "should_privatize",
    "tokenize",
    "tokenize_batch",
    "tokenizer",
    "vocabulary_test",
]

if TYPE_CHECKING:
    from spacy.tokenizer import Tokenizer

    from .embeddings.table import EmbeddingTable
    from .masks import Mask
    from .mechanisms.base import Mechanism

#: Narrows the default selection of a spaCy ``Doc``: one flag per token (None = default).
Selector = Callable[[Any], Sequence[bool] | None]

#: Tokens passed through unchanged: ASCII punctuation and common typographic marks, each
#: matched exactly (a token is passed only if its whole text is in this set).
PUNCTUATION: frozenset[str] = frozenset(
    [
        *".,;:!?'\"()[]{}<>-/\\|&*#@%^_~`+=$",
        "...",
        "--",
        "…",
        "–",
        "—",
        "‘",
        "’",
        "“",
        "”",
        "«",
        "»",
    ]
)


def should_privatize(token_text: str) -> bool:
    """Default selection: everything but :data:`PUNCTUATION` and invisible tokens
    (whitespace and :data:`~dxp_plugins._normalize.INVISIBLE` characters only)."""
    return token_text not in PUNCTUATION and not is_invisible(token_text)


def shared_pipeline(name: str | None = None) -> Any:
    """This thread's copy of a pipeline the doors share: ``spacy.blank("en")`` (``name``
    None) or an installed pipeline, loaded once per thread (at most two names are kept).
    One handed out here stays this thread's: it is never lent to a later thread."""
    return _pipelines.hand_out(name)


def blank_pipeline() -> Any:
    """This thread's shared ``spacy.blank("en")``, whose tokenizer every door uses."""
    return shared_pipeline(None)


def check_english(nlp: Any, name: str) -> Any:
    """``nlp`` if it is an English pipeline (``nlp.lang == "en"``), else a ValueError: the
    punctuation allow-list and the spacing of private words are English rules."""
    lang = getattr(nlp, "lang", None)
    if lang != "en":
        raise ValueError(
            f"{name} is a {lang!r} pipeline; it must be an English one (lang 'en'): the "
            f"text path's punctuation and spacing rules are English"
        )
    return nlp


def tokenizer() -> Tokenizer:
    """The public tokenizer (``spacy.blank("en").tokenizer``, this thread's shared copy)."""
    tokenizer_: Tokenizer = blank_pipeline().tokenizer
    return tokenizer_


def borrowed_blank() -> Any:
    """This thread's ``spacy.blank("en")`` for the text path's own use inside its zones."""
    return _pipelines.borrow(None)


@contextlib.contextmanager
def forgetting(nlp: Any) -> Iterator[None]:
    """Process with a shared pipeline inside its ``memory_zone``, so its StringStore and
    caches forget the raw words of the batch; extract strings before leaving (Docs made
    inside are invalid after it).

    Without this a pipeline kept for the life of the process would hold every word it
    ever saw, after the door that privatized it is gone, for any later Doc, token filter
    or pickle to see. Zones must not nest: inside a zone already (the user's own, or ours
    re-entered from a token filter) the open zone does the forgetting. A pipeline of the
    user's own (``privatize_texts(nlp=...)``) is left alone: its owner decides (see
    docs/front-doors.md on ``memory_zone``).
    """
    zone = getattr(nlp, "memory_zone", None)
    if nlp not in _pipelines.SHARED or zone is None or getattr(nlp.vocab, "in_memory_zone", True):
        yield
        return
    try:
        with zone():
            try:
                yield
            except Exception as error:
                # A message holding a Token or Doc could not be rendered once the zone
                # has freed its strings: render it now.
                if any(not isinstance(arg, str | int | float | None) for arg in error.args):
                    error.args = (str(error),)
                raise
    finally:
        for _, component in getattr(nlp, "pipeline", ()):
            cache = getattr(component, "cache", None)  # spaCy's Lemmatizer: keyed by orth
            if isinstance(cache, dict):
                cache.clear()


@dataclass(frozen=True)
class TokenizedText:
    """Token texts, their trailing whitespace, and which tokens are privatized;
    ``masked``: how many of the words are placeholders a mask wrote
    (:func:`dxp_plugins.masks.apply_mask`)."""

    words: list[str]
    spaces: list[str]
    selected: list[bool]
    masked: int = 0

    @classmethod
    def from_doc(cls, doc: Any, selected: Sequence[bool] | None = None) -> TokenizedText:
        """From a spaCy ``Doc`` (default selection unless ``selected`` is given)."""
        words = [token.text for token in doc]
        spaces = [token.whitespace_ for token in doc]
        if selected is None:
            chosen = [should_privatize(word) for word in words]
        else:
            chosen = [
                bool(flag) and should_privatize(word)
                for flag, word in zip(selected, words, strict=True)
            ]
        return cls(words, spaces, chosen)


def tokenize(text: str) -> TokenizedText:
    """Tokenize one text with the public tokenizer and the default selection."""
    blank = borrowed_blank()
    with forgetting(blank):
        return TokenizedText.from_doc(blank.tokenizer(composed(check_text(text))))


def detokenize(words: Sequence[str], spaces: Sequence[str]) -> str:
    """Join words with their original trailing whitespace."""
    return "".join(word + space for word, space in zip(words, spaces, strict=True))


def _is_clitic(word: str) -> bool:
    return word.startswith(("'", "\u2019")) or word.lower() in ("n't", "n\u2019t")


def private_spaces(
    words: Sequence[str],
    spaces: Sequence[str],
    selected: Sequence[bool],
    is_word: Callable[[list[str]], Sequence[bool]],
) -> list[str]:
    """Trailing whitespace for the private ``words``.

    The original layout, except between two privatized tokens written together
    (``does|n't``, ``can|not``): they stay together only when the second private word is a
    clitic or the two joined form a word (``is_word``, the public vocabulary); otherwise one
    space separates them, so ``doesn't`` never comes out as ``doesneed``. A dropped
    invisible token with no whitespace after it (an empty private word: ``😀|ZWSP|😀``) is
    not there: the tokens on either side count as written together, so the output is the
    one the text without the mark gives. A function of the public layout, the public
    vocabulary and the private words only (post-processing: the guarantee is unchanged).
    """
    out = list(spaces)
    glued: list[tuple[int, int]] = []
    for i in range(len(out) - 1):
        if out[i] or not selected[i]:
            continue
        j = i + 1
        while j < len(out) - 1 and not words[j] and not out[j]:  # a dropped mark
            j += 1
        if selected[j] and not _is_clitic(words[j]):
            glued.append((i, j))
    if glued:
        joined = is_word([words[i] + words[j] for i, j in glued])
        for (i, _), known in zip(glued, joined, strict=True):
            if not known:
                out[i] = " "
    return out


def vocabulary_test(mechanism: Mechanism) -> Callable[[list[str]], Sequence[bool]]:
    """``is_word`` for :func:`private_spaces`: membership in the mechanism's embeddings."""
    table = mechanism.embeddings
    return lambda candidates: (table.lookup(candidates) >= 0).tolist()


def tokenize_batch(
    texts: list[str],
    blank: list[bool],
    select: Selector | None,
    nlp: Any,
    table: EmbeddingTable | None = None,
    mask: Mask | None = None,
) -> list[TokenizedText]:
    """The non-blank texts tokenized (by ``nlp`` when given), selected and masked
    (``mask``: :func:`mask_tokens`); ``table``: the mechanism's public vocabulary, which warms
    the shared tokenizer (:func:`warm`)."""
    pipeline = borrowed_blank() if nlp is None else nlp
    if nlp is None and table is not None:
        warm(pipeline, table, sum(map(len, texts)))
    with forgetting(pipeline):
        docs = [
            TokenizedText.from_doc(doc, None if select is None else select(doc))
            for doc in (pipeline.tokenizer if nlp is None else nlp).pipe(
                text for text, empty in zip(texts, blank, strict=True) if not empty
            )
        ]
    if mask is None:  # the default costs nothing
        return docs
    return [mask_tokens(doc, mask) for doc in docs]


def mask_tokens(doc: TokenizedText, mask: Mask) -> TokenizedText:
    """``doc`` with what ``mask`` finds in its text (its words and whitespace joined, so the
    offsets are those of the tokens in every door) hidden (:func:`dxp_plugins.masks.apply_mask`)."""
    from .masks import apply_mask, visible_spans

    return apply_mask(doc, visible_spans(mask, detokenize(doc.words, doc.spaces)))


#: How many public words (the first of the mechanism's table in frequency order) the shared
#: tokenizer caches the tokenization of, outside any memory zone. spaCy caches nothing inside
#: a zone (its ``Tokenizer._save_cached`` returns early), so every text path call tokenized
#: every span from scratch (affix regexes, new lexemes): ~3x slower than a warm cache. The
#: words are public (PRIVACY.md 3), the same whatever the texts are, and spaCy's cache holds
#: at most ``max_cache_size`` (10,000) spans: the zone still forgets every raw word.
WARM_WORDS = 10_000
#: Characters a shared tokenizer reads (this batch included) before it is warmed. Warming
#: 10,000 words costs ~0.15-0.2 s, what a warm cache saves over ~300,000 characters of
#: English (0.6 us each): waiting until then costs at most about twice the best choice made
#: in hindsight (ski rental), and one call with a batch this large warms at once.
WARM_AFTER_CHARS = 1 << 18
#: Characters read so far by each shared pipeline; -1 once warmed.
_WARMTH: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def warm(pipeline: Any, table: EmbeddingTable, chars: int) -> None:
    """Cache the tokenization of ``table``'s most frequent words in the shared ``pipeline``
    once it has read :data:`WARM_AFTER_CHARS` characters (never inside an open memory zone,
    which would forget them again). A cache hit gives the tokens spaCy computes for the span
    (special cases are never cached): the same tokens, only sooner."""
    read = _WARMTH.get(pipeline, 0)
    if read < 0 or WARM_WORDS <= 0:
        return
    read += chars
    if read < WARM_AFTER_CHARS or getattr(pipeline.vocab, "in_memory_zone", True):
        _WARMTH[pipeline] = read
        return
    _WARMTH[pipeline] = -1
    words = table.words
    order = table.frequency_order()[:WARM_WORDS].tolist()
    for _ in pipeline.tokenizer.pipe(words[i] for i in order):
        pass
