"""``--keep-fields '*'`` in the report names the fields that went out raw (review 25, F5).

The report's ``unprotected_fields`` was ``["*"]``: an auditor could not tell that a
``customer_email`` column had been copied unchanged. It now lists, sorted, the top-level
names some record held (as it does for named fields), at most 100 of them, and
``unprotected_fields_unlisted`` counts the others; the statement names the same fields.
Warnings still never name a key read from the data.
"""

from __future__ import annotations

import io
import json
import sys

import pytest

from dxp_plugins.cli import main

FAST = ["--vocab-size", "5000"]

TICKETS = [
    {
        "id": 1,
        "customer_email": "zq7mail@example.com",
        "subject": "zq7subject",
        "body": "the hockey team",
        "meta": {"agent": "zq7agent", "notes": "zq7notes"},
    },
    {"id": 2, "body": "the music", "priority": "high"},
    {"body": "team"},
]


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _input(tmp_path, monkeypatch, source, rows):
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    (tmp_path / "in.jsonl").write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.chdir(tmp_path)
    return source


@pytest.mark.parametrize("source", ["in.jsonl", "-"])  # read through first / as it goes
def test_every_field_lists_the_names_some_record_held(tmp_path, capsys, monkeypatch, source):
    source = _input(tmp_path, monkeypatch, source, TICKETS)
    argv = ["privatize", source, "--field", "body", "--keep-fields", "*", "-e", 300, *FAST]
    code, out, err = run([*argv, "--report", "report.json"], capsys)
    assert code == 0, err
    assert [sorted(json.loads(line)) for line in out.splitlines()] == [
        sorted(row) for row in TICKETS
    ]
    record = json.loads((tmp_path / "report.json").read_text())
    names = ["customer_email", "id", "meta", "priority", "subject"]  # top level, sorted
    assert record["unprotected_fields"] == names
    assert record["unprotected_fields_unlisted"] == 0
    assert record["statement"].endswith(
        " JSONL fields customer_email, id, meta, priority, subject copied unchanged and "
        "unprotected (--keep-fields '*': every field but those privatized)."
    )
    # stderr names no key read from the data (they may be private): only the opt-in warning
    assert err.count("\n") == 1 and "customer_email" not in err and "zq7" not in err


def test_no_other_field_held_lists_none(tmp_path, capsys, monkeypatch):
    source = _input(tmp_path, monkeypatch, "in.jsonl", [{"text": "team"}, {"text": "music"}])
    argv = ["privatize", source, "--keep-fields", "*", "-e", 300, "--report", "-", *FAST]
    code, _, err = run(argv, capsys)
    record = json.loads(err[err.index("{") :])
    assert code == 0 and record["unprotected_fields"] == []
    assert record["unprotected_fields_unlisted"] == 0
    assert "--keep-fields" not in record["statement"]  # nothing was copied


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_a_key_per_record_is_listed_up_to_100_and_counted(tmp_path, capsys, monkeypatch, source):
    """A file whose records each hold their own key cannot blow the report up."""
    rows = [{"text": "team", f"k{i:03d}": i, "id": i} for i in range(250)]
    source = _input(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--keep-fields", "*", "-e", 300, "--report", "r.json", *FAST]
    code, _, err = run([*argv, "--batch-size", 7], capsys)
    assert code == 0, err
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["unprotected_fields"] == ["id", *(f"k{i:03d}" for i in range(99))]
    assert record["unprotected_fields_unlisted"] == 151  # 251 names, 100 listed
    assert ", k098 and 151 more copied unchanged and unprotected" in record["statement"]


def test_counting_stops_at_a_bound_and_says_at_least(tmp_path, capsys, monkeypatch):
    """Distinct names are counted up to a bound (bounded memory on a key per record); past
    it the count is a floor, and the statement says so. The listing stays the first
    names in sorted order, whatever the order they came in."""
    from dxp_plugins.cli import records

    monkeypatch.setattr(records, "LISTED_FIELDS", 3)
    monkeypatch.setattr(records, "COUNTED_FIELDS", 10)
    rows = [{"text": "team", f"k{i:02d}": i} for i in reversed(range(40))]
    source = _input(tmp_path, monkeypatch, "in.jsonl", rows)
    argv = ["privatize", source, "--keep-fields", "*", "-e", 300, "--report", "r.json", *FAST]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["unprotected_fields"] == ["k00", "k01", "k02"]
    assert record["unprotected_fields_unlisted"] == 7  # 10 counted: at least 7 more
    assert "fields k00, k01, k02 and at least 7 more copied unchanged" in record["statement"]


def test_named_fields_are_listed_as_typed_and_never_past_the_bound(tmp_path, capsys, monkeypatch):
    from dxp_plugins.cli import records

    monkeypatch.setattr(records, "LISTED_FIELDS", 2)
    source = _input(tmp_path, monkeypatch, "in.jsonl", [{"text": "team", "c": 1, "a": 2, "b": 3}])
    argv = ["privatize", source, "--keep-fields", "c,a,b", "-e", 300, "--report", "r.json"]
    code, _, err = run([*argv, *FAST], capsys)
    record = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and record["unprotected_fields"] == ["c", "a"], err
    assert record["unprotected_fields_unlisted"] == 1
    assert (
        "JSONL fields c, a and 1 more copied unchanged and unprotected (--keep-fields)."
        in (record["statement"])
    )


def test_a_failed_run_lists_the_fields_it_had_copied(tmp_path, capsys, monkeypatch):
    """The partial report of a run failing midway names the fields already copied."""
    rows = [{"text": "team", "a": 1}, {"text": "team", "b": 2}]
    data = "".join(json.dumps(row) + "\n" for row in rows) + '{"text": 3, "zq7c": 1}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    report = tmp_path / "r.json"
    argv = ["privatize", "--keep-fields", "*", "-e", 300, "--report", report, "--batch-size", 1]
    code, out, err = run([*argv, *FAST], capsys)
    assert code == 1 and out.count("\n") == 2, err
    partial = json.loads(report.read_text())
    assert partial["complete"] is False and partial["unprotected_fields"] == ["a", "b"]
    assert "zq7" not in err


def test_a_failed_run_on_a_file_lists_only_the_fields_of_records_it_wrote(
    tmp_path, capsys, monkeypatch
):
    """Diff review F2: a regular file is read through first (the census), and the partial
    report of a run interrupted midway listed the keys of every record, also of records
    never written (keys are data)."""
    from dxp_plugins.cli.report import _Released

    source, report = tmp_path / "in.jsonl", tmp_path / "r.json"
    rows = [{"text": "team", "a": 1}, {"text": "team", "b": 2}, {"text": "team", "zq7c": 3}]
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    write, calls = _Released.write, []

    def interrupted(self, out, lines, guarantees, *nulls):
        calls.append(len(lines))
        if len(calls) == 2:
            raise KeyboardInterrupt
        write(self, out, lines, guarantees, *nulls)

    monkeypatch.setattr(_Released, "write", interrupted)
    argv = ["privatize", source, "--keep-fields", "*", "-e", 300, "--report", report]
    code = main([str(a) for a in [*argv, "--batch-size", 1, *FAST]])
    assert code != 0 and len(calls) == 2
    partial = json.loads(report.read_text())
    assert partial["complete"] is False and partial["documents"] == 1
    # "b" is the batch being written when the interrupt came (listed, as it may be out);
    # the third record was never reached.
    assert partial["unprotected_fields"] == ["a", "b"]
    assert "zq7c" not in json.dumps(partial)
