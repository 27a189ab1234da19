"""Randomness policy (PRIVACY.md 16-19).

Every object that draws noise owns one :class:`RandomSource`:

* default (``seed=None``): a ChaCha20 generator (randomgen) keyed with 256 bits from the
  operating system -- cryptographically secure, never numpy's global state;
* seeded (``seed=int``): an explicit opt-in for reproducible experiments; it warns with
  :class:`~dxp_plugins.errors.SeededRandomnessWarning` and guarantees say ``"seeded"``.

The generator never leaves the object: it is excluded from pickles and ``repr``.

Only the original object, in the process that created it, draws the seed's own stream
(that is what makes a seeded run reproducible). Every other keying gets a stream of its
own: after a ``fork`` (counted by a fork hook, not read from the pid alone: a forked child
handed a pid its ancestor had, pids being reused, re-keys all the same) a secure source
draws a fresh OS key and a seeded one derives a
stream from ``(seed, pid, n, r)``, where ``n`` counts such keyings in the process and ``r``
is 128 bits from the operating system (two processes that are handed the same pid, with
the same count inherited from their parent, still differ); a deep copy or an unpickled copy
does the same, in any process. So worker processes (``nlp.pipe(n_process=2)``), the tasks
one worker runs (``Pool.map`` and joblib unpickle a mechanism per task) and copies never
replay one noise stream on different documents (PRIVACY.md 11, 19). A seeded source built
while a worker re-runs the main script's top-level code (``spawn`` and ``forkserver``
workers import it as ``__mp_main__``; forkserver is Python 3.14's default on Linux) is
keyed like a copy, and so is one built by a module a ``multiprocessing`` worker imports
(loky, a lazy import in a task): otherwise every worker would build the same object again
and draw the seed's own stream on its own documents. Copies of a seeded
source are not reproducible, within a run or across runs, and say so with a
:class:`~dxp_plugins.errors.SeededRandomnessWarning` when they are made (unpickled or
deep-copied) or, after a ``fork``, when they key their stream.

Threads share one source. Its lock guards only the keying (:meth:`RandomSource.generator`);
draws are serialised by numpy's per-call lock (``bit_generator.lock``, which randomgen's
``ChaCha`` inherits), so two threads never get the same noise. Every draw must therefore be
one ``Generator`` method call: never reach the bit generator through its ctypes/cffi
interface, which bypasses that lock.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import secrets
import sys
import time
from typing import Any, Literal

import numpy as np

from ._locks import fork_safe_lock
from ._process import this_process
from ._validation import check_int
from .errors import SeededRandomnessWarning, warn

RNGMode = Literal["secure", "seeded"]

_CHACHA_ROUNDS = 20
#: Raw words per timing of :func:`_simd_is_faster` (about 0.2 ms each).
_PROBE_WORDS = 16_384

#: Numbers the seeded keyings of copies and forked objects in this process (module doc).
_KEYINGS = itertools.count()
#: First word of a seeded helper stream's key (:meth:`RandomSource.helper`). SeedSequence
#: joins the 32-bit words of a key's entries without their lengths, so entry counts do not
#: separate streams; a helper key is six single words ending in 0 (no integer entry's
#: encoding ends in a 0 word, so no ``independent(stream)`` or copy key ``(pid, n, fresh)``
#: can equal it), and helpers' keys all have that one width.
_HELPER_STREAM = 0x4C504C50


def _secure_generator() -> np.random.Generator:
    key = int.from_bytes(os.urandom(32), "little")
    return _chacha(key=key, counter=0)


def _seeded_generator(seed: int, stream: tuple[int, ...]) -> np.random.Generator:
    return _chacha(seed=np.random.SeedSequence(seed, spawn_key=stream))


def _chacha(**keying: Any) -> np.random.Generator:
    """A ChaCha20 generator keyed by ``keying``, on randomgen's faster implementation for
    this CPU (:func:`_simd_is_faster`; the values are the same either way)."""
    from randomgen import ChaCha

    bit_generator = ChaCha(rounds=_CHACHA_ROUNDS, **keying)
    if bit_generator.use_simd and not _simd_is_faster():
        bit_generator.use_simd = False
    return np.random.Generator(bit_generator)


@functools.cache
def _simd_is_faster() -> bool:
    """Whether randomgen's SIMD ChaCha beats its scalar one here, timed once per process.

    randomgen turns SIMD on wherever the CPU has it, but on the AMD EPYC this project is
    measured on its SIMD path draws 1.9x slower (100,000 raw words: 1.98 ms against 1.04 ms;
    normals 2.84 against 1.77 ms, randomgen 2.5.1). randomgen documents
    that both give the same values, so the choice is speed only. The probe is keyed with a
    public constant and its output is thrown away: it is never noise.

    Before randomgen 2.5 the setting is one switch for the whole process that every new
    ChaCha turns back on: there the choice would be undone at random and would reach other
    code's generators, so randomgen's own choice is kept (True)."""
    from randomgen import ChaCha

    probe = ChaCha(seed=0, rounds=_CHACHA_ROUNDS)
    if not probe.use_simd:
        return False
    if not _simd_switch_is_per_generator():
        return True
    best = {True: math.inf, False: math.inf}
    for _ in range(3):
        for flag in (True, False):
            probe.use_simd = flag
            start = time.perf_counter()
            probe.random_raw(_PROBE_WORDS)
            best[flag] = min(best[flag], time.perf_counter() - start)
    return best[True] < best[False]


def _simd_switch_is_per_generator() -> bool:
    """Whether turning SIMD off on one ChaCha leaves it off when another is made (randomgen
    2.5 and later; before, one process-wide switch that every new ChaCha turns back on).
    Call only where randomgen has SIMD (``ChaCha().use_simd`` is true)."""
    from randomgen import ChaCha

    first = ChaCha(seed=0, rounds=_CHACHA_ROUNDS)
    first.use_simd = False
    ChaCha(seed=0, rounds=_CHACHA_ROUNDS)
    per_generator = not first.use_simd
    first.use_simd = True  # a process-wide switch is left as randomgen set it
    return per_generator


def check_seed(seed: Any, name: str = "random_state") -> int | None:
    """Validate a seed: None (secure) or a non-negative int; errors say ``name``, the
    caller's spelling (``random_state``, ``seed``, ``--seed``)."""
    if seed is None:
        return None
    if isinstance(seed, np.random.Generator | np.random.RandomState):
        raise TypeError(
            f"{name} must be None (secure randomness) or an int seed; generator "
            "objects are not accepted because their state could leave the object"
        )
    return check_int(seed, name, minimum=0)


class FreshTaskToken:
    """A new dask token at every hash: dask names a task by a hash of its arguments
    (``dask.base.tokenize``) and computes equal names once, so two privatizations of one
    column with one object would be one release reused while both are counted. Hashing
    such an object also need not pickle it (a seeded copy warned of a stream no task used).
    """

    def __dask_tokenize__(self) -> str:
        return f"{type(self).__qualname__}-{secrets.token_hex(16)}"


class RandomSource(FreshTaskToken):
    """The noise generator of one mechanism or front door, secure or seeded.

    Secure for ``seed=None``; its generator's state is never pickled (PRIVACY.md 16-19;
    this module's docstring). A plugin mechanism's constructor may receive one as
    ``random_state`` (public as ``dxp_plugins.mechanisms.RandomSource``, for annotations)
    and passes it to ``Mechanism.__init__`` unchanged."""

    def __init__(self, seed: int | None = None) -> None:
        # Unchecked seeds come from mechanisms and estimators, whose parameter is random_state.
        self._seed = check_seed(seed, "random_state")
        if self._seed is not None:
            warn(
                "seeded randomness: outputs are reproducible and the noise is predictable "
                "to anyone who knows the seed; each fit, clone or run seeded alike replays "
                "the same noise, so two releases of different data reveal their difference "
                "even without the seed; leave the seed / random_state unset (None) for "
                "private releases",
                SeededRandomnessWarning,
            )
        self._origin = this_process()
        self._is_copy = False
        if self._seed is not None and _built_by_module_code_in_a_worker():
            self._is_copy = True
            _warn_not_reproducible(
                "a seeded random source built by module-level code in a worker process "
                "(the main script re-run by a spawn or forkserver worker, or a module a "
                "worker imported)"
            )
        self._lock = fork_safe_lock(self)
        self._keyed_in: tuple[int, int] | None = None  # the process the generator is for
        self._generator: np.random.Generator | None = None

    @property
    def mode(self) -> RNGMode:
        """``"secure"`` or ``"seeded"``, as recorded in guarantees."""
        return "secure" if self._seed is None else "seeded"

    @property
    def seed(self) -> int | None:
        """The opt-in seed (None for secure randomness)."""
        return self._seed

    def generator(self) -> np.random.Generator:
        """The generator for this process, (re-)keyed on first use after a fork."""
        here = this_process()
        if self._generator is None or self._keyed_in != here:
            with self._lock:
                if self._generator is None or self._keyed_in != here:
                    self._generator = self._new_generator(here)
                    self._keyed_in = here
        return self._generator

    def independent(self, stream: int) -> np.random.Generator:
        """A generator for a side job (e.g. building a published grouping), independent of
        this source's noise stream and of other ``stream`` numbers: secure sources key a
        fresh generator; seeded sources derive stream ``stream`` of the same seed."""
        if self._seed is None:
            return _secure_generator()
        return _seeded_generator(self._seed, (check_int(stream, "stream", minimum=0),))

    def helper(self, rng: np.random.Generator) -> np.random.Generator:
        """A second generator for one release that draws part of its noise on another
        thread (numpy serialises the draws of one generator, so two threads need two):
        for a secure source a fresh one keyed from the operating system, for a seeded
        source one derived from the seed and four 32-bit words drawn from ``rng`` (the
        release's own stream, one draw), so a seeded run stays reproducible and no two releases
        share a helper stream. The caller keeps it for that release only (never stored,
        never pickled, like every generator here)."""
        if self._seed is None:
            return _secure_generator()
        # Four 32-bit words, each one SeedSequence word: keys of a fixed width (spawn keys
        # are concatenated without lengths, so variable-width entries could coincide).
        drawn = rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist()
        return _seeded_generator(self._seed, (_HELPER_STREAM, *drawn, 0))

    def _new_generator(self, here: tuple[int, int]) -> np.random.Generator:
        if self._seed is None:
            return _secure_generator()
        if here == self._origin and not self._is_copy:
            return _seeded_generator(self._seed, ())  # the original: the seed's own stream
        if not self._is_copy:  # a copy warned when it was made
            _warn_not_reproducible("a seeded random source forked into another process")
        fresh = int.from_bytes(os.urandom(16), "little")  # pids are reused (module doc)
        return _seeded_generator(self._seed, (here[0], next(_KEYINGS), fresh))

    def __getstate__(self) -> dict[str, Any]:
        # Never the generator or its state (PRIVACY.md 18).
        return {"seed": self._seed, "origin_pid": self._origin[0]}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._seed = state["seed"]
        self._origin = (state["origin_pid"], -1)  # a copy: never the original's process
        self._is_copy = True
        if self._seed is not None:
            _warn_not_reproducible("an unpickled or deep-copied seeded random source")
        self._lock = fork_safe_lock(self)
        self._keyed_in = None
        self._generator = None

    def __deepcopy__(self, memo: dict[int, Any]) -> RandomSource:
        # A copy never shares the original's generator nor replays its stream (module doc).
        copy = RandomSource.__new__(RandomSource)
        copy.__setstate__(self.__getstate__())
        return copy

    def __repr__(self) -> str:
        return f"RandomSource({self.mode})"


def _built_by_module_code_in_a_worker() -> bool:
    """Whether the caller runs under the top-level code of the main script re-run by a
    worker (``__mp_main__``) or, in a multiprocessing worker, of any module it imports:
    every worker runs that code again, so an object it builds would be built alike in
    each. Not a task function that seeds its own object for a reproducible experiment
    (it keeps the seed's stream), nor the process's own ``__main__``."""
    frame = sys._getframe(1)
    worker: bool | None = None
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            name = frame.f_globals.get("__name__")
            if name == "__mp_main__":
                return True
            if name != "__main__":
                if worker is None:
                    worker = _in_a_multiprocessing_worker()
                if worker:
                    return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _in_a_multiprocessing_worker() -> bool:
    """A process started by ``multiprocessing`` (Pool, Process, loky), also while a
    spawned one is still preparing (``_inheriting``)."""
    import multiprocessing

    current = multiprocessing.current_process()
    return multiprocessing.parent_process() is not None or bool(
        getattr(current, "_inheriting", False)
    )


def _warn_not_reproducible(source: str) -> None:
    warn(
        f"{source} draws a stream of its own, not the seed's: its "
        "noise is not reproducible (e.g. in nlp.pipe(n_process=...) workers, joblib or "
        "multiprocessing tasks, copy.deepcopy), although its guarantees say 'seeded'; "
        "seed the original object in the process that uses it for reproducible runs",
        SeededRandomnessWarning,
    )
