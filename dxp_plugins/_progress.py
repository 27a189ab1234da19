"""Progress bars on stderr, one rule for every long library call.

``progress=True`` shows a bar, ``False`` hides it, ``None`` shows it only when stderr is a
terminal. tqdm's own ``disable=None`` means the same in a terminal, but ``tqdm.notebook``
turns it into "show" in every Jupyter kernel (a widget, frozen at 0% in the saved
notebook), and importing ``tqdm.auto`` warns "IProgress not found" in kernels without
ipywidgets even when no bar is shown. So the
choice is made here, and ``tqdm.auto`` is imported only for a bar that is shown.
"""

from __future__ import annotations

import os
import sys
from typing import Any


def progress_bar(progress: bool | None, **options: Any) -> Any:
    """A tqdm bar writing to stderr (``options``: tqdm's), or a disabled one."""
    stream = sys.stderr
    show = progress if progress is not None else is_terminal(stream)
    if not show or stream is None:
        from tqdm.std import tqdm as hidden

        return hidden(disable=True, **options)
    from tqdm.auto import tqdm

    options.setdefault("ascii", bar_glyphs())
    return tqdm(file=stream, **options)


def bar_glyphs() -> bool | None:
    """tqdm's ``ascii``, always given: left to the environment, ``TQDM_ASCII=1`` becomes a
    one-glyph string that tqdm divides by zero on, failing the call;
    ``TERM=dumb`` gets plain ASCII, anything else tqdm's own choice."""
    return True if os.environ.get("TERM") == "dumb" else None


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an open terminal."""
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False
