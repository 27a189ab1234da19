"""``Guarantee.max_document_tokens`` / ``max_document_spend``: what any one document spent.

Review 14, F3: a merged record (``TextPrivatizer.last_guarantee_``, ``Guarantee.combine``
of spaCy Docs, the CLI's report) stated only the corpus total, ε times every token, about
200x the figure to quote when one document is one person; only the CLI's report had the
per-document figure, outside the guarantee."""

from __future__ import annotations

import dataclasses
import json

import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins.guarantee import Guarantee
from dxp_plugins.text import PIECE_CHARS, privatize_texts
from tests.test_cli import run

TEXTS = ["the hockey team won the final game last night", "a fine day", "  ", "won"]


def test_a_merged_record_states_its_largest_document(glove_5k):
    step = dxp.TextPrivatizer(epsilon=5.9, embeddings=glove_5k)
    step.fit_transform(TEXTS)
    record = step.last_guarantee_
    assert (record.tokens_privatized, record.releases, record.max_document_tokens) == (13, 4, 9)
    assert record.max_document_spend == 5.9 * 9
    assert "(total 76.7 per unit distance; at most 9 tokens, 53.1, per document per release)" in (
        record.statement
    )
    as_json = json.loads(json.dumps(record.to_dict()))
    assert as_json["max_document_tokens"] == 9 and as_json["max_document_spend"] == 5.9 * 9
    assert Guarantee.from_dict(as_json) == record


def test_one_document_is_its_own_largest(glove_5k):
    mech = dxp.Madlib(glove_5k, 2.0)
    single = dxp.privatize_text("the team won", mech).guarantee
    assert single.max_document_tokens is None and single.max_document_spend == single.spend
    assert "at most" not in single.statement
    mech.privatize(["team", "won"])
    assert mech.last_guarantee.max_document_spend == 4.0
    # One long document of many pieces is still one document.
    long = "the team won " * (PIECE_CHARS // 12 + 10)
    (result,) = privatize_texts([long], mech)
    assert result.guarantee.max_document_tokens is None
    assert result.guarantee.max_document_spend == result.guarantee.spend > 2.0 * 30_000


def test_merging_keeps_the_largest_whatever_the_order(glove_5k):
    mech = dxp.Madlib(glove_5k, 2.0)
    records = [mech.guarantee(tokens) for tokens in (3, 7, 0, 5)]
    for order in (records, records[::-1], records[1:] + records[:1]):
        merged = Guarantee.combine(order)
        assert (merged.tokens_privatized, merged.max_document_tokens) == (15, 7)
        assert merged.max_document_spend == 14.0
    # A document holding every token: the largest is the total, one form for both.
    only = Guarantee.combine([mech.guarantee(4), mech.guarantee(0)])
    assert only.max_document_tokens is None and only == dataclasses.replace(
        mech.guarantee(4), releases=2
    )


def test_the_field_is_checked_and_read_back_strictly(glove_5k):
    record = Guarantee.combine(dxp.Madlib(glove_5k, 2.0).guarantee(n) for n in (3, 7))
    data = record.to_dict()
    for key, value in (("max_document_tokens", 11), ("max_document_tokens", -1)):
        with pytest.raises(ValueError, match="max_document_tokens"):
            Guarantee.from_dict({**data, key: value, "max_document_spend": 2.0 * abs(value)})
    with pytest.raises(TypeError, match="max_document_tokens"):
        dataclasses.replace(record, max_document_tokens=2.5)
    with pytest.raises(ValueError, match="max_document_spend"):
        Guarantee.from_dict({**data, "max_document_spend": 2.0})  # understated
    # A record written before the field existed reads as one document: the bound it then
    # gives is the total, an overstatement, never an understatement.
    older = {
        key: value
        for key, value in data.items()
        if not key.startswith("max_document") and key != "statement"
    }
    assert Guarantee.from_dict(older).max_document_spend == record.spend


def test_spacy_docs_and_the_cli_report_agree(tmp_path, capsys):
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 2.5, "vocab_size": 5000})
    docs = list(nlp.pipe(TEXTS))
    total = Guarantee.combine(Guarantee.from_dict(doc._.dxp_guarantee) for doc in docs)
    assert total.max_document_tokens == 9 and total.max_document_spend == 2.5 * 9
    source = tmp_path / "in.txt"
    source.write_text("\n".join(TEXTS) + "\n")
    report = tmp_path / "report.json"
    run(
        ["privatize", str(source), "-e", "2.5", "--vocab-size", "5000", "--report", str(report)],
        capsys,
    )
    written = json.loads(report.read_text())
    assert written["max_document_spend"] == written["guarantee"]["max_document_spend"] == 22.5
    assert written["guarantee"]["max_document_tokens"] == 9


def test_a_document_released_twice_is_not_called_one_release(glove_5k):
    """Diff review 14, F1: merging fit_transform's and transform's records of the same texts
    kept the largest document's 18 and said 'in one document', though that document spent
    36. A merge cannot tell; the figure is per release, and the statement says so."""
    step = dxp.TextPrivatizer(epsilon=2.0, embeddings=glove_5k)
    first = (step.fit_transform(TEXTS), step.last_guarantee_)[1]
    second = (step.transform(TEXTS), step.last_guarantee_)[1]
    both = first.merge(second)
    assert both.max_document_spend == 18.0 and both.spend == 2 * first.spend == 52.0
    assert "at most 9 tokens, 18, per document per release" in both.statement
    assert "in one release" in Guarantee.max_document_spend.__doc__
