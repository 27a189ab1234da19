"""The documents of ``privatize``'s inputs (text lines, whole files, JSONL records) and the
output line written for each."""

from __future__ import annotations

import argparse
import bisect
import itertools
import json
import os
import re
import stat
import sys
import warnings
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import closing
from pathlib import Path
from typing import IO, Any, NoReturn

from .._progress import is_terminal
from ..errors import DxpWarning, PrivacyWarning, os_reason
from .process import CLIError
from .report import _Unprotected
from .settings import _labels
from .targets import _descriptor

#: ``--keep-fields '*'``: every field of a JSONL record.
ALL_FIELDS = "*"
#: The most ``--keep-fields`` names a report lists; the others are counted (under '*' the
#: names are the records' own keys: a file may hold a new one in every record).
LISTED_FIELDS = 100
#: The distinct names counted under '*' before counting stops (bounded memory): past it,
#: the report's count of the names not listed is a floor.
COUNTED_FIELDS = 100_000
#: The JSONL field privatized when ``--field`` is not given.
DEFAULT_FIELD = "text"
#: The UTF-8 byte order mark (U+FEFF) some editors write first: not part of the first word.
BOM = "\ufeff".encode()


def _is_jsonl(name: str, args: argparse.Namespace) -> bool:
    if args.format != "auto":
        return args.format == "jsonl"
    if name == "-":  # no suffix: JSON lines when a JSONL option says so
        return bool(args.stdin_jsonl)
    return Path(name).suffix.lower() in {".jsonl", ".ndjson"}


def _jsonl_options(args: argparse.Namespace) -> None:
    """An explicit ``--field``, ``--null`` or ``--keep-fields`` makes stdin JSONL, and needs
    JSONL input (they were silently ignored on text); then ``args.fields`` lists the
    ``--field``s (default: one, :data:`DEFAULT_FIELD`) and ``--null`` gets its default."""
    given = [
        option for option in ("field", "null", "keep_fields") if getattr(args, option) is not None
    ]
    args.stdin_jsonl = bool(given)
    if given and not any(_is_jsonl(name, args) for name in args.files):
        option = "--" + given[0].replace("_", "-")
        raise CLIError(
            f"{option} applies to JSONL input only (.jsonl/.ndjson files, or --format jsonl)"
        )
    if args.unit == "file" and any(_is_jsonl(name, args) for name in args.files):
        raise CLIError("--unit file applies to plain text only (JSONL: one record per line)")
    args.fields = list(args.field or [DEFAULT_FIELD])
    if args.null is None:
        args.null = "error"


def _split_line(raw: bytes) -> tuple[bytes, bytes]:
    body = raw.rstrip(b"\r\n")
    return body, raw[len(body) :]


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, without a leading byte order mark."""
    for number, raw in enumerate(stream, start=1):
        yield number, raw.removeprefix(BOM) if number == 1 else raw


def _decode(raw: bytes, where: str) -> str:
    from .._validation import check_text

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


def next_batch(records: Iterator[Any], batch_size: int) -> list[Any]:
    """The next records of ``records`` to privatize together: ``batch_size`` of them, or
    fewer once their texts hold :data:`~dxp_plugins.text.BATCH_CHARS` characters, as
    :func:`~dxp_plugins.text.privatize_texts` closes a batch. A count alone held 1,000
    records of any size at once (100 lines of 1 MB: 533 MB against 219 MB for the same
    bytes in short lines; PRIVACY.md 24)."""
    from ..text import batch_is_full

    batch: list[Any] = []
    chars = 0
    for record in records:
        batch.append(record)
        chars += sum(len(text) for text in record[2])
        if batch_is_full(len(batch), chars, batch_size):
            break
    return batch


def _records(
    name: str, stream: IO[bytes], args: argparse.Namespace
) -> Iterator[tuple[int | None, Any, tuple[str, ...]]]:
    """(line number, context, texts) per document: its one text, or a JSONL record's
    ``--field``s in order (``""`` for a null one); the context rebuilds the output around
    the texts. ``args.place`` follows the line being read, for unexpected errors."""
    label = _label(name)
    if _is_jsonl(name, args):
        for number, raw in _lines(stream):
            args.place = where = _place(label, number)
            body, ending = _split_line(raw)
            if not body.strip():
                yield number, ("blank", ending), ("",) * len(args.fields)
                continue
            record = _parse_record(body, where)
            yield number, ("json", record, ending), _field_texts(record, args, where)
    elif args.unit == "file":
        args.place = label
        data = stream.read().removeprefix(BOM)
        if args.format == "auto":
            first, second = [*_opening_lines(data), None, None][:2]
            kind = _json_kind(data) or (None if first is None else _json_opening(first, second))
            if kind is not None:
                _refuse_json(label, kind)
        yield None, ("raw", b""), (_decode(data, label),)
    else:
        checking = args.format == "auto"  # until the opening lines with text are checked
        opened: tuple[str, bytes] | None = None  # a first line "{" or "[": where, the line
        for number, raw in _lines(stream):
            args.place = where = _place(label, number)
            body, ending = _split_line(raw)
            if checking and body.strip():
                if opened is None and body.strip() in _LONE_BRACKETS:
                    opened = where, body  # decided with the next line with text
                else:
                    checking = False
                    first, second = (body, None) if opened is None else (opened[1], body)
                    kind = _json_opening(first, second)
                    if kind is not None:
                        _refuse_json(where if opened is None else opened[0], kind)
            yield number, ("raw", ending), (_decode(body, where),)


def _field_texts(record: Any, args: argparse.Namespace, where: str) -> tuple[str, ...]:
    """The texts of a JSONL record's ``--field``s, in order: a null one is an error, or
    under ``--null keep`` no text (``""``: nothing privatized or spent)."""
    from .._validation import check_text

    texts = []
    for field in args.fields:
        value = record.get(field) if isinstance(record, dict) else None
        if isinstance(value, str):
            texts.append(check_text(value, where))
        elif value is None and isinstance(record, dict) and field in record:
            if args.null != "keep":
                raise CLIError(
                    f"{where}: field {field!r} is null (--null keep writes such records "
                    "with the field null, privatizing nothing)"
                )
            texts.append("")
        else:
            hint = ""
            if "." in field and isinstance(record, dict) and field.split(".")[0] in record:
                hint = " (--field names a top-level key: nested fields are not read)"
            if not isinstance(record, dict):
                problem = "is missing: the record is not a JSON object"
            elif field not in record:
                problem = "is missing"
            else:  # its JSON type, never its value
                problem = f"is {_JSON_TYPES.get(type(value), 'a value')}, not a string"
            raise CLIError(f"{where}: field {field!r} {problem}{hint}")
    return tuple(texts)


#: A first line that opens pretty-printed JSON records.
_LONE_BRACKETS = (b"{", b"[")
#: A JSON key (``"name":``), the start of an object.
_KEY = rb'"(?:[^"\\]|\\.)*"\s*:'
#: A first line that starts JSON records and goes on on the next lines: an object with its
#: first key, or a list whose first object opens (with its first key, or alone).
_JSON_STARTS = re.compile(rb"\s*(\{\s*" + _KEY + rb"|\[\s*\{\s*(" + _KEY + rb"|$))")
#: The line after a lone "{" or "[" in pretty-printed JSON records: a key, or an object.
_JSON_CONTINUES = re.compile(rb"\s*(" + _KEY + rb"|\{)")


def _opening_lines(data: bytes) -> list[bytes]:
    """The first two lines of ``data`` with text."""
    return list(itertools.islice((line for line in data.splitlines() if line.strip()), 2))


def _json_opening(first: bytes, second: bytes | None) -> str | None:
    """What JSON records text opens with (its first two lines with text), as an error
    names it; None for text. One rule for ``--unit line`` and ``--unit file``."""
    kind = _json_kind(first)
    if kind is not None:
        return kind
    if _JSON_STARTS.match(first):
        return "the start of a JSON document"
    if first.strip() in _LONE_BRACKETS and second is not None and _JSON_CONTINUES.match(second):
        return "the start of a pretty-printed JSON document"
    return None


def _refuse_json(where: str, what: str) -> NoReturn:
    """Text input under ``--format auto`` that is JSON: its keys would be privatized too."""
    raise CLIError(
        f"{where} looks like {what}: give --format jsonl (with --field) for JSON "
        "lines, or --format text to privatize such lines as plain text (keys and all)"
    )


class _NotJSON(ValueError):
    """NaN, Infinity or -Infinity: Python's json reads them, but they are not JSON."""


def _refuse_constant(name: str) -> NoReturn:
    raise _NotJSON(name)


def _parse_record(body: bytes, where: str) -> Any:
    """One JSONL line, decoded as strict UTF-8 first (as plain text is: json.loads would
    guess UTF-16 or UTF-32), then parsed as strict JSON; errors name the line and the
    reason, never the input. A byte-order mark opening the line is dropped, as it is on a
    file's first line: ``cat`` of files that each begin with one puts it mid-input."""
    from .._validation import check_text

    text = check_text(body.removeprefix(BOM), where)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except _NotJSON:
        reason = "NaN and Infinity are not JSON"
    except json.JSONDecodeError as error:  # its msg is fixed text; the part after ': ' may
        # quote input (the pure-Python scanner's "Invalid \\escape: 'x'"); ':' alone would
        # cut "Expecting ':' delimiter" to "Expecting '"
        message = error.msg.partition(": ")[0]  # "Unterminated string starting at", ...
        where_in = " character" if message.endswith(" at") else ", character"
        reason = f"{message}{where_in} {error.pos + 1}"
    except RecursionError:
        reason = "nested too deeply"
    except ValueError:  # int(): more digits than sys.get_int_max_str_digits()
        reason = "a number too long"
    raise CLIError(f"{where}: not valid JSON ({reason})")


#: The largest text :func:`_json_kind` parses to see whether it is JSON records: parsing
#: takes about 20x the text's size (a 40 MB line of ``[{}, ...]`` took 865 MB). Longer
#: JSON records are still refused by their opening (:data:`_JSON_STARTS`).
SNIFF_BYTES = 1 << 20


def _json_kind(body: bytes) -> str | None:
    """What JSON ``body`` is when it holds records, as an error names it: an object, or a
    non-empty list of objects (as .json files hold them); else None (and for a body over
    :data:`SNIFF_BYTES`, which is not parsed)."""
    if len(body) > SNIFF_BYTES or not body.lstrip().startswith((b"{", b"[")):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError too
        return None
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return "a JSON list of objects"
    return None


def _render(
    context: Any, privates: Sequence[str], fields: Sequence[str], kept: Sequence[str], where: str
) -> bytes:
    """The output line: plain text (``privates[0]``), or a JSON object of the private
    fields (a null one stays null) and the kept ones (strict JSON: a kept value JSON cannot
    hold is an error naming its field)."""
    if context[0] == "json":
        _, record, ending = context
        keep_all = ALL_FIELDS in kept
        private = dict(zip(fields, privates, strict=True))
        out = {
            key: (None if value is None else private[key]) if key in private else value
            for key, value in record.items()
            if key in private or keep_all or key in kept
        }
        try:
            text = json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")
        except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
            raise _unwritable_field(out, kept, where) from None
        return text + (ending or b"\n")
    return privates[0].encode("utf-8") + context[-1]


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
    for field in args.fields:
        if field in kept:
            raise CLIError(f"--keep-fields: {field!r} is a privatized field (--field)")
    which = "every field but --field" if kept == [ALL_FIELDS] else f"{len(kept)} field(s)"
    warnings.warn(
        f"--keep-fields writes {which} of each JSONL record unprotected "
        "(not privatized, not counted in the guarantee)",
        PrivacyWarning,
        stacklevel=1,
    )
    return kept


def _is_null(context: Any, fields: Sequence[str]) -> bool:
    """Whether a document is a JSONL record with a null ``--field`` (``--null keep``)."""
    return context[0] == "json" and any(context[1][field] is None for field in fields)


#: A letter or a digit: a token holding one is a word the default selection privatizes
#: (no allow-listed punctuation mark holds one, nor whitespace or an invisible character).
_WORD_CHARACTER = re.compile(r"[^\W_]")


def _has_word(text: str) -> bool:
    """Whether ``text`` holds a word as the text path tokenizes it: a token the default
    selection privatizes, not whitespace, an allow-listed punctuation mark (``-``, ``—``) or
    an invisible character (a BOM, a zero-width space). A text a mask would replace whole
    still holds words: what is masked was text. Cheap for text: a letter or a digit answers
    without tokenizing."""
    if not text:
        return False
    if _WORD_CHARACTER.search(text):
        return True
    from .._tokenization import tokenize

    return any(tokenize(text).selected)


class _Texts:
    """Whether, for each ``--field``, some JSONL record of one input held a word in it.
    Under ``--null keep`` or ``--keep-fields``, an input in which a ``--field`` held none is
    refused: a wrong ``--field``, null, empty or without a word
    (``"-"``, spaces) in every record, would otherwise release the records (under ``'*'``
    the real text field copied raw) with nothing of it privatized and exit 0. Counted per
    input: one good file must not let another file's text column through.
    A field is tokenized only until it has held a word."""

    def __init__(self, fields: Sequence[str]) -> None:
        self.fields = list(fields)
        self.records = 0  # JSONL records read (blank lines and plain text are none)
        self.held = [False] * len(fields)  # per --field, whether some record held a word

    def see(self, context: Any, texts: Sequence[str]) -> None:
        if context[0] == "json":
            self.records += 1
            for index, text in enumerate(texts):
                if not self.held[index] and _has_word(text):
                    self.held[index] = True

    @property
    def every_field(self) -> bool:
        """Every --field held a word in some record."""
        return all(self.held)

    def lacking(self) -> str | None:
        """A --field in which no record held a word, when records were read."""
        if self.records == 0:
            return None
        return next((f for f, held in zip(self.fields, self.held, strict=True) if not held), None)


def _no_text(label: str, field: str) -> CLIError:
    """The refusal of an input in which no JSONL record held a word in ``field``."""
    return CLIError(
        f"{label}: no record held a word in field {field!r} (each one null, empty, or "
        "only spaces or punctuation): is --field right? With --null keep or --keep-fields "
        "such an input is refused, as it would release its records with nothing privatized"
    )


def _needs_text(args: argparse.Namespace, kept: Sequence[str]) -> bool:
    """Whether an input in which a ``--field`` held no word is refused: where it would
    release records with nothing of it privatized (``--null keep``, ``--keep-fields``)."""
    return args.null == "keep" or bool(kept)


def _census(
    args: argparse.Namespace,
    kept: Sequence[str],
    check: Callable[[str, list[tuple[int | None, Any, tuple[str, ...]]]], None] | None = None,
) -> tuple[int | None, _Copied]:
    """Read every regular input file through once, with the run's own reader, before any
    noise is drawn: a bad record anywhere fails in seconds, with its usual error, before
    anything is spent or written; ``check(label, batch)`` then looks at each batch of
    records as the run will privatize it, and a file in which a ``--field`` held no word
    is refused where that matters (:class:`_Texts`). Returns the number of documents (None
    when an input is stdin, a FIFO or a device, read only as the run goes) and the
    --keep-fields found."""
    regular = [name for name in args.files if _is_regular_file(name)]
    documents, seen = 0, _Copied(kept, args.fields)
    needs_text = _needs_text(args, kept)
    with closing(_open_inputs(regular)) as inputs:
        for name, stream in inputs:
            label, records = _label(name), _records(name, stream, args)
            texts = _Texts(args.fields)  # each file on its own
            while batch := next_batch(records, args.batch_size):
                documents += len(batch)
                for _, context, record_texts in batch if needs_text else ():
                    texts.see(context, record_texts)
                for number, context, _ in batch if kept else ():
                    # a kept value strict JSON cannot hold fails here too
                    empty = [""] * len(args.fields)
                    _render(context, empty, args.fields, kept, _place(label, number))
                    seen.see(context)
                if check is not None:
                    check(label, batch)
            lacking = texts.lacking() if needs_text else None
            if lacking is not None:
                raise _no_text(label, lacking)
    args.place = None
    return (documents if len(regular) == len(args.files) else None), seen


def _is_regular_file(name: str) -> bool:
    """A regular file read by name (stdin, /dev/fd/N and the like share their offset)."""
    if name == "-" or _descriptor(name) is not None:
        return False
    try:
        return stat.S_ISREG(os.stat(name).st_mode)
    except OSError:
        return False


class _Copied:
    """The fields ``--keep-fields`` copied unchanged: the names given that some record held
    or, under '*', every top-level key but the ``--field``s that some record held (its value is
    copied whole: a nested object's keys and all). Such keys are data and may be private:
    they go into the report, which describes what was released, never into a warning or an
    error. Memory stays bounded whatever the keys: the :data:`LISTED_FIELDS` first names in
    sorted order are kept, and distinct names are counted up to :data:`COUNTED_FIELDS`."""

    def __init__(self, kept: Sequence[str], fields: Sequence[str]) -> None:
        self.kept = list(kept)
        self.every = self.kept == [ALL_FIELDS]
        self.fields = set(fields)
        self.counted: set[str] = set()
        self.first: list[str] = []  # sorted, at most LISTED_FIELDS (under '*')

    def see(self, context: Any) -> None:
        """Note the copied fields of one document (a JSONL record's; text has none)."""
        if context[0] != "json":
            return
        record = context[1]
        if not self.every:
            self.counted.update(name for name in self.kept if name in record)
            return
        for key in record:
            if key not in self.fields and key not in self.counted:
                self._add(key)

    def _add(self, name: str) -> None:
        if len(self.counted) < COUNTED_FIELDS:
            self.counted.add(name)
        first = self.first
        if len(first) >= LISTED_FIELDS and name >= first[-1]:
            return
        at = bisect.bisect_left(first, name)
        if at < len(first) and first[at] == name:  # seen after counting stopped
            return
        first.insert(at, name)
        del first[LISTED_FIELDS:]

    def absent(self) -> list[str]:
        """The names given that no record held (typos: as typed, never a key read)."""
        return [name for name in self.kept if name != ALL_FIELDS and name not in self.counted]

    def listing(self) -> _Unprotected:
        """What the report lists: the names given that some record held, in the order
        typed, or under '*' the names held, sorted; at most :data:`LISTED_FIELDS`, and the
        count of the others (under '*', a floor once :data:`COUNTED_FIELDS` are counted)."""
        if self.every:
            names, total = list(self.first), len(self.counted)
        else:  # a name no record held wrote nothing
            held = [name for name in self.kept if name in self.counted]
            names, total = held[:LISTED_FIELDS], len(held)
        floor = self.every and len(self.counted) >= COUNTED_FIELDS
        return _Unprotected(names, total - len(names), every=self.every, floor=floor)


def _warn_absent(copied: _Copied) -> None:
    """Warn once of the --keep-fields names no record had (as typed: never a key read from
    the data, which may be private)."""
    absent = copied.absent()
    if absent:
        names = ", ".join(map(repr, absent))
        fields = f"field {names} was" if len(absent) == 1 else f"fields {names} were"
        warnings.warn(f"--keep-fields: {fields} in no record", DxpWarning, stacklevel=1)


#: How a JSON value that is not a string is named in an error (never its value).
_JSON_TYPES = {
    bool: "true or false",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
}


def _check_input(name: str) -> None:
    """Refuse an input ``name`` ('-': stdin) that cannot be read as one: a closed stdin, a
    directory, a socket, a missing file (``dxp privatize`` FILES, ``calibrate --words-file``)."""
    if name == "-":
        if sys.stdin is None:
            raise CLIError("stdin is closed")
        if is_terminal(sys.stdin):  # a run without FILES would otherwise wait in silence
            print(
                "dxp: reading from the terminal: type or paste the text, then "
                + ("Ctrl-Z and Enter" if os.name == "nt" else "Ctrl-D"),
                file=sys.stderr,
                flush=True,
            )
        return
    path = Path(name)
    if not _readable_input(path):
        reason = (
            "is a directory"
            if path.is_dir()
            else "not a file, FIFO or character device"
            if path.exists()
            else "no such file"
        )
        raise CLIError(f"cannot read {name}: {reason}")


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
            raise CLIError(f"cannot read {name}: {os_reason(error)}") from None
        with stream:
            yield name, stream
