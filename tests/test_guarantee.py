"""Guarantee records and the accountant (PRIVACY.md 12-13)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.guarantee import Accountant, Guarantee


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
        library_version=dxp.__version__,
    )
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
    uncapped.charge(2.0, 2)  # a copy without a cap just records its own releases
    assert uncapped.spent == 2.0


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
    if pid == 0:  # child
        try:
            uncapped.charge(1.0, 1)  # a copy without a cap just records
        except dxp.BudgetExceededError:
            os._exit(2)
        try:
            capped.charge(1.0, 1)
        except dxp.BudgetExceededError:
            os._exit(3)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3
    capped.charge(1.0, 1)  # the parent's own ledger is unaffected


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
    old.charge(1.0, 1, unit="unit of euclidean distance")
    assert old.spent == 3.0 and old.unit == "unit of euclidean distance"
