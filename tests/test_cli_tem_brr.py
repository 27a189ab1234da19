"""TEM and BRR through the ``dxp`` command line (the shared text path)."""

from __future__ import annotations

import json

import pytest

from dxp_plugins.cli import main
from tests.fixtures import BUILTIN_MECHANISMS

TEXT = "the film was a quiet triumph , and the actors shone .\nsecond line here\n"


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def run(capsys, *argv):
    code = main([str(arg) for arg in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("mechanism", "options", "metric"),
    [
        ("tem", ["--param", "beta=0.001"], "euclidean"),
        ("tem", ["--beta", "0.01", "--metric", "angular"], "angular"),
        ("tem", ["--gamma", "4.5", "--param", "constant_work=true"], "euclidean"),
        ("brr", ["--n-bits", "64"], "hamming"),
        ("brr", [], "hamming"),
    ],
)
def test_privatize(capsys, tmp_path, source, mechanism, options, metric):
    report = tmp_path / "report.json"
    code, out, err = run(
        capsys,
        "privatize",
        source,
        "-m",
        mechanism,
        "-e",
        "3",
        "--vocab-size",
        "2000",
        "--report",
        report,
        *options,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].split()[6] == ","  # punctuation passes through
    record = json.loads(report.read_text())
    assert record["guarantee"]["mechanism"] == mechanism
    assert record["guarantee"]["metric"] == metric
    assert record["guarantee"]["tokens_privatized"] == 13


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-m", "tem", "--metric", "cosine"], "metric must be one of"),
        # Options of another mechanism name it (was: "mechanism_params: unknown option(s)").
        (["--metric", "manhattan"], "--metric is a TEM option (use --mechanism tem)"),
        (["-m", "madlib", "--beta", "0.1"], "--beta is a TEM option (use --mechanism tem)"),
        (["-m", "tem", "--n-bits", "64"], "--n-bits is a BRR option (use --mechanism brr)"),
        (["-m", "brr", "--index", "hnsw"], "--index is a MADLIB option (use --mechanism madlib)"),
        (["-m", "tem", "--param", "n_bits=64"], "unknown option(s) 'n_bits'"),
        (["-m", "tem", "--beta", "0.1", "--gamma", "2"], "beta or gamma"),
        (["-m", "brr", "--n-bits", "0"], "n_bits"),
        # Both ways of giving one setting, disagreeing (was: --metric silently won).
        (["-m", "tem", "--param", "metric=angular", "--metric", "euclidean"], "disagree"),
    ],
)
def test_errors_are_one_line_without_input_text(capsys, source, options, message):
    code, out, err = run(capsys, "privatize", source, "-e", "3", "--vocab-size", "500", *options)
    assert code == 1 and out == ""
    assert message in err and len(err.strip().splitlines()) == 1
    assert "triumph" not in err


def test_mechanisms_list(capsys):
    code, out, _ = run(capsys, "mechanisms", "list")
    assert code == 0
    names = {line.split()[0] for line in out.splitlines()}
    assert set(BUILTIN_MECHANISMS) <= names
