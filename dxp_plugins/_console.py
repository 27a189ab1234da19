"""The ``dxp`` console script's entry point, kept apart from :mod:`dxp_plugins.cli`.

Loading the command line imports numpy and the parser (0.2-0.6 s on a loaded machine); a
Ctrl-C in that window would raise KeyboardInterrupt inside an import, before
:func:`cli.main` could catch it, and print a traceback. Importing here, where it can be
caught, ends such a run as Ctrl-C ends any other: ``dxp: interrupted``, then the process
ends killed by SIGINT, as Python ends on a Ctrl-C nothing caught. A shell reports that as
130 too, and a shell script (``for f in *.txt; do dxp privatize "$f" ...; done``) stops
there; after a plain exit status 130 it would go on with the next file (measured: bash ran
the loop's other iterations).

The way out is Python's own: the KeyboardInterrupt is raised out of the script, with
``sys.excepthook`` printing nothing for it (the line is said already), so the interpreter
shuts down whole (exit callbacks, buffered files of ``--code`` modules, finalizers) and
then kills itself by SIGINT. Killing the process from an exit callback instead would skip
that shutdown (a ``--code`` module's buffered log would come out empty) and, called
in-process (runpy, a test harness), kill the host at its own exit. A CPython detail (a
KeyboardInterrupt passing through ``exec``'d code, e.g. a dataclass being built, ended the
process by SIGINT although ``cli.main`` caught it: 2 runs in 40) does not make the ending
vary.
"""

from __future__ import annotations

import sys
from typing import Any

#: Exit status of a run ended by Ctrl-C (128 + SIGINT), as :func:`cli.main` returns it.
INTERRUPTED = 130


def main() -> int:
    """Run ``dxp`` with ``sys.argv``; a run ended by Ctrl-C ends as Python's uncaught
    Ctrl-C does (killed by SIGINT, on POSIX), having said so."""
    try:
        from .cli import main as run

        code = run()
    except KeyboardInterrupt:  # only before cli.main's own handling (it returns 130 itself)
        if sys.stderr is not None:  # None when dxp started with stderr closed
            sys.stderr.write("dxp: interrupted\n")
        code = INTERRUPTED
    if code != INTERRUPTED:
        return code
    interrupt = KeyboardInterrupt()
    sys.excepthook = _Quiet(interrupt, sys.excepthook)
    raise interrupt


class _Quiet:
    """``sys.excepthook`` that prints nothing for ``interrupt`` (``dxp: interrupted`` was
    said); anything else goes to ``hook``."""

    def __init__(self, interrupt: BaseException, hook: Any) -> None:
        self.interrupt, self.hook = interrupt, hook

    def __call__(self, kind: type[BaseException], value: BaseException, trace: Any) -> None:
        if value is not self.interrupt:
            self.hook(kind, value, trace)
