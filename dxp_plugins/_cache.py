"""The on-disk cache folder for downloaded corpora and derived public structures."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import time
from pathlib import Path

#: Age after which a ``.<name>.<pid>.<token>.tmp`` partial is taken as orphaned (its writer was
#: killed): every write of the cache takes seconds, not an hour.
STALE_PARTIAL_SECONDS = 3600.0


def cache_path(*parts: str) -> Path:
    """``$DXP_CACHE``, else ``$XDG_CACHE_HOME/dxp_plugins``, else ``~/.cache/dxp_plugins``
    (joined with ``parts``; not created)."""
    root = os.environ.get("DXP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dxp_plugins"
    )
    return Path(root, *parts)


def cache_dir(*parts: str) -> Path:
    """:func:`cache_path`, created on demand (OSError when it cannot be)."""
    path = cache_path(*parts)
    path.mkdir(mode=0o755, parents=True, exist_ok=True)
    return path


def owned(info: os.stat_result) -> bool:
    """Whether a file (as ``os.stat``/``os.lstat`` gave it) is this process's user's. Not
    POSIX (no ``geteuid``): True."""
    owner = getattr(os, "geteuid", None)
    return owner is None or info.st_uid == owner()


def trusted(path: Path) -> bool:
    """Whether a cache folder or file is this user's and no one else can write it. What the
    cache holds decides outputs (a GloVe table is the mechanism's metric; an index picks the
    nearest word), so one that another user wrote or could rewrite is not used (security
    review F1, F4). Group or other write permission on this user's own entry (a umask of
    002) is removed, not refused."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    if not owned(info):
        return False
    if info.st_mode & 0o022 and hasattr(os, "geteuid"):
        try:
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o022)
        except OSError:
            return False
    return True


def partial_path(path: Path) -> Path:
    """The temporary sibling an atomic write of ``path`` fills before renaming it onto
    ``path``: ``.<name>.<pid>.<random token>.tmp``, one per writer, so that threads of one
    process never share a partial (review 10, F4); :func:`remove_stale_partials` matches it."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")


def remove_stale_partials(folder: Path, max_age: float = STALE_PARTIAL_SECONDS) -> None:
    """Delete the ``.*.tmp`` partials in ``folder`` older than ``max_age`` seconds: what an
    atomic write leaves behind when its process is killed. Best effort (errors ignored)."""
    limit = time.time() - max_age
    with contextlib.suppress(OSError):
        for partial in folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                if partial.is_file() and partial.stat().st_mtime < limit:
                    partial.unlink()
