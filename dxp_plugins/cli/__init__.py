"""The ``dxp`` command line: privatize text files, calibrate epsilon, list embeddings and
mechanisms.

    dxp privatize notes.txt --epsilon 10                 # one document per line
    dxp privatize data.jsonl --field text --epsilon 10   # JSON lines: writes the private field only
    dxp calibrate --mechanism madlib --epsilons 5,10,20,40 --words 100 --out DIR
    dxp privatize tickets.txt --epsilon 3 --code my_masks.py --mask order-ids
    dxp embeddings list

Errors are one line on stderr, without a traceback and without any input text: unexpected
ones give only their type and the input line where known. Warnings from code outside the
library (a token filter, a loader, spaCy) give only their category and module.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from ..errors import DxpError, os_reason
from .code import import_code
from .parser import build_parser
from .process import (
    PROG,
    CLIError,
    _exit_on_signals,
    _hold_closed_descriptors,
    _hold_signals,
    _raise_if_stopped,
    _raised_by_this_library,
    _restore_signals,
    _say,
    _Stopped,
    _unexpected,
    _WarningPrinter,
)

__all__ = ["CLIError", "build_parser", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dxp`` console script."""
    _hold_closed_descriptors()
    parser = build_parser()
    args = parser.parse_args(argv)
    args.place = None  # the input line being handled, when known (see _records)

    def note() -> str:  # what a failing privatize run had already written to stdout
        released = getattr(args, "released", None)
        return "" if released is None else released.note()

    previous: dict[int, Any] = {}
    try:  # from here: a signal as the handlers go in is handled as any
        previous = _exit_on_signals()  # also arms the hold a stopping run takes
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            # A signal that lands while Python writes a module's bytecode cache leaves
            # that file unclosed: a ResourceWarning from the import system, not the run
            # (seen once after source files changed).
            warnings.filterwarnings(
                "ignore", category=ResourceWarning, module=r"importlib\._bootstrap"
            )
            warnings.showwarning = _WarningPrinter()
            if getattr(args, "code", None) is not None:  # before any registry is read
                import_code(args.code)
            code: int = args.handler(args)
            _raise_if_stopped()  # a stop a signal raised where Python dropped it
        return code
    except KeyboardInterrupt:
        _hold_signals()  # a second Ctrl-C cannot cut this line short
        _say(f"{PROG}: interrupted{note()}\n")
        return 130
    except BrokenPipeError:  # the reader left: the run did not finish (a partial --report)
        return 141  # as a shell reports a process killed by SIGPIPE
    except SystemExit as stop:  # SIGTERM or SIGHUP (see _exit_on_signals)
        _hold_signals()  # held already when a signal stopped the run: this line is whole
        if isinstance(stop, _Stopped):  # said even when nothing was released
            _say(f"{PROG}: stopped ({stop.name}){note()}\n")
        elif note():
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
        _say(f"{PROG}: error: {os_reason(error)}{note()}\n")
        return 1
    except Exception as error:  # e.g. RecursionError on deeply nested JSON: no traceback
        return _unexpected(error, args.place, note())
    finally:
        _restore_signals(previous, ending=argv is None)
