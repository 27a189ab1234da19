"""The ``dxp`` process and its surroundings: one-line errors and warnings on stderr,
SIGTERM and SIGHUP, and standard descriptors closed when it started."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from ..errors import DxpError

PROG = "dxp"


class CLIError(DxpError):
    """A user error reported as one line."""


def _say(text: str) -> None:
    """Write to stderr, unless it was closed when dxp started (then say nothing)."""
    if sys.stderr is not None:
        sys.stderr.write(text)


#: The dxp_plugins package: errors raised in its code never quote input.
_PACKAGE_DIR = Path(__file__).resolve().parent.parent

#: The package files that call ``warnings.warn``: the library's helper (``errors.warn``)
#: and the command line's own modules. Their messages never quote input. A warning from any
#: other code is printed without its message; so is one from C or Cython code (spaCy), which
#: has no frame of its own and so seems to come from the Python file that called it.
_WARNING_SOURCES = frozenset(
    {*Path(__file__).resolve().parent.glob("*.py"), _PACKAGE_DIR / "errors.py"}
)
#: The modules whose frames stand between ``warnings.warn`` and ``showwarning``: Python 3.14
#: moved the pure-Python implementation to ``_py_warnings`` (``warnings.warn`` is C there).
_WARNINGS_MODULES = frozenset({"warnings", "_py_warnings"})


class _WarningPrinter:
    """``warnings.showwarning`` for the CLI: one line per warning. The library's own
    warnings are printed as they are; any other code's (a token filter, an embeddings
    loader, spaCy) only as its category and module, since its message may quote the input,
    and once per category and module. A library warning whose text was printed already is
    not printed again (Python's filter repeats it for each line that triggers it, e.g. for
    each mechanism ``dxp calibrate`` builds). ``write`` is replaced while a progress bar is
    drawn."""

    def __init__(self) -> None:
        self.write: Callable[[str], None] = _say
        self.withheld: set[tuple[str, str]] = set()
        self.printed: set[tuple[str, str]] = set()

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
            text = (category.__name__, str(message))
            if text not in self.printed:
                self.printed.add(text)
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
        while frame is not None and frame.f_globals.get("__name__") in _WARNINGS_MODULES:
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
    """Any other error: its type and the input place only (its message may quote input).
    One raised while Python read the installed distributions' metadata is named as such:
    the environment is broken, not the input."""
    if _in_package_metadata(error):
        _say(
            f"{PROG}: error: unexpected {type(error).__name__} while reading the installed "
            "packages' metadata (is an entry_points.txt or METADATA file of an installed "
            "distribution malformed? `python -m pip check` and reinstalling it may help)\n"
        )
        return 1
    if _while_importing_a_dependency(error):
        _say(
            f"{PROG}: error: unexpected {type(error).__name__} while importing a dependency "
            "(a broken or mismatched installation? `python -m pip check` names conflicts; "
            "details withheld)\n"
        )
        return 1
    where = f"{place}: " if place else ""
    _say(
        f"{PROG}: error: {where}unexpected {type(error).__name__} "
        f"(details withheld: they may quote the input){note}\n"
    )
    return 1


def _in_package_metadata(error: BaseException) -> bool:
    """Whether ``error`` was raised while ``importlib.metadata`` (or its backport) read the
    installed distributions: not when it came from a module an entry point imported
    (``EntryPoint.load`` calls ``importlib.import_module``, whose frame follows the
    metadata's; the import machinery's own frames are trimmed from such tracebacks)."""
    reading = False
    frame = error.__traceback__
    while frame is not None:
        path = frame.tb_frame.f_code.co_filename.replace("\\", "/")
        if "/importlib/metadata/" in path or "/importlib_metadata/" in path:
            reading = True
        elif path.endswith("/importlib/__init__.py") or path.startswith("<frozen importlib"):
            reading = False  # importing a plugin's module: its own error
        frame = frame.tb_next
    return reading


def _while_importing_a_dependency(error: BaseException) -> bool:
    """Whether ``error`` passed through the top-level code of a module outside
    dxp_plugins: it was raised while that module was imported (spaCy 4.0.dev beside numpy
    2 raises ValueError there, which would otherwise be reported at the input lines)."""
    frame = error.__traceback__
    while frame is not None:
        code = frame.tb_frame.f_code
        if code.co_name == "<module>" and not _in_package(code.co_filename):
            return True
        frame = frame.tb_next
    return False


def _in_package(filename: str) -> bool:
    return Path(filename).resolve().is_relative_to(_PACKAGE_DIR)


def _raised_by_this_library(error: BaseException) -> bool:
    """Whether ``error`` was raised in dxp_plugins' own code, whose messages never quote
    input; a token filter, loader or third-party library may put input in its message."""
    frame = error.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    if frame is None:
        return False
    return _in_package(frame.tb_frame.f_code.co_filename)


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


class _Stopped(SystemExit):
    """SIGTERM or SIGHUP: the run ends with exit code 128 + the signal (143, 129), saying
    so, also when nothing has been written yet."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.name = signal.Signals(signum).name


def _exit_on_signals() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into SystemExit (exit code 128 + the signal: 143, 129), so
    clean-up runs (the temporary output file is removed) as it does on errors, and SIGINT
    into KeyboardInterrupt as Python's own handler does; each records the stop it raises
    (:meth:`_SignalHold.stop`). Returns the previous handlers to restore. A signal ignored
    on purpose (``nohup``), or handled by other code, is left alone."""
    if threading.current_thread() is not threading.main_thread():
        return {}  # signal handlers can only be installed from the main thread
    _HOLD.armed = True  # a stopping run holds signals until main() ends (_hold_signals)
    _HOLD.unraisablehook = sys.unraisablehook
    sys.unraisablehook = _QuietDroppedStops(sys.unraisablehook)

    def stop(signum: int, frame: Any) -> None:
        error = KeyboardInterrupt() if signum == signal.SIGINT else _Stopped(signum)
        _HOLD.stop(error)
        raise error

    previous = {}
    for signum in (signal.SIGINT, *_STOP_SIGNALS):
        handler = signal.getsignal(signum)
        if handler in (signal.SIG_IGN, None):
            continue  # ignored on purpose, or a handler set outside Python: leave it
        if signum == signal.SIGINT and handler is not signal.default_int_handler:
            continue  # a caller's own Ctrl-C handler (main() called from Python)
        previous[signum] = signal.signal(signum, stop)
    return previous


#: Signals held while a stopping run writes its partial report and its last line (a second
#: Ctrl-C there would delete the new report and leave an earlier run's), and
#: while ``calibrate`` moves its files into place.
_HELD_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _SignalHold:
    """SIGINT, SIGTERM and SIGHUP held: each that arrives is noted, not acted on, until the
    hold is released. A Python handler that notes them, not ``signal.pthread_sigmask``: a
    mask is per thread, and with other threads running (tqdm's monitor, BLAS pools) the
    kernel hands a process's signal to one of them, whose handler still raised
    KeyboardInterrupt in the main thread. ``armed`` while :func:`main` runs: a hold taken
    without a scope (:func:`_hold_signals`) is released by it (see
    :func:`_restore_signals`), never left behind by code called outside it."""

    def __init__(self) -> None:
        self.armed = False
        self.previous: dict[int, Any] = {}  # while held: the handlers replaced
        self.arrived: list[int | BaseException] = []
        self.stopping: BaseException | None = None  # the first stop a signal raised
        self.unraisablehook: Callable[[Any], Any] = sys.unraisablehook  # while main() runs

    def stop(self, error: BaseException) -> None:
        """Called by the stop signals' handlers as they raise ``error``, while :func:`main`
        runs: the first stop is kept, since raised in a ``__del__`` or a weakref callback
        Python prints and drops it, so :func:`_raise_if_stopped` raises it
        again where the run can stop. No hold is taken here: a stop dropped, or caught by
        library code, would then leave every later signal noted and ignored until the next
        such point (minutes in calibrate); the stopping paths hold the
        signals first thing instead (:func:`_hold_signals`)."""
        if self.armed and self.stopping is None:
            self.stopping = error

    def take(self) -> bool:
        """Hold the signals (from the main thread only); False when they were held
        already (or cannot be). A signal whose handler ran as the hold was being taken is
        noted as one that arrived during it (the handler it replaces is recorded first)."""
        if self.previous or threading.current_thread() is not threading.main_thread():
            return False
        self.arrived = []
        for signum in _HELD_SIGNALS:
            while True:
                try:
                    handler = signal.getsignal(signum)
                    if handler in (signal.SIG_IGN, None) or handler == self._note:
                        break  # ignored on purpose, or held already (a retry, below)
                    # Recorded first: signal.signal runs the handler of one pending
                    # before it replaces it, and that may raise.
                    self.previous[signum] = handler
                    signal.signal(signum, self._note)
                    break
                except (KeyboardInterrupt, SystemExit) as error:  # it had just arrived
                    # (another signal's handler may also raise just after the install:
                    # the retry then finds _note and keeps the handler recorded first)
                    self.arrived.append(error)
        return bool(self.previous)

    def _note(self, signum: int, frame: Any) -> None:
        """The handler while held: the signal is noted, not acted on."""
        self.arrived.append(signum)

    def release(self, *, deliver: bool) -> None:
        """Restore the handlers; when ``deliver``, act on the first signal that arrived
        meanwhile (its handler raises KeyboardInterrupt or SystemExit), else drop it."""
        previous, arrived = self.previous, self.arrived
        self.previous, self.arrived = {}, []
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if deliver and arrived:
            first = arrived[0]
            if isinstance(first, BaseException):
                raise first
            signal.raise_signal(first)

    def ignore(self) -> None:
        """Keep the held signals ignored from now on: the process is ending. Unlike a
        Python handler, ``SIG_IGN`` outlives the interpreter's shutdown, where a signal
        raised KeyboardInterrupt in an atexit callback or, later, killed the process."""
        for signum in self.previous:
            signal.signal(signum, signal.SIG_IGN)
        self.previous, self.arrived = {}, []


_HOLD = _SignalHold()


class _QuietDroppedStops:
    """``sys.unraisablehook`` while :func:`main` runs: the stop a signal raised where
    Python drops it (a ``__del__``) is not printed as "Exception ignored" and a traceback;
    :func:`_raise_if_stopped` raises it again. Anything else goes to ``hook``."""

    def __init__(self, hook: Callable[[Any], Any]) -> None:
        self.hook = hook

    def __call__(self, unraisable: Any) -> None:
        if unraisable.exc_value is None or unraisable.exc_value is not _HOLD.stopping:
            self.hook(unraisable)


def _raise_if_stopped() -> None:
    """Raise again the stop a signal raised where Python dropped it (a ``__del__``, a
    weakref callback: see :meth:`_SignalHold.stop`); called between a run's steps."""
    if _HOLD.stopping is not None:
        raise _HOLD.stopping


def _hold_signals() -> None:
    """Hold SIGINT, SIGTERM and SIGHUP until :func:`main` ends: a run that is stopping
    (interrupted, or failing after it released documents) writes its partial report and
    its last line whole; a signal that arrives meanwhile changes nothing. Nothing while
    :func:`main` is not running."""
    if _HOLD.armed:
        _HOLD.take()


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP over the block (steps that must not be split), then
    act on the first that arrived meanwhile."""
    took = _HOLD.take()
    try:
        yield
    finally:
        if took:
            _HOLD.release(deliver=True)


def _restore_signals(previous: dict[int, Any], *, ending: bool) -> None:
    """At the end of :func:`main`: the handlers :func:`_exit_on_signals` replaced are
    restored, and a hold taken while stopping is released, what arrived during it dropped
    (the run has stopped already). When ``ending`` (``main`` is the command: the console
    script, ``python -m``), held signals stay ignored until the process exits, so a second
    or third Ctrl-C cannot turn exit code 130 into a traceback or a death by signal."""
    if threading.current_thread() is not threading.main_thread():
        return  # main() run by another thread (a server) touched no handler
    if isinstance(sys.unraisablehook, _QuietDroppedStops):  # ours, not one set since
        sys.unraisablehook = _HOLD.unraisablehook
    held = set(_HOLD.previous) if ending else set()
    if held:
        _HOLD.ignore()
    else:
        _HOLD.release(deliver=False)
    _HOLD.armed, _HOLD.stopping = False, None
    for signum, handler in previous.items():
        if signum not in held:
            signal.signal(signum, handler)
