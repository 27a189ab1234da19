"""check_mechanism's rules, each guarded against the mutant of testing.py that broke it
unseen, and plugin bugs it missed (a mutation review, 2026-11-25)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dxp_plugins import Mechanism, testing
from dxp_plugins.testing import check_mechanism
from tests.test_testing_helpers import KaryResponse, OptionWithoutDefault


class KaryNoLaw(KaryResponse):
    """KaryResponse without a closed-form distribution (so only the other checks see it)."""

    name = "k-rr-no-law-test"

    def distribution(self, word, epsilon=None):
        raise NotImplementedError


# T1: a p-value between 1e-7 and 1e-6 is a failure (the threshold is the documented 1e-6).
def test_a_p_value_just_under_the_floor_fails(monkeypatch):
    monkeypatch.setattr(testing, "_homogeneity", lambda first, second: 5e-7)
    with pytest.raises(AssertionError, match="chi-square p = 5e-07"):
        check_mechanism(KaryResponse)


# T2: noise shared by the UNK point's copies only.
class SharedNoiseForUnk(KaryNoLaw):
    name = "shared-noise-for-unk-test"

    def _sample(self, ids, rng, epsilon):
        out = super()._sample(ids, rng, epsilon)
        unknown = ids < 0
        if unknown.any():  # the UNK point's noisy output computed once per call
            out[unknown] = super()._sample(np.array([-1]), rng, epsilon)[0]
        return out


def test_noise_shared_by_unk_copies_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 11: 1000 copies of input -1"):
        check_mechanism(SharedNoiseForUnk)


# T3: the pooling of rare outputs is what lets the test see a law spread over rare outputs.
def test_rare_outputs_are_pooled_so_a_spread_law_is_seen():
    together = np.r_[np.zeros(900, dtype=int), np.arange(1, 101)]
    apart = np.zeros(1000, dtype=int)
    assert testing._homogeneity(together, apart) < 1e-6


# T10: randomness outside the release generator, in privatize_ids only.
class UnseededExtraStep(KaryNoLaw):
    name = "unseeded-extra-step-test"

    def privatize_ids(self, ids):
        out = super().privatize_ids(ids)
        flip = np.random.default_rng().random(len(out)) < 0.05  # not the release's generator
        return np.where(flip, (out + 1) % len(self.embeddings), out)


def test_randomness_outside_the_release_generator_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 17: two builds seeded alike"):
        check_mechanism(UnseededExtraStep)


# T11: check_options must be called with {} even when options are given.
def test_check_options_needing_an_option_fails_even_when_it_is_given():
    with pytest.raises(AssertionError, match=r"check_options\(\*\*\{\}\)"):
        check_mechanism(OptionWithoutDefault, options={"t": 0.5})


# T14: an empty input charged.
class PadsEmptyInput(KaryNoLaw):
    name = "pads-empty-input-test"

    def privatize(self, tokens):  # avoids an empty array downstream; charges one token
        return super().privatize(list(tokens) or [self.embeddings.words[0]])[: len(tokens)]


def test_an_empty_input_charged_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 22: an empty input was charged"):
        check_mechanism(PadsEmptyInput)


# T16: passthrough treated as unk.
class PassthroughAsUnk(KaryNoLaw):
    name = "passthrough-as-unk-test"

    def privatize(self, tokens):
        if self.oov != "passthrough":
            return super().privatize(tokens)
        words = self.embeddings.word_array()
        return [words[i] for i in self.privatize_ids(self.embeddings.lookup(tokens))]


def test_passthrough_not_honoured_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 20: under oov='passthrough'"):
        check_mechanism(PassthroughAsUnk)


# T19: a race seen only in a later round.
class RacesInSecondRound(KaryNoLaw):
    name = "races-in-second-round-test"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock, self._threaded = threading.Lock(), 0

    def _sample(self, ids, rng, epsilon):
        out = super()._sample(ids, rng, epsilon)
        if threading.current_thread() is not threading.main_thread():
            with self._lock:
                self._threaded += 1
                late = self._threaded > testing.THREADS * testing.CALLS
            if late:
                return np.zeros_like(out)
        return out


def test_the_thread_check_runs_more_than_one_round():
    with pytest.raises(AssertionError, match=r"docs/plugins.md \(_sample\): \d+ of 100 calls"):
        check_mechanism(RacesInSecondRound)


# T21: an unnormalised law.
class UnnormalisedLaw(KaryResponse):
    name = "unnormalised-law-test"

    def distribution(self, word, epsilon=None):
        return 2 * super().distribution(word, epsilon)


def test_a_law_that_does_not_sum_to_one_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md T2: distribution\(0\) is not a law"):
        check_mechanism(UnnormalisedLaw)


# T22: a release in parts only when unseeded.
class ChunksWhenSecure(KaryNoLaw):
    name = "chunks-when-secure-test"

    def privatize(self, tokens):
        if self.rng_mode != "secure":
            return super().privatize(tokens)
        words = []
        for start in range(0, len(tokens), 5):  # memory-bounded parts: one release each
            words += super().privatize(tokens[start : start + 5])
        return words


def test_a_secure_release_in_parts_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 12: the record of a release of 9 tokens"):
        check_mechanism(ChunksWhenSecure)


# T23: a second release charged.
class WarmsUpOnFirstToken(KaryNoLaw):
    name = "warms-up-test"

    def privatize(self, tokens):
        if tokens and self.oov == "unk":
            super().privatize(list(tokens[:1]))  # "warm-up": a second release
        return super().privatize(tokens)


def test_a_second_charge_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 13: a release of 9 tokens"):
        check_mechanism(WarmsUpOnFirstToken)


# T25: a correct plugin that builds what _sample needs in _prepare_release.
class BuildsInPrepare(KaryNoLaw):
    name = "builds-in-prepare-test"

    def _prepare_release(self, ids):
        if getattr(self, "_k", None) is None:
            self._k = len(self.embeddings)

    def _sample(self, ids, rng, epsilon):
        k = self._k
        ids = np.maximum(ids, 0)
        keep = rng.random(len(ids)) < np.exp(epsilon) / (np.exp(epsilon) + k - 1)
        return np.where(keep, ids, (ids + rng.integers(1, k, len(ids))) % k)


def test_a_plugin_preparing_in_prepare_release_passes():
    assert check_mechanism(BuildsInPrepare)[-1] == "record"


# T28: the record must state the epsilon the check asked for, not one the plugin moved to.
class HalvesEpsilonAtRelease(KaryNoLaw):
    name = "halves-epsilon-test"

    def privatize(self, tokens):
        if not self.__dict__.get("_halved"):  # "split the budget", once
            self._halved = True
            self.epsilon = self.epsilon / 2
        return super().privatize(tokens)


def test_a_record_at_another_epsilon_fails_as_a_record_error():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 12: the record of a release"):
        check_mechanism(HalvesEpsilonAtRelease)


# Plugin bugs in an overridden privatize, which every check of _sample missed.
class MemoisesPerWord(KaryNoLaw):
    """'Consistent pseudonyms': each word's first output reused in later calls (drawn fresh
    within the call that first sees it)."""

    name = "memoises-per-word-test"

    def privatize(self, tokens):
        memo = self.__dict__.setdefault("_memo", {})
        known = dict(memo)
        out = super().privatize(tokens)
        for token, word in zip(tokens, out, strict=True):
            memo.setdefault(token, word)
        return [known.get(token, word) for token, word in zip(tokens, out, strict=True)]


class DedupesPerCall(KaryNoLaw):
    """Each distinct token drawn once per call: copies share noise, and are not charged."""

    name = "dedupes-per-call-test"

    def privatize(self, tokens):
        unique = list(dict.fromkeys(tokens))
        out = dict(zip(unique, super().privatize(unique), strict=True))
        return [out[t] for t in tokens]


def test_a_word_memoised_across_calls_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 11: 1000 calls privatize\(\['the'\]\)"):
        check_mechanism(MemoisesPerWord)


def test_copies_drawn_once_per_call_fail():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 11: privatize of 1000 copies of 'the'"):
        check_mechanism(DedupesPerCall)


def test_copies_drawn_once_are_also_caught_by_their_charge(monkeypatch):
    monkeypatch.setattr(testing, "_fresh_noise", lambda subject: "fresh noise")
    with pytest.raises(AssertionError, match=r"PRIVACY.md 12: the record of a release of 9 tokens"):
        check_mechanism(DedupesPerCall)


# A Vickrey-style plugin (Madlib's noise, then a coin between the two nearest words): its
# coin shared by a call's copies hides at epsilon 1 on the default table, where the two
# nearest words are about equally likely (a plugin author's review, 2026-11-25).
class Vickrey(Mechanism):
    name = "vickrey-test"
    metric = "euclidean"

    def _coins(self, rng, count):
        return rng.random(count)

    def _sample(self, ids, rng, epsilon):
        from dxp_plugins.mechanisms import madlib_noise
        from dxp_plugins.neighbors import get_index

        noisy = self._points(ids) + madlib_noise(rng, len(ids), self.embeddings.dim, epsilon)
        nearest, squared = get_index(self.embeddings).k_nearest(noisy, 2)
        first, second = np.sqrt(squared).T
        total = first + second
        keep_first = np.divide(second, total, out=np.ones_like(total), where=total > 0)
        return np.where(self._coins(rng, len(ids)) < keep_first, nearest[:, 0], nearest[:, 1])


class SharedCoinVickrey(Vickrey):
    name = "shared-coin-vickrey-test"

    def _coins(self, rng, count):
        return np.full(count, rng.random())


def test_a_vickrey_plugin_passes():
    assert "fresh noise" in check_mechanism(Vickrey)


def test_a_coin_shared_by_a_calls_copies_fails_at_the_default_epsilon():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 11: 1000 copies of input 0"):
        check_mechanism(SharedCoinVickrey)


class MemoisesWhenSecure(MemoisesPerWord):
    """Reuses each word's first output, but only when unseeded: every check of a seeded
    build passed (a diff review, 2026-11-25)."""

    name = "memoises-when-secure-test"

    def privatize(self, tokens):
        if self.rng_mode != "secure":
            return KaryNoLaw.privatize(self, tokens)
        return super().privatize(tokens)


def test_a_word_memoised_only_under_secure_randomness_fails():
    with pytest.raises(AssertionError, match=r"PRIVACY.md 11: under secure randomness"):
        check_mechanism(MemoisesWhenSecure)
