"""An option that takes one value may be given once (review 25, F1).

argparse lets the last of a repeated option win, silently: ``--field body --field subject``
privatized only ``subject``, and with ``--keep-fields '*'`` the body was copied raw. Every
single-valued option of ``dxp privatize`` and ``dxp calibrate`` now refuses a second
occurrence at parse time, before anything is read or drawn; list-valued options (``--pos``,
``--entities``, ``--keep-fields``, ``--param``, ``--embeddings-param``) add up as before,
and the on/off switches (``--progress``, ``--figures``) keep argparse's last-wins.
``--field`` is list-valued now (each field privatized, the record's spend their sum: see
test_cli_fields.py), each name once.
"""

from __future__ import annotations

import argparse
import json

import pytest

from dxp_plugins.cli import build_parser, main

FAST = ["--vocab-size", "5000"]
TICKET = {"id": 1, "subject": "Refund for zq7name", "body": "zq7name, card zq7card"}


def refused(argv, capsys):
    """The exit code and stderr of a command line argparse refuses."""
    with pytest.raises(SystemExit) as stopped:
        main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    assert captured.out == ""
    return stopped.value.code, captured.err


def test_the_same_field_twice_is_refused_before_anything_is_read(tmp_path, capsys, monkeypatch):
    source = tmp_path / "tickets.jsonl"
    source.write_text(json.dumps(TICKET) + "\n")
    out = tmp_path / "private.jsonl"
    report = tmp_path / "report.json"

    def no_read(*args, **kwargs):
        raise AssertionError("an input was read")

    monkeypatch.setattr("dxp_plugins.cli.privatize._census", no_read)
    argv = ["privatize", source, "--field", "body", "--field", "body", "--keep-fields", "*"]
    code, err = refused([*argv, "-e", 3, "-o", out, "--report", report, *FAST], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("dxp: error: argument --field: field 'body' given twice")
    assert "zq7" not in err
    assert not out.exists() and not report.exists()


def test_one_field_given_once_still_runs(tmp_path, capsys):
    source = tmp_path / "tickets.jsonl"
    source.write_text(json.dumps(TICKET) + "\n")
    code = main(["privatize", str(source), "--field", "body", "-e", "300", *FAST])
    out = capsys.readouterr().out
    assert code == 0 and list(json.loads(out)) == ["body"]


#: Each single-valued option of ``dxp privatize`` (its flags, a valid value).
PRIVATIZE_OPTIONS = [
    (["-o", "--output"], "out.txt"),
    (["-m", "--mechanism"], "madlib"),
    (["-e", "--epsilon"], "5"),
    (["--embeddings"], "glove-6b-50d"),
    (["--vocab-size"], "5000"),
    (["--index"], "exact"),
    (["--metric"], "euclidean"),
    (["--beta"], "0.001"),
    (["--gamma"], "2"),
    (["--n-bits"], "64"),
    (["--oov"], "unk"),
    (["--seed"], "1"),
    (["--spacy-model"], "en_core_web_sm"),
    (["--token-filter"], "x.v1"),
    (["--mask"], "identifiers"),
    (["--format"], "jsonl"),
    (["--null"], "keep"),
    (["--unit"], "line"),
    (["--batch-size"], "10"),
    (["--report"], "report.json"),
    (["--code"], "mine.py"),
]

#: Each single-valued option of ``dxp calibrate`` (its flags, a valid value).
CALIBRATE_OPTIONS = [
    (["-m", "--mechanism"], "madlib"),
    (["--epsilons"], "5"),
    (["--out"], "calib"),
    (["--words"], "5"),
    (["--word-pool"], "100"),
    (["--word-seed"], "1"),
    (["--words-file"], "words.txt"),
    (["--samples"], "10"),
    (["--eta"], "0.05"),
    (["--method"], "auto"),
    (["--confidence"], "0.9"),
    (["--max-n-w"], "0.5"),
    (["--min-s-w"], "5"),
    (["--refine"], "1"),
    (["--embeddings"], "glove-6b-50d"),
    (["--vocab-size"], "1000"),
    (["--index"], "exact"),
    (["--metric"], "euclidean"),
    (["--beta"], "0.001"),
    (["--gamma"], "2"),
    (["--n-bits"], "64"),
    (["--seed"], "1"),
    (["--code"], "mine.py"),
]


def _cases(command, options, required):
    for flags, value in options:
        first, second = flags[0], flags[-1]  # -e then --epsilon: one option, two spellings
        argv = [command, *required, first, value, second, value]
        yield pytest.param(argv, second, id=f"{command} {second}")


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        *_cases("privatize", PRIVATIZE_OPTIONS, []),
        *_cases("calibrate", CALIBRATE_OPTIONS, []),
    ],
)
def test_every_single_valued_option_refuses_a_repeat(capsys, argv, flag):
    """Even with the same value twice (simplest to state; the second adds nothing). Parsed
    only: the refusal comes from the command line, before any handler runs."""
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1, err
    assert f"{flag}: given twice" in err, err


def test_epsilons_given_twice_says_to_list_them_in_one(capsys):
    argv = ["calibrate", "--epsilons", "3", "--epsilons", "5", "--out", "o"]
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    code, err = stopped.value.code, capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "one comma-separated list" in err, err


def test_list_options_and_switches_still_add_up_or_override():
    parser = build_parser()
    lists = ["--pos", "NOUN", "--pos", "PROPN", "--keep-fields", "id", "--keep-fields", "label"]
    lists += ["--param", "a=1", "--param", "b=2"]
    args = parser.parse_args(["privatize", "-e", "1", *lists, "--progress", "--no-progress"])
    assert args.pos == ["NOUN", "PROPN"] and args.keep_fields == ["id", "label"]
    assert args.param == [("a", 1), ("b", 2)] and args.progress is False


def _subcommand(name):
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


@pytest.mark.parametrize(
    ("command", "listed"), [("privatize", PRIVATIZE_OPTIONS), ("calibrate", CALIBRATE_OPTIONS)]
)
def test_no_single_valued_option_is_left_last_wins(command, listed):
    """A new option is once-only unless it adds up (append) or is an on/off switch: this
    fails when one is added with argparse's default store action."""
    from dxp_plugins.cli.parser import _Once

    single = {
        action.option_strings[-1]
        for action in _subcommand(command)._actions
        if action.option_strings and isinstance(action, argparse._StoreAction | _Once)
    }
    assert single == {flags[-1] for flags, _ in listed}
    stores = [
        action.option_strings[-1]
        for action in _subcommand(command)._actions
        if isinstance(action, argparse._StoreAction) and action.option_strings
    ]
    assert stores == [], f"give these action=_Once: {stores}"


@pytest.mark.parametrize("option", ["--param", "--embeddings-param"])
def test_a_key_value_option_adds_up_but_refuses_a_key_given_twice(option, capsys):
    """Diff review F5: ``--param gamma=0.5 --param gamma=100`` ran with 100 (the pairs
    become a dict); a key given twice, in either spelling of its name, is refused."""
    parser = build_parser()
    args = parser.parse_args(["privatize", "n.txt", "-e", "3", option, "a=1", option, "b=2"])
    assert getattr(args, option[2:].replace("-", "_")) == [("a", 1), ("b", 2)]
    for second in ("gamma=100", "gamma=0.5"):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(
                ["privatize", "n.txt", "-e", "3", option, "gamma=0.5", option, second]
            )
        assert exit_.value.code == 2
        assert "key 'gamma' given twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser.parse_args(["privatize", "n.txt", "-e", "3", option, "n-bits=8", option, "n_bits=9"])
    assert "key 'n_bits' given twice" in capsys.readouterr().err


@pytest.mark.parametrize(
    "given",
    [["id,id"], ["id", "id"], ["id,label", " id"], ["*", "*"]],
    ids=["one-value", "two-values", "spaced", "star"],
)
def test_a_kept_field_named_twice_is_refused(given, capsys):
    """``--keep-fields id,id`` listed ``id`` twice in the report (twenty-fifth session's
    leftover): a name given twice, within one value or across repeats, is a usage error,
    as a ``--param`` key given twice is; different names still add up."""
    argv = ["privatize", "n.jsonl", "-e", "3"]
    for value in given:
        argv += ["--keep-fields", value]
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and err.count("\n") == 1, err
    name = given[0].split(",")[0]
    assert f"argument --keep-fields: field {name!r} given twice" in err, err
