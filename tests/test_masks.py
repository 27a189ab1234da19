"""``mask=``: identifiers replaced by ``[...]`` before privatizing, the same in every door
(open work 31): whole tokens, one placeholder per run, never released, never counted as raw
words, recorded in the guarantee; real spaCy tokenizer and real GloVe rows throughout."""

from __future__ import annotations

import json
import pickle
import re

import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer, masks
from dxp_plugins import text as text_module
from dxp_plugins.cli import main as cli_main
from dxp_plugins.text import (
    TokenizedText,
    pieces,
    privatize_all,
    privatize_text,
    privatize_texts,
    selected_token_offset,
    tokenize,
)
from tests.door_fixtures import register

TICKET = (
    "Call me on +44 20 7946 0958 or mail sarah.j@example.com about order 48213, "
    "placed 03/14/2024 (see https://shop.example/o/48213)."
)
#: What the ticket must never show once masked (any part of an identifier).
HIDDEN = ["+44", "7946", "0958", "sarah.j", "@", "48213", "03/14", "https", "shop.example"]
GLOVE = {"embeddings": "glove-6b-50d", "vocab_size": 2000}


def skeleton(text: str) -> list[str]:
    """The text with every privatized word as ``w``: where the placeholders are."""
    return re.sub(r"[^\s()\[\].,]+", "w", text).split()


# -- the mask itself --------------------------------------------------------------------------
def test_the_identifiers_mask_finds_the_recipe_shapes():
    found = [TICKET[a:b] for a, b in masks.identifiers(TICKET)]
    assert found == [
        "+44 20 7946 0958",
        "sarah.j@example.com",
        "48213",
        "03/14/2024",
        "https://shop.example/o/48213",
    ]
    for shape in [
        "AB-48213",
        "h2o",
        "4th",
        "Mary.O'Brien@corp.example",
        "WWW.Example.ORG/x",
        "@bob_smith",
        "@ops.team-1",
    ]:
        assert [shape[a:b] for a, b in masks.identifiers(shape)] == [shape], shape
    mentions = "ping @bob_smith, (@ana.k) and '@Zoë' at 5 @ noon, not x@y, @@z or @."
    assert [mentions[a:b] for a, b in masks.handles(mentions)] == [
        "@bob_smith",
        "@ana.k",
        "@Zoë",
    ]
    # Markdown and other punctuation before the @ (review 28 F9: these were missed).
    marked = "*@bob* {@ana} |@cy !@dee \u2014@ed /@fi +@gu ?@hal"
    assert [marked[a:b] for a, b in masks.handles(marked)] == [
        "@bob",
        "@ana",
        "@cy",
        "@dee",
        "@ed",
        "@fi",
        "@gu",
        "@hal",
    ]
    assert list(masks.identifiers("no identifier here, Alice.")) == []
    assert [TICKET[a:b] for a, b in masks.emails(TICKET)] == ["sarah.j@example.com"]
    assert [TICKET[a:b] for a, b in masks.urls(TICKET)] == ["https://shop.example/o/48213"]
    assert "48213" in [TICKET[a:b] for a, b in masks.numbers(TICKET)]
    assert masks.identifiers.__doc__ and masks.emails.__doc__  # shown by registry.describe


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "a",
                "Z",
                "7",
                "@",
                ".",
                " ",
                "-",
                "/",
                "(",
                ")",
                "+",
                "'",
                ",",
                "www.",
                "HTTP://",
                "https://",
                "x@y.org",
                "é",
                "\u200b",
                "4th",
                "AB-1",
                "1-a",
                "+1 2-",
                "12-ab",
                "-",
                "aaaa",
                "b.co",
                "\u0661",
                "@bob",
                '"',
                ":",
                "_",
                "1!",  # short matches in a run of local-part characters (linear search)
                "|",
                "=",
                "&",
            ]
        ),
        max_size=30,
    ).map("".join)
)
def test_the_built_in_masks_find_what_their_patterns_find(text):
    """Each built-in skips the parts its text cannot hold (no "@", no digit, no URL start):
    the spans must be exactly those of the whole pattern."""
    for find, pattern in [
        (masks.identifiers, masks.IDENTIFIERS),
        (masks.emails, masks.EMAILS),
        (masks.urls, masks.URLS),
        (masks.handles, masks.HANDLES),
        (masks.numbers, masks.NUMBERS),
    ]:
        assert list(find(text)) == [m.span() for m in pattern.finditer(text)], (find, text)


def test_the_shapes_the_docs_say_identifiers_leaves_are_left():
    """README, front-doors.md, ``--help`` and the module say these are privatized, not
    masked (red-team F3): widening the pattern must update them."""
    mask = masks.Mask("identifiers", masks.identifiers)
    for text, found in [
        ("write to yahoo.com now", []),
        ('write "john doe"@example.com', ["@example.com"]),  # the names are left
        ("born March 14, 2024", ["14", "2024"]),
        ("GB82 WEST 1234 5698", ["GB82", "1234 5698"]),
        ("chapter \u2167, forty-two, cc:bob@team", []),
        ("bob [at] example [dot] com, ftp://files.example/x", []),
    ]:
        assert [text[a:b] for a, b in masks.visible_spans(mask, text)] == found, text


def test_a_match_ending_inside_a_run_is_followed_as_the_pattern_follows_it():
    """A number can end before a hyphen inside a run of word characters; the pattern then
    starts its next match there, in the middle of the run, which the built-ins' guarded
    patterns (matches only at a run's start) must not lose."""
    for text in ["+1 2-a@b.co", "12-ab3 x", "1-1-1-a2", "+44 1-x@y.org and 7-b4", "a1@b.c"]:
        expected = [m.span() for m in masks.IDENTIFIERS.finditer(text)]
        assert list(masks.identifiers(text)) == expected, text
    assert list(masks.identifiers("+1 2-a@b.co")) == [(0, 4), (4, 11)]
    assert list(masks.numbers("12-ab3 x")) == [(0, 2), (2, 6)]


def _first_items(pattern: str) -> list[list[tuple]]:
    """The items of each top-level alternative of ``pattern``, parsed."""
    import re._parser as parser  # the stdlib's own parser (Python >= 3.11)

    parsed = list(parser.parse(pattern))
    if len(parsed) == 1 and parsed[0][0] == parser.BRANCH:
        return [list(items) for items in parsed[0][1][1]]
    return [parsed]


def test_the_built_in_masks_search_in_linear_time():
    """Regular expressions rescan: ``[\\w-]*\\d`` tried from every position of a long
    digit-free word reads the rest of the word each time (``"a" * 40_000 + " 1"`` took 15 s,
    an 80 kB token and an ``@`` 18 s end to end). Where the built-ins search (every
    position but a match's end), every alternative starting with an unbounded run of a
    character class is guarded by a lookbehind refusing that class: a match can start only
    at the start of its run. A structural check (no timing): a new unguarded part fails."""
    import re._parser as parser

    searched = {parts.guarded.pattern for parts in masks._COMBINED.values() if parts is not None}
    assert len(searched) == 2 ** len(masks._PARTS) - 1
    for pattern in searched:
        for items in _first_items(pattern):
            guard, first = (
                (items[0], items[1]) if items[0][0] == parser.ASSERT_NOT else (None, items[0])
            )
            if first[0] == parser.MAX_REPEAT and first[1][1] == parser.MAXREPEAT:
                assert guard is not None, (pattern, items)
                direction, (condition,) = guard[1]
                assert direction == -1 and condition == first[1][2][0], (pattern, items)
    # The inputs the review timed (seconds each before; milliseconds now): the same spans.
    assert list(masks.numbers("a" * 40_000 + " 1")) == [(40_001, 40_002)]
    assert list(masks.emails("a" * 40_000 + "@")) == []
    assert list(masks.identifiers("x" * 40_000 + "@ 1")) == [(40_002, 40_003)]
    assert list(masks.handles(" @" + "a." * 20_000)) == [(1, 40_001)]
    assert list(masks.identifiers("@" * 40_000 + " @a")) == [(40_001, 40_003)]


class _CountingPattern:
    """A compiled pattern that counts the characters its ``match`` calls could read."""

    def __init__(self, pattern):
        self.pattern, self.read = pattern, 0

    def match(self, text, position):
        self.read += len(text) - position
        return self.pattern.match(text, position)


@pytest.mark.parametrize("shape", ["1!", "1+", "|1", "k0=v0&"])
def test_the_e_mail_part_reads_a_run_of_short_matches_once(shape):
    """``"1!" * n + " @"`` in identifiers: the e-mail part, tried after each of the n
    numbers, read the rest of the run each time (100 kB: 23 s; a query string or a table
    without spaces in a ticket that also holds an address). It fails from every start of
    the run where it failed once, so it is tried once per run. A count, not a timing."""
    text = shape * 2_000 + " @"
    parts = masks._COMBINED[(True, False, False, True)]
    counting = _CountingPattern(parts.first)  # the parts with the e-mail part among them
    found = list(masks._finditer(parts._replace(first=counting), text))
    assert found == [match.span() for match in masks.IDENTIFIERS.finditer(text)]
    assert len(found) >= 2_000 and counting.read <= 2 * len(text)


def test_a_span_cutting_a_token_hides_the_whole_token_in_one_placeholder():
    tokens = tokenize("send it to bob@corp.example now, please")
    text = "send it to bob@corp.example now, please"
    cut = text.index("corp")  # a span from the middle of the address into "now"
    masked = masks.apply_mask(tokens, [(cut, text.index("now") + 1)])
    assert masked.words == ["send", "it", "to", "[...]", "", ",", "please"]
    assert masked.spaces == [" ", " ", " ", "", "", " ", ""]  # the run's last whitespace
    assert masked.selected == [True, True, True, False, False, False, True]
    assert masked.masked == 1
    assert masks.apply_mask(tokens, []) is tokens  # nothing found: the same object
    assert masks.apply_mask(tokens, [(4, 5)]) is tokens  # whitespace only: nothing hidden
    two = masks.apply_mask(tokens, [(0, 2), (1, 3), (text.index("please"), len(text))])
    assert two.words[0] == "[...]" and two.words[-1] == "[...]" and two.masked == 2


def test_a_registered_mask_cutting_mid_token_masks_the_whole_token(monkeypatch, glove_5k):
    """``ari`` inside ``Maria``: the whole word goes, never ``M`` or ``ia`` or the word."""
    register(monkeypatch, "masks", "ari-test", masks.regex_mask("ari"))
    mech = dxp.Madlib(glove_5k, epsilon=200.0)  # a word comes out as itself at this epsilon
    assert "maria" in glove_5k
    texts = ["Call Maria today"] * 50
    plain = [r.text for r in privatize_texts(texts, mech)]
    assert sum("maria" in out for out in plain) > 40  # without the mask it survives
    private = list(privatize_texts(texts, mech, mask="ari-test"))
    for result in private:
        assert result.text.split()[1] == "[...]" and "maria" not in result.text.lower()
        assert result.guarantee.mask == "ari-test" and result.guarantee.spans_masked == 1


# -- mutants: the check above must catch the bug classes a mask can have -------------------
_APPLY_MASK = masks.apply_mask


def _whole_tokens_only(doc, spans):
    """Mutant: hides only tokens a span covers whole (a partial mask leaves the word)."""
    starts, at = [], 0
    for word, space in zip(doc.words, doc.spaces, strict=True):
        starts.append((at, at + len(word)))
        at += len(word) + len(space)
    kept = [(a, b) for a, b in spans if any(a <= s and e <= b for s, e in starts)]
    return _APPLY_MASK(doc, kept)


def _shifted(doc, spans):
    """Mutant: offsets shifted (the long-text bug of the red team, F1: placeholders fell on
    other words)."""
    return _APPLY_MASK(doc, [(a + 6, b + 6) for a, b in spans])


@pytest.mark.parametrize("mutant", [_whole_tokens_only, _shifted])
def test_the_released_word_check_catches_mask_mutants(monkeypatch, glove_5k, mutant):
    register(monkeypatch, "masks", "ari-test", masks.regex_mask("ari"))
    mech = dxp.Madlib(glove_5k, epsilon=200.0)
    texts = ["Call Maria today"] * 50

    def released() -> int:
        private = privatize_texts(texts, mech, mask="ari-test")
        return sum("maria" in result.text.lower() for result in private)

    assert released() == 0
    monkeypatch.setattr(masks, "apply_mask", mutant)
    assert released() > 40  # the word comes out as itself: the check above would fail


def test_an_invisible_mark_inside_an_identifier_does_not_hide_it_from_the_mask(glove_5k):
    """Lookup drops zero-width characters, so ``mikell@nyt<ZWSP>imes.com`` finds the GloVe
    row; the mask reads the text without them too, and hides the whole token."""
    text = "mail sarah.j@exa\u200bmple.com or call 555\u200b0199 today"
    spans = masks.visible_spans(masks.Mask("identifiers", masks.identifiers), text)
    assert [text[a:b] for a, b in spans] == ["sarah.j@exa\u200bmple.com", "555\u200b0199"]
    assert list(masks.identifiers(text)) != spans  # read as written, the address escapes
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    private = privatize_text(text, mech, mask="identifiers")
    assert private.text.split()[1] == "[...]" and private.text.split()[4] == "[...]"
    assert private.guarantee.spans_masked == 2
    # Full-width @ and . (U+FF20, U+FF0E): lookup reads the address as the GloVe row.
    wide = "write to mikell\uff20nytimes\uff0ecom or \uff14\uff12 now"
    found = masks.visible_spans(masks.Mask("identifiers", masks.identifiers), wide)
    assert [wide[a:b] for a, b in found] == ["mikell\uff20nytimes\uff0ecom", "\uff14\uff12"]
    assert [wide[a:b] for a, b in masks.identifiers(wide)] == ["\uff14\uff12"]  # as written
    assert privatize_text(wide, mech, mask="emails").text.split()[2] == "[...]"


def test_a_long_table_of_numbers_is_masked_in_parts_a_long_text_can_be_cut_between():
    """Digits joined through spaces made ``"1 " * 5_000_000`` one span: a long text is never
    cut inside a span, so the whole 10 MB line was one piece (1.1 GB; adversarial-input
    review F3). A run is joined across at most NUMBER_JOIN_CHARS characters."""
    text = "1 " * 100_000 + "and the team"
    spans = list(masks.identifiers(text))
    assert len(spans) > 100 and max(b - a for a, b in spans) <= masks.NUMBER_JOIN_CHARS + 2
    assert spans[0] == (0, masks.NUMBER_JOIN_CHARS + 1)
    assert len(list(text_module.pieces(text, text_module.PIECE_CHARS, spans))) >= 2
    # phone and card numbers are still one span each
    phones = "call +1 (555) 123-4567 or 4111 1111 1111 1111 now"
    assert [phones[a:b] for a, b in masks.identifiers(phones)] == [
        "+1 (555) 123-4567",
        "4111 1111 1111 1111",
    ]


@pytest.mark.parametrize("stop", ["\u3002", "\uff61"])
def test_ideographic_full_stops_are_read_as_dots(glove_5k, stop):
    """IDNA reads U+3002 and U+FF61 as dots in a domain, NFKC does not: a URL written with
    them had its path words privatized instead of masked, and an address with one was
    released raw under oov="passthrough" (adversarial-input review F9)."""
    identifiers = masks.Mask("identifiers", masks.identifiers)
    url = f"see www{stop}example{stop}com/john/smith now"
    assert [url[a:b] for a, b in masks.visible_spans(identifiers, url)] == [
        f"www{stop}example{stop}com/john/smith"
    ]
    address = f"mail john.smith@gmail{stop}com now"
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        mech = dxp.Madlib(glove_5k, epsilon=3.0, oov="passthrough")
    assert privatize_text(address, mech, mask="identifiers").text.split()[1] == "[...]"
    sentence = "我爱你。谢谢"  # a sentence's full stop: nothing to mask
    assert masks.visible_spans(identifiers, sentence) == []


def test_a_registered_mask_sees_the_ideographic_full_stop_as_written():
    """The built-ins' reading of U+3002 as a dot was first put in the reading every mask
    gets: a registered pattern ending in "。" then matched nothing and its sentence went out
    unmasked (diff review F1)."""
    secret = masks.Mask("secret", masks.regex_mask(r"[^。\s]*机密[^。\s]*。"))
    text = "hello 项目代号是机密的银河计划。 thanks"
    found = [text[a:b] for a, b in masks.visible_spans(secret, text)]
    assert found == ["项目代号是机密的银河计划。"]


def test_a_pattern_stopping_at_an_apostrophe_still_hides_the_whole_address():
    """The diff review's case: a pattern that stops at ``'`` left ``Mary`` (a vocabulary word)
    when it replaced text before tokenizing; on tokens it hides the whole token."""
    from dxp_plugins._tokenization import mask_tokens

    text = "write to Mary.O'Brien@corp.example now"
    short = masks.Mask("short", masks.regex_mask(r"[^\s@']+@[\w.-]+"))
    assert [text[a:b] for a, b in short.spans(text)] == ["Brien@corp.example"]
    assert mask_tokens(tokenize(text), short).words == ["write", "to", "[...]", "now"]


# -- the same in every door -------------------------------------------------------------------
def test_the_ticket_is_masked_identically_in_every_door(tmp_path):
    """Seeded on purpose: the same draws in every door mean the same tokens were masked."""
    seed, epsilon = 2024, 3.0
    nlp = spacy.blank("en")
    config = {"epsilon": epsilon, "vocab_size": 2000, "seed": seed, "mask": "identifiers"}
    nlp.add_pipe("dxp_privatizer", config=config)
    doc = nlp(TICKET)
    replace = spacy.blank("en")
    replace.add_pipe("dxp_privatizer", config={**config, "mode": "replace"})
    replaced = replace(TICKET)
    step = TextPrivatizer(epsilon=epsilon, vocab_size=2000, random_state=seed, mask="identifiers")
    (sklearn_out,) = step.fit_transform([TICKET])
    source, target, report = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "r.json"
    source.write_text(TICKET + "\n", encoding="utf-8")
    args = ["privatize", str(source), "-o", str(target), "--report", str(report)]
    args += ["--epsilon", str(epsilon), "--vocab-size", "2000", "--seed", str(seed)]
    assert cli_main([*args, "--mask", "identifiers"]) == 0
    cli_out = target.read_text(encoding="utf-8").rstrip("\n")
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=2000)
    with pytest.warns(dxp.SeededRandomnessWarning):
        mech = dxp.Madlib(table, epsilon=epsilon, random_state=seed)
    function_out = privatize_text(TICKET, mech, mask="identifiers")

    outputs = [doc._.dxp_text, replaced.text, sklearn_out, cli_out, function_out.text]
    assert len(set(outputs[:4])) == 1, outputs
    for out in outputs:
        assert out.count("[...]") == 5, out
        assert skeleton(out) == skeleton(outputs[0])
        assert not [part for part in HIDDEN if part in out], out
    records = [
        doc._.dxp_guarantee,
        replaced._.dxp_guarantee,
        step.last_guarantee_.to_dict(),
        json.loads(report.read_text())["guarantee"],
    ]
    assert all(record == records[0] for record in records)
    assert records[0]["mask"] == "identifiers" and records[0]["spans_masked"] == 5
    assert records[0]["words_passed_through"] == 0
    assert function_out.guarantee.to_dict() == records[0]
    # The component: the placeholder on the run's first token, "" on the rest.
    values = [token._.dxp_text for token in doc]
    assert values.count("[...]") == 5 and all(v for v in values if v != "")
    phone = [token._.dxp_text for token in doc[3:7]]
    assert [t.text for t in doc[3:7]] == ["+44", "20", "7946", "0958"]
    assert phone == ["[...]", "", "", ""]
    assert [t.text for t in replaced].count("[...]") == 5


def test_a_glove_email_row_never_comes_out_when_masked():
    """``mikell@nytimes.com`` is a row of GloVe's first 100k words: privatized, it comes out
    as itself most of the time at a large epsilon; masked, never."""
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=100_000)
    address = "mikell@nytimes.com"
    assert address in table
    texts = [f"write to {address} today"] * 300
    with pytest.warns(dxp.SeededRandomnessWarning):
        mech = dxp.Madlib(table, epsilon=60.0, random_state=7)
    plain = [r.text for r in privatize_texts(texts, mech)]
    assert sum(address in out for out in plain) > 150
    for name in ("identifiers", "emails"):
        private = list(privatize_texts(texts, mech, mask=name))
        assert not [r.text for r in private if "@" in r.text or "mikell" in r.text]
        total = dxp.Guarantee.combine(r.guarantee for r in private)
        assert total.spans_masked == 300 and total.tokens_privatized == 900
        assert total.words_passed_through == 0 and total.mask == name


def test_masked_tokens_are_never_raw_words_even_where_a_selection_releases_words_raw(
    monkeypatch, glove_5k
):
    """A token filter selecting nothing releases every word raw (counted as such); the mask
    still hides its tokens, which are then neither released nor counted as raw words."""
    register(monkeypatch, "token_filters", "nothing-test", lambda token: False)
    text = "order 48213 shipped to bob@corp.example on 2024-03-14 today"
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 5.0, "vocab_size": 5000, "token_filter": "nothing-test"},
    )
    unmasked = nlp(text)
    assert unmasked._.dxp_text == text  # every word raw: the selection's choice
    assert unmasked._.dxp_guarantee["words_passed_through"] == 10  # and the two "-"
    masked_nlp = spacy.blank("en")
    masked_nlp.add_pipe(
        "dxp_privatizer",
        config={
            "epsilon": 5.0,
            "vocab_size": 5000,
            "token_filter": "nothing-test",
            "mask": "identifiers",
        },
    )
    privatizer = masked_nlp.get_pipe("dxp_privatizer")
    doc = masked_nlp(text)
    assert doc._.dxp_text == "order [...] shipped to [...] on [...] today"
    record = doc._.dxp_guarantee
    assert record["words_passed_through"] == 5 and record["spans_masked"] == 3
    assert record["tokens_passed_through"] == 8 and record["tokens_privatized"] == 0
    assert privatizer.accountant.words_released_raw == 5
    # The text path: every default word privatized, placeholders counted as passed through.
    mech = dxp.Madlib(glove_5k, epsilon=5.0)
    result = privatize_text(text, mech, mask="identifiers")
    assert result.guarantee.words_passed_through == 0 and mech.accountant.words_released_raw == 0
    assert result.guarantee.tokens_passed_through == 3 == result.guarantee.spans_masked
    assert result.guarantee.tokens_privatized == 5


# -- settings: saved, cloned, refused ---------------------------------------------------------
def test_the_spacy_component_saves_and_loads_its_mask(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 3.0, "vocab_size": 2000, "mask": "urls"})
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    component = loaded.get_pipe("dxp_privatizer")
    assert component.cfg["mask"] == "urls" and "mask='urls'" in repr(component)
    doc = loaded("see https://shop.example/o/48213 now")
    assert doc._.dxp_text.split()[1] == "[...]" and doc._.dxp_guarantee["mask"] == "urls"
    copy = pickle.loads(pickle.dumps(component))
    assert copy.settings.mask == "urls" and copy._mask.name == "urls"
    # Loading the saved settings over another mask is refused, as for any other setting.
    with pytest.raises(ValueError, match="mask: saved 'urls', configured 'emails'"):
        spacy.load(tmp_path / "pipeline", config={"components.dxp_privatizer.mask": "emails"})
    # A component saved before masks existed (no "mask" in its cfg) still loads.
    saved = json.loads((tmp_path / "pipeline" / "dxp_privatizer" / "cfg").read_text())
    del saved["config"]["mask"]
    plain = spacy.blank("en")
    plain.add_pipe("dxp_privatizer", config={"epsilon": 3.0, "vocab_size": 2000})
    plain.get_pipe("dxp_privatizer")._load_state(saved)
    assert plain.get_pipe("dxp_privatizer").settings.mask is None


def test_text_privatizer_takes_mask_as_a_parameter(glove_5k):
    step = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, mask="numbers")
    assert step.get_params()["mask"] == "numbers"
    twin = clone(step)
    assert twin.get_params()["mask"] == "numbers"
    out = twin.fit_transform(["order 48213 now", "nothing to hide"])
    assert out[0].split()[1] == "[...]" and "[...]" not in out[1]
    assert twin.last_guarantee_.mask == "numbers" and twin.last_guarantee_.spans_masked == 1
    twin.set_params(mask="emails")
    with pytest.raises(ValueError, match="parameters changed since fit"):
        twin.transform(["x"])
    restored = pickle.loads(pickle.dumps(step.fit(None)))
    assert restored.transform(["call 8675309"])[0].split()[1] == "[...]"


def test_unknown_masks_are_refused_in_every_door_naming_the_known_ones(tmp_path, glove_5k, capsys):
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    known = "emails, handles, identifiers, numbers, urls"
    with pytest.raises(ValueError, match=f"mask: unknown name 'ids'; available: {known}"):
        privatize_text("x", mech, mask="ids")
    with pytest.raises(ValueError, match="unknown name 'ids'"):
        list(privatize_texts(["x"], mech, mask="ids"))
    with pytest.raises(ValueError, match="unknown name 'ids'"):
        privatize_all(["x"], mech, mask="ids")
    with pytest.raises(TypeError, match="mask must be"):
        privatize_text("x", mech, mask=re.compile("x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=f"mask: unknown name 'ids'; available: {known}"):
        TextPrivatizer(epsilon=3.0, embeddings=glove_5k, mask="ids").fit(None)
    with pytest.raises(ValueError, match="unknown name 'ids'"):
        spacy.blank("en").add_pipe("dxp_privatizer", config={"epsilon": 3.0, "mask": "ids"})
    assert mech.accountant.spent == 0
    source = tmp_path / "in.txt"
    source.write_text("order 48213\n")
    assert cli_main(["privatize", str(source), "--epsilon", "3", "--mask", "ids"]) != 0
    assert f"--mask: unknown name 'ids'; available: {known}" in capsys.readouterr().err


def test_a_mask_giving_bad_spans_is_refused_before_any_spend(monkeypatch, glove_5k):
    register(monkeypatch, "masks", "outside-test", lambda text: [(0, len(text) + 5)])
    register(monkeypatch, "masks", "words-test", lambda text: [5])
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    with pytest.raises(ValueError, match="outside the text"):
        privatize_text("hello there", mech, mask="outside-test")
    with pytest.raises(TypeError, match=r"must give \(start, end\) pairs"):
        privatize_text("hello there", mech, mask="words-test")
    register(monkeypatch, "masks", "none-test", lambda text: None)
    register(monkeypatch, "masks", "bool-test", lambda text: [(False, True)])
    with pytest.raises(TypeError, match=r"mask 'none-test' must give an iterable .* got NoneType"):
        privatize_text("hello there", mech, mask="none-test")
    with pytest.raises(TypeError, match="mask 'bool-test' must give int offsets, got bool"):
        privatize_text("hello there", mech, mask="bool-test")
    step = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, mask="none-test")
    with pytest.raises(TypeError, match="none-test"):
        step.fit_transform(["hello there"] * 3)
    assert mech.accountant.spent == 0 and step.accountant_.spent == 0


# -- the record -------------------------------------------------------------------------------
def test_the_record_names_the_mask_and_records_of_different_masks_do_not_merge(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    ids = privatize_text(TICKET, mech, mask="identifiers").guarantee
    assert "Mask 'identifiers' replaced 5 runs of tokens by [...]" in ids.statement
    assert dxp.Guarantee.from_dict(ids.to_dict()) == ids
    urls = privatize_text(TICKET, mech, mask="urls").guarantee
    plain = privatize_text(TICKET, mech).guarantee
    assert urls.spans_masked == 1 and plain.mask is None and "Mask" not in plain.statement
    for other in (urls, plain):
        with pytest.raises(ValueError, match="cannot merge guarantees with different mask"):
            ids.merge(other)
        with pytest.raises(ValueError, match="different mask"):
            dxp.Guarantee.combine([ids, ids, other])
    both = dxp.Guarantee.combine([ids, ids])
    assert both.spans_masked == 10 and both.releases == 2
    empty = privatize_text("   ", mech, mask="identifiers").guarantee
    assert empty.mask == "identifiers" and empty.spans_masked == 0
    old = {key: value for key, value in plain.to_dict().items() if key not in ("mask",)}
    del old["spans_masked"]
    assert dxp.Guarantee.from_dict(old) == plain  # a record written before masks existed
    with pytest.raises(ValueError, match="spans_masked must be 0 when mask is None"):
        dxp.Guarantee.from_dict({**plain.to_dict(), "spans_masked": 1, "statement": "x"})


def test_nothing_released_records_the_mask(tmp_path, glove_5k):
    step = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, mask="identifiers")
    step.fit_transform([])
    assert step.last_guarantee_.mask == "identifiers" and step.last_guarantee_.releases == 0


# -- long texts, OOV positions, the default -------------------------------------------------------
def test_a_long_text_is_masked_whole_across_its_pieces(monkeypatch, glove_5k):
    """Long texts are privatized in pieces: the mask's spans are found on the whole text,
    and no piece is cut inside a span (a phone number stays one placeholder)."""
    monkeypatch.setattr(text_module, "PIECE_CHARS", 64)
    line = "call +44 20 7946 0958 or mail bob@corp.example today please "
    text = line * 40
    spans = masks.IDENTIFIERS.finditer(text)
    bounds = [m.span() for m in spans]
    cut = 0
    for piece in pieces(text, 64, bounds):
        cut += len(piece)
        assert not [a for a, b in bounds if a < cut < b]
    assert cut == len(text)
    plain_cuts = []
    at = 0
    for piece in pieces(text, 64):
        at += len(piece)
        plain_cuts.append(at)
    assert any(a < c < b for c in plain_cuts for a, b in bounds)  # a cut the mask moved
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    result = privatize_text(text, mech, mask="identifiers")
    assert result.text.count("[...]") == 80 and result.guarantee.spans_masked == 80
    assert "@" not in result.text and "0958" not in result.text  # identifiers never out
    assert result.guarantee.releases == 1 and result.guarantee.words_passed_through == 0
    capped = dxp.Madlib(glove_5k, epsilon=3.0, accountant=dxp.Accountant(cap=1e9))
    (again,) = privatize_all([text], capped, mask="identifiers")
    assert again.guarantee.spans_masked == 80
    assert capped.accountant.tokens_privatized == again.guarantee.tokens_privatized


def test_oov_positions_count_the_masked_tokens_as_placeholders(glove_5k, tmp_path, capsys):
    text = "call 48213 or zzqqxxv now"
    assert selected_token_offset(text, 2) == text.index("or")
    assert selected_token_offset(text, 2, mask="numbers") == text.index("zzqqxxv")
    mech = dxp.Madlib(glove_5k, epsilon=3.0, oov="raise")
    with pytest.raises(dxp.OOVError) as raised:
        privatize_text(text, mech, mask="numbers")
    assert raised.value.token == 2  # call, or, zzqqxxv: the number is not privatized
    source = tmp_path / "in.txt"
    source.write_text(text + "\n")
    args = ["privatize", str(source), "--epsilon", "3", "--vocab-size", "5000", "--oov", "raise"]
    assert cli_main([*args, "--mask", "numbers"]) != 0
    assert "out-of-vocabulary token at character 15 of the line" in capsys.readouterr().err
    assert cli_main(args) != 0
    assert "at character 6 of the line" in capsys.readouterr().err  # the number, unmasked


def test_no_mask_costs_nothing(monkeypatch, glove_5k):
    """The default never reaches the masking code."""

    def fail(*args, **kwargs):
        raise AssertionError("mask code ran without a mask")

    monkeypatch.setattr(text_module, "mask_tokens", fail)
    monkeypatch.setattr(masks, "apply_mask", fail)
    monkeypatch.setattr("dxp_plugins._tokenization.mask_tokens", fail)
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    assert privatize_text(TICKET, mech).guarantee.mask is None
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 3.0, "vocab_size": 2000})
    assert nlp(TICKET)._.dxp_guarantee["mask"] is None
    assert isinstance(tokenize(TICKET), TokenizedText)


# -- long texts read as lookup reads them (red-team F1) ---------------------------------------
#: Identifiers lookup finds as vocabulary rows although written otherwise: superscript
#: digits, full-width letters and marks, a zero-width space inside an address.
DISGUISED = (
    "born \u00b9\u2079\u2079\u2079 in town, mail "
    "\uff4c\uff45\uff54\uff54\uff45\uff52\uff53\uff20\uff4e\uff59\uff54\uff49\uff4d\uff45\uff53"
    "\uff0e\uff43\uff4f\uff4d or bob@exa\u200bmple.com, call 1234567 now and 2024 also 1999 end"
)
#: Before the identifiers: characters lookup drops or reads longer or shorter (zero-width
#: space, the ``fi`` ligature, full-width and superscript forms), which shift every offset
#: between the text as written and the text as lookup reads it.
SHIFTING_PREFIXES = ["a\u200b ", "\ufb01ve ", "\uff54\uff48\uff45 ", "x\u00b2 "]


def placeholders(text: str) -> list[int]:
    """The positions of the placeholders among the whitespace-separated tokens."""
    return [k for k, word in enumerate(text.split()) if word.startswith("[...]")]


@pytest.mark.parametrize("prefix", SHIFTING_PREFIXES)
def test_a_long_text_masks_the_tokens_a_short_text_masks(monkeypatch, glove_5k, prefix):
    """A long text is masked in pieces; the spans must be found on the text as lookup reads
    it, exactly once: the same placeholders and records as the same words in a short text."""
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    body = prefix * 30 + DISGUISED
    short = privatize_text(body, mech, mask="identifiers")
    monkeypatch.setattr(text_module, "PIECE_CHARS", 64)
    long = privatize_text(body + " the cat" * 40, mech, mask="identifiers")
    assert placeholders(short.text) == placeholders(long.text)
    assert short.guarantee.spans_masked == 6 + 30 * (prefix == "x\u00b2 ")  # x² reads x2
    assert long.guarantee.spans_masked == short.guarantee.spans_masked
    assert long.guarantee.spans_masked == len(placeholders(short.text))
    capped = dxp.Madlib(glove_5k, epsilon=3.0, accountant=dxp.Accountant(cap=1e9))
    (again,) = privatize_all([body + " the cat" * 40], capped, mask="identifiers")
    assert placeholders(again.text) == placeholders(short.text)


def test_a_long_text_never_releases_a_disguised_identifier_under_passthrough(monkeypatch, glove_5k):
    monkeypatch.setattr(text_module, "PIECE_CHARS", 64)
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        mech = dxp.Madlib(glove_5k, epsilon=3.0, oov="passthrough")
    raw = [
        "\u00b9\u2079\u2079\u2079",
        "\uff4c\uff45\uff54\uff54",
        "bob@exa",
        "1234567",
        "2024",
        "1999",
    ]
    for prefix in ["", *SHIFTING_PREFIXES]:
        result = privatize_text(
            prefix * 200 + DISGUISED + " the cat" * 40, mech, mask="identifiers"
        )
        assert not [part for part in raw if part in result.text], prefix
        assert result.guarantee.spans_masked == 6 + 200 * (prefix == "x\u00b2 ")


def test_the_oov_position_reads_the_mask_as_the_release_does():
    """The CLI's ``--oov raise`` location: the masked identifier is one placeholder (never
    privatized), so the first privatized token after ``born`` is the OOV word."""
    for text in [
        "born \u00b9\u2079\u2079\u2079 qqzzxyq end",
        "a\u200b\u200b\u200b\u200b b 1999 qqzzxyq end",
    ]:
        index = 1 if text.startswith("born") else 2
        assert selected_token_offset(text, index, mask="identifiers") == text.index("qqzzxyq")


#: Pieces for texts whose reading differs from their writing: invisible characters,
#: combining marks (after a letter, after whitespace), ligatures, full-width and
#: superscript forms, a Roman numeral, whitespace of several kinds.
READING_ALPHABET = ["a", "e", "1", "@", ".", "x", " ", "  ", "\u00a0", "\n", "\u200b"]
READING_ALPHABET += ["\u00ad", "\u0301", "\u0327", "\ufb01", "\uff20", "\uff0e", "\u00b2", "\u3002"]
READING_ALPHABET += ["\u00e9", "\u2167"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(READING_ALPHABET),
        max_size=40,
    ).map("".join)
)
def test_a_text_cut_after_whitespace_reads_as_its_parts_read(text):
    """What lets a long text's pieces share the spans found once on the whole: the reading
    of a piece (cut after whitespace, as :func:`pieces` cuts) is that part of the whole's
    reading, and :meth:`~masks.Reading.visible` says where it starts. Composed or not, a
    text reads the same (the spaCy door reads the Doc as written, the others compose)."""
    import unicodedata

    whole = masks.Reading.of(text)
    assert masks.Reading.of(unicodedata.normalize("NFC", text)).text == whole.text
    for cut in [m.end() for m in re.finditer(r"\S\s+(?=\S)", text)]:
        head = masks.Reading.of(text[:cut]).text
        assert head + masks.Reading.of(text[cut:]).text == whole.text
        assert whole.visible(cut) == len(head)
    for k in range(len(whole.text)):  # each character read comes from one place, in order
        start, end = whole.original(k, k + 1)
        assert 0 <= start < end <= len(text)
        assert k == 0 or start >= whole.original(k - 1, k)[0]


def test_a_decomposed_address_is_masked_in_every_door(glove_5k):
    """``e`` + U+0301 (macOS, PDF extraction): the text doors compose the text, the spaCy
    component reads the Doc as written; both read it as lookup does, so both mask it."""
    text = "mail rene\u0301e@cafe\u0301.fr or john@be\u0301ziers.fr today"
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    private = privatize_text(text, mech, mask="identifiers")
    assert placeholders(private.text) == [1, 3] and private.guarantee.spans_masked == 2
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer", config={"epsilon": 3.0, "vocab_size": 5000, "mask": "identifiers"}
    )
    doc = nlp(text)
    assert placeholders(doc._.dxp_text) == [1, 3] and doc._.dxp_guarantee["spans_masked"] == 2
