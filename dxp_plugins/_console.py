"""The ``dxp`` console script's entry point, kept apart from :mod:`dxp_plugins.cli`.

Loading the command line imports numpy and the parser (0.2-0.6 s on a loaded machine); a
Ctrl-C in that window raised KeyboardInterrupt inside an import, before :func:`cli.main`
could catch it, and printed a traceback. Importing here, where it can be caught, ends such
a run as Ctrl-C ends any other: ``dxp: interrupted`` and exit status 130.
"""

from __future__ import annotations

import sys


def main() -> int:
    """Run ``dxp`` with ``sys.argv``; Ctrl-C before it has started is exit status 130."""
    try:
        from .cli import main as run

        return run()
    except KeyboardInterrupt:  # only before cli.main's own handling (it returns 130 itself)
        if sys.stderr is not None:  # None when dxp started with stderr closed
            sys.stderr.write("dxp: interrupted\n")
        return 130
