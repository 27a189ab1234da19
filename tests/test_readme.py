"""The README's Python examples run as written (with smaller vocabularies, for speed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.optional import HAS_GENSIM

README = Path(__file__).resolve().parents[1] / "README.md"
#: Faster stand-ins for the README's sizes; everything else runs verbatim.
SMALLER = {
    "vocab_size=100_000": "vocab_size=3_000",
    "pool=10_000": "pool=2_000",
    "sample_words(emb, 50,": "sample_words(emb, 20,",
    "max_n_w=0.5, min_s_w=50)": "max_n_w=0.5, min_s_w=50, epsilons=[5, 10], n_samples=200)",
    "n_components=20": "n_components=2",
}


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_readme_python_examples_run():
    """Each block on its own, as a reader copies it: no names borrowed from other blocks."""
    blocks = python_blocks()
    assert len(blocks) >= 5
    need_gensim = [block for block in blocks if re.search(r"^(from|import) gensim\b", block, re.M)]
    for block in blocks:
        if block in need_gensim and not HAS_GENSIM:
            continue
        code = block
        for old, new in SMALLER.items():
            code = code.replace(old, new)
        try:
            exec(compile(code, "README.md", "exec"), {})
        except Exception as error:  # pragma: no cover - the message shows the failing block
            pytest.fail(f"README block failed: {error!r}\n{block}")
    if need_gensim and not HAS_GENSIM:
        pytest.skip(f"{len(need_gensim)} block(s) need gensim (not installed); the others ran")


def test_readme_names_the_spacy_components_real_default_mode():
    from dxp_plugins.pipeline import DEFAULT_CONFIG

    claimed = re.findall(r'mode "(\w+)" \(default\)', README.read_text(encoding="utf-8"))
    assert claimed == [DEFAULT_CONFIG["mode"]]


def test_the_privacy_contract_copy_matches_the_shared_one():
    """docs/PRIVACY.md copies the workspace's contract so citations resolve in any clone."""
    shared = README.parents[1] / "shared" / "PRIVACY.md"
    if not shared.exists():
        pytest.skip("no shared/ folder beside the repository")
    copy = (README.parent / "docs" / "PRIVACY.md").read_text(encoding="utf-8")
    assert copy.endswith(shared.read_text(encoding="utf-8"))
