"""LPLPTransformer set up the way a replicating researcher does, where the record's words
would not hold (LPLP review, twenty-eighth session): n-gram columns (F1), the corpus's own
totals as "public" weights (F4), seeded fits replaying noise (F2), TF-IDF input (F7). Real
Lee texts and GloVe words."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer, TfidfVectorizer
from sklearn.pipeline import make_pipeline

import dxp_plugins as dxp
from dxp_plugins.datasets import load_lee_background
from dxp_plugins.estimators.lplp import LPLPTransformer


@pytest.fixture(scope="module")
def lee_texts() -> list[str]:
    return load_lee_background()


@pytest.fixture(scope="module")
def words(glove_5k) -> list[str]:
    return [w for w in glove_5k.words if w.isalpha() and w not in ENGLISH_STOP_WORDS][:600]


def test_one_word_moves_four_bigram_counts_and_the_transformer_says_so():
    """F1: the record's "one occurrence costs e^epsilon" counts one column per word. With
    unigram and bigram columns one added word moves four counts (measured 4 epsilon)."""
    vocabulary = ["alpha", "beta", "gamma", "alpha beta", "beta gamma", "alpha gamma"]
    vectorizer = CountVectorizer(vocabulary=vocabulary, ngram_range=(1, 2))
    one_word_apart = vectorizer.transform(["alpha gamma", "alpha beta gamma"]).toarray()
    assert np.abs(one_word_apart[1] - one_word_apart[0]).sum() == 4
    with pytest.warns(dxp.PrivacyWarning, match=r"changes up to 4 counts.*n_changes=4"):
        fitted = LPLPTransformer(epsilon=0.5, vocabulary=vocabulary).fit(one_word_apart)
    fitted.transform(one_word_apart)
    assert "one word moves up to n^2 counts" in fitted.last_guarantee_.statement
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # N covers it: nothing to say
        LPLPTransformer(epsilon=0.5, n_changes=4, vocabulary=vocabulary).fit(one_word_apart)


def test_unigram_vocabularies_fit_without_the_n_gram_warning(lee_texts, words):
    counts = CountVectorizer(vocabulary=words).transform(lee_texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LPLPTransformer(vocabulary=words).fit(counts)


@pytest.mark.parametrize("scale", [1, 3.5])
def test_the_fitted_corpus_totals_as_weights_warn(lee_texts, words, scale):
    """F4: the paper decompresses with corpus frequencies; a replication passing X.sum(0)
    was recorded as "public counts given by the user"."""
    counts = CountVectorizer(vocabulary=words).transform(lee_texts)
    own = scale * np.asarray(counts.sum(axis=0)).ravel()
    settings = {"epsilon": 1.0, "n_groups": 150, "vocabulary": words, "weights": own}
    with pytest.warns(dxp.PrivacyWarning, match="column totals of the counts being fitted"):
        LPLPTransformer(**settings).fit(counts)


def test_totals_of_another_corpus_are_public_weights(lee_texts, words):
    counts = CountVectorizer(vocabulary=words).transform(lee_texts)
    public = np.asarray(counts[: len(lee_texts) // 2].sum(axis=0)).ravel() + 1.0
    private = counts[len(lee_texts) // 2 :]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LPLPTransformer(n_groups=150, vocabulary=words, weights=public).fit(private)


def test_two_seeded_fits_reveal_count_differences_without_the_seed(lee_texts, words):
    """F2: each seeded fit restarts the seed's stream, so two fits on different documents
    add the same noise: where neither output was clamped at 0, the difference of the
    outputs is the difference of the counts. The warning and docs/lplp.md say so; a change
    that keys streams per fit must change them (and this test)."""
    counts = CountVectorizer(vocabulary=words).transform(lee_texts).toarray()
    first, second = counts[:100], counts[100:200]
    releases = []
    for part in (first, second):
        with pytest.warns(dxp.SeededRandomnessWarning, match="replays the same noise"):
            transformer = LPLPTransformer(epsilon=0.1, vocabulary=words, random_state=7)
            releases.append(transformer.fit_transform(part))
    unclamped = (releases[0] > 0) & (releases[1] > 0)
    assert unclamped.mean() > 0.3
    difference = (releases[0] - releases[1])[unclamped]
    assert np.array_equal(difference, (first - second)[unclamped])


def test_tf_idf_input_is_refused_with_the_vectorizer_to_use(lee_texts, words):
    pipe = make_pipeline(TfidfVectorizer(vocabulary=words), LPLPTransformer(vocabulary=words))
    with pytest.raises(ValueError, match="use CountVectorizer, not TfidfVectorizer"):
        pipe.fit_transform(lee_texts)
    assert sp.issparse(CountVectorizer(vocabulary=words).fit_transform(lee_texts[:2]))


def test_uniform_weights_on_a_balanced_corpus_do_not_warn(words):
    """Diff review 28 F8: equal column totals made uniform public weights "proportional
    to the totals" (a false alarm)."""
    balanced = np.ones((4, len(words)), dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LPLPTransformer(n_groups=150, vocabulary=words, weights=np.ones(len(words))).fit(balanced)
