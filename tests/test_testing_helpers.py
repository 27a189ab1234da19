"""``dxp_plugins.testing.check_mechanism``, the contract checks a plugin author runs (contributor
review 28, F4): the library's mechanisms and a correct plugin pass, and each check fails a
plugin that breaks its rule, naming it.

What it cannot catch (its docstring says so): noise at the wrong scale or decoding that
excludes the input (PRIVACY.md 1, 2, 5), a ``distribution`` wrong in the same way as the
sampler or off by less than its G-test sees (``test_what_the_law_check_cannot_see``), a
mislabelled metric; a race between threads only when it shows in its 100 calls.
"""

from __future__ import annotations

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import Mechanism
from dxp_plugins.testing import check_mechanism
from tests.fixtures import BUILTIN_MECHANISMS


def keep_probability(epsilon: float, k: int) -> float:
    return float(np.exp(epsilon) / (np.exp(epsilon) + k - 1))


class KaryResponse(Mechanism):
    """k-ary randomized response (docs/plugins.md), with its exact law."""

    name = "k-rr-check-test"
    metric = "discrete"

    def _sample(self, ids, rng, epsilon):
        k = len(self.embeddings)
        ids = np.maximum(ids, 0)
        keep = rng.random(len(ids)) < keep_probability(epsilon, k)
        return np.where(keep, ids, (ids + rng.integers(1, k, len(ids))) % k)

    def distribution(self, word, epsilon=None):
        k, row = len(self.embeddings), max(self._input_id(word), 0)
        keep = keep_probability(self.epsilon if epsilon is None else epsilon, k)
        law = np.full(k, (1 - keep) / (k - 1))
        law[row] = keep
        return law


@pytest.mark.parametrize("name", BUILTIN_MECHANISMS)
def test_the_library_mechanisms_pass(name):
    assert check_mechanism(name)[-1] == "record"


def test_brr_on_short_codes_passes_the_law_check_too():
    assert "distribution" in check_mechanism("brr", options={"n_bits": 8})


def test_a_correct_plugin_passes_as_a_class_a_factory_and_a_registered_name(monkeypatch):
    ran = check_mechanism(KaryResponse)
    assert ran == (
        "constructor",
        "outputs",
        "oov",
        "randomness",
        "epsilon",
        "fresh noise",
        "threads",
        "distribution",
        "record",
    )
    table = dxp.EmbeddingTable([f"w{i}" for i in range(12)], np.eye(12))
    assert check_mechanism(lambda emb, **params: KaryResponse(emb, **params), table) == ran
    from tests.door_fixtures import KaryRandomizedResponse, register

    register(monkeypatch, "mechanisms", "k-rr-check-test", KaryRandomizedResponse)
    assert "distribution" not in check_mechanism(
        "k-rr-check-test", epsilon=0.5, options={"restrict_to": 50}
    )
    with pytest.raises(ValueError, match=r"options may not set \['random_state'\]"):
        check_mechanism(KaryResponse, options={"random_state": 1})


# -- broken plugins: each is refused by the check of its rule ---------------------------------
class DropsKwargs(KaryResponse):
    name = "drops-kwargs-test"

    def __init__(self, embeddings, epsilon, **kwargs):
        super().__init__(embeddings, epsilon)


class SeedsItself(KaryResponse):
    name = "seeds-itself-test"

    def __init__(self, embeddings, epsilon, *, random_state=None, **kwargs):
        super().__init__(embeddings, epsilon, random_state=random_state or 0, **kwargs)


class UnkAsLastRow(KaryResponse):
    name = "unk-as-last-row-test"

    def _sample(self, ids, rng, epsilon):
        return np.where(ids < 0, ids, super()._sample(ids, rng, epsilon))


class Identity(KaryResponse):
    name = "identity-test"

    def _sample(self, ids, rng, epsilon):
        return np.maximum(ids, 0)


class NoiseDrawnOnce(KaryResponse):
    """Keeps the first call's noise and reuses it in every later call."""

    name = "noise-drawn-once-test"

    def _sample(self, ids, rng, epsilon):
        if getattr(self, "_first", None) is None:
            self._first = rng.random(len(ids)), rng.integers(1, len(self.embeddings), len(ids))
        draws, offsets = (np.resize(part, len(ids)) for part in self._first)
        keep = draws < keep_probability(epsilon, len(self.embeddings))
        ids, k = np.maximum(ids, 0), len(self.embeddings)
        return np.where(keep, ids, (ids + offsets) % k)


class KeepsGenerator(KaryResponse):
    """Keeps the first generator it was handed and draws from it ever after."""

    name = "keeps-generator-test"

    def _sample(self, ids, rng, epsilon):
        self._rng = getattr(self, "_rng", None) or rng
        return super()._sample(ids, self._rng, epsilon)


class ReadsSelfEpsilon(KaryResponse):
    name = "reads-self-epsilon-test"

    def _sample(self, ids, rng, epsilon):
        return super()._sample(ids, rng, self.epsilon)


class EpsilonFixedWhenBuilt(KaryResponse):
    name = "epsilon-fixed-when-built-test"

    def __init__(self, embeddings, epsilon, **kwargs):
        super().__init__(embeddings, epsilon, **kwargs)
        self._built_at = epsilon

    def _sample(self, ids, rng, epsilon):
        return super()._sample(ids, rng, self._built_at)


class OneDrawPerCall(KaryResponse):
    """One noise draw shared by every entry of a call (PRIVACY.md 11's measured bug)."""

    name = "one-draw-per-call-test"

    def _sample(self, ids, rng, epsilon):
        k, ids = len(self.embeddings), np.maximum(ids, 0)
        if rng.random() < keep_probability(epsilon, k):
            return ids
        return (ids + rng.integers(1, k)) % k


class LawAtTwiceEpsilon(KaryResponse):
    name = "law-at-twice-epsilon-test"

    def distribution(self, word, epsilon=None):
        return super().distribution(word, 2 * self.epsilon)


class WordByWord(KaryResponse):
    """Privatizes a list one release per token: its record is the last token's."""

    name = "word-by-word-test"

    def privatize(self, tokens):
        self.check_release([tokens])  # refuses before the first release, as one release does
        return [self.privatize_batch([[token]])[0][0][0] for token in tokens]


class SharedNoiseThenCoin(KaryResponse):
    """One noise draw for the whole call, then a fresh coin per entry between two words
    (a Vickrey-style choice): more than one output per call, so a check asking only for
    that passed it (plugin review 29 F1); it leaks as one draw per call does."""

    name = "shared-noise-then-coin-test"

    def _sample(self, ids, rng, epsilon):
        k, ids = len(self.embeddings), np.maximum(ids, 0)
        keep = rng.random() < keep_probability(epsilon, k)
        shared = ids if keep else (ids + rng.integers(1, k)) % k
        coin = rng.random(len(ids)) < 0.3
        return np.where(coin, (shared + 1) % k, shared)


class NoisyRowsOnSelf(KaryResponse):
    """Keeps a call's intermediate result on ``self`` between two steps: another thread's
    call overwrites it (plugin review 29 F2: another request's word came out)."""

    name = "noisy-rows-on-self-test"

    def _sample(self, ids, rng, epsilon):
        self._rows = np.maximum(ids, 0).copy()
        k = len(self.embeddings)
        keep = rng.random(len(ids)) < keep_probability(epsilon, k)
        offsets = rng.integers(1, k, len(ids))
        return np.where(keep, self._rows, (self._rows + offsets) % k)


class OptionWithoutDefault(KaryResponse):
    """Its ``check_options`` needs ``t``, which the doors pass only when the user gives it
    (plugin review 29 F5: every door failed with a TypeError)."""

    name = "option-without-default-test"

    def __init__(self, embeddings, epsilon, *, t=0.5, **base):
        super().__init__(embeddings, epsilon, **base)
        self.t = t

    @classmethod
    def check_options(cls, *, t, **_):
        if not 0 <= t <= 1:
            raise ValueError("t must lie in [0, 1]")


class OwnLookup(KaryResponse):
    """Looks tokens up itself, the UNK point for every unknown one, whatever the policy."""

    name = "own-lookup-test"

    def privatize(self, tokens):
        words = self.embeddings.word_array()
        return [words[i] for i in self.privatize_ids(self.embeddings.lookup(tokens))]


class UnknownReleasedRaw(KaryResponse):
    """Returns an out-of-vocabulary token as itself under ``oov="unk"``."""

    name = "unknown-released-raw-test"

    def privatize(self, tokens):
        private = super().privatize(tokens)
        return [t if t not in self.embeddings else p for t, p in zip(tokens, private, strict=True)]


class RaisesOnUnk(KaryResponse):
    """Indexes rows with the ids as given: the UNK id -1 fails inside ``_sample``."""

    name = "raises-on-unk-test"

    def _sample(self, ids, rng, epsilon):
        if (ids < 0).any():
            raise IndexError("index -1 is out of bounds")
        return super()._sample(ids, rng, epsilon)


class InvalidDefault(OptionWithoutDefault):
    """Its option's default is one its own check refuses: every door refused the plugin."""

    name = "invalid-default-test"

    @classmethod
    def check_options(cls, *, t=2.0, **_):
        if not 0 <= t <= 1:
            raise ValueError("t must lie in [0, 1]")


class ChargesThenRefuses(KaryResponse):
    """Releases the words it knows, then refuses the unknown one under oov="raise": the
    ledger was charged for a release the caller was told did not happen."""

    name = "charges-then-refuses-test"

    def privatize(self, tokens):
        if self.oov != "raise":
            return super().privatize(tokens)
        known = [token for token in tokens if token in self.embeddings]
        words = super().privatize(known)
        if len(known) < len(tokens):
            raise dxp.OOVError("out of vocabulary")
        return words


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (DropsKwargs, r"docs/plugins.md \(Constructor\).*did not keep oov .*; accountant"),
        (SeedsItself, r"PRIVACY.md 16: built without a seed, it draws seeded noise"),
        (UnkAsLastRow, r"docs/plugins.md \(_sample\).*got ids outside that range"),
        (Identity, r"PRIVACY.md 11 and 16: _sample gave the same outputs for two different"),
        (NoiseDrawnOnce, r"PRIVACY.md 11 and 16: .*noise drawn once and reused"),
        (KeepsGenerator, r"PRIVACY.md 11 and 17: .*keeps state across calls"),
        (ReadsSelfEpsilon, r"PRIVACY.md 12 and 13: _sample's outputs changed with self.epsilon"),
        (EpsilonFixedWhenBuilt, r"PRIVACY.md 12 and 13: .*ignores its epsilon argument"),
        (OneDrawPerCall, r"PRIVACY.md 11: 1000 copies of input 0 .*\(1 and \d+ distinct.*fresh"),
        (LawAtTwiceEpsilon, r"PRIVACY.md T2: distribution\(0\) disagrees with the sampler"),
        (WordByWord, r"PRIVACY.md 12: the record of a release of 9 tokens states"),
        (SharedNoiseThenCoin, r"PRIVACY.md 11: 1000 copies of input 0 .*not fresh per entry"),
        (NoisyRowsOnSelf, r"docs/plugins.md \(_sample\): \d+ of 100 calls from 4 threads"),
        (OptionWithoutDefault, r"docs/plugins.md \(Constructor\): check_options\(\*\*\{\}\)"),
        (OwnLookup, r"PRIVACY.md 20: under oov='raise' an out-of-vocabulary token was privat"),
        (UnknownReleasedRaw, r"PRIVACY.md 20: an out-of-vocabulary token came out raw"),
        (RaisesOnUnk, r"docs/plugins.md \(_sample\): it raised IndexError on ids holding"),
        (
            InvalidDefault,
            r"docs/plugins.md \(Constructor\): check_options\(\*\*\{\}\) raised ValueError: t must",
        ),
        (ChargesThenRefuses, r"PRIVACY.md 20: under oov='raise' .* refused after a charge"),
    ],
)
def test_a_broken_plugin_fails_naming_its_rule(plugin, message):
    with pytest.raises(AssertionError, match=rf"^{plugin.__qualname__} breaks {message}"):
        check_mechanism(plugin)


def test_a_deterministic_mechanism_is_told_to_check_at_a_smaller_epsilon():
    """At epsilon 700 k-RR keeps every word: the fresh-noise checks cannot run there."""
    with pytest.raises(AssertionError, match="check it at a smaller epsilon"):
        check_mechanism(KaryResponse, epsilon=700.0)


def test_what_the_law_check_cannot_see():
    """A law stated at 1.2 epsilon over 300 rows passes: the G-test has 20,000 draws per word
    (its mass on the input row is 0.011 where the sampler's is 0.009). A privacy audit
    (dxp_plugins.audit, PRIVACY.md T3) is the check for the guarantee itself."""

    class LawAtSlightlyMore(KaryResponse):
        name = "law-at-slightly-more-test"

        def distribution(self, word, epsilon=None):
            return super().distribution(word, 1.2 * self.epsilon)

    assert "distribution" in check_mechanism(LawAtSlightlyMore)


def test_a_sampler_broken_for_every_id_is_not_blamed_on_the_unk_id():
    """Diff review 29 F4: every exception in _sample was explained as the UNK id's (the
    checked ids always hold -1): a plugin failing on all ids was told to use _points."""

    class Broken(KaryResponse):
        name = "broken-test"

        def _sample(self, ids, rng, epsilon):
            return self.lookup_table[ids]

    with pytest.raises(AttributeError, match="lookup_table"):
        check_mechanism(Broken)
