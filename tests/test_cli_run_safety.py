"""``dxp privatize`` on large data (review 12): bad records found before any noise is drawn,
JSON read as text refused, honest counts when the output fails, ``--keep-fields`` typos, and
the largest per-document figures in the report."""

from __future__ import annotations

import errno
import io
import json
import os
import sys

import pytest

from dxp_plugins.cli import main

#: The hint after a line that is not UTF-8 (nor UTF-16, nor compressed).
OTHER = ": in another encoding? convert it to UTF-8 first (e.g. iconv -f WINDOWS-1252 -t UTF-8)"

FAST = ["--vocab-size", "5000"]


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def no_noise(monkeypatch):
    """Fail the test if the run draws any noise (privatizes any batch)."""
    import dxp_plugins.text

    def refuse(*args, **kwargs):
        raise AssertionError("privatized before the input was checked")

    monkeypatch.setattr(dxp_plugins.text, "privatize_texts", refuse)


GOOD = b'{"id": 1, "text": "the hockey team"}\n' * 5


@pytest.mark.parametrize(
    ("name", "tail", "args", "expected"),
    [
        ("in.txt", b"hockey caf\xe9\n", [], "in.txt, line 6 is not valid UTF-8 (byte offset 10)"),
        ("in.jsonl", b'{"text": "zq7secret"\n', [], "in.jsonl, line 6: not valid JSON"),
        ("in.jsonl", b'{"text": null}\n', [], "line 6: field 'text' is null (--null keep writes"),
        ("in.jsonl", b'{"text": 12345}\n', [], "line 6: field 'text' is a number, not a"),
        ("in.jsonl", b'{"body": "zq7secret"}\n', [], "line 6: field 'text' is missing"),
        (
            "in.jsonl",
            b'{"id": NaN, "text": "zq7secret"}\n',
            [],
            "line 6: not valid JSON (NaN and Infinity are not JSON)",
        ),
        # a BOM opening a line is dropped (files joined by cat); one after a record is not
        ("in.jsonl", b'{"text": "zq7secret"}\xef\xbb\xbf\n', [], "line 6: not valid JSON"),
        (
            "in.jsonl",
            b'{"text": "hockey", "k": "zq7secret \\ud800"}\n',
            ["--keep-fields", "k"],
            "line 6: kept field 'k' is not valid Unicode",
        ),
        (
            "in.jsonl",
            b'{"text": "hockey", "k": 1e400}\n',
            ["--keep-fields", "*"],
            "line 6: kept field #2 of the record holds a number out of float range",
        ),
    ],
    ids=["utf8", "json", "null", "number", "missing", "nan", "bom", "surrogate", "1e400"],
)
@pytest.mark.parametrize("output", ["stdout", "file"])
def test_a_bad_last_record_fails_before_any_noise(
    tmp_path, capsys, no_noise, name, tail, args, expected, output
):
    """F4: a bad record at the end threw away the whole run after privatizing everything
    before it (and to stdout, had released it). Now a regular file is read through first,
    with the same reader: the usual error, nothing privatized, nothing written."""
    source, target, report = tmp_path / name, tmp_path / "out", tmp_path / "report.json"
    source.write_bytes((GOOD if name.endswith("jsonl") else b"the hockey team\n" * 5) + tail)
    to = ["-o", target] if output == "file" else []
    command = ["privatize", source, "-e", 300, "--batch-size", 2, "--report", report]
    code, out, err = run([*command, *to, *args, *FAST], capsys)
    errors = [line for line in err.splitlines() if not line.startswith("dxp: warning")]
    assert code == 1 and out == "" and len(errors) == 1, err
    assert expected in errors[0] and "zq7secret" not in err and "were already written" not in err
    assert not target.exists() and not report.exists()


def test_every_file_is_checked_before_the_first_is_privatized(tmp_path, capsys, no_noise):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("the hockey team\n" * 3)
    second.write_bytes(b"the team\ncaf\xe9\n")
    code, out, err = run(["privatize", first, second, "-e", 300, *FAST], capsys)
    assert code == 1 and out == ""
    assert err.endswith(f"b.txt, line 2 is not valid UTF-8 (byte offset 3){OTHER}\n")


def test_the_progress_bar_has_a_total_for_regular_files(tmp_path, capsys, monkeypatch):
    """F11: the bar had no total, percentage or ETA; a regular file is counted first."""
    first, second = tmp_path / "a.txt", tmp_path / "b.jsonl"
    first.write_text("hockey\n\nteam\n")
    second.write_text('{"text": "music"}\n' * 2)
    code, out, err = run(["privatize", first, second, "-e", 300, "--progress", *FAST], capsys)
    assert code == 0 and out.count("\n") == 5
    assert "5/5" in err and "100%" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hockey\n" * 3)))
    code, out, err = run(["privatize", "-e", 300, "--progress", *FAST], capsys)  # no total
    assert code == 0 and "3doc" in err.replace(" ", "") and "%" not in err


@pytest.mark.parametrize("source", ["-", "in.json", "in.txt"])
def test_json_lines_read_as_plain_text_are_refused(tmp_path, capsys, monkeypatch, no_noise, source):
    """F5: JSON lines without --field (stdin, a .json file) were privatized as plain text,
    keys and all, into invalid JSON with exit code 0 (only a warning)."""
    data = b"\n  \n" + json.dumps({"id": 7, "text": "zq7secret"}).encode() + b"\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    (tmp_path / source).write_bytes(data)
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "out.txt"
    code, out, err = run(["privatize", source, "-e", 300, "-o", target, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1 and not target.exists()
    assert err.startswith(f"dxp: error: {'stdin' if source == '-' else source}, line 3 ")
    assert "--format jsonl" in err and "--format text" in err and "zq7secret" not in err


@pytest.mark.parametrize(
    "data",
    [
        b"\n" + json.dumps({"id": 7, "text": "zq7secret"}).encode() + b"\n",  # JSON lines
        json.dumps({"id": 7, "text": "zq7secret"}, indent=2).encode(),  # one JSON object
    ],
    ids=["json-lines", "pretty-printed"],
)
def test_a_json_file_read_whole_as_text_is_refused(tmp_path, capsys, no_noise, data):
    """``--unit file`` read JSON as one plain-text document, keys and all (exit 0)."""
    source = tmp_path / "in.txt"
    source.write_bytes(data)
    code, out, err = run(["privatize", source, "--unit", "file", "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith(f"dxp: error: {source} looks like a JSON object: ")
    assert "zq7secret" not in err


RECORDS = [{"id": 7, "text": "zq7secret"}, {"id": 8, "text": "music"}]


@pytest.mark.parametrize("unit", ["line", "file"])
def test_json_records_too_long_to_parse_are_refused_by_their_opening(
    tmp_path, capsys, monkeypatch, no_noise, unit
):
    """Sniffing parsed a whole first line (or file) to see whether it was JSON: a 40 MB line
    of ``[{}, ...]`` took 865 MB. Past SNIFF_BYTES nothing is parsed; JSON records are
    still refused by how they open."""
    import dxp_plugins.cli.records as records

    monkeypatch.setattr(records, "SNIFF_BYTES", 200)
    real_loads = records.json.loads

    def loads(body, *args, **kwargs):
        assert len(body) <= 200, "a long body was parsed to sniff it"
        return real_loads(body, *args, **kwargs)

    monkeypatch.setattr(records.json, "loads", loads)
    source = tmp_path / "in.json"
    source.write_text(json.dumps(RECORDS * 20))
    code, out, err = run(["privatize", source, "--unit", unit, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and "looks like the start of a JSON document" in err, err
    assert "zq7secret" not in err


@pytest.mark.parametrize(
    ("data", "line", "kind"),
    [
        (json.dumps(RECORDS[0], indent=2), 1, "the start of a pretty-printed JSON document"),
        (json.dumps(RECORDS, indent=2), 1, "the start of a pretty-printed JSON document"),
        ("\n" + json.dumps(RECORDS), 2, "a JSON list of objects"),
        (json.dumps(RECORDS).replace("}, ", "},\n"), 1, "the start of a JSON document"),
        (json.dumps(RECORDS[0]).replace(", ", ",\n"), 1, "the start of a JSON document"),
    ],
    ids=["pretty-object", "pretty-list", "one-line-list", "list-by-lines", "object-by-lines"],
)
@pytest.mark.parametrize("unit", ["line", "file"])
def test_a_json_document_read_as_text_is_refused(
    tmp_path, capsys, no_noise, data, line, kind, unit
):
    """A .json file (pretty-printed, or a list of records on one line) was privatized as
    plain text under --format auto, keys and all, into invalid JSON (open work, review 12)."""
    source = tmp_path / "in.json"
    source.write_text(data)
    code, out, err = run(["privatize", source, "--unit", unit, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1 and "zq7secret" not in err
    if unit == "file":  # the whole file is one document: its name, no line, what it is
        kind = "a JSON object" if data.startswith("{") else "a JSON list of objects"
        assert err.startswith(f"dxp: error: {source} looks like {kind}: ")
    else:
        assert err.startswith(f"dxp: error: {source}, line {line} looks like {kind}: ")


@pytest.mark.parametrize(
    "text",
    [
        "{\nthe hockey team won\n}\n",
        "[\n1. the team\n",
        "[1, 2]\nmusic\n",
        "[]\nmusic\n",
        "[[Main Page]] links\nmusic\n",
        "[[1, 2], [3, 4]]\n",
        "[\n  [1, 2]\n]\n",
        "{ice: hockey}\nmusic\n",
    ],
)
def test_text_opening_with_a_lone_bracket_is_text(tmp_path, capsys, text):
    """Only a key or a nested object or list after the opening line is taken for JSON."""
    source = tmp_path / "in.txt"
    source.write_text(text)
    for unit in ("line", "file"):
        code, out, err = run(["privatize", source, "--unit", unit, "-e", 300, *FAST], capsys)
        assert code == 0 and out.count("\n") == text.count("\n"), err


def test_prose_opening_with_a_brace_is_text(tmp_path, capsys):
    """Only JSON objects are refused: text that merely starts with "{" is privatized."""
    source = tmp_path / "in.txt"
    source.write_text("{the hockey team} won\n")
    for unit in ("line", "file"):
        code, out, _ = run(["privatize", source, "--unit", unit, "-e", 300, *FAST], capsys)
        assert code == 0 and out.count("\n") == 1


def test_format_text_privatizes_json_lines_as_text(capsys, monkeypatch):
    line = json.dumps({"id": 7, "text": "music"}) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode() * 2)))
    code, out, err = run(["privatize", "-e", 300, "--format", "text", *FAST], capsys)
    assert code == 0 and out.count("\n") == 2 and err == ""


class _Full(io.RawIOBase):
    """An output with room for ``room`` bytes, then ENOSPC (or ``then`` raised)."""

    def __init__(self, room, then=None):
        self.room, self.then, self.data = room, then, b""

    def writable(self):
        return True

    def write(self, data):
        if not self.room:
            raise self.then or OSError(errno.ENOSPC, "No space left on device")
        taken = bytes(data[: self.room])
        self.room -= len(taken)
        self.data += taken
        return len(taken)


def test_a_failed_write_counts_nothing_it_did_not_write(tmp_path, capsys):
    """F1: `-o /dev/full` said "5 documents were already written to /dev/full"; the error
    names the output it could not write (CLI review D4)."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("the hockey team\n" * 5)
    args = ["privatize", source, "-e", 300, "-o", "/dev/full", "--report", report, *FAST]
    code, out, err = run(args, capsys)
    assert (
        code == 1
        and out == ""
        and err == ("dxp: error: writing /dev/full: No space left on device\n")
    )
    assert not report.exists()  # nothing was released


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "python-u"])
def test_a_write_cut_short_counts_what_reached_the_output(tmp_path, capsys, monkeypatch, buffered):
    """The documents whose bytes reached the output (the last one in part) are counted
    and reported, not those still buffered (under ``python -u``, stdout has no buffer)."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("hockey team\n" * 6)  # 12 bytes each
    sink = _Full(30)  # documents 1-2 whole, 3 in part
    stream = io.BufferedWriter(sink) if buffered else sink
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(stream))
    args = ["privatize", source, "-e", 300, "--batch-size", 2, "--report", report, *FAST]
    code, _, err = run([*args, "--seed", 1], capsys)
    assert code == 1 and sink.data == b"hockey team\n" * 2 + b"hockey"
    assert err.splitlines()[-1] == (
        "dxp: error: writing stdout: No space left on device; 3 documents were already "
        "written to stdout "
        f"(the last one in part) (the report in {report} lists them, marked incomplete)"
    )
    partial = json.loads(report.read_text())
    assert partial["documents"] == 3 and partial["complete"] is False
    assert partial["guarantee"]["tokens_privatized"] == 6
    assert "had not finished" in partial["statement"]  # not only "complete": false


def test_a_write_interrupted_by_a_signal_lists_the_batch(tmp_path, capsys, monkeypatch):
    """Interrupted within a write, what that write took is unknown: its documents are
    listed as possibly written."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("hockey team\n" * 6)
    sink = _Full(24, then=KeyboardInterrupt())
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(sink)))
    args = ["privatize", source, "-e", 300, "--batch-size", 2, "--report", report, *FAST]
    code, _, err = run([*args, "--seed", 1], capsys)
    assert code == 130
    assert err.splitlines()[-1] == (
        "dxp: interrupted; 2 documents were already written to stdout and 2 more may have "
        f"been (the report in {report} lists them, marked incomplete)"
    )
    assert json.loads(report.read_text())["documents"] == 4


def test_a_signal_while_a_written_batch_is_counted_lists_all_of_it(tmp_path, capsys, monkeypatch):
    """A signal that lands after a batch reached the output, while its documents are being
    counted, must not leave the report listing only part of it (review of the write path:
    10 written, 4 reported, releases 3)."""
    from dxp_plugins.guarantee import Guarantee

    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("hockey team\n" * 10)
    sink = _Full(10_000)
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(sink)))
    real_merge, merges = Guarantee.merge, []

    def merge(self, other):
        if sys._getframe(1).f_code.co_name == "_count":  # counting what was written
            merges.append(1)
        if len(merges) == 3:  # the fourth document of the written batch
            merges.append(1)  # once
            raise KeyboardInterrupt
        return real_merge(self, other)

    monkeypatch.setattr(Guarantee, "merge", merge)
    args = ["privatize", source, "-e", 300, "--report", report, *FAST]
    code, _, err = run([*args, "--seed", 1], capsys)
    assert code == 130 and sink.data == b"hockey team\n" * 10
    assert err.splitlines()[-1] == (
        "dxp: interrupted; 10 documents were already written to stdout "
        f"(the report in {report} lists them, marked incomplete)"
    )
    partial = json.loads(report.read_text())
    assert partial["documents"] == 10 and partial["complete"] is False
    assert partial["guarantee"]["releases"] == 10
    assert partial["guarantee"]["tokens_privatized"] == 20


@pytest.mark.parametrize("source", ["in.jsonl", "-"])
def test_a_kept_field_in_no_record_is_named(tmp_path, capsys, monkeypatch, source):
    """F6: `--keep-fields lable,id` (a typo) passed silently, the report listing 'lable'.
    Now the typo is named in a warning and the report lists only the names some record
    held (they are what was written unprotected)."""
    data = b'{"id": 1, "text": "team", "zq7key": 2}\n\n{"text": "music", "label": 3}\n'
    (tmp_path / "in.jsonl").write_bytes(data)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    monkeypatch.chdir(tmp_path)
    base = ["privatize", source, "-e", 300, *FAST]
    keep = ["--keep-fields", "lable, id,label", "--report", "report.json"]
    code, out, err = run([*base, *keep], capsys)
    assert code == 0 and out.count("\n") == 3
    warnings = err.splitlines()
    assert warnings[-1] == "dxp: warning: --keep-fields: field 'lable' was in no record"
    assert len(warnings) == 2 and "zq7key" not in err
    assert json.loads((tmp_path / "report.json").read_text())["unprotected_fields"] == [
        "id",
        "label",
    ]
    code, _, err = run([*base, "--keep-fields", "*"], capsys)
    assert code == 0 and err.count("\n") == 1  # '*': only the opt-in warning


@pytest.mark.parametrize(
    ("content", "tokens"),
    [
        ("hockey team\n\nthe hockey team won\n \n", 4),
        ("\n\n", 0),  # blank documents only
        ("", 0),  # no document
    ],
)
def test_the_report_gives_the_largest_document(tmp_path, capsys, content, tokens):
    """F3: the only spend figure was the whole-corpus total."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text(content)
    args = ["privatize", source, "-e", 2.5, "--report", report, *FAST]
    code, _, err = run(args, capsys)
    assert code == 0, err
    record = json.loads(report.read_text())
    assert record["max_tokens_per_document"] == tokens
    assert record["max_document_spend"] == 2.5 * tokens


def test_unit_file_on_jsonl_is_refused(tmp_path, capsys):
    """F12: --unit file was silently ignored on JSONL (one record per line)."""
    source = tmp_path / "in.jsonl"
    source.write_text('{"text": "team"}\n')
    code, out, err = run(["privatize", source, "-e", 300, "--unit", "file", *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "--unit file applies to plain text only" in err


# -- security review (eighteenth session): what the output files allow --------------------------
def test_an_output_fills_privately_and_gets_the_mode_of_a_new_file(tmp_path):
    """F3: the temporary output was created 0o644 and narrowed afterwards (a descriptor
    opened meanwhile read it all), and a target planted by another user lent its mode
    (0o666: a world-writable private output)."""
    import stat

    from dxp_plugins.cli.targets import _replacing, _umask

    def written(target, before=None):
        with _replacing(str(target)) as (stream, replaced):
            assert replaced and stat.S_IMODE(os.fstat(stream.fileno()).st_mode) == 0o600
            stream.write(b"private\n")
        return stat.S_IMODE(os.stat(target).st_mode)

    new_file = 0o666 & ~_umask()
    assert written(tmp_path / "new.txt") == new_file
    own = tmp_path / "own.txt"
    own.write_text("old")
    own.chmod(0o640)
    assert written(own) == 0o640  # the user's own target keeps its mode
    if os.geteuid() == 0:  # root can stand in for another user
        planted = tmp_path / "planted.txt"
        planted.write_text("")
        planted.chmod(0o666)
        os.chown(planted, 65534, 65534)
        assert written(planted) == new_file


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_symlink_owned_by_another_user_is_not_followed(tmp_path, capsys):
    """F6: a (dangling) link planted by another user made the private output land wherever
    the link pointed."""
    source = tmp_path / "in.txt"
    source.write_text("the hockey team\n")
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir()
    link = tmp_path / "out.txt"
    link.symlink_to(elsewhere / "loot.txt")
    os.lchown(link, 65534, 65534)
    code, _, err = run(["privatize", source, "-e", 10, "-o", link, *FAST], capsys)
    assert code == 1 and "symbolic link owned by another user" in err
    assert not (elsewhere / "loot.txt").exists()


def test_stdin_read_from_the_output_file_is_refused(tmp_path):
    """F10: `dxp privatize - -o notes.txt < notes.txt` replaced the input with its own
    privatization (the same file given by name was refused)."""
    import subprocess

    notes = tmp_path / "notes.txt"
    notes.write_text("the hockey team\n")
    with open(notes, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "dxp_plugins", "privatize", "-", "-e", "10", "-o", str(notes)],
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 1 and "is also the input (stdin)" in done.stderr
    assert notes.read_text() == "the hockey team\n"


def test_a_reader_that_leaves_gets_a_partial_report(tmp_path, capsys, monkeypatch):
    """CLI review P3: `... --report r.json | head -1` (exit 141) wrote no report and left an
    earlier run's complete one at r.json, describing another release. The report now lists
    the documents whose bytes reached the pipe (what the reader may have read), incomplete."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("hockey team\n" * 6)  # 12 bytes each
    report.write_text('{"documents": 99, "complete": true}\n')  # an earlier run's
    sink = _Full(30, then=BrokenPipeError(errno.EPIPE, "Broken pipe"))
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BufferedWriter(sink)))
    args = ["privatize", source, "-e", 300, "--batch-size", 2, "--report", report, *FAST]
    code, _, err = run([*args, "--seed", 1], capsys)
    assert code == 141 and sink.data == b"hockey team\n" * 2 + b"hockey", err
    partial = json.loads(report.read_text())
    assert partial["documents"] == 3 and partial["complete"] is False
    assert partial["output_sha256"] is None
    assert partial["guarantee"]["tokens_privatized"] == 6


def test_an_os_error_without_errno_is_named_by_its_type(tmp_path, capsys, monkeypatch):
    """Eleven error lines printed ``error.strerror``, which is None for an OSError made
    without an errno: "cannot read notes.txt: None". One helper words them all now."""
    import builtins

    source = tmp_path / "notes.txt"
    source.write_text("hockey team\n")
    real_open = builtins.open

    def refusing_open(file, *args, **kwargs):
        if str(file) == str(source):
            raise PermissionError("a message that may quote a private path")
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    code, _, err = run(["privatize", source, "-e", 3, *FAST], capsys)
    assert code == 1, err
    assert err.strip().endswith(f"cannot read {source}: PermissionError"), err
    assert "private path" not in err and "None" not in err


def test_the_cli_words_os_errors_through_one_helper():
    from pathlib import Path

    import dxp_plugins

    package = Path(dxp_plugins.__file__).parent
    direct = [
        f"{path.name}:{number}"
        for path in (package / "cli").glob("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "error.strerror" in line
    ]
    assert direct == []


def test_a_cli_batch_closes_at_batch_chars_as_a_mechanism_batch_does():
    """CLI batches were 1,000 records whatever their size: 100 lines of 1 MB were held
    whole (533 MB against 219 MB for the same bytes in short lines)."""
    from dxp_plugins.cli.records import next_batch
    from dxp_plugins.text import BATCH_CHARS

    line = "x" * (BATCH_CHARS // 4)
    records = iter([(number, None, (line,)) for number in range(10)])
    sizes = []
    while batch := next_batch(records, 1_000):
        sizes.append(len(batch))
    assert sizes == [4, 4, 2]
    two_fields = iter([(number, None, (line, line)) for number in range(5)])
    assert len(next_batch(two_fields, 1_000)) == 2  # every --field's text counts
    assert len(next_batch(iter([(1, None, ("a",))] * 30), 7)) == 7


def test_small_cli_batches_keep_every_line_in_place(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("dxp_plugins.text.BATCH_CHARS", 12)
    source = tmp_path / "notes.txt"
    source.write_text("the hockey team\n\nthe city\nthe team won the game\nlast")
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 0, err
    assert out.count("\n") == 4 and out.split("\n")[1] == ""  # the input ends without one
    assert [len(line.split()) for line in out.split("\n")] == [3, 0, 2, 5, 1]
