"""``Guarantee.words_passed_through``: of the tokens passed through unchanged, how many were
words released raw and unprotected (OOV words under ``oov="passthrough"``, words a
restricted selection left out), rather than allow-listed punctuation.

Review 12, F2: ``tokens_passed_through`` alone lumped both together, so an auditor of
``dxp privatize --oov passthrough --report`` could not tell that a raw word went out."""

from __future__ import annotations

import dataclasses
import io
import json
import sys

import pytest

import dxp_plugins as dxp
from dxp_plugins.guarantee import Guarantee
from dxp_plugins.text import privatize_text, privatize_texts
from tests.door_fixtures import register

OOV = "zq7canaryxx"


def passthrough(cls, table, **params):
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        return cls(table, 300.0, oov="passthrough", **params)


def record(glove_5k, passed=6, words=1):
    mech = dxp.Madlib(glove_5k, 2.0)
    return dataclasses.replace(
        mech.guarantee(1), tokens_passed_through=passed, words_passed_through=words
    )


# -- the record ------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [-1, 1.0, True, "1", None])
def test_the_count_is_checked_like_the_other_counts(glove_5k, value):
    with pytest.raises((TypeError, ValueError), match="words_passed_through"):
        record(glove_5k, words=value)
    as_dict = {**record(glove_5k).to_dict(), "words_passed_through": value}
    with pytest.raises((TypeError, ValueError), match="words_passed_through"):
        Guarantee.from_dict(as_dict)


def test_the_raw_words_are_never_more_than_the_tokens_passed_through(glove_5k):
    assert record(glove_5k, passed=3, words=3).words_passed_through == 3
    with pytest.raises(ValueError, match="must not exceed tokens_passed_through"):
        record(glove_5k, passed=3, words=4)
    with pytest.raises(ValueError, match="must not exceed tokens_passed_through"):
        Guarantee.from_dict(
            {**record(glove_5k, passed=3, words=3).to_dict(), "tokens_passed_through": 2}
        )
    with pytest.raises(ValueError, match="must not exceed"):  # the mechanism's record too
        dataclasses.replace(dxp.Madlib(glove_5k, 2.0).guarantee(3, 2), tokens_passed_through=1)


def test_the_count_round_trips_and_a_record_without_it_is_refused(glove_5k):
    original = record(glove_5k, passed=6, words=1)
    as_dict = original.to_dict()
    keys = list(as_dict)
    assert keys.index("words_passed_through") == keys.index("tokens_passed_through") + 1
    assert Guarantee.from_dict(json.loads(json.dumps(as_dict))) == original
    missing = {k: v for k, v in as_dict.items() if k != "words_passed_through"}
    with pytest.raises(ValueError, match="has no words_passed_through"):
        Guarantee.from_dict(missing)  # it would read as "no raw word released"


def test_merge_and_combine_sum_the_raw_words(glove_5k):
    a, b = record(glove_5k, passed=6, words=1), record(glove_5k, passed=2, words=2)
    merged = a.merge(b)
    assert (merged.tokens_passed_through, merged.words_passed_through) == (8, 3)
    total = Guarantee.combine([a, b, record(glove_5k, passed=4, words=0)])
    assert total is not None
    assert (total.tokens_passed_through, total.words_passed_through) == (12, 3)
    assert a.add_passed_through(3, 2).words_passed_through == 3
    assert a.add_passed_through(3).words_passed_through == 1  # punctuation only


@pytest.mark.parametrize(
    ("passed", "words", "wording"),
    [
        (6, 0, "; 6 tokens passed through unchanged; noise"),
        (6, 1, "; 6 tokens passed through unchanged (1 of them a word released raw); noise"),
        (6, 2, "; 6 tokens passed through unchanged (2 of them words released raw); noise"),
        (1, 1, "; 1 token passed through unchanged (a word released raw); noise"),
        (3, 3, "; 3 tokens passed through unchanged (all of them words released raw); noise"),
    ],
)
def test_the_statement_says_how_many_words_went_out_raw(glove_5k, passed, words, wording):
    statement = record(glove_5k, passed=passed, words=words).statement
    assert wording in statement
    assert ("released raw" in statement) == (words > 0)


# -- where it is counted ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cls", "params"), [(dxp.Madlib, {}), (dxp.TEM, {}), (dxp.BRR, {"n_bits": 64})]
)
def test_each_mechanism_counts_its_oov_passthrough_words(glove_5k, cls, params):
    mech = passthrough(cls, glove_5k, **params)
    outputs, records = mech.privatize_batch([["the", OOV, ",", "zq8other"], ["team"], []])
    assert outputs[0][1] == OOV and outputs[0][3] == "zq8other"
    counts = [
        (r.tokens_privatized, r.tokens_passed_through, r.words_passed_through) for r in records
    ]
    assert counts == [(2, 2, 2), (1, 0, 0), (0, 0, 0)]  # "," is a vocabulary word here
    assert mech.last_guarantee.words_passed_through == 2
    assert mech.guarantee(3, 1).words_passed_through == 1  # BRR's override keeps it
    unk = cls(glove_5k, 300.0, **params)
    unk.privatize([OOV, "the"])
    assert unk.last_guarantee.words_passed_through == 0  # privatized via UNK: no raw word


def test_the_text_path_counts_oov_words_but_not_punctuation(glove_5k):
    mech = passthrough(dxp.Madlib, glove_5k)
    result = privatize_text(f"{OOV} , . ! ( ) the", mech)
    assert result.text.split()[:6] == [OOV, ",", ".", "!", "(", ")"]
    record = result.guarantee
    assert (record.tokens_privatized, record.tokens_passed_through) == (1, 6)
    assert record.words_passed_through == 1
    default = privatize_text(f"{OOV} , . ! ( ) the", dxp.Madlib(glove_5k, 300.0)).guarantee
    assert (default.tokens_passed_through, default.words_passed_through) == (5, 0)


def test_a_restricted_selection_counts_the_words_it_left_out(monkeypatch, glove_5k):
    """Unselected words are released raw; unselected punctuation and layout are not words."""
    register(monkeypatch, "token_filters", "long.v1", lambda token: len(token) > 4)
    from dxp_plugins.doors import DoorSettings

    select = DoorSettings.create(epsilon=1.0, token_filter="long.v1").selector()
    text = f"the {OOV} keys ,\u200b please !"
    [result] = privatize_texts([text], dxp.Madlib(glove_5k, 300.0), select=select)
    record = result.guarantee
    # privatized: zq7canaryxx (via UNK), please; passed: the, keys (words), "," and "!"
    assert (record.tokens_privatized, record.tokens_passed_through) == (2, 4)
    assert record.words_passed_through == 2
    assert "(2 of them words released raw)" in record.statement
    mech = passthrough(dxp.Madlib, glove_5k)
    [result] = privatize_texts([text], mech, select=select)
    record = result.guarantee  # plus the OOV word the mechanism passed through
    assert (record.tokens_privatized, record.tokens_passed_through) == (1, 5)
    assert record.words_passed_through == 3


def test_a_long_text_sums_the_raw_words_of_its_pieces(monkeypatch, glove_5k):
    import dxp_plugins.text as text_module

    monkeypatch.setattr(text_module, "PIECE_CHARS", 200)
    mech = passthrough(dxp.Madlib, glove_5k)
    result = privatize_text(f"{OOV} , the team\n" * 50, mech)
    record = result.guarantee
    assert record.releases == 1
    assert (record.tokens_privatized, record.tokens_passed_through) == (100, 100)
    assert record.words_passed_through == 50


# -- every front door ------------------------------------------------------------------------
def test_the_spacy_component_records_the_raw_words(monkeypatch):
    import spacy

    register(monkeypatch, "token_filters", "short.v1", lambda token: len(token) <= 3)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer", config={"epsilon": 300.0, "vocab_size": 2000, "token_filter": "short.v1"}
    )
    record = nlp("the encryption key , please")._.dxp_guarantee
    # privatized: the, key; passed: encryption, please (words) and ","
    assert (record["tokens_privatized"], record["tokens_passed_through"]) == (2, 3)
    assert record["words_passed_through"] == 2
    assert Guarantee.from_dict(record).words_passed_through == 2

    nlp = spacy.blank("en")
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        nlp.add_pipe(
            "dxp_privatizer", config={"epsilon": 300.0, "vocab_size": 2000, "oov": "passthrough"}
        )
        record = nlp(f"{OOV} , . the")._.dxp_guarantee
    assert (record["tokens_passed_through"], record["words_passed_through"]) == (3, 1)


def test_the_sklearn_transformer_records_the_raw_words(glove_5k):
    from dxp_plugins.estimators import TextPrivatizer

    step = TextPrivatizer(epsilon=300.0, embeddings=glove_5k, oov="passthrough")
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        out = step.fit_transform([f"{OOV} , . ! the", "team ( )"])
    assert out[0].startswith(f"{OOV} , . !")
    record = step.last_guarantee_
    assert (record.tokens_privatized, record.tokens_passed_through) == (2, 6)
    assert record.words_passed_through == 1


def test_the_cli_report_records_the_raw_words(tmp_path, capsys, monkeypatch):
    """Review 12, F2's example (``hello`` replaced by a word of the 5,000-word table)."""
    from dxp_plugins.cli import main

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Zyxwvut , . ! ( ) the\n")))
    report = tmp_path / "report.json"
    args = ["privatize", "-e", "10", "--vocab-size", "5000", "--oov", "passthrough"]
    code = main([*args, "--report", str(report)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.startswith("Zyxwvut , . ! ( ) ")
    written = json.loads(report.read_text())
    guarantee = written["guarantee"]
    assert (guarantee["tokens_passed_through"], guarantee["words_passed_through"]) == (6, 1)
    assert (
        "6 tokens passed through unchanged (1 of them a word released raw)"
        in (written["statement"])
    )


# -- the ledger ------------------------------------------------------------------------------
def test_the_accountant_counts_the_words_released_raw(monkeypatch, glove_5k):
    """Review 14, F2: words released raw spend nothing, so a ledger with thousands of them
    looked like a fully private one. Every door adds them to the ledger, once: the OOV words
    where the mechanism passes them through, the unselected words where the text path does."""
    register(monkeypatch, "token_filters", "long.v1", lambda token: len(token) > 4)
    from dxp_plugins.doors import DoorSettings

    select = DoorSettings.create(epsilon=1.0, token_filter="long.v1").selector()
    ledger = dxp.Accountant()
    mech = passthrough(dxp.Madlib, glove_5k, accountant=ledger)
    texts = [f"the {OOV} keys , please !", "  ", "the team won"]
    results = list(privatize_texts(texts, mech, select=select))
    raw = sum(result.guarantee.words_passed_through for result in results)
    assert raw == 3 + 3 and ledger.words_released_raw == raw
    mech.privatize_batch([[OOV, "the"], ["team"]])  # a mechanism called directly
    assert ledger.words_released_raw == raw + 1
    assert "7 words released raw" in repr(ledger)
    assert dxp.Accountant.resume(ledger.to_dict()).words_released_raw == 7
    private = dxp.Accountant()
    list(privatize_texts(texts, dxp.Madlib(glove_5k, 300.0, accountant=private)))
    assert private.words_released_raw == 0 and "raw" not in repr(private)
    with pytest.raises(ValueError, match="words must be an int"):
        ledger.record_raw(-1)


def test_the_doors_ledgers_count_the_raw_words(glove_5k):
    ledger = dxp.Accountant()
    step = dxp.TextPrivatizer(
        epsilon=300.0, embeddings=glove_5k, oov="passthrough", accountant=ledger
    )
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        step.fit_transform([f"{OOV} , . ! the", "team ( )", f"{OOV} {OOV}"])
    assert ledger.words_released_raw == step.last_guarantee_.words_passed_through == 3
