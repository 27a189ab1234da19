"""``dxp privatize --null keep``: a JSONL record whose ``--field`` is null (open work 31).

A ticket export holds empty bodies as ``null``, and one such record stopped the run. The
first fix (twenty-fifth session, reverted in 587317a) wrote them back as null silently,
and a wrong ``--field`` (null in every record, the text in another column) under
``--keep-fields '*'`` then copied the real text raw with exit 0. Now:

* by default a null is still an error, one line naming the opt-in and no input;
* ``--null keep`` writes it as null, privatizes and spends nothing for it, and the report
  counts it (``records_with_null_field``);
* an input, under ``--null keep`` or ``--keep-fields``, in which no record held a word in
  ``--field`` (null, ``""``, ``"-"``, spaces, a zero-width space) is refused: a regular
  file in the read-through first, with nothing written; a stream's output is held back
  until a record holds a word when it goes to stdout or a pipe (not for an ``-o FILE``,
  replaced only when the run succeeds). Each input on its own: one good file does not
  let another's text column through (CLI review P1, P2);
* a missing field and a non-string value stay errors.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dxp_plugins.cli import main

FAST = ["--vocab-size", "5000"]
#: A wrong --field: ``body`` is null in every record, the text is in ``text``.
WRONG_FIELD = [
    {"id": 1, "body": None, "text": "zq7secret hockey"},
    {"id": 2, "body": None, "text": "zq7private music"},
]
TICKETS = [
    {"id": 1, "body": None, "email": "zq7mail@example.com"},
    {"id": 2, "body": "the hockey team", "email": "zq7other@example.com"},
    {"id": 3, "body": None},
    {"id": 4, "body": ""},
]


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _jsonl(rows):
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def _source(tmp_path, monkeypatch, source, rows):
    """``in.jsonl`` (read through before any noise) or stdin (read as the run goes)."""
    data = _jsonl(rows)
    (tmp_path / "in.jsonl").write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.chdir(tmp_path)
    return source if source == "in.jsonl" else "-"


def _errors(err):
    return [line for line in err.splitlines() if not line.startswith("dxp: warning")]


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_a_null_field_is_an_error_naming_the_opt_in(tmp_path, capsys, monkeypatch, source):
    source = _source(tmp_path, monkeypatch, source, TICKETS)
    argv = ["privatize", source, "--field", "body", "-e", 300, "--report", "r.json", *FAST]
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert err.startswith("dxp: error: ") and "line 1: field 'body' is null" in err
    assert "--null keep" in err and "zq7" not in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_keep_writes_null_spends_nothing_and_counts_it(tmp_path, capsys, monkeypatch, source):
    source = _source(tmp_path, monkeypatch, source, TICKETS)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "id"]
    code, out, err = run([*argv, "-e", 300, "--report", "r.json", *FAST], capsys)
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == [
        {"id": 1, "body": None},
        {"id": 2, "body": "the hockey team"},  # epsilon 300 keeps the words
        {"id": 3, "body": None},
        {"id": 4, "body": ""},
    ]
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["complete"] is True and record["documents"] == 4
    assert record["records_with_null_field"] == 2
    assert record["guarantee"]["tokens_privatized"] == 3  # only the text: nulls spend nothing
    assert record["guarantee"]["spend"] == 900.0 and record["max_document_spend"] == 900.0
    assert record["unprotected_fields"] == ["id"] and "zq7" not in err


def test_a_run_without_nulls_reports_zero(tmp_path, capsys, monkeypatch):
    source = _source(tmp_path, monkeypatch, "in.jsonl", [{"text": "team"}])
    code, _, err = run(["privatize", source, "-e", 300, "--report", "-", *FAST], capsys)
    assert code == 0 and json.loads(err[err.index("{") :])["records_with_null_field"] == 0


def test_keep_with_the_early_check_of_oov_raise(tmp_path, capsys, monkeypatch):
    """The read-through that looks for out-of-vocabulary words first takes a null too."""
    source = _source(tmp_path, monkeypatch, "in.jsonl", TICKETS)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--oov", "raise"]
    code, out, err = run([*argv, "-e", 300, *FAST], capsys)
    assert code == 0 and out.count("null") == 2, err


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
@pytest.mark.parametrize(
    "options",
    [
        ["--null", "keep", "--keep-fields", "*"],  # the reverted change's raw copy
        ["--null", "keep", "--keep-fields", "id"],
        ["--null", "keep"],  # a whole output of nulls: surely a wrong --field
    ],
    ids=["keep-all", "keep-id", "no-kept-fields"],
)
@pytest.mark.parametrize("output", ["stdout", "file"])
def test_a_wrong_field_null_everywhere_is_refused_with_nothing_written(
    tmp_path, capsys, monkeypatch, source, options, output
):
    source = _source(tmp_path, monkeypatch, source, WRONG_FIELD)
    to = ["-o", "out.jsonl"] if output == "file" else []
    argv = ["privatize", source, "--field", "body", *options, *to, "--report", "r.json"]
    code, out, err = run([*argv, "-e", 300, "--batch-size", 1, *FAST], capsys)
    errors = _errors(err)
    assert code == 1 and out == "" and len(errors) == 1, err
    label = "stdin" if source == "-" else "in.jsonl"
    assert errors[0] == (
        f"dxp: error: {label}: no record held a word in field 'body' (each one null, empty, "
        "or only spaces or punctuation): is --field right? With --null keep or --keep-fields "
        "such an input is refused, as it would release its records with nothing privatized"
    )
    assert "zq7" not in err and "already written" not in err
    assert not (tmp_path / "out.jsonl").exists() and not (tmp_path / "r.json").exists()


def test_a_file_with_no_text_is_refused_before_anything_is_privatized(
    tmp_path, capsys, monkeypatch
):
    """A regular file is read through first: the refusal comes before any record reaches
    the mechanism (and whatever its size: the hold of a stream's output plays no part)."""
    from dxp_plugins import text
    from dxp_plugins.cli import privatize

    def no_privatizing(*args, **kwargs):
        raise AssertionError("a record was privatized")

    monkeypatch.setattr(text, "privatize_texts", no_privatizing)
    monkeypatch.setattr(privatize, "HELD_BYTES", 1)
    source = _source(tmp_path, monkeypatch, "in.jsonl", WRONG_FIELD)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and "no record held a word in field 'body'" in err, err


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_kept_fields_with_a_field_empty_everywhere_are_refused(
    tmp_path, capsys, monkeypatch, source
):
    """Without --null keep too: a wrong --field that is "" in every record."""
    rows = [{"id": 1, "body": "", "text": "zq7secret"}, {"id": 2, "body": ""}]
    source = _source(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--field", "body", "--keep-fields", "*", "-e", 300, *FAST]
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "" and "no record held a word in field 'body'" in err, err
    assert "zq7" not in err


def test_without_kept_fields_or_keep_empty_fields_still_run(tmp_path, capsys, monkeypatch):
    """Only a run that could release records with nothing privatized is refused: empty
    fields alone write empty fields, as before; so does an input with no record at all."""
    source = _source(tmp_path, monkeypatch, "in.jsonl", [{"text": ""}, {"text": ""}])
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 0 and out == '{"text": ""}\n{"text": ""}\n', err
    (tmp_path / "blank.jsonl").write_text("\n\n")
    argv = ["privatize", "blank.jsonl", "--null", "keep", "--keep-fields", "*", "-e", 300]
    code, out, err = run([*argv, "--report", "-", *FAST], capsys)
    assert code == 0 and out == "\n\n", err
    assert json.loads(err[err.index("{") :])["documents"] == 2


def test_a_stream_is_held_back_until_a_record_holds_text(tmp_path, capsys, monkeypatch):
    """Stdin is read once, as the run goes: its leading null records are held (nothing
    written), then written in order with the first batch holding text."""
    from dxp_plugins.cli.report import _Released

    rows = [{"id": i, "body": None} for i in range(5)] + [{"id": 5, "body": "team"}]
    rows += [{"id": 6, "body": None}, {"id": 7, "body": "music"}]
    source = _source(tmp_path, monkeypatch, "-", rows)
    write, batches = _Released.write, []

    def counted(self, out, lines, guarantees, *nulls):
        batches.append(len(lines))
        write(self, out, lines, guarantees, *nulls)

    monkeypatch.setattr(_Released, "write", counted)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, "--batch-size", 2, "--report", "r.json", *FAST], capsys)
    assert code == 0, err
    assert [json.loads(line)["id"] for line in out.splitlines()] == list(range(8))
    assert batches == [6, 2]  # ids 0-5 in one write (with "team"), then 6-7
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["documents"] == 8 and record["records_with_null_field"] == 6


def test_a_stream_of_nulls_past_the_hold_is_refused(tmp_path, capsys, monkeypatch):
    """The output held back is bounded: past it, the run stops with nothing written."""
    from dxp_plugins.cli import privatize

    monkeypatch.setattr(privatize, "HELD_BYTES", 100)
    rows = [{"id": i, "body": None, "text": "zq7secret"} for i in range(50)]
    source = _source(tmp_path, monkeypatch, "-", [*rows, {"id": 50, "body": "team"}])
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, "--batch-size", 1, "--report", "r.json", *FAST], capsys)
    errors = _errors(err)
    assert code == 1 and out == "" and len(errors) == 1, err
    assert errors[0].startswith(
        "dxp: error: stdin: the first 3 records held no word in field 'body'"
    )
    assert "at most 100 bytes of output; give a regular file" in errors[0]
    assert "zq7" not in err
    assert not (tmp_path / "r.json").exists()


def test_a_failed_run_reports_the_nulls_it_wrote(tmp_path, capsys, monkeypatch):
    """A stream failing midway has released its first records: the partial report counts
    the nulls among them and lists only the kept fields of records it reached."""
    rows = [{"body": None, "a": 1}, {"body": "team", "b": 2}, {"body": None, "c": 3}]
    data = _jsonl(rows) + b'{"body": 5, "zq7d": 4}\n' + _jsonl([{"body": None, "zq7e": 5}])
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    report = tmp_path / "r.json"
    argv = ["privatize", "--field", "body", "--null", "keep", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, "--batch-size", 1, "--report", report, *FAST], capsys)
    assert code == 1 and out.count("\n") == 3, err
    assert "line 4: field 'body' is a number, not a string" in err and "zq7" not in err
    partial = json.loads(report.read_text())
    assert partial["complete"] is False and partial["documents"] == 3
    assert partial["records_with_null_field"] == 2
    assert partial["unprotected_fields"] == ["a", "b", "c"]


def test_a_stream_failing_while_held_back_writes_nothing(tmp_path, capsys, monkeypatch):
    data = _jsonl([{"body": None, "a": 1}]) + b'{"body": 5}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    argv = ["privatize", "--field", "body", "--null", "keep", "--keep-fields", "*", "-e", 300]
    code, out, err = run([*argv, "--batch-size", 1, "--report", tmp_path / "r.json"], capsys)
    assert code == 1 and out == "" and "line 2: field 'body' is a number" in err, err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("null", ["error", "keep"])
@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('{"id": 1}', "is missing"),
        ('{"body": 5}', "is a number, not a string"),
        ('{"body": ["a"]}', "is a list, not a string"),
        ('{"body": {"a": null}}', "is an object, not a string"),
        ('{"body": true}', "is true or false, not a string"),
        ("[null]", "is missing: the record is not a JSON object"),
    ],
)
def test_missing_and_non_string_fields_stay_errors(tmp_path, capsys, bad, problem, null):
    source = tmp_path / "in.jsonl"
    source.write_text('{"body": "team"}\n' + bad + "\n")
    argv = ["privatize", source, "--field", "body", "--null", null, "-e", 300, *FAST]
    code, out, err = run(argv, capsys)
    assert code == 1 and out == "" and err.count("\n") == 1, err
    assert err.rstrip().endswith(f"line 2: field 'body' {problem}")


def test_null_applies_to_jsonl_only_and_makes_stdin_jsonl(tmp_path, capsys, monkeypatch):
    (tmp_path / "notes.txt").write_text("team\n")
    code, out, err = run(["privatize", tmp_path / "notes.txt", "--null", "keep", "-e", 3], capsys)
    assert code == 1 and out == "" and "--null applies to JSONL input only" in err, err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"text": null}\n')))
    code, out, err = run(["privatize", "--null", "error", "-e", 3, *FAST], capsys)
    assert code == 1 and "stdin, line 1: field 'text' is null" in err, err


def test_help_names_the_option():
    result = subprocess.run(
        [Path(sys.executable).with_name("dxp"), "privatize", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--null {error,keep}" in result.stdout
    assert "records_with_null_field" in result.stdout


def test_a_piped_wrong_field_writes_nothing(tmp_path):
    """The real process, its stdin a pipe: nothing reaches stdout before the refusal."""
    dxp = Path(sys.executable).with_name("dxp")
    options = ["--null", "keep", "--keep-fields", "*", "-e", "300", "--batch-size", "1"]
    result = subprocess.run(
        [dxp, "privatize", "--field", "body", *options, *FAST],
        input=_jsonl(WRONG_FIELD),
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1 and result.stdout == b"", result.stderr
    assert b"no record held a word in field 'body'" in result.stderr
    assert b"zq7" not in result.stderr


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
@pytest.mark.parametrize("value", ["-", " ", "\u200b", "\ufeff", "\u2014", "- / -"], ids=repr)
def test_a_field_without_a_word_is_refused(tmp_path, capsys, monkeypatch, source, value):
    """CLI review P1: a wrong --field holding only a placeholder ("-"), spaces or an
    invisible character counted as text, and '*' copied the real text column raw."""
    rows = [{"id": 1, "title": value, "body": "zq7secret diagnosis"}] * 2
    source = _source(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--field", "title", "--null", "keep", "--keep-fields", "*"]
    code, out, err = run([*argv, "-e", 300, "--batch-size", 1, "--report", "r.json"], capsys)
    assert code == 1 and out == "" and "zq7" not in err, err
    assert "no record held a word in field 'title'" in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_a_field_a_mask_hides_whole_still_holds_words(tmp_path, capsys, monkeypatch, source):
    """What a mask replaces was text: such a field is not a wrong --field."""
    rows = [{"id": 1, "body": "zq7mail@example.com"}, {"id": 2, "body": None}]
    source = _source(tmp_path, monkeypatch, source, rows)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "id"]
    code, out, err = run([*argv, "--mask", "emails", "-e", 300, *FAST], capsys)
    assert code == 0 and "zq7" not in out, err


C_ROWS = [
    {"id": 10, "body": None, "message": "zq7secret diagnosis"},
    {"id": 11, "body": None, "message": "zq7call me"},
]


def test_each_input_file_must_hold_a_word(tmp_path, capsys, monkeypatch):
    """CLI review P2: one good file turned the check off for the next, whose text column
    (``message``) '*' then copied raw. Each file is checked on its own, before any noise."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_bytes(_jsonl(TICKETS))
    (tmp_path / "c.jsonl").write_bytes(_jsonl(C_ROWS))
    argv = ["privatize", "a.jsonl", "c.jsonl", "--field", "body", "--null", "keep"]
    code, out, err = run([*argv, "--keep-fields", "*", "-e", 300, "--report", "r.json"], capsys)
    errors = _errors(err)
    assert code == 1 and out == "" and len(errors) == 1, err
    assert errors[0].startswith("dxp: error: c.jsonl: no record held a word in field 'body'")
    assert "zq7" not in err and not (tmp_path / "r.json").exists()


def test_each_stream_must_hold_a_word(tmp_path, capsys, monkeypatch):
    """A stream after a good file: what the file released stays released (and reported),
    the stream's records are held back and refused, none of its raw text written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.jsonl").write_bytes(_jsonl(TICKETS))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_jsonl(C_ROWS))))
    argv = ["privatize", "a.jsonl", "-", "--field", "body", "--null", "keep"]
    code, out, err = run([*argv, "--keep-fields", "*", "-e", 300, "--report", "r.json"], capsys)
    errors = _errors(err)
    assert code == 1 and out.count("\n") == len(TICKETS), err
    assert "zq7secret" not in out and "zq7call" not in out
    assert errors[0].startswith("dxp: error: stdin: no record held a word in field 'body'")
    assert "4 documents were already written to stdout" in errors[0]
    partial = json.loads((tmp_path / "r.json").read_text())
    assert partial["complete"] is False and partial["documents"] == len(TICKETS)


def test_a_stream_to_an_output_file_is_not_held_back(tmp_path, capsys, monkeypatch):
    """CLI review D1: an -o FILE is replaced only when the run succeeds, so a stream's
    output need not be held back (nor refused past HELD_BYTES); one with no word in the
    field is still refused, the file untouched."""
    from dxp_plugins.cli import privatize

    monkeypatch.setattr(privatize, "HELD_BYTES", 100)
    rows = [{"id": i, "body": None} for i in range(50)] + [{"id": 50, "body": "team"}]
    source = _source(tmp_path, monkeypatch, "-", rows)
    argv = ["privatize", source, "--field", "body", "--null", "keep", "--keep-fields", "*"]
    argv += ["-e", 300, "--batch-size", 1, "-o", "out.jsonl", "--report", "r.json", *FAST]
    code, out, err = run(argv, capsys)
    assert code == 0 and out == "", err
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 51
    assert json.loads((tmp_path / "r.json").read_text())["records_with_null_field"] == 50
    _source(tmp_path, monkeypatch, "-", rows[:50])
    code, out, err = run(argv, capsys)
    assert code == 1 and "stdin: no record held a word in field 'body'" in err, err
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 51  # untouched


def test_a_nested_field_name_gets_a_hint(tmp_path, capsys, monkeypatch):
    """CLI review D3: --field names a top-level key; 'meta.body' is not read inside meta."""
    source = _source(tmp_path, monkeypatch, "in.jsonl", [{"meta": {"body": "zq7secret"}}])
    code, out, err = run(["privatize", source, "--field", "meta.body", "-e", 300], capsys)
    assert code == 1 and out == "" and "zq7" not in err, err
    assert err.rstrip().endswith(
        "field 'meta.body' is missing (--field names a top-level key: nested fields are not read)"
    )
