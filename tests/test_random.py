"""Randomness policy (PRIVACY.md 16-19)."""

from __future__ import annotations

import copy as copy_module
import itertools
import multiprocessing
import os
import pickle
import warnings
from typing import ClassVar

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins._random import RandomSource
from dxp_plugins.errors import SeededRandomnessWarning


def test_default_source_is_chacha_keyed_by_the_os():
    from randomgen import ChaCha

    source = RandomSource()
    assert source.mode == "secure" and source.seed is None
    assert isinstance(source.generator().bit_generator, ChaCha)
    other = RandomSource()
    assert not np.array_equal(source.generator().random(8), other.generator().random(8))


def test_default_key_is_256_os_bits_and_chacha_has_20_rounds(monkeypatch):
    """A weak key or reduced rounds is invisible to any statistical test: check both."""
    import dxp_plugins._random as random_module

    key = bytes(range(1, 33))
    requested = []

    def urandom(n: int) -> bytes:
        requested.append(n)
        return key[:n]

    monkeypatch.setattr(random_module.os, "urandom", urandom)
    state = RandomSource().generator().bit_generator.state["state"]
    assert requested == [32] and state["rounds"] == 20
    np.testing.assert_array_equal(state["keysetup"], np.frombuffer(key, dtype="<u4"))


def _simd_per_generator() -> bool:
    """Whether randomgen has SIMD here and switches it per generator (randomgen >= 2.5)."""
    from randomgen import ChaCha

    from dxp_plugins._random import _simd_switch_is_per_generator

    return bool(ChaCha(seed=0).use_simd) and _simd_switch_is_per_generator()


@pytest.mark.parametrize("simd", [True, False])
def test_generators_use_the_implementation_the_probe_chose(monkeypatch, simd):
    """randomgen's SIMD and scalar ChaCha give the same values; which one draws is the
    probe's choice, for secure and seeded sources alike (the seeded stream is the seed's
    ChaCha20 stream either way)."""
    if not _simd_per_generator():
        pytest.skip("randomgen has no SIMD here, or one process-wide switch (before 2.5)")
    from randomgen import ChaCha

    import dxp_plugins._random as random_module

    monkeypatch.setattr(random_module, "_simd_is_faster", lambda: simd)
    secure = random_module._secure_generator()
    seeded = random_module._seeded_generator(5, ())
    assert secure.bit_generator.use_simd == simd and seeded.bit_generator.use_simd == simd
    reference = np.random.Generator(ChaCha(seed=np.random.SeedSequence(5), rounds=20))
    np.testing.assert_array_equal(seeded.standard_normal(999), reference.standard_normal(999))


class _TimedChaCha:
    """Stands in for randomgen's ChaCha in the probe's timing test: each ``random_raw``
    takes the time of the implementation switched on (a fake clock), nothing else."""

    seconds: ClassVar[dict[bool, float]] = {True: 1.0, False: 2.0}
    now = 0.0
    calls: ClassVar[list[bool]] = []

    def __init__(self, **_: object) -> None:
        self.use_simd = True

    def random_raw(self, size: int) -> None:
        type(self).calls.append(self.use_simd)
        type(self).now += self.seconds[self.use_simd]


@pytest.mark.parametrize("simd_seconds, expected", [(1.0, True), (3.0, False)])
def test_the_probe_times_both_implementations_and_picks_the_faster(
    monkeypatch, simd_seconds, expected
):
    """Three alternate timings of each implementation; the faster best time wins (the
    scalar one takes 2 s per call on the fake clock)."""
    import types

    import randomgen

    import dxp_plugins._random as random_module

    monkeypatch.setattr(_TimedChaCha, "seconds", {True: simd_seconds, False: 2.0})
    monkeypatch.setattr(_TimedChaCha, "calls", [])
    monkeypatch.setattr(randomgen, "ChaCha", _TimedChaCha)
    clock = types.SimpleNamespace(perf_counter=lambda: _TimedChaCha.now)
    monkeypatch.setattr(random_module, "time", clock)
    assert random_module._simd_is_faster.__wrapped__() is expected
    assert _TimedChaCha.calls == [True, False] * 3


def test_the_probe_keeps_randomgens_choice_where_the_switch_is_process_wide(monkeypatch):
    """randomgen < 2.5: one switch for every ChaCha, turned on again by each new one. The
    probe then neither times nor switches anything (it would reach other code's generators
    and be undone at random)."""
    import randomgen

    import dxp_plugins._random as random_module

    class ProcessWide:
        switch = True

        def __init__(self, **_: object) -> None:
            type(self).switch = True

        @property
        def use_simd(self) -> bool:
            return type(self).switch

        @use_simd.setter
        def use_simd(self, flag: bool) -> None:
            type(self).switch = flag

        def random_raw(self, size: int) -> None:
            raise AssertionError("timed a process-wide switch")

    monkeypatch.setattr(randomgen, "ChaCha", ProcessWide)
    assert random_module._simd_is_faster.__wrapped__() is True
    assert ProcessWide.switch is True


def test_warnings_name_the_users_line(glove_5k):
    """Whatever the door, a warning points at the caller's code, not into the library or
    the framework that called it (spaCy's add_pipe, sklearn's Pipeline.fit)."""
    import spacy
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    calls = {
        "Madlib": lambda: dxp.Madlib(glove_5k, 2.0, random_state=1),
        "make_mechanism": lambda: dxp.make_mechanism("tem", glove_5k, epsilon=2, random_state=1),
        "BRR": lambda: dxp.BRR(glove_5k, 2.0, random_state=1),
        "oov passthrough": lambda: dxp.Madlib(glove_5k, 2.0, oov="passthrough"),
        "spaCy": lambda: spacy.blank("en").add_pipe(
            "dxp_privatizer", config={"epsilon": 2.0, "seed": 1}
        ),
        "Pipeline": lambda: make_pipeline(  # not the last step: fit through joblib's Memory
            dxp.TextPrivatizer(epsilon=2.0, embeddings=glove_5k, random_state=1),
            CountVectorizer(),
        ).fit(["ice"]),
    }
    for door, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        files = {w.filename for w in caught if issubclass(w.category, dxp.PrivacyWarning)}
        assert files == {__file__}, door


def test_numpy_global_state_is_not_used(glove_5k):
    outputs = []
    for _ in range(2):
        np.random.seed(0)  # noqa: NPY002 -- the legacy global state must have no effect
        outputs.append(dxp.Madlib(glove_5k, epsilon=2).privatize_ids(np.arange(200)))
    assert not np.array_equal(*outputs)


def test_seeding_is_an_explicit_warned_opt_in(glove_5k):
    with pytest.warns(dxp.SeededRandomnessWarning):
        first = dxp.Madlib(glove_5k, epsilon=2, random_state=7)
    second = dxp.Madlib(glove_5k, epsilon=2, random_state=7)
    ids = np.arange(300)
    np.testing.assert_array_equal(first.privatize_ids(ids), second.privatize_ids(ids))
    assert first.last_guarantee.rng == "seeded"
    assert dxp.Madlib(glove_5k, epsilon=2).guarantee(1).rng == "secure"


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True, np.random.default_rng(0)])
def test_bad_seeds_are_rejected(seed):
    with pytest.raises((TypeError, ValueError)):
        RandomSource(seed)


def test_state_never_leaves_the_object():
    source = RandomSource()
    source.generator().random(5)
    key = source.generator().bit_generator.state["state"]["keysetup"]
    assert repr(source) == "RandomSource(secure)"
    blob = pickle.dumps(source)
    assert source.__getstate__() == {"seed": None, "origin_pid": os.getpid()}
    assert key.tobytes() not in blob
    restored = pickle.loads(blob)
    assert not np.array_equal(restored.generator().random(8), source.generator().random(8))


def test_mechanism_pickle_carries_no_generator(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=3)
    mech.privatize(["hockey"])
    clone = pickle.loads(pickle.dumps(mech))
    assert clone._random._generator is None
    assert clone.privatize(["hockey"])  # re-keys on first use


def _child_draws(source: RandomSource, as_pid: int | None = None) -> np.ndarray:
    """What ``source`` draws in a forked child (``as_pid``: the pid the child is handed)."""
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # child: whatever happens, it never returns into pytest
        code = 1
        try:
            os.close(read)
            if as_pid is not None:  # in the child only: it exits below
                os.getpid = lambda: as_pid  # type: ignore[assignment]
            assert as_pid is not None or os.getpid() != parent
            os.write(write, source.generator().random(4).tobytes())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    data = b""
    while chunk := os.read(read, 32):  # until the child exits: a failed child wrote nothing
        data += chunk
    os.close(read)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and len(data) == 32, "the forked child failed"
    return np.frombuffer(data, dtype=np.float64)


@pytest.mark.parametrize("seed", [None, 11])
def test_forked_children_never_replay_the_parent_stream(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source = RandomSource(seed)
    source.generator()  # parent generator exists before the fork
    child_one = _child_draws(source)
    child_two = _child_draws(source)
    parent = source.generator().random(4)
    assert not np.array_equal(child_one, parent)
    assert not np.array_equal(child_one, child_two)


@pytest.mark.parametrize("seed", [None, 11])
def test_a_forked_child_handed_its_ancestors_pid_never_replays_it(seed):
    """Pids are reused: a daemon forked before a process exits can later fork a child that
    is handed that process's pid, with the generator state it had at the first fork. Keyed
    by pid alone the child replayed what the process drew after that fork, secure noise
    included (seeded reproducibility review F3: seen with ``unshare --pid``); a fork hook
    now counts forks, so the child re-keys whatever pid it is given."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source = RandomSource(seed)
    first = source.generator().random(4)  # keyed here before the fork
    child = _child_draws(source, as_pid=os.getpid())
    assert not np.array_equal(child, source.generator().random(4))
    # Nor the stream's start (review 28 F4, M23: re-keyed as the seed's own process, a
    # seeded child replayed the ancestor's first draws).
    assert not np.array_equal(child, first)


def test_seeded_source_replays_only_in_its_own_process():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        a, b = RandomSource(5), RandomSource(5)
    np.testing.assert_array_equal(a.generator().random(4), b.generator().random(4))


@pytest.mark.parametrize("seed", [None, 5])
def test_copies_never_share_a_generator_or_replay_a_stream(seed):
    import copy

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source = RandomSource(seed)
    first = source.generator().random(4)
    blob = pickle.dumps(source)
    copies = [copy.deepcopy(source), pickle.loads(blob), pickle.loads(blob)]
    draws = [duplicate.generator().random(4) for duplicate in copies]
    assert all(duplicate.generator() is not source.generator() for duplicate in copies)
    assert len({d.tobytes() for d in [first, *draws]}) == 4  # no copy replays another


def _worker_draws(blob: bytes) -> bytes:
    return pickle.loads(blob).generator().random(4).tobytes()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_tasks_in_one_worker_never_replay_a_seeded_stream():
    """Pool.map and joblib unpickle the mechanism once per task: two tasks in one worker
    must not draw the same noise for different documents (PRIVACY.md 11, 19)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        blob = pickle.dumps(RandomSource(7))
    with multiprocessing.get_context("fork").Pool(1) as pool:
        draws = pool.map(_worker_draws, [blob] * 4, chunksize=1)
    assert len(set(draws)) == 4


def test_seeded_copies_in_processes_given_one_pid_never_replay(monkeypatch):
    """PRIVACY.md 19: pids are reused (a long-running pool, maxtasksperchild). Two worker
    processes that are handed the same pid, each starting from the keying count it
    inherited, must still draw different streams; the original's stream stays the seed's."""

    from randomgen import ChaCha

    import dxp_plugins._random as random_module

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source, original = RandomSource(5), RandomSource(5)
    blob = pickle.dumps(source)
    monkeypatch.setattr(random_module.os, "getpid", lambda: 4242)  # one pid, handed out twice
    draws = []
    for _ in range(2):  # each "process" starts with the count inherited from the parent
        monkeypatch.setattr(random_module, "_KEYINGS", itertools.count())
        draws.append(pickle.loads(blob).generator().random(4).tobytes())
    assert draws[0] != draws[1]
    monkeypatch.undo()
    reference = np.random.Generator(ChaCha(seed=np.random.SeedSequence(5), rounds=20))
    np.testing.assert_array_equal(original.generator().random(4), reference.random(4))


# -- found by mutation testing (review 8) -------------------------------------------------
def test_seeded_releases_draw_fresh_noise_on_every_call(glove_5k):
    """Kills R5 (the generator re-made at every call: a seeded mechanism would replay the
    seed's stream, so every call on the same input gives the same output, PRIVACY.md 11).
    Seeded with a fixed seed, so the test is deterministic."""
    with pytest.warns(dxp.SeededRandomnessWarning):
        mech = dxp.Madlib(glove_5k, epsilon=3.0, random_state=7)
    ids = np.arange(200)
    first, second = mech.privatize_ids(ids), mech.privatize_ids(ids)
    assert not np.array_equal(first, second)
    again = dxp.Madlib(glove_5k, epsilon=3.0, random_state=7)
    np.testing.assert_array_equal(again.privatize_ids(ids), first)  # still reproducible
    np.testing.assert_array_equal(again.privatize_ids(ids), second)


def test_independent_streams_are_reproducible_distinct_and_not_the_noise_stream():
    """Kills R6 (independent(stream) returns the seed's own noise stream, for every stream
    number: LPLP's published grouping and its DP histogram would draw the very numbers the
    release noise draws) and R7 (a secure source's independent() hands out its own noise
    generator). independent() had no direct test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source, twin = RandomSource(5), RandomSource(5)
    side = source.independent(1).random(8)
    np.testing.assert_array_equal(side, twin.independent(1).random(8))  # reproducible
    assert not np.array_equal(side, source.independent(2).random(8))  # per stream number
    noise = twin.generator().random(8)
    assert not np.array_equal(side, noise)
    assert not np.array_equal(source.independent(2).random(8), noise)
    secure = RandomSource()
    generator = secure.generator()
    other = secure.independent(1)
    assert other is not generator and other is not secure.independent(1)
    assert not np.array_equal(other.random(8), secure.independent(1).random(8))


_NOT_REPRODUCIBLE = "draws a stream of its own, not the seed's"


def _round_trip(source: RandomSource) -> RandomSource:
    return pickle.loads(pickle.dumps(source))


@pytest.mark.parametrize("make_copy", [copy_module.deepcopy, _round_trip])
def test_a_seeded_copy_says_it_is_not_reproducible(make_copy):
    """Open work 9 (spaCy review U3): a copy's stream is the seed's plus fresh OS bits, so a
    seeded n_process / joblib run is not reproducible although records say "seeded"."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        seeded, secure = RandomSource(3), RandomSource()
    with pytest.warns(SeededRandomnessWarning, match=_NOT_REPRODUCIBLE) as caught:
        make_copy(seeded).generator()
    assert len(caught) == 1 and caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_copy(secure).generator()  # secure copies are what they claim: nothing to say
        RandomSource(None).generator()


def test_a_forked_seeded_source_says_it_is_not_reproducible():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededRandomnessWarning)
        source = RandomSource(4)
    source.generator()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report what its first draw warned; never returns into pytest
        try:
            os.close(read)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                source.generator()
            messages = " | ".join(str(w.message) for w in caught)
            os.write(write, messages.encode()[:4000])
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as reader:
        report = reader.read().decode()
    os.waitpid(pid, 0)
    assert "forked into another process" in report and _NOT_REPRODUCIBLE in report


MAIN_SCRIPT_WORKERS = """
import multiprocessing
import os
import sys

import numpy as np

import dxp_plugins as dxp

WORDS = [f"w{i}" for i in range(300)]
TABLE = dxp.EmbeddingTable(WORDS, np.random.default_rng(0).normal(size=(300, 8)))
MECH = dxp.Madlib(TABLE, epsilon=2.0, random_state=7)  # top level: re-run by each worker


def module_level_object(queue):
    queue.put(MECH.privatize_ids(np.arange(300)).tobytes())


def imported_module_object(queue):
    import seeded_module  # builds a seeded mechanism at its top level, in each worker

    queue.put(seeded_module.MECH.privatize_ids(np.arange(300)).tobytes())


def seeded_in_a_task(queue):
    mech = dxp.Madlib(TABLE, epsilon=2.0, random_state=7)
    queue.put(mech.privatize_ids(np.arange(300)).tobytes())


if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    for task in (module_level_object, imported_module_object, seeded_in_a_task):
        queue = context.Queue()
        workers = [context.Process(target=task, args=(queue,)) for _ in range(2)]
        for worker in workers:
            worker.start()
        draws = [queue.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join()
        parent = MECH.privatize_ids(np.arange(300)).tobytes() if task is seeded_in_a_task else b""
        print(task.__name__, draws[0] == draws[1], parent in draws)
"""


@pytest.mark.parametrize(
    "start",
    [m for m in ("spawn", "forkserver", "fork") if m in multiprocessing.get_all_start_methods()],
)
def test_workers_rerunning_module_code_never_replay_its_seeded_stream(tmp_path, start):
    """spawn and forkserver workers run the main script's top level again, and every
    worker runs the top level of a module it imports: a seeded mechanism built there was
    an original in every worker, and each drew the seed's own stream on its own documents
    (data-pipeline review F4, diff review D2; forkserver is Python 3.14's default). Now
    keyed like a copy, with a warning; a task that seeds its own object still draws the
    seed's stream (reproducible experiments), which is the parent's."""
    import subprocess
    import sys

    script = tmp_path / "main_script.py"  # a file: workers import the main module
    script.write_text(MAIN_SCRIPT_WORKERS, encoding="utf-8")
    module = MAIN_SCRIPT_WORKERS.split("\n\n\ndef ")[0]  # imports, table and MECH
    (tmp_path / "seeded_module.py").write_text(module, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), start], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:3] == [
        "module_level_object False False",
        "imported_module_object False False",
        "seeded_in_a_task True True",
    ]
    # and says so (how often depends on the start method and the Python: 3.14's
    # forkserver runs the main script once, in the server, and forks workers from it)
    assert "module-level code in a worker" in done.stderr
