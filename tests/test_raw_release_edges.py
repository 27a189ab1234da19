"""What reaches the output raw, at its edges: the punctuation allow-list and the invisible
set pinned, selections recorded, the entity wildcard anywhere, a replaced Doc released once,
a pickled component keeping its selection, the component spacing private words as the text
path does, --keep-fields matching whole names, JSONL suffixes in any case, codec errors
withheld.

From a mutation review of the text front doors (review 11): 81 mutants, 13 real gaps that
every earlier test let through, among them entities=["GPE", "*"] releasing every other
entity raw and --keep-fields label also writing the raw fields "lab" and "a"."""

from __future__ import annotations

import pytest

import dxp_plugins as dxp
from dxp_plugins._normalize import INVISIBLE
from dxp_plugins.text import PUNCTUATION, privatize_text, should_privatize

#: The allow-list as PRIVACY.md / the docstring state it: any widening lets raw tokens out.
DOCUMENTED_PUNCTUATION = frozenset(
    [
        *".,;:!?'\"()[]{}<>-/\\|&*#@%^_~`+=$",
        "...",
        "--",
        "\u2026",
        "\u2013",
        "\u2014",
        "\u2018",
        "\u2019",
        "\u201c",
        "\u201d",
        "\u00ab",
        "\u00bb",
    ]
)


def test_the_allow_list_is_exactly_the_documented_marks_and_each_passes():
    assert PUNCTUATION == DOCUMENTED_PUNCTUATION
    for mark in DOCUMENTED_PUNCTUATION:
        assert not should_privatize(mark), mark
    # clitics, emoticons, digits, doubled marks are words: never passed raw
    for token in ["'s", "n't", "'ll", ":)", ":-)", "3", "0", "''", "$$", "a", "I"]:
        assert should_privatize(token), token


def test_the_invisible_set_is_exactly_the_documented_one():
    assert INVISIBLE == (
        "\u00ad\u200b\u200c\u200d\u2060\ufeff"  # bidi controls below (i18n review W3)
        "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    )
    mech = dxp.Madlib(dxp.load_embeddings("glove-6b-50d", vocab_size=2000), epsilon=300.0)
    for odd in ("\U000e0041", "\U000e0020", "\u2061", "\u180e"):
        record = privatize_text(f"meet {odd} please", mech).guarantee
        assert record.tokens_privatized == 3, repr(odd)


def test_single_digits_and_clitics_are_privatized_and_counted(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=300.0)
    result = privatize_text("Alice's 3 cats don't", mech)
    # Alice 's 3 cats do n't : six privatized, nothing passed
    assert result.guarantee.tokens_privatized == 6
    assert result.guarantee.tokens_passed_through == 0


def test_a_plain_callable_selector_is_recorded_as_a_selection(glove_5k):
    """A user's own Selector (no .description) still makes the guarantee say the
    selection was restricted (decided from raw text, not protected)."""
    from dxp_plugins.text import privatize_texts

    mech = dxp.Madlib(glove_5k, epsilon=300.0)
    select = lambda doc: [token.text != "team" for token in doc]  # noqa: E731
    [result, blank] = privatize_texts(["the team won", "  "], mech, select=select)
    assert result.guarantee.selection == "custom selector"
    assert blank.guarantee.selection == "custom selector"
    assert "team" in result.text.split()  # passed through, and counted
    assert (result.guarantee.tokens_privatized, result.guarantee.tokens_passed_through) == (2, 1)


def test_any_entity_wildcard_works_in_any_position():
    """entities=["GPE", "*"] means any entity: the PERSON must be privatized too."""
    import spacy
    from spacy.tokens import Span

    from dxp_plugins.doors import DoorSettings

    doc = spacy.blank("en").make_doc("Alice sent the keys to Bob in Paris.")
    doc.ents = [Span(doc, 7, 8, label="GPE"), Span(doc, 0, 1, label="PERSON")]
    for entities in (["GPE", "*"], ["*", "GPE"], ["PERSON", "*"]):
        flags = DoorSettings.create(epsilon=1.0, entities=entities).selector()(doc)
        assert [t.text for t, f in zip(doc, flags, strict=True) if f] == ["Alice", "Paris"]


def test_keep_fields_matches_field_names_exactly(tmp_path, capsys):
    """--keep-fields label keeps "label" only: not "lab", "a" or "labels" (raw data)."""
    import json

    from dxp_plugins.cli import main

    source = tmp_path / "data.jsonl"
    row = {"text": "hockey", "label": "y", "lab": "zq7secret", "a": "zq7a", "labels": "zq7s"}
    source.write_text(json.dumps(row) + "\n")
    code = main(
        ["privatize", str(source), "-e", "300", "--keep-fields", "label", "--vocab-size", "5000"]
    )
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out) == {"text": "hockey", "label": "y"}
    assert "zq7" not in out


def test_a_long_text_released_beyond_its_charge_is_refused(monkeypatch, glove_5k):
    """The guard of _privatize_long: if the pieces privatize more tokens than the charge
    pass counted (so the ledger would understate the release), the text is refused before
    the piece beyond the charge draws its noise; fewer, after the pieces."""
    import dxp_plugins.text as text_module

    monkeypatch.setattr(text_module, "PIECE_CHARS", 200)
    mech = dxp.Madlib(glove_5k, epsilon=1.0)
    sampled = []
    sample = mech._sample
    monkeypatch.setattr(
        mech, "_sample", lambda ids, rng, eps: sampled.append(len(ids)) or sample(ids, rng, eps)
    )
    real = mech.check_release
    monkeypatch.setattr(mech, "check_release", lambda docs: max(real(docs) - 1, 0))
    with pytest.raises(RuntimeError, match="more tokens than were charged"):
        privatize_text("the hockey team won\n" * 100, mech)
    assert sum(sampled) <= mech.accountant.tokens_privatized
    assert mech.last_guarantee.tokens_privatized == mech.accountant.tokens_privatized
    monkeypatch.setattr(mech, "check_release", lambda docs: real(docs) + 1)
    with pytest.raises(RuntimeError, match="fewer tokens than were charged"):
        privatize_text("the hockey team won\n" * 100, mech)


def test_an_unpickled_component_keeps_its_selection(monkeypatch):
    """Spawned workers of nlp.pipe(n_process=2) get the component by pickle: its
    selection must survive (it is rebuilt from the settings in __setstate__)."""
    import pickle

    import spacy

    from tests.door_fixtures import register

    register(monkeypatch, "token_filters", "short.v1", lambda token: len(token) <= 3)
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "dxp_privatizer", config={"epsilon": 300.0, "vocab_size": 2000, "token_filter": "short.v1"}
    )
    copy = pickle.loads(pickle.dumps(nlp.get_pipe("dxp_privatizer")))
    doc = copy(nlp.make_doc("the encryption key"))
    assert doc._.dxp_guarantee["tokens_privatized"] == 2
    assert doc._.dxp_guarantee["tokens_passed_through"] == 1
    assert doc._.dxp_guarantee["selection"] == "token_filter short.v1"


@pytest.mark.parametrize("name", ["DATA.JSONL", "data.NDJSON", "data.JsonL"])
def test_jsonl_suffixes_are_recognised_in_any_case(tmp_path, capsys, name):
    import json

    from dxp_plugins.cli import main

    source = tmp_path / name
    source.write_text(json.dumps({"text": "hockey", "name": "zq7secret"}) + "\n")
    code = main(["privatize", str(source), "-e", "300", "--vocab-size", "5000"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out) == {"text": "hockey"}


def test_a_replaced_doc_is_not_privatized_again():
    """mode="replace" returns a new Doc with no token values: the guarantee alone marks the
    release, and a second pass must be refused (it would charge twice and overwrite it)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 300.0, "vocab_size": 2000, "mode": "replace"})
    privatizer = nlp.get_pipe("dxp_privatizer")
    doc = nlp("hockey team")
    spent = privatizer.accountant.spent
    with pytest.raises(ValueError, match="already holds a private release"):
        privatizer(doc)
    assert privatizer.accountant.spent == spent


def test_a_unicode_error_from_library_code_is_withheld(tmp_path, capsys, monkeypatch):
    """A UnicodeError's message quotes the offending text even when library code raised it
    (here _render's encode of a text holding a lone surrogate): only its type is shown."""
    import dxp_plugins.text as text_module
    from dxp_plugins.cli import main
    from dxp_plugins.text import PrivateText

    def broken(texts, mechanism, **options):
        for text in texts:
            yield PrivateText(text + "\ud800", mechanism.guarantee(1))

    monkeypatch.setattr(text_module, "privatize_texts", broken)
    source = tmp_path / "notes.txt"
    source.write_text("zq7secret\n", encoding="utf-8")
    code = main(["privatize", str(source), "-e", "300", "--vocab-size", "5000"])
    err = capsys.readouterr().err
    assert code == 1 and "unexpected UnicodeEncodeError" in err and "details withheld" in err
    assert "codec" not in err and "surrogates" not in err


@pytest.mark.parametrize("mode", ["annotate", "replace"])
def test_the_component_spaces_private_words_as_the_text_path_does(mode):
    """Two privatized tokens written together ("can|not") are separated unless they join
    into a vocabulary word, as privatize_text does (text.private_spaces)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 0.01, "vocab_size": 2000, "mode": mode})
    table = nlp.get_pipe("dxp_privatizer").mechanism.embeddings
    separated = 0
    for doc in nlp.pipe(["cannot"] * 20):
        if mode == "annotate":
            first, second = (token._.dxp_text for token in doc)
            text = doc._.dxp_text
        else:
            first, second = (token.text for token in doc)
            text = doc.text
        clitic = second.startswith(("'", "\u2019")) or second.lower() in ("n't", "n\u2019t")
        joined = clitic or (first + second) in table  # kept together by text.private_spaces
        assert text == first + ("" if joined else " ") + second
        separated += not joined
    assert separated > 0


#: Texts whose tokens spaCy splits around a zero-width mark (pictographs; a family emoji
#: joined by ZWJ), beside the same texts without the marks (red-team review 13, F1).
MARKED = [
    ("\U0001f600{}\U0001f600", "\U0001f600\U0001f600"),
    ("my family \U0001f469{}\U0001f469{}\U0001f467 is here", "my family 👩👩👧 is here"),
    ("\U0001f600{}{}\U0001f600 ok", "\U0001f600\U0001f600 ok"),
]


def _doors(seed: int):
    """Each door's release of a list of texts, seeded with ``seed`` (one fresh object per
    call: lists whose tokens match draw the same noise)."""
    import spacy

    def text_path(texts):
        table = dxp.load_embeddings("glove-6b-50d", vocab_size=2000)
        mech = dxp.make_mechanism("madlib", table, epsilon=0.5, random_state=seed)
        return [privatize_text(text, mech).text for text in texts]

    def transformer(texts):
        from dxp_plugins.estimators import TextPrivatizer

        door = TextPrivatizer(epsilon=0.5, vocab_size=2000, random_state=seed)
        return list(door.fit_transform(texts))

    def component(mode):
        def release(texts):
            nlp = spacy.blank("en")
            config = {"epsilon": 0.5, "vocab_size": 2000, "mode": mode, "seed": seed}
            nlp.add_pipe("dxp_privatizer", config=config)
            docs = nlp.pipe(texts)
            return [doc._.dxp_text if mode == "annotate" else doc.text for doc in docs]

        return release

    return {
        "text path": text_path,
        "TextPrivatizer": transformer,
        "component annotate": component("annotate"),
        "component replace": component("replace"),
    }


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
@pytest.mark.parametrize("mark", INVISIBLE)
def test_a_dropped_zero_width_mark_leaves_no_trace_in_the_spacing(mark):
    """A dropped mark glued the private words on either side (``vqevqb``), while the text
    without it gave ``vqe vqb``: every release showed the hidden mark was there. The texts
    of MARKED go through each door together (one door build per list, not per text)."""
    marked = [text.format(mark, mark) for text, _ in MARKED]
    plain = [text for _, text in MARKED]
    for name, release in _doors(seed=11).items():
        for number, (got, expected) in enumerate(zip(release(marked), release(plain), strict=True)):
            assert got == expected, (name, hex(ord(mark)), number)
