"""Threads sharing mechanisms, accountants and the spaCy component (docs/front-doors.md,
"Threads:"; concurrency review 10).

Each test runs its calls on a few threads started together, with a tiny switch interval so
that threads interleave inside the critical sections. Under the GIL a lock removed outright
may go unnoticed (review 10, N1), so the accountant and law-cache tests force a thread
switch inside the sections their locks guard (a yielding cap check, a yielding entry table):
a removed lock then shows under the GIL too.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import numpy as np
import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins import _random, doors
from dxp_plugins.errors import BudgetExceededError
from dxp_plugins.mechanisms import madlib
from dxp_plugins.mechanisms import tem as tem_module
from dxp_plugins.pipeline import component as component_module
from tests.fixtures import BUILTIN_MECHANISMS, FAST_OPTIONS, one_faiss_thread  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_faiss_thread")

T = TypeVar("T")

#: The component's embeddings: the same rows as the glove_5k fixture.
COMPONENT = {"epsilon": 0.5, "vocab_size": 5000}
#: Seconds any wait of these tests may take: a regression fails the test instead of hanging it.
WAIT = 120.0


@pytest.fixture(autouse=True)
def fast_switching() -> Iterator[None]:
    """Switch threads every microsecond (default 5 ms) so that they interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def in_threads(fn: Callable[[int], T], calls: int, threads: int = 4) -> list[T]:
    """``fn(i)`` for ``i`` in ``range(calls)``, call ``i`` on thread ``i % threads``; the
    threads start together and every one makes calls. The first error is re-raised."""
    results: list[Any] = [None] * calls
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads, timeout=WAIT)

    def work(first: int) -> None:
        try:
            barrier.wait()
            for i in range(first, calls, threads):
                results[i] = fn(i)
        except BaseException as error:  # re-raised below, in the test's thread
            errors.append(error)

    workers = [threading.Thread(target=work, args=(t,), daemon=True) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(WAIT)
    assert not any(worker.is_alive() for worker in workers), "threads still running: a hang"
    if errors:
        raise errors[0]
    return results


@contextlib.contextmanager
def flipping_epsilon(mechanism: Any, values: tuple[float, float], pause: float) -> Iterator[None]:
    """Another thread reassigns ``mechanism.epsilon`` to each of ``values`` in turn (sleeping
    ``pause`` seconds between) while the block runs."""
    stop = threading.Event()

    def flip() -> None:
        k = 0
        while not stop.is_set():
            mechanism.epsilon = values[k % 2]
            k += 1
            time.sleep(pause)

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    try:
        yield
    finally:
        stop.set()
        flipper.join(WAIT)


class RecordingGenerator:
    """Delegates to a numpy Generator, keeping a copy of every float array drawn."""

    def __init__(self, generator: np.random.Generator, sink: list[np.ndarray]) -> None:
        self._generator = generator
        self._sink = sink

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._generator, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if isinstance(out, np.ndarray) and out.dtype.kind == "f":
                self._sink.append(out.ravel().copy())
            return out

        return call


# -- one generator, drawn from by every thread ---------------------------------------------------
@pytest.mark.parametrize("kind", BUILTIN_MECHANISMS)
@pytest.mark.parametrize("seed", [None, 7])
def test_threads_sharing_a_mechanism_never_draw_the_same_noise(glove_5k, monkeypatch, kind, seed):
    """Catches threads replaying one noise stream, e.g. a per-thread copy of the shared
    generator: continuous draws never repeat exactly."""
    draws: list[np.ndarray] = []
    generator = _random.RandomSource.generator
    monkeypatch.setattr(
        _random.RandomSource, "generator", lambda self: RecordingGenerator(generator(self), draws)
    )
    options = FAST_OPTIONS.get(kind, {})
    mechanism = dxp.make_mechanism(kind, glove_5k, epsilon=10.0, random_state=seed, **options)
    ids = np.random.default_rng(0).integers(-1, len(glove_5k), (16, 8))
    in_threads(lambda i: mechanism.privatize_ids(ids[i]), len(ids))
    values = np.concatenate(draws)
    assert len(values) > 100
    assert len(np.unique(values)) == len(values)


def test_seeded_source_is_keyed_once_when_threads_first_use_it(monkeypatch):
    """Catches keying without the source's lock: each thread would key the seed's own stream
    and replay the others' noise."""
    keyings = []
    seeded = _random._seeded_generator

    def slow(seed, stream):
        keyings.append(stream)
        time.sleep(0.01)  # a wide window: the lock must still make the others wait
        return seeded(seed, stream)

    monkeypatch.setattr(_random, "_seeded_generator", slow)
    with pytest.warns(dxp.SeededRandomnessWarning):
        source = _random.RandomSource(3)
    generators = in_threads(lambda i: source.generator(), 4)
    assert keyings == [()]
    assert all(generator is generators[0] for generator in generators)


# -- the accountant ------------------------------------------------------------------------------
def test_concurrent_charges_sum_exactly_and_never_pass_the_cap(monkeypatch):
    """Catches a check-then-add outside the accountant's lock (a cap passed): the check
    yields the GIL, so without the lock other threads pass the same check before the add."""
    refusal = dxp.Accountant._refusal

    def yielding(self, spend, unit):
        refusal(self, spend, unit)
        time.sleep(0)

    monkeypatch.setattr(dxp.Accountant, "_refusal", yielding)
    accountant = dxp.Accountant(cap=500.0)

    def charge(i: int) -> int:
        try:
            accountant.charge(0.5, 1)
        except BudgetExceededError:
            return 0
        return 1

    accepted = sum(in_threads(charge, 1600))
    assert accepted == 1000
    assert accountant.spent == 500.0  # multiples of 0.5 sum exactly
    assert accountant.releases == accountant.tokens_privatized == accepted


def test_each_release_is_recorded_and_charged_at_the_epsilon_of_its_noise(glove_5k, monkeypatch):
    """While another thread flips epsilon (0.5 <-> 2.0), each release's records, noise and
    charge use one epsilon. Catches noise drawn at a re-read ``self.epsilon`` and lost
    charges; a refused release draws nothing."""
    seen = threading.local()
    sample_noise = madlib.sample_noise

    def recording(rng, count, dim, epsilon):
        seen.epsilons.append(epsilon)
        return sample_noise(rng, count, dim, epsilon)

    monkeypatch.setattr(madlib, "sample_noise", recording)
    accountant = dxp.Accountant(cap=200.0)
    mechanism = dxp.Madlib(glove_5k, 0.5, accountant=accountant)

    def release(i: int) -> float:
        seen.epsilons = []
        words = list(glove_5k.words[i % 900 : i % 900 + 1 + i % 4])
        try:
            _, records = mechanism.privatize_batch([words])
        except BudgetExceededError:
            assert seen.epsilons == []  # refused before any noise
            return 0.0
        assert {record.epsilon for record in records} == set(seen.epsilons)
        return sum(record.spend for record in records)

    with flipping_epsilon(mechanism, (0.5, 2.0), pause=0.0):
        spends = in_threads(release, 200)
    assert sum(spends) == accountant.spent <= accountant.cap


# -- TEM's law cache and scratch -------------------------------------------------------------------
def test_tem_law_cache_holds_the_right_law_for_each_key(glove_5k):
    """An evicting cache shared by threads while epsilon flips (5 <-> 10). Catches a law
    cached under another epsilon's key, and an unlocked put (``nbytes`` no longer the
    entries' sum, or an entry evicted twice): the cache's entry table yields the GIL on
    every removal, so without the lock other threads enter a put half done."""

    class YieldingEntries(dict):
        def pop(self, *args):
            time.sleep(0)
            return super().pop(*args)

    words = np.r_[-1, np.arange(0, 120), np.arange(3000, 3040)]
    mechanism = dxp.TEM(glove_5k, 10.0, cache_mb=0.5)
    mechanism.cache._entries = YieldingEntries()
    rng = np.random.default_rng(1)
    batches = [rng.choice(words, 6) for _ in range(300)]
    with flipping_epsilon(mechanism, (5.0, 10.0), pause=0.0005):
        in_threads(lambda i: mechanism.privatize_ids(batches[i]), len(batches))
    cache = mechanism.cache
    entries = dict(cache._entries)
    assert cache.nbytes == sum(law.nbytes for law, _ in entries.values()) <= cache.max_bytes
    references = {epsilon: dxp.TEM(glove_5k, epsilon, cache_mb=0) for epsilon in (5.0, 10.0)}
    for (key, word), (law, _) in entries.items():
        reference = references[key[3]]
        assert key[2] == reference.gamma
        np.testing.assert_allclose(
            law.probabilities(len(glove_5k)), reference.distribution(word), rtol=1e-9, atol=1e-15
        )


def test_tem_scratch_laws_are_not_overwritten_by_other_threads(glove_5k, monkeypatch):
    """``cache_mb=0``: each law lives in its thread's scratch, and must be its word's when
    yielded and unchanged once sampled. Catches a scratch buffer shared by threads."""
    words = np.arange(0, 400, 7)
    mechanism = dxp.TEM(glove_5k, 10.0, cache_mb=0)
    reference = {int(word): mechanism.distribution(int(word)) for word in words}
    word_laws = tem_module.TEM._word_laws
    problems = []

    def checked(self, unique, epsilon, gamma):
        laws = word_laws(self, unique, epsilon, gamma)
        for word, law in zip(unique.tolist(), laws, strict=True):
            before = law.probabilities(len(glove_5k))
            if not np.allclose(before, reference[word], rtol=1e-9, atol=1e-15):
                problems.append(("wrong law", word))
            yield law
            time.sleep(0)
            if not np.array_equal(before, law.probabilities(len(glove_5k))):
                problems.append(("overwritten while sampled", word))

    monkeypatch.setattr(tem_module.TEM, "_word_laws", checked)
    rng = np.random.default_rng(2)
    batches = [rng.choice(words, 5) for _ in range(100)]
    in_threads(lambda i: mechanism.privatize_ids(batches[i]), len(batches))
    assert problems == []


def test_tem_keeps_few_work_buffers_however_many_threads_used_it(glove_5k):
    """Each thread that ran a release kept its own distance block (64 MiB of address space,
    its touched pages resident) for as long as it lived: 1.36 GB of RSS for 32 pooled
    threads at 400k words (service review, seventeenth session). Threads that each ran a
    release and are still alive now hold none; the TEM keeps at most KEPT_BUFFERS."""
    import tracemalloc

    mechanism = dxp.TEM(glove_5k, 10.0, cache_mb=0)
    mechanism.privatize(["the"])
    threads = 8
    ran, leave = threading.Barrier(threads + 1, timeout=WAIT), threading.Event()

    def release_then_stay_alive(i):
        mechanism.privatize(["film", "was", "a", "quiet", "triumph"][: 1 + i % 5])
        ran.wait()
        leave.wait(WAIT)

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        workers = [
            threading.Thread(target=release_then_stay_alive, args=(i,), daemon=True)
            for i in range(threads)
        ]
        for worker in workers:
            worker.start()
        ran.wait()  # every thread has run its release and is alive
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        leave.set()
        tracemalloc.stop()
    for worker in workers:
        worker.join(WAIT)
    block = tem_module.BLOCK_BYTES + 8 * (len(glove_5k) + tem_module.LAW_BLOCK)
    assert held < (tem_module.KEPT_BUFFERS + 0.5) * block, held / block
    assert len(mechanism._buffers) <= tem_module.KEPT_BUFFERS


# -- the spaCy component -------------------------------------------------------------------------
def test_component_shared_by_threads_gives_each_doc_its_own_record(glove_5k):
    """Catches a record taken from state shared by calls (``mechanism.last_guarantee``)
    instead of the call's own: each Doc's guarantee counts its own tokens."""
    nlp = spacy.blank("en")
    component = nlp.add_pipe("dxp_privatizer", config=COMPONENT)
    component.initialize()
    rng = np.random.default_rng(3)
    alpha = [word for word in glove_5k.words[:3000] if word.isalpha()]
    texts = [" ".join(rng.choice(alpha, 1 + i % 9)) + " ." for i in range(120)]
    records = in_threads(lambda i: nlp(texts[i])._.dxp_guarantee, len(texts), threads=8)
    assert len({id(record) for record in records}) == len(records)
    for text, record in zip(texts, records, strict=True):
        assert record["tokens_privatized"] == len(text.split()) - 1
        assert record["tokens_passed_through"] == 1
    assert sum(record["spend"] for record in records) == component.accountant.spent


def slow_build(monkeypatch, seconds: float) -> tuple[threading.Event, list[object]]:
    """Make the component's mechanism build take ``seconds``; returns an event set when a
    build starts and the list of mechanisms built."""
    building = threading.Event()
    built: list[object] = []
    build = doors.DoorSettings.build_mechanism

    def slow(self, *args, **kwargs):
        building.set()
        time.sleep(seconds)
        mechanism = build(self, *args, **kwargs)
        built.append(mechanism)
        return mechanism

    monkeypatch.setattr(doors.DoorSettings, "build_mechanism", slow)
    return building, built


def test_accountant_assigned_while_the_component_builds_its_mechanism(monkeypatch):
    """Review 10, F1: a capped accountant assigned while another thread builds the
    mechanism (its first Doc) is the one every later release charges (the first Doc may
    still be charged to the previous one). Catches a setter that passes the accountant on
    only to a mechanism already stored (the cap was bypassed for good)."""
    building, _ = slow_build(monkeypatch, 0.05)
    nlp = spacy.blank("en")
    component = nlp.add_pipe("dxp_privatizer", config=COMPONENT)
    outcome: list[object] = []

    def first_doc() -> None:
        try:
            outcome.append(nlp("the first document"))
        except BudgetExceededError as error:  # the cap may already apply to it
            outcome.append(error)

    first = threading.Thread(target=first_doc, daemon=True)
    first.start()
    assert building.wait(WAIT)
    capped = dxp.Accountant(cap=0.0)
    component.accountant = capped
    first.join(WAIT)
    assert not first.is_alive(), "the first Doc never finished: a hang"
    assert len(outcome) == 1
    assert component.mechanism.accountant is capped
    with pytest.raises(BudgetExceededError):
        nlp("a document after the cap was set")
    assert capped.spent == 0.0


def test_threads_at_first_use_build_one_mechanism(monkeypatch):
    """Review 10, F1: threads whose first Docs arrive together wait for one build. Catches
    a check-then-build without the component's lock (one mechanism per thread)."""
    _, built = slow_build(monkeypatch, 0.02)
    nlp = spacy.blank("en")
    component = nlp.add_pipe("dxp_privatizer", config=COMPONENT)
    records = in_threads(lambda i: nlp("the game")._.dxp_guarantee, 4)
    assert len(built) == 1
    assert component.mechanism is built[0]
    assert sum(record["spend"] for record in records) == component.accountant.spent == 4 * 2 * 0.5


@pytest.mark.parametrize("mode", ["annotate", "replace"])
def test_doc_freed_by_a_memory_zone_mid_call_is_never_charged_without_a_release(monkeypatch, mode):
    """Review 10, F2: another thread's ``nlp.memory_zone()`` may free a Doc's strings while
    the component works on it. Everything the component reads from the input Doc is read
    before the charge, so the call either fails with nothing charged or returns its release
    (in "replace" mode the new Doc's own strings are subject to an open zone too: documented).
    Catches a read of the Doc (e.g. ``doc.text``) after the charge: spend with no release."""
    nlp = spacy.blank("en")
    component = nlp.add_pipe("dxp_privatizer", config={**COMPONENT, "mode": mode})
    component.initialize()
    zone = nlp.memory_zone()
    zone.__enter__()
    open_zone = [zone]
    freed = []
    doc = nlp.make_doc("the hockey game")
    privatize_tokenized = component_module.privatize_tokenized

    def zone_ends_after_the_charge(*args, **kwargs):
        results = privatize_tokenized(*args, **kwargs)
        open_zone.pop().__exit__(None, None, None)  # as if another thread's zone ended now
        freed.append("hockey" not in nlp.vocab.strings)  # the Doc's strings are gone
        return results

    monkeypatch.setattr(component_module, "privatize_tokenized", zone_ends_after_the_charge)
    try:
        private = component(doc)
    except Exception as error:
        assert component.accountant.spent == 0.0, f"charged, then failed: {error!r}"
    else:
        assert private._.dxp_guarantee["spend"] == component.accountant.spent == 3 * 0.5
    finally:
        for left_open in open_zone:
            left_open.__exit__(None, None, None)
    assert freed == [True]


def test_doc_whose_strings_are_gone_is_refused_without_the_raw_words_hash():
    """Review 10: a Doc whose strings a memory zone freed before the component ran fails
    before any charge, and the error is the library's own: spaCy's carries the hash of a
    raw word, which a dictionary inverts."""
    nlp = spacy.blank("en")
    component = nlp.add_pipe("dxp_privatizer", config=COMPONENT)
    component.initialize()
    with nlp.memory_zone():
        doc = nlp.make_doc("the zyxwvutsr game")
    with pytest.raises(ValueError, match="strings are gone") as caught:
        component(doc)
    assert "E018" not in str(caught.value)
    assert str(nlp.vocab.strings["zyxwvutsr"]) not in str(caught.value)
    assert component.accountant.spent == 0.0
