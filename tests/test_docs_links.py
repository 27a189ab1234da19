"""Every relative link in the README and docs/*.md reaches a file of the repository, and every
``#anchor`` a heading of its target page, as GitHub renders them (the README was split into
topic pages; a moved section must not leave a dead link behind)."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", flags=re.S | re.M)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower-cased, markup and punctuation dropped
    (letters, digits, ``-`` and ``_`` kept, in any script), spaces to hyphens."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    kept = "".join(ch for ch in text.lower() if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, flags=re.M):
        slug = github_slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_slug_rule_on_headings_this_project_links_to():
    assert github_slug("What is protected, and what is not") == "what-is-protected-and-what-is-not"
    assert github_slug("Config files, `spacy package` and `spacy train`") == (
        "config-files-spacy-package-and-spacy-train"
    )
    assert github_slug("Comparing mechanisms: one ε, one guarantee, different behaviour") == (
        "comparing-mechanisms-one-ε-one-guarantee-different-behaviour"
    )
