"""LPLPTransformer: scikit-learn conformance, Pipelines before LDA and TruncatedSVD, the
gensim adapter, guarantees, and the topic evaluation helpers (on gensim's real Lee corpus)."""

from __future__ import annotations

import copy
import inspect
import pickle
import re
import warnings
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.base import clone
from sklearn.decomposition import LatentDirichletAllocation, TruncatedSVD
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

import dxp_plugins as dxp
from dxp_plugins import topics
from dxp_plugins.datasets import load_lee_background
from dxp_plugins.estimators.lplp import LPLPTransformer
from tests.optional import requires_gensim

# scikit-learn's pickle check wants a seeded, fitted transformer and its unpickled copy to
# draw the same noise; by design a copy never replays its original's stream (a worker task
# would otherwise reuse noise on other documents: PRIVACY.md 11, 19). Tested below instead.
_COPIES_DRAW_FRESH_NOISE = {
    "check_estimators_pickle": "seeded copies draw a stream of their own (PRIVACY.md 19)"
}
# scikit-learn before 1.8 subtracts a float mean from the integer counts in place, which
# numpy refuses before the transformer is called (the check itself was fixed in 1.8).
if tuple(map(int, re.findall(r"\d+", sklearn.__version__)[:2])) < (1, 8):  # 1.9rc1 too
    _COPIES_DRAW_FRESH_NOISE["check_positive_only_tag_during_fit"] = (
        "scikit-learn < 1.8: the check casts float into integer counts"
    )


@parametrize_with_checks(
    [LPLPTransformer(), LPLPTransformer(n_groups=2, epsilon=0.5)],
    expected_failed_checks=lambda estimator: _COPIES_DRAW_FRESH_NOISE,
)
def test_sklearn_conformance(estimator, check):
    check(estimator)


def test_a_pickled_seeded_transformer_never_replays_its_noise(counts):
    with pytest.warns(dxp.SeededRandomnessWarning):
        fitted = LPLPTransformer(epsilon=0.5, random_state=3).fit(counts)
    first = fitted.transform(counts)
    copies = [pickle.loads(pickle.dumps(fitted)) for _ in range(2)]
    releases = [first, *(copy.transform(counts) for copy in copies)]
    for i in range(3):
        for j in range(i + 1, 3):
            assert (releases[i] != releases[j]).nnz > 0


WORDS = [f"w{i}" for i in range(1200)]  # as many feature names as the Lee counts have


@pytest.fixture(scope="module")
def lee_texts() -> list[str]:
    return load_lee_background()  # from gensim, or its pinned wheel where gensim is absent


@pytest.fixture(scope="module")
def vocabulary(glove_5k) -> list[str]:
    """A public vocabulary: frequent GloVe words that are not stop words."""
    return [w for w in glove_5k.words if w.isalpha() and w not in ENGLISH_STOP_WORDS][:1200]


@pytest.fixture(scope="module")
def counts(lee_texts, vocabulary) -> sp.csr_matrix:
    return CountVectorizer(vocabulary=vocabulary).fit_transform(lee_texts)


def test_output_is_sparse_non_negative_integer_counts(counts, vocabulary, glove_5k):
    transformer = LPLPTransformer(
        epsilon=2.0,
        n_groups=300,
        grouping="glove-cluster",
        vocabulary=vocabulary,
        embeddings=glove_5k,
        weights="zipf",
    )
    private = transformer.fit_transform(counts)
    assert sp.issparse(private) and private.dtype == np.int64
    assert private.shape == counts.shape and private.data.min() >= 0
    assert list(transformer.get_feature_names_out()) == vocabulary
    record = transformer.last_guarantee_
    assert (record.epsilon, record.n_groups, record.n_features) == (2.0, 300, len(vocabulary))
    assert record.grouping == "glove-cluster" and record.embeddings == glove_5k.fingerprint
    assert "zipf" in record.weights and record.documents == counts.shape[0]
    # Fresh noise on every call (PRIVACY.md 11).
    assert (transformer.transform(counts) != private).nnz > 0


def test_dense_input_gives_dense_output(counts):
    """scikit-learn transformers keep the container: a dense count table comes back dense,
    so ``set_output(transform="pandas")`` works."""
    pandas = pytest.importorskip("pandas")
    dense = counts[:20].toarray()
    private = LPLPTransformer(epsilon=2.0, n_groups=50).fit_transform(dense)
    assert isinstance(private, np.ndarray) and private.dtype == np.int64
    assert private.shape == dense.shape and private.min() >= 0
    names = [f"w{i}" for i in range(dense.shape[1])]
    frame = pandas.DataFrame(dense, columns=names)
    out = LPLPTransformer(epsilon=2.0, n_groups=50).set_output(transform="pandas")
    assert list(out.fit_transform(frame).columns) == names


def test_a_dict_vocabulary_follows_its_column_indices(lee_texts, vocabulary, glove_5k):
    """CountVectorizer orders a dict vocabulary by its values, not by insertion."""
    mapping = {word: column for column, word in reversed(list(enumerate(vocabulary)))}
    settings = {"epsilon": 5.0, "n_groups": 300, "grouping": "glove-cluster", "random_state": 0}
    pipeline = make_pipeline(
        CountVectorizer(vocabulary=mapping),
        LPLPTransformer(vocabulary=mapping, embeddings=glove_5k, **settings),
    ).fit(lee_texts)
    assert list(pipeline.get_feature_names_out()) == vocabulary
    as_list = LPLPTransformer(vocabulary=vocabulary, embeddings=glove_5k, **settings)
    as_list.fit(pipeline[0].transform(lee_texts))
    np.testing.assert_array_equal(pipeline[1].groups_, as_list.groups_)


@pytest.mark.parametrize(
    ("words", "error", "match"),
    [
        (set(WORDS), ValueError, "unordered set"),
        (frozenset(WORDS), ValueError, "unordered set"),
        ({word: i + 1 for i, word in enumerate(WORDS)}, ValueError, "columns 0, 1"),
        ({word: float(i) for i, word in enumerate(WORDS)}, ValueError, "columns 0, 1"),
    ],
)
def test_an_unordered_or_gapped_vocabulary_is_refused(counts, words, error, match):
    with pytest.raises(error, match=match):
        LPLPTransformer(vocabulary=words).fit(counts)


def test_dataframe_columns_must_be_the_vocabulary_in_order(counts, vocabulary):
    """As scikit-learn refuses reordered columns, a DataFrame is never relabelled."""
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(counts[:20].toarray(), columns=vocabulary)
    transformer = LPLPTransformer(epsilon=5.0, vocabulary=vocabulary).set_output(transform="pandas")
    assert list(transformer.fit_transform(frame).columns) == vocabulary
    with pytest.raises(ValueError, match="column names differ from vocabulary"):
        transformer.fit(frame[vocabulary[::-1]])
    with pytest.raises(ValueError, match="column names differ from vocabulary"):
        transformer.fit(frame.set_axis([f"x{w}" for w in vocabulary], axis=1))


@pytest.mark.parametrize("container", [sp.csr_array, sp.csc_array, sp.coo_array, sp.dok_array])
def test_a_sparse_array_comes_back_as_a_sparse_array(counts, container):
    private = LPLPTransformer(epsilon=2.0, n_groups=50).fit_transform(container(counts[:20]))
    assert isinstance(private, sp.csr_array) and private.dtype == np.int64
    assert private.shape == (20, counts.shape[1])


def test_transforming_no_documents_releases_nothing(counts):
    """PRIVACY.md 22 (a pipeline over an empty batch): fit needs documents, transform not."""
    accountant = dxp.Accountant()
    transformer = LPLPTransformer(epsilon=2.0, n_groups=50, accountant=accountant).fit(counts)
    for empty in (counts[:0], counts[:0].toarray()):
        assert transformer.transform(empty).shape == (0, counts.shape[1])
        record = transformer.last_guarantee_  # says what was charged: nothing
        assert (record.documents, record.releases, record.spend) == (0, 0, 0.0)
    assert accountant.spent == 0.0
    transformer.transform(counts[:2])
    merged = record.merge(transformer.last_guarantee_)
    assert (merged.spend, merged.releases) == (accountant.spent, accountant.releases) == (2.0, 1)
    with pytest.raises(ValueError, match="0 sample"):
        LPLPTransformer(epsilon=2.0).fit(counts[:0])


def test_uncompressed_release_is_the_same_code_path(counts):
    transformer = LPLPTransformer(epsilon=1.0).fit(counts)
    assert transformer.n_groups_ == counts.shape[1]
    np.testing.assert_array_equal(transformer.groups_, np.arange(counts.shape[1]))
    transformer.transform(counts)
    assert transformer.last_guarantee_.grouping == "none"


@pytest.mark.parametrize("model", ["lda", "svd"])
def test_pipeline_before_lda_and_truncated_svd(lee_texts, vocabulary, glove_5k, model):
    last = (
        LatentDirichletAllocation(n_components=5, max_iter=5, random_state=0)
        if model == "lda"
        else TruncatedSVD(n_components=5, random_state=0)
    )
    pipeline = make_pipeline(
        CountVectorizer(vocabulary=vocabulary),
        LPLPTransformer(
            epsilon=5.0,
            n_groups=400,
            grouping="frequency",
            vocabulary=vocabulary,
            embeddings=glove_5k,
        ),
        last,
    )
    embedded = pipeline.fit_transform(lee_texts)
    assert embedded.shape == (len(lee_texts), 5)
    assert pipeline[1].last_guarantee_.epsilon == 5.0


@requires_gensim
def test_gensim_adapter_fits_lda_on_private_counts(counts, vocabulary):
    private = LPLPTransformer(epsilon=5.0, n_groups=400).fit_transform(counts)
    model = topics.gensim_lda(private, vocabulary, num_topics=3, passes=1, random_state=0)
    assert model.num_topics == 3 and model.get_topics().shape == (3, len(vocabulary))
    corpus, dictionary = topics.to_gensim(private, vocabulary)
    assert len(corpus) == counts.shape[0] and dictionary.token2id[vocabulary[0]] == 0


def histogram_transformer(n_groups: int | None, accountant: dxp.Accountant) -> LPLPTransformer:
    """Grouping and weights both from a DP histogram with its own budget (0.5)."""
    return LPLPTransformer(
        epsilon=1.0,
        n_groups=n_groups,
        grouping="frequency",
        grouping_params={"order": "histogram"},
        weights="dp-histogram",
        histogram_epsilon=0.5,
        accountant=accountant,
    )


def test_dp_histogram_weights_record_their_budget(counts, vocabulary, glove_5k):
    accountant = dxp.Accountant()
    transformer = histogram_transformer(100, accountant).fit(counts)
    assert accountant.spent == 0.5  # one histogram release serves grouping and weights
    transformer.transform(counts)
    record = transformer.last_guarantee_
    assert record.histogram_epsilon == 0.5 and "0.5 more" in record.statement
    assert accountant.spent == 1.5
    # The record states what the accountant charged: the release and, once, the histogram
    # (``spend`` once left the histogram out).
    assert record.spend == record.to_dict()["spend"] == accountant.spent
    assert record.release_spend == record.to_dict()["release_spend"] == 1.0
    assert "spend: 1.5 (1 for 1 release + 0.5 for the histogram" in record.statement
    transformer.transform(counts)
    merged = record.merge(transformer.last_guarantee_)
    assert merged.spend == accountant.spent == 2.5 and merged.release_spend == 2.0
    with pytest.raises(ValueError, match="histogram_epsilon"):
        LPLPTransformer(n_groups=10, weights="dp-histogram").fit(counts)
    # Another fit releases (and charges) its own histogram: its records do not merge.
    refit = clone(transformer).fit(counts)
    assert accountant.spent == 3.0
    refit.transform(counts)
    with pytest.raises(ValueError, match="histogram_id"):
        record.merge(refit.last_guarantee_)


def test_fit_transform_refuses_before_the_histogram_when_the_release_would_not_fit(counts):
    """fit_transform charged the DP histogram (0.5), then the release (1.0) hit the cap:
    half the budget spent, nothing returned. Now both are asked for first; ``fit`` alone
    still needs only the histogram's budget."""
    accountant = dxp.Accountant(cap=1.2)
    with pytest.raises(dxp.BudgetExceededError, match="would exceed"):
        histogram_transformer(100, accountant).fit_transform(counts)
    assert accountant.spent == 0 and accountant.releases == 0
    transformer = histogram_transformer(100, accountant).fit(counts)
    assert accountant.spent == 0.5 and transformer.histogram_ is not None
    roomy = dxp.Accountant(cap=1.5)
    fitted = histogram_transformer(100, roomy)
    private = fitted.fit_transform(counts)
    assert private.shape == counts.shape and roomy.spent == 1.5
    # One charge for both, so a thread charging the ledger in between cannot strand the
    # histogram's budget (a check, then two charges, could).
    assert roomy.releases == 1 and roomy.tokens_privatized == counts.shape[0]
    record = fitted.last_guarantee_
    assert record.spend == roomy.spent and record.histogram_epsilon == 0.5
    with pytest.raises(dxp.BudgetExceededError):
        fitted.transform(counts[:3])  # a later release charges on its own: over the cap
    assert roomy.releases == 1 and roomy.spent == 1.5
    with pytest.raises(TypeError, match="unexpected keyword"):
        histogram_transformer(100, dxp.Accountant()).fit_transform(counts, sample_weight=None)


def test_fit_transform_checks_the_histogram_before_the_one_charge(counts):
    """Second diff review: the joint charge ran before the histogram's own checks, so a
    histogram rate beyond int64 raised with 1.0 already spent (plain fit spent 0)."""
    accountant = dxp.Accountant()
    tiny = histogram_transformer(100, accountant).set_params(
        histogram_epsilon=1e-12, n_changes=10**6
    )
    with pytest.raises(ValueError, match="beyond int64"):
        tiny.fit_transform(counts)
    assert accountant.spent == 0 and accountant.releases == 0


def test_a_weights_array_is_checked_before_the_histogram_is_charged(counts):
    accountant = dxp.Accountant()
    transformer = LPLPTransformer(
        n_groups=4,
        grouping="frequency",
        grouping_params={"order": "histogram"},
        weights=np.ones(counts.shape[1] + 1),  # one number too many
        histogram_epsilon=0.5,
        accountant=accountant,
    )
    with pytest.raises(ValueError, match="one number per feature"):
        transformer.fit(counts)
    assert accountant.spent == 0


@pytest.mark.parametrize(
    ("grouping", "weights"),
    [("random", "uniform"), ("frequency", "zipf"), ("frequency", np.arange(1.0, 41.0))],
    ids=["uniform", "zipf", "public array"],
)
def test_public_weights_never_read_the_fitted_counts(vocabulary, glove_5k, grouping, weights):
    """PRIVACY.md 9: with public weights, fit's grouping and decompression tables come from
    public data only. Fitting the same settings on two different corpora must give the same
    groups and the same per-group probabilities (the audit cannot see a fit that used the
    corpus totals: both inputs of each audited pair share one fit)."""
    rng = np.random.default_rng(0)
    corpora = [rng.poisson(1.0, (50, 40)), rng.poisson(1.0, (50, 40))]
    corpora[1][:, [0, 7, 13]] += 30  # a very different histogram
    fitted = [
        LPLPTransformer(
            epsilon=1.0,
            n_groups=8,
            grouping=grouping,
            vocabulary=vocabulary[:40],
            embeddings=glove_5k,
            weights=weights,
            random_state=1,
        ).fit(corpus)
        for corpus in corpora
    ]
    first, second = (transformer.release_.plan for transformer in fitted)
    np.testing.assert_array_equal(fitted[0].groups_, fitted[1].groups_)
    np.testing.assert_array_equal(first.probabilities, second.probabilities)
    np.testing.assert_array_equal(first.columns, second.columns)


@pytest.mark.parametrize("uncompressed", [None, "all features"])
def test_uncompressed_release_spends_no_histogram_budget(counts, uncompressed):
    """K = M decompresses nothing and needs no grouping, so weights="dp-histogram" and a
    histogram-ordered grouping no longer release (and charge) the histogram."""
    accountant = dxp.Accountant()
    n_groups = None if uncompressed is None else counts.shape[1]
    transformer = histogram_transformer(n_groups, accountant).fit(counts)
    assert accountant.spent == 0 and transformer.histogram_ is None
    transformer.transform(counts[:3])
    record = transformer.last_guarantee_
    assert record.histogram_epsilon is None and record.spend == accountant.spent == 1.0
    assert record.grouping == "none" and "nothing is decompressed" in record.weights


def test_refused_release_settings_spend_no_histogram_budget(counts):
    """Bad LPLP settings are refused before the DP histogram is charged."""
    accountant = dxp.Accountant()
    transformer = LPLPTransformer(
        epsilon=1e-6,
        n_changes=10**14,
        n_groups=10,
        weights="dp-histogram",
        histogram_epsilon=1.0,
        accountant=accountant,
    )
    with pytest.raises(ValueError, match="beyond int64"):
        transformer.fit(counts)
    assert accountant.spent == 0


@pytest.mark.parametrize(
    ("settings", "error"),
    [
        ({"grouping": "glove-clusters"}, "unknown grouping"),  # a typo
        ({"grouping": "random", "grouping_params": {"seed": 1}}, "unexpected keyword"),
        ({"grouping": "glove-cluster"}, "needs the feature words"),  # no vocabulary given
    ],
)
def test_grouping_settings_are_checked_before_the_histogram_is_charged(counts, settings, error):
    """Histogram weights were released (and charged) before the grouping was looked at, so
    each failed fit spent histogram_epsilon and a valid fit was later refused by the cap."""
    accountant = dxp.Accountant(cap=1.0)
    transformer = LPLPTransformer(
        n_groups=4, weights="dp-histogram", histogram_epsilon=0.75, accountant=accountant
    )
    with pytest.raises((ValueError, TypeError), match=error):
        transformer.set_params(**settings).fit(counts)
    assert accountant.spent == 0
    transformer.set_params(grouping="random", grouping_params=None).fit(counts)
    assert accountant.spent == 0.75


def test_a_clone_charges_the_original_accountant(counts):
    """clone (hence GridSearchCV, cross_val_score) deep-copied the accountant, so clones
    charged a private copy and the user's cap never triggered (PRIVACY.md 13). Relies on
    Accountant.__deepcopy__ returning self (a shared ledger); fit must not copy it either."""
    accountant = dxp.Accountant(cap=1.5)
    estimator = LPLPTransformer(epsilon=1.0, n_groups=10, accountant=accountant)
    cloned = clone(estimator)
    assert cloned.accountant is accountant
    cloned.fit_transform(counts[:5])
    assert cloned.release_.accountant is accountant
    assert accountant.spent == 1.0 and accountant.releases == 1
    with pytest.raises(dxp.BudgetExceededError):
        clone(estimator).fit(counts).transform(counts[:5])
    shared = dxp.Accountant()
    pipeline = make_pipeline(
        LPLPTransformer(epsilon=1.0, accountant=shared), TruncatedSVD(2, random_state=0)
    )
    search = GridSearchCV(
        pipeline,
        {"lplptransformer__epsilon": [0.5, 1.0]},
        cv=3,
        scoring=lambda model, X, y=None: (
            -topics.reconstruction_error(model[-1], model[0].transform(X))
        ),
    )
    search.fit(counts)
    # 2 settings x 3 folds, each a fit_transform and a scored transform, then the refit.
    assert shared.releases >= 13
    assert search.best_estimator_[0].release_.accountant is shared


def test_paper_mode_states_its_true_epsilon(counts):
    transformer = LPLPTransformer(epsilon=1.0, n_groups=300, calibration="paper").fit(counts)
    transformer.transform(counts[:5])
    record = transformer.last_guarantee_
    assert record.claimed_epsilon == 1.0
    assert record.epsilon == pytest.approx(counts.shape[1] / 300)
    assert "TRUE epsilon 4" in record.statement


def test_pickle_keeps_no_generator_state(counts):
    transformer = LPLPTransformer(epsilon=1.0, n_groups=10).fit(counts)
    transformer.transform(counts[:3])
    restored = pickle.loads(pickle.dumps(transformer))
    assert restored.release_._random._generator is None  # no noise state travelled
    assert restored.transform(counts[:3]).shape == (3, counts.shape[1])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_groups": 0}, "n_groups"),
        ({"n_groups": 5000}, "exceeds"),
        ({"vocabulary": ["a", "b"]}, "vocabulary has 2 words"),
        ({"vocabulary": "abc"}, "sequence of words"),
        ({"n_groups": 10, "grouping": "glove-cluster"}, "vocabulary"),
        (
            {
                "n_groups": 10,
                "grouping": "glove-cluster",
                "vocabulary": [f"w{i}" for i in range(1200)],
            },
            "missing embeddings=",
        ),
        ({"n_groups": 10, "grouping": "nope"}, "unknown grouping "),
        ({"weights": "zipf"}, "vocabulary"),
        ({"weights": "own-counts"}, "weights must be one of"),
        ({"embeddings": 3}, "EmbeddingTable"),
        ({"vocabulary": ["w1", *WORDS[1:]]}, "unique"),  # two columns named w1
        ({"vocabulary": ["", *WORDS[1:]]}, "non-empty"),
        ({"grouping_params": ["x"]}, "must be a dict"),  # checked although K = M ignores it
        ({"histogram_epsilon": -1.0}, "histogram_epsilon"),  # checked although unused
    ],
)
def test_bad_transformer_settings_raise(counts, params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        LPLPTransformer(**params).fit(counts)


def test_validation_errors_never_quote_the_counts():
    """scikit-learn's messages print the array (a document's bag of words) or a value."""
    transformer = LPLPTransformer()
    long_row = np.arange(40) * 7 + 3  # numpy wraps it over several lines
    bad_inputs = (
        long_row,
        np.array([[0, 3j, 0, 7] * 10]),
        [["zq7secret", 'it\'s "x"']],  # strings: scikit-learn's message quotes no value
        # An object array: numpy's "could not convert string to float: 'zq7secret'" quotes
        # the document's word, which only the quoted-value scrubbing removes.
        np.array([[1, "zq7secret"], [2, 3]], dtype=object),
        # both kinds of quote: the repr escapes one, and the pairs of quotes scrubbed
        # ('...' and "...") matched across the escape, leaving "zq7secret" in the message
        np.array([["a'zq7secret \"b", 1, 2]], dtype=object),
    )
    for bad in bad_inputs:
        with pytest.raises(ValueError) as error:
            transformer.fit(bad)
        message = str(error.value)
        assert not any(str(value) in message for value in long_row[2:])  # 17, 24, ... 276
        assert "j" not in message.replace("reject", "") and "zq7secret" not in message
        assert "\n" not in message


def test_a_sparse_matrix_printed_in_an_error_is_withheld():
    """scikit-learn prints a sparse matrix as "(row, col) value" lines, without brackets
    (and on scipy 1.11/1.12 without quotes): the counts went into the message (diff review
    F8). Only an error's first line is kept."""
    from dxp_plugins.estimators.lplp import _without_data

    dump = "Complex data not supported\n  (0, 0)\t(1+2j)\n  (0, 2)\t(977+0j)\n  (0, 5)\tnan\n"
    assert _without_data(dump) == "Complex data not supported"
    assert _without_data("dtype='numeric' is not compatible with arrays of bytes") == ""
    with pytest.raises(ValueError) as error:
        LPLPTransformer().fit(sp.csr_matrix(np.array([[1 + 2j, 0, 977]])))
    assert "977" not in str(error.value) and "\n" not in str(error.value)


def test_transform_rejects_other_features_and_negative_counts(counts):
    transformer = LPLPTransformer().fit(counts)
    with pytest.raises(ValueError, match="features"):
        transformer.transform(counts[:, :10])
    with pytest.raises(ValueError, match="Negative"):
        transformer.transform(-counts[:2])


# -- topic evaluation -------------------------------------------------------------------------
def test_topic_matching_and_exclusivity():
    assert topics.jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    reference = [["a", "b", "c"], ["x", "y", "z"]]
    private = [["x", "y", "q"], ["a", "b", "c"]]
    np.testing.assert_allclose(topics.topic_jaccard(private, reference), [1.0, 0.5])
    merged = [["a", "b", "x", "y"]]  # one private topic merging both reference topics
    np.testing.assert_allclose(topics.topic_jaccard(merged, reference), [0.4, 0.4])
    np.testing.assert_allclose(topics.topic_jaccard(merged, reference, one_to_one=True), [0.4, 0])
    swapped = topics.topic_jaccard(private, reference, one_to_one=True)
    np.testing.assert_allclose(swapped, [1.0, 0.5])
    disjoint = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    assert topics.exclusivity(disjoint, n=2) == pytest.approx(1.0)
    assert topics.exclusivity(np.ones((2, 4)), n=2) == pytest.approx(0.5)
    assert topics.top_words(disjoint, ["a", "b", "c", "d"], n=2) == [["a", "b"], ["c", "d"]]


@requires_gensim
def test_coherence_prefers_co_occurring_words(counts, vocabulary):
    lda = LatentDirichletAllocation(n_components=4, max_iter=10, random_state=0).fit(counts)
    learned = topics.top_words(lda.components_, vocabulary, n=10)
    rng = np.random.default_rng(0)
    shuffled = [list(rng.choice(vocabulary, 10, replace=False)) for _ in range(4)]
    assert topics.coherence(learned, counts, vocabulary) > topics.coherence(
        shuffled, counts, vocabulary
    )


def test_lsa_accuracy_and_reconstruction_error(counts):
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    labels = (lengths > np.median(lengths)).astype(int)
    accuracy = topics.lsa_accuracy(counts[:200], labels[:200], counts[200:], labels[200:], 10)
    assert 0.0 <= accuracy <= 1.0
    svd = TruncatedSVD(10, random_state=0).fit(counts)
    dense = counts.toarray().astype(float)
    expected = np.linalg.norm(dense - svd.transform(dense) @ svd.components_) / np.linalg.norm(
        dense
    )
    assert topics.reconstruction_error(svd, counts) == pytest.approx(expected, rel=1e-6)


@pytest.fixture(scope="module")
def lee_tokens(lee_texts) -> list[list[str]]:
    """The Lee documents as CountVectorizer's tokens (the reference texts of c_v & co.)."""
    analyze = CountVectorizer().build_analyzer()
    return [analyze(text) for text in lee_texts]


@requires_gensim
def test_to_gensim_dictionary_has_the_document_statistics(counts, vocabulary, lee_tokens):
    """The statistics gensim itself counts, so filter_extremes and TfidfModel work."""
    from gensim.corpora import Dictionary
    from gensim.models import TfidfModel

    corpus, dictionary = topics.to_gensim(counts, vocabulary)
    known = set(vocabulary)
    reference = Dictionary([[t for t in tokens if t in known] for tokens in lee_tokens])
    for name in ("num_docs", "num_pos", "num_nnz"):
        assert getattr(dictionary, name) == getattr(reference, name), name
    for word, index in reference.token2id.items():
        ours = dictionary.token2id[word]
        assert (dictionary.dfs[ours], dictionary.cfs[ours]) == (
            reference.dfs[index],
            reference.cfs[index],
        )
    assert TfidfModel(dictionary=dictionary)[next(iter(corpus))] != []
    dictionary.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
    reference.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
    assert len(dictionary) > 0 and set(dictionary.token2id) == set(reference.token2id)


@requires_gensim
def test_gensim_adapters_take_dense_counts_and_dataframes(counts, vocabulary):
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(counts.toarray(), columns=vocabulary)
    private = LPLPTransformer(epsilon=5.0, n_groups=400).set_output(transform="pandas")
    for table in (counts.toarray(), private.fit_transform(frame)):
        sparse = sp.csr_matrix(np.asarray(table))
        assert list(topics.to_gensim(table, vocabulary)[0]) == list(
            topics.to_gensim(sparse, vocabulary)[0]
        )
        model = topics.gensim_lda(table, vocabulary, num_topics=3, passes=1, random_state=0)
        assert model.get_topics().shape == (3, len(vocabulary))
        # The five most frequent words of this table: a word the (unseeded) private release
        # happens to zero out makes coherence warn, which failed this test now and then.
        frequent = [vocabulary[j] for j in np.argsort(-np.asarray(table).sum(axis=0))[:5]]
        assert topics.coherence([frequent], table, vocabulary) == pytest.approx(
            topics.coherence([frequent], sparse, vocabulary)
        )
    with pytest.raises(ValueError, match="1200 columns but feature_names has 1199 words"):
        topics.to_gensim(counts.toarray(), vocabulary[:-1])


@requires_gensim
def test_gensim_adapters_take_tf_idf_weights(counts, vocabulary):
    """Non-negative float weights (TF-IDF) went to gensim before the count checks; they
    still do, while negative or non-finite ones are refused."""
    from sklearn.feature_extraction.text import TfidfTransformer

    weights = TfidfTransformer().fit_transform(counts)
    corpus, dictionary = topics.to_gensim(weights, vocabulary)
    first = next(iter(corpus))
    row = weights[0].toarray().ravel()
    assert first == [(int(i), pytest.approx(row[i])) for i in np.flatnonzero(row)]
    assert dictionary.num_docs == counts.shape[0]
    model = topics.gensim_lda(weights, vocabulary, num_topics=3, passes=1, random_state=0)
    assert model.get_topics().shape == (3, len(vocabulary))
    for bad in (-weights, weights * np.inf):
        with pytest.raises(ValueError, match="non-negative and finite"):
            topics.to_gensim(bad, vocabulary)


@requires_gensim
@pytest.mark.parametrize("measure", ["c_v", "c_npmi", "c_uci"])
def test_sliding_window_coherence_uses_the_texts(counts, vocabulary, lee_tokens, measure):
    from gensim.corpora import Dictionary
    from gensim.models import CoherenceModel

    lda = LatentDirichletAllocation(n_components=4, max_iter=10, random_state=0).fit(counts)
    learned = topics.top_words(lda.components_, vocabulary, n=10)
    score = topics.coherence(learned, counts, vocabulary, measure=measure, texts=lee_tokens)
    direct = CoherenceModel(
        topics=learned,
        texts=lee_tokens,
        dictionary=Dictionary(lee_tokens),
        coherence=measure,
        processes=1,
    ).get_coherence()
    assert score == pytest.approx(direct)
    with pytest.raises(ValueError, match="needs texts="):
        topics.coherence(learned, counts, vocabulary, measure=measure)


@requires_gensim
def test_coherence_refuses_an_unknown_measure_and_untokenised_texts(counts, vocabulary, lee_texts):
    with pytest.raises(ValueError, match="measure must be one of"):
        topics.coherence([vocabulary[:5]], counts, vocabulary, measure="c_nope")
    with pytest.raises(TypeError, match="token lists"):
        topics.coherence([vocabulary[:5]], counts, vocabulary, measure="c_v", texts=lee_texts)


def small_counts() -> sp.csr_matrix:
    return sp.csr_matrix(np.random.default_rng(0).poisson(1.0, (20, 12)))


# -- settings changed after fit ---------------------------------------------------------------
@pytest.mark.parametrize(
    "change",
    [
        {"accountant": dxp.Accountant(cap=1.5)},  # its cap would never have applied
        {"epsilon": 0.1},  # released at the fitted 1.0 while get_params said 0.1
        {"n_changes": 3},
        {"calibration": "paper"},
        {"weights": np.ones(12)},
    ],
    ids=lambda change: next(iter(change)),
)
def test_transform_refuses_settings_changed_since_fit(change):
    """The fitted release holds the settings of fit: a change after it is refused (and
    nothing charged) rather than silently ignored; fitting again applies it."""
    transformer = LPLPTransformer(epsilon=1.0, n_groups=4).fit(small_counts())
    ledger = transformer.release_.accountant
    transformer.set_params(**change)
    with pytest.raises(ValueError, match=f"{next(iter(change))} changed since fit"):
        transformer.transform(small_counts())
    assert ledger.spent == 0
    transformer.fit(small_counts()).transform(small_counts())
    if "epsilon" in change:
        assert transformer.last_guarantee_.epsilon == 0.1
    if "accountant" in change:
        assert change["accountant"].spent == 1.0


def test_unchanged_settings_still_transform():
    weights = np.arange(1.0, 13.0)
    transformer = LPLPTransformer(epsilon=1.0, n_groups=4, weights=weights).fit(small_counts())
    transformer.set_params(epsilon=np.float64(1), n_changes=1.0, weights=weights.copy())
    assert transformer.transform(small_counts()).shape == (20, 12)
    assert transformer.guarantee(3).epsilon == 1.0


def test_weights_edited_in_place_after_fit_are_a_change():
    weights = np.arange(1.0, 13.0)
    transformer = LPLPTransformer(epsilon=1.0, n_groups=4, weights=weights).fit(small_counts())
    weights[:] = 1.0  # the fitted release still decompresses with the old weights
    for use in (lambda: transformer.transform(small_counts()), lambda: transformer.guarantee(1)):
        with pytest.raises(ValueError, match="weights changed since fit"):
            use()


# -- u_mass and words the reference never contains -------------------------------------------
@requires_gensim
def test_u_mass_warns_about_topic_words_absent_from_the_reference():
    """gensim scores a u_mass pair conditioned on a word of document frequency 0 as 0 (its
    best value) and a pair ending on one about log(1e-12): ["d", "a", "b"] scored -0.23,
    above the real topic ["a", "b", "c"] (-0.69), and ["a", "b", "d"] about -18."""
    names = ["a", "b", "c", "d"]
    reference = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 1, 0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        topics.coherence([["a", "b", "c"]], reference, names)  # no absent word: no warning
    for topic in (["d", "a", "b"], ["a", "b", "d"]):
        with pytest.warns(UserWarning, match="never occur.*not meaningful"):
            topics.coherence([topic], reference, names)


# -- exclusivity normalises each topic -------------------------------------------------------
def test_exclusivity_uses_p_w_given_k():
    """Catches shares of the raw topic-word weights (LDA's components_ are
    unnormalised pseudo-counts). Rows (4, 4, 0) and (1, 0, 2): p(w|k) = (.5, .5, 0) and
    (1/3, 0, 2/3); top word of topic 0 is word 0 with share .5 / (.5 + 1/3) = .6, of topic 1
    word 2 with share 1: mean .8 (raw weights give .9)."""
    assert topics.exclusivity(np.array([[4.0, 4.0, 0.0], [1.0, 0.0, 2.0]]), n=1) == pytest.approx(
        0.8
    )


# -- lsa_accuracy trains on train and scores on test -----------------------------------------
def test_lsa_accuracy_trains_on_train_and_scores_on_test():
    """Catches fitting on the test split and scoring the train split."""
    from sklearn.feature_extraction.text import TfidfTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import Normalizer

    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 60)
    means = np.where(labels[:, None] == 0, [3, 3, 0, 0, 1, 1], [0, 0, 3, 3, 1, 1])
    train = sp.csr_matrix(rng.poisson(means))
    test = sp.csr_matrix(rng.poisson(means))
    test_labels = 1 - labels  # the test labels are swapped: a model fitted on train scores ~0
    accuracy = topics.lsa_accuracy(train, labels, test, test_labels, n_components=3)
    model = make_pipeline(
        TfidfTransformer(),
        TruncatedSVD(3, random_state=0),
        Normalizer(),
        LogisticRegression(max_iter=1000),
    ).fit(train, labels)
    assert accuracy == pytest.approx(model.score(test, test_labels))
    assert accuracy < 0.2


@pytest.mark.parametrize(
    "texts", ["a b c", ["a b c", "d e"], np.array(["a b c", "d e"])], ids=["str", "list", "array"]
)
def test_texts_instead_of_counts_say_what_goes_before(texts):
    with pytest.raises(TypeError, match=r"not texts: put CountVectorizer\(vocabulary="):
        LPLPTransformer(epsilon=1.0).fit(texts)


# -- embeddings settings as in the word doors (review 9, M2) ----------------------------------
@pytest.fixture
def eight_words(glove_5k, tmp_path) -> tuple[list[str], dict[str, Any]]:
    """Eight GloVe words as a header-less GloVe text file, and its loader arguments."""
    from tests.door_fixtures import write_glove

    words = [word for word in glove_5k.words if word.isalpha()][:8]
    table = dxp.EmbeddingTable(words, glove_5k.vectors[glove_5k.lookup(words)])
    path = write_glove(table, tmp_path / "eight.txt")
    return words, {"path": str(path), "no_header": True}


def eight_counts() -> np.ndarray:
    return np.random.default_rng(0).poisson(1.0, (6, 8))


def fitted_by_name(words: list[str], params: dict[str, Any]) -> LPLPTransformer:
    """GLOVE-CLUSTER over the eight words, its table loaded by registry name."""
    return LPLPTransformer(
        epsilon=1.0,
        n_groups=2,
        grouping="glove-cluster",
        vocabulary=words,
        embeddings="keyed-vectors.v1",
        embeddings_params=params,
    ).fit(eight_counts())


@requires_gensim
def test_embeddings_by_name_take_the_doors_loader_arguments(eight_words):
    """keyed-vectors.v1 (a GloVe text file) by name: unreachable before, as the estimator
    had no embeddings_params (its error named path/keyed_vectors, which it did not take)."""
    words, params = eight_words
    transformer = fitted_by_name(words, params)
    table = dxp.load_embeddings("keyed-vectors.v1", **params)
    assert transformer.release_.embeddings == table.fingerprint
    assert transformer.transform(eight_counts()).shape == (6, 8)
    assert transformer.last_guarantee_.embeddings == table.fingerprint
    smaller = clone(transformer).set_params(vocab_size=4).fit(eight_counts())
    four = dxp.load_embeddings("keyed-vectors.v1", **params, vocab_size=4)
    assert smaller.release_.embeddings == four.fingerprint != table.fingerprint


def test_vocab_size_keeps_the_most_frequent_rows_of_a_registry_table(glove_5k):
    transformer = LPLPTransformer(
        epsilon=1.0,
        weights="zipf",
        vocabulary=list(glove_5k.words[:12]),
        embeddings="glove-6b-50d",
        vocab_size=5000,
    ).fit(small_counts())
    assert transformer.release_.embeddings == glove_5k.fingerprint


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({"embeddings_params": {"path": "x.txt"}}, ValueError, "given without embeddings"),
        ({"vocab_size": 10}, ValueError, "given without embeddings"),
        pytest.param(
            {"embeddings": "keyed-vectors.v1"},
            ValueError,
            "keyed_vectors or path",
            marks=requires_gensim,
        ),
        ({"embeddings": "no-such-table"}, ValueError, "embeddings: unknown name"),
        ({"embeddings": "glove-6b-50d", "vocab_size": 0}, ValueError, "vocab_size must be >= 1"),
        ({"embeddings": "glove-6b-50d", "vocab_size": 2.5}, TypeError, "vocab_size must be an"),
        (
            {"embeddings": "glove-6b-50d", "embeddings_params": ["vocab_size", 3]},
            TypeError,
            "embeddings_params must be a dict",
        ),
        (
            {"embeddings": "glove-6b-50d", "vocab_size": 3, "embeddings_params": {"vocab_size": 3}},
            ValueError,
            "not both",
        ),
    ],
)
def test_embeddings_settings_get_the_doors_checks(settings, error, match):
    with pytest.raises(error, match=match):
        LPLPTransformer(**settings).fit(small_counts())


def test_embeddings_settings_with_a_table_object_get_the_doors_checks(glove_5k):
    with pytest.raises(ValueError, match="an EmbeddingTable is already loaded"):
        LPLPTransformer(embeddings=glove_5k, embeddings_params={"path": "x"}).fit(small_counts())
    unranked = dxp.EmbeddingTable(["a", "b", "c"], np.eye(3))
    with pytest.raises(ValueError, match="no frequency_rank"):
        LPLPTransformer(embeddings=unranked, vocab_size=2).fit(small_counts())
    ranked = LPLPTransformer(embeddings=glove_5k, vocab_size=300).fit(small_counts())
    assert ranked.release_.embeddings == glove_5k.most_frequent(300).fingerprint


@requires_gensim
def test_embeddings_settings_changed_since_fit_are_refused(eight_words):
    """The new parameters are settings of the fitted release like every other: a change by
    set_params, or an edit of the embeddings_params dict in place, is refused."""
    words, params = eight_words
    transformer = fitted_by_name(words, params)
    transformer.set_params(vocab_size=4)
    with pytest.raises(ValueError, match="vocab_size changed since fit"):
        transformer.transform(eight_counts())
    transformer.set_params(vocab_size=None, embeddings_params={**params, "vocab_size": 4})
    with pytest.raises(ValueError, match="embeddings_params changed since fit"):
        transformer.transform(eight_counts())
    transformer.set_params(embeddings_params=params)
    params["vocab_size"] = 4  # the dict given to fit, edited in place
    with pytest.raises(ValueError, match="embeddings_params changed since fit"):
        transformer.guarantee(1)
    assert transformer.accountant_.spent == 0
    transformer.fit(eight_counts()).transform(eight_counts())
    four = dxp.load_embeddings("keyed-vectors.v1", **params)
    assert transformer.last_guarantee_.embeddings == four.fingerprint


def test_a_pickle_without_the_embeddings_settings_still_transforms(counts):
    """A transformer pickled before embeddings_params/vocab_size existed loads with their
    default (None, what it was fitted with) and is not refused as changed."""
    fitted = LPLPTransformer(epsilon=1.0, n_groups=10).fit(counts)
    state = fitted.__getstate__()
    for name in ("embeddings_params", "vocab_size"):
        del state[name], state["_fitted_params"][name]
    old = LPLPTransformer.__new__(LPLPTransformer)
    old.__setstate__(state)
    assert old.get_params()["vocab_size"] is None
    assert old.transform(counts[:3]).shape == (3, counts.shape[1])


# -- conventions shared with TextPrivatizer (review 9, L2) -------------------------------------
def test_the_accountant_charged_is_exposed_as_accountant_():
    fresh = LPLPTransformer(epsilon=2.0).fit(small_counts())
    assert isinstance(fresh.accountant_, dxp.Accountant)
    assert fresh.accountant_ is fresh.release_.accountant
    fresh.transform(small_counts())
    assert fresh.accountant_.spent == 2.0
    ledger = dxp.Accountant()
    given = LPLPTransformer(epsilon=2.0, accountant=ledger).fit(small_counts())
    assert given.accountant_ is ledger
    assert LPLPTransformer(epsilon=2.0).fit(small_counts()).accountant_ is not fresh.accountant_


def test_parameters_are_keyword_only():
    with pytest.raises(TypeError):
        LPLPTransformer(2.0)  # type: ignore[misc]
    with pytest.raises(TypeError):
        LPLPTransformer(2.0, 3)  # type: ignore[misc]
    assert all(
        parameter.kind is inspect.Parameter.KEYWORD_ONLY
        for parameter in inspect.signature(LPLPTransformer).parameters.values()
    )


def test_the_docstring_names_every_parameter_and_fitted_attribute(vocabulary, glove_5k):
    pandas = pytest.importorskip("pandas")
    doc = inspect.cleandoc(LPLPTransformer.__doc__)  # Python 3.13 dedents docstrings itself
    for name in inspect.signature(LPLPTransformer).parameters:
        assert re.search(rf"\b{name}\b", doc), name
    frame = pandas.DataFrame(np.ones((3, 12), dtype=int), columns=vocabulary[:12])
    fitted = LPLPTransformer(
        n_groups=4,
        vocabulary=vocabulary[:12],
        embeddings=glove_5k,
        weights="dp-histogram",
        histogram_epsilon=1.0,
    ).fit(frame)
    fitted.transform(frame)
    attributes = {name for name in vars(fitted) if name.endswith("_") and name[0] != "_"}
    attributes |= {name for name in dir(type(fitted)) if name.endswith("_") and name[0] != "_"}
    assert {"accountant_", "feature_names_in_", "histogram_", "last_guarantee_"} <= attributes
    attributes_section = doc.split("Attributes\n----------")[1]
    for name in attributes:
        assert re.search(rf"\b{name}", attributes_section), name
    assert "default 1.0" in doc  # the epsilon default and why it is safe here are documented


def _fitted_with_labels(monkeypatch) -> tuple[LPLPTransformer, np.ndarray]:
    """A transformer fitted with a registered grouping whose setting holds an array."""
    from tests.door_fixtures import register

    def by_labels(context, labels):
        return np.asarray(labels)

    register(monkeypatch, "groupings", "by-labels-test", by_labels)
    labels = np.arange(12) % 4
    transformer = LPLPTransformer(
        n_groups=4, grouping="by-labels-test", grouping_params={"labels": labels}
    ).fit(small_counts())
    return transformer, labels


def test_settings_holding_arrays_are_compared_by_value(monkeypatch):
    """Dict settings are copied at fit (to see in-place edits), so one holding an array is
    compared item by item: an equal array is no change, another one is."""
    transformer, labels = _fitted_with_labels(monkeypatch)
    assert transformer.transform(small_counts()).shape == (20, 12)
    transformer.set_params(grouping_params={"labels": labels.copy()})
    assert transformer.transform(small_counts()).shape == (20, 12)
    transformer.set_params(grouping_params={"labels": (labels + 1) % 4})
    with pytest.raises(ValueError, match="grouping_params changed since fit"):
        transformer.transform(small_counts())


def test_an_array_inside_a_setting_edited_in_place_is_a_change(monkeypatch):
    """Dict settings were copied one level deep: an array inside one, edited in place after
    fit, was the very same object at transform and passed for unchanged."""
    transformer, labels = _fitted_with_labels(monkeypatch)
    labels[:] = (labels + 1) % 4
    with pytest.raises(ValueError, match="grouping_params changed since fit"):
        transformer.transform(small_counts())


def test_a_fit_that_recorded_no_settings_is_refused(counts):
    """A pickle of an early build had no ``_fitted_params``, and transform skipped the check
    (a release at settings changed since fit went through)."""
    transformer = LPLPTransformer(epsilon=2.0).fit(counts)
    state = transformer.__getstate__()
    del state["_fitted_params"]
    restored = LPLPTransformer.__new__(LPLPTransformer)
    restored.__setstate__(state)
    with pytest.raises(ValueError, match=r"earlier build .* call fit again"):
        restored.transform(counts[:2])


def test_n_changes_reaches_the_release_and_its_guarantee(counts):
    """The noise rate is epsilon / N: a release built with N = 1 instead of the fitted
    n_changes draws about 8 times less noise at N = 10 while stating N = 1."""
    transformer = LPLPTransformer(n_changes=10, epsilon=2.0).fit(counts)
    assert transformer.release_.n_changes == 10
    assert transformer.release_.noise_calibration() == transformer.calibration_
    assert transformer.calibration_.n_changes == 10
    transformer.transform(counts[:5])
    assert transformer.last_guarantee_.n_changes == 10
    assert transformer.last_guarantee_.epsilon == transformer.calibration_.epsilon


def test_dp_histogram_weights_expose_the_released_histogram(counts):
    """histogram_ is the DP corpus histogram the weights came from (None without one)."""
    fitted = histogram_transformer(100, dxp.Accountant()).fit(counts)
    assert fitted.histogram_ is not None and fitted.histogram_.shape == (counts.shape[1],)
    assert np.all(fitted.histogram_ >= 0)
    assert LPLPTransformer(n_groups=100).fit(counts).histogram_ is None


def test_seeded_grouping_and_histogram_draw_from_separate_streams(counts, monkeypatch):
    """The grouping is published: in seeded mode, a grouping drawn from the DP histogram's
    stream would reveal the histogram's noise, and so the exact corpus counts."""
    from dxp_plugins.estimators import lplp as lplp_module

    first_draws: dict[str, np.ndarray] = {}
    real_context, real_histogram = lplp_module.GroupingContext, lplp_module.dp_histogram

    def context(**kwargs):
        first_draws["grouping"] = copy.deepcopy(kwargs["rng"]).integers(2**62, size=8)
        return real_context(**kwargs)

    def histogram(counts, epsilon, n_changes, rng, accountant=None):
        first_draws["histogram"] = copy.deepcopy(rng).integers(2**62, size=8)
        return real_histogram(counts, epsilon, n_changes, rng, accountant)

    monkeypatch.setattr(lplp_module, "GroupingContext", context)
    monkeypatch.setattr(lplp_module, "dp_histogram", histogram)
    transformer = LPLPTransformer(
        n_groups=100,
        grouping="random",
        weights="dp-histogram",
        histogram_epsilon=0.5,
        random_state=0,
    )
    with pytest.warns(dxp.SeededRandomnessWarning):
        transformer.fit(counts)
    assert transformer.histogram_ is not None
    assert set(first_draws) == {"grouping", "histogram"}
    assert not np.array_equal(first_draws["grouping"], first_draws["histogram"])


# -- topic evaluation: settings that silently change the results -------------------------------
@requires_gensim
def test_gensim_lda_passes_its_settings_to_gensim(counts, vocabulary):
    """passes, alpha and random_state reach LdaModel: one seed gives one model."""
    small = counts[:60]
    models = [
        topics.gensim_lda(
            small, vocabulary, num_topics=2, passes=2, alpha="asymmetric", random_state=4
        )
        for _ in range(2)
    ]
    assert models[0].passes == 2
    assert models[0].alpha[0] > models[0].alpha[1]  # "asymmetric": decreasing priors
    np.testing.assert_array_equal(models[0].get_topics(), models[1].get_topics())


@requires_gensim
def test_to_gensim_drops_explicitly_stored_zeros():
    """A stored zero (e.g. left by arithmetic) is no occurrence: gensim's dfs, cfs and
    num_nnz, which TF-IDF and u_mass use, must not count it; the caller's matrix is kept."""
    matrix = sp.csr_matrix(np.array([[1, 2, 0], [0, 3, 1]]))
    matrix.data[matrix.data == 2] = 0  # column 1 of document 0: stored, but zero
    assert matrix.nnz == 4
    corpus, dictionary = topics.to_gensim(matrix, ["a", "b", "c"])
    assert list(corpus) == [[(0, 1)], [(1, 3), (2, 1)]]
    assert dictionary.dfs == {0: 1, 1: 1, 2: 1} and dictionary.num_nnz == 3
    assert matrix.nnz == 4


def test_topic_helpers_default_to_the_papers_top_20_words():
    weights = np.arange(60, dtype=float).reshape(2, 30)
    names = [f"w{i}" for i in range(30)]
    assert topics.TOP_WORDS == 20
    assert [len(row) for row in topics.top_words(weights, names)] == [20, 20]
    assert topics.exclusivity(weights) == topics.exclusivity(weights, n=20)
    assert topics.exclusivity(weights) != topics.exclusivity(weights, n=10)


def test_a_boolean_setting_is_not_its_integer():
    """True == 1 in Python, but n_changes=True is a change (and a bool is no column index:
    a vocabulary {"a": False, "b": True} is refused, not read as columns 0 and 1)."""
    transformer = LPLPTransformer(n_groups=4).fit(small_counts())
    transformer.set_params(n_changes=True)
    with pytest.raises(ValueError, match="n_changes changed since fit"):
        transformer.transform(small_counts())
    with pytest.raises(ValueError, match="columns 0, 1"):
        LPLPTransformer(vocabulary={"a": False, "b": True}).fit(np.ones((3, 2), dtype=np.int64))


def test_feature_names_out_refuses_other_input_features():
    transformer = LPLPTransformer(vocabulary=["a", "b"]).fit(np.ones((3, 2), dtype=np.int64))
    assert list(transformer.get_feature_names_out(["a", "b"])) == ["a", "b"]
    with pytest.raises(ValueError, match="input_features differ from the vocabulary"):
        transformer.get_feature_names_out(["b", "a"])


def test_topic_matching_of_empty_topics_scores_zero():
    assert topics.jaccard([], []) == 0.0  # no shared word: not a perfect match
    np.testing.assert_array_equal(topics.topic_jaccard([], [["a"]]), [0.0])


def test_lsa_accuracy_passes_its_seed_to_truncated_svd(counts, monkeypatch):
    import sklearn.decomposition

    seeds = []
    real = sklearn.decomposition.TruncatedSVD

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        seeds.append(kwargs.get("random_state"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sklearn.decomposition, "TruncatedSVD", recording)
    labels = (np.arange(counts.shape[0]) % 2).astype(int)
    topics.lsa_accuracy(counts[:60], labels[:60], counts[60:90], labels[60:90], 5, random_state=7)
    assert seeds == [7]


def test_settings_holding_arrays_under_other_keys_are_a_change(monkeypatch):
    """As many keys, one of them renamed: compared item by item (an array inside), the
    other keys make it a change, not a KeyError."""
    from tests.door_fixtures import register

    def by_labels(context, labels, **options):
        return np.asarray(labels)

    register(monkeypatch, "groupings", "by-labels-options-test", by_labels)
    labels = np.arange(12) % 4
    transformer = LPLPTransformer(
        n_groups=4,
        grouping="by-labels-options-test",
        grouping_params={"labels": labels, "spread": 1},
    ).fit(small_counts())
    transformer.set_params(grouping_params={"labels": labels.copy(), "order": 1})
    with pytest.raises(ValueError, match="grouping_params changed since fit"):
        transformer.transform(small_counts())


def test_a_fitted_transformer_keeps_neither_the_raw_counts_nor_a_generator():
    """The once-only DP histogram (_HistogramOnce) holds the raw counts and the histogram's
    generator during fit; a pickle of the fitted transformer must carry neither (the closure
    it replaced could not be pickled, so keeping it by mistake failed loudly; this object
    pickles silently)."""
    import numpy as np
    import scipy.sparse as sp

    from dxp_plugins import EmbeddingTable

    words = [f"w{j}" for j in range(8)]
    table = EmbeddingTable(words, np.arange(16, dtype=float).reshape(8, 2), frequency_rank=range(8))
    raw = sp.csr_matrix(np.arange(1, 33, dtype=np.int64).reshape(4, 8) * 7919)
    transformer = LPLPTransformer(
        epsilon=1.0,
        n_groups=2,
        grouping="frequency",
        grouping_params={"order": "histogram"},
        weights="dp-histogram",
        histogram_epsilon=1.0,
        vocabulary=words,
        embeddings=table,
        random_state=3,
    ).fit(raw)
    assert transformer.histogram_ is not None  # the histogram was released
    data = pickle.dumps(transformer)
    assert b"_HistogramOnce" not in data and b"__generator_ctor" not in data
    assert np.ascontiguousarray(raw.data).tobytes() not in data
