"""Idle OpenMP threads sleep: ``OMP_WAIT_POLICY=PASSIVE`` before this library's OpenMP users
(faiss and its OpenBLAS, scikit-learn, POT) load GNU OpenMP.

GNU OpenMP's idle threads spin for a while before sleeping. Beside any other busy process
they spin on the cores the working threads need: Madlib exact search ran 2x slower beside
one busy core and 5x slower for two processes at once, with stalls of seconds
(``benchmarks/omp_contention.py``). The runtime reads the variable once, when it loads, and
faiss and scikit-learn share one build of it; so the default is set only while no OpenMP
runtime is loaded (later it would change nothing and only mislead), and never over a value
the user set. Called before each of the library's first uses of an OpenMP user, never at
``import dxp_plugins`` (which every ``spacy.blank()`` runs through the entry points).
"""

from __future__ import annotations

import os
import sys

#: Shared-library names of the OpenMP runtimes (GNU, LLVM, Intel).
_RUNTIMES = ("libgomp", "libomp", "libiomp")
#: Modules that load one, for systems without ``/proc/self/maps``.
_USERS = ("faiss", "sklearn", "ot", "torch")


def prefer_sleeping_threads() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set or an OpenMP runtime is loaded."""
    if "OMP_WAIT_POLICY" not in os.environ and not openmp_loaded():
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def openmp_loaded() -> bool:
    """Whether this process has loaded an OpenMP runtime (best effort off Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            return any(runtime in line for line in maps for runtime in _RUNTIMES)
    except OSError:
        return any(name in sys.modules for name in _USERS)
