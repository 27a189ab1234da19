"""``dxp calibrate --words-file FILE``: calibrate on your own words (review 25, F2).

``dxp calibrate`` could only sample vocabulary words, so a CLI user could not follow the
docs' advice to check the words the texts actually use (``+44`` kept 97% of the time at
the epsilon a vocabulary sample recommended). The file's words are split into tokens and
looked up as ``dxp privatize`` does; words out of the vocabulary are skipped and counted,
never quoted; the outputs name the words used, so the command warns to keep them private.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys

import pytest

from dxp_plugins.cli import main

SMALL = ["--vocab-size", "1000", "--samples", "10", "--no-figures", "--epsilons", "5,20"]


def run(argv, capsys):
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_calibrates_on_the_words_of_the_file(tmp_path, capsys, glove_5k):
    words = tmp_path / "words.txt"
    # tokens as the text path splits them: "music," is music and a comma (passed through)
    words.write_text("The city TEAM\nmusic, music\n\n  City zq7secretname ...\n")
    out = tmp_path / "calib"
    code, stdout, err = run(["calibrate", "--words-file", words, "--out", out, *SMALL], capsys)
    assert code == 0, err
    expected = sorted(["the", "city", "team", "music"], key=lambda w: glove_5k.lookup([w])[0])
    with open(out / "calibration.csv", newline="") as table:
        rows = list(csv.DictReader(table))
    assert [row["word"] for row in rows] == expected * 2  # per epsilon, in vocabulary order
    summary = json.loads((out / "summary.json").read_text())
    assert summary["words"] == 4 and summary["words_file"] == str(words)
    assert summary["words_skipped"] == 1
    assert summary["word_pool"] is None and summary["word_seed"] is None
    assert [row["words"] for row in summary["summaries"]] == [4, 4]
    lines = err.splitlines()
    assert lines[0] == (
        "dxp: warning: --words-file: calibration.csv, summary.csv and summary.json name the "
        "words calibrated on: when they come from private texts, keep --out as private as "
        "those texts"
    )
    assert lines[1] == (
        "dxp: warning: --words-file: 1 of its 5 distinct words is not in the embeddings' "
        "vocabulary and was skipped (N_w is defined for vocabulary words only)"
    )
    assert "zq7" not in err + stdout and "4 words" in err


def test_stdin_and_a_sampled_run_record_where_the_words_came_from(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"city team\n")))
    code, _, err = run(["calibrate", "--words-file", "-", "--out", tmp_path / "a", *SMALL], capsys)
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert code == 0 and summary["words"] == 2 and summary["words_file"] == "-", err
    assert summary["words_skipped"] == 0 and "is not in the" not in err
    code, _, err = run(["calibrate", "--words", "3", "--out", tmp_path / "b", *SMALL], capsys)
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert code == 0 and summary["words"] == 3 and summary["word_seed"] == 0, err
    assert summary["words_file"] is None and summary["words_skipped"] is None
    assert "--words-file" not in err


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"zq7secret zq7name\nzq7secret\n", "none of its 2 distinct words is in the embeddings'"),
        (b"", "holds no word to calibrate on"),
        (b"  ... , !\n\n", "holds no word to calibrate on"),  # punctuation passes through
        (b"city\ncaf\xe9 zq7\n", "words.txt, line 2 is not valid UTF-8 (byte offset 3)"),
    ],
    ids=["all-oov", "empty", "punctuation", "utf8"],
)
def test_a_file_with_no_word_to_use_is_one_error(tmp_path, capsys, content, expected):
    words = tmp_path / "words.txt"
    words.write_bytes(content)
    out = tmp_path / "calib"
    code, stdout, err = run(["calibrate", "--words-file", words, "--out", out, *SMALL], capsys)
    errors = [line for line in err.splitlines() if not line.startswith("dxp: warning")]
    assert code == 1 and len(errors) == 1 and expected in errors[0], err
    assert "zq7" not in err + stdout and "caf" not in err
    assert not out.exists()


@pytest.mark.parametrize(
    "extra", [["--words", "10"], ["--word-pool", "100"], ["--word-seed", "1"]], ids=str
)
def test_a_file_or_a_sample_not_both(tmp_path, capsys, extra):
    words = tmp_path / "words.txt"
    words.write_text("city\n")
    out = tmp_path / "calib"
    argv = ["calibrate", "--words-file", words, *extra, "--out", out, *SMALL]
    code, _, err = run(argv, capsys)
    assert code == 1 and err.count("\n") == 1, err
    assert f"--words-file calibrates on the words of FILE; {extra[0]} " in err
    assert not out.exists()


@pytest.mark.parametrize(
    ("make", "expected"),
    [(lambda path: None, "no such file"), (lambda path: path.mkdir(), "is a directory")],
    ids=["missing", "directory"],
)
def test_an_unreadable_file_is_refused_before_anything_is_loaded(tmp_path, capsys, make, expected):
    words = tmp_path / "words.txt"
    make(words)
    out = tmp_path / "calib"
    code, _, err = run(["calibrate", "--words-file", words, "--out", out, *SMALL], capsys)
    assert code == 1 and err == f"dxp: error: cannot read {words}: {expected}\n"
    assert not out.exists()


def test_the_help_says_to_keep_the_output_private(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no line broken at a hyphen
    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--words-file FILE" in text
    assert "keep --out as private as those texts" in text
    assert "Not with --words, --word-pool or --word-seed" in text


def test_the_files_naming_the_words_are_private_whatever_the_umask(tmp_path, capsys):
    words = tmp_path / "words.txt"
    words.write_text("the city team music\n")
    out = tmp_path / "new" / "calib"
    previous = os.umask(0o022)
    try:
        code, _, err = run(["calibrate", "--words-file", words, "--out", out, *SMALL], capsys)
    finally:
        os.umask(previous)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for name in ("calibration.csv", "summary.csv", "summary.json"):
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o600, name


def test_a_sampled_run_keeps_the_usual_modes(tmp_path, capsys):
    out = tmp_path / "calib"
    previous = os.umask(0o022)
    try:
        code, _, err = run(["calibrate", "--words", "3", "--out", out, *SMALL], capsys)
    finally:
        os.umask(previous)
    assert code == 0, err
    assert stat.S_IMODE((out / "summary.json").stat().st_mode) == 0o644
