"""The one text path shared by the spaCy component, the scikit-learn transformer and the CLI.

tokenize -> select -> privatize -> detokenize (PRIVACY.md 14, 20-25):

* **Tokenize** with spaCy's rule-based English tokenizer (``spacy.blank("en")``): public and
  deterministic; each token keeps its trailing whitespace, so layout survives. Texts are
  composed to Unicode NFC first (decomposed accents split as composed ones do).
* **Select**: every token is privatized except whitespace tokens and tokens that exactly
  match :data:`PUNCTUATION` (a fixed allow-list, passed through unchanged and counted).
  Digits, e-mail addresses, URLs and unknown strings are words: they are privatized (OOV
  strings via the public UNK point).
* **Mask** (``mask="identifiers"``, off by default): what a registered mask finds is
  replaced, whole tokens at a time, by the placeholder ``[...]``, which passes through
  (:mod:`dxp_plugins.masks`).
* **Privatize** all selected tokens of a batch of documents in one mechanism call (the
  mechanism normalises each token with NFKC + lower case before lookup).
* **Detokenize**: private words joined with the original whitespace (plus one space
  between two privatized tokens written together, see :func:`private_spaces`).

Tokenizing, selecting and detokenizing live in :mod:`dxp_plugins._tokenization` (re-exported
here); this module releases: batches, one charge per call, long texts in pieces.

Not protected, by design: the number of tokens, their positions, the whitespace between
them and the allow-listed punctuation.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._normalize import composed, is_invisible, original_offset, without_invisible
from ._tokenization import (
    PUNCTUATION,
    Selector,
    TokenizedText,
    blank_pipeline,
    borrowed_blank,
    check_english,
    detokenize,
    forgetting,
    mask_tokens,
    private_spaces,
    shared_pipeline,
    should_privatize,
    tokenize,
    tokenize_batch,
    tokenizer,
    vocabulary_test,
    warm,
)
from ._validation import check_int, check_text
from .doors import DEFAULT_BATCH_SIZE
from .errors import OOVError, TextTooLongError
from .guarantee import Guarantee
from .masks import Reading, resolve_mask

__all__ = [
    "PUNCTUATION",
    "PrivateText",
    "Selector",
    "TokenizedText",
    "blank_pipeline",
    "check_english",
    "check_texts",
    "detokenize",
    "forgetting",
    "private_spaces",
    "privatize_all",
    "privatize_text",
    "privatize_texts",
    "privatize_tokenized",
    "selected_token_offset",
    "shared_pipeline",
    "should_privatize",
    "tokenize",
    "tokenizer",
]

if TYPE_CHECKING:
    from .masks import Mask
    from .mechanisms.base import Mechanism, Reservation


def privatize_tokenized(
    documents: Sequence[TokenizedText],
    mechanism: Mechanism,
    selection: str | None = None,
    *,
    mask: str | None = None,
    _charged: Reservation | None = None,
) -> list[tuple[list[str], Guarantee]]:
    """Privatize the selected tokens of all documents in one batch (the shared core).

    Unselected tokens are returned unchanged and count as passed through in each
    document's guarantee, except invisible ones: whitespace is kept (layout), and the
    zero-width characters of :data:`~dxp_plugins._normalize.INVISIBLE` are dropped, so a
    hidden zero-width mark never reaches the output. ``selection`` names a restricted
    selection (POS, entities, a token filter: decided from the raw text), which each
    guarantee records and states as unprotected. An unselected token the default selection
    would privatize (anything but allow-listed punctuation) is a word released raw: it also
    counts in ``words_passed_through``, as the OOV words the mechanism passes through under
    ``oov="passthrough"`` do. ``mask``: the name of the mask whose placeholders the
    documents hold (:func:`dxp_plugins.masks.apply_mask`), recorded in each guarantee; a
    placeholder counts as a token passed through, never as a raw word. (``_charged``: the
    reservation a long text's pieces, or a capped call's batches, were charged by up front,
    see :func:`_privatize_long`.)
    """
    chosen = _chosen(documents)
    private, guarantees = (
        mechanism.privatize_batch(chosen)
        if _charged is None
        else mechanism._privatize_batch(chosen, charged=_charged)
    )
    results: list[tuple[list[str], Guarantee]] = []
    left_out = 0  # words the selection released raw, for the ledger
    for doc, replaced, guarantee in zip(documents, private, guarantees, strict=True):
        out = list(doc.words)
        replacements = iter(replaced)
        passed = raw_words = 0
        for position, keep in enumerate(doc.selected):
            if keep:
                out[position] = next(replacements)
            elif is_invisible(doc.words[position]):
                out[position] = without_invisible(doc.words[position])
            else:
                passed += 1
                raw_words += should_privatize(doc.words[position])  # a word left out
        # Each placeholder ([...], not on the allow-list) was counted as a word above: it
        # is not one (what it hid is neither released nor counted).
        raw_words -= doc.masked
        if mask is not None:
            guarantee = dataclasses.replace(guarantee, mask=mask)
        guarantee = guarantee.add_passed_through(passed, raw_words, doc.masked)
        if selection is not None:
            guarantee = dataclasses.replace(guarantee, selection=selection)
        results.append((out, guarantee))
        left_out += raw_words
    if left_out:
        mechanism.accountant.record_raw(left_out)
    return results


@dataclass(frozen=True)
class PrivateText:
    """A private text and the guarantee of its release."""

    text: str
    guarantee: Guarantee


def privatize_texts(
    texts: Iterable[str | bytes],
    mechanism: Mechanism,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    select: Selector | None = None,
    nlp: Any = None,
    mask: str | None = None,
) -> Iterator[PrivateText]:
    """Privatize texts lazily, ``batch_size`` documents per mechanism call (default 1000, as
    in every door: seeded draws depend on the batches), or fewer when a batch reaches
    :data:`BATCH_CHARS` characters first.

    A batch is charged, and its noise drawn, when its first text is asked for: stopping
    early (``itertools.islice``, a ``break``) leaves the rest of that batch charged though
    never released. Empty or whitespace-only texts give ``""`` and spend nothing
    (PRIVACY.md 22).
    ``select(doc)`` may narrow the default selection (per-token flags, None = default);
    ``nlp`` replaces the public tokenizer by an English spaCy pipeline with the same
    tokenizer (a tagger, say, for selection by part of speech); another language is refused.
    ``mask`` names a registered mask (:mod:`dxp_plugins.masks`, e.g. ``"identifiers"``):
    each run of tokens it finds becomes one ``[...]``, passed through; what it hides is never
    released (the guarantees record the mask and ``spans_masked``).
    """
    if isinstance(texts, str | bytes | bytearray):
        raise TypeError("texts must be an iterable of texts, not a single text: use privatize_text")
    _check_mechanism(mechanism)
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if nlp is not None:
        check_english(nlp, "nlp")
    return _privatize_stream(texts, mechanism, batch_size, select, nlp, masker=resolve_mask(mask))


def _check_mechanism(mechanism: Any) -> None:
    """A TypeError that says how to build a mechanism from a name (other doors take one)."""
    from .mechanisms.base import Mechanism

    if not isinstance(mechanism, Mechanism):
        raise TypeError(
            f"mechanism must be a Mechanism, got {type(mechanism).__name__}: build one with "
            "dxp.make_mechanism(name, embeddings, epsilon=...) or dxp.Madlib(embeddings, "
            "epsilon=...)"
        )


def _privatize_stream(
    texts: Iterable[str | bytes],
    mechanism: Mechanism,
    batch_size: int,
    select: Selector | None,
    nlp: Any,
    charged: Reservation | None = None,
    kept: Sequence[list[TokenizedText] | int | None] = (),
    masker: Mask | None = None,
) -> Iterator[PrivateText]:
    """``charged``: the reservation by which the caller charged every text's tokens already
    (:func:`privatize_all`): each batch takes its tokens from it, sampled at its epsilon.
    ``kept``: the tokenized batches :func:`_checked` kept, in the order of :func:`_plan`
    (None, or past its end: tokenize the batch again; an int: tokenize it again and refuse,
    before its noise, a selection of another size than was counted). ``masker``: the
    resolved mask, or None."""
    for number, (start, group, long) in enumerate(_plan(texts, batch_size, select, nlp)):
        if long:
            yield _privatize_long(group[0], mechanism, start, charged, masker)
        else:
            entry = kept[number] if number < len(kept) else None
            counted = entry if isinstance(entry, int) else None  # tokenized again: must match
            docs = None if isinstance(entry, int) else entry
            yield from _privatize_batch(
                group, mechanism, select, nlp, start, charged, docs, counted, masker
            )


def privatize_all(
    texts: Iterable[str | bytes],
    mechanism: Mechanism,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    select: Selector | None = None,
    nlp: Any = None,
    mask: str | None = None,
) -> list[PrivateText]:
    """:func:`privatize_texts` all at once, all or nothing: what would refuse a later batch
    (an OOV token under ``oov="raise"``, a text too long for ``nlp``, the accountant's cap,
    even with other threads charging it) refuses the call before any noise is drawn. (A
    mechanism class overriding ``privatize_batch`` or ``_privatize_batch`` is checked first,
    then charged batch by batch: another thread may still make one of its batches refuse.)

    With a capped accountant the texts are tokenized (tagged, with ``nlp``) once to count
    their tokens, which are charged as one release, then privatized batch by batch at that
    epsilon; without a cap :func:`check_texts` runs first and the batches charge as they go
    (nothing can refuse them then). Every output is held in memory: for a stream, use
    :func:`privatize_texts`."""
    if isinstance(texts, str | bytes | bytearray):
        raise TypeError("texts must be an iterable of texts, not a single text: use privatize_text")
    masker = resolve_mask(mask)
    texts = list(texts)  # read twice: counted, then privatized
    kept: list[list[TokenizedText] | int | None] = []  # what counting saw, reused below
    tokens = _checked(texts, mechanism, batch_size, select, nlp, kept, masker)
    if mechanism.accountant.cap is None or tokens is None or _overrides_batches(mechanism):
        return list(
            _privatize_stream(texts, mechanism, batch_size, select, nlp, None, kept, masker)
        )
    reservation = mechanism._reserve(tokens)  # one charge: a refusal comes before any noise
    with _released_as_charged(mechanism, reservation):
        results = list(
            _privatize_stream(texts, mechanism, batch_size, select, nlp, reservation, kept, masker)
        )
    if results:  # one charge, one release: its record, as privatize_batch leaves one
        mechanism.last_guarantee = Guarantee.combine(result.guarantee for result in results)
    return results


@contextlib.contextmanager
def _released_as_charged(mechanism: Mechanism, reservation: Reservation) -> Iterator[None]:
    """Check that a release made in parts took exactly what ``reservation`` charged (a part
    taking more is refused before its noise, by :meth:`Reservation.take`), and on any
    failure after the charge leave ``mechanism.last_guarantee`` naming that charge -- what
    the ledger saw -- rather than the last part sampled (nothing is returned)."""
    try:
        yield
        if reservation.left:
            raise RuntimeError("the release privatized fewer tokens than were charged")
    except BaseException:
        record = mechanism._record(reservation.epsilon)
        mechanism.last_guarantee = dataclasses.replace(
            record, tokens_privatized=reservation.tokens, releases=int(reservation.tokens > 0)
        )
        raise


def _overrides_batches(mechanism: Mechanism) -> bool:
    """True for a mechanism class that overrides how a batch is released and charged: the
    one-charge path of :func:`privatize_all` would bypass its ``privatize_batch`` (or trust
    its ``_privatize_batch`` to draw only what was charged), so such a class is checked
    first and charged batch by batch instead."""
    from .mechanisms.base import Mechanism as Base

    kind = type(mechanism)
    return (
        kind.privatize_batch is not Base.privatize_batch
        or kind._privatize_batch is not Base._privatize_batch
    )


def _plan(
    texts: Iterable[str | bytes], batch_size: int, select: Selector | None, nlp: Any
) -> Iterator[tuple[int, list[str], bool]]:
    """How :func:`privatize_texts` releases ``texts``: ``(start, group, long)``, where
    ``group`` holds the checked texts from index ``start`` on, either one mechanism batch
    or (``long``) one text released in pieces."""
    batch: list[str] = []
    start = 0  # index of batch[0] among the texts
    chars = 0
    for position, raw in enumerate(texts):
        text = composed(check_text(raw, f"text {position}"))
        if _in_pieces(text, select, nlp):
            if batch:
                yield start, batch, False
                batch = []
            yield position, [text], True
            continue
        if not batch:
            start, chars = position, 0
        batch.append(text)
        chars += len(text)
        if batch_is_full(len(batch), chars, batch_size):
            yield start, batch, False
            batch = []
    if batch:
        yield start, batch, False


#: A batch closes at ``batch_size`` documents or once its documents hold this many
#: characters, whichever comes first (in every door: seeded draws depend on the batches).
#: A mechanism call's memory grows with its tokens, ~23 MiB per MB of text: 1,000
#: documents of 100 KB each peaked at 2.7 GiB in one batch.
BATCH_CHARS = 1 << 22


def batch_is_full(documents: int, chars: int, batch_size: int) -> bool:
    """Whether a batch of ``documents`` holding ``chars`` characters is complete."""
    return documents >= batch_size or chars >= BATCH_CHARS


def check_texts(
    texts: Iterable[str | bytes],
    mechanism: Mechanism,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    select: Selector | None = None,
    nlp: Any = None,
    mask: str | None = None,
) -> None:
    """Raise now what :func:`privatize_texts` with the same arguments would raise midway
    -- a text longer than ``nlp.max_length``, an out-of-vocabulary token under
    ``oov="raise"`` (the same error and position), the mechanism's capped accountant
    refusing the total spend of all the texts (over the cap, another unit) -- charging
    nothing and drawing no noise: a long run, or a caller that keeps all the outputs, can
    refuse before any batch is charged. Under ``oov="raise"`` or with a cap every text is
    tokenized (and, with ``nlp``, tagged) once more; otherwise only lengths are read.
    Another release charging the same accountant meanwhile can still make a batch refuse.
    It reads ``texts`` through: pass a list (or a fresh iterator) and then the same texts
    to :func:`privatize_texts`."""
    if isinstance(texts, str | bytes | bytearray):
        raise TypeError("texts must be an iterable of texts, not a single text")
    charged = _checked(texts, mechanism, batch_size, select, nlp, masker=resolve_mask(mask))
    if charged:  # what the batches would charge in all, in the unit they charge
        mechanism.accountant.check(mechanism.epsilon * charged, unit=mechanism.ledger_unit)


def _checked(
    texts: Iterable[str | bytes],
    mechanism: Mechanism,
    batch_size: int,
    select: Selector | None,
    nlp: Any,
    kept: list[list[TokenizedText] | int | None] | None = None,
    masker: Mask | None = None,
) -> int | None:
    """:func:`check_texts` but the accountant: raises what the texts would raise midway;
    returns the tokens privatizing them would charge when it tokenized them (under
    ``oov="raise"`` or with a capped accountant), else None. ``kept``: a list to which
    the tokenized batches are appended, one entry per batch of :func:`_plan` (None for a
    long text; once :data:`KEPT_TOKENS` tokens are kept, the batch's count of selected
    tokens), so that a caller holding every text anyway (:func:`privatize_all`) need not
    tokenize (or tag) them again, and a batch tokenized again must select what was
    counted."""
    batch_size = check_int(batch_size, "batch_size", minimum=1)
    if nlp is not None:
        check_english(nlp, "nlp")
    tokens = mechanism.oov == "raise" or mechanism.accountant.cap is not None
    charged = held = 0
    for start, group, long in _plan(texts, batch_size, select, nlp):
        if long:
            if tokens:
                charged += _check_long(group[0], mechanism, start, masker)
            if kept is not None:
                kept.append(None)
            continue
        blank = [is_invisible(text) for text in group]
        _check_lengths(group, blank, nlp, start)
        if tokens:
            docs = tokenize_batch(group, blank, select, nlp, mechanism.embeddings, masker)
            chosen = _chosen(docs)
            try:
                charged += mechanism.check_release(chosen)
            except OOVError as error:
                raise _relocated(error, blank, start) from None
            if kept is not None:
                held += sum(len(doc.words) for doc in docs)
                kept.append(docs if held <= KEPT_TOKENS else _selected(chosen))
    return charged if tokens else None


#: :func:`privatize_all` reuses the tokens its pre-pass read for at most this many tokens
#: (about 100 bytes each as token lists: ~25 MiB), and tokenizes the texts beyond them again.
KEPT_TOKENS = 1 << 18


#: Texts longer than this (characters) go through the public tokenizer and the mechanism in
#: pieces of about this size, so one huge document needs memory for one piece, not ~50x
#: its size in Docs, token lists and noise (PRIVACY.md 24).
PIECE_CHARS = 1 << 17
#: A run of whitespace between two non-space characters: the pieces are cut after it.
_CUT = re.compile(r"\S\s+(?=\S)")


def pieces(
    text: str, size: int = PIECE_CHARS, spans: Sequence[tuple[int, int]] = ()
) -> Iterator[str]:
    """``text`` cut after a run of whitespace between two non-space characters, every
    ``size`` characters or a little more. spaCy's tokenizer splits at whitespace before
    anything else, so the pieces give the tokens and whitespace of the whole (identical on
    9.6M characters of 20 Newsgroups and Pang & Lee text and on texts joined by newlines,
    tabs, double and non-breaking spaces; spaCy's special-case matching can differ right
    at a cut for contrived strings such as ``-:) )``), and no two privatized tokens are
    glued across a cut. Text without whitespace is one piece. No cut falls inside one of
    the sorted character ``spans`` (a mask's: its run of tokens stays one placeholder)."""
    starts, ends = _union(spans)
    start = 0
    while len(text) - start > size:
        cut = _CUT.search(text, start + size)
        while cut is not None:
            inside = bisect.bisect_left(starts, cut.end()) - 1  # the last span starting before
            if inside < 0 or ends[inside] <= cut.end():
                break
            cut = _CUT.search(text, ends[inside] - 1)  # a cut at or after that span's end
        if cut is None:
            break
        yield text[start : cut.end()]
        start = cut.end()
    yield text[start:]


def _union(spans: Sequence[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Sorted ``spans`` as disjoint intervals: their starts and their ends."""
    starts: list[int] = []
    ends: list[int] = []
    for a, b in spans:
        if ends and a <= ends[-1]:
            ends[-1] = max(ends[-1], b)
        else:
            starts.append(a)
            ends.append(b)
    return starts, ends


def _piece_masks(
    text: str, masker: Mask | None
) -> tuple[Sequence[tuple[int, int]], Callable[[int, str], Mask | None]]:
    """The mask's spans over the whole long ``text`` (found once, on the whole as lookup
    reads it, as offsets into ``text``), and for a piece starting at a character offset, a
    mask giving those spans within the piece as lookup reads it: what the mask function is
    given (:func:`~dxp_plugins._tokenization.mask_tokens` maps them back to the piece). A
    piece starts after whitespace, so its reading is that part of the whole's reading."""
    if masker is None:
        return (), lambda offset, piece: None
    reading = Reading.of(text)
    found = masker.spans(reading.text)  # sorted by start
    starts = [a for a, _ in found]
    reach = list(itertools.accumulate((b for _, b in found), max))  # rises: bisectable

    def within(offset: int, piece: str) -> Mask:
        start, end = reading.visible(offset), reading.visible(offset + len(piece))
        # Only the spans from the first reaching past ``start`` to the last opening before
        # ``end`` can overlap the piece: each piece looks at its own, not at every span.
        first, last = bisect.bisect_right(reach, start), bisect.bisect_left(starts, end)
        local = [
            (max(a, start) - start, min(b, end) - start) for a, b in found[first:last] if b > start
        ]
        return dataclasses.replace(masker, find=lambda _text: local)

    return [reading.original(a, b) for a, b in found], within


def _privatize_long(
    text: str,
    mechanism: Mechanism,
    position: int,
    charged: Reservation | None = None,
    masker: Mask | None = None,
) -> PrivateText:
    """One long text, piece by piece (default tokenizer and selection only: a tagger needs
    the whole context). One release: the whole text is charged once, before any piece
    draws noise, so what would refuse it (an OOV token under ``oov="raise"``, the
    accountant's cap) refuses it whole; the pieces are then sampled at the epsilon charged,
    and their records merge into one. ``charged``: the caller's reservation, which charged
    it already. ``masker``: its spans are found on the whole text."""
    if charged is not None:  # counted and charged with the caller's texts
        return _release_long(text, mechanism, position, charged, masker)
    reservation = mechanism._reserve(_check_long(text, mechanism, position, masker))
    with _released_as_charged(mechanism, reservation):
        return _release_long(text, mechanism, position, reservation, masker)


def _release_long(
    text: str,
    mechanism: Mechanism,
    position: int,
    reservation: Reservation,
    masker: Mask | None = None,
) -> PrivateText:
    """:func:`_privatize_long` once charged: the pieces take their tokens from
    ``reservation``."""
    parts: list[str] = []
    total: Guarantee | None = None
    spans, within = _piece_masks(text, masker)
    offset = 0
    for piece in pieces(text, PIECE_CHARS, spans):
        offset, piece_start = offset + len(piece), offset
        if is_invisible(piece):  # layout only: keep its whitespace
            parts.append(without_invisible(piece))
            continue
        (result,) = _privatize_batch(
            [piece],
            mechanism,
            start=position,
            charged=reservation,
            masker=within(piece_start, piece),
        )
        parts.append(result.text)
        total = result.guarantee if total is None else total.merge(result.guarantee)
    assert total is not None  # the text is not blank, so some piece is not
    total = dataclasses.replace(total, releases=1, max_document_tokens=None)  # one document
    mechanism.last_guarantee = total
    return PrivateText("".join(parts), total)


def _check_long(text: str, mechanism: Mechanism, position: int, masker: Mask | None = None) -> int:
    """Raise what privatizing the long ``text`` in pieces would raise midway; returns the
    number of tokens it would charge.

    It tokenizes every piece once more (keeping the tokens would undo the memory bound);
    on a 20 MB line that costs about 1 s of 46."""
    selected = charged = 0
    blank = borrowed_blank()
    warm(blank, mechanism.embeddings, len(text))
    spans, within = _piece_masks(text, masker)
    offset = 0
    for piece in pieces(text, PIECE_CHARS, spans):
        offset, piece_start = offset + len(piece), offset
        with forgetting(blank):
            doc = TokenizedText.from_doc(blank.tokenizer(piece))
        piece_mask = within(piece_start, piece)
        if piece_mask is not None:
            doc = mask_tokens(doc, piece_mask)
        (chosen,) = _chosen([doc])
        try:
            charged += mechanism.check_release([chosen])
        except OOVError as error:  # its token index counts from the start of the piece
            token = None if error.token is None else error.token + selected
            raise _oov_in_text(position, token) from None
        selected += len(chosen)
    return charged


def privatize_text(
    text: str | bytes, mechanism: Mechanism, *, mask: str | None = None
) -> PrivateText:
    """Privatize one text: tokenize (whitespace kept), privatize every word with
    ``mechanism``, detokenize. Returns :class:`PrivateText` (``.text``, ``.guarantee``).

    Punctuation on :data:`PUNCTUATION` passes through (counted in the guarantee);
    whitespace is kept as layout (not counted). ``mask`` (e.g. ``"identifiers"``) replaces
    what a registered mask finds by ``[...]`` first (:mod:`dxp_plugins.masks`). For many
    texts use :func:`privatize_texts`, which batches the search.
    """
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(
            f"text must be str or bytes, got {type(text).__name__} (for several texts use "
            "privatize_texts)"
        )
    return next(privatize_texts([text], mechanism, mask=mask))


def _privatize_batch(
    texts: list[str],
    mechanism: Mechanism,
    select: Selector | None = None,
    nlp: Any = None,
    start: int = 0,
    charged: Reservation | None = None,
    docs: list[TokenizedText] | None = None,
    expected: int | None = None,
    masker: Mask | None = None,
) -> Iterator[PrivateText]:
    """``texts`` start at index ``start`` of the caller's texts (named in OOV errors);
    ``charged``: see :func:`privatize_tokenized`; ``docs``: the non-blank ``texts`` as
    :func:`tokenize_batch` gave them to :func:`_checked` (their lengths checked there);
    ``expected``: how many tokens :func:`_checked` saw selected in this batch when it did not
    keep them (tokenized again, another count is refused before any noise)."""
    blank = [is_invisible(text) for text in texts]
    if docs is None:
        _check_lengths(texts, blank, nlp, start)
        docs = tokenize_batch(texts, blank, select, nlp, mechanism.embeddings, masker)
        if expected is not None and _selected(_chosen(docs)) != expected:
            raise RuntimeError(
                f"texts {start}-{start + len(texts) - 1} gave other tokens than when they were "
                "counted: select (and nlp) must be a pure function of the text; nothing "
                "was sampled for them"
            )
    selection = None if select is None else getattr(select, "description", "custom selector")
    mask = None if masker is None else masker.name
    try:
        released = privatize_tokenized(docs, mechanism, selection, mask=mask, _charged=charged)
    except OOVError as error:
        raise _relocated(error, blank, start) from None
    # The epsilon of the call, whatever epsilon reads now.
    blank_record = mechanism._record(None if charged is None else charged.epsilon)
    if selection is not None:
        blank_record = dataclasses.replace(blank_record, selection=selection)
    if mask is not None:
        blank_record = dataclasses.replace(blank_record, mask=mask)
    results = iter(zip(docs, released, strict=True))
    is_word = vocabulary_test(mechanism)
    for empty in blank:
        if empty:
            yield PrivateText("", blank_record)
            continue
        doc, (words, guarantee) = next(results)
        yield PrivateText(
            detokenize(words, private_spaces(words, doc.spaces, doc.selected, is_word)), guarantee
        )


def _check_lengths(texts: list[str], blank: list[bool], nlp: Any, start: int) -> None:
    """A tagging pipeline reads each text whole: refuse one longer than its
    ``max_length`` before spaCy does (a blank text is never read)."""
    limit = None if nlp is None else getattr(nlp, "max_length", None)
    if limit is None:
        return
    for position, (text, empty) in enumerate(zip(texts, blank, strict=True), start):
        if len(text) > limit and not empty:
            raise TextTooLongError(document=position, length=len(text), limit=limit)


def _chosen(documents: Sequence[TokenizedText]) -> list[list[str]]:
    """The selected words of each document: what the mechanism privatizes."""
    return [
        [w for w, keep in zip(doc.words, doc.selected, strict=True) if keep] for doc in documents
    ]


def _selected(chosen: Sequence[Sequence[str]]) -> int:
    """How many tokens a batch selected (a pure selector selects as many every time)."""
    return sum(len(words) for words in chosen)


def _relocated(error: OOVError, blank: list[bool], start: int) -> OOVError:
    """A mechanism's OOVError, which counts only the non-blank texts of a batch, naming
    the caller's text instead (an error without a document is returned as it is)."""
    if error.document is None:
        return error
    position = start + [i for i, empty in enumerate(blank) if not empty][error.document]
    return _oov_in_text(position, error.token)


def _oov_in_text(position: int, token: int | None) -> OOVError:
    """The OOV error naming the caller's text ``position`` (never the token itself)."""
    return OOVError(
        f"out-of-vocabulary token in text {position} (token {token}) under oov='raise'",
        document=position,
        token=token,
    )


def selected_token_offset(
    text: str,
    index: int,
    select: Selector | None = None,
    nlp: Any = None,
    mask: str | None = None,
) -> int | None:
    """Where the ``index``-th privatized token of ``text`` starts (a character offset into
    ``text``), tokenized and selected again as :func:`privatize_texts` does (in pieces for a
    long text): an :class:`OOVError`'s ``token`` made findable without quoting the token.
    None when ``text`` has fewer privatized tokens."""
    found = _selected_offset(composed(text), index, select, nlp, resolve_mask(mask))
    return None if found is None else original_offset(text, found)


def _in_pieces(text: str, select: Selector | None, nlp: Any) -> bool:
    """Whether ``text`` (composed) is released in pieces of :data:`PIECE_CHARS`: a long text
    read by the library's own tokenizer with no selection (a pipeline or a selector needs
    the whole Doc), and not layout only. :func:`selected_token_offset` must cut it alike."""
    return len(text) > PIECE_CHARS and select is None and nlp is None and not is_invisible(text)


def _selected_offset(
    text: str, index: int, select: Selector | None, nlp: Any, masker: Mask | None = None
) -> int | None:
    """:func:`selected_token_offset` in ``text`` as tokenized (already composed)."""
    long = _in_pieces(text, select, nlp)
    start, pipeline = 0, borrowed_blank() if nlp is None else nlp
    spans, within = _piece_masks(text, masker)
    for part in pieces(text, PIECE_CHARS, spans) if long else [text]:
        with forgetting(pipeline):
            doc = (pipeline.tokenizer if nlp is None else nlp)(part)
            tokens = TokenizedText.from_doc(doc, None if select is None else select(doc))
        part_mask = within(start, part)
        # A placeholder is not as long as what it hid: offsets from the tokens as read.
        chosen = tokens.selected if part_mask is None else mask_tokens(tokens, part_mask).selected
        offset = start
        for word, space, keep in zip(tokens.words, tokens.spaces, chosen, strict=True):
            if keep:
                if index == 0:
                    return offset
                index -= 1
            offset += len(word) + len(space)
        start += len(part)
    return None
