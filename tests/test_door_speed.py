"""The door speed-ups of the 22nd review (warmed tokenizer, direct token writes, the
transform fast path) change no output and keep every check."""

from __future__ import annotations

import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer, _pipelines
from dxp_plugins import text as text_path
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
        monkeypatch.setattr(text_path, "WARM_WORDS", 0)
        expected = text_path._tokenized(texts, blank, None, None, glove_5k)
        pipelines[None] = warm
        monkeypatch.setattr(text_path, "WARM_WORDS", 5000)
        monkeypatch.setattr(text_path, "WARM_AFTER_CHARS", 0)
        assert text_path._tokenized(texts, blank, None, None, glove_5k) == expected
        assert text_path._WARMTH[warm] == -1  # warmed, once
        assert len(warm.vocab.strings) > len(cold.vocab.strings) + 1000  # public words, kept
        canary = "zq7warmcanaryx"
        text_path._tokenized([f"a {canary} b"], [False], None, None, glove_5k)
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
