"""Convert one EmbeddingTable into what each peer loads, byte-for-byte the same vectors.

* mldp-text takes a gensim ``KeyedVectors``: we hand its worker ``words.txt`` +
  ``vectors.npy`` and it builds the ``KeyedVectors`` itself (pickles do not cross gensim
  versions; the build is timed as the peer's load).
* pypantera reads a GloVe text file without header (``embPath``).
* dp-diffractor reads a word2vec text file (``"V D"`` header) and only under one of five
  hard-coded names in ``$HOME/.cache/diffractor/``: we point HOME at a fake folder.

Floats are written with 9 significant digits, which round-trips float32 exactly, so every
peer works on exactly the vectors ours uses.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

#: dp-diffractor looks its vectors up under this name (PEERS.md); the file is ours.
DIFFRACTOR_MODEL = "glove-wiki-gigaword-300"


def vector_lines(words: Sequence[str], vectors: np.ndarray) -> Iterator[str]:
    """``"word v1 ... vD\\n"`` per row, float32-exact (``%.9g``)."""
    if len(words) != len(vectors):
        raise ValueError("one vector per word")
    for word, row in zip(words, np.asarray(vectors, dtype=np.float32).tolist(), strict=True):
        if not word or len(word.split()) != 1:
            raise ValueError("words must be non-empty and free of whitespace")
        yield word + " " + " ".join(f"{value:.9g}" for value in row) + "\n"


def _write_atomically(path: Path, lines: Iterable[str]) -> Path:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as stream:
        stream.writelines(lines)
    os.replace(tmp, path)
    return path


def write_glove_text(path: Path, words: Sequence[str], vectors: np.ndarray) -> Path:
    """A GloVe text file: no header, one ``word v1 ... vD`` line per row (pypantera)."""
    return _write_atomically(path, vector_lines(words, vectors))


def write_word2vec_text(path: Path, words: Sequence[str], vectors: np.ndarray) -> Path:
    """A word2vec text file: ``"V D"`` header, then GloVe lines (gensim, dp-diffractor)."""
    header = f"{len(words)} {np.shape(vectors)[1]}\n"
    return _write_atomically(path, [header, *vector_lines(words, vectors)])


def write_arrays(folder: Path, words: Sequence[str], vectors: np.ndarray) -> tuple[Path, Path]:
    """``words.txt`` (one per line) and ``vectors.npy`` (float32, C order)."""
    folder.mkdir(parents=True, exist_ok=True)
    words_path = _write_atomically(folder / "words.txt", (word + "\n" for word in words))
    vectors_path = folder / "vectors.npy"
    tmp = folder / "vectors.tmp.npy"
    np.save(tmp, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    os.replace(tmp, vectors_path)
    return words_path, vectors_path


def read_arrays(folder: Path) -> tuple[list[str], np.ndarray]:
    """Inverse of :func:`write_arrays`."""
    words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")[:-1]
    return words, np.load(folder / "vectors.npy", allow_pickle=False)


def diffractor_home(root: Path, word2vec_path: Path) -> Path:
    """A fake HOME whose ``.cache/diffractor/`` holds our file under the expected name."""
    folder = root / ".cache" / "diffractor"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / f"{DIFFRACTOR_MODEL}.txt"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(word2vec_path.resolve())
    return root


def nltk_data(root: Path, stopwords: Iterable[str]) -> Path:
    """An ``NLTK_DATA`` folder so the peers never try to download NLTK data.

    ``corpora/stopwords/english`` holds ``stopwords`` (dp-diffractor reads the list when
    constructed); an empty ``corpora/wordnet`` folder satisfies mldp-text's import-time
    ``nltk.data.find('corpora/wordnet')`` (none of the mechanisms measured uses WordNet).
    """
    stop = root / "corpora" / "stopwords"
    stop.mkdir(parents=True, exist_ok=True)
    _write_atomically(stop / "english", (word + "\n" for word in sorted(set(stopwords))))
    (root / "corpora" / "wordnet").mkdir(parents=True, exist_ok=True)
    return root


def prepare_vectors(folder: Path, words: Sequence[str], vectors: np.ndarray) -> dict[str, Path]:
    """Write every peer format of one table into ``folder`` (skipped when already there)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "arrays": folder,
        "glove": folder / "glove.txt",
        "word2vec": folder / "word2vec.txt",
    }
    if not (folder / "vectors.npy").exists() or not (folder / "words.txt").exists():
        write_arrays(folder, words, vectors)
    if not paths["glove"].exists():
        write_glove_text(paths["glove"], words, vectors)
    if not paths["word2vec"].exists():
        write_word2vec_text(paths["word2vec"], words, vectors)
    return paths
