"""``--code FILE``: a Python file imported before a command runs, to register functions
without packaging them (as spaCy's ``--code``): a mask, a token filter, an embeddings
loader or a mechanism, each with ``dxp.registry.<group>.register(name, func=...)`` or its
decorator form. The file is your code and runs with your rights; import it only from a
source you trust."""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path

from .process import CLIError

#: The module name the file is imported as (``sys.modules``), so its functions pickle by
#: reference within the run and a traceback names it.
MODULE = "dxp_cli_code"


def import_code(path: str) -> None:
    """Import ``path`` as module :data:`MODULE`; a CLIError when it cannot be read or
    raises (its error type and message, and the line of ``path`` that raised: the file is
    code the user wrote, not input text)."""
    file = Path(path)
    if not file.is_file():
        why = "no such file" if not file.exists() else "not a file"
        raise CLIError(f"--code {path}: {why}")
    if file.suffix != ".py":
        raise CLIError(f"--code {path}: give a Python file (.py)")
    if not os.access(file, os.R_OK):
        raise CLIError(f"--code {path}: permission denied")
    spec = importlib.util.spec_from_file_location(MODULE, file)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise CLIError(f"--code {path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as error:  # sys.exit() in the file too: one line
        del sys.modules[MODULE]
        line = _line_in(error, file)
        at = f", line {line}" if line is not None else ""
        message = " ".join(str(error).split())  # one line
        detail = f"{type(error).__name__}: {message}" if message else type(error).__name__
        raise CLIError(f"--code {path}{at}: {detail}") from None


def _line_in(error: BaseException, file: Path) -> int | None:
    """The last line of ``file`` in ``error``'s traceback (a SyntaxError's own line)."""
    if isinstance(error, SyntaxError):
        return error.lineno
    target = str(file.resolve())
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename and str(Path(frame.filename).resolve()) == target
    ]
    return lines[-1] if lines else None
