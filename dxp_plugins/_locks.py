"""Locks that a forked child process gets anew.

A ``fork`` while another thread holds an object's lock (keying a generator, charging a
ledger) would leave the child's copy locked forever: every object whose lock comes from
:func:`fork_safe_lock` gets a fresh one in the child.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

_HOLDERS: weakref.WeakSet[Any] = weakref.WeakSet()


def fork_safe_lock(holder: Any) -> threading.Lock:
    """A new lock for ``holder._lock``, replaced by a fresh one in a forked child."""
    _HOLDERS.add(holder)
    return threading.Lock()


def _relock_after_fork() -> None:
    for holder in list(_HOLDERS):
        holder._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_relock_after_fork)
