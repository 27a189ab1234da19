"""Code run in a fresh interpreter: what a new process (a user's, a worker's) sees."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def run_python(code: str) -> str:
    """stdout of ``python -c code`` (dedented) in a new interpreter; fails on its stderr."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
