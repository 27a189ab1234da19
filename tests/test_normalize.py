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

#: Marks of several combining classes (220, 230, 202, 1, 240, a Hebrew point, two Tibetan
#: vowel signs whose decompositions hold non-starters), and starters among them.
_ALPHABET = [*"\u0301\u0316\u0327\u0334\u0345\u05b0\u0f71\u0f73\u0344", "a", "é", " ", "ᾳ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_ALPHABET), min_size=ORDERED_RUN, max_size=120).map("".join))
def test_every_normal_form_is_unicodedata_s(text):
    for form in ("NFC", "NFD", "NFKC", "NFKD"):
        assert normalize(form, text) == unicodedata.normalize(form, text)


@pytest.mark.parametrize(
    "call", [composed, normalize_word, lambda text: _normalize.original_offset(text, 1)]
)
def test_a_long_run_of_marks_reaches_unicodedata_in_canonical_order(monkeypatch, call):
    """What CPython sorts one insertion at a time is already in order but for runs shorter
    than ORDERED_RUN (a count of the inversions it is handed, not a timing: 2,000 before)."""
    real, handed = unicodedata.normalize, []
    monkeypatch.setattr(
        _normalize.unicodedata,
        "normalize",
        lambda form, text: handed.append(text) or real(form, text),
    )
    text = "a" + "\u0301\u0316" * 2_000 + " b"
    call(text)
    assert handed
    for given_text in handed:
        classes = [unicodedata.combining(char) for char in given_text]
        inversions = sum(1 for a, b in itertools.pairwise(classes) if a > b > 0)
        assert inversions < ORDERED_RUN  # shorter runs cost CPython little: left as they are
