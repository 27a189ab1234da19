"""Contract checks for a mechanism plugin, to call from the plugin's own test suite.

The project's own contract tests are not installed, and they test toy mechanisms; this
module is what a plugin author runs on theirs (``docs/plugins.md``, "Testing your plugin")::

    from dxp_plugins.testing import check_mechanism

    def test_my_mechanism_keeps_the_contract():
        check_mechanism(MyMechanism, epsilon=1.0)

:func:`check_mechanism` builds the mechanism as the doors do and raises AssertionError naming
the rule of ``PRIVACY.md`` (or ``docs/plugins.md``) it found broken. It checks the plumbing
every mechanism must get right, not the privacy of its noise: a mechanism drawing noise at the
wrong scale, or decoding that excludes the input word (PRIVACY.md 1, 2, 5), passes it, and so
does a ``distribution`` that is wrong in the same way as the sampler. Audit the guarantee
itself with :mod:`dxp_plugins.audit` (PRIVACY.md T3). Every check is seeded, so it gives the
same verdict on every run, but for the threads': it runs calls from four threads at once and
fails when one differs from the same call made alone, so a pass says no race was met, not
that none exists. Its two statistical tests fail a correct mechanism with probability
about 1e-6 each (the distribution check's G-test runs somewhat above its nominal rate when
many outputs have few expected draws).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ._random import RandomSource
from ._validation import MAX_EPSILON
from .audit import g_test
from .embeddings.table import OOV_ID, EmbeddingTable
from .errors import OOVError, PrivacyWarning, SeededRandomnessWarning
from .guarantee import Accountant
from .mechanisms import BASE_SETTINGS
from .mechanisms.base import Mechanism

__all__ = ["check_mechanism"]

#: The seed of every draw the checks make: the same verdict on every run.
SEED = 20_261_128
#: Rows of the default table (the most frequent GloVe 6B 50d words).
DEFAULT_VOCAB_SIZE = 300
#: Input ids of the sampling checks: the UNK point, then the rows in order, repeated.
INPUTS = 400
#: Draws per word of the distribution check, and its G-test's p-value floor (T2's).
LAW_DRAWS = 20_000
P_FAIL = 1e-6
#: A token no table holds (privatized from the UNK point under ``oov="unk"``).
OOV_TOKEN = "zq7-not-a-word-canary"
#: Copies of one word in one call, and as many single-word calls, of the fresh-noise check.
COPIES = 1000
#: The fresh-noise check of ``_sample`` runs at epsilon and at this multiple of it.
LARGER = 10
#: One-word calls of a secure build that must not all return one word.
SECURE_CALLS = 200
#: Threads, calls per thread, ids per call and rounds (until one differs) of the thread check.
THREADS, CALLS, CALL_IDS, ROUNDS = 4, 25, 64, 5


def check_mechanism(
    factory: str | Callable[..., Mechanism],
    embeddings: EmbeddingTable | None = None,
    *,
    epsilon: float = 1.0,
    options: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """Check a mechanism against the plugin contract; AssertionError naming the rule broken.

    ``factory`` is a registry name, a :class:`~dxp_plugins.Mechanism` subclass or a function,
    called as the doors call it: ``factory(embeddings, epsilon=..., oov=...,
    random_state=..., accountant=..., **options)``. ``embeddings``: the table to check on
    (default: the 300 most frequent GloVe 6B 50d words). ``epsilon``: one at which the
    mechanism's output law is far from a point mass (at a huge epsilon a correct mechanism
    may always return the input word, which the fresh-noise checks would refuse).

    Returns the names of the checks run: ``"distribution"`` only when the mechanism has a
    closed-form ``distribution``.
    """
    options = dict(options or {})
    if set(BASE_SETTINGS) & options.keys():  # the checks set them, as the doors do
        raise ValueError(f"options may not set {sorted(set(BASE_SETTINGS) & options.keys())}")
    table = embeddings if embeddings is not None else _default_table()
    if isinstance(factory, str):
        from . import registry

        subject = _Subject(factory, registry.resolve(registry.mechanisms, factory), table)
    else:
        subject = _Subject(getattr(factory, "__qualname__", repr(factory)), factory, table)
    subject.epsilon, subject.options = epsilon, options
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)  # every check is seeded
        checks = (
            _constructor,
            _outputs,
            _oov_policies,
            _randomness,
            _epsilon_argument,
            _fresh_noise,
            _threads,
        )
        ran = [check(subject) for check in checks]
        ran += _distribution(subject)
        ran.append(_record(subject))
    return tuple(ran)


def _default_table() -> EmbeddingTable:
    from .embeddings import load_embeddings

    return load_embeddings("glove-6b-50d", vocab_size=DEFAULT_VOCAB_SIZE)


class _Subject:
    """The mechanism under check: how to build it, and how to say what it broke."""

    epsilon: float
    options: dict[str, Any]

    def __init__(self, label: str, factory: Callable[..., Any], table: EmbeddingTable) -> None:
        self.label, self.factory, self.table = label, factory, table
        self.ids = np.resize(np.r_[OOV_ID, np.arange(len(table))], INPUTS)

    def build(self, **base: Any) -> Mechanism:
        """Built as a door builds it (through ``make_mechanism``'s checks)."""
        from .mechanisms import _build

        params = {"epsilon": self.epsilon, "oov": "unk", **base, **self.options}  # disjoint
        try:
            return _build(self.label, self.factory, self.table, params)
        except TypeError as error:
            raise self.broke("docs/plugins.md (Constructor)", str(error)) from error

    def broke(self, rule: str, what: str) -> AssertionError:
        return AssertionError(f"{self.label} breaks {rule}: {what}")

    def sampled(self, mechanism: Mechanism, stream: int, epsilon: float) -> np.ndarray:
        """``_sample`` of :attr:`ids` on a new generator for ``stream`` (one stream, one
        generator state), its output checked by the base class as in a release."""
        return self.sample(mechanism, self.ids, _generator(stream), epsilon)

    def sample(
        self, mechanism: Mechanism, ids: np.ndarray, rng: np.random.Generator, epsilon: float
    ) -> np.ndarray:
        """``_sample`` as a release calls it (after ``_prepare_release``), its output
        checked by the base class; a failure named as the rule it breaks."""
        mechanism._prepare_release(ids)
        try:
            return mechanism._sampled(ids, rng, epsilon)
        except TypeError as error:
            raise self.broke("docs/plugins.md (_sample)", str(error)) from error
        except Exception as error:
            known = ids[ids != OOV_ID]
            if len(known) == len(ids) or not _succeeds(mechanism, known, epsilon):
                raise
            raise self.broke(
                "docs/plugins.md (_sample)",
                f"it raised {type(error).__name__} on ids holding the UNK id -1 (the public "
                "UNK point under oov='unk'): privatize from self._points(ids), or refuse in "
                "_prepare_release, before anything is charged",
            ) from error

    def hint(self) -> str:
        return (
            f" (if the mechanism is deterministic at epsilon={self.epsilon:g} on this "
            "table, check it at a smaller epsilon)"
        )


def _constructor(subject: _Subject) -> str:
    """It holds the epsilon, OOV policy, accountant and random source it was given
    (PRIVACY.md 13, 17, 20: a dropped ``**kwargs`` released past a capped ledger), as the
    spaCy component and TextPrivatizer give them and as Python code does; unseeded, it is
    secure (16)."""
    factory = subject.factory
    if isinstance(factory, type) and issubclass(factory, Mechanism):
        for given in (subject.options, {}):  # the doors pass only the options given
            try:
                factory.check_options(**given)
            except (TypeError, ValueError) as error:
                raise subject.broke(
                    "docs/plugins.md (Constructor)",
                    f"check_options(**{given!r}) raised {type(error).__name__}: {error} (the "
                    "doors call it with only the options the user gave: every option needs "
                    "a valid default)",
                ) from error
    subject.build(oov="raise", random_state=RandomSource(SEED), accountant=Accountant())
    subject.build(random_state=SEED)
    if subject.build(random_state=None).rng_mode != "secure":
        raise subject.broke("PRIVACY.md 16", "built without a seed, it draws seeded noise")
    return "constructor"


def _outputs(subject: _Subject) -> str:
    """One vocabulary word per token through the public path, the UNK point included;
    nothing for an empty input (PRIVACY.md 22)."""
    mechanism = subject.build(random_state=SEED)
    tokens = [*subject.table.words[:5], OOV_TOKEN]
    subject.sampled(mechanism, 0, subject.epsilon)  # the UNK id among them: named if it fails
    try:
        mechanism.privatize_ids(subject.ids)
        words = mechanism.privatize(tokens)
    except TypeError as error:
        raise subject.broke("docs/plugins.md (_sample)", str(error)) from error
    vocabulary = set(subject.table.words)
    if OOV_TOKEN in words:
        raise subject.broke(
            "PRIVACY.md 20", "an out-of-vocabulary token came out raw under oov='unk'"
        )
    if len(words) != len(tokens) or not set(words) <= vocabulary:
        raise subject.broke("docs/plugins.md (_sample)", "privatize did not return one word each")
    ledger = mechanism.accountant
    before = (ledger.spent, ledger.releases)
    if mechanism.privatize([]) != [] or (ledger.spent, ledger.releases) != before:
        raise subject.broke("PRIVACY.md 22", "an empty input was charged or released")
    return "outputs"


def _randomness(subject: _Subject) -> str:
    """Outputs are a function of the inputs, the generator handed to ``_sample`` and its
    epsilon only (PRIVACY.md 11, 16, 17): the same generator gives the same outputs, even
    after a release; another generator other outputs; one seed, one release."""
    mechanism = subject.build(random_state=SEED)
    first = subject.sampled(mechanism, 1, subject.epsilon)
    mechanism.privatize_ids(subject.ids)
    if not np.array_equal(first, subject.sampled(mechanism, 1, subject.epsilon)):
        raise subject.broke(
            "PRIVACY.md 11 and 17",
            "_sample gave other outputs for the same generator after a release: it keeps "
            "state across calls, or draws from a generator other than the one it is handed",
        )
    if np.array_equal(first, subject.sampled(mechanism, 2, subject.epsilon)):
        raise subject.broke(
            "PRIVACY.md 11 and 16",
            "_sample gave the same outputs for two different generators: it draws no noise "
            "from the generator it is handed (none, or noise drawn once and reused)"
            + subject.hint(),
        )
    again = subject.build(random_state=SEED).privatize_ids(subject.ids)
    if not np.array_equal(subject.build(random_state=SEED).privatize_ids(subject.ids), again):
        raise subject.broke("PRIVACY.md 17", "two builds seeded alike released other outputs")
    return "randomness"


def _epsilon_argument(subject: _Subject) -> str:
    """``_sample`` draws at its ``epsilon`` argument, the one charged, never at
    ``self.epsilon``, which another thread may reassign during a release (docs/plugins.md;
    PRIVACY.md 12, 13: the noise, the charge and the record agree)."""
    mechanism = subject.build(random_state=SEED)
    epsilon = subject.epsilon
    other = epsilon * 64 if epsilon * 64 <= MAX_EPSILON else epsilon / 64
    first = subject.sampled(mechanism, 1, epsilon)
    mechanism.epsilon = other
    try:
        moved = subject.sampled(mechanism, 1, epsilon)
    finally:
        mechanism.epsilon = epsilon
    if not np.array_equal(first, moved):
        raise subject.broke(
            "PRIVACY.md 12 and 13",
            f"_sample's outputs changed with self.epsilon (reassigned from {epsilon:g} to "
            f"{other:g}, its epsilon argument unchanged): it must draw at the epsilon it is "
            "given",
        )
    if np.array_equal(first, subject.sampled(mechanism, 1, other)):
        raise subject.broke(
            "PRIVACY.md 12 and 13",
            f"_sample's outputs were the same at epsilon {epsilon:g} and {other:g}: it "
            "ignores its epsilon argument (noise drawn at the epsilon it was built with?)",
        )
    return "epsilon"


def _oov_policies(subject: _Subject) -> str:
    """An out-of-vocabulary token is refused under ``oov="raise"`` before anything is
    charged, and released as itself (counted raw) under ``"passthrough"`` (PRIVACY.md 20)."""
    tokens = [subject.table.words[0], OOV_TOKEN]
    ledger = Accountant()
    mechanism = subject.build(oov="raise", random_state=SEED, accountant=ledger)
    try:
        words = mechanism.privatize(tokens)
    except OOVError:
        words = None
    if words is not None or (ledger.spent, ledger.releases) != (0, 0):
        raise subject.broke(
            "PRIVACY.md 20",
            "under oov='raise' an out-of-vocabulary token was "
            + ("privatized" if words is not None else "refused after a charge"),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # passthrough's own warning
        mechanism = subject.build(oov="passthrough", random_state=SEED)
    words = mechanism.privatize(tokens)
    if len(words) != 2 or words[1] != OOV_TOKEN or words[0] not in set(subject.table.words):
        raise subject.broke(
            "PRIVACY.md 20",
            "under oov='passthrough' an out-of-vocabulary token did not come out as itself "
            "beside a privatized word",
        )
    return "oov"


def _fresh_noise(subject: _Subject) -> str:
    """Copies of one word in one call are drawn as independently as copies in separate
    calls (PRIVACY.md 11: one noise vector reused across a document measured 10.6 against
    a claimed 2): a chi-square test of homogeneity of :data:`COPIES` copies in one call
    against as many single-word calls, each on a generator of its own. Noise shared by the copies
    and followed by another random step (a coin between two candidates) passes a check
    that only asks for more than one output. Then the same through ``privatize``, against
    those fresh draws: an override that draws each distinct token once per call or reuses
    a word's earlier output would pass every check on ``_sample``. The ``_sample`` checks
    run at :data:`LARGER` times epsilon too: a Vickrey-style coin between the two nearest
    words, shared by a call's copies, hides at epsilon 1, where the two are about equally
    likely."""
    mechanism = subject.build(random_state=SEED)
    epsilon = subject.epsilon
    larger = min(epsilon * LARGER, MAX_EPSILON)
    single_calls: dict[tuple[float, int], np.ndarray] = {}
    for scale, at in enumerate(dict.fromkeys((epsilon, larger))):
        for row in (0, OOV_ID):
            key = (scale, row + 1)
            together = subject.sample(mechanism, np.full(COPIES, row), _generator(3, *key), at)
            apart = np.concatenate(
                [
                    subject.sample(mechanism, np.array([row]), _generator(4, *key, i), at)
                    for i in range(COPIES)
                ]
            )
            single_calls[at, row] = apart
            what = f"{COPIES} copies of input {row} in one call at epsilon {at:g}"
            _same_law(subject, together, apart, what)
    fresh = single_calls[epsilon, 0]  # row 0's single-word draws at the epsilon given
    word = subject.table.words[0]
    rows = {token: row for row, token in enumerate(subject.table.words)}
    one_call = np.array([rows[out] for out in mechanism.privatize([word] * COPIES)])
    _same_law(subject, one_call, fresh, f"privatize of {COPIES} copies of {word!r} in one call")
    calls = np.array([rows[mechanism.privatize([word])[0]] for _ in range(COPIES)])
    _same_law(subject, calls, fresh, f"{COPIES} calls privatize([{word!r}])")
    _secure_calls_vary(subject, word, fresh)
    return "fresh noise"


def _secure_calls_vary(subject: _Subject, word: str, fresh: np.ndarray) -> None:
    """Under secure randomness too, :data:`SECURE_CALLS` one-word calls of a word whose
    fresh draws are spread (no output above 90%) do not all return one word: a plugin
    reusing outputs only when unseeded would pass every seeded check. Not a
    test of the law (secure draws cannot be replayed): a correct mechanism fails it with
    probability below 0.9^199, about 1e-9."""
    if np.bincount(fresh).max() > 0.9 * len(fresh):
        return
    mechanism = subject.build(random_state=None)
    outputs = {mechanism.privatize([word])[0] for _ in range(SECURE_CALLS)}
    if len(outputs) == 1:
        raise subject.broke(
            "PRIVACY.md 11",
            f"under secure randomness {SECURE_CALLS} calls privatize([{word!r}]) all returned "
            "the same word, where seeded draws are spread: outputs are reused, not drawn",
        )


def _same_law(subject: _Subject, drawn: np.ndarray, fresh: np.ndarray, what: str) -> None:
    """:func:`_fresh_noise`'s verdict on one sample against fresh single-word draws."""
    p_value = _homogeneity(drawn, fresh)
    if not p_value > P_FAIL:
        raise subject.broke(
            "PRIVACY.md 11",
            f"{what} were not drawn as independently as {COPIES} single-word calls "
            f"({len(np.unique(drawn))} and {len(np.unique(fresh))} distinct outputs; "
            f"chi-square p = {p_value:.2g}): noise is not fresh per entry",
        )


def _succeeds(mechanism: Mechanism, ids: np.ndarray, epsilon: float) -> bool:
    """Whether ``_sample`` of ``ids`` returns (so the UNK id was what made it fail)."""
    try:
        mechanism._sampled(ids, _generator(9), epsilon)
    except Exception:
        return False
    return True


def _generator(*key: int) -> np.random.Generator:
    """A generator of its own for each key: every check is seeded."""
    return np.random.default_rng([SEED, *key])


def _homogeneity(first: np.ndarray, second: np.ndarray) -> float:
    """p-value of Pearson's chi-square test that two equal-sized samples of row ids come
    from one law; outputs seen fewer than 20 times in both together are pooled (expected
    counts >= 10). The G statistic rejected a correct mechanism 10-70 times more often than
    its nominal p with many cells near 5 expected (20,000 simulations);
    Pearson's was calibrated there."""
    outputs, inverse = np.unique(np.r_[first, second], return_inverse=True)
    counts = np.zeros((2, len(outputs)))
    np.add.at(counts, (np.repeat([0, 1], [len(first), len(second)]), inverse), 1)
    rare = counts.sum(axis=0) < 20
    counts = np.c_[counts[:, ~rare], counts[:, rare].sum(axis=1)]
    counts = counts[:, counts.sum(axis=0) > 0]
    if counts.shape[1] < 2:
        return 1.0
    from scipy.stats import chi2_contingency

    return float(chi2_contingency(counts, correction=False).pvalue)


def _threads(subject: _Subject) -> str:
    """Threads calling one mechanism at once, each with its own generator, get what each
    would get alone (docs/plugins.md: keep no per-call state on ``self``; a plugin keeping
    its noisy vectors on ``self`` released another thread's input word 1,734 times in
    19,200). A pass means no race was seen in :data:`ROUNDS` rounds, not that none exists.
    Python's thread switch interval is left alone: shortening it, process-wide, caught no
    more races."""
    mechanism = subject.build(random_state=SEED)
    calls = [
        (np.resize(np.roll(subject.ids, 7 * call), CALL_IDS), call)
        for call in range(THREADS * CALLS)
    ]

    def run(call: tuple[np.ndarray, int]) -> np.ndarray:
        ids, key = call
        return subject.sample(mechanism, ids, _generator(5, key), subject.epsilon)

    alone = [run(call) for call in calls]
    with ThreadPoolExecutor(THREADS) as pool:
        for _ in range(ROUNDS):
            together = list(pool.map(run, calls))
            differ = sum(not np.array_equal(a, b) for a, b in zip(alone, together, strict=True))
            if differ:
                break
    if differ:
        raise subject.broke(
            "docs/plugins.md (_sample)",
            f"{differ} of {len(calls)} calls from {THREADS} threads at once gave other "
            "outputs than the same calls one at a time: it keeps per-call state on self "
            "(another request's words can come out)",
        )
    return "threads"


def _distribution(subject: _Subject) -> list[str]:
    """A ``distribution(word)`` is the law the sampler draws from (PRIVACY.md T2: G-test,
    p above 1e-6); calibration relies on it. Skipped when there is none."""
    mechanism = subject.build(random_state=SEED)
    size = len(subject.table)
    for row in (0, size // 2, OOV_ID):
        try:
            law = np.asarray(mechanism.distribution(row), dtype=np.float64)
        except NotImplementedError:
            return []
        if law.shape != (size,) or not (np.all(law >= 0) and abs(law.sum() - 1) < 1e-9):
            raise subject.broke("PRIVACY.md T2", f"distribution({row}) is not a law over rows")
        drawn = mechanism.privatize_ids(np.full(LAW_DRAWS, row))
        p_value = g_test(np.bincount(drawn, minlength=size), law)
        if not p_value > P_FAIL:
            raise subject.broke(
                "PRIVACY.md T2",
                f"distribution({row}) disagrees with the sampler (G-test p = {p_value:.2g} "
                f"over {LAW_DRAWS} seeded draws)",
            )
    return ["distribution"]


def _record(subject: _Subject) -> str:
    """The release record names the mechanism, the epsilon and randomness it was charged and
    drawn at, and the accountant was charged exactly epsilon per token (PRIVACY.md 12, 13)."""
    for seed, mode in ((SEED, "seeded"), (None, "secure")):
        ledger = Accountant()
        mechanism = subject.build(random_state=seed, accountant=ledger)
        words = subject.table.words
        tokens = [*words[:7], words[0], OOV_TOKEN]  # a repeat: each occurrence is charged
        mechanism.privatize(tokens)
        record = mechanism.last_guarantee
        expected = (type(mechanism).name, subject.epsilon, mode, len(tokens), "unk")
        found: tuple[Any, ...] | None = None
        if record is not None:
            found = (record.mechanism, record.epsilon, record.rng, record.tokens_privatized)
            found += (record.oov_policy,)
        if found != expected:
            raise subject.broke(
                "PRIVACY.md 12",
                f"the record of a release of {len(tokens)} tokens states (mechanism, epsilon, "
                f"rng, tokens, oov) {found}, not {expected}",
            )
        charged = (ledger.spent, ledger.releases, ledger.tokens_privatized)
        if not np.allclose(charged, (subject.epsilon * len(tokens), 1, len(tokens)), rtol=1e-9):
            raise subject.broke(
                "PRIVACY.md 13",
                f"a release of {len(tokens)} tokens at epsilon {subject.epsilon:g} charged "
                f"(spent, releases, tokens) {charged}",
            )
    return "record"
