"""Seeded streams of a release that draws on a helper generator, and records of a release
that fails after its charge (RNG review, sixteenth session: F1, F2, F3, F5)."""

from __future__ import annotations

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import _random
from dxp_plugins.errors import BudgetExceededError
from dxp_plugins.lplp import LPLPRelease
from dxp_plugins.lplp import release as release_module
from dxp_plugins.mechanisms.madlib import Madlib

#: 160k noisy entries: at least SPLIT_ENTRIES, so the release draws on a helper generator.
COUNTS = np.full((20_000, 8), 50, dtype=np.int64)


def _seeded_release(**kwargs) -> LPLPRelease:
    return LPLPRelease(np.arange(8), epsilon=1.0, random_state=42, **kwargs)


def test_seeded_lplp_output_does_not_depend_on_the_usable_cpus(monkeypatch):
    """F1: the split decided by the CPUs the process may use made one seed give other
    output under taskset, a cgroup cpuset or a 1-vCPU runner."""
    assert COUNTS.size >= release_module.SPLIT_ENTRIES
    outputs = []
    for cpus in (1, 2):
        monkeypatch.setattr(release_module, "_usable_cpus", lambda cpus=cpus: cpus)
        outputs.append(_seeded_release().release(COUNTS)[0].toarray())
    np.testing.assert_array_equal(outputs[0], outputs[1])


def test_a_refused_seeded_release_leaves_the_stream_as_it_was(monkeypatch):
    """F2: the seeded helper took two draws of the release stream before the charge, so a
    release refused by the cap changed every later one."""
    monkeypatch.setattr(release_module, "_usable_cpus", lambda: 2)
    refused = _seeded_release(accountant=dxp.Accountant(cap=0.5))
    with pytest.raises(BudgetExceededError):
        refused.release(COUNTS)
    refused.accountant.cap = 10.0
    never_refused = _seeded_release()
    np.testing.assert_array_equal(
        refused.release(COUNTS)[0].toarray(), never_refused.release(COUNTS)[0].toarray()
    )


def test_helper_spawn_keys_have_one_width(monkeypatch):
    """F3: SeedSequence joins 32-bit words without lengths, so a helper key entry below
    2**32 (one word instead of two) could make two draws give one key."""
    keys = []
    real = _random._seeded_generator

    def recording(seed, stream):
        keys.append(stream)
        return real(seed, stream)

    monkeypatch.setattr(_random, "_seeded_generator", recording)
    source = _random.RandomSource(1)
    rng = source.generator()
    keys.clear()  # the source's own keying; only helpers below
    for _ in range(200):
        source.helper(rng)
    assert all(0 <= word < 2**32 for key in keys for word in key)
    assert {len(key) for key in keys} == {6} and all(key[-1] == 0 for key in keys)


def test_an_interrupted_release_on_the_uncapped_path_leaves_the_record_of_its_charge(
    monkeypatch,
):
    """F5: a KeyboardInterrupt after the charge left last_guarantee naming the previous
    release while the ledger held the new charge (the capped path already did this)."""
    words = ["the", "cat", "sat", "on", "a", "mat"]
    table = dxp.EmbeddingTable(words, np.random.default_rng(0).normal(size=(6, 4)))
    mechanism = Madlib(table, epsilon=1.0)
    mechanism.privatize(["the"])

    def interrupted(self, ids, rng, epsilon):
        raise KeyboardInterrupt

    monkeypatch.setattr(Madlib, "_sample", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mechanism.privatize_batch([["the", "cat", "sat"]])
    assert mechanism.accountant.tokens_privatized == 4
    assert mechanism.last_guarantee.tokens_privatized == 3
    assert mechanism.last_guarantee.spend == 3.0
