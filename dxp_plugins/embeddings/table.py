"""EmbeddingTable: the public, fixed, fingerprinted vocabulary every mechanism works over.

PRIVACY.md 3 and 26: the vocabulary and its vectors come from public embeddings only; the
table is immutable (read-only vectors, tuple of words) so its fingerprint identifies it for
the lifetime of the object, and privatizing never changes it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._normalize import _DELETE_INVISIBLE, INVISIBLE, normalize, normalize_word, without_dot_above
from .._validation import check_int, check_matrix, check_text
from ..errors import DxpWarning, InvalidTableError, warn

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

#: The id given to out-of-vocabulary tokens by :meth:`EmbeddingTable.lookup`.
OOV_ID = -1


class EmbeddingTable:
    """Words and their float32 vectors, one row per word.

    The table must be public (PRIVACY.md 3): vectors trained on the text being privatized
    put its words and geometry into every guarantee, which then no longer holds for it.

    Parameters
    ----------
    words:
        Unique, non-empty strings; row ``i`` of ``vectors`` belongs to ``words[i]``.
    vectors:
        A finite 2-D real matrix (stored as read-only float32, C order).
    frequency_rank:
        Optional public frequency rank of each row (0 = most frequent), e.g. GloVe's row
        order. Used by ``most_frequent`` and by groupings that need a public order.
    name:
        A human-readable label (the registry name, for example).
    copy:
        Copy ``vectors`` (default) into memory that cannot be made writable again. With
        ``copy=False`` a float32 C-contiguous array is taken over and made read-only; the
        caller hands it over and must not write to it through another reference (the
        fingerprint and every index derived from the table would go stale).
    """

    def __init__(
        self,
        words: Iterable[str],
        vectors: Any,
        *,
        frequency_rank: Any = None,
        name: str | None = None,
        copy: bool = True,
    ) -> None:
        if isinstance(words, str):
            raise TypeError("words must be a sequence of strings, not one str")
        word_tuple = tuple(words)
        if not (set(map(type, word_tuple)) == {str} and all(word_tuple)):  # fast path
            for position, word in enumerate(word_tuple):
                if not isinstance(word, str) or not word:
                    raise InvalidTableError(
                        f"words must be non-empty strings (row {position} is not)"
                    )
            # A subclass (numpy.str_) becomes a plain str, as check_text does for texts.
            word_tuple = tuple(str.__str__(word) for word in word_tuple)
        bad = unusable_words(word_tuple)
        if bad:
            position, reason = bad[0]
            raise InvalidTableError(f"row {position}: a word must not {reason} (PRIVACY.md 26)")
        if len(set(word_tuple)) != len(word_tuple):
            raise InvalidTableError(f"words must be unique ({_first_repeat(word_tuple)})")
        try:
            matrix = check_matrix(vectors)
        except ValueError as error:
            raise InvalidTableError(str(error)) from None
        if matrix.shape[0] != len(word_tuple):
            raise InvalidTableError(
                f"vectors has {matrix.shape[0]} rows but there are {len(word_tuple)} words"
            )
        if copy:
            matrix = _immutable(matrix)
        else:
            matrix.setflags(write=False)
        self._words = word_tuple
        self._vectors = matrix
        self._rank = self._check_rank(frequency_rank, len(word_tuple))
        self._name = name
        self._key_to_id: dict[str, int] | None = None
        self._fingerprint: str | None = None
        #: Derived public structures (nearest-neighbour indexes, ...) keyed by their settings.
        self.cache: dict[Any, Any] = {}

    @staticmethod
    def _check_rank(rank: Any, size: int) -> np.ndarray | None:
        if rank is None:
            return None
        array = np.asarray(rank)
        if array.shape != (size,) or not np.issubdtype(array.dtype, np.integer):
            raise InvalidTableError("frequency_rank must be one integer per word")
        if not np.array_equal(np.sort(array), np.arange(size)):
            raise InvalidTableError("frequency_rank must be a permutation of 0..len(words)-1")
        return _immutable(array.astype(np.int64))

    # -- basic properties -------------------------------------------------------------
    @property
    def words(self) -> tuple[str, ...]:
        """The vocabulary, in row order."""
        return self._words

    @property
    def vectors(self) -> np.ndarray:
        """The read-only float32 matrix, one row per word."""
        return self._vectors

    @property
    def frequency_rank(self) -> np.ndarray | None:
        """Public frequency rank per row (0 = most frequent), or None when unknown."""
        return self._rank

    def frequency_order(self) -> np.ndarray:
        """Row ids, most frequent word first (the inverse of :attr:`frequency_rank`); the
        row order when the rank is unknown."""
        if self._rank is None:
            return np.arange(len(self), dtype=np.int64)
        order = np.empty(len(self._rank), dtype=np.int64)
        order[self._rank] = np.arange(len(self._rank), dtype=np.int64)
        return order

    @property
    def name(self) -> str | None:
        """The human-readable label given at construction. Read-only like the rest of the
        table: it is part of a mechanism's ledger unit, and loads of the same settings share
        one table between the user and the doors."""
        return self._name

    @property
    def dim(self) -> int:
        """Vector dimension n."""
        return int(self._vectors.shape[1])

    def __len__(self) -> int:
        return len(self._words)

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the shape, the words (UTF-8, NUL-separated: no word holds NUL), the
        vectors (little-endian float32) and the frequency rank (little-endian int64; it
        decides ``most_frequent``, frequency groupings and weights, so two tables that
        differ only there are different). Byte orders are explicit: the same table has the
        same fingerprint on every host."""
        if self._fingerprint is None:
            digest = hashlib.sha256()
            digest.update(f"dxp-embeddings-v2:{len(self)}x{self.dim}:".encode())
            digest.update("\0".join(self._words).encode("utf-8"))
            digest.update(np.ascontiguousarray(self._vectors, dtype="<f4").data)
            if self._rank is None:
                digest.update(b"rank:none")
            else:
                digest.update(b"rank:" + self._rank.astype("<i8").tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

    def __getstate__(self) -> dict[str, Any]:
        # Derived structures (faiss indexes, lookup dict) are rebuilt on demand. The
        # fingerprint, computed lazily, is always in: the same table pickles to the same
        # bytes whatever was computed on it (joblib's Memory hashed a used table otherwise).
        state = self.__dict__.copy()
        state["cache"] = {}
        state["_key_to_id"] = None
        state["_fingerprint"] = self.fingerprint
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "name" in state:  # pickled before the name was read-only
            state = dict(state)
            state["_name"] = state.pop("name")
        self.__dict__.update(state)
        # An unpickled array owns its memory and could be made writable again; re-freeze
        # over bytes, in native float32 / int64 (even from a host of the other byte order).
        self._vectors = _immutable(np.asarray(self._vectors, dtype=np.float32))
        if self._rank is not None:
            self._rank = _immutable(np.asarray(self._rank, dtype=np.int64))

    def __copy__(self) -> EmbeddingTable:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> EmbeddingTable:
        """The table is read-only, so copies share it (scikit-learn's ``clone`` of an
        estimator holding one would otherwise copy the vectors and rebuild every index)."""
        return self

    def word_array(self) -> np.ndarray:
        """The words as a read-only numpy object array (for vectorised id -> word mapping;
        shared by every caller: index it, never write to it)."""
        key = "word-array"
        if key not in self.cache:
            array = np.empty(len(self._words), dtype=object)
            array[:] = self._words
            array.setflags(write=False)
            # A view of a read-only base: ``setflags(write=True)`` on it is refused too.
            self.cache[key] = array.view()
        words: np.ndarray = self.cache[key]
        return words

    def __repr__(self) -> str:
        label = f"{self.name!r}, " if self.name else ""
        return f"EmbeddingTable({label}{len(self)} words x {self.dim} dims)"

    # -- lookup ---------------------------------------------------------------------
    def _keys(self) -> dict[str, int]:
        if self._key_to_id is None:
            keys: dict[str, int] = {}
            order = self.frequency_order().tolist()
            words = self._words
            shadowed = []
            for row in order:
                word = words[row]
                key = normalize_word(word)
                # Reuse the word's own string when it is already a key (saves a copy per word).
                if keys.setdefault(word if key == word else key, row) != row:
                    shadowed.append(row)
            _warn_case_variants(words, keys, shadowed)  # before: an error filter raises each time
            self._key_to_id = keys
        return self._key_to_id

    def lookup(self, tokens: Sequence[str]) -> np.ndarray:
        """Row ids of ``tokens`` after NFKC + lower-casing (``OOV_ID`` = -1 when absent).

        When several rows share a normalised key, the most frequent (else the first) wins.
        ``tokens`` is a sequence of str: one word is ``[word]``.
        """
        if isinstance(tokens, str | bytes | bytearray):
            kind = type(tokens).__name__
            raise TypeError(f"tokens must be a sequence of str, not one {kind}: use [word]")
        if not set(map(type, tokens)) <= {str}:  # fast when every token is exactly a str
            for position, token in enumerate(tokens):
                if not isinstance(token, str):  # its type only: an error never echoes a token
                    raise TypeError(f"token {position} is a {type(token).__name__}, not str")
        return self._rows(tokens)

    def _rows(self, tokens: Sequence[str]) -> np.ndarray:
        """:meth:`lookup` of tokens already known to be str (the mechanisms check them)."""
        keys = self._keys()
        get = keys.get
        rows = np.fromiter(
            (get(normalize_word(token), OOV_ID) for token in tokens),
            dtype=np.int64,
            count=len(tokens),
        )
        for position in np.flatnonzero(rows == OOV_ID).tolist():  # rare: a second try
            token = tokens[position]
            if "\u0130" in token or "\u0307" in token:  # only then can the dot be there
                rows[position] = get(without_dot_above(normalize_word(token)), OOV_ID)
        return rows

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and int(self._rows([word])[0]) != OOV_ID

    def unk_vector(self) -> np.ndarray:
        """The public point OOV tokens map to: the centroid of the table (float64,
        read-only: it is shared by every mechanism over this table)."""
        key = "unk-vector"
        if key not in self.cache:
            self.cache[key] = _immutable(self._vectors.mean(axis=0, dtype=np.float64))
        vector: np.ndarray = self.cache[key]
        return vector

    # -- derived tables ----------------------------------------------------------------
    def most_frequent(self, n: int) -> EmbeddingTable:
        """A table of the ``n`` most frequent words (needs ``frequency_rank``); asking again
        returns the same table, with its indexes."""
        n = check_int(n, "vocab_size", minimum=1)
        if self._rank is None:
            raise ValueError(
                "this table has no frequency rank; cannot keep the most frequent (gensim "
                "vectors in frequency order, as load_word2vec_format and gensim's downloader "
                "keep them: pass frequency_ordered=True to the loader; your own table: "
                "EmbeddingTable(words, vectors, frequency_rank=...))"
            )
        if n >= len(self):
            return self
        key = ("most-frequent", n)
        if key not in self.cache:
            rows = self.frequency_order()[:n]
            rows.sort()
            ranks = np.argsort(np.argsort(self._rank[rows], kind="stable"), kind="stable")
            self.cache[key] = EmbeddingTable(
                [self._words[i] for i in rows.tolist()],
                _immutable(self._vectors[rows]),
                frequency_rank=ranks,
                name=self.name,
                copy=False,
            )
        table: EmbeddingTable = self.cache[key]
        return table

    # -- constructors from other libraries ----------------------------------------------
    @classmethod
    def from_keyed_vectors(
        cls,
        keyed_vectors: KeyedVectors,
        *,
        frequency_ordered: bool = False,
        name: str | None = None,
    ) -> EmbeddingTable:
        """A table from a gensim ``KeyedVectors`` (``index_to_key`` and ``vectors``).

        ``frequency_ordered=True`` declares the table frequency ordered: its rank is then
        gensim's ``count`` of each word when the KeyedVectors holds distinct counts (a
        trained model's, or the falling ones ``load_word2vec_format`` gives in row order),
        else the row order (true of GloVe and word2vec files). A ``.kv`` saved in another
        order (alphabetical, from ``add_vectors``) keeps its real counts: ranking by row
        order would keep punctuation and drop "the" at ``vocab_size``.
        """
        words = list(keyed_vectors.index_to_key)
        vectors = keyed_vectors.vectors
        rows = np.arange(len(words))  # the KeyedVectors row of each word kept
        for row, key in enumerate(words):
            if key is not None and not isinstance(key, str):
                raise ValueError(
                    f"KeyedVectors keys must be words (str); row {row} has a key of type "
                    f"{type(key).__name__}"
                )
        keyless = [row for row, key in enumerate(words) if key is None]
        if keyless:
            # gensim leaves such rows when a vectors file repeats a word (the first vector
            # is kept) and when KeyedVectors(count=...) preallocates rows never filled.
            warn(
                f"KeyedVectors: dropped {len(keyless)} row(s) without a word (rows never "
                "filled: preallocated with count=, or left by a word repeated in a vectors "
                f"file, which keeps its first vector), e.g. row {keyless[0]}",
                DxpWarning,
            )
            kept = [row for row, key in enumerate(words) if key is not None]
            words, vectors, rows = [words[row] for row in kept], vectors[kept], rows[kept]
        keep = _usable_rows(words, "KeyedVectors")
        if keep is not None:
            words, vectors, rows = [words[row] for row in keep], vectors[keep], rows[keep]
        rank = _count_rank(keyed_vectors, rows) if frequency_ordered else None
        return cls(words, vectors, frequency_rank=rank, name=name)

    @classmethod
    def from_spacy(cls, vectors: Any, *, name: str | None = None) -> EmbeddingTable:
        """A table from a spaCy ``Vectors`` (or a ``Vocab``/``Language`` holding one).

        Every key becomes a word; keys that share a row share its vector (ties between
        such words are broken uniformly at random by the nearest-neighbour search).
        """
        vectors = getattr(getattr(vectors, "vocab", vectors), "vectors", vectors)
        strings = vectors.strings
        if vectors.mode != "default":
            raise ValueError("only spaCy vectors in 'default' mode (one row per key) are supported")
        try:
            pairs = sorted((row, strings[key]) for key, row in vectors.key2row.items())
        except KeyError:
            raise ValueError(
                "a vector key has no string in the StringStore; pass the Vocab or "
                "Language that owns the vectors"
            ) from None
        if not pairs:
            raise ValueError("the spaCy vectors table is empty")
        keep = _usable_rows([word for _, word in pairs], "spaCy vectors")
        if keep is not None:
            pairs = [pairs[row] for row in keep]
        rows = np.fromiter((row for row, _ in pairs), dtype=np.int64, count=len(pairs))
        data = np.asarray(vectors.data)
        return cls([word for _, word in pairs], data[rows], name=name)


_WHITESPACE_OR_NUL = re.compile(r"[\s\x00]")
_INVISIBLE = re.compile(f"[{INVISIBLE}]")


def unusable_words(words: Sequence[str]) -> list[tuple[int, str]]:
    """(row, reason) of each word no text could ever look up or write back as one token:
    holding whitespace or NUL, nothing but invisible characters, or not UTF-8 encodable
    (a lone surrogate). Fast when there are none (one scan of the joined words)."""
    joined = "".join(words)
    if not (_WHITESPACE_OR_NUL.search(joined) or _INVISIBLE.search(joined)) and _is_utf8(joined):
        return []
    found = []
    for position, word in enumerate(words):
        if _WHITESPACE_OR_NUL.search(word):
            found.append((position, "contain whitespace or NUL"))
        elif not _is_utf8(word):
            found.append((position, "be invalid Unicode (a lone surrogate)"))
        elif not normalize_word(word):
            found.append((position, "be only invisible characters"))
    return found


def _is_utf8(text: str) -> bool:
    """No lone surrogate (the check every text input gets, :func:`check_text`)."""
    try:
        check_text(text)
    except ValueError:
        return False
    return True


def _count_rank(keyed_vectors: Any, rows: np.ndarray) -> np.ndarray:
    """Frequency rank of the KeyedVectors ``rows`` kept: by gensim's ``count`` (descending,
    ties in row order) when it holds counts that are not all equal, else the row order."""
    counts = getattr(keyed_vectors, "expandos", {}).get("count")
    if counts is None or len(counts) != len(keyed_vectors.index_to_key):
        return np.arange(len(rows))
    kept = np.asarray(counts, dtype=np.float64)[rows]
    if len(kept) < 2 or np.all(kept == kept[0]) or not np.all(np.isfinite(kept)):
        return np.arange(len(rows))
    order = np.argsort(-kept, kind="stable")
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = np.arange(len(rows))
    return rank


def _usable_rows(words: Sequence[str], source: str) -> list[int] | None:
    """Rows to keep of a loaded table (None: all), warning about the dropped ones."""
    bad = unusable_words(words)
    if not bad:
        return None
    warn(
        f"{source}: dropped {len(bad)} word(s) that no text can look up as one token "
        f"(whitespace, NUL, invisible only or invalid Unicode), e.g. row {bad[0][0]}",
        DxpWarning,
    )
    dropped = {position for position, _ in bad}
    return [row for row in range(len(words)) if row not in dropped]


def _immutable(array: np.ndarray) -> np.ndarray:
    """A C-order copy of ``array`` (same dtype) over an immutable bytes object: it can never
    be made writable again (an array owning its memory can)."""
    return np.frombuffer(array.tobytes(), dtype=array.dtype).reshape(array.shape)


def _warn_case_variants(words: tuple[str, ...], keys: dict[str, int], shadowed: list[int]) -> None:
    """DxpWarning when rows differ from a row that wins their lookup key only by case (e.g.
    "us" behind "US" in a cased word2vec table): those words are never looked up, their
    tokens take the winner's vector (PRIVACY.md 21). Compatibility variants NFKC maps to
    one word (GloVe's "ﬁrst" and "first") and words with invisible characters the lookup
    deletes are the same word and pass silently."""

    def compatible(word: str) -> str:  # the lookup key but for lower-casing
        if word.isascii():
            return word
        return normalize("NFKC", word).translate(_DELETE_INVISIBLE)

    cased = [
        row
        for row in shadowed
        if compatible(words[row]) != compatible(words[keys[normalize_word(words[row])]])
    ]
    if cased:
        row = cased[0]
        winner = words[keys[normalize_word(words[row])]]
        warn(
            f"{len(cased):,} embedding rows differ from a more frequent (or earlier) row only by "
            f"case, e.g. row {row} {words[row]!r} behind {winner!r}: tokens are lower-cased "
            "before lookup (PRIVACY.md 21), so those rows are never looked up (their "
            "tokens take the other row's vector) but stay possible outputs",
            DxpWarning,
        )


def _first_repeat(words: Sequence[str]) -> str:
    """Where the first repeated word is, by rows (a table's words are public)."""
    first: dict[str, int] = {}
    for row, word in enumerate(words):
        if word in first:
            return f"row {row} repeats row {first[word]}"
        first[word] = row
    return "no repeat"
