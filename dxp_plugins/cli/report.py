"""What a ``privatize`` run has released, and the JSON report of its guarantee."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import IO, Any

from .process import CLIError, _say
from .targets import _replacing


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
