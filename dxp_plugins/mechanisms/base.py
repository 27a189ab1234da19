"""The shared base of every word mechanism: lookup, OOV policy, batching, accounting.

Subclasses implement one method, :meth:`Mechanism._sample`, mapping a batch of vocabulary
ids (``-1`` = the public UNK point) to private output ids with fresh noise per entry.
Everything that must behave identically across mechanisms -- epsilon validation, the OOV
policy (PRIVACY.md 20), the accountant check *before* noise is drawn (13), guarantee records
(12), the randomness policy (16-19) -- lives here once.
"""

from __future__ import annotations

import dataclasses
import functools
import string
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._compat import renamed_properties
from .._random import FreshTaskToken, RandomSource
from .._validation import check_choice, check_epsilon, check_int
from ..embeddings.table import OOV_ID, EmbeddingTable
from ..errors import DxpWarning, OOVError, OOVWarning, PrivacyWarning, warn
from ..guarantee import OOV_POLICIES, Accountant, Guarantee, OOVPolicy

#: Settings a subclass may assign once (in ``__init__``) but never again.
_SET_ONCE = frozenset({"metric"})
#: The module of each name the library's own mechanisms record: only its classes may record
#: it (a map, not ``dxp_plugins.mechanisms.<name>``: a name such as ``laplace-coord`` is no
#: module's).
BUILTIN_MODULES = {
    "madlib": "dxp_plugins.mechanisms.madlib",
    "tem": "dxp_plugins.mechanisms.tem",
    "brr": "dxp_plugins.mechanisms.brr",
}
BUILTIN_NAMES = frozenset(BUILTIN_MODULES)

#: A release under ``oov="unk"`` warns (:class:`~dxp_plugins.OOVWarning`) when at least
#: ``OOV_WARN_MIN`` of its tokens, and more than ``OOV_WARN_SHARE`` of them, are out of
#: vocabulary: a few names in a sentence are expected, a text the table cannot read is not.
OOV_WARN_MIN = 20
OOV_WARN_SHARE = 0.5


class Reservation:
    """Tokens charged at once, at one epsilon, for a release made in parts
    (:meth:`Mechanism._reserve`). Each part takes its tokens before its noise is drawn, so
    no part is sampled beyond the charge; ``left`` is what the parts have not taken yet."""

    __slots__ = ("epsilon", "left", "tokens")

    def __init__(self, epsilon: float, tokens: int) -> None:
        self.epsilon = epsilon
        self.tokens = tokens
        self.left = tokens

    def take(self, tokens: int) -> None:
        """Take ``tokens`` of the charge for a part (sampled at :attr:`epsilon`); raises
        before that part draws any noise if it would exceed the charge."""
        if tokens > self.left:
            raise RuntimeError(
                "a part of the release privatized more tokens than were charged: "
                "no noise was drawn for it"
            )
        self.left -= tokens


#: Punctuation that splitting text on whitespace leaves attached to a word.
_GLUED = string.punctuation


class Mechanism(FreshTaskToken, ABC):
    """A word-level metric-DP mechanism over a public :class:`EmbeddingTable`.

    Parameters
    ----------
    embeddings:
        The public vocabulary and vectors (or a registry name such as ``"glove-6b-50d"``).
    epsilon:
        Privacy parameter per unit of the mechanism's metric, per token.
    oov:
        One of :data:`OOV_POLICIES`.
    random_state:
        None (default) for a cryptographically secure generator; an int to opt in to
        reproducible, seeded noise (warns; recorded as ``"seeded"``); or a
        :class:`~dxp_plugins._random.RandomSource` owned by a front door (so a lazily built
        mechanism keeps the stream of the process that configured it, PRIVACY.md 19).
    accountant:
        Shared :class:`~dxp_plugins.guarantee.Accountant` (default: a private one).
    """

    #: The name guarantees record releases under: every class sets its own (a subclass
    #: does not inherit it, see :meth:`_check_name`).
    name: ClassVar[str]
    #: The metric the guarantee is stated in: a class attribute, or set once in ``__init__``
    #: (TEM's depends on its options); either way it cannot be reassigned.
    metric: str
    #: Tokens per internal batch (bounds memory on huge inputs, PRIVACY.md 24).
    chunk_size: ClassVar[int] = 8192

    def __init__(
        self,
        embeddings: EmbeddingTable | str,
        epsilon: float,
        *,
        oov: OOVPolicy = "unk",
        random_state: int | RandomSource | None = None,
        accountant: Accountant | None = None,
    ) -> None:
        self._check_name()
        if isinstance(embeddings, str):
            from ..embeddings import load_embeddings

            embeddings = load_embeddings(embeddings)
        if not isinstance(embeddings, EmbeddingTable):
            raise TypeError(
                "embeddings must be an EmbeddingTable or a registry name (gensim vectors: "
                "dxp_plugins.EmbeddingTable.from_keyed_vectors(kv))"
            )
        self._embeddings = embeddings
        self.epsilon = epsilon
        self._oov = check_choice(oov, "oov", OOV_POLICIES)
        if self.oov == "passthrough":
            warn(
                "oov='passthrough' releases out-of-vocabulary tokens unchanged (unprotected)",
                PrivacyWarning,
            )
        self._random = (
            random_state if isinstance(random_state, RandomSource) else RandomSource(random_state)
        )
        self.accountant = accountant if accountant is not None else Accountant.default()
        self.last_guarantee: Guarantee | None = None

    @classmethod
    def _check_name(cls) -> None:
        """Guarantees record (and merge) releases under the class's ``name``: a class
        that does not set its own would be recorded as its parent (a Madlib subclass with
        other noise as Madlib), and only the library's classes may record a built-in's."""
        name = cls.__dict__.get("name")
        if not isinstance(name, str) or not name.strip():
            parent = getattr(cls, "name", None)
            inherited = f" (not {parent!r}, its parent's)" if isinstance(parent, str) else ""
            raise TypeError(
                f"{cls.__name__} must set its own class attribute name{inherited}: a str "
                "naming the mechanism, which its guarantees record"
            )
        if name in BUILTIN_MODULES and cls.__module__ != BUILTIN_MODULES[name]:
            raise TypeError(
                f"{cls.__name__}.name {name!r} is a built-in mechanism's name: its "
                "guarantees would read as that mechanism's; choose another"
            )

    def __setattr__(self, name: str, value: Any) -> None:
        # Settings without a setter are fixed when the mechanism is built: its codes,
        # caches, guarantee record and ledger unit derive from them, and a plain attribute
        # would let them disagree (a BRR told n_bits=7 flipped 7 of its 8 bits).
        fixed = getattr(type(self), name, None)
        if (
            isinstance(fixed, functools.cached_property)
            or (isinstance(fixed, property) and fixed.fset is None)
            or (name in _SET_ONCE and (name in self.__dict__ or fixed is not None))
        ):
            kind = type(self).__name__
            raise AttributeError(
                f"{kind}.{name} is read-only: it is fixed when the mechanism is built (its "
                f"guarantee and the state built from it must agree); build a new {kind} "
                "with the settings you want"
            )
        super().__setattr__(name, value)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._check_name()  # a pickle made before the check must not record a parent's name
        # Pickles of builds whose settings were plain attributes load under the new names.
        self.__dict__.update(renamed_properties(type(self), state))

    # -- settings: epsilon and the accountant can be reassigned (validated); the rest is fixed
    @property
    def epsilon(self) -> float:
        """Privacy parameter per unit of the metric, per token (validated on assignment)."""
        return self._epsilon

    @epsilon.setter
    def epsilon(self, value: float) -> None:
        self._epsilon = check_epsilon(value)

    @property
    def accountant(self) -> Accountant:
        """The :class:`~dxp_plugins.guarantee.Accountant` charged before any noise is drawn
        (validated on assignment)."""
        return self._accountant

    @accountant.setter
    def accountant(self, value: Accountant) -> None:
        if not isinstance(value, Accountant):
            raise TypeError("accountant must be an Accountant")
        self._accountant = value

    @property
    def embeddings(self) -> EmbeddingTable:
        """The public vocabulary and vectors (fixed)."""
        return self._embeddings

    @property
    def oov(self) -> str:
        """The OOV policy, one of :data:`OOV_POLICIES` (fixed: ``"passthrough"`` is an
        explicit, warned opt-in at construction)."""
        return self._oov

    @classmethod
    def check_options(cls, **options: Any) -> None:
        """Raise TypeError/ValueError for option values no vocabulary could make valid.

        The doors call it when they are configured (``add_pipe``, ``TextPrivatizer``, the
        CLI), before any embeddings are loaded, so that a bad value fails there and not on
        the first document. Checks that need the table stay in ``__init__``; option names
        are checked against the constructor's signature.
        """
        return

    # -- what subclasses implement ---------------------------------------------------------
    @abstractmethod
    def _sample(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        """Private output ids for input ids, fresh noise per entry: one row id in
        ``[0, len(self.embeddings))`` per input id (an input ``-1`` is the public UNK
        point; an output is always a vocabulary row, checked by :meth:`_sampled`).

        ``epsilon`` is the value the release was charged at: draw the noise at it, never at
        ``self.epsilon``, which another thread may reassign during the release.
        """

    # -- public API ------------------------------------------------------------------------
    def distribution(self, word: str | int) -> np.ndarray:
        """The exact output law of ``word`` over the vocabulary (float64, sums to 1).

        Mechanisms with a closed form (TEM; BRR on small codes) override this; calibration
        and exact-law tests use it. Others raise NotImplementedError (use Monte Carlo).
        """
        raise NotImplementedError(f"{self.name} has no closed-form output law")

    def _input_id(self, word: str | int) -> int:
        """Row id of a word (normalised lookup, OOV -> -1 under the OOV policy) or an id."""
        if isinstance(word, str):
            row = int(self.embeddings.lookup([word])[0])
            if row == OOV_ID and self.oov != "unk":
                raise OOVError(f"out-of-vocabulary word under oov={self.oov!r}")
            return row
        row = check_int(word, "word id")
        if not OOV_ID <= row < len(self.embeddings):
            raise ValueError(f"id must lie in [-1, {len(self.embeddings)})")
        return row

    @functools.cached_property
    def ledger_unit(self) -> str:
        """What this mechanism's epsilon is per; an accountant adds only equal units. Tables
        with one name and the same most frequent row (the first without a rank; e.g.
        glove-6b-50d at any ``vocab_size``) count as one space; tables of different files
        do not."""
        import hashlib

        metric = getattr(self, "metric", None)
        if not isinstance(metric, str) or not metric.strip():
            raise TypeError(
                f"{type(self).__name__} must set metric (a class attribute, or once in "
                "__init__): the str naming the distance its epsilon is per"
            )
        table = self.embeddings
        if table.name is None or len(table) == 0:
            space = table.fingerprint[:16]
        else:
            rank = table.frequency_rank
            top = 0 if rank is None else int(np.argmin(rank))
            first = table.words[top].encode() + np.asarray(table.vectors[top]).tobytes()
            space = f"{table.name} ({hashlib.sha256(first).hexdigest()[:8]})"
        return f"unit of {metric} distance between {space} vectors"

    @property
    def rng_mode(self) -> str:
        """``"secure"`` or ``"seeded"``."""
        return self._random.mode

    def guarantee(self, tokens_privatized: int, tokens_passed_through: int = 0) -> Guarantee:
        """A record for these counts at the current epsilon: hypothetical, no release is
        made and nothing is charged (the record of a real release is
        :attr:`last_guarantee`, or the ``guarantee`` of what the doors return). It is the
        hook a mechanism overrides to describe its releases (``docs/plugins.md``).

        Every token a mechanism passes through is a word released raw (an OOV token under
        ``oov="passthrough"``: it privatizes every other token it is given), so
        ``words_passed_through`` is ``tokens_passed_through``."""
        return Guarantee(
            mechanism=self.name,
            epsilon=self.epsilon,
            metric=self.metric,
            embeddings=self.embeddings.fingerprint,
            vocab_size=len(self.embeddings),
            tokens_privatized=tokens_privatized,
            tokens_passed_through=tokens_passed_through,
            words_passed_through=tokens_passed_through,
            oov_policy=self.oov,
            rng=self.rng_mode,
        )

    def privatize(self, tokens: Sequence[str]) -> list[str]:
        """One private word per token, fresh noise for every occurrence."""
        checked = self._as_tokens(tokens, "tokens")  # about tokens, not a batch's document 0
        self._warn_if_text_given_as_tokens(checked)
        outputs, _ = self.privatize_batch([tokens])
        return outputs[0]

    def privatize_batch(
        self, documents: Sequence[Sequence[str]]
    ) -> tuple[list[list[str]], list[Guarantee]]:
        """Privatize several token lists in one vectorised pass; one guarantee per list."""
        return self._privatize_batch(documents, charged=None)

    def _privatize_batch(
        self, documents: Sequence[Sequence[str]], charged: Reservation | None
    ) -> tuple[list[list[str]], list[Guarantee]]:
        """:meth:`privatize_batch`; ``charged``: see :meth:`_release`."""
        if isinstance(documents, str):
            raise TypeError("privatize_batch expects a sequence of token lists, not a str")
        docs = [self._as_tokens(doc, f"document {i}") for i, doc in enumerate(documents)]
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
        flat = [token for doc in docs for token in doc]
        ids, released = self._lookup(flat, lengths)
        out_ids, epsilon = self._release(ids[released], charged)
        self._warn_if_mostly_oov(ids)
        words = self.embeddings.word_array()
        output = np.empty(len(flat), dtype=object)
        output[released] = words[out_ids]
        if not released.all():
            passed = np.flatnonzero(~released)
            output[passed] = [flat[i] for i in passed.tolist()]
            self.accountant.record_raw(len(passed))  # OOV words under oov="passthrough"
        bounds = np.r_[0, np.cumsum(lengths)]
        doc_released = np.diff(np.r_[0, np.cumsum(released)][bounds])
        outputs = [output[bounds[i] : bounds[i + 1]].tolist() for i in range(len(docs))]
        record = self._record(epsilon)
        guarantees = [
            dataclasses.replace(
                record,
                tokens_privatized=int(n_released),
                tokens_passed_through=int(n_tokens - n_released),
                words_passed_through=int(n_tokens - n_released),  # OOV words, released raw
            )
            for n_released, n_tokens in zip(doc_released, lengths, strict=True)
        ]
        self.last_guarantee = Guarantee.combine(guarantees)
        return outputs, guarantees

    def _warn_if_mostly_oov(self, ids: np.ndarray) -> None:
        """An :class:`~dxp_plugins.OOVWarning` (counts only, never a token) when most
        tokens of a release under ``oov="unk"`` were out of vocabulary. ``"raise"`` refused
        them; ``"passthrough"`` warned when it was chosen and counts them in the record."""
        if self.oov != "unk":
            return
        n_oov = int(np.count_nonzero(ids == OOV_ID))
        if n_oov >= OOV_WARN_MIN and n_oov > OOV_WARN_SHARE * len(ids):
            # No counts in the text: Python shows a warning once per call site and text.
            warn(
                f"most tokens of a release (more than half, at least {OOV_WARN_MIN}) were not "
                f"in the embeddings' vocabulary of {len(self.embeddings)} words: under "
                "oov='unk' each was privatized from the table's public UNK point, so the "
                "private text keeps nothing of them. Is the text in the embeddings' "
                "language and vocab_size large enough, or is the selection mostly names?",
                OOVWarning,
            )

    def check_release(self, documents: Sequence[Sequence[str]]) -> int:
        """How many tokens privatizing ``documents`` would charge, raising now the
        OOVError ``oov="raise"`` would raise (and what sampling them could raise); charges
        and draws nothing. A caller that releases one text in parts sums it over the parts
        and charges the total once, before any part draws noise (:meth:`_reserve`)."""
        docs = [self._as_tokens(doc, f"document {i}") for i, doc in enumerate(documents)]
        lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
        ids, released = self._lookup([token for doc in docs for token in doc], lengths)
        if released.any():
            self._prepare_release(ids[released])
        return int(released.sum())

    def _warn_if_text_given_as_tokens(self, flat: Sequence[str]) -> None:
        """A :class:`~dxp_plugins.DxpWarning` (no token quoted) when an out-of-vocabulary
        token holds words separated by whitespace: ``privatize(["my order never arrived"])``
        releases one word for the whole sentence, since it takes words, not text. Only
        :meth:`privatize`, the method a caller gives words: the doors call
        :meth:`privatize_batch` with their tokenizer's tokens, which may hold spaces (spaCy's
        ``merge_entities`` makes "New York" one token)."""
        spaced = [token for token in flat if len(token.split()) > 1]
        if spaced and (self.embeddings._rows(spaced) == OOV_ID).any():
            warn(
                "a token holds several whitespace-separated words (text given where words "
                "were expected?): privatize() and privatize_batch() take tokens and release "
                "one word per token; privatize_text() / privatize_texts() tokenize text",
                DxpWarning,
            )
        # "won!" from text.split(): out of the vocabulary although "won" is in it, so it
        # is privatized as an unknown word.
        # Only a word of two letters or more, not behind "#" or "@": "#hockey", "-1",
        # "5%", ":p" are tokens of their own.
        glued = [
            (token, stem)
            for token in flat
            if len(token) > 2
            and (token[0] in _GLUED or token[-1] in _GLUED)
            and token[0] not in "#@"
            and len(stem := token.strip(_GLUED)) > 1
            and stem.isalpha()
        ]
        if glued:
            rows = self.embeddings._rows([token for token, _ in glued])
            bare = self.embeddings._rows([stem for _, stem in glued])
            if ((rows == OOV_ID) & (bare != OOV_ID)).any():
                warn(
                    "a token is a known word with punctuation attached (text split on "
                    f"whitespace?): out of the vocabulary as given, it meets oov={self.oov!r} "
                    "instead of being privatized as that word; privatize_text() / "
                    "privatize_texts() tokenize text, splitting punctuation off",
                    DxpWarning,
                )

    def _lookup(self, flat: list[str], lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Row ids of the tokens and which of them are released (all but OOV tokens under
        ``oov="passthrough"``); raises OOVError under ``oov="raise"``."""
        ids = self.embeddings._rows(flat)  # every token checked by _as_tokens
        oov = ids == OOV_ID
        if self.oov == "raise" and oov.any():
            first = int(np.flatnonzero(oov)[0])
            doc_index = int(np.searchsorted(np.cumsum(lengths), first, side="right"))
            token = first - int(lengths[:doc_index].sum())
            raise OOVError(
                f"out-of-vocabulary token in document {doc_index} (token {token}) "
                "under oov='raise'",
                document=doc_index,
                token=token,
            )
        released = ~oov if self.oov == "passthrough" else np.ones(len(ids), dtype=bool)
        return ids, released

    def privatize_ids(self, ids: Any) -> np.ndarray:
        """Private output ids for vocabulary ids (``-1`` selects the public UNK point)."""
        array = np.asarray(ids)
        if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
            raise ValueError("ids must be a 1-D integer array")  # bool is not an integer dtype
        if array.size and (array.min() < OOV_ID or array.max() >= len(self.embeddings)):
            raise ValueError(f"ids must lie in [-1, {len(self.embeddings)})")
        array = array.astype(np.int64)  # after the range check: uint64 cannot wrap to -1
        out, epsilon = self._release(array)
        record = dataclasses.replace(self._record(epsilon), tokens_privatized=len(array))
        # no id, no release: nothing was charged (PRIVACY.md 22), as LPLP records no document
        self.last_guarantee = record if len(array) else dataclasses.replace(record, releases=0)
        return out

    # -- shared machinery --------------------------------------------------------------------
    def _release(
        self, ids: np.ndarray, charged: Reservation | None = None
    ) -> tuple[np.ndarray, float]:
        """Prepare, key the generator, charge the accountant, then sample in bounded chunks.

        Returns the output ids and the epsilon of the release: ``self.epsilon`` read once,
        so the charge, the noise and the record agree even if another thread reassigns it
        meanwhile. ``charged``: the caller's :class:`Reservation` (a release in parts, see
        :meth:`_reserve`): these ids are taken from it and sampled at its epsilon, not
        charged again. No ids: nothing is charged, nor counted as a release (PRIVACY.md 22).
        """
        epsilon = self.epsilon if charged is None else charged.epsilon
        if len(ids) == 0:
            return np.empty(0, dtype=np.int64), epsilon
        if charged is not None:
            charged.take(len(ids))  # before any noise: never sampled beyond the charge
        self._prepare_release(ids)
        rng = self._random.generator()  # keyed first: a keying that fails spends nothing
        if charged is None:
            self.accountant.charge(epsilon * len(ids), len(ids), unit=self.ledger_unit)
        try:
            chunks = [
                self._sampled(ids[start : start + self.chunk_size], rng, epsilon)
                for start in range(0, len(ids), self.chunk_size)
            ]
        except BaseException:
            if charged is None:  # the record names what the ledger saw, nothing returned
                self.last_guarantee = dataclasses.replace(
                    self._record(epsilon), tokens_privatized=len(ids)
                )
            raise
        return np.concatenate(chunks), epsilon

    def _sampled(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        """:meth:`_sample`, its output checked: a 1-D integer array of one vocabulary row
        per input id (a plugin's ``-1`` would otherwise index the last word, silently)."""
        out = self._sample(ids, rng, epsilon)
        rows = len(self.embeddings)
        if not isinstance(out, np.ndarray):
            got = type(out).__name__
        elif out.shape != ids.shape or not np.issubdtype(out.dtype, np.integer):
            got = f"an array of shape {out.shape} and dtype {out.dtype}"
        elif out.size and (out.min() < 0 or out.max() >= rows):
            got = "ids outside that range"
        else:
            return out
        raise TypeError(
            f"{type(self).__name__}._sample must return a 1-D integer array of {len(ids)} "
            f"row ids in [0, {rows}), one per input id; got {got}"
        )

    def _reserve(self, tokens: int) -> Reservation:
        """Charge ``tokens`` now, for one release made in parts (a long text, a capped
        call): returns the :class:`Reservation`, which each part passes to
        :meth:`_privatize_batch` as ``charged`` so that it is sampled at the epsilon
        charged without being charged again. A refusal happens here, before any part draws
        noise."""
        epsilon = self.epsilon
        if tokens:
            self._random.generator()  # keyed first, as in _release
            self.accountant.charge(epsilon * tokens, tokens, unit=self.ledger_unit)
        return Reservation(epsilon, tokens)

    def _record(self, epsilon: float | None = None) -> Guarantee:
        """The record of a release of no token yet, at the ``epsilon`` of a release
        (default: the current one). Only ``embeddings`` is taken from the :meth:`guarantee`
        hook (BRR names its codes' fingerprint); every other field is what the library
        charges, draws and counts by. A hook delegating to a wrapped Madlib would record an
        identity mechanism's seeded pass-through releases as secure Madlib; one stating a
        mask or another vocabulary size would put a mask no door ran into the statement."""
        return dataclasses.replace(
            Mechanism.guarantee(self, 0, 0),
            epsilon=self.epsilon if epsilon is None else epsilon,
            embeddings=self.guarantee(0, 0).embeddings,
        )

    def _prepare_release(self, ids: np.ndarray) -> None:
        """Raise now what sampling ``ids`` could raise, and build what it builds lazily
        (indexes): called before the accountant is charged, so that a release which cannot
        happen spends nothing. Nothing to do by default."""
        return

    def _points(self, ids: np.ndarray) -> np.ndarray:
        """float64 vectors of ``ids``; ``-1`` gives the public UNK point."""
        points = self.embeddings.vectors[np.maximum(ids, 0)].astype(np.float64)
        unknown = ids == OOV_ID
        if unknown.any():
            points[unknown] = self.embeddings.unk_vector()
        return points

    @staticmethod
    def _as_tokens(doc: Any, name: str) -> Sequence[str]:
        """``doc`` if it is a sequence of str; ``name`` says what it is (``"document 3"``)."""
        if isinstance(doc, str) or not isinstance(doc, Sequence):
            raise TypeError(
                f"{name} must be a sequence of str tokens, got {type(doc).__name__} (for raw "
                "text use dxp_plugins.privatize_text, which tokenizes)"
            )
        for token in doc:
            if not isinstance(token, str):
                raise TypeError(f"{name} holds a {type(token).__name__}, not str")
        return doc

    def _settings(self) -> dict[str, Any]:
        """Public, JSON-ready settings shown in repr and stored by the front doors."""
        return {"epsilon": self.epsilon, "oov": self.oov}

    def __repr__(self) -> str:
        settings = ", ".join(f"{key}={value!r}" for key, value in self._settings().items())
        return f"{type(self).__name__}({self.embeddings!r}, {settings}, rng={self.rng_mode!r})"
