"""One rule for the library's progress bars (notebook review of the twenty-fourth session):
True shows, False hides, None shows only on a terminal; ``tqdm.auto`` (a widget in Jupyter,
and an "IProgress not found" warning where ipywidgets is missing) is used only for a bar
that is shown. tqdm's own ``disable=None`` is turned into "show" by ``tqdm.notebook``."""

from __future__ import annotations

import io
import sys
import types

import numpy as np
import pytest

from dxp_plugins._progress import progress_bar


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def auto_bars(monkeypatch):
    """Replace tqdm.auto by a recorder: which calls would have made a (widget) bar."""
    made = []

    def fake_tqdm(**options):
        made.append(options)
        from tqdm.std import tqdm

        return tqdm(disable=True)

    module = types.ModuleType("tqdm.auto")
    module.tqdm = fake_tqdm  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tqdm.auto", module)
    return made


@pytest.mark.parametrize(
    ("progress", "terminal", "shown"),
    [(None, False, False), (None, True, True), (True, False, True), (False, True, False)],
)
def test_the_rule(auto_bars, monkeypatch, progress, terminal, shown):
    monkeypatch.setattr(sys, "stderr", _Terminal() if terminal else io.StringIO())
    with progress_bar(progress, total=3, desc="x") as bar:
        bar.update()
    assert bool(auto_bars) == shown
    if shown:
        assert auto_bars[0]["file"] is sys.stderr


def test_every_long_call_follows_it(auto_bars, monkeypatch, glove_5k):
    """Calibration, TEM's precompute and LPLP's balanced k-means, with progress left at
    their defaults off a terminal (a notebook's stderr), make no bar."""
    import dxp_plugins as dxp
    from dxp_plugins.calibration import plausible_deniability
    from dxp_plugins.lplp.balanced import balanced_kmeans

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    tem = dxp.TEM(glove_5k, epsilon=2.0)
    tem.precompute(["the", "film"])
    plausible_deniability(tem, ["the", "film"], method="exact")
    points = np.random.default_rng(0).standard_normal((40, 3))
    balanced_kmeans(points, 4, rng=np.random.default_rng(1))
    assert auto_bars == []
