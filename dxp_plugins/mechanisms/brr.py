"""BRR: binary randomized response on word codes, then the nearest code.

Carvalho, Vasiloudis, Feyisetan, "BRR: Preserving Privacy of Text Data Efficiently on
Device", Algorithms 2 and 3: each word has a public binary code c(w) of L bits; flip every
bit independently with probability ``1 / (1 + e^epsilon) = expit(-epsilon)``
(:func:`flip_probability`, no overflow up to the largest accepted epsilon) and release the
vocabulary word whose code is nearest in Hamming distance (faiss binary index, ties uniformly
at random: :class:`~dxp_plugins.neighbors.BinaryIndex`).

For codes c, c' at Hamming distance h, any noisy code z and p the flip probability,
``Pr[z | c] / Pr[z | c'] = ((1 - p) / p)^(H(z, c') - H(z, c)) <= ((1 - p) / p)^h``, which is
``e^(epsilon h)``; decoding is post-processing of z. So the release is ``epsilon * d``-private
for d = Hamming distance between codes (PRIVACY.md 7): the guarantee is per Hamming unit, and
:func:`dxp_plugins.calibration.equivalent_epsilon` converts it to other metrics.

Float residual (PRIVACY.md 10): p is ``expit(-epsilon)``, within an ulp of the exact
1 / (1 + e^epsilon), and a bit flips when a uniform double (a multiple of 2^-53) is below
it, so the realised flip probability is that p rounded *up* to a multiple of 2^-53. More
flips only strengthen the guarantee, but the ulp can go either way: at epsilon = 1e-12 the
realised per-bit epsilon is 1.00009 x the stated one (9e-17 nats more), from 1e-11 it
equals it to 6 digits. Above epsilon ~ 36.7 (p < 2^-53) the realised law is about
36.7-private per bit, stronger than stated.

Codes come from the public SimHash binarization (:mod:`dxp_plugins.embeddings.binary`,
``n_bits`` default 256) or from the user (``codes=``, validated 0/1 rows). OOV tokens under
``oov="unk"`` use a public UNK code: SimHash of the table's UNK point, or the per-bit
majority of user codes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._random import RandomSource
from .._validation import check_int
from ..embeddings.binary import (
    DEFAULT_N_BITS,
    BinaryCodes,
    check_codes,
    hamming,
    row_blocks,
    simhash_packed,
)
from ..embeddings.table import OOV_ID, EmbeddingTable
from ..guarantee import Accountant, Guarantee, OOVPolicy
from ..neighbors import BinaryIndex, exact_index_nbytes, get_binary_index
from .base import Mechanism

#: ``distribution()`` enumerates all 2^L noisy codes up to this length.
MAX_ENUMERATED_BITS = 12


def flip_probability(epsilon: float) -> float:
    """Randomized-response flip probability ``1 / (1 + e^epsilon)`` (BRR, Algorithm 2),
    computed as expit(-eps)."""
    from scipy.special import expit

    return float(expit(-epsilon))


def sample_flips(rng: np.random.Generator, count: int, n_bits: int, epsilon: float) -> np.ndarray:
    """Independent bit flips (bool, ``count`` x ``n_bits``), each with flip_probability
    (BRR, Algorithm 2)."""
    return rng.random((count, n_bits)) < flip_probability(epsilon)


def code_table(words: Any, codes: Any) -> tuple[EmbeddingTable, np.ndarray]:
    """A table for a vocabulary known only by its 0/1 codes (its vectors are the codes,
    validated like any table's), and the codes checked."""
    bits = check_codes(codes)
    return EmbeddingTable(words, bits.astype(np.float32), name="binary-codes"), bits


class BRR(Mechanism):
    """BRR (Algorithms 2-3): ``epsilon * hamming``-private word replacement on binary codes.

    Carvalho, Vasiloudis, Feyisetan, "BRR: Preserving Privacy of Text Data Efficiently on
    Device" (the module docstring has the details).

    Parameters
    ----------
    embeddings, epsilon, oov, random_state, accountant:
        As for every :class:`~dxp_plugins.mechanisms.base.Mechanism`; ``embeddings`` may
        also be codes without a table, a mapping ``{word: 0/1 code}`` (the same as
        :meth:`from_codes`).
    n_bits:
        Code length of the SimHash binarization (default 256).
    codes:
        User codes instead: a (words x L) array of 0/1 (or a
        :class:`~dxp_plugins.embeddings.binary.BinaryCodes`), one row per table word.
    """

    name = "brr"
    #: The guarantee is per bit of Hamming distance between codes.
    metric = "hamming"

    def __init__(
        self,
        embeddings: EmbeddingTable | str | Mapping[str, Any],
        epsilon: float,
        *,
        n_bits: int | None = None,
        codes: Any = None,
        oov: OOVPolicy = "unk",
        random_state: int | RandomSource | None = None,
        accountant: Accountant | None = None,
    ) -> None:
        if isinstance(embeddings, BinaryCodes | np.ndarray):
            raise TypeError(
                "BRR takes an EmbeddingTable, a registry name or a {word: code} mapping, not "
                "bare codes: for codes alone use BRR.from_codes(words, codes, epsilon), or "
                "BRR(table, epsilon, codes=codes)"
            )
        if isinstance(embeddings, Mapping):
            if codes is not None:
                raise TypeError("codes given twice: as the {word: code} mapping and as codes=")
            embeddings, codes = code_table(list(embeddings), list(embeddings.values()))
        super().__init__(
            embeddings, epsilon, oov=oov, random_state=random_state, accountant=accountant
        )
        self.check_options(n_bits=n_bits)
        if codes is None:
            length = DEFAULT_N_BITS if n_bits is None else n_bits
            self._codes = BinaryCodes.simhash(self.embeddings, length)
            self._unk_code = simhash_packed(self.embeddings.unk_vector(), length)[0]
        else:
            self._codes = codes if isinstance(codes, BinaryCodes) else BinaryCodes(codes)
            if len(self.codes) != len(self.embeddings):
                raise ValueError(
                    f"codes has {len(self.codes)} rows but the vocabulary has "
                    f"{len(self.embeddings)} words"
                )
            if n_bits is not None and check_int(n_bits, "n_bits") != self.codes.n_bits:
                raise ValueError(f"n_bits={n_bits} but the codes have {self.codes.n_bits} bits")
            self._unk_code = self.codes.majority()

    @classmethod
    def check_options(cls, *, n_bits: Any = None, **_: Any) -> None:
        """A code length of at least one bit (codes are checked against the table)."""
        if n_bits is not None:
            check_int(n_bits, "n_bits", minimum=1)

    @classmethod
    def from_codes(cls, words: Any, codes: Any, epsilon: float, **params: Any) -> BRR:
        """BRR over a vocabulary given only as words and their 0/1 codes."""
        table, bits = code_table(words, codes)
        return cls(table, epsilon, codes=bits, **params)

    @property
    def codes(self) -> BinaryCodes:
        """The public codes, one row per table word (fixed)."""
        return self._codes

    @property
    def n_bits(self) -> int:
        """The code length L (the codes' own; fixed)."""
        return self._codes.n_bits

    @property
    def binary_index(self) -> BinaryIndex:
        """The (cached) faiss binary index over the codes."""
        return get_binary_index(self.codes.packed, self.embeddings.cache, self.codes.fingerprint)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the table fingerprint and the codes: what guarantees record."""
        import hashlib

        text = f"{self.embeddings.fingerprint}:{self.codes.fingerprint}"
        return hashlib.sha256(text.encode()).hexdigest()

    @functools.cached_property
    def ledger_unit(self) -> str:
        """Epsilon per bit of Hamming distance between two words' codes (accountants add only
        equal units)."""
        return f"bit of Hamming distance between codes {self.codes.fingerprint[:16]}"

    def guarantee(self, tokens_privatized: int, tokens_passed_through: int = 0) -> Guarantee:
        import dataclasses

        record = super().guarantee(tokens_privatized, tokens_passed_through)
        return dataclasses.replace(record, embeddings=self.fingerprint)

    def _input_codes(self, ids: np.ndarray) -> np.ndarray:
        """Packed codes of input ids (``-1`` = the public UNK code)."""
        packed = self.codes.packed[np.maximum(ids, 0)]
        unknown = ids == OOV_ID
        if unknown.any():
            packed[unknown] = self._unk_code
        return packed

    def _prepare_release(self, ids: np.ndarray) -> None:
        self.binary_index  # noqa: B018 -- built before any charge

    def _sample(self, ids: np.ndarray, rng: np.random.Generator, epsilon: float) -> np.ndarray:
        noisy = np.bitwise_xor(self._input_codes(ids), self._flips(rng, len(ids), epsilon))
        return self.binary_index.search(noisy, rng)

    def _flips(self, rng: np.random.Generator, count: int, epsilon: float) -> np.ndarray:
        """Packed flips of every bit of the codes for ``count`` tokens. Drawn in row blocks
        of bounded scratch (8 bytes per uniform): the uniforms come from the stream in the
        same order as one ``(count, L)`` draw, so the flips are those of one draw."""
        n_bits = self.codes.n_bits
        out = np.empty((count, -(-n_bits // 8)), dtype=np.uint8)
        for rows in row_blocks(count, 8 * n_bits):
            flips = sample_flips(rng, rows.stop - rows.start, n_bits, epsilon)
            out[rows] = np.packbits(flips, axis=1)
        return out

    def distribution(self, word: str | int) -> np.ndarray:
        """Exact output law by enumerating all 2^L noisy codes (L <= 12 bits, and 2^L x
        words <= 2^24)."""
        if self.n_bits > MAX_ENUMERATED_BITS:
            raise NotImplementedError(
                f"exact BRR laws enumerate 2^L codes; L={self.n_bits} > {MAX_ENUMERATED_BITS}"
            )
        row = self._input_id(word)
        decode = self._decoding_table()
        flips = hamming(_every_code(self.n_bits), self._input_codes(np.array([row]))).ravel()
        p = flip_probability(self.epsilon)
        weights = np.exp(flips * np.log(p) + (self.n_bits - flips) * np.log1p(-p))
        law = weights @ decode
        return law / law.sum()

    def _decoding_table(self) -> np.ndarray:
        """``T[z, y]``: probability that noisy code z decodes to word y (uniform ties)."""
        key = ("brr-decoding", self.codes.fingerprint)
        table = self.embeddings.cache.get(key)
        if table is None:
            if (2**self.n_bits) * len(self.codes) > 1 << 24:
                raise NotImplementedError(
                    "the vocabulary is too large to enumerate exactly (2^n_bits x words "
                    "must be <= 2^24); use Monte Carlo (calibration method='monte_carlo')"
                )
            distances = hamming(_every_code(self.n_bits), self.codes.packed)
            nearest = distances == distances.min(axis=1, keepdims=True)
            table = nearest / nearest.sum(axis=1, keepdims=True)
            self.embeddings.cache[key] = table
        assert isinstance(table, np.ndarray)
        return table

    def storage(self) -> dict[str, float]:
        """Bytes BRR needs (codes + binary index) against Madlib (vectors + float index)."""
        madlib_index = exact_index_nbytes(self.embeddings)
        brr_codes = self.codes.nbytes
        brr_index = self.binary_index.nbytes
        madlib_vectors = int(self.embeddings.vectors.nbytes)
        brr_total = brr_codes + brr_index
        madlib_total = madlib_vectors + madlib_index
        return {
            "brr_codes": brr_codes,
            "brr_index": brr_index,
            "brr_total": brr_total,
            "madlib_vectors": madlib_vectors,
            "madlib_index": madlib_index,
            "madlib_total": madlib_total,
            "ratio": brr_total / madlib_total,
            "saving": 1.0 - brr_total / madlib_total,
        }

    def _settings(self) -> dict[str, Any]:
        settings = super()._settings()
        settings["n_bits"] = self.n_bits
        return settings


def _every_code(n_bits: int) -> np.ndarray:
    """All 2^n_bits codes, packed, in counting order."""
    values = np.arange(2**n_bits)[:, None] >> np.arange(n_bits)[::-1]
    return np.packbits((values & 1).astype(bool), axis=1)
