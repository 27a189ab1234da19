"""The ``dxp`` console script's entry point, kept apart from :mod:`dxp_plugins.cli`.

Loading the command line imports numpy and the parser (0.2-0.6 s on a loaded machine); a
Ctrl-C in that window raised KeyboardInterrupt inside an import, before :func:`cli.main`
could catch it, and printed a traceback. Importing here, where it can be caught, ends such
a run as Ctrl-C ends any other: ``dxp: interrupted``, then the process ends killed by
SIGINT, as Python ends on a Ctrl-C nothing caught. A shell reports that as 130 too, and a
shell script (``for f in *.txt; do dxp privatize "$f" ...; done``) stops there; after a
plain exit status 130 it went on with the next file (measured: bash ran the loop's other
iterations). The CPython detail that made this vary (a KeyboardInterrupt passing through
code run by ``exec``, e.g. a dataclass being built, ended the process by SIGINT although
``cli.main`` caught it: 2 runs in 40) now always ends the same way.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from contextlib import suppress

#: Exit status of a run ended by Ctrl-C (128 + SIGINT), as :func:`cli.main` returns it.
INTERRUPTED = 130


class _Ending:
    """Whether the command ended by Ctrl-C, read once everything else has run at exit."""

    interrupted = False


def main() -> int:
    """Run ``dxp`` with ``sys.argv``; a run ended by Ctrl-C ends the process by SIGINT."""
    atexit.unregister(_end_by_sigint)  # registered first: run after every later callback
    atexit.register(_end_by_sigint)
    try:
        from .cli import main as run

        code = run()
    except KeyboardInterrupt:  # only before cli.main's own handling (it returns 130 itself)
        if sys.stderr is not None:  # None when dxp started with stderr closed
            sys.stderr.write("dxp: interrupted\n")
        code = INTERRUPTED
    _Ending.interrupted = code == INTERRUPTED
    return code


def _end_by_sigint() -> None:
    """At exit, after the other exit callbacks: a run ended by Ctrl-C flushes its streams
    and ends killed by SIGINT (POSIX; elsewhere the exit status stays 130)."""
    if not (_Ending.interrupted and os.name == "posix"):
        return
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with suppress(OSError, ValueError):  # closed, or the reader left
                stream.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)
