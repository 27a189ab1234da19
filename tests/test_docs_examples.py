"""The Python examples of docs/*.md run as written, each file's blocks in order as a reader
runs them (later blocks use earlier blocks' names), with smaller sizes for speed and the
texts the prose assumes taken from the real Pang & Lee reviews. test_readme.py does the
same for the README."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

#: Faster stand-ins, per file; everything else runs verbatim. Each must occur in its file.
SMALLER: dict[str, dict[str, str]] = {
    "concepts.md": {},  # runs as written: the page's numbers come from this block
    "choosing-epsilon.md": {
        'load_embeddings("glove-6b-50d")': 'load_embeddings("glove-6b-50d", vocab_size=3_000)',
        "sample_words(glove, 200, pool=10_000,": "sample_words(glove, 10, pool=2_000,",
        "n_samples=500)\nprint(stats": "n_samples=100)\nprint(stats",
        "epsilons=[2, 3, 5, 7, 10], refine=3, n_samples=500)": "epsilons=[5, 10], n_samples=100)",
    },
    "front-doors.md": {
        '"vocab_size": 100_000': '"vocab_size": 20_000',
        "n_process=2": "n_process=1",
        "vocab_size=20_000": "vocab_size=3_000",
    },
    "lplp.md": {
        "vocab_size=50_000": "vocab_size=5_000",
        "[:10_000]": "[:400]",
        "n_components=20": "n_components=2",
    },
    "migrating.md": {
        "vocab_size=100_000": "vocab_size=3_000",
        "vocab_size=20_000": "vocab_size=3_000",
    },
    "plugins.md": {
        "vocab_size=20_000": "vocab_size=3_000",
    },
    "tem-brr.md": {
        "vocab_size=100_000": "vocab_size=2_000",
    },
}

#: Names the prose around the blocks assumes (a reader's own data).
ASSUMED = {
    "front-doors.md": ("texts", "train_texts", "train_labels", "test_texts", "test_labels"),
    "lplp.md": ("texts",),
}


def python_blocks(name: str) -> list[str]:
    text = (DOCS / name).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def reader_data() -> dict[str, Any]:
    from dxp_plugins.datasets import load_pang_lee

    texts, labels = load_pang_lee("sentences")
    sample = list(range(0, 4000, 100))  # both classes (the file is sorted by label)
    chosen = [texts[i] for i in sample]
    chosen_labels = [labels[i] for i in sample]
    return {
        "texts": chosen[:8],
        "train_texts": chosen[::2],
        "train_labels": chosen_labels[::2],
        "test_texts": chosen[1::2],
        "test_labels": chosen_labels[1::2],
    }


def test_every_docs_file_with_examples_is_covered():
    with_blocks = {path.name for path in DOCS.glob("*.md") if python_blocks(path.name)}
    assert with_blocks == set(SMALLER)


@pytest.mark.parametrize("name", sorted(SMALLER))
def test_docs_python_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples write figures, CSV files and pipelines
    from tests.door_fixtures import own_registrations_undone

    with own_registrations_undone():
        _run_blocks(name)


def _run_blocks(name: str) -> None:
    blocks = python_blocks(name)
    assert blocks, name
    for old in SMALLER[name]:
        assert any(old in block for block in blocks), f"{name}: {old!r} no longer occurs"
    data = reader_data()
    namespace: dict[str, Any] = {key: data[key] for key in ASSUMED.get(name, ())}
    for number, block in enumerate(blocks, start=1):
        for old, new in SMALLER[name].items():
            block = block.replace(old, new)
        try:
            before = set(namespace)
            exec(compile(block, f"docs/{name}", "exec"), namespace)
            for test in sorted(set(namespace) - before):  # a block written as a test file
                if test.startswith("test_") and callable(namespace[test]):
                    namespace[test]()
        except Exception as error:  # pragma: no cover - the message shows the failing block
            pytest.fail(f"docs/{name} block {number} failed: {error!r}\n{block}")
