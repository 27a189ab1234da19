"""Records name the commit of a git checkout they were written from (compliance review)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dxp_plugins as dxp
from dxp_plugins import _revision
from dxp_plugins._revision import _head_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

_GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=folder, env=_GIT_ENV, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path):
    folder = tmp_path / "clone"
    folder.mkdir()
    _git(folder, "init", "-q", "-b", "main")
    (folder / "file.txt").write_text("one\n")
    _git(folder, "add", "file.txt")
    _git(folder, "commit", "-q", "-m", "one")
    return folder


def test_head_commit_reads_loose_packed_detached_and_worktree_heads(checkout, tmp_path):
    first = _git(checkout, "rev-parse", "HEAD")
    assert _head_commit(checkout / ".git") == first  # a loose branch ref
    (checkout / "file.txt").write_text("two\n")
    _git(checkout, "commit", "-q", "-am", "two")
    second = _git(checkout, "rev-parse", "HEAD")
    assert _head_commit(checkout / ".git") == second != first
    _git(checkout, "pack-refs", "--all")
    assert not (checkout / ".git/refs/heads/main").exists()
    assert _head_commit(checkout / ".git") == second  # a packed ref
    _git(checkout, "checkout", "-q", "--detach", first)
    assert _head_commit(checkout / ".git") == first  # a detached HEAD
    _git(checkout, "checkout", "-q", "main")
    tree = tmp_path / "tree"
    _git(checkout, "worktree", "add", "-q", "-b", "side", str(tree), first)
    assert (tree / ".git").is_file()
    assert _head_commit(tree / ".git") == first  # a worktree's own HEAD and ref
    assert _head_commit(checkout / ".git") == second


def test_library_version_carries_the_commit_of_the_checkout(checkout, monkeypatch):
    commit = _git(checkout, "rev-parse", "HEAD")
    monkeypatch.setattr(_revision, "_CHECKOUT", checkout)
    _revision.library_version.cache_clear()
    try:
        # A copy vendored into another project's repository: not this project's commit.
        assert _revision.library_version() == dxp.__version__  # no pyproject.toml
        (checkout / "pyproject.toml").write_text('[project]\nname = "some-app"\n')
        _revision.library_version.cache_clear()
        assert _revision.library_version() == dxp.__version__
        (checkout / "pyproject.toml").write_text('[project]\nname = "dxp-plugins"\n')
        _revision.library_version.cache_clear()
        assert _revision.library_version() == f"{dxp.__version__}+g{commit[:12]}"
        (checkout / ".git/HEAD").write_text("ref: refs/heads/unborn\n")
        _revision.library_version.cache_clear()
        assert _revision.library_version() == f"{dxp.__version__}+checkout"
        monkeypatch.setattr(_revision, "_CHECKOUT", checkout / "file.txt")  # no .git beside it
        _revision.library_version.cache_clear()
        assert _revision.library_version() == dxp.__version__  # an installed copy
    finally:
        monkeypatch.undo()
        _revision.library_version.cache_clear()


def test_records_and_the_cli_report_the_same_library_version():
    from dxp_plugins.guarantee import _library_version

    assert _library_version() == _revision.library_version()
    assert _library_version().startswith(dxp.__version__)
    done = subprocess.run(
        [sys.executable, "-m", "dxp_plugins", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == f"dxp_plugins {_library_version()}"
