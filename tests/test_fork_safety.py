"""Forked workers can search after the parent did (GNU OpenMP is not fork-safe)."""

from __future__ import annotations

import os
import select

import numpy as np

import dxp_plugins as dxp


def test_forked_child_searches_after_the_parent(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=5.0)
    mech.privatize_ids(np.arange(500))  # the parent has used faiss (and its threads)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: would wait forever for the parent's OpenMP threads without the fix
        try:
            out = mech.privatize_ids(np.arange(500))
            os.write(write, b"ok" if len(out) == 500 else b"no")
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 30)
    if not ready:
        os.kill(pid, 9)
    message = os.read(read, 2) if ready else b""
    os.close(read)
    os.waitpid(pid, 0)
    assert message == b"ok", "the forked child hung in faiss search"
