"""Unicode normalisation in linear time on long runs of combining marks (adversarial-input
review F2): CPython's canonical ordering is an insertion sort, so 100 kB of alternating
marks took 8 s in each of the text path's normalisations."""

from __future__ import annotations

import itertools
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dxp_plugins import _normalize
from dxp_plugins._normalize import ORDERED_RUN, composed, normalize, normalize_word

#: Marks of several combining classes (220, 230, 202, 1, 240, a Hebrew point, Tibetan vowel
#: signs), starters that decompose into marks (U+0F73, U+0F75, U+0F81; U+FF9E and U+FF9F in
#: the K forms), and other starters.
_ALPHABET = [
    *"\u0301\u0316\u0327\u0334\u0345\u05b0\u0f71\u0344\u3099",
    *"\u0f73\u0f75\u0f81\uff9e\uff9f",
    *"aé ᾳ",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), min_size=ORDERED_RUN, max_size=120).map("".join))
def test_every_normal_form_is_unicodedata_s(text):
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert normalize(form, text) == unicodedata.normalize(form, text)


@pytest.mark.parametrize(
    "call", [composed, normalize_word, lambda text: _normalize.original_offset(text, 1)]
)
@pytest.mark.parametrize(
    "marks",
    [
        "\u0301\u0316",  # alternating classes 230 and 220
        "\u0f73",  # a starter whose decomposition (classes 129, 130) joins the run
        "\u0301\uff9e",  # a starter whose compatibility decomposition is a mark (class 8)
    ],
)
def test_a_long_run_of_marks_reaches_unicodedata_in_canonical_order(monkeypatch, call, marks):
    """What CPython sorts one insertion at a time is already in order but for runs shorter
    than ORDERED_RUN: a count of the inversions it is handed once each character is
    decomposed (as CPython decomposes before it sorts), not a timing (1,999 before)."""
    real, handed = unicodedata.normalize, []

    def recording(form, text):
        handed.append((form, text))
        return real(form, text)

    monkeypatch.setattr(_normalize.unicodedata, "normalize", recording)
    text = "a" + marks * 2_000 + " b"
    call(text)
    monkeypatch.undo()
    assert handed
    for form, given_text in handed:
        decomposition = "NFKD" if form.startswith("NFK") else "NFD"
        classes = [
            unicodedata.combining(part)
            for char in given_text
            for part in unicodedata.normalize(decomposition, char)
        ]
        inversions = sum(1 for a, b in itertools.pairwise(classes) if a > b > 0)
        assert inversions < ORDERED_RUN  # shorter runs cost CPython little: left as they are
