"""Which code wrote a record: the version, and the commit when running from a git checkout.

An editable install (or ``PYTHONPATH`` pointing at a clone) reports the same ``__version__``
at every commit, so a record written there could not say which code produced it. When the
package's parent folder is this project's git checkout (its ``pyproject.toml`` names
``dxp-plugins``), :func:`library_version` appends the commit its ``HEAD`` names as a PEP 440
local label (``0.1.0+g1a2b3c4d5e6f``), read from ``.git`` without running git. Uncommitted
changes are not visible that way. An installed copy (``pip install .``) has no ``.git``
beside it, and a copy vendored into another project's repository has that project's
``pyproject.toml`` (or none): both report the plain version. Records of different labels
do not merge, as records of different versions do not.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

from . import __version__

_CHECKOUT = Path(__file__).resolve().parent.parent
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


@cache
def library_version() -> str:
    """``__version__``, with ``+g<commit>`` from a git checkout (``+checkout`` when its
    ``HEAD`` cannot be read)."""
    dot_git = _CHECKOUT / ".git"
    if not dot_git.exists() or not _is_this_project(_CHECKOUT / "pyproject.toml"):
        return __version__
    try:
        commit = _head_commit(dot_git)
    except (OSError, UnicodeDecodeError, ValueError):
        commit = None
    return f"{__version__}+g{commit[:12]}" if commit else f"{__version__}+checkout"


def _is_this_project(pyproject: Path) -> bool:
    """Whether ``pyproject`` declares this project (not another that vendors the package)."""
    try:
        with pyproject.open("rb") as file:
            return bool(tomllib.load(file).get("project", {}).get("name") == "dxp-plugins")
    except (OSError, ValueError, AttributeError):  # tomllib's TOMLDecodeError is a ValueError
        return False


def _head_commit(dot_git: Path) -> str | None:
    """The commit ``HEAD`` names: a detached hash, or its branch's loose or packed ref. A
    worktree's ``.git`` is a file naming its git folder, whose ``commondir`` holds refs."""
    git_dir = dot_git
    if dot_git.is_file():
        pointer = dot_git.read_text(encoding="utf-8").strip()
        if not pointer.startswith("gitdir:"):
            return None
        git_dir = (dot_git.parent / pointer.removeprefix("gitdir:").strip()).resolve()
    head = (git_dir / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head if _COMMIT.fullmatch(head) else None
    ref = head.removeprefix("ref:").strip()
    common = git_dir
    if (git_dir / "commondir").is_file():
        common = (git_dir / (git_dir / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for folder in dict.fromkeys((git_dir, common)):
        loose = folder / ref
        if loose.is_file():
            value = loose.read_text(encoding="utf-8").strip()
            return value if _COMMIT.fullmatch(value) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            value, _, name = line.partition(" ")
            if name == ref and _COMMIT.fullmatch(value):
                return value
    return None
