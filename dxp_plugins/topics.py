"""Topic-model evaluation of private counts, and gensim adapters.

The LDA and LSA measures are those of Schofield, Yauney & Mimno's evaluation (no section is
cited: the paper is not available offline here, see :mod:`dxp_plugins.lplp`):

* LDA: match each non-private topic to its best private topic by the Jaccard index of their
  top-20 words (:func:`topic_jaccard`), topic exclusivity (:func:`exclusivity`) and
  coherence through gensim's ``CoherenceModel`` (:func:`coherence`);
* LSA: classification accuracy of a classifier trained on the private low-rank
  representation (:func:`lsa_accuracy`) and how well the private subspace reconstructs the
  real counts (:func:`reconstruction_error`).

gensim: :func:`to_gensim` turns a document x feature count matrix (sparse, dense or a
DataFrame) into a ``Sparse2Corpus`` and a ``Dictionary`` with its document statistics;
:func:`gensim_lda` fits ``LdaModel`` on it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._openmp import prefer_sleeping_threads
from ._optional import require_gensim
from ._validation import check_choice
from .errors import DxpWarning
from .lplp.compression import check_counts

__all__ = [
    "COHERENCE_MEASURES",
    "TOP_WORDS",
    "coherence",
    "exclusivity",
    "gensim_lda",
    "jaccard",
    "lsa_accuracy",
    "reconstruction_error",
    "to_gensim",
    "top_words",
    "topic_jaccard",
]

prefer_sleeping_threads()  # before scikit-learn loads OpenMP

TOP_WORDS = 20
#: gensim coherence measures: u_mass on the counts, the others on ``texts`` too.
COHERENCE_MEASURES = ("u_mass", "c_v", "c_uci", "c_npmi")


def top_words(topic_word: Any, feature_names: Sequence[str], n: int = TOP_WORDS) -> list[list[str]]:
    """The ``n`` heaviest words of each topic (rows of ``topic_word``), heaviest first."""
    weights = np.asarray(topic_word, dtype=np.float64)
    names = np.asarray(feature_names, dtype=object)
    order = np.argsort(-weights, axis=1, kind="stable")[:, :n]
    return [list(names[row]) for row in order]


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """``|A & B| / |A | B|`` of two word lists."""
    first, second = set(a), set(b)
    union = first | second
    return len(first & second) / len(union) if union else 0.0


def topic_jaccard(
    private: Sequence[Sequence[str]],
    reference: Sequence[Sequence[str]],
    *,
    one_to_one: bool = False,
) -> np.ndarray:
    """For each reference (non-private) topic, the best Jaccard index over the private topics.

    By default one private topic may be the best match of several reference topics (a
    private topic that merges two real ones counts for both). ``one_to_one=True`` matches
    the topics in pairs instead, maximising the total Jaccard (Hungarian algorithm); a
    reference topic left without a partner (more reference than private topics) scores 0.
    """
    scores = np.array([[jaccard(r, p) for p in private] for r in reference]).reshape(
        len(reference), len(private)
    )
    if not one_to_one:
        best: np.ndarray = scores.max(axis=1, initial=0.0)
        return best
    from scipy.optimize import linear_sum_assignment

    rows, columns = linear_sum_assignment(scores, maximize=True)
    matched = np.zeros(len(reference))
    matched[rows] = scores[rows, columns]
    return matched


def exclusivity(topic_word: Any, n: int = TOP_WORDS) -> float:
    """Mean over topics and their top-``n`` words of ``p(w|k) / sum_k' p(w|k')``.

    1 when every top word belongs to one topic only; ``1/K`` when topics share them evenly.
    """
    weights = np.asarray(topic_word, dtype=np.float64)
    weights = weights / weights.sum(axis=1, keepdims=True)
    share = weights / np.maximum(weights.sum(axis=0, keepdims=True), 1e-300)
    top = np.argsort(-weights, axis=1, kind="stable")[:, :n]
    return float(np.take_along_axis(share, top, axis=1).mean())


def to_gensim(counts: Any, feature_names: Sequence[str]) -> tuple[Any, Any]:
    """``(Sparse2Corpus, Dictionary)`` of a document x feature count matrix (sparse, dense or
    a DataFrame). The Dictionary carries the corpus statistics (``num_docs``, ``dfs``,
    ``cfs``, ...) that ``TfidfModel`` uses.

    Do not filter the returned Dictionary (``filter_extremes``, ``filter_tokens``): it
    renumbers its ids while the corpus keeps the old column ids, so ``LdaModel(corpus,
    id2word=dictionary)`` fails or mislabels words, and there are no texts to ``doc2bow``
    again. Filter the columns of the count matrix and their names first, then convert::

        document_frequency = np.asarray((counts > 0).sum(axis=0)).ravel()
        keep = np.flatnonzero(document_frequency >= 5)  # e.g. no_below=5
        corpus, dictionary = to_gensim(counts[:, keep], np.asarray(names)[keep])
    """
    require_gensim("to_gensim")
    from gensim.matutils import Sparse2Corpus

    matrix = _count_matrix(counts, feature_names)
    return Sparse2Corpus(matrix, documents_columns=False), _dictionary(matrix, feature_names)


def _count_matrix(counts: Any, feature_names: Sequence[str]) -> sp.csr_matrix:
    """``counts`` as CSR without stored zeros, one column per feature name: integer counts
    (int64, checked as LPLP checks them) or other non-negative weights such as TF-IDF."""
    weights = counts if sp.issparse(counts) else np.asarray(counts)
    if np.issubdtype(weights.dtype, np.floating):
        matrix = sp.csr_matrix(weights)
        if not (np.all(np.isfinite(matrix.data)) and np.all(matrix.data >= 0)):
            raise ValueError("counts must be non-negative and finite")
    else:
        matrix = check_counts(counts)
    if matrix.shape[1] != len(feature_names):
        raise ValueError(
            f"counts have {matrix.shape[1]} columns but feature_names has "
            f"{len(feature_names)} words"
        )
    if (matrix.data == 0).any():  # gensim's bag-of-words never lists a zero count
        matrix = matrix.copy()  # check_counts may share the caller's arrays
        matrix.eliminate_zeros()
    return matrix


def _dictionary(matrix: sp.csr_matrix, feature_names: Sequence[str]) -> Any:
    """gensim ``Dictionary`` of the features with the statistics ``add_documents`` keeps."""
    from gensim.corpora import Dictionary

    dictionary = Dictionary()
    dictionary.token2id = {word: index for index, word in enumerate(feature_names)}
    dictionary.id2token = dict(enumerate(feature_names))
    # Like add_documents, only words that occur get an entry (TfidfModel divides by them).
    document_frequencies = np.bincount(matrix.indices, minlength=matrix.shape[1])
    collection_frequencies = np.asarray(matrix.sum(axis=0)).ravel()
    seen = np.flatnonzero(document_frequencies).tolist()
    dictionary.dfs = dict(zip(seen, document_frequencies[seen].tolist(), strict=True))
    dictionary.cfs = dict(zip(seen, collection_frequencies[seen].tolist(), strict=True))
    dictionary.num_docs = matrix.shape[0]
    dictionary.num_pos = round(float(matrix.sum()))
    dictionary.num_nnz = matrix.nnz
    return dictionary


def gensim_lda(counts: Any, feature_names: Sequence[str], num_topics: int, **params: Any) -> Any:
    """gensim ``LdaModel`` fitted on (private) counts through :func:`to_gensim`; its
    ``id2word`` is the gensim ``Dictionary`` (so ``doc2bow`` and ``get_term_topics`` work)."""
    require_gensim("gensim_lda")
    from gensim.models import LdaModel

    corpus, dictionary = to_gensim(counts, feature_names)
    return LdaModel(corpus=corpus, id2word=dictionary, num_topics=num_topics, **params)


def coherence(
    topics: Sequence[Sequence[str]],
    counts: Any,
    feature_names: Sequence[str],
    measure: str = "u_mass",
    texts: Sequence[Sequence[str]] | None = None,
    **params: Any,
) -> float:
    """Mean coherence of ``topics`` (word lists) on a reference corpus of ``counts``.

    ``u_mass`` (Mimno et al. 2011) needs only document co-occurrence counts, so the
    reference is a count matrix: use the *non-private* (or held-out) corpus to judge topics
    learned from private counts. ``c_v``, ``c_uci`` and ``c_npmi`` count words in sliding
    windows, so they also need ``texts``: the reference documents as token lists. ``params``
    go to ``CoherenceModel`` (e.g. ``window_size``; ``processes`` is 1 unless given).
    """
    require_gensim("coherence (gensim's CoherenceModel)")
    from gensim.models import CoherenceModel

    check_choice(measure, "measure", COHERENCE_MEASURES)
    if measure != "u_mass" and texts is None:
        raise ValueError(f"{measure} coherence needs texts= (the reference documents' tokens)")
    if texts is not None and any(isinstance(text, str) for text in texts):
        raise TypeError("texts must be token lists (e.g. text.split()), not strings")
    corpus, dictionary = to_gensim(counts, feature_names)
    if measure == "u_mass":
        absent = {
            word
            for topic in topics
            for word in topic
            if isinstance(word, str)
            and dictionary.dfs.get(dictionary.token2id.get(word, -1), 0) == 0
        }
        where, consequence = (
            "counts",
            (
                "their u_mass terms are artefacts (gensim scores a pair conditioned on such a word "
                "0, the best value, and a pair ending on one about log(1e-12)), so the "
                "coherence of these topics is not meaningful"
            ),
        )
    else:
        seen = {token for text in texts or () for token in text}
        absent = {word for topic in topics for word in topic if word not in seen}
        where, consequence = (
            "texts",
            (
                f"{measure} is undefined for the topics holding them (gensim gives nan or inf), "
                "and the mean is then nan"
            ),
        )
    if absent:
        warnings.warn(
            f"{len(absent)} topic word(s) never occur in the reference {where}: {consequence}",
            DxpWarning,
            stacklevel=2,
        )
    model = CoherenceModel(
        topics=[list(topic) for topic in topics],
        corpus=list(corpus),
        texts=None if texts is None else [list(text) for text in texts],
        dictionary=dictionary,
        coherence=measure,
        **{"processes": 1, **params},
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(model.get_coherence())
    # +inf (c_npmi, c_uci) would read as the best possible score: undefined is nan.
    return value if np.isfinite(value) else float("nan")


def lsa_accuracy(
    train_counts: Any,
    train_labels: Sequence[Any],
    test_counts: Any,
    test_labels: Sequence[Any],
    n_components: int = 100,
    random_state: int = 0,
) -> float:
    """Accuracy of logistic regression on TruncatedSVD features fitted on ``train_counts``.

    Train on private counts, test on real held-out counts projected into the private
    subspace: how much class structure the private LSA keeps.
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    model = make_pipeline(
        TfidfTransformer(),
        TruncatedSVD(n_components, random_state=random_state),
        Normalizer(),
        LogisticRegression(max_iter=1000),
    )
    model.fit(train_counts, train_labels)
    return float(model.score(test_counts, test_labels))


def reconstruction_error(svd: Any, counts: Any) -> float:
    """Relative Frobenius error ``||X - X V V^T|| / ||X||`` of projecting ``counts`` onto a
    fitted ``TruncatedSVD``'s (orthonormal) components ``V``; equals
    ``sqrt(1 - ||X V^T||^2 / ||X||^2)``, computed without densifying X."""
    import scipy.sparse.linalg

    matrix = sp.csr_matrix(counts, dtype=np.float64)
    energy = float(scipy.sparse.linalg.norm(matrix)) ** 2
    kept = float(np.linalg.norm(svd.transform(matrix))) ** 2
    return float(np.sqrt(max(energy - kept, 0.0) / max(energy, 1e-300)))
