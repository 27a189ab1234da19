"""Madlib exact search when the machine is not idle: OpenMP's wait policy, measured.

faiss (and the OpenBLAS inside the faiss-cpu wheel) run on GNU OpenMP, whose idle threads
spin by default. Beside any other busy process they spin on the cores the working threads
need. ``dxp_plugins._openmp`` sets ``OMP_WAIT_POLICY=PASSIVE`` before the library's first
OpenMP user loads (unless the user set it); this script compares, in one run, words/s of
Madlib exact
(``privatize_ids`` on a batch of tokens, best of 3) under

* GNU OpenMP's own default (idle threads spin a while, then sleep: the behaviour without
  our default, measured by importing faiss before dxp_plugins),
* the library default (``PASSIVE``: idle threads sleep at once),
* one OpenMP thread (``OMP_NUM_THREADS=1``),

on an idle machine, beside one busy core (a Python busy loop), and with two copies of the
benchmark at once (their words/s summed): what ``n_jobs=2`` or two CLI runs look like.

    .venv/bin/python benchmarks/omp_contention.py [--vocab 100000,400000] [--tokens 2000]

Writes benchmarks/results/omp_contention.json and .md. Run it on an otherwise idle machine:
the "idle" column assumes nothing else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

from common import GLOVE_WORDS, RESULTS, int_range, machine, markdown_table, positive_int, save

#: OpenMP setting -> environment of the worker ("faiss first": faiss imported before
#: dxp_plugins, so the library leaves OpenMP as GNU's default: spin ~300,000 times, then sleep).
POLICIES = {
    "GNU default (spin, then sleep)": {"DXP_BENCH_FAISS_FIRST": "1"},
    "library default (PASSIVE)": {},
    "one thread (OMP_NUM_THREADS=1)": {"OMP_NUM_THREADS": "1"},
}
SCENARIOS = ("idle", "beside one busy core", "two copies at once")
BUSY_LOOP = "while True: pass"


def worker(vocab: int, tokens: int) -> dict[str, float]:
    """One measurement in this process (its environment decides the OpenMP policy)."""
    import importlib
    import warnings

    import numpy as np

    if os.environ.get("DXP_BENCH_FAISS_FIRST"):
        importlib.import_module("faiss")  # before dxp_plugins: OpenMP keeps GNU's default
    import dxp_plugins as dxp

    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab)
    ids = np.random.default_rng(0).integers(0, min(vocab, 20_000), tokens)
    mechanism = dxp.Madlib(table, 10.0)
    mechanism.privatize_ids(ids[:50])  # builds the index
    best = min(_seconds(mechanism.privatize_ids, ids) for _ in range(3))
    small = min(_seconds(mechanism.privatize_ids, ids[:8]) for _ in range(5))
    return {"words_per_s": tokens / best, "ms_for_8_tokens": 1000 * small}


def _seconds(function: Any, argument: Any) -> float:
    tic = time.perf_counter()
    function(argument)
    return time.perf_counter() - tic


def run_workers(copies: int, vocab: int, tokens: int, env: dict[str, str]) -> list[dict]:
    command = [sys.executable, __file__, "--worker", "--vocab", str(vocab)]
    command += ["--tokens", str(tokens)]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(copies)
    ]
    results = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"worker failed with exit code {process.returncode}")
        results.append(json.loads(out))
    return results


def measure(scenario: str, vocab: int, tokens: int, env: dict[str, str]) -> dict[str, float]:
    busy = None
    if scenario == "beside one busy core":
        busy = subprocess.Popen([sys.executable, "-c", BUSY_LOOP])
        time.sleep(0.5)
    try:
        results = run_workers(2 if scenario == "two copies at once" else 1, vocab, tokens, env)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()
    return {
        "words_per_s": sum(r["words_per_s"] for r in results),
        "ms_for_8_tokens": max(r["ms_for_8_tokens"] for r in results),
    }


def vocab_list(text: str) -> list[int]:
    check = int_range(1_000, GLOVE_WORDS, "GloVe 6B has 400,000 words")
    return [check(part) for part in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=vocab_list, default=[100_000, 400_000])
    parser.add_argument("--tokens", type=positive_int, default=2_000)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.vocab[0], args.tokens)))
        return
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    started = time.perf_counter()
    cells: list[dict[str, Any]] = []
    for vocab in args.vocab:
        for scenario in SCENARIOS:
            for policy, extra in POLICIES.items():
                result = measure(scenario, vocab, args.tokens, {**base, **extra})
                cells.append({"vocab": vocab, "scenario": scenario, "policy": policy, **result})
                print(f"{vocab:,} {scenario}, {policy}: {result['words_per_s']:,.0f} words/s")
    rows = []
    for vocab in args.vocab:
        for scenario in SCENARIOS:
            here = [c for c in cells if c["vocab"] == vocab and c["scenario"] == scenario]
            default = next(c for c in here if c["policy"].startswith("library default"))
            rows += [
                [
                    f"{vocab:,}",
                    scenario,
                    c["policy"],
                    f"{c['words_per_s']:,.0f}",
                    f"{c['words_per_s'] / default['words_per_s']:.2f}",
                    f"{c['ms_for_8_tokens']:.1f}",
                ]
                for c in here
            ]
    header = ["vocab", "machine", "OpenMP", "words/s", "÷ library default", "ms for 8 tokens"]
    table = markdown_table(header, rows)
    elapsed = time.perf_counter() - started
    command = " ".join(["python", "benchmarks/omp_contention.py", *(argv or sys.argv[1:])])
    print("\n" + table + f"\n\ntotal {elapsed:.0f} s")
    save("omp_contention", {"command": command, "tokens": args.tokens, "cells": cells})
    (RESULTS / "omp_contention.md").write_text(
        f"# Madlib exact under OpenMP wait policies\n\n`{command}` on {machine()}; "
        f"{args.tokens:,} tokens per batch, best of 3; two copies: words/s summed, the "
        f"slower copy's 8-token time.\n\n{table}\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
