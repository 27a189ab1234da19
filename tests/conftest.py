"""Shared fixtures: small *real* embeddings (the most frequent GloVe rows)."""

from __future__ import annotations

import os
import signal
import warnings

import pytest
from hypothesis import settings

import dxp_plugins as dxp

# Property tests keep no example database in the clone, and draw the same examples on CI
# (the mechanisms' noise stays random: a failure there is a real one, rerun it locally).
settings.register_profile("dxp", database=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("dxp")

# Started as a background job of a non-interactive shell (`pytest ... &`), the suite inherits
# SIGINT and SIGQUIT ignored, and so would every process it starts: the signal tests then
# tested nothing ("raise_signal" did nothing) and failed (diff review 28 N3). Ctrl-C and
# SIGQUIT act here as in a terminal; children get them at their defaults.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if hasattr(signal, "SIGQUIT") and signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(scope="session")
def glove_5k() -> dxp.EmbeddingTable:
    """The 5,000 most frequent GloVe 6B 50d words (real vectors, fast to search)."""
    return dxp.load_embeddings("glove-6b-50d", vocab_size=5000)


@pytest.fixture(autouse=True)
def _deprecations_shown_by_the_cli_fail(monkeypatch):
    """dxp's main() shows every warning to its users (simplefilter("default")), which also
    overrides pyproject's filterwarnings = error for in-process CLI tests: a dependency's
    DeprecationWarning on a CLI path would be printed, never fail CI. Fail on it here."""
    from dxp_plugins.cli import process

    seen: list[str] = []
    show = process._WarningPrinter.__call__
    ignored = _ignored_by(list(warnings.filters))  # pytest's: the ini file's and -W's

    def call(self, message, category, filename, lineno, file=None, line=None):
        deprecation = issubclass(
            category, DeprecationWarning | PendingDeprecationWarning | FutureWarning
        )
        if deprecation and not ignored(str(message), category):
            seen.append(f"{category.__name__} at {filename}:{lineno}: {message}")
        return show(self, message, category, filename, lineno, file, line)

    monkeypatch.setattr(process._WarningPrinter, "__call__", call)
    # the printer names the frame that warned, skipping warnings' frames: skip this one too
    monkeypatch.setattr(process, "_WARNINGS_MODULES", process._WARNINGS_MODULES | {__name__})
    yield
    assert not seen, "deprecations shown by the CLI: " + "; ".join(seen)


def _ignored_by(filters):
    """Whether the first of ``filters`` (``warnings.filters`` entries) matching a warning's
    text and category ignores it (``dev.sh lowest`` ignores a known deprecation of old
    matplotlib with ``-W``); module and line filters are not used by this suite."""

    def ignored(text, category):
        for action, message, kind, _module, _lineno in filters:
            if (message is None or message.match(text)) and issubclass(category, kind):
                return action == "ignore"
        return False

    return ignored
