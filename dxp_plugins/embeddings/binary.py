"""Binary word codes for BRR: a public, data-independent binarization, or the user's 0/1 codes.

The default binarization is SimHash, i.e. sign random projections (Charikar, STOC 2002):
bit k of a word's code is ``[phi(w) . r_k > 0]`` for public directions ``r_k`` drawn from a
fixed public seed (:data:`PUBLIC_SEED`) as blocks of Haar-random orthonormal vectors. Each
code is a pure function of its own vector -- nothing is learned from the vocabulary or from
any text -- so the codebook is as public as the embeddings (PRIVACY.md 3, 7). A bit differs
between two words with probability angle/pi, so Hamming distance tracks the angle between
vectors and neighbourhoods are kept approximately; :func:`neighbour_overlap` measures how
well (on GloVe 6B 50d, 256 bits keep about half of each word's 10 nearest neighbours).

User codes are validated (PRIVACY.md 26): a 2-D array of 0/1 values, one row of equal length
per word. Codes are stored packed (8 bits per byte, zero padding at the end of each row,
which leaves Hamming distances unchanged).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from .._compat import renamed_properties
from .._validation import check_int
from ..errors import DxpWarning, warn
from .table import _immutable

if TYPE_CHECKING:
    from .table import EmbeddingTable

#: Seed of the public projection directions (any fixed public constant works).
PUBLIC_SEED = 20_240_517
#: Default code length.
DEFAULT_N_BITS = 256
#: Scratch bytes per block of rows (float64 projections, unpacked bits, BRR's uniforms):
#: memory stays bounded whatever the vocabulary size and code length.
BLOCK_BYTES = 32 << 20

_POPCOUNT = np.array([bin(value).count("1") for value in range(256)], dtype=np.uint8)


def projection(dim: int, n_bits: int, seed: int = PUBLIC_SEED) -> np.ndarray:
    """Public ``(dim, n_bits)`` directions: stacked Haar-random orthonormal blocks."""
    dim = check_int(dim, "dim", minimum=1)
    n_bits = check_int(n_bits, "n_bits", minimum=1)
    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(-(-n_bits // dim)):
        q, r = np.linalg.qr(rng.standard_normal((dim, dim)))
        blocks.append(q * np.where(np.diag(r) < 0, -1.0, 1.0))  # Haar: fix QR's signs
    return np.concatenate(blocks, axis=1)[:, :n_bits]


def block_rows(bytes_per_row: int) -> int:
    """Rows per block: as many as fit in :data:`BLOCK_BYTES` (at least one)."""
    return max(1, BLOCK_BYTES // max(1, bytes_per_row))


def row_blocks(count: int, bytes_per_row: int) -> Iterator[slice]:
    """Consecutive row slices covering ``count`` rows, each of :func:`block_rows` rows."""
    step = block_rows(bytes_per_row)
    for start in range(0, count, step):
        yield slice(start, min(start + step, count))


def simhash(vectors: Any, n_bits: int = DEFAULT_N_BITS, seed: int = PUBLIC_SEED) -> np.ndarray:
    """Sign-random-projection bits (bool, one row per vector) of float vectors."""
    n_bits = check_int(n_bits, "n_bits", minimum=1)
    return np.unpackbits(simhash_packed(vectors, n_bits, seed), axis=1, count=n_bits).view(bool)


def simhash_packed(
    vectors: Any, n_bits: int = DEFAULT_N_BITS, seed: int = PUBLIC_SEED
) -> np.ndarray:
    """:func:`simhash` packed 8 bits per byte, computed in blocks of rows: the float64
    projections never take more than :data:`BLOCK_BYTES` (not 8 bytes per bit of the table)."""
    data = np.atleast_2d(np.asarray(vectors))
    directions = projection(data.shape[1], n_bits, seed)
    width = directions.shape[1]
    out = np.empty((len(data), -(-width // 8)), dtype=np.uint8)
    scratch = np.empty((min(len(data), block_rows(8 * width)), width), dtype=np.float64)
    for rows in row_blocks(len(data), 8 * width):
        product = scratch[: rows.stop - rows.start]
        np.matmul(np.asarray(data[rows], dtype=np.float64), directions, out=product)
        out[rows] = np.packbits(product > 0.0, axis=1)
    return out


#: :func:`_warn_if_offset` judges tables of at least this many words (fewer say little),
#: and warns when this share of the bits is (nearly) constant over the words.
OFFSET_MIN_WORDS = 1000
OFFSET_CONSTANT_SHARE = 0.25


def _warn_if_offset(packed: np.ndarray, n_bits: int) -> None:
    """Warn when many SimHash bits are the same for nearly every word: the projections
    pass through the origin, so vectors sharing a large common offset (or all non-negative)
    fall on one side of most hyperplanes, their codes collide and Hamming neighbourhoods
    (and the privacy ratio matched to them) degrade (+20 on word2vec 300d leaves 383
    distinct codes for 10k words). The guarantee is unchanged."""
    words = len(packed)
    if words < OFFSET_MIN_WORDS:
        return
    ones = np.zeros(8 * packed.shape[1], dtype=np.int64)
    for rows in row_blocks(words, 8 * packed.shape[1]):
        ones += np.unpackbits(packed[rows], axis=1).sum(axis=0, dtype=np.int64)
    share = ones[:n_bits] / words
    constant = int(np.count_nonzero((share < 0.05) | (share > 0.95)))
    if constant < OFFSET_CONSTANT_SHARE * n_bits:
        return
    warn(
        f"SimHash codes: {constant} of {n_bits} bits are the same for 95% or more of the "
        f"{words} words, so many codes collide (BRR's Hamming neighbours and privacy ratio "
        f"degrade): the vectors share a large common offset. Centre them first, "
        f"EmbeddingTable(words, vectors - vectors.mean(axis=0)) (Euclidean distances, so "
        f"Madlib's and TEM's laws, are unchanged by the shift)",
        DxpWarning,
    )


def check_codes(codes: Any) -> np.ndarray:
    """``codes`` as a bool matrix if it is a non-empty 2-D array of 0/1 values, else ValueError."""
    try:
        array = np.asarray(codes)
    except (TypeError, ValueError) as error:  # ragged rows
        raise ValueError("codes must be rows of 0/1 values of equal length") from error
    if array.dtype == object:
        raise ValueError("codes must be rows of 0/1 values of equal length")
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(f"codes must be a non-empty 2-D array, got shape {array.shape}")
    if array.dtype != bool:
        if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
            raise ValueError(f"codes must hold 0/1 values, got dtype {array.dtype}")
        if not np.isin(array, (0, 1)).all():
            raise ValueError("codes must hold only 0 and 1")
        array = array.astype(bool)
    return array


def hamming(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamming distances between packed codes ``a`` (m, B) and ``b`` (k, B): (m, k) int."""
    a = np.asarray(a, dtype=np.uint8)
    b = np.asarray(b, dtype=np.uint8)
    out = np.zeros((len(a), len(b)), dtype=np.int64)
    for column in range(a.shape[1]):
        out += _POPCOUNT[np.bitwise_xor(a[:, column, None], b[None, :, column])]
    return out


class BinaryCodes:
    """Packed binary codes, one row per vocabulary word, with a fingerprint.

    Build with :meth:`simhash` (the public binarization) or from 0/1 ``bits``.
    """

    def __init__(self, bits: Any, *, source: str = "user") -> None:
        checked = check_codes(bits)
        self._store(np.packbits(checked, axis=1), int(checked.shape[1]), source)

    @classmethod
    def _from_packed(cls, packed: np.ndarray, n_bits: int, source: str) -> BinaryCodes:
        """Codes already packed by the library (zero padding): nothing to validate."""
        codes = cls.__new__(cls)
        codes._store(packed, n_bits, source)
        return codes

    def _store(self, packed: np.ndarray, n_bits: int, source: str) -> None:
        self._n_bits = n_bits
        # Over bytes, like EmbeddingTable's vectors: the fingerprint covers these codes,
        # so they can never be made writable again.
        self._packed = _immutable(np.asarray(packed, dtype=np.uint8))
        self.source = source
        self._fingerprint: str | None = None

    @classmethod
    def simhash(
        cls, table: EmbeddingTable, n_bits: int = DEFAULT_N_BITS, seed: int = PUBLIC_SEED
    ) -> BinaryCodes:
        """SimHash codes of a table's vectors, cached on the table."""
        n_bits = check_int(n_bits, "n_bits", minimum=1)
        key = ("simhash-codes", n_bits, seed)
        if key not in table.cache:
            # Packed block by block: never an unpacked (words x L) matrix.
            packed = simhash_packed(table.vectors, n_bits, seed)
            _warn_if_offset(packed, n_bits)
            table.cache[key] = cls._from_packed(packed, n_bits, "simhash")
        codes: BinaryCodes = table.cache[key]
        return codes

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(renamed_properties(type(self), state))  # earlier builds' pickles
        # An unpickled array owns its memory and could be made writable again.
        self._packed = _immutable(np.asarray(self._packed, dtype=np.uint8))

    @property
    def n_bits(self) -> int:
        """The code length L (read-only: the packed rows and the fingerprint depend on it)."""
        return self._n_bits

    @property
    def packed(self) -> np.ndarray:
        """The codes, 8 bits per byte, zero-padded rows (a read-only array)."""
        return self._packed

    def __len__(self) -> int:
        return len(self.packed)

    @property
    def nbytes(self) -> int:
        """Bytes of the packed codes."""
        return int(self.packed.nbytes)

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the code length and the packed codes."""
        if self._fingerprint is None:
            digest = hashlib.sha256(f"dxp-codes-v1:{len(self)}x{self.n_bits}:".encode())
            digest.update(self.packed.tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def bits(self) -> np.ndarray:
        """The codes as a bool matrix (unpacked)."""
        return np.unpackbits(self.packed, axis=1, count=self.n_bits).astype(bool)

    def majority(self) -> np.ndarray:
        """Packed code of the per-bit majority (ties -> 0): a public point of the code space."""
        ones = np.zeros(self.n_bits, dtype=np.int64)
        for rows in row_blocks(len(self), self.n_bits):
            bits = np.unpackbits(self.packed[rows], axis=1, count=self.n_bits)
            ones += bits.sum(axis=0, dtype=np.int64)
        return np.packbits(ones * 2 > len(self))

    def bits_of(self, ids: np.ndarray) -> np.ndarray:
        """Unpacked bits of some rows."""
        return np.unpackbits(self.packed[ids], axis=1, count=self.n_bits).astype(bool)

    def __repr__(self) -> str:
        return f"BinaryCodes({len(self)} codes x {self.n_bits} bits, {self.source})"


def neighbour_overlap(
    table: EmbeddingTable,
    codes: BinaryCodes,
    *,
    k: int = 10,
    n_words: int = 1000,
    metric: str = "euclidean",
) -> float:
    """Mean share of each word's ``k`` nearest neighbours kept by the binary codes.

    For the ``n_words`` most frequent words (row order when no rank is known), compare the
    ``k`` nearest other words by float ``metric`` (``"euclidean"`` or ``"angular"``, exact
    faiss search) with the ``k`` nearest by Hamming distance (exact faiss binary search;
    ties at the k-th distance resolved in faiss's order).
    """
    from .._faiss_runtime import _faiss

    faiss = _faiss()

    k = check_int(k, "k", minimum=1)
    n_words = check_int(n_words, "n_words", minimum=1)
    if metric not in ("euclidean", "angular"):
        raise ValueError("metric must be 'euclidean' or 'angular'")
    if len(codes) != len(table):
        raise ValueError("codes must have one row per table word")
    queries = table.frequency_order()[: min(n_words, len(table))]
    k = min(k, len(table) - 1)
    vectors = np.ascontiguousarray(table.vectors, dtype=np.float32)
    if metric == "angular":
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    flat = faiss.IndexFlatL2(table.dim)
    flat.add(vectors)
    _, float_ids = flat.search(vectors[queries], k + 1)
    binary = faiss.IndexBinaryFlat(codes.packed.shape[1] * 8)
    binary.add(np.ascontiguousarray(codes.packed))
    _, code_ids = binary.search(np.ascontiguousarray(codes.packed[queries]), k + 1)
    kept = []
    for query, near, near_codes in zip(queries.tolist(), float_ids, code_ids, strict=True):
        truth = [i for i in near.tolist() if i != query][:k]
        found = [i for i in near_codes.tolist() if i != query][:k]
        kept.append(len(set(truth) & set(found)) / k)
    return float(np.mean(kept))
