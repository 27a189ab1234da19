"""The command line in a real terminal (a pseudo-terminal): the progress bar never shares
lines with private text written to it, tqdm's environment cannot fail a run, a run reading
the terminal says so, abbreviated options are refused, and a misspelt name gets a
suggestion (a CLI accessibility review, 2026-11-25)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dxp_plugins import registry
from dxp_plugins.cli import main
from dxp_plugins.cli.records import _check_input

pty = pytest.importorskip("pty")
FAST = ["--vocab-size", "5000"]


def on_terminal(args, *, env=None, stdout_file=None):
    """Run dxp with stderr (and stdout unless ``stdout_file``) on a pseudo-terminal of 100
    columns; what the terminal received."""
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    import fcntl
    import struct
    import termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    out = open(stdout_file, "wb") if stdout_file else slave  # noqa: SIM115
    process = subprocess.Popen(
        [sys.executable, "-m", "dxp_plugins", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=slave,
        env={**os.environ, **(env or {})},
    )
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not chunk:
            break
        received += chunk
    process.wait(timeout=120)
    os.close(master)
    if stdout_file:
        out.close()
    return process.returncode, received.decode("utf-8", "replace")


@pytest.fixture
def lines(tmp_path):
    source = tmp_path / "notes.txt"
    source.write_text("the hockey team won\nsend the keys\n", encoding="utf-8")
    return source


def test_no_bar_beside_private_text_on_the_terminal(lines):
    code, seen = on_terminal(["privatize", lines, "-e", 300, *FAST])
    assert code == 0
    assert "hockey team won" in seen  # the text, at epsilon 300 unchanged
    assert "privatizing" not in seen and "doc/s" not in seen


def test_the_bar_shows_when_the_text_goes_elsewhere(lines, tmp_path):
    code, seen = on_terminal(
        ["privatize", lines, "-e", 300, *FAST], stdout_file=tmp_path / "private.txt"
    )
    assert code == 0 and "privatizing" in seen
    assert (tmp_path / "private.txt").read_text().startswith("the hockey")
    code, seen = on_terminal(
        ["privatize", lines, "-e", 300, *FAST],
        env={"TQDM_DISABLE": "1"},
        stdout_file=tmp_path / "again.txt",
    )
    assert code == 0 and "privatizing" not in seen


def test_tqdm_settings_in_the_environment_cannot_fail_a_run(lines, tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "dxp_plugins", "privatize", lines, "-e", "300", "--progress", *FAST],
        capture_output=True,
        text=True,
        env={**os.environ, "TQDM_ASCII": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("the hockey")


def test_a_dumb_terminal_gets_an_ascii_bar(lines):
    result = subprocess.run(
        [sys.executable, "-m", "dxp_plugins", "privatize", lines, "-e", "300", "--progress", *FAST],
        capture_output=True,
        text=True,
        env={**os.environ, "TERM": "dumb"},
    )
    assert result.returncode == 0 and "privatizing" in result.stderr
    assert result.stderr.isascii()


def test_reading_the_terminal_is_announced(monkeypatch, capsys):
    master, slave = pty.openpty()
    try:
        with open(slave, "rb", closefd=False) as terminal:
            monkeypatch.setattr(sys, "stdin", terminal)
            _check_input("-")
    finally:
        os.close(slave)
        os.close(master)
    assert "reading from the terminal" in capsys.readouterr().err


def test_a_piped_stdin_is_not_announced(capsys):
    _check_input("-")  # pytest's stdin is not a terminal
    assert capsys.readouterr().err == ""


def test_abbreviated_options_are_refused(lines, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["privatize", str(lines), "-e", "3", "--vocab", "5000"])
    assert stopped.value.code == 2
    assert "unrecognized arguments: --vocab 5000" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("kind", "name", "guess"),
    [
        (registry.masks, "email", "emails"),
        (registry.mechanisms, "Madlib", "madlib"),
        (registry.embeddings, "glove-6b-50", "glove-6b-50d"),
    ],
)
def test_a_misspelt_name_gets_a_suggestion(kind, name, guess):
    with pytest.raises(ValueError, match=rf"did you mean '{guess}'\?"):
        registry.resolve(kind, name)


def test_a_name_far_from_every_other_gets_none():
    with pytest.raises(ValueError) as caught:
        registry.resolve(registry.mechanisms, "laplace-vickrey")
    assert "did you mean" not in str(caught.value)


def test_the_cli_module_runs_from_this_checkout():
    import dxp_plugins

    assert Path(dxp_plugins.__file__).parents[1] == Path(__file__).resolve().parents[1]


def test_lists_are_scriptable(capsys):
    import json

    assert main(["mechanisms", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert set(listed) >= {"madlib", "tem", "brr"}
    assert listed["madlib"].startswith("Madlib")


def test_a_long_plugin_name_stays_clear_of_its_summary(capsys):
    from dxp_plugins import registry as reg
    from tests.door_fixtures import own_registrations_undone

    name = "company-internal-order-identifiers"
    with own_registrations_undone():

        @reg.masks.register(name)
        def orders(token):
            """Order numbers."""
            return False

        assert main(["masks", "list"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(name))
    assert line.split() == [name, "Order", "numbers."]
    assert line[len(name) : len(name) + 2] == "  "


def test_every_help_example_parses():
    import shlex

    from dxp_plugins.cli.parser import CALIBRATE_EXAMPLES, EXAMPLES, build_parser

    parser = build_parser()
    examples = [
        line.strip()
        for line in f"{EXAMPLES}\n{CALIBRATE_EXAMPLES}".splitlines()
        if line.strip().startswith("dxp ")
    ]
    assert len(examples) >= 9
    for line in examples:
        parser.parse_args(shlex.split(line, comments=True)[1:])


def test_calibrate_takes_o_for_its_folder(tmp_path, capsys):
    small = ["--words", "2", "--samples", "5", "--no-figures", "--vocab-size", "1000"]
    code = main(["calibrate", "--epsilons", "20", *small, "-o", str(tmp_path / "c")])
    assert code == 0 and (tmp_path / "c" / "summary.json").is_file()


def test_an_abbreviation_of_a_required_option_is_named(lines, capsys):
    # argparse names the missing --epsilon first; the real mistake is the abbreviation.
    with pytest.raises(SystemExit) as stopped:
        main(["privatize", str(lines), "--eps", "3"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized option(s) --eps (options are never abbreviated)" in err
    with pytest.raises(SystemExit):
        main(["privatize", "--", "--not-an-option"])  # after --, FILES only
    assert "the following arguments are required: -e/--epsilon" in capsys.readouterr().err


def test_tqdm_settings_cannot_fail_a_calibration(tmp_path):
    small = ["--words", "2", "--samples", "5", "--no-figures", "--vocab-size", "1000"]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dxp_plugins",
            "calibrate",
            "--epsilons",
            "20",
            *small,
            "--progress",
            "-o",
            str(tmp_path / "c"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "TQDM_ASCII": "1"},
    )
    assert result.returncode == 0, result.stderr


def test_no_bar_beside_private_text_sent_to_the_terminal_by_name(lines):
    code, seen = on_terminal(["privatize", lines, "-e", 300, *FAST, "-o", "/dev/stdout"])
    assert code == 0 and "hockey team won" in seen
    assert "privatizing" not in seen


@pytest.mark.parametrize(("value", "shown"), [("0", True), ("false", True), ("1", False)])
def test_tqdm_disable_is_read_as_tqdm_reads_it(lines, tmp_path, value, shown):
    code, seen = on_terminal(
        ["privatize", lines, "-e", 300, *FAST],
        env={"TQDM_DISABLE": value},
        stdout_file=tmp_path / "out.txt",
    )
    assert code == 0 and ("privatizing" in seen) == shown
