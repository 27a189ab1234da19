"""What a ``privatize`` run has released, and the JSON report of its guarantee."""

from __future__ import annotations

import datetime
import errno
import hashlib
import io
import json
import os
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import IO, Any, NamedTuple

from ..guarantee import Guarantee, _most_tokens
from .process import CLIError, _raise_if_stopped, _say, _signals_held
from .targets import _replacing, _write_error

#: The fields :meth:`_Released.write` counts a batch into.
_TALLY = ("documents", "cut", "uncertain", "total", "nulls")


@dataclass
class _Released:
    """What a run has written where a failure cannot take it back: stdout, or an ``-o``
    written through (a pipe, a descriptor). ``-o FILE`` is replaced only at the end."""

    target: str
    streamed: bool = False
    documents: int = 0  # documents whose bytes reached the output
    cut: bool = False  # the last of them only in part (a write failed within it)
    uncertain: int = 0  # documents a write interrupted by a signal may have written
    total: Any = None  # the merged Guarantee of the documents listed (with their largest)
    nulls: int = 0  # of the documents listed, JSONL records whose --field was null
    finished: bool = False  # every document was written
    report: str | None = None  # where a report of the documents listed stands, incomplete
    reported: int = 0  # the documents it lists (those of the batch being written too)
    report_failed: bool = False
    # Called with the documents, guarantee and null records the report will list once the
    # next batch is written, before it is (a streamed run with a --report FILE: a killed
    # run would otherwise leave an earlier run's report).
    ahead: Callable[[int, Any, int], None] | None = None
    # The embeddings as given (name, --embeddings-param): the guarantee names the table by
    # fingerprint and size; these say where it came from.
    embeddings: dict[str, Any] = field(default_factory=dict)
    # The mechanism's name, options as given and settings (a TEM's beta, a plugin's
    # options): the guarantee names only the mechanism and its epsilon.
    mechanism: dict[str, Any] = field(default_factory=dict)
    # For an audit trail: what one document was, and a hash of the
    # bytes that reached the output (the released text, never the input).
    unit: str | None = None
    digest: Any = field(default_factory=hashlib.sha256)

    @property
    def listed(self) -> int:
        """The documents the reader may have received (a partial report lists them)."""
        return self.documents + self.uncertain

    def write(
        self,
        out: IO[bytes],
        lines: list[bytes],
        guarantees: list[Any],
        nulls: list[bool] | None = None,
    ) -> None:
        """Write a batch's documents to ``out``, unbuffered, and count each whose bytes
        reached it: a write failing midway leaves exactly those counted. What a write
        interrupted by a signal took is unknown: the rest of the batch is listed as maybe
        written (so it is on an in-memory stream, which has no raw file to count on).
        ``nulls`` marks the documents whose --field was null (``--null keep``)."""
        _raise_if_stopped()  # a stop a signal raised where Python dropped it: no more out
        nulls = nulls or [False] * len(lines)
        if self.ahead is not None:  # the report as it stands once this batch is out, first
            so_far = [] if self.total is None else [self.total]
            upcoming = Guarantee.combine([*so_far, *guarantees])
            self.ahead(self.listed + len(lines), upcoming, self.nulls + sum(nulls))
        raw = out if isinstance(out, io.RawIOBase) else getattr(out, "raw", None)  # python -u
        view, done = memoryview(b"".join(lines)), 0
        before = {name: getattr(self, name) for name in _TALLY}
        try:
            if raw is None:
                out.write(view)
                out.flush()
                done = len(view)
            else:
                out.flush()  # nothing waits there: every batch is written straight through
                while done < len(view):
                    written = raw.write(view[done:])
                    if written is None:  # a non-blocking output that is full
                        raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
                    done += written
            self._count(lines, guarantees, nulls, done)
            self.digest.update(view)
        except BaseException as error:
            # Counted again from the tally before the batch: a signal that landed while
            # the written batch was being counted must not leave it counted in part.
            for name, value in before.items():
                setattr(self, name, value)
            exact = raw is not None and isinstance(error, OSError)
            self._count(lines, guarantees, nulls, done, maybe=not exact)
            if isinstance(error, OSError):
                raise _write_error(self.target, error) from None
            raise

    def _count(
        self,
        lines: list[bytes],
        guarantees: list[Any],
        nulls: list[bool],
        done: int,
        *,
        maybe: bool = False,
    ) -> None:
        """Count the documents within the first ``done`` bytes of ``lines`` (the rest as
        maybe written when ``maybe``)."""
        start = 0
        for line, guarantee, null in zip(lines, guarantees, nulls, strict=True):
            end = start + len(line)
            if start < done or end <= done:  # some of its bytes reached it (or it has none)
                self.documents += 1
                self.cut = end > done
            elif maybe:
                self.uncertain += 1
            else:
                break
            self.nulls += null
            start = end
            self.total = guarantee if self.total is None else self.total.merge(guarantee)

    def note(self) -> str:
        """The end of an error line: what was already released."""
        if not (self.streamed and self.listed):
            return ""
        if self.documents:
            verb = "was" if self.documents == 1 else "were"
            text = f"; {_documents(self.documents)} {verb} already written to {self.target}"
            text += " (the last one in part)" if self.cut else ""
            text += f" and {self.uncertain:,} more may have been" if self.uncertain else ""
        else:
            text = f"; {_documents(self.uncertain)} may have been written to {self.target}"
        if self.report is not None:
            where = "stderr" if self.report == "-" else self.report
            them = "them"
            if self.reported != self.listed:  # the exact one failed: the one written ahead
                them = f"{_documents(self.reported)} (the batch being written too)"
            text += f" (the report in {where} lists {them}, marked incomplete)"
        elif self.report_failed:
            text += " (the report of them could not be written)"
        return text


def _documents(count: int) -> str:
    return f"{count:,} document{'' if count == 1 else 's'}"


class _Unprotected(NamedTuple):
    """The fields ``--keep-fields`` copied unchanged, as the report lists them."""

    names: list[str]  # at most LISTED_FIELDS (records.py): as typed, or under '*' sorted
    unlisted: int  # the others
    every: bool = False  # --keep-fields '*'
    floor: bool = False  # counting stopped: at least ``unlisted`` others


def _report_partial(target: str, run: _Released, kept: _Unprotected) -> None:
    """The report of what a failing run has already released, marked incomplete (signals
    are held meanwhile: see process._hold_signals). When it cannot be written, the error
    line says so, or names the report that stands (written before the last batch)."""
    written = False
    try:
        if target == "-":
            _write_report(None, run, run.total, kept, complete=False)
        else:
            with _replacing(target) as (stream, _):
                _write_report(stream, run, run.total, kept, complete=False)
        written = True
    except (OSError, CLIError):
        pass
    finally:  # also when cut short by an exception no hold keeps out
        if written:
            run.report, run.reported = target, run.listed
        elif run.report is None:
            run.report_failed = True


def _withdraw_report(run: _Released) -> None:
    """Remove the report written ahead of a batch of which nothing went out: a run that
    released nothing leaves no report (the one it replaced is gone)."""
    if run.report is not None and run.report != "-":
        with suppress(OSError):
            os.unlink(run.report)
            run.report = None


def _report_ahead(
    target: str,
    run: _Released,
    kept: Callable[[], _Unprotected],
    documents: int,
    guarantee: Any,
    nulls: int,
) -> None:
    """Replace the report at ``target`` with the one the run will stand at once its next
    batch is written, marked incomplete: a run killed while (or after) the batch is written
    (SIGKILL; SIGQUIT, left to its default) leaves a report listing at least what went out.
    A failure stops the run before the batch: what stands lists all."""
    upcoming = replace(run, documents=documents, uncertain=0, nulls=nulls)
    # Held: a signal between the rename and the bookkeeping would leave a report that a run
    # stopping before its first batch went out did not withdraw, or a temporary file; one
    # that arrives meanwhile acts once the report stands, and counted.
    with _signals_held():
        try:
            with _replacing(target) as (stream, _):
                _write_report(stream, upcoming, guarantee, kept(), complete=False)
        except OSError as error:
            raise _write_error(target, error) from None
        run.report, run.reported = target, documents


def _kept_clause(kept: _Unprotected) -> str:
    """The report's statement names the fields ``--keep-fields`` wrote raw, so a reader of
    the sentence alone does not miss them; under '*' the names some record held, not
    "every field but the private one" alone."""
    if not (kept.names or kept.unlisted):
        return ""
    fields = ", ".join(kept.names)
    if kept.unlisted:
        more = f"at least {kept.unlisted:,}" if kept.floor else f"{kept.unlisted:,}"
        fields += f" and {more} more"
    option = (
        "--keep-fields '*': every field but those privatized" if kept.every else "--keep-fields"
    )
    return f" JSONL fields {fields} copied unchanged and unprotected ({option})."


#: The end of an incomplete report's statement (besides "complete": false, since a reader of
#: the sentence alone would take a stopped run's figures for a whole input's).
_INCOMPLETE = (
    " The run had not finished when this report was written (complete: false): it covers"
    " the documents the run may have released by then, and its output holds at most these."
)


#: The ``report_format`` of the reports this version writes.
REPORT_FORMAT = 1


def _write_report(
    stream: IO[bytes] | None,
    run: _Released,
    guarantee: Any,
    kept: _Unprotected,
    *,
    complete: bool,
) -> None:
    """The JSON report of ``run`` to ``stream`` (None: stderr, for ``--report -``);
    ``complete`` is False for the documents a failing run had already released."""
    report = {
        # The layout of this JSON: raised when a key changes meaning or goes (added keys
        # keep it), so a tool reading reports can refuse one it does not know.
        "report_format": REPORT_FORMAT,
        "documents": run.listed,
        "complete": complete,
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "unit": run.unit,  # a document: one line (or JSONL record), or one whole file
        # SHA-256 of the private output as written (complete runs): ties the record to the
        # file that was sent; the record is self-reported, keep it with that file's hash.
        "output_sha256": run.digest.hexdigest() if complete else None,
        # The largest document: the bound when one document is one person's.
        "max_tokens_per_document": _most_tokens(guarantee),
        "max_document_spend": guarantee.max_document_spend,
        "statement": guarantee.statement + _kept_clause(kept) + ("" if complete else _INCOMPLETE),
        "embeddings": run.embeddings,
        "mechanism": run.mechanism,
        "guarantee": guarantee.to_dict(),
        # JSONL fields written unchanged by --keep-fields: the names given that some record
        # held, or under '*' every top-level name but the --fields that some record held, sorted
        # (a value is copied whole, nested objects and all); at most 100 names
        # (records.LISTED_FIELDS), and "unprotected_fields_unlisted" counts the others
        # (under '*' counting stops at 100,000 distinct names, records.COUNTED_FIELDS: a
        # count of 99,900 is then a floor, and the statement says "at least").
        "unprotected_fields": kept.names,
        "unprotected_fields_unlisted": kept.unlisted,
        # JSONL records whose --field was null, written with the field null (--null keep):
        # nothing privatized or spent for them; counted among "documents".
        "records_with_null_field": run.nulls,
    }
    text = json.dumps(report, indent=2) + "\n"
    if stream is None:
        _say(text)
    else:
        _write_through(stream, text.encode("utf-8"))


def _write_through(stream: IO[bytes], data: bytes) -> None:
    """Write ``data`` past ``stream``'s buffer: a full disk fails here, where the caller
    names the target, and not again when the stream is closed."""
    raw = getattr(stream, "raw", None)
    if raw is None:
        stream.write(data)
        stream.flush()
        return
    stream.flush()
    view = memoryview(data)
    while view:
        written = raw.write(view)
        if written is None:  # a non-blocking output that is full
            raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
        view = view[written:]
