"""``--code FILE``: a Python file the CLI imports first, registering a mask, a token filter,
an embeddings loader or a mechanism without packaging it (open work 31)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import dxp_plugins as dxp
from dxp_plugins.cli import main as cli_main
from dxp_plugins.cli.code import MODULE
from tests.door_fixtures import own_registrations_undone

TEXT = "please refund ORD-ab12x today, thanks\n"

MASK_CODE = """\
import dxp_plugins as dxp

dxp.registry.masks.register("order-ids", func=dxp.masks.regex_mask(r"ORD-\\w+"))
"""

FILTER_CODE = """\
import dxp_plugins as dxp

@dxp.registry.token_filters.register("no-words")
def no_words(token):
    return False
"""

LOADER_CODE = """\
import dxp_plugins as dxp

@dxp.registry.embeddings.register("glove-2k")
def glove_2k():
    return dxp.load_embeddings("glove-6b-50d", vocab_size=2000)
"""


@pytest.fixture(autouse=True)
def undone():
    """What a --code file registers in this process is gone after the test."""
    with own_registrations_undone():
        yield
    sys.modules.pop(MODULE, None)


def _files(tmp_path, code: str, name: str = "mine.py"):
    source = tmp_path / "in.txt"
    source.write_text(TEXT)
    module = tmp_path / name
    module.write_text(code)
    return source, module


def test_a_mask_registered_in_code_hides_its_identifiers(tmp_path, capsys):
    source, module = _files(tmp_path, MASK_CODE)
    report = tmp_path / "report.json"
    args = ["privatize", str(source), "--epsilon", "3", "--vocab-size", "5000"]
    assert cli_main([*args, "--mask", "order-ids"]) == 1  # unknown without the code
    assert "--code" in capsys.readouterr().err  # the hint names the option
    code = ["--code", str(module), "--mask", "order-ids", "--report", str(report)]
    assert cli_main([*args, *code]) == 0
    out = capsys.readouterr().out
    assert "[...]" in out and "ORD" not in out and "ab12x" not in out
    record = json.loads(report.read_text())["guarantee"]
    assert record["mask"] == "order-ids" and record["spans_masked"] == 1


def test_a_token_filter_registered_in_code_chooses_the_words(tmp_path, capsys):
    source, module = _files(tmp_path, FILTER_CODE)
    report = tmp_path / "report.json"
    args = ["privatize", str(source), "--epsilon", "3", "--vocab-size", "5000"]
    code = ["--code", str(module), "--token-filter", "no-words", "--report", str(report)]
    assert cli_main([*args, *code]) == 0
    assert capsys.readouterr().out == TEXT  # the filter chose no word: all released raw
    record = json.loads(report.read_text())["guarantee"]
    assert record["tokens_privatized"] == 0 and record["words_passed_through"] == 6


def test_masks_list_shows_a_mask_registered_in_code(tmp_path, capsys):
    _, module = _files(tmp_path, MASK_CODE)
    assert cli_main(["masks", "list", "--code", str(module)]) == 0
    assert "order-ids" in capsys.readouterr().out


def test_calibrate_takes_an_embeddings_loader_from_code(tmp_path, capsys):
    _, module = _files(tmp_path, LOADER_CODE)
    out = tmp_path / "calib"
    args = ["calibrate", "--code", str(module), "--embeddings", "glove-2k"]
    assert cli_main([*args, "--epsilons", "5", "--words", "3", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert "glove-2k" in json.dumps(summary) and "2000" in json.dumps(summary)


@pytest.mark.parametrize(
    ("code", "name", "message"),
    [
        (
            'x = 1\nraise RuntimeError("no\\ntable")\n',
            "mine.py",
            "mine.py, line 2: RuntimeError: no table",
        ),
        ("def (\n", "mine.py", "mine.py, line 1: SyntaxError"),
        ("import sys\nsys.exit(3)\n", "mine.py", "mine.py, line 2: SystemExit: 3"),
        ("x = 1\n", "mine.txt", "mine.txt: give a Python file (.py)"),
    ],
)
def test_a_code_file_that_fails_is_one_line_naming_it(tmp_path, capsys, code, name, message):
    source, module = _files(tmp_path, code, name)
    assert cli_main(["privatize", str(source), "--epsilon", "3", "--code", str(module)]) == 1
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert MODULE not in sys.modules


def test_a_missing_code_file_and_a_repeat_are_refused(tmp_path, capsys):
    source, module = _files(tmp_path, MASK_CODE)
    args = ["privatize", str(source), "--epsilon", "3", "--code"]
    assert cli_main([*args, str(tmp_path / "absent.py")]) == 1
    assert "absent.py: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli_main([*args, str(module), "--code", str(module)])
    assert "--code: given twice" in capsys.readouterr().err


def test_the_console_script_imports_the_code_file(tmp_path):
    source, module = _files(tmp_path, MASK_CODE)
    command = [sys.executable, "-m", "dxp_plugins.cli", "privatize", str(source)]
    options = [
        "--epsilon",
        "3",
        "--vocab-size",
        "5000",
        "--code",
        str(module),
        "--mask",
        "order-ids",
    ]
    run = subprocess.run(
        [*command, *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "[...]" in run.stdout and "ORD" not in run.stdout


PICKY_CODE = """\
import dxp_plugins as dxp
import numpy as np


@dxp.registry.mechanisms.register("picky")
class Picky(dxp.Mechanism):
    name = "picky"
    metric = "discrete"

    def __init__(self, embeddings, epsilon, *, t=0.5, **base):
        super().__init__(embeddings, epsilon, **base)
        self.t = t

    @classmethod
    def check_options(cls, *, t=0.5, **_):
        if not 0 <= t <= 1:
            raise ValueError(f"t must be a number in [0, 1], got {t}")

    def _sample(self, ids, rng, epsilon):
        return rng.integers(0, len(self.embeddings), len(ids))
"""


def test_a_plugins_refused_option_is_shown_not_withheld(tmp_path, capsys):
    """Plugin review 29 F3: `--param t=2` refused by a plugin's check_options printed
    `unexpected ValueError (details withheld ...)`, as an error that may quote input does;
    check_options sees settings only, and a built-in's refusal (`--beta 2`) was shown."""
    source, module = _files(tmp_path, PICKY_CODE)
    args = ["privatize", str(source), "-e", "3", "--vocab-size", "1000", "--code", str(module)]
    assert cli_main([*args, "--mechanism", "picky", "--param", "t=2"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "dxp: error: t must be a number in [0, 1], got 2"


def test_the_report_names_the_mechanisms_settings(tmp_path, capsys):
    """Plugin review 29 F7: the report named the mechanism and its epsilon only (in the
    guarantee); a TEM's beta or a plugin's options, which decide the output, were nowhere."""
    source, module = _files(tmp_path, PICKY_CODE)
    report = tmp_path / "report.json"
    args = ["privatize", str(source), "-e", "3", "--vocab-size", "1000", "--report", str(report)]
    assert cli_main([*args, "--mechanism", "tem", "--beta", "0.01"]) == 0
    entry = json.loads(report.read_text())["mechanism"]
    assert entry["name"] == "tem" and entry["settings"]["beta"] == 0.01
    assert entry["params"] == {"beta": 0.01}
    code = ["--code", str(module), "--mechanism", "picky", "--param", "t=0.25"]
    assert cli_main([*args, *code]) == 0
    entry = json.loads(report.read_text())["mechanism"]
    assert entry == {  # diff review 29: the plugin's option was missing (not in _settings)
        "name": "picky",
        "params": {"t": 0.25},
        "settings": {"epsilon": 3.0, "oov": "unk"},
    }
    capsys.readouterr()


@pytest.mark.parametrize(
    ("name", "warned"), [("in.csv", True), ("IN.TSV", True), ("in.txt", False)]
)
def test_a_table_read_as_text_is_named(tmp_path, capsys, name, warned):
    """Instructor review 29: a CSV given to `dxp privatize` had its header and every column
    privatized as words, with no word said; JSON lines with --field are the way."""
    source = tmp_path / name
    source.write_text("id,text\n1,the hockey team\n")
    assert cli_main(["privatize", str(source), "-e", "3", "--vocab-size", "1000"]) == 0
    err = capsys.readouterr().err
    assert ("a .csv/.tsv input is read as plain text" in err) is warned
    assert "hockey" not in err and "id,text" not in err


@pytest.mark.parametrize(
    ("raised", "shown"),
    [
        ("TypeError('t must be a number, got str')", "dxp: error: t must be a number, got str"),
        ("UnicodeError('t holds \\u00e9')", "dxp: error: unexpected UnicodeError"),
    ],
)
def test_a_plugins_refusal_keeps_its_type(tmp_path, capsys, raised, shown):
    """Diff review 29 F6: a plain TypeError or ValueError of check_options is shown as the
    library's own; a subclass (here a UnicodeError) keeps its type and the CLI's handling."""
    code = PICKY_CODE.replace(
        'raise ValueError(f"t must be a number in [0, 1], got {t}")', f"raise {raised}"
    )
    source, module = _files(tmp_path, code)
    args = ["privatize", str(source), "-e", "3", "--vocab-size", "1000", "--code", str(module)]
    assert cli_main([*args, "--mechanism", "picky", "--param", "t=2"]) == 1
    assert capsys.readouterr().err.splitlines()[-1].startswith(shown)


def test_a_library_error_of_check_options_is_raised_as_itself(monkeypatch):
    from dxp_plugins.doors import _check_option_values

    class Refuses:
        @classmethod
        def check_options(cls, **options):
            raise dxp.PluginLoadError("the table this option names is not installed", KeyError())

    with pytest.raises(dxp.PluginLoadError, match="not installed"):
        _check_option_values(Refuses, {"t": 1})


def test_under_python_OO_the_lists_say_their_descriptions_were_stripped():
    """Locked-down review 29 F6: `python -OO` strips docstrings, and `dxp masks list` printed
    empty descriptions (the identifiers mask's says what it does not hide); the examples'
    --help crashed on `__doc__.split`."""
    from pathlib import Path

    listed = subprocess.run(
        [sys.executable, "-OO", "-m", "dxp_plugins", "masks", "list"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert "identifiers" in listed.stdout and "stripped by python -OO" in listed.stdout
    example = Path(__file__).resolve().parents[1] / "examples" / "spacy_nouns_entities.py"
    helped = subprocess.run(
        [sys.executable, "-OO", str(example), "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "--epsilon" in helped.stdout, helped.stderr
