"""Gaps a mutation review of the CLI and the text path found (review 14, 131 mutants:
103 killed; each test below fails on a surviving mutant and passes on the code): refusals
before output, what a failed run says it released, JSON sniffing, the spacing around
dropped zero-width marks, batching around long texts, and two privacy properties that
only an unrelated warning line used to catch (secure noise and oov="unk" by default)."""

from __future__ import annotations

import io
import json
import os
import sys

import pytest

from tests.test_cli import FAST, run

#: The hint after a line that is not UTF-8 (nor UTF-16, nor compressed).
OTHER = ": in another encoding? convert it to UTF-8 first (e.g. iconv -f WINDOWS-1252 -t UTF-8)"

CANARY = "zq7canaryxx"


def test_s09_the_cli_draws_secure_noise_unless_seeded(tmp_path, capsys):
    """S09 (every run seeded) was caught only by a warning line in a JSON test."""
    source, report = tmp_path / "in.txt", tmp_path / "report.json"
    source.write_text("the team won\n")
    code, _, err = run(["privatize", source, "-e", 5, "--report", report, *FAST], capsys)
    assert code == 0 and "seed" not in err.lower()
    assert json.loads(report.read_text())["guarantee"]["rng"] == "secure"


def test_a04_oov_words_never_reach_the_output_by_default(tmp_path, capsys):
    """A04 (default --oov passthrough) was caught only by a warning line: under the default
    policy an OOV word is privatized from the UNK point, never released."""
    source = tmp_path / "in.txt"
    source.write_text(f"the {CANARY} won\n" * 20)
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 0 and CANARY not in out and CANARY not in err
    assert out.count("\n") == 20


def test_p10_a_file_beside_stdin_is_still_checked_before_noise(tmp_path, capsys, monkeypatch):
    """P10: with stdin among the inputs the regular files must still be pre-checked."""
    source = tmp_path / "notes.txt"
    source.write_text("the team\nwon the final\nagain\nthe zq7secret won\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    args = ["privatize", source, "-", "-e", 5, "--oov", "raise", "--batch-size", 1, *FAST]
    code, out, err = run(args, capsys)
    assert code == 1 and out == "", out
    assert f"{source}, line 4: out-of-vocabulary token" in err and "zq7secret" not in err


def _failing_stdin(monkeypatch):
    data = b"the hockey team\n" * 3 + b"caf\xe9\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_p17_an_output_written_through_is_reported_when_the_run_fails(
    tmp_path, capsys, monkeypatch
):
    """P17: -o /dev/fd/N is written through: documents written before a failure are released
    and must be counted in the error line and listed by a partial --report."""
    _failing_stdin(monkeypatch)
    target, report = tmp_path / "out.txt", tmp_path / "report.json"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        args = ["privatize", "-e", 300, "-o", f"/dev/fd/{fd}", "--report", report]
        code, _, err = run([*args, "--batch-size", 2, *FAST], capsys)
    finally:
        os.close(fd)
    assert code == 1 and target.read_bytes().count(b"\n") == 2
    assert f"2 documents were already written to /dev/fd/{fd}" in err
    partial = json.loads(report.read_text())
    assert partial["documents"] == 2 and partial["complete"] is False
    assert partial["guarantee"]["tokens_privatized"] == 6


def test_p21_a_failed_run_to_a_replaced_file_reports_nothing_from_stdin(
    tmp_path, capsys, monkeypatch
):
    """P21/P17: -o FILE is replaced only on success: a run failing midway (stdin, so not
    pre-read) released nothing, and no report may claim otherwise."""
    _failing_stdin(monkeypatch)
    out, report = tmp_path / "out.txt", tmp_path / "report.json"
    args = ["privatize", "-e", 300, "-o", out, "--report", report, "--batch-size", 2, *FAST]
    code, _, err = run(args, capsys)
    assert code == 1 and err.endswith(
        f"stdin, line 4 is not valid UTF-8 (byte offset 3){OTHER}\n"
    ), err
    assert not out.exists() and not report.exists()


def test_p33_an_uninstalled_spacy_model_is_named(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("the team\n")
    args = ["privatize", source, "-e", 5, "--spacy-model", "no_such_pipeline_zz", *FAST]
    code, out, err = run(args, capsys)
    assert code == 1 and out == ""
    assert err == (
        "dxp: error: cannot load the spaCy pipeline 'no_such_pipeline_zz': is it installed?\n"
    )


def _digits_only(monkeypatch):
    from tests.door_fixtures import register

    register(monkeypatch, "token_filters", "digits.v1", lambda token: token.text.isdigit())


def test_p34_the_pre_pass_checks_only_the_selected_tokens(tmp_path, capsys, monkeypatch):
    """P34: an OOV word a selection leaves out is released raw, not refused, under
    --oov raise: the pre-pass must select as the run does."""
    _digits_only(monkeypatch)
    source = tmp_path / "in.txt"
    source.write_text("zq7secret 42\n")
    args = ["privatize", source, "-e", 5, "--oov", "raise", "--token-filter", "digits.v1"]
    code, out, err = run([*args, *FAST], capsys)
    assert code == 0, err
    assert out.startswith("zq7secret ")  # not selected: released raw, as documented


def test_p39_the_oov_position_counts_the_selected_tokens(tmp_path, capsys, monkeypatch):
    """P39: under a selection, the OOV error's character is that of the selected token."""
    _digits_only(monkeypatch)
    source = tmp_path / "in.txt"
    source.write_text("the team 98765432123456\n")
    args = ["privatize", source, "-e", 5, "--oov", "raise", "--token-filter", "digits.v1"]
    code, out, err = run([*args, *FAST], capsys)
    assert code == 1 and out == ""
    assert err == (
        f"dxp: error: {source}, line 1: out-of-vocabulary token at character 10 of the line "
        "(counted from 1) under --oov raise\n"
    )


def test_c23_json_errors_never_quote_input_with_the_pure_python_scanner(
    tmp_path, capsys, monkeypatch
):
    """C23: the pure-Python scanner (no C accelerator) puts the input in the message."""
    import json.decoder
    import json.scanner

    monkeypatch.setattr(json.decoder, "scanstring", json.decoder.py_scanstring)
    monkeypatch.setattr(json.scanner, "make_scanner", json.scanner.py_make_scanner)
    monkeypatch.setattr(json.decoder, "make_scanner", json.scanner.py_make_scanner, raising=False)
    source = tmp_path / "in.jsonl"
    source.write_bytes(b'{"text": "secret \\Q"}\n')
    code, out, err = run(["privatize", source, "-e", 5, *FAST], capsys)
    assert code == 1 and out == ""
    assert "'Q'" not in err and "not valid JSON (Invalid \\escape, character" in err, err


def test_c05_jsonl_keeps_crlf_line_endings(tmp_path, capsys):
    """C05: a CRLF JSONL file gives CRLF JSONL (the ending is layout, kept as read)."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b'{"text": "the team"}\r\n{"text": "won"}\r\n')
    code, _, err = run(["privatize", source, "-e", 300, "-o", out, *FAST], capsys)
    assert code == 0, err
    lines = out.read_bytes().split(b"\n")
    assert lines[0].endswith(b"}\r") and lines[1].endswith(b"}\r") and lines[2] == b""


def test_c08_a_whitespace_only_jsonl_line_is_blank(tmp_path, capsys):
    """C08: a line of spaces in JSONL is a blank line (kept), not a JSON error."""
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b'{"text": "the team"}\n   \n{"text": "won"}\n')
    code, _, err = run(["privatize", source, "-e", 300, "-o", out, *FAST], capsys)
    assert code == 0, err
    assert out.read_bytes().split(b"\n")[1] == b"" and out.read_bytes().count(b"\n") == 3


def test_c15_a_json_line_later_in_text_is_text(tmp_path, capsys):
    """C15: only the opening lines decide; a JSON-looking line 3 of prose is text."""
    source = tmp_path / "in.txt"
    source.write_text('the team won\nagain\n{"text": "the team"}\n')
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 0 and out.count("\n") == 3, err


def test_c18_a_list_opening_its_first_object_alone_on_line_one_is_refused(tmp_path, capsys):
    """C18: pretty-printed records whose first line is "[{" (the object's keys below)."""
    source = tmp_path / "in.txt"
    source.write_text('[{\n  "text": "the team",\n  "id": 1\n}]\n')
    code, out, err = run(["privatize", source, "-e", 300, *FAST], capsys)
    assert code == 1 and out == ""
    assert f"{source}, line 1 looks like the start of a JSON document" in err, err


def _held(path, flags):
    return os.open(path, flags | os.O_CREAT, 0o600)


@pytest.mark.parametrize("descriptor", ["-o", "--report"])
def test_t05_t06_the_file_behind_a_descriptor_is_the_other_target(tmp_path, capsys, descriptor):
    """T05/T06: -o /dev/fd/N holding file F and --report F (or the other way round): one
    would overwrite the other, so the run is refused before writing either."""
    source, shared = tmp_path / "in.txt", tmp_path / "shared.txt"
    source.write_text("the team\n")
    fd = _held(shared, os.O_WRONLY)
    targets = {"-o": shared, "--report": shared, descriptor: f"/dev/fd/{fd}"}
    try:
        args = ["privatize", source, "-e", 300, *(x for kv in targets.items() for x in kv)]
        code, _, err = run([*args, *FAST], capsys)
    finally:
        os.close(fd)
    assert code == 1 and "are the same file or descriptor" in err, err
    assert shared.read_bytes() == b""


def test_t08_a_read_only_report_descriptor_is_refused_before_any_output(tmp_path, capsys):
    """T08: --report /dev/fd/N open read-only must be refused before anything is released
    (the mutant writes every document to stdout, then fails writing the report)."""
    source, held = tmp_path / "in.txt", tmp_path / "held.txt"
    source.write_text("the team\nwon\n")
    held.write_text("")
    fd = os.open(held, os.O_RDONLY)
    try:
        code, out, err = run(
            ["privatize", source, "-e", 300, "--report", f"/dev/fd/{fd}", *FAST], capsys
        )
    finally:
        os.close(fd)
    assert code == 1 and out == ""
    assert err == f"dxp: error: cannot write /dev/fd/{fd}: not open for writing\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_p18_a_complete_report_that_cannot_be_written(tmp_path, capsys):
    """P18/P22: every document went to stdout, then the (complete) report failed: the line
    said only how many documents went out, not that their report is missing."""
    source = tmp_path / "in.txt"
    source.write_text("the team\nwon\n")
    code, out, err = run(["privatize", source, "-e", 300, "--report", "/dev/full", *FAST], capsys)
    assert code == 1 and out.count("\n") == 2
    assert err == (
        "dxp: error: writing /dev/full: No space left on device; 2 documents were already "
        "written to stdout "
        "(the report of them could not be written)\n"
    )


def _seeded_mechanism(seed=3):
    import dxp_plugins as dxp

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=2000)
    return dxp.make_mechanism("madlib", table, epsilon=0.5, random_state=seed)


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
def test_x02_a_dropped_mark_ending_the_text_is_not_a_crash():
    """X02: a pictograph then an invisible mark at the very end (spaCy splits the mark
    off): the look past dropped marks must stop at the last token."""
    from dxp_plugins.text import privatize_text

    marked = privatize_text("\U0001f600\u200b", _seeded_mechanism()).text
    plain = privatize_text("\U0001f600", _seeded_mechanism()).text
    assert marked == plain


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
@pytest.mark.parametrize("mark", ["\u200b", "\u200d", "\u00ad"])
def test_x03_a_dropped_mark_before_a_space_leaves_no_trace(mark):
    """X03: a dropped mark followed by whitespace is not "written together" with the next
    word: the output must equal the unmarked text's (one space, not two)."""
    from dxp_plugins.text import privatize_text

    for seed in range(5):
        marked = privatize_text(f"\U0001f600{mark} \U0001f600", _seeded_mechanism(seed)).text
        plain = privatize_text("\U0001f600 \U0001f600", _seeded_mechanism(seed)).text
        assert marked == plain


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
def test_x10_a_long_text_goes_through_the_given_pipeline_whole():
    """X10: with ``nlp`` a long text is read whole by it (its max_length applies), never
    cut into pieces for the public tokenizer."""
    import spacy

    from dxp_plugins.errors import TextTooLongError
    from dxp_plugins.text import PIECE_CHARS, check_texts, privatize_texts

    nlp = spacy.blank("en")
    nlp.max_length = PIECE_CHARS + 10
    text = "the team won " * (PIECE_CHARS // 13 + 10)
    mechanism = _seeded_mechanism()
    with pytest.raises(TextTooLongError):
        check_texts([text], mechanism, nlp=nlp)
    with pytest.raises(TextTooLongError):
        list(privatize_texts([text], mechanism, nlp=nlp))


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
def test_x12_texts_around_a_long_one_are_each_released_once(monkeypatch):
    """X12: a batch flushed before a long text must start afresh: each text is released
    (and charged) exactly once, in order."""
    import dxp_plugins.text as text_module

    monkeypatch.setattr(text_module, "PIECE_CHARS", 64)
    texts = ["the team", "won the final " * 10, "again", "the team"]
    mechanism = _seeded_mechanism()
    results = list(text_module.privatize_texts(texts, mechanism, batch_size=10))
    assert len(results) == len(texts)
    assert [r.guarantee.tokens_privatized for r in results] == [2, 30, 1, 2]
    assert mechanism.accountant.tokens_privatized == 35


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
def test_x14_each_mechanism_call_holds_batch_size_texts(monkeypatch):
    """X14: batch_size texts per mechanism call (seeded draws depend on it)."""
    from dxp_plugins.text import privatize_texts

    mechanism = _seeded_mechanism()
    sizes, original = [], mechanism.privatize_batch

    def spy(docs, *args, **kwargs):
        sizes.append(len(docs))
        return original(docs, *args, **kwargs)

    monkeypatch.setattr(mechanism, "privatize_batch", spy)
    list(privatize_texts(["the team"] * 5, mechanism, batch_size=2))
    assert sizes == [2, 2, 1]


@pytest.mark.filterwarnings("ignore::dxp_plugins.errors.SeededRandomnessWarning")
def test_x22_check_texts_names_a_too_long_text_by_its_own_index():
    """X22: the TextTooLongError of check_texts names the caller's text, past batch 1."""
    import spacy

    from dxp_plugins.errors import TextTooLongError
    from dxp_plugins.text import check_texts

    nlp = spacy.blank("en")
    nlp.max_length = 40
    texts = ["the team", "won", "the team won the final " * 3]
    with pytest.raises(TextTooLongError) as error:
        check_texts(texts, _seeded_mechanism(), batch_size=2, nlp=nlp)
    assert error.value.document == 2
