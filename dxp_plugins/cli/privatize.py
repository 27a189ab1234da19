"""``dxp privatize``: each input, one batch at a time, to the output, and the report."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import stat
import sys
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from typing import IO, Any

from .._optional import tagger_hint
from .._progress import bar_glyphs, is_terminal
from ..errors import DxpWarning, OOVError, TextTooLongError
from .process import CLIError, _hold_signals, _signals_held, _WarningPrinter
from .records import (
    _census,
    _check_input,
    _Copied,
    _is_jsonl,
    _is_null,
    _is_regular_file,
    _jsonl_options,
    _kept_fields,
    _label,
    _needs_text,
    _no_text,
    _open_inputs,
    _place,
    _records,
    _render,
    _Texts,
    _warn_absent,
    next_batch,
)
from .report import (
    _Released,
    _report_ahead,
    _report_partial,
    _withdraw_report,
    _write_report,
)
from .settings import _build_mechanism, _settings
from .targets import (
    _check_replaceable,
    _check_targets,
    _replacing,
    _write_error,
    _written_through,
)

#: A batch of documents as read: (line number, context, the document's texts).
Batch = list[tuple[int | None, Any, tuple[str, ...]]]

#: The most output a run writing through (stdout, a pipe) holds back, under ``--null keep``
#: or ``--keep-fields``, while the records of an input read as it goes (stdin, a FIFO) have
#: held no word in some ``--field``: an input in which none does is refused, with nothing
#: of it written (see records._Texts). Output bytes: the records held take several times
#: that in memory. An ``-o FILE``, replaced only when the run succeeds, holds nothing back.
HELD_BYTES = 64 * 2**20


def _privatize(args: argparse.Namespace) -> int:
    from ..doors import DEFAULT_BATCH_SIZE

    if args.batch_size is None:
        args.batch_size = DEFAULT_BATCH_SIZE
    if args.batch_size < 1:
        raise CLIError("--batch-size must be >= 1")
    if args.output == "-" and sys.stdout is None:
        raise CLIError("stdout is closed: give -o FILE")
    if args.report == "-" and sys.stderr is None:
        raise CLIError("stderr is closed: give --report FILE")
    for name in args.files:  # before any output: files, FIFOs and <(...) only
        _check_input(name)
    _check_targets(args)
    _jsonl_options(args)
    _warn_tables(args)
    settings = _settings(args)
    kept = _kept_fields(args)
    if settings.needs_tagger and args.spacy_model is None:
        raise CLIError(f"--pos/--entities need --spacy-model, a tagging pipeline: {tagger_hint()}")
    # Before any noise, the inputs are read through: a bad record fails in seconds. What
    # would refuse a text midway (a token out of vocabulary under --oov raise, a text too
    # long for --spacy-model) is looked for then too; that needs the mechanism and the
    # pipeline first (otherwise they are built after, so a bad record fails sooner; stdin,
    # FIFOs and devices are read only once, as the run goes).
    early = (args.oov == "raise" or args.spacy_model is not None) and any(
        map(_is_regular_file, args.files)
    )
    if early:
        mechanism, select, nlp = _machinery(args, settings)
        with _progress_bar(args, None, "checking") as checking:

            def check(label: str, batch: Batch) -> None:
                _check_batch(label, batch, args, mechanism, select, nlp)
                checking.update(len(batch))

            total, found = _census(args, kept, check)
    else:
        total, found = _census(args, kept)
        mechanism, select, nlp = _machinery(args, settings)
    # An input in which no record held a word in a --field (a wrong --field?) is refused
    # where it would release records with nothing of it privatized (--null keep,
    # --keep-fields): a regular file by the census above, before any noise; an input read
    # as it goes when it ends (its output held back till then when it streams).
    if total is not None:  # every input was read through: a kept field in none is named now
        _warn_absent(found)
    # The --keep-fields copied as the run goes: what a report lists (a failing run's only
    # those of the documents it wrote, not the census's, which read every record).
    seen = _Copied(kept, args.fields)
    run = args.released = _Released(
        "stdout" if args.output == "-" else args.output,
        # As given; the table's real size and fingerprint are in the guarantee.
        embeddings={"name": args.embeddings, "params": dict(args.embeddings_param)},
        # JSON-ready before anything is released (a plugin's setting may be any object).
        # The options as given (--param and the built-in flags), then what the mechanism
        # holds: a plugin that shows no options in its _settings still has them recorded.
        mechanism=json.loads(
            json.dumps(
                {
                    "name": args.mechanism,
                    "params": dict(settings.mechanism_params),
                    "settings": mechanism._settings(),
                },
                default=repr,
            )
        ),
        unit=args.unit,
    )
    # A run that streams (stdout, an -o written through) with a --report FILE keeps the
    # report ahead of what it writes: before each batch goes out, the report as it will
    # stand with it, marked incomplete, replaces what was there (a killed run would
    # otherwise leave an earlier run's report, and a 0-byte temporary file). Otherwise the report
    # is opened after the output, so it is replaced first when the run succeeds: a report
    # that fails then leaves the output unreplaced (none released without its record), and
    # an output that fails after it leaves a record overstating, never understating.
    streams = args.output == "-" or _written_through(args.output)
    ahead = streams and args.report not in (None, "-") and not _written_through(args.report)
    try:
        with ExitStack() as stack:
            out: IO[bytes]
            if args.output == "-":
                out, run.streamed = sys.stdout.buffer, True
            else:
                out, replaced = stack.enter_context(_replacing(args.output))
                run.streamed = not replaced
            report: IO[bytes] | None = None
            if ahead:  # refused now if it cannot be written, as it would be opened
                _check_replaceable(args.report)
            elif args.report and args.report != "-":  # replaced first: see above
                report, _ = stack.enter_context(_replacing(args.report))
            if ahead and run.streamed:
                run.ahead = functools.partial(_report_ahead, args.report, run, seen.listing)
            with _progress_bar(args, total) as progress:
                _privatize_inputs(args, out, run, progress, kept, seen, mechanism, select, nlp)
            run.finished = True
            if total is None:  # not read through: a kept field in none is named now
                _warn_absent(seen)
            if args.report:  # no document: nothing was released
                guarantee = run.total or settings.nothing_released(mechanism)
                try:
                    if ahead:
                        with _replacing(args.report) as (report, _):
                            _write_report(report, run, guarantee, seen.listing(), complete=True)
                    else:
                        _write_report(report, run, guarantee, seen.listing(), complete=True)
                except OSError as error:
                    raise _write_error(args.report, error) from None
    except BaseException:  # a reader that left (exit 141) too: the report lists what
        # reached the pipe, an upper bound of what it read (a stale report would otherwise stay)
        _hold_signals()  # first: till the last line is printed
        if run.streamed and args.report and (run.listed or run.report):
            if run.finished:  # every document went out, then the report failed
                run.report_failed = True
            elif run.listed:
                _report_partial(args.report, run, seen.listing())
            else:  # nothing went out: no report of this run, as when it fails earlier
                _withdraw_report(run)
        raise
    return 0


def _privatize_inputs(
    args: argparse.Namespace,
    out: IO[bytes],
    run: _Released,
    progress: Any,
    kept: list[str],
    seen: _Copied,
    mechanism: Any,
    select: Any,
    nlp: Any,
) -> None:
    """Privatize every input to ``out``, one batch at a time; ``run`` counts what is
    written, document by document (a failure midway has released exactly those), and
    ``seen`` the --keep-fields copied. Under ``--null keep`` or ``--keep-fields`` an input
    in which a --field held no word is refused when it ends (records._Texts); when the
    output streams, an input read as it goes (stdin, a FIFO: a regular file was checked by
    the census) is held back until every --field has held a word (at most
    :data:`HELD_BYTES`), so such an input writes nothing."""
    from ..text import privatize_texts

    # A document without a line ending (the last line of a file, a whole file) is
    # followed by one before the next document, so two never run together.
    separate = False
    needs_text = _needs_text(args, kept)
    held: tuple[list[bytes], list[Any], list[bool]] = ([], [], [])
    with closing(_open_inputs(args.files)) as inputs:
        for name, stream in inputs:
            label, records = _label(name), _records(name, stream, args)
            # Each input on its own; an -o FILE is replaced only when the run succeeds:
            # nothing need be held back for it.
            found, held_bytes = _Texts(args.fields), 0
            hold = needs_text and run.streamed and not _is_regular_file(name)
            # One batch in memory at a time: huge inputs stream (PRIVACY.md 24).
            while batch := next_batch(records, args.batch_size):
                args.place = _place(label, batch[0][0], batch[-1][0])
                texts, owners = _flattened(batch)
                with _located(label, batch, owners, args, select, nlp):
                    flat = list(
                        privatize_texts(
                            texts,
                            mechanism,
                            batch_size=args.batch_size,
                            select=select,
                            nlp=nlp,
                            mask=args.mask,
                        )
                    )
                lines, nulls = held[0], held[2]
                start = 0
                for number, context, record_texts in batch:
                    results = flat[start : start + len(record_texts)]
                    start += len(results)
                    args.place = _place(label, number)
                    privates = [result.text for result in results]
                    line = _render(context, privates, args.fields, kept, args.place)
                    lines.append(b"\n" + line if separate else line)
                    separate = not line.endswith(b"\n")  # a lone \r ends no line
                    seen.see(context)
                    nulls.append(_is_null(context, args.fields))
                    if needs_text:
                        found.see(context, record_texts)
                    held[1].append(_one_document([result.guarantee for result in results]))
                args.place = _place(label, batch[0][0], batch[-1][0])
                progress.update(len(batch))
                if hold and not found.every_field:
                    held_bytes += sum(map(len, lines[-len(batch) :]))
                    if held_bytes > HELD_BYTES:
                        lacking = found.lacking() or args.fields[0]
                        raise _held_too_long(label, found.records, lacking)
                    continue  # a --field with no word yet: nothing goes out
                run.write(out, lines, held[1], nulls)
                held = ([], [], [])
            lacking = found.lacking() if needs_text else None
            if lacking is not None:
                raise _no_text(label, lacking)
            if held[0]:  # held, and no JSONL record at all (blank lines, plain text)
                run.write(out, *held)
                held = ([], [], [])


def _flattened(batch: Batch) -> tuple[list[str], list[tuple[int, int]]]:
    """The texts of ``batch`` in order (a record's --fields one after the other), and for
    each, its document's index in the batch and its own among the document's texts."""
    texts, owners = [], []
    for index, (_, _, record_texts) in enumerate(batch):
        for position, text in enumerate(record_texts):
            texts.append(text)
            owners.append((index, position))
    return texts, owners


def _one_document(guarantees: list[Any]) -> Any:
    """The guarantee of one document from those of its texts: a JSONL record's --fields
    are one document (counted once in ``releases``) whose tokens, and so spend, add up: a
    record with two fields is counted once in ``releases``, and its spend is that of two
    releases: the sum bounds what it spent (the largest field alone would understate
    it). As a long text's pieces (text._release_long)."""
    if len(guarantees) == 1:
        return guarantees[0]
    total = guarantees[0]
    for guarantee in guarantees[1:]:
        total = total.merge(guarantee)
    releases = max(guarantee.releases for guarantee in guarantees)
    return dataclasses.replace(total, releases=releases, max_document_tokens=None)


def _held_too_long(label: str, records: int, field: str) -> CLIError:
    held = f"{HELD_BYTES // 2**20} MiB" if HELD_BYTES >= 2**20 else f"{HELD_BYTES:,} bytes"
    return CLIError(
        f"{label}: the first {records:,} records held no word in field {field!r} (each one "
        "null, empty, or only spaces or punctuation): is --field right? With --null keep or "
        "--keep-fields, records read as they come (stdin, a FIFO) are held back until every "
        f"--field has held a word, at most {held} of output; give a regular file to have it "
        "read through first, or -o FILE"
    )


def _warn_tables(args: argparse.Namespace) -> None:
    """A CSV or TSV input read as plain text privatizes its header and every column of
    each row as words, delimiters passed through: say so."""
    tables = (name for name in args.files if name.lower().endswith((".csv", ".tsv")))
    if any(not _is_jsonl(name, args) for name in tables):
        warnings.warn(
            "a .csv/.tsv input is read as plain text, one document per line: its header "
            "and every column are privatized as words. To privatize one column, convert the "
            "rows to JSON lines and give --field, or use TextPrivatizer on that column",
            DxpWarning,
            stacklevel=1,
        )


def _machinery(args: argparse.Namespace, settings: Any) -> tuple[Any, Any, Any]:
    """The mechanism, the selector and the tagging pipeline of a run."""
    mechanism = _build_mechanism(args, settings)
    select = settings.selector()
    try:
        nlp = settings.tagging_pipeline(args.spacy_model)
    except OSError:
        raise CLIError(
            f"cannot load the spaCy pipeline {args.spacy_model!r}: is it installed?"
        ) from None
    return mechanism, select, nlp


def _check_batch(
    label: str,
    batch: Batch,
    args: argparse.Namespace,
    mechanism: Any,
    select: Any,
    nlp: Any,
) -> None:
    """Refuse now, as the run would when it got there, a batch with a text that
    privatizing would refuse (text.check_texts: nothing is charged or drawn)."""
    from ..text import check_texts

    texts, owners = _flattened(batch)
    with _located(label, batch, owners, args, select, nlp):
        check_texts(
            texts, mechanism, batch_size=args.batch_size, select=select, nlp=nlp, mask=args.mask
        )


@contextmanager
def _located(
    label: str,
    batch: Batch,
    owners: list[tuple[int, int]],
    args: argparse.Namespace,
    select: Any,
    nlp: Any,
) -> Iterator[None]:
    """A refusal of one text of ``batch`` as a one-line error naming its input line (and
    its field); ``owners`` maps the texts given to the mechanism to their documents."""
    try:
        yield
    except TextTooLongError as error:  # its index is relative to this batch's texts
        where = _place(label, batch[owners[error.document][0]][0])
        raise CLIError(
            f"{where}: {error.length:,} characters, more than the max_length of "
            f"--spacy-model ({error.limit:,}) that --pos, --entities and "
            f"--token-filter need whole"
        ) from None
    except OOVError as error:  # its document index is relative to this batch
        if error.document is None:
            raise
        index, position = owners[error.document]
        number, context, texts = batch[index]
        field = args.fields[position] if context[0] == "json" else None
        text = texts[position]
        raise _oov_error(label, number, field, text, error.token, select, nlp, args.mask) from None


def _oov_error(
    label: str,
    number: int | None,
    field: str | None,
    text: str,
    token: int | None,
    select: Any,
    nlp: Any,
    mask: str | None,
) -> CLIError:
    """The OOV error located by line and character (counted from 1), never quoted."""
    from ..text import selected_token_offset

    offset = None if token is None else selected_token_offset(text, token, select, nlp, mask)
    if offset is None:
        return CLIError(f"{_place(label, number)}: out-of-vocabulary token under --oov raise")
    if number is None:  # --unit file: the line and character within the file
        number = text.count("\n", 0, offset) + 1
        offset -= text.rfind("\n", 0, offset) + 1
    within = "of the line" if field is None else f"of field {field!r}"
    return CLIError(
        f"{_place(label, number)}: out-of-vocabulary token at character {offset + 1} "
        f"{within} (counted from 1) under --oov raise"
    )


@contextmanager
def _progress_bar(
    args: argparse.Namespace, total: int | None, description: str = "privatizing"
) -> Iterator[Any]:
    """The progress bar on stderr (none when stderr is closed), out of ``total`` documents
    when known. While it is drawn, warnings are written through it, so a line never lands
    inside the bar's."""
    from tqdm.auto import tqdm

    disable = True if sys.stderr is None else _no_progress(args)
    with _signals_held():  # a Ctrl-C inside tqdm's __init__ left a half-built bar, whose
        # __del__ printed a traceback after "dxp: interrupted" (seen on tqdm 4.66)
        bar = tqdm(
            desc=description,
            unit="doc",
            total=total,
            file=sys.stderr,
            disable=disable,
            ascii=bar_glyphs(),
        )
    with bar:
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


def _no_progress(args: argparse.Namespace) -> bool:
    """Hidden unless asked for (``--progress``) or stderr is a terminal, and by default also
    when the private text is written to the terminal itself, where the bar would share its
    lines, or ``TQDM_DISABLE`` is set."""
    if args.progress is not None:
        return not args.progress
    disabled = os.environ.get("TQDM_DISABLE", "").strip().lower() not in ("", "0", "false")
    return not is_terminal(sys.stderr) or _text_on_terminal(args.output) or disabled


def _text_on_terminal(output: str) -> bool:
    """Whether the private text goes to a terminal: stdout, or an ``-o`` naming one
    (``/dev/stdout``, ``/dev/tty``, a pts device)."""
    if output == "-":
        return is_terminal(sys.stdout)
    try:
        if not stat.S_ISCHR(os.stat(output).st_mode):  # never opens a FIFO (it would wait)
            return False
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        descriptor = os.open(output, flags)
    except OSError:
        return False
    try:
        return os.isatty(descriptor)
    finally:
        os.close(descriptor)
