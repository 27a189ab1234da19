"""The spaCy pipelines the doors load and share: each used by one thread at a time.

A memory zone covers a whole vocabulary (strings any thread adds while it is open are freed
when it closes), so a pipeline the doors process inside zones must never serve two live
threads. Each thread borrows its own: ``spacy.blank("en")`` and up to two installed
pipelines. Loading one costs ~50 ms for the blank tokenizer (its special cases) and far
more for an installed pipeline, so a thread per request would pay that on every request:
when a thread ends, its pipelines go back to a small pool for the next new thread. A
pipeline goes back only when nothing else can still reach it: never one handed out by a
public function (its caller may keep, change or share it), one inside a memory zone, or one
whose pipeline, tokenizer, vocabulary or StringStore is referenced more than when it was
loaded (a Doc, a generator, a token filter or a user's variable still holds it). Otherwise
it is dropped, as before. At most :data:`POOL_LIMIT` pipelines of one name and
:data:`POOL_TOTAL` in all wait for a thread.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from ._locks import fork_safe_lock
from ._process import this_process

#: Idle pipelines kept per name for new threads, and in all (more are dropped).
POOL_LIMIT = 4
POOL_TOTAL = 8
#: Installed (named) pipelines a thread keeps beside its blank one.
NAMED_PER_THREAD = 2

#: Every pipeline loaded here (processed inside memory zones by ``_tokenization.forgetting``).
SHARED: weakref.WeakSet[Any] = weakref.WeakSet()
#: Pipelines a public function handed out: never lent to another thread.
_HANDED_OUT: weakref.WeakSet[Any] = weakref.WeakSet()
#: Reference counts of a pipeline, its tokenizer, vocab and StringStore when loaded.
_LOADED_REFS: weakref.WeakKeyDictionary[Any, tuple[int, ...]] = weakref.WeakKeyDictionary()
_LOCAL = threading.local()


class _Pool:
    """Idle pipelines by name, lent to new threads."""

    def __init__(self) -> None:
        self._lock = fork_safe_lock(self)
        self._idle: dict[str | None, list[Any]] = {}

    def take(self, name: str | None) -> Any | None:
        with self._lock:
            idle = self._idle.get(name)
            return idle.pop() if idle else None

    def give(self, name: str | None, nlp: Any) -> None:
        """Keep ``nlp`` for a later thread if nothing else can reach it. The caller holds
        it in one local variable, as :func:`_load` did when it counted the references by
        the same path (a caller's variable, one argument, then :func:`_refs`), so equal
        counts mean no other holder on any Python version."""
        if nlp in _HANDED_OUT or getattr(nlp.vocab, "in_memory_zone", True):
            return
        loaded = _LOADED_REFS.get(nlp)
        if loaded is None or any(now > then for now, then in zip(_refs(nlp), loaded, strict=True)):
            return
        with self._lock:
            idle = self._idle.setdefault(name, [])
            total = sum(map(len, self._idle.values()))
            if len(idle) < POOL_LIMIT and total < POOL_TOTAL:
                idle.append(nlp)

    def idle(self, name: str | None) -> int:
        """How many ``name`` pipelines wait for a thread."""
        with self._lock:
            return len(self._idle.get(name, ()))


_POOL = _Pool()


class _Lease:
    """Lives in one thread's local storage: collected when the thread ends."""


def _refs(nlp: Any) -> tuple[int, ...]:
    vocab = nlp.vocab
    counts = sys.getrefcount(nlp), sys.getrefcount(nlp.tokenizer), sys.getrefcount(vocab)
    return (*counts, sys.getrefcount(vocab.strings))


def _counted(nlp: Any) -> tuple[int, ...]:
    """:func:`_refs` one call deep, as :meth:`_Pool.give` counts them."""
    return _refs(nlp)


def _load(name: str | None) -> Any:
    import spacy

    nlp = spacy.blank("en") if name is None else spacy.load(name)
    SHARED.add(nlp)
    _LOADED_REFS[nlp] = _counted(nlp)
    return nlp


def _give_back(pipelines: dict[str | None, Any], process: tuple[int, int]) -> None:
    """A finished thread's pipelines, to the pool (runs as the thread's locals go). In a
    forked child the parent's other threads' locals go before the after-fork hooks have
    made the pool's lock anew (held by a parent thread, it would never be released):
    their pipelines are dropped there, untouched."""
    if this_process() != process:
        pipelines.clear()
        return
    while pipelines:
        name, nlp = pipelines.popitem()
        _POOL.give(name, nlp)
        del nlp


def _this_thread() -> dict[str | None, Any]:
    pipelines: dict[str | None, Any] | None = getattr(_LOCAL, "pipelines", None)
    if pipelines is None:
        pipelines = _LOCAL.pipelines = {}
        _LOCAL.lease = lease = _Lease()
        weakref.finalize(lease, _give_back, pipelines, this_process()).atexit = False
    return pipelines


def borrow(name: str | None) -> Any:
    """This thread's pipeline ``name`` (None: ``spacy.blank("en")``), for the library's own
    use inside memory zones: taken from the pool or loaded on the thread's first use."""
    pipelines = _this_thread()
    if name not in pipelines:
        if len(pipelines) > NAMED_PER_THREAD:  # the blank one and two named pipelines
            oldest = next(key for key in pipelines if key is not None)
            evicted = pipelines.pop(oldest)
            _POOL.give(oldest, evicted)
            del evicted
        nlp = _POOL.take(name)
        pipelines[name] = _load(name) if nlp is None else nlp
    return pipelines[name]


def hand_out(name: str | None) -> Any:
    """This thread's pipeline ``name`` for a caller outside the library: it stays this
    thread's and is never lent to another."""
    nlp = borrow(name)
    _HANDED_OUT.add(nlp)
    return nlp
