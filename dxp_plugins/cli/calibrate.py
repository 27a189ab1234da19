"""``dxp calibrate``: plausible-deniability statistics per epsilon, written to a folder."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import socket
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._progress import is_terminal
from .._validation import check_epsilon, check_probability
from ..errors import DxpWarning, PrivacyWarning, os_reason
from .process import CLIError, _raise_if_stopped, _signals_held
from .records import BOM, _check_input
from .settings import _build_mechanism
from .targets import _write_error

#: Vocabulary words sampled when neither --words nor --words-file is given.
DEFAULT_WORDS = 1000


def _calibrate(args: argparse.Namespace) -> int:
    targeted = _check_arguments(args)
    out = Path(args.out)
    keys = None if args.words_file is None else _read_words_file(args.words_file)
    results, choice, table, words = _evaluate(args, targeted, keys)
    summaries = _summaries(results, choice, table, words)
    try:
        written, stale = _write(
            args.out,
            out,
            lambda staging: _write_staged(
                args, staging, results, summaries, choice, table, len(words)
            ),
            private=args.words_file is not None,
        )
    except OSError as error:  # "dxp: error: Is a directory" alone names no file
        name = error.filename2 or error.filename  # os.replace(temporary, target): the target
        if name is None:
            raise
        raise _write_error(name, error) from None
    _print_summary(summaries, targeted)
    if choice is not None:
        print(f"{choice}  ({choice.caveat})")
    removed = f" (removed the previous run's {', '.join(stale)})" if stale else ""
    print(f"wrote {', '.join(written)} to {out}{removed}")
    return 0


def _check_arguments(args: argparse.Namespace) -> bool:
    """Refuse a bad argument before anything is loaded or drawn; True when a target
    (``--max-n-w``/``--min-s-w``) is given."""
    _check_word_source(args)
    for name, value, minimum in (
        ("--words", args.words, 1),
        ("--samples", args.samples, 1),
        ("--word-seed", args.word_seed, 0),
        ("--refine", args.refine, 0),
    ):
        if value is not None and value < minimum:  # None: calibrating on --words-file
            raise CLIError(f"{name} must be >= {minimum}")
    if not 0.0 <= args.eta < 1.0:  # before the first epsilon's status line
        raise CLIError("--eta must be in [0, 1)")
    if not 0.0 < args.confidence < 1.0:
        raise CLIError("--confidence must be between 0 and 1 (exclusive)")
    for epsilon in args.epsilons:  # every one, not only the first
        check_epsilon(epsilon, "--epsilons")
    if args.word_pool is not None and args.word_pool < 1:
        raise CLIError("--word-pool must be >= 1")
    if args.max_n_w is not None:
        check_probability(args.max_n_w, "--max-n-w", open_interval=False)
    if args.min_s_w is not None and not (math.isfinite(args.min_s_w) and args.min_s_w >= 1):
        raise CLIError("--min-s-w must be a finite number >= 1")
    targeted = args.max_n_w is not None or args.min_s_w is not None
    if args.refine and not targeted:
        raise CLIError("--refine bisects towards a target: give --max-n-w or --min-s-w")
    if not args.out.strip():
        raise CLIError("--out must name a folder")
    _check_folder(args.out)  # created only once every argument has been used (and so checked)
    return targeted


def _check_word_source(args: argparse.Namespace) -> None:
    """The words are a vocabulary sample (--words, --word-pool, --word-seed: defaults filled
    in here) or those of --words-file (which must be readable), not both."""
    args.words_skipped = None  # --words-file: its distinct words out of the vocabulary
    if args.words_file is None:
        args.words = DEFAULT_WORDS if args.words is None else args.words
        args.word_seed = 0 if args.word_seed is None else args.word_seed
        return
    for flag, value in (
        ("--words", args.words),
        ("--word-pool", args.word_pool),
        ("--word-seed", args.word_seed),
    ):
        if value is not None:
            raise CLIError(
                f"--words-file calibrates on the words of FILE; {flag} belongs to a sample "
                "of vocabulary words instead: give one or the other"
            )
    _check_input(args.words_file)


def _read_words_file(name: str) -> dict[str, str]:
    """The distinct words of file ``name`` ('-': stdin), as the text path sees them in a
    text: split into tokens by its public tokenizer (allow-listed punctuation and
    whitespace are not words), one line at a time; keyed by their lookup key (NFKC, lower
    case), each with its first spelling, looked up as the text path looks it up. Warns
    first that the outputs will name them; an error names a line, never a word."""
    from .._normalize import normalize_word
    from .._validation import check_text
    from ..text import tokenize

    warnings.warn(
        "--words-file: calibration.csv, summary.csv and summary.json name the words "
        "calibrated on: when they come from private texts, keep --out as private as those "
        "texts",
        PrivacyWarning,
        stacklevel=1,
    )
    label = "stdin" if name == "-" else name
    words: dict[str, str] = {}
    try:
        stream = sys.stdin.buffer if name == "-" else open(name, "rb")  # noqa: SIM115
    except OSError as error:
        raise CLIError(f"cannot read {name}: {os_reason(error)}") from None
    try:
        for number, raw in enumerate(stream, start=1):
            line = check_text(
                raw.removeprefix(BOM) if number == 1 else raw, f"{label}, line {number}"
            )
            tokens = tokenize(line)
            for word, selected in zip(tokens.words, tokens.selected, strict=True):
                if selected:
                    words.setdefault(normalize_word(word), word)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if not words:
        raise CLIError(f"--words-file {name} holds no word to calibrate on")
    return words


def _vocabulary_words(
    table: Any, words: dict[str, str], name: str, args: argparse.Namespace
) -> list[str]:
    """The vocabulary words ``words`` (from :func:`_read_words_file`) look up to, in
    vocabulary order (not the file's); those out of the vocabulary are skipped and counted
    in a warning (never named), and none left is an error."""
    import numpy as np

    from ..embeddings.table import OOV_ID

    rows = table.lookup(list(words.values()))
    skipped = int(np.sum(rows == OOV_ID))
    args.words_skipped = skipped
    if skipped == len(words):
        raise CLIError(
            f"--words-file {name}: none of its {len(words):,} distinct words is in the "
            f"embeddings' vocabulary ({len(table):,} words): nothing to calibrate on"
        )
    if skipped:
        verb = "is" if skipped == 1 else "are"
        warnings.warn(
            f"--words-file: {skipped:,} of its {len(words):,} distinct words {verb} not in "
            f"the embeddings' vocabulary and {'was' if skipped == 1 else 'were'} skipped "
            "(N_w is defined for vocabulary words only)",
            DxpWarning,
            stacklevel=1,
        )
    # A row's own word looks up to that row: the statistics name the vocabulary's word.
    return [str(word) for word in table.word_array()[np.unique(rows[rows != OOV_ID])]]


def _evaluate(
    args: argparse.Namespace, targeted: bool, keys: dict[str, str] | None = None
) -> tuple[list[Any], Any, Any, list[str]]:
    """The deniability results per epsilon (and the choice, when targeted), the table and
    the words they were measured on (``keys``: those of --words-file, else a sample)."""
    from .. import calibration
    from ..calibration.choose import check_reachable
    from ..calibration.deniability import has_closed_form

    # None: a bar when stderr is a terminal, else one line per epsilon; nothing when closed
    progress = False if sys.stderr is None else args.progress
    log_lines = progress is None and not is_terminal(sys.stderr)
    started = time.monotonic()

    def mechanism(epsilon: float) -> Any:
        # The door settings share one loaded table between the mechanisms of every epsilon.
        return _build_mechanism(argparse.Namespace(**{**vars(args), "epsilon": epsilon}))

    def build(epsilon: float) -> Any:
        built = mechanism(epsilon)
        if log_lines:  # a long run off a terminal (a log, CI) says where it is
            print(
                f"dxp calibrate: epsilon={epsilon:.6g} ({len(words)} words, "
                f"{time.monotonic() - started:.0f} s so far)",
                file=sys.stderr,
                flush=True,
            )
        return built

    first = mechanism(args.epsilons[0])
    table = first.embeddings
    exact = has_closed_form(first)
    if args.method == "exact" and not exact:
        raise CLIError(f"{first.name} has no closed-form output law here: use --method monte_carlo")
    if targeted and (args.method == "monte_carlo" or not exact):  # before any draw
        check_reachable(
            args.max_n_w,
            args.min_s_w,
            args.samples,
            args.eta,
            args.confidence,
            True,
            names={"min_s_w": "--min-s-w", "max_n_w": "--max-n-w", "n_samples": "--samples"},
        )
    if keys is None:
        words = calibration.sample_words(
            table, args.words, pool=args.word_pool, random_state=args.word_seed
        )
    else:
        words = _vocabulary_words(table, keys, args.words_file, args)

    options: dict[str, Any] = {
        "n_samples": args.samples,
        "eta": args.eta,
        "method": args.method,
        "confidence": args.confidence,
        "progress": progress,
    }
    if not targeted:
        results = [
            calibration.plausible_deniability(build(epsilon), words, **options)
            for epsilon in sorted(set(args.epsilons))
        ]
        return results, None, table, words
    choice = calibration.choose_epsilon(
        build,
        words,
        max_n_w=args.max_n_w,
        min_s_w=args.min_s_w,
        epsilons=args.epsilons,
        refine=args.refine,
        stop_at_failure=False,
        **options,
    )
    return list(choice.evaluations), choice, table, words


def _summaries(
    results: list[Any], choice: Any, table: Any, words: list[str]
) -> list[dict[str, Any]]:
    """One summary row per epsilon, with epsilon x the median neighbour distance (Euclidean)
    and, when targeted, whether it meets the target."""
    import numpy as np

    from .. import calibration
    from .._tables import finite_or_none

    summaries = [result.summary() for result in results]
    if results[0].metric == "euclidean":
        median_nn = float(np.median(calibration.neighbor_distances(table, words)))
        for row in summaries:  # None when no word has a neighbour (a 1-word vocabulary)
            row["epsilon_x_median_nn"] = finite_or_none(row["epsilon"] * median_nn)
    if choice is not None:
        verdicts = {row["epsilon"]: row["meets_target"] for row in choice.table()}
        for row in summaries:
            row["meets_target"] = verdicts[row["epsilon"]]
    return summaries


#: Staging folders are ``.dxp-calibrate.<host>-<pid>.<random>.tmp``: a later run on the
#: same host tells from the pid whether the run that made one is gone (killed outright)
#: and its folder can be removed; ``<host>`` keeps runs of other machines sharing the
#: folder (NFS) out of it.
_STAGING = ".dxp-calibrate."


def _host_tag() -> str:
    """8 hex digits of the host name's SHA-256 (a name may hold dots, which the folder
    name splits on)."""
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _remove_stale_staging(out: Path) -> None:
    """Remove staging folders left in ``out`` by runs of this host no longer alive
    (SIGKILL, a crash): with ``--words-file`` they hold rows naming the user's words. A
    live process's folder (another run writing there now, or a reused pid), another
    host's and any other name are left alone. Containers sharing a folder
    under one host name but separate pid namespaces would still look dead to each other."""
    host = _host_tag()
    for folder in out.glob(f"{_STAGING}{host}-*.tmp"):
        pid = folder.name[len(_STAGING) + len(host) + 1 :].partition(".")[0]
        if not (pid.isascii() and pid.isdecimal()) or len(pid) > 10:
            continue  # not a pid this code wrote
        if int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (POSIX: signal 0; on Windows 0 is CTRL_C_EVENT, so
    every folder is kept there)."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's (PermissionError), or cannot tell
        return True
    return True


def _write(
    given: str, out: Path, stage: Callable[[Path], list[str]], *, private: bool = False
) -> tuple[list[str], list[str]]:
    """Write the tables, the JSON report and the figures into ``out`` (``--out`` as
    ``given``; ``stage`` writes them into a folder and names them); returns the files
    written and the previous run's figures removed. Everything is written into a hidden
    folder inside ``out`` first; then, with signals held, the previous run's files are
    removed (summary.json first) and the new ones moved into place (summary.json last): an
    interrupted or failing run leaves the previous run's files, or only its own, never new
    results beside old figures (figures take seconds to draw).

    ``private`` (``--words-file``: the tables name the user's words): a folder this run
    creates is 0700 and every file 0600, whatever the umask (never world-readable: the
    advice is to keep them private)."""
    try:
        if private and not out.exists():
            out.mkdir(mode=0o700, parents=True)
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CLIError(f"cannot create {given}: {os_reason(error)}") from None
    _remove_stale_staging(out)
    try:
        prefix = f"{_STAGING}{_host_tag()}-{os.getpid()}."
        staging = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=out))
    except OSError as error:
        raise CLIError(f"cannot write into {given}: {os_reason(error)}") from None
    try:
        try:
            drawn = stage(staging)
        except OSError as error:  # named as the file it becomes, not the hidden folder's
            error.filename = _final_name(error.filename, staging, out)
            raise
        written = [name for name in drawn if (staging / name).is_file()]
        if private:
            for name in written:
                (staging / name).chmod(0o600)
        stale = [name for name in FIGURES if name not in written and (out / name).is_file()]
        with _signals_held():  # not split by Ctrl-C: the previous run's files, then these
            _raise_if_stopped()  # a stop dropped while drawing: no new files
            for name in sorted(OUTPUTS, key=lambda name: name != "summary.json"):
                try:  # a previous run's: summary.json first
                    (out / name).unlink(missing_ok=True)
                except OSError as error:
                    raise CLIError(f"replacing {out / name}: {os_reason(error)}") from None
            for name in sorted(written, key=lambda name: name == "summary.json"):
                os.replace(staging / name, out / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return written, stale


def _final_name(name: Any, staging: Path, out: Path) -> Any:
    """The ``--out`` file a staged file ``name`` would have become (a failed staged write
    would otherwise name the hidden ``.dxp-calibrate.*.tmp`` folder); other names unchanged."""
    if isinstance(name, str) and Path(name).is_relative_to(staging):
        return str(out / Path(name).relative_to(staging))
    return name


def _write_staged(
    args: argparse.Namespace,
    out: Path,
    results: list[Any],
    summaries: list[dict[str, Any]],
    choice: Any,
    table: Any,
    words: int,
) -> list[str]:
    """Write the tables, the JSON report and the figures into ``out``; returns their names."""
    from .._tables import write_csv

    write_csv([r for result in results for r in result.to_records()], out / "calibration.csv")
    write_csv(summaries, out / "summary.csv")
    report: dict[str, Any] = {
        "mechanism": args.mechanism,
        "embeddings": {
            "name": args.embeddings,
            "params": dict(args.embeddings_param),  # where a custom table came from
            "vocab_size": len(table),
            "fingerprint": table.fingerprint,
        },
        "settings": {k: v for k, v in results[0].settings.items() if k != "epsilon"},
        "words": words,
        # Where the words came from: a vocabulary sample (pool and seed), or --words-file
        # (and how many of its distinct words were out of the vocabulary, skipped).
        "word_pool": args.word_pool,
        "word_seed": args.word_seed,
        "words_file": args.words_file,
        "words_skipped": args.words_skipped,
        "seed": args.seed,  # the noise's: None for secure randomness
        "summaries": summaries,
    }
    if choice is not None:  # its evaluations are the summaries above
        report["choice"] = {k: v for k, v in choice.to_dict().items() if k != "evaluations"}
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    written = ["calibration.csv", "summary.csv", "summary.json"]
    if args.figures:
        written += _calibration_figures(results, set(args.epsilons), out)
    return written


#: The figures a run writes into --out (and removes when it writes none: no stale ones).
FIGURES = ("nw_sw_histograms.png", "nw_sw_curves.png")
#: Every file a run writes into --out (a previous run's are removed before these go in).
OUTPUTS = ("calibration.csv", "summary.csv", "summary.json", *FIGURES)


def _check_folder(name: str) -> None:
    """Refuse early, creating nothing, an output folder that could not be made later: its
    nearest existing ancestor must be a folder this process may write into."""
    existing = Path(name).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise CLIError(f"cannot create {name}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CLIError(f"cannot create {name}: {existing}: Permission denied")


def _calibration_figures(results: list[Any], listed: set[float], out: Path) -> list[str]:
    try:
        from .. import plotting

        shown = [result for result in results if result.epsilon in listed]
        plotting.deniability_histograms(shown, out / FIGURES[0])
        label = f"{results[0].mechanism} ({results[0].vocab_size} words)"
        plotting.deniability_curves({label: results}, out / FIGURES[1])
    except ImportError as error:
        warnings.warn(f"no figures: {error}", DxpWarning, stacklevel=1)
        return []
    return list(FIGURES)


def _print_summary(summaries: list[dict[str, Any]], targeted: bool) -> None:
    """One row per epsilon; with a target also the bounds the verdict judged (Monte Carlo:
    the upper bound of N_w and the lower bound of S_w) and the verdict."""
    header = f"{'epsilon':>9} {'mean N_w':>9} {'max N_w':>8} {'mean S_w':>9} {'min S_w':>8}"
    if targeted:
        header += f" {'N_w bound':>9} {'S_w bound':>9} {'meets':>5}"
    print(header)
    for row in summaries:
        line = (
            f"{row['epsilon']:>9.4g} {row['mean_n_w']:>9.3f} {row['max_n_w']:>8.3f} "
            f"{row['mean_s_w']:>9.1f} {row['min_s_w']:>8d}"
        )
        if targeted:
            verdict = "yes" if row["meets_target"] else "no"
            line += f" {row['max_n_w_upper']:>9.3f} {row['min_s_w_lower']:>9d} {verdict:>5}"
        print(line)
