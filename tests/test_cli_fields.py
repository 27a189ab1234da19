"""``dxp privatize --field body --field subject``: several JSONL fields in one run.

A repeated ``--field`` was refused (review 25, F1: argparse let the last win, and under
``--keep-fields '*'`` the first field was copied raw). It is now an explicit multi-field
mode: each ``--field`` is privatized, the output holds them all, and a record is one
document whose tokens (so whose spend) are the sum of its fields': the report's
``max_tokens_per_document`` and ``max_document_spend`` bound a record, as two runs of one
field each would have added up (front-doors.md). A name given twice is still refused.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from dxp_plugins.cli import main

FAST = ["--vocab-size", "5000"]
TICKETS = [
    {"id": 1, "subject": "the music", "body": "the hockey team won", "agent": "zq7agent"},
    {"id": 2, "subject": "team", "body": "music"},
]


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _source(tmp_path, monkeypatch, source, rows, tail=b""):
    data = "".join(json.dumps(row) + "\n" for row in rows).encode() + tail
    (tmp_path / "in.jsonl").write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.chdir(tmp_path)
    return source


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_each_field_is_privatized_and_a_record_spends_their_sum(
    tmp_path, capsys, monkeypatch, source
):
    source = _source(tmp_path, monkeypatch, source, TICKETS)
    argv = ["privatize", source, "--field", "body", "--field", "subject", "--keep-fields", "id"]
    code, out, err = run([*argv, "-e", 300, "--report", "r.json", *FAST], capsys)
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [  # epsilon 300 keeps words
        {"id": 1, "subject": "the music", "body": "the hockey team won"},
        {"id": 2, "subject": "team", "body": "music"},
    ]
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["documents"] == 2 and record["guarantee"]["releases"] == 2
    assert record["guarantee"]["tokens_privatized"] == 8
    # The first record: 4 + 2 tokens, one document (not the larger field's 4).
    assert record["max_tokens_per_document"] == 6 and record["max_document_spend"] == 1800.0
    assert record["guarantee"]["spend"] == 2400.0
    assert "at most 6 tokens, 1800, per document" in record["statement"]
    assert record["unprotected_fields"] == ["id"]


def test_every_field_goes_through_the_mechanism(tmp_path, capsys, monkeypatch):
    """An out-of-vocabulary word in either field is replaced (--oov unk), never copied."""
    rows = [{"body": "the zq7body team", "subject": "zq7subject music"}]
    source = _source(tmp_path, monkeypatch, "in.jsonl", rows)
    argv = ["privatize", source, "--field", "subject", "--field", "body", "-e", 300, *FAST]
    code, out, err = run(argv, capsys)
    assert code == 0 and "zq7" not in out and "zq7" not in err, err
    assert set(json.loads(out)) == {"body", "subject"}


def test_every_field_but_the_private_ones_under_star(tmp_path, capsys, monkeypatch):
    source = _source(tmp_path, monkeypatch, "in.jsonl", TICKETS)
    argv = ["privatize", source, "--field", "body", "--field", "subject", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, "--report", "-", *FAST], capsys)
    assert code == 0, err
    record = json.loads(err[err.index("{") :])
    assert record["unprotected_fields"] == ["agent", "id"]
    assert json.loads(out.splitlines()[0])["agent"] == "zq7agent"


@pytest.mark.parametrize("source", ["in.jsonl", "-"])  # checked before any noise / as it goes
def test_an_oov_word_is_located_in_its_field(tmp_path, capsys, monkeypatch, source):
    rows = [*TICKETS, {"id": 3, "subject": "team", "body": "the team"}]
    rows.append({"id": 4, "body": "music", "subject": "the zq7oov"})
    source = _source(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--field", "body", "--field", "subject", "--oov", "raise"]
    code, _, err = run([*argv, "-e", 300, "--batch-size", 2, *FAST], capsys)
    assert code == 1 and "zq7" not in err, err
    assert (
        "line 4: out-of-vocabulary token at character 5 of field 'subject' (counted from 1) "
        "under --oov raise"
    ) in err


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_a_second_field_with_no_text_is_refused(tmp_path, capsys, monkeypatch, source):
    """A wrong second --field, null in every record, is refused as a wrong single one is:
    under --keep-fields '*' the column it was meant to be would go out raw."""
    rows = [{"body": "team", "subjet": "zq7secret", "subject": None}] * 3
    source = _source(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--field", "body", "--field", "subject", "--null", "keep"]
    code, out, err = run([*argv, "--keep-fields", "*", "-e", 300, "--batch-size", 1], capsys)
    assert code == 1 and out == "" and "zq7" not in err, err
    assert "no record held a word in field 'subject'" in err


def test_a_missing_or_null_second_field_is_named(tmp_path, capsys, monkeypatch):
    source = _source(tmp_path, monkeypatch, "in.jsonl", [{"body": "team"}])
    argv = ["privatize", source, "--field", "body", "--field", "subject", "-e", 300, *FAST]
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "", err
    assert "line 1: field 'subject' is missing" in err
    (tmp_path / "in.jsonl").write_text('{"body": "team", "subject": null}\n')
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "" and "line 1: field 'subject' is null (--null keep" in err


def test_a_null_field_counts_its_record_once(tmp_path, capsys, monkeypatch):
    rows = [{"body": None, "subject": None}, {"body": "team", "subject": None}]
    rows.append({"body": "music", "subject": "team"})
    source = _source(tmp_path, monkeypatch, "in.jsonl", rows)
    argv = ["privatize", source, "--field", "body", "--field", "subject", "--null", "keep"]
    code, out, err = run([*argv, "-e", 300, "--report", "-", *FAST], capsys)
    assert code == 0, err
    assert out.splitlines()[:2] == [
        '{"body": null, "subject": null}',
        '{"body": "team", "subject": null}',
    ]
    record = json.loads(err[err.index("{") :])
    assert record["records_with_null_field"] == 2 and record["documents"] == 3
    assert record["max_tokens_per_document"] == 2
