"""Optional dependencies of the suite: gensim has no wheel for Python 3.14 (pyproject.toml
installs it only below 3.14), so the tests of the gensim interop skip where it is absent."""

from __future__ import annotations

import importlib.util

import pytest

#: gensim is importable here (every Python below 3.14, where it is a dependency).
HAS_GENSIM = importlib.util.find_spec("gensim") is not None

#: For single tests that need gensim; whole files use ``pytest.importorskip("gensim")``.
requires_gensim = pytest.mark.skipif(
    not HAS_GENSIM, reason="needs gensim (not installed: no wheel for this Python)"
)
