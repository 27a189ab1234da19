"""Record the arguments a sampler is really called with, end to end (PRIVACY.md T4).

The T1 tests check each sampler function against its law at the epsilon the test passes;
a factor applied between the public API and the sampler (epsilon divided by a wrong count,
a per-document split, a rescaled rate) passes them. :func:`record_calls` wraps the real
function, which still runs, so a test can call the public API and compare the rate that
reached the sampler with the closed form of the claimed epsilon.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest


def record_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[dict[str, Any]]:
    """Replace ``owner.name`` by a wrapper that appends, for every call, its arguments by
    parameter name and its return value (key ``"returned"``) to the list returned here."""
    real = getattr(owner, name)
    signature = inspect.signature(real)
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        call = dict(signature.bind(*args, **kwargs).arguments)
        call["returned"] = real(*args, **kwargs)
        calls.append(call)
        return call["returned"]

    monkeypatch.setattr(owner, name, spy)
    return calls
