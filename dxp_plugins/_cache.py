"""The on-disk cache folder for downloaded corpora and derived public structures."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import time
from pathlib import Path

#: Age after which a ``.<name>.<pid>.<token>.tmp`` partial is taken as orphaned (its writer was
#: killed): every write of the cache takes seconds, not an hour.
STALE_PARTIAL_SECONDS = 3600.0


def cache_path(*parts: str) -> Path:
    """``$DXP_CACHE``, else ``$XDG_CACHE_HOME/dxp_plugins`` (an absolute one: the XDG spec
    ignores a relative value), else ``~/.cache/dxp_plugins`` (joined with ``parts``; not
    created)."""
    return Path(_root(), *parts)


def _root() -> str:
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and not os.path.isabs(xdg):
        xdg = None
    return os.environ.get("DXP_CACHE") or os.path.join(
        xdg or os.path.expanduser("~/.cache"), "dxp_plugins"
    )


def cache_dir(*parts: str) -> Path:
    """:func:`cache_path`, created on demand, no new folder more open than 0755 (umask 000
    included; OSError when it cannot be).

    Without ``$DXP_CACHE``, a root that is not absolute (no home folder: ``HOME`` unset under a
    user id with no passwd entry left ``~`` unexpanded) is refused rather than created in
    the working directory."""
    path = cache_path(*parts)
    if not os.environ.get("DXP_CACHE") and not path.is_absolute():
        raise OSError(errno.ENOENT, "no home folder to hold it (HOME unset?): set DXP_CACHE")
    missing = [folder for folder in (path, *path.parents) if not folder.exists()]
    for folder in reversed(missing):  # mkdir's parents=True made the others 0777 under umask 000
        folder.mkdir(mode=0o755, exist_ok=True)
    return path


def owned(info: os.stat_result) -> bool:
    """Whether a file (as ``os.stat``/``os.lstat`` gave it) is this process's user's. Not
    POSIX (no ``geteuid``): True."""
    owner = getattr(os, "geteuid", None)
    return owner is None or info.st_uid == owner()


def trusted(path: Path) -> bool:
    """Whether a cache folder or file, and every folder between it and the cache root, is
    this user's (or root's) and no one else can write it. What the cache holds decides
    outputs (a GloVe table is the mechanism's metric; an index picks the nearest word), so
    one that another user wrote or could rewrite is not used.

    Below the root nothing may be a symbolic link (in a shared ``DXP_CACHE`` another user
    could link a cache folder to one of this user's own folders, which the cache would then
    write into); the root may be a link, and a world-writable root
    must be sticky (``/tmp``-like). A file others can write is refused, not narrowed: its
    content may have been rewritten (the cache writes its files 0644 whatever the
    umask). This user's own folder that others can write (a umask of 002) is narrowed."""
    root = cache_path()
    try:
        below = path.relative_to(root).parts
    except ValueError:
        return _trusted_entry(path, follow=True)
    if not _trusted_entry(root, follow=True, sticky_ok=True):
        return False
    return all(
        _trusted_entry(root.joinpath(*below[: depth + 1]), follow=False)
        for depth in range(len(below))
    )


def _trusted_entry(path: Path, *, follow: bool, sticky_ok: bool = False) -> bool:
    """One entry of :func:`trusted`."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        return False
    if not (owned(info) or (hasattr(os, "geteuid") and info.st_uid == 0)):
        return False  # root's entries are trusted (a cache built into an image)
    if not info.st_mode & 0o022 or not hasattr(os, "geteuid"):
        return True
    if not stat.S_ISDIR(info.st_mode):
        return False  # a file others could rewrite: not used, rewritten by the caller
    if sticky_ok and info.st_mode & stat.S_ISVTX:
        return True  # a shared root like /tmp: what is below is checked one by one
    if not owned(info):
        return False  # root's folder that others can write: not narrowed for it
    try:
        os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o022)
    except OSError:
        return False
    return True


def write_private(path: Path) -> int:
    """A new file ``path`` opened for writing with mode 0644 whatever the umask (0666 under
    umask 000 would let any user rewrite the cache); the caller closes
    the descriptor it returns. It fails if ``path`` exists."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(descriptor, 0o644)
    except OSError:
        os.close(descriptor)
        raise
    return descriptor


def partial_path(path: Path) -> Path:
    """The temporary sibling an atomic write of ``path`` fills before renaming it onto
    ``path``: ``.<name>.<pid>.<random token>.tmp``, one per writer, so that threads of one
    process never share a partial; :func:`remove_stale_partials` matches it."""
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
