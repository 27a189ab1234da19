"""The scikit-learn and gensim doors under what their users do (fifteenth session's
review: P1, C1)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn

import dxp_plugins as dxp
from tests.optional import requires_gensim

COUNTS = sp.csr_matrix(np.array([[2, 0, 1, 0], [0, 3, 0, 1], [1, 1, 1, 1]]))
WORDS = ["hockey", "team", "film", "actor"]


def test_a_release_without_a_vocabulary_warns_that_its_columns_must_be_public():
    """P1: make_pipeline(CountVectorizer(), LPLPTransformer()) ran silently with columns
    learned from the private texts (a name in one document became a feature name, a topic
    word, text in the pickle) while the record claimed (N, epsilon)-LPLP."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # beyond pyproject's filter for the other tests
        with pytest.raises(dxp.PrivacyWarning, match="count columns are public"):
            dxp.LPLPTransformer(epsilon=1.0).fit(COUNTS)
        dxp.LPLPTransformer(epsilon=1.0, vocabulary=WORDS).fit_transform(COUNTS)  # silent


@pytest.mark.parametrize("how", ["set_output", "set_config"])
@pytest.mark.parametrize("call", ["fit_transform", "transform"])
def test_pandas_output_of_sparse_counts_is_refused_before_the_charge(how, call):
    """C1: scikit-learn's output wrapper refused the sparse release only after it was
    charged and drawn; every retry paid again (1, 2, 3 spent, nothing returned)."""
    pytest.importorskip("pandas")
    ledger = dxp.Accountant(cap=10)
    step = dxp.LPLPTransformer(epsilon=1.0, vocabulary=WORDS, accountant=ledger)
    if call == "transform":
        step.fit(COUNTS)
    with sklearn.config_context(transform_output="pandas" if how == "set_config" else "default"):
        if how == "set_output":
            step.set_output(transform="pandas")
        for _ in range(2):
            with pytest.raises(ValueError, match="nothing was charged"):
                getattr(step, call)(COUNTS)
        assert ledger.spent == 0
        frame = getattr(step, call)(COUNTS.toarray())  # dense counts fit in a DataFrame
    assert list(frame.columns) == WORDS and ledger.spent == 1


REFERENCE = [
    "the hockey team won the game",
    "the film had a fine actor",
    "hockey fans love the team",
]


def reference_counts():
    from sklearn.feature_extraction.text import CountVectorizer

    vocabulary = ["hockey", "team", "game", "film", "actor", "fans", "iraq"]
    counts = CountVectorizer(vocabulary=vocabulary).fit_transform(REFERENCE)
    return counts, vocabulary, [text.split() for text in REFERENCE]


@requires_gensim
@pytest.mark.parametrize("measure", ["c_v", "c_npmi", "c_uci"])
def test_window_coherence_with_a_word_absent_from_the_texts_warns_and_is_nan(measure):
    """C2: c_v gave nan and c_npmi/c_uci +inf (read as the best score) without a word of
    warning when a topic word never occurs in the reference texts, the usual case for
    topics learned from private counts; u_mass already warned."""
    from dxp_plugins.topics import coherence

    counts, vocabulary, texts = reference_counts()
    clean = coherence([["hockey", "team", "fans"]], counts, vocabulary, measure, texts=texts)
    assert np.isfinite(clean)
    with pytest.warns(dxp.DxpWarning, match="never occur in the reference texts"):
        value = coherence([["hockey", "team", "iraq"]], counts, vocabulary, measure, texts=texts)
    assert np.isnan(value)


@requires_gensim
def test_gensim_lda_keeps_the_dictionary():
    """U1: the model got a plain dict as id2word, so doc2bow and get_term_topics failed."""
    from gensim.corpora import Dictionary

    from dxp_plugins.topics import gensim_lda

    counts, vocabulary, _ = reference_counts()
    model = gensim_lda(counts, vocabulary, num_topics=2, random_state=0)
    assert isinstance(model.id2word, Dictionary)
    assert model.id2word.doc2bow(["hockey", "team"]) and model.get_term_topics("hockey") is not None


def test_transform_refuses_another_column_than_the_fitted_one():
    """U3: fitted on df[["review"]], transform(df[["notes"]]) privatized the wrong column
    silently; scikit-learn's own transformers refuse other feature names."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"review": ["a fine film"], "notes": ["the team won"]})
    step = dxp.TextPrivatizer(epsilon=10.0, vocab_size=2000).fit(frame[["review"]])
    with pytest.raises(ValueError, match="feature names should match"):
        step.transform(frame[["notes"]])
    assert step.accountant_.spent == 0
    assert len(step.transform(frame[["review"]])) == 1


@requires_gensim
def test_gensim_loader_messages_point_to_the_flag_that_is_missing(tmp_path):
    """U2: a binary word2vec file read as text was told to "re-encode it as UTF-8", and
    vocab_size over KeyedVectors never mentioned frequency_ordered=True."""
    from gensim.models import KeyedVectors

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=50)
    vectors = KeyedVectors(vector_size=table.dim)
    vectors.add_vectors(list(table.words), np.asarray(table.vectors))
    path = tmp_path / "vectors.bin"
    vectors.save_word2vec_format(str(path), binary=True)
    with pytest.raises(ValueError, match="binary=True"):
        dxp.load_embeddings("keyed-vectors.v1", path=str(path))
    assert len(dxp.load_embeddings("keyed-vectors.v1", path=str(path), binary=True)) == 50
    with pytest.raises(ValueError, match="frequency_ordered=True"):
        dxp.EmbeddingTable.from_keyed_vectors(vectors).most_frequent(10)
    with pytest.raises(ValueError, match="frequency_ordered=True"):
        dxp.TextPrivatizer(
            epsilon=1.0, embeddings=dxp.EmbeddingTable.from_keyed_vectors(vectors), vocab_size=10
        ).fit(["a b"])
