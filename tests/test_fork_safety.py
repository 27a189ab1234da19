"""Forked workers can search after the parent did (GNU OpenMP is not fork-safe).

Each case runs in a fresh interpreter: the fork hook is registered once per process, so
in the test process an earlier test would already have registered it for every index.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import os, select, warnings
    import numpy as np
    import dxp_plugins as dxp

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    if KIND == "brr":
        mech = dxp.BRR.from_codes(words, rng.integers(0, 2, (5000, 64)), 2.0)
    else:
        table = dxp.EmbeddingTable(words, rng.normal(size=(5000, 16)).astype("float32"))
        mech = dxp.Madlib(table, epsilon=5.0)
    mech.privatize_ids(np.arange(5000))  # the parent has used faiss (and its threads)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # would wait forever for the parent's OpenMP threads without the hook
        try:
            out = mech.privatize_ids(np.arange(5000))
            os.write(write, b"ok" if len(out) == 5000 else b"no")
        finally:
            os._exit(0)
    os.close(write)
    ready, _, _ = select.select([read], [], [], 30)
    if not ready:
        os.kill(pid, 9)
    print(os.read(read, 2).decode() if ready else "hung")
    os.waitpid(pid, 0)
    """
)


@pytest.mark.parametrize("kind", ["madlib", "brr"])
def test_forked_child_searches_after_the_parent(kind):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("KIND", repr(kind))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "ok", f"the forked child hung in faiss search: {done.stdout}"
