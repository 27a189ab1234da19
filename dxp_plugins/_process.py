"""Which process this is: the pid and the number of forks since this module was imported.

A pid alone repeats: pids are reused, and a forked child can be handed the pid of an
ancestor whose state it inherited (a daemon forked before the ancestor exits forks again
later). Objects that must act differently in another process (a generator re-keys, a
ledger knows it is a copy) compare :func:`this_process`, which a fork always changes.
"""

from __future__ import annotations

import os

_forks = 0


def _count_fork() -> None:
    global _forks
    _forks += 1


if hasattr(os, "register_at_fork"):  # not on Windows (no fork there)
    os.register_at_fork(after_in_child=_count_fork)


def this_process() -> tuple[int, int]:
    """The pid and the fork count: never equal in two processes alive at once, and never a
    forked child's equal to an ancestor's."""
    return os.getpid(), _forks
