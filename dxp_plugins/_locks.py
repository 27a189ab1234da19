"""Locks that a forked child process gets anew.

A ``fork`` while another thread holds an object's lock (keying a generator, charging a
ledger) would leave the child's copy locked forever: every object whose lock comes from
:func:`fork_safe_lock` gets a fresh one in the child, and :func:`key_lock` replaces a lock
made by another process.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Hashable, MutableMapping
from typing import Any

from ._process import this_process

_HOLDERS: weakref.WeakSet[Any] = weakref.WeakSet()
#: Guards the creation of the per-key locks of :func:`key_lock` (fresh in a forked child).
_KEY_LOCKS_GUARD = threading.Lock()


def fork_safe_lock(holder: Any) -> threading.Lock:
    """A new lock for ``holder._lock``, replaced by a fresh one in a forked child."""
    _HOLDERS.add(holder)
    return threading.Lock()


def key_lock(store: MutableMapping[Any, Any], key: Hashable) -> threading.Lock:
    """The lock of ``key``, kept in ``store`` as ``(process, lock)`` and made on first use: a
    first computation per key (``neighbors._build_once``,
    ``embeddings.shared._load_shared``) runs once while other keys do not wait. A lock made
    in another process (inherited by fork, maybe held by a thread the child does not have)
    is replaced."""
    here = this_process()
    with _KEY_LOCKS_GUARD:
        owner, lock = store.get(key, (None, None))
        if owner != here or lock is None:
            lock = threading.Lock()
            store[key] = (here, lock)
    return lock


def _relock_after_fork() -> None:
    global _KEY_LOCKS_GUARD
    _KEY_LOCKS_GUARD = threading.Lock()
    for holder in list(_HOLDERS):
        holder._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_relock_after_fork)
