"""Guarantee records and the accountant (PRIVACY.md 12-13)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import warnings

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins._revision import library_version
from dxp_plugins.guarantee import Accountant, Guarantee
from tests.fixtures import BUILTIN_MECHANISMS, FAST_OPTIONS


def test_record_names_everything_a_release_guarantees(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=4.0)
    mech.privatize(["hockey", "qzxqzxunseen", "team"])
    record = mech.last_guarantee
    assert record == Guarantee(
        mechanism="madlib",
        epsilon=4.0,
        metric="euclidean",
        embeddings=glove_5k.fingerprint,
        vocab_size=5000,
        tokens_privatized=3,
        tokens_passed_through=0,
        oov_policy="unk",
        rng="secure",
        library_version=library_version(),
    )
    assert record.library_version.startswith(dxp.__version__)  # "+g<commit>" in a clone
    assert record.spend == 12.0
    assert json.loads(json.dumps(record.to_dict()))["spend"] == 12.0
    assert "4*d-private" in record.statement
    assert "each of 3 privatized tokens is" in record.statement
    assert "; 0 tokens passed through" in record.statement
    single = dataclasses.replace(record, tokens_privatized=1, tokens_passed_through=1)
    assert "the 1 privatized token is" in single.statement
    assert "; 1 token passed through" in single.statement
    # doc._.dxp_guarantee is this dict: it reads like the CLI report, and loads back
    assert record.to_dict()["statement"] == record.statement
    assert dxp.Guarantee.from_dict(record.to_dict()) == record


def test_merge_adds_counts_and_refuses_different_settings(glove_5k):
    a = dxp.Madlib(glove_5k, epsilon=2.0).guarantee(3, 1)
    b = dxp.Madlib(glove_5k, epsilon=2.0).guarantee(2, 0)
    merged = a.merge(b)
    assert (merged.tokens_privatized, merged.tokens_passed_through) == (5, 1)
    assert merged.releases == 2 and merged.spend == 10.0
    with pytest.raises(ValueError, match="epsilon"):
        a.merge(dxp.Madlib(glove_5k, epsilon=3.0).guarantee(1))
    assert Guarantee.combine([]) is None


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("mechanism", "tem"),
        ("epsilon", 3.0),
        ("metric", "angular"),
        ("embeddings", "0" * 64),
        ("vocab_size", 4999),
        ("oov_policy", "passthrough"),
        ("rng", "seeded"),
        ("selection", "pos NOUN"),
    ],
)
def test_merge_refuses_every_setting_that_changes_the_meaning(glove_5k, field, other):
    """A merged record states one mechanism, metric, table, OOV policy, RNG mode and
    selection: records differing in any of them must not combine into one that hides it
    (e.g. ``Guarantee.combine`` over ``doc._.dxp_guarantee`` dicts of different runs)."""
    record = dxp.Madlib(glove_5k, epsilon=2.0).guarantee(3, 1)
    changed = dataclasses.replace(record, **{field: other})
    for first, second in ((record, changed), (changed, record)):
        with pytest.raises(ValueError, match=f"different {field}"):
            first.merge(second)
        with pytest.raises(ValueError, match=f"different {field}"):
            Guarantee.combine([first, first, second])


def test_accountant_sums_across_mechanisms_and_releases(glove_5k):
    accountant = Accountant()
    madlib_a = dxp.Madlib(glove_5k, epsilon=1.5, accountant=accountant)
    madlib_b = dxp.Madlib(glove_5k, epsilon=0.5, accountant=accountant)
    madlib_a.privatize(["a", "b"])
    madlib_b.privatize_ids(np.arange(4))
    madlib_a.privatize_batch([["c"], ["d", "e"]])
    assert accountant.spent == pytest.approx(1.5 * 2 + 0.5 * 4 + 1.5 * 3)
    assert accountant.tokens_privatized == 9 and accountant.releases == 3


def test_cap_refuses_before_any_noise_is_drawn(glove_5k):
    ids = np.arange(50)
    capped = dxp.Madlib(glove_5k, epsilon=1.0, random_state=3, accountant=Accountant(cap=60))
    with pytest.raises(dxp.BudgetExceededError, match="exceed"):
        capped.privatize_ids(np.arange(61))
    assert capped.accountant.spent == 0
    fresh = dxp.Madlib(glove_5k, epsilon=1.0, random_state=3)
    # Same stream position as a fresh generator: the refused release drew nothing.
    np.testing.assert_array_equal(capped.privatize_ids(ids), fresh.privatize_ids(ids))
    with pytest.raises(dxp.BudgetExceededError):
        capped.privatize_ids(np.arange(11))
    assert capped.accountant.remaining == 10


def test_check_refuses_like_charge_and_charges_nothing():
    accountant = Accountant(cap=2.0)
    accountant.check(2.0, unit="u")
    assert (accountant.spent, accountant.releases, accountant.unit) == (0.0, 0, None)
    with pytest.raises(dxp.BudgetExceededError):
        accountant.check(2.5)
    accountant.charge(1.0, 1, unit="u")
    with pytest.raises(ValueError, match="per u"):
        accountant.check(0.5, unit="v")
    with pytest.raises(ValueError, match="finite"):
        accountant.check(float("nan"))


def test_cap_tolerates_rounding_only():
    """The cap allows float rounding of a sum (1e-12 relative), not a visible overrun."""
    accountant = Accountant(cap=100.0)
    for _ in range(10):
        accountant.charge(0.1, 1)
    accountant.charge(99.0, 1)  # 100.0 up to the rounding of ten 0.1s
    with pytest.raises(dxp.BudgetExceededError):
        accountant.charge(100.0 * 1e-6, 1)
    assert accountant.spent == pytest.approx(100.0)


@pytest.mark.parametrize("cap", [-1.0, float("nan"), float("inf"), True, np.True_, 10**400])
def test_cap_validation(cap):
    with pytest.raises(ValueError):
        Accountant(cap=cap)


def test_accountant_pickles():
    accountant = Accountant(cap=5)
    accountant.charge(2.0, 2)
    clone = pickle.loads(pickle.dumps(accountant))
    assert clone.spent == 2.0 and clone.remaining == 3.0


@pytest.mark.parametrize("spend", [float("nan"), -5.0, float("inf"), np.True_, 10**400])
def test_charge_refuses_amounts_that_would_disable_the_cap(spend):
    accountant = Accountant(cap=1.0)
    with pytest.raises(ValueError, match="spend"):
        accountant.charge(spend, 1)
    assert accountant.spent == 0 and accountant.releases == 0
    with pytest.raises(dxp.BudgetExceededError):
        accountant.charge(100.0, 100)


def test_epsilon_is_validated_on_every_assignment(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=1.0, accountant=Accountant(cap=10))
    for bad in (float("nan"), -1.0, 0.0, True):
        with pytest.raises((TypeError, ValueError)):
            mech.epsilon = bad
    assert mech.epsilon == 1.0
    with pytest.raises(dxp.BudgetExceededError):
        mech.privatize_ids(np.arange(11))  # the cap still holds


def test_copies_share_one_ledger(glove_5k):
    accountant = Accountant(cap=5)
    assert copy.copy(accountant) is accountant and copy.deepcopy(accountant) is accountant
    mech = dxp.Madlib(glove_5k, epsilon=1.0, accountant=accountant)
    copy.deepcopy(mech).privatize_ids(np.arange(3))
    assert accountant.spent == 3.0
    with pytest.raises(dxp.BudgetExceededError):
        copy.deepcopy(mech).privatize_ids(np.arange(3))


def test_a_pickled_copy_of_a_capped_ledger_fails_closed(glove_5k):
    """Each copy enforcing the cap on its own would not bound their total: refuse."""
    capped = Accountant(cap=5)
    capped.charge(1.0, 1)
    copy_ = pickle.loads(pickle.dumps(capped))
    assert (copy_.spent, copy_.cap) == (1.0, 5.0) and "refuses" in repr(copy_)
    with pytest.raises(dxp.BudgetExceededError, match="made by pickling"):
        copy_.charge(1.0, 1)
    worker_mech = pickle.loads(pickle.dumps(dxp.Madlib(glove_5k, epsilon=1.0, accountant=capped)))
    with pytest.raises(dxp.BudgetExceededError):
        worker_mech.privatize_ids(np.arange(2))
    capped.charge(4.0, 4)  # the original still charges up to its cap
    uncapped = pickle.loads(pickle.dumps(Accountant()))
    with pytest.warns(dxp.PrivacyWarning, match="ledger it was copied from never sees it"):
        uncapped.charge(2.0, 2)  # a copy without a cap records its own releases, and says so
    assert uncapped.spent == 2.0


def test_refuse_copies_makes_an_uncapped_ledgers_copies_fail_closed(glove_5k):
    """sklearn review 29 F2: with process workers (n_jobs) an uncapped ledger's copies
    recorded releases the original never saw, and the copy's warning stayed in the
    worker; a cap was the only way to make copies refuse. ``refuse_copies=True`` does it
    without one; the original charges as before, and a resumed ledger keeps the option."""
    import concurrent.futures
    import json
    import multiprocessing

    ledger = Accountant(refuse_copies=True)
    madlib = dxp.Madlib(glove_5k, 1.0, accountant=ledger)
    madlib.privatize_ids(np.arange(3))
    assert (ledger.spent, ledger.refuse_copies) == (3.0, True)
    copy_ = pickle.loads(pickle.dumps(madlib))
    with pytest.raises(dxp.BudgetExceededError, match=r"refuse_copies=True\) is a copy"):
        copy_.privatize_ids(np.arange(2))
    assert "a copy: refuses charges" in repr(copy_.accountant)
    with pytest.raises(dxp.BudgetExceededError, match="copy that refuses charges"):
        copy_.accountant.to_dict()
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        refused = pool.submit(_release_in_a_worker, madlib).result(timeout=300)
    assert refused == "BudgetExceededError" and ledger.releases == 1
    resumed = Accountant.resume(json.loads(json.dumps(ledger.to_dict())))
    assert resumed.refuse_copies and resumed.spent == 3.0 and not resumed.is_copy
    old = {k: v for k, v in ledger.to_dict().items() if k != "refuse_copies"}
    assert not Accountant.resume(old).refuse_copies  # a record saved before the option
    with pytest.raises(TypeError, match="refuse_copies must be True or False"):
        Accountant(refuse_copies=1)
    uncapped = pickle.loads(pickle.dumps(Accountant()))
    with pytest.warns(dxp.PrivacyWarning):
        uncapped.charge(1.0, 1)  # without the option, as before: recorded and warned


def _release_in_a_worker(madlib):
    try:
        madlib.privatize_ids(np.arange(2))
    except dxp.BudgetExceededError as error:
        return type(error).__name__
    return "released"


def test_a_copy_warning_made_an_error_stops_every_release_of_that_copy():
    """sklearn review 29 F2: with PrivacyWarning made an error (which scikit-learn passes
    on to its workers), the first release of a copy raised, and the copy was marked as
    warned before the warning was raised: the next release in that worker went through
    silently, recorded only there."""
    copy_ = pickle.loads(pickle.dumps(Accountant()))
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.PrivacyWarning)
        for _ in range(2):
            with pytest.raises(dxp.PrivacyWarning, match=r"refuse_copies=True\), or a cap"):
                copy_.charge(1.0, 1)
    with pytest.warns(dxp.PrivacyWarning):
        copy_.charge(1.0, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.PrivacyWarning)
        copy_.charge(1.0, 1)  # said once per copy and process, as before


def test_only_a_ledger_passed_in_warns_when_a_copy_records_a_release(glove_5k):
    """A worker's copy of an uncapped ledger records releases its original never sees
    (data-pipeline review F3: a parent ledger stayed at 0 while workers spent 42,066): say
    so, once per copy and process; the default ledger nobody passed in stays quiet."""
    from dxp_plugins import TextPrivatizer
    from dxp_plugins.lplp.release import LPLPRelease

    quiet = [
        pickle.loads(pickle.dumps(dxp.Madlib(glove_5k, 1.0))).privatize_ids,
        pickle.loads(pickle.dumps(TextPrivatizer(epsilon=1.0, embeddings=glove_5k).fit([]))),
        pickle.loads(pickle.dumps(LPLPRelease(np.arange(4), epsilon=1.0))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.PrivacyWarning)
        quiet[0](np.arange(2))
        quiet[1].transform(["the hockey team"])
        quiet[2].release(np.ones((2, 4), dtype=int))
    blob = pickle.dumps(dxp.Madlib(glove_5k, 1.0, accountant=Accountant()))
    passed = pickle.loads(blob)
    with pytest.warns(dxp.PrivacyWarning, match="never sees it, so that total leaves it out"):
        passed.privatize_ids(np.arange(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.PrivacyWarning)
        passed.privatize_ids(np.arange(2))  # once
        # once per ledger and process, not per copy: n_jobs unpickles one per fit (D4)
        pickle.loads(blob).privatize_ids(np.arange(2))
    assert passed.accountant.spent == 4.0 and not Accountant().is_copy


def test_process_workers_cannot_spend_a_cap_several_times():
    """cross_val_score(n_jobs=2) pickles the pipeline into worker processes: with a capped
    accountant it must refuse, not let 3 folds x 2 releases spend 6 under a cap of 2.5."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline

    rng = np.random.default_rng(0)
    counts, labels = rng.poisson(1.0, size=(60, 8)), rng.integers(0, 2, 60)
    accountant = Accountant(cap=2.5)
    pipe = make_pipeline(dxp.LPLPTransformer(accountant=accountant), LogisticRegression())
    with pytest.raises(dxp.BudgetExceededError):
        cross_val_score(pipe, counts, labels, cv=3, n_jobs=2, error_score="raise")
    assert accountant.spent == 0


def test_a_restricted_selection_is_recorded_and_stated_as_unprotected(glove_5k):
    every = dxp.Madlib(glove_5k, epsilon=2.0).guarantee(3, 1)
    assert every.selection == "every word" and "raw text" not in every.statement
    nouns = dataclasses.replace(every, selection="pos NOUN")
    assert "decided from the raw text (pos NOUN)" in nouns.statement
    with pytest.raises(ValueError, match="selection"):
        every.merge(nouns)


def test_a_forked_child_refuses_to_charge_a_capped_ledger():
    """fork copies the ledger without pickling (spaCy's n_process on Linux): fail closed."""
    capped, uncapped = Accountant(cap=5), Accountant()
    pid = os.fork()
    if pid == 0:  # child: whatever happens, it never returns into pytest
        code = 1
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                uncapped.charge(1.0, 1)  # a copy without a cap records, and says so
            code = 2 if [type(w.message) for w in caught] != [dxp.PrivacyWarning] else 4
            capped.charge(1.0, 1)
        except dxp.BudgetExceededError:
            code = 3 if code == 4 else code
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3
    capped.charge(1.0, 1)  # the parent's own ledger is unaffected


def test_a_forked_child_handed_the_owners_pid_still_refuses_a_capped_ledger():
    """Pids are reused: a forked child handed its ancestor's pid was taken for the owner,
    so its copy of a capped ledger charged on, spending the cap a second time (seeded
    reproducibility review F3); a fork hook counts forks, so it is a copy whatever pid."""
    capped, owner = Accountant(cap=5), os.getpid()
    pid = os.fork()
    if pid == 0:  # child: whatever happens, it never returns into pytest
        code = 1
        try:
            os.getpid = lambda: owner  # type: ignore[assignment]  # the child exits below
            capped.charge(1.0, 1)
        except dxp.BudgetExceededError:
            code = 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3


def test_an_accountant_adds_spend_in_one_unit_only(glove_5k):
    """Madlib's epsilon is per Euclidean unit, BRR's per flipped bit: their sum means
    nothing, so the ledger refuses the second unit (with or without a cap)."""
    for cap in (None, 1000.0):
        accountant = Accountant(cap=cap)
        dxp.Madlib(glove_5k, epsilon=2.0, accountant=accountant).privatize_ids(np.arange(3))
        euclidean_tem = dxp.TEM(glove_5k.most_frequent(500), epsilon=2.0, accountant=accountant)
        euclidean_tem.privatize_ids(np.arange(2))  # same metric, same named table: adds up
        assert accountant.spent == 10.0 and "euclidean" in str(accountant.unit)
        with pytest.raises(ValueError, match="cannot be added"):
            dxp.BRR(glove_5k, epsilon=0.5, accountant=accountant).privatize_ids(np.arange(2))
        with pytest.raises(ValueError, match="cannot be added"):
            angular = dxp.TEM(glove_5k, 2.0, metric="angular", gamma=1.0, accountant=accountant)
            angular.privatize_ids([0])
        assert accountant.spent == 10.0 and accountant.releases == 2


def test_a_refused_unit_says_what_to_keep_apart(glove_5k):
    """An LPLP ledger refusing another N once advised equivalent_epsilon, a word-level tool."""
    from dxp_plugins.lplp.release import LPLPRelease

    counts = np.array([[1, 2, 0, 1]])
    accountant = Accountant()
    LPLPRelease([0, 0, 1, 1], epsilon=1.0, accountant=accountant).release(counts)
    with pytest.raises(ValueError, match=r"cannot be added to it\. Keep one Accountant per n_c"):
        LPLPRelease([0, 0, 1, 1], epsilon=1.0, n_changes=2, accountant=accountant).release(counts)
    with pytest.raises(ValueError, match="Accountant for word-level releases and one for LPLP"):
        dxp.Madlib(glove_5k, 1.0, accountant=accountant).privatize_ids([0])
    words = Accountant()
    dxp.Madlib(glove_5k, 1.0, accountant=words).privatize_ids([0])
    with pytest.raises(ValueError, match="Accountant for word-level releases and one for LPLP"):
        LPLPRelease([0, 0, 1, 1], epsilon=1.0, accountant=words).release(counts)
    with pytest.raises(ValueError, match="per metric and embeddings, or convert"):
        dxp.BRR(glove_5k, epsilon=0.5, accountant=words).privatize_ids([0])
    assert accountant.releases == words.releases == 1


def test_tables_of_different_files_under_one_name_are_different_units(glove_5k):
    accountant = Accountant()
    dxp.Madlib(glove_5k.most_frequent(100), 1.0, accountant=accountant).privatize_ids([0])
    words, vectors = glove_5k.words[100:200], glove_5k.vectors[100:200]
    other = dxp.EmbeddingTable(words, vectors, name=glove_5k.name)  # same name, other rows
    with pytest.raises(ValueError, match="cannot be added"):
        dxp.Madlib(other, 1.0, accountant=accountant).privatize_ids([0])


def test_an_accountant_pickled_by_an_older_version_still_charges():
    old = Accountant.__new__(Accountant)
    old.__setstate__({"cap": None, "spent": 2.0, "tokens_privatized": 2, "releases": 1})
    with pytest.warns(dxp.PrivacyWarning, match="is a copy"):  # passed in, or not: unknown
        old.charge(1.0, 1, unit="unit of euclidean distance")
    assert old.spent == 3.0 and old.unit == "unit of euclidean distance"


class _ReassigningAccountant(Accountant):
    """Stands in for another thread assigning ``mechanism.epsilon`` right after the charge."""

    mechanism = None

    def charge(self, spend, tokens, unit=None):
        super().charge(spend, tokens, unit)
        self.mechanism.epsilon = 300.0


@pytest.mark.parametrize("kind", BUILTIN_MECHANISMS)
@pytest.mark.parametrize("door", ["privatize_ids", "privatize_batch"])
def test_noise_and_record_use_the_epsilon_that_was_charged(glove_5k, kind, door):
    """epsilon is read once per release: an assignment during the release (another thread)
    changes neither its noise nor its record, only the next release."""
    accountant = _ReassigningAccountant()
    params = FAST_OPTIONS.get(kind, {})
    mech = dxp.make_mechanism(kind, glove_5k, epsilon=0.05, accountant=accountant, **params)
    accountant.mechanism = mech
    word = int(glove_5k.lookup(["good"])[0])
    if door == "privatize_ids":
        out = mech.privatize_ids(np.full(1000, word))
    else:
        out = glove_5k.lookup(mech.privatize_batch([["good"] * 500, ["good"] * 500])[0][0])
    assert (out == word).mean() < 0.05  # drawn at 0.05, as charged (at 300: all "good")
    assert accountant.spent == pytest.approx(0.05 * 1000)
    assert mech.last_guarantee.epsilon == 0.05  # recorded as charged
    assert mech.last_guarantee.spend == pytest.approx(accountant.spent)
    assert mech.epsilon == 300.0  # the assignment holds from the next release on


def _record_dict(glove_5k, **changes):
    mech = dxp.Madlib(glove_5k, 1.0)
    mech.privatize(["good", "day"])
    return {**mech.last_guarantee.to_dict(), **changes}


@pytest.mark.parametrize(
    "change",
    [
        {"epsilon": -5.0},
        {"epsilon": 0.0},
        {"epsilon": float("nan")},
        {"epsilon": float("inf")},
        {"epsilon": "1"},
        {"epsilon": True},
        {"tokens_privatized": -100},
        {"tokens_privatized": 2.5},
        {"tokens_privatized": True},
        {"tokens_passed_through": -1},
        {"words_passed_through": -1},
        {"vocab_size": "5000"},
        {"releases": -1},
        {"rng": "quantum"},
        {"oov_policy": "drop"},
        {"mechanism": None},
        {"selection": 3},
        {"library_version": 1.0},
        {"spend": 0.0001},
        {"statement": "private"},
        {"hacked": 1},
    ],
)
def test_from_dict_refuses_malformed_records(glove_5k, change):
    """A record is read back to total releases (``Guarantee.combine`` over the docs of
    ``nlp.pipe(n_process=2)``): a malformed or tampered one must not lower the total."""
    (name,) = change
    with pytest.raises((ValueError, TypeError), match=name):
        Guarantee.from_dict(_record_dict(glove_5k, **change))


def test_records_are_checked_when_built_and_read_back_whole(glove_5k):
    record = dxp.Madlib(glove_5k, 2.0).guarantee(3, 1)
    with pytest.raises(ValueError, match="tokens_privatized"):
        dataclasses.replace(record, tokens_privatized=-3)  # would lower a merged spend
    with pytest.raises(ValueError, match="library_version"):
        Guarantee.from_dict({k: v for k, v in record.to_dict().items() if k != "library_version"})
    as_json = json.loads(json.dumps(record.to_dict()))
    assert Guarantee.from_dict(as_json) == record
    older = {**as_json, "library_version": "0.0.1", "statement": "worded by 0.0.1"}
    assert Guarantee.from_dict(older).library_version == "0.0.1"  # wording may differ
    with pytest.raises(ValueError, match="spend"):
        Guarantee.from_dict({**older, "spend": 1.0})  # the spend may not


def test_merge_refuses_records_of_another_kind_or_library_version(glove_5k):
    record = dxp.Madlib(glove_5k, 2.0).guarantee(3, 1)
    lplp = dxp.LPLPTransformer(epsilon=2.0).fit(np.ones((2, 4), dtype=int)).guarantee(2)
    for first, second in ((record, lplp), (lplp, record)):
        with pytest.raises(TypeError, match="cannot merge"):
            first.merge(second)
    with pytest.raises(ValueError, match="different library_version"):
        record.merge(dataclasses.replace(record, library_version="0.0.1"))


@pytest.mark.parametrize("tokens", [[], [[]], [[], []]])
def test_a_release_of_no_token_is_not_charged(glove_5k, tokens):
    """PRIVACY.md 22: nothing to privatize spends nothing and counts no release, so a
    capped copy (which refuses every charge) does not fail on it either."""
    accountant = Accountant()
    mech = dxp.Madlib(glove_5k, 1.0, accountant=accountant)
    mech.privatize_batch(tokens)
    mech.privatize_ids(np.array([], dtype=np.int64))
    assert mech.last_guarantee.releases == 0 and mech.last_guarantee.spend == 0
    assert (accountant.spent, accountant.releases, accountant.unit) == (0.0, 0, None)
    copy_ = pickle.loads(pickle.dumps(Accountant(cap=10.0)))
    capped = dxp.Madlib(glove_5k, 1.0, accountant=copy_)
    capped.privatize_batch(tokens)
    capped.privatize_ids([])
    with pytest.raises(dxp.BudgetExceededError):
        capped.privatize_ids([1])


def test_the_generator_is_keyed_before_the_charge(glove_5k, monkeypatch):
    """A release that cannot draw noise (no OS entropy) spends nothing."""
    from dxp_plugins import _random

    def no_entropy():
        raise OSError("no entropy")

    accountant = Accountant()
    monkeypatch.setattr(_random, "_secure_generator", no_entropy)
    with pytest.raises(OSError, match="entropy"):
        dxp.Madlib(glove_5k, 1.0, accountant=accountant).privatize(["good"])
    assert (accountant.spent, accountant.releases) == (0.0, 0)


def test_the_passthrough_statement_says_oov_tokens_are_unprotected(glove_5k):
    with pytest.warns(dxp.PrivacyWarning):
        mech = dxp.Madlib(glove_5k, 1.0, oov="passthrough")
    statement = mech.guarantee(2, 1).statement
    assert (
        'Out-of-vocabulary tokens were released unchanged and unprotected (oov="passthrough"): '
        "which tokens those are was decided from the raw text, so the bound holds between "
        "texts that have the same out-of-vocabulary tokens in the same places." in statement
    )
    assert "out-of-vocabulary" not in dxp.Madlib(glove_5k, 1.0).guarantee(2, 1).statement.lower()


def test_statements_never_round_epsilon_or_the_total_down(glove_5k):
    record = dxp.Madlib(glove_5k, 2.0000004).guarantee(3)
    assert "2.0000004*d-private" in record.statement
    assert "(total 6.0000012 per unit distance)" in record.statement  # 2.0000004 x 3
    # The total is the decimal product of the numbers shown, not the binary one
    # (45719.100000000006) that the float ``spend`` keeps.
    big = dxp.Madlib(glove_5k, 5.9).guarantee(7749)
    assert big.spend == 45719.100000000006 and "(total 45719.1 per unit" in big.statement
    assert "(total 0.00003 per unit" in dxp.Madlib(glove_5k, 1e-5).guarantee(3).statement
    assert "10*d-private" in dxp.Madlib(glove_5k, 10.0).guarantee(36).statement
    assert "(total 360 per unit distance)" in dxp.Madlib(glove_5k, 10.0).guarantee(36).statement


def test_printing_a_guarantee_shows_its_statement_and_repr_its_fields(glove_5k):
    record = dxp.Madlib(glove_5k, 2.0).guarantee(3)
    assert str(record) == f"{record}" == record.statement
    assert repr(record).startswith("Guarantee(mechanism='madlib', epsilon=2.0, ")


def test_accountant_figures_are_never_rounded_down():
    """``:g`` showed a spend of 1,234,564 as 1.23456e+06 in the repr and in refusals."""
    accountant = Accountant(cap=1234564.5)
    accountant.charge(1234564.0, 1)
    assert repr(accountant) == "Accountant(spent=1234564, releases=1, cap=1234564.5)"
    with pytest.raises(dxp.BudgetExceededError) as refusal:
        accountant.charge(0.75, 1)
    assert "release of 0.75 would exceed the privacy budget cap 1234564.5 (1234564 already" in str(
        refusal.value
    )


def test_cap_is_validated_and_the_totals_are_read_only():
    accountant = Accountant(cap=1.0)
    for bad in (float("nan"), -1.0, float("inf"), True):
        with pytest.raises(ValueError, match="cap"):
            accountant.cap = bad
    assert accountant.cap == 1.0
    with pytest.raises(dxp.BudgetExceededError):
        accountant.charge(1000.0, 1000)  # the cap still holds
    for name in ("spent", "tokens_privatized", "releases", "unit"):
        with pytest.raises(AttributeError):
            setattr(accountant, name, 0)
    accountant.cap = 5
    accountant.charge(2.0, 2, unit="u")
    accountant.cap = None
    accountant.charge(10.0, 1, unit="u")
    assert (accountant.spent, accountant.tokens_privatized, accountant.releases) == (12.0, 3, 2)
    copy_ = pickle.loads(pickle.dumps(accountant))
    assert (copy_.spent, copy_.releases, copy_.unit, copy_.cap) == (12.0, 2, "u", None)


def test_a_fork_while_a_lock_is_held_leaves_the_child_working():
    """os.fork copies a lock another thread holds (mid-charge, mid-keying) as held: the
    child's ledger and generator get fresh locks, or the child would wait forever."""
    import select

    from dxp_plugins._random import RandomSource

    accountant, source = Accountant(), RandomSource()
    read, write = os.pipe()
    with accountant._lock, source._lock:  # held by "another thread" at the fork
        pid = os.fork()
        if pid == 0:  # child
            try:
                warnings.simplefilter("ignore")  # the copy's PrivacyWarning
                accountant.charge(1.0, 1)
                source.generator().random()
                os.write(write, b"ok")
            finally:
                os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 20)
    if not ready:
        os.kill(pid, 9)
    os.waitpid(pid, 0)
    assert ready and os.read(read, 2) == b"ok", "the forked child hung on a copied lock"
    os.close(read)


def test_an_accountant_is_saved_and_resumed(glove_5k):
    """Review 14, F4: a pickled accountant is a copy that refuses capped charges, and the
    constructor takes no earlier spend, so a budget could not be carried across sessions."""
    import json

    ledger = Accountant(cap=10.0)
    dxp.Madlib(glove_5k, 2.0, accountant=ledger).privatize_ids([0, 1, 2])
    saved = json.loads(json.dumps(ledger.to_dict()))
    assert saved == {
        "spent": 6.0,
        "tokens_privatized": 3,
        "releases": 1,
        "words_released_raw": 0,
        "unit": ledger.unit,
        "cap": 10.0,
        "refuse_copies": False,
    }
    resumed = Accountant.resume(saved)
    assert not resumed.is_copy and resumed.remaining == 4.0 and resumed.unit == ledger.unit
    madlib = dxp.Madlib(glove_5k, 2.0, accountant=resumed)
    madlib.privatize_ids([0, 1])
    with pytest.raises(dxp.BudgetExceededError, match="cap 10 \\(10 already spent\\)"):
        madlib.privatize_ids([0, 1])  # the cap holds across sessions
    with pytest.raises(ValueError, match="cannot be added"):
        dxp.BRR(glove_5k, 1.0, accountant=resumed).privatize_ids([0])  # so does the unit
    assert (resumed.spent, resumed.tokens_privatized, resumed.releases) == (10.0, 5, 2)
    assert Accountant.resume(Accountant().to_dict()).to_dict()["releases"] == 0


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"spent": -1.0}, ValueError),
        ({"spent": float("nan")}, ValueError),
        ({"spent": True}, ValueError),
        ({"releases": -1}, ValueError),
        ({"tokens_privatized": 1.5}, ValueError),
        ({"words_released_raw": -2}, ValueError),
        ({"unit": 3}, TypeError),
        ({"cap": -1.0}, ValueError),
        ({"releases": 0, "unit": "u"}, ValueError),
        ({"extra": 1}, ValueError),
    ],
)
def test_a_resumed_record_is_checked(change, error):
    record = {
        "spent": 1.0,
        "tokens_privatized": 1,
        "releases": 1,
        "words_released_raw": 0,
        "unit": "u",
        "cap": None,
    }
    with pytest.raises(error):
        Accountant.resume({**record, **change})
    with pytest.raises(ValueError, match="exactly"):
        Accountant.resume({key: value for key, value in record.items() if key != "cap"})
    with pytest.raises(TypeError):
        Accountant.resume([("spent", 1.0)])


def test_a_capped_copy_cannot_be_saved_for_resume():
    """Diff review 14, F4: resume(copy.to_dict()) made a capped pickled copy an owner again,
    so the original and the resumed copy each held the cap (16 spent under a cap of 10)."""
    import pickle

    original = Accountant(cap=10.0)
    original.charge(4.0, 4, unit="u")
    copy = pickle.loads(pickle.dumps(original))
    with pytest.raises(dxp.BudgetExceededError, match="only the original ledger"):
        copy.to_dict()
    assert Accountant.resume(original.to_dict()).remaining == 6.0
    uncapped = pickle.loads(pickle.dumps(Accountant()))  # no cap to hold apart
    assert uncapped.to_dict()["cap"] is None


@pytest.mark.parametrize("change", [{"spent": 3.0}, {"tokens_privatized": 3}, {"unit": "u"}])
def test_a_resumed_ledger_without_releases_is_empty(change):
    """Diff review 14, F5: spend without releases loaded with no unit, so a release in any
    unit was then added to it."""
    empty = Accountant().to_dict()
    with pytest.raises(ValueError, match="without releases"):
        Accountant.resume({**empty, **change})


def test_the_largest_document_fits_the_counts(glove_5k):
    """Diff review 14, F7: 100 tokens over 2 releases with at most 1 in one document."""
    record = dataclasses.replace(dxp.Madlib(glove_5k, 2.0).guarantee(100), releases=2)
    for most in (1, 49, 101):
        with pytest.raises(ValueError, match="max_document_tokens"):
            dataclasses.replace(record, max_document_tokens=most)
    assert dataclasses.replace(record, max_document_tokens=50).max_document_spend == 100.0


def test_combine_is_the_step_by_step_merge_errors_included(glove_5k):
    """combine and merge build one record instead of three per step (review 15, speed):
    the result, and the error of a step that fails (settings that differ, a largest
    document the running totals refuse, another kind of record), are those of merging one
    record at a time with every intermediate record built and checked."""
    import random

    from dxp_plugins.guarantee import _fold_checked

    base = dxp.Madlib(glove_5k, 2.0).guarantee(1)
    rnd = random.Random(15)

    def record():
        tokens, releases = rnd.randint(0, 9), rnd.choice([0, 1, 1, 2, 3])
        passed = rnd.randint(0, 4)
        most = None
        if tokens and rnd.random() < 0.3:
            most = rnd.randint(-(-tokens // max(releases, 1)), tokens)
        changes: dict[str, object] = {}
        roll = rnd.random()
        if roll < 0.03:
            changes["epsilon"] = 5.0
        elif roll < 0.05:
            changes["selection"] = "nouns"
        return dataclasses.replace(
            base,
            tokens_privatized=tokens,
            tokens_passed_through=passed,
            words_passed_through=rnd.randint(0, passed),
            releases=releases,
            max_document_tokens=most,
            **changes,
        )

    def outcome(merge, records):
        try:
            return merge(records)
        except (TypeError, ValueError) as error:
            return type(error), str(error)

    kinds = set()
    for _ in range(3000):
        records = [record() for _ in range(rnd.randint(1, 7))]
        if rnd.random() < 0.01:
            records.append("not a record")
        expected = outcome(lambda r: _fold_checked(r[0], r[1:]), records)
        assert outcome(Guarantee.combine, records) == expected
        if len(records) == 2:
            assert outcome(lambda r: r[0].merge(r[1]), records) == expected
        kinds.add(expected[0] if isinstance(expected, tuple) else "merged")
    assert kinds == {"merged", ValueError, TypeError}
    assert Guarantee.combine([]) is None and Guarantee.combine([base]) is base
