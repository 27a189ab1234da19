"""Forked workers can search after the parent did (GNU OpenMP is not fork-safe).

Each case runs in a fresh interpreter: the fork hook is registered once per process, so
in the test process an earlier test would already have registered it for every index.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.fixtures import BUILTIN_MECHANISMS, FAST_OPTIONS
from tests.processes import run_python

SCRIPT = textwrap.dedent(
    """
    import os, select, warnings
    import numpy as np
    import dxp_plugins as dxp

    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(5000)]
    table = dxp.EmbeddingTable(words, rng.normal(size=(5000, 16)).astype("float32"))
    mech = dxp.make_mechanism(KIND, table, epsilon=5.0, **OPTIONS)
    mech.privatize_ids(np.arange(5000))  # the parent has used its index (and its threads)
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


@pytest.mark.parametrize("kind", BUILTIN_MECHANISMS)
def test_forked_child_searches_after_the_parent(kind):
    """Each built-in by its name: the script built Madlib for every kind but BRR, so a new
    built-in would have re-tested Madlib."""
    script = SCRIPT.replace("KIND", repr(kind)).replace("OPTIONS", repr(FAST_OPTIONS.get(kind, {})))
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "ok", f"the forked child hung in faiss search: {done.stdout}"


def test_search_works_where_there_is_no_fork():
    """Windows has no ``os.register_at_fork`` (nor ``geteuid``, ``sched_getaffinity``,
    ``fcntl``): Madlib and BRR failed to import there, and so did every default door
    (portability review F1). Simulated by removing them before the library loads."""
    out = run_python(
        """
        import os, sys, warnings
        for name in ("register_at_fork", "fork", "geteuid", "sched_getaffinity"):
            if hasattr(os, name):
                delattr(os, name)
        sys.modules["fcntl"] = None
        import numpy as np
        import dxp_plugins as dxp

        warnings.simplefilter("ignore")
        rng = np.random.default_rng(0)
        words = [f"w{i}" for i in range(500)]
        table = dxp.EmbeddingTable(words, rng.normal(size=(500, 8)).astype("float32"))
        madlib = dxp.Madlib(table, epsilon=5.0).privatize_ids(np.arange(500))
        brr = dxp.BRR.from_codes(words, rng.integers(0, 2, (500, 32)), 2.0)
        print(len(madlib), len(brr.privatize_ids(np.arange(500))))
        """
    )
    assert out.strip() == "500 500"


@pytest.mark.parametrize("omp_num_threads", [None, "2"])
def test_a_spawned_worker_searches_on_one_thread(tmp_path, omp_num_threads):
    """Workers run side by side already: a spawned one (macOS, Windows, forkserver) ran a
    faiss team as wide as the machine, as a forked one does not (portability review F6);
    an OMP_NUM_THREADS the user set is kept (diff review W3)."""
    script = tmp_path / "spawned.py"  # a file: spawned workers import the main module
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing

            def threads(_=None):
                from dxp_plugins._faiss_runtime import _faiss
                return _faiss().omp_get_max_threads()

            if __name__ == "__main__":
                with multiprocessing.get_context("spawn").Pool(1) as pool:
                    print(threads(), pool.map(threads, [0])[0])
            """
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env["OMP_NUM_THREADS"] = omp_num_threads or ""
    if omp_num_threads is None:
        del env["OMP_NUM_THREADS"]
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    parent, worker = map(int, done.stdout.split())
    if omp_num_threads:
        assert worker == int(omp_num_threads)
    else:
        if parent == 1:
            pytest.skip("one CPU: a worker on one thread shows nothing")
        assert worker == 1
