"""The on-disk cache folder for downloaded corpora and derived public structures."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(*parts: str) -> Path:
    """``$DXP_CACHE``, else ``$XDG_CACHE_HOME/dxp_plugins``, else ``~/.cache/dxp_plugins``
    (joined with ``parts``; created on demand)."""
    root = os.environ.get("DXP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dxp_plugins"
    )
    path = Path(root, *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
