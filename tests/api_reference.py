"""Render docs/api.md, the list of every public name with its parameters and summary.

The page is generated from the modules' ``__all__`` and docstrings, and
``tests/test_api_reference.py`` fails when it is stale. Regenerate it with::

    .venv/bin/python -m tests.api_reference > docs/api.md

Only parameter *names* are listed (no defaults or annotations), so the page is the same on
every supported Python and dependency version.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from typing import Any

#: The modules of the public API, in the order of the page, with one line on each.
MODULES: tuple[tuple[str, str], ...] = (
    ("dxp_plugins", "The top level: mechanisms, front doors, embeddings, guarantees, errors."),
    ("dxp_plugins.mechanisms", "Madlib, TEM, BRR and the mechanism registry."),
    ("dxp_plugins.embeddings", "Embedding tables and their loaders."),
    ("dxp_plugins.text", "The text path every door uses: tokenize, select, privatize."),
    ("dxp_plugins.masks", "Masks: identifiers replaced by `[...]` before privatizing."),
    ("dxp_plugins.estimators", "scikit-learn transformers."),
    ("dxp_plugins.pipeline", "The spaCy component `dxp_privatizer`."),
    ("dxp_plugins.lplp", "LPLP: private bag-of-words counts (groupings, calibration, release)."),
    ("dxp_plugins.calibration", "Choosing epsilon: N_w / S_w, privacy ratio, choose_epsilon."),
    ("dxp_plugins.guarantee", "Guarantee records and the accountant."),
    ("dxp_plugins.topics", "Topic-model evaluation for LPLP (Jaccard, coherence, LSA)."),
    ("dxp_plugins.neighbors", "Nearest-neighbour search: faiss exact, HNSW, binary."),
    ("dxp_plugins.distances", "Metrics for TEM and the privacy ratio."),
    ("dxp_plugins.audit", "Statistical privacy audits (PRIVACY.md T1-T4)."),
    ("dxp_plugins.testing", "Contract checks for a mechanism plugin's own tests."),
    ("dxp_plugins.datasets", "The real corpora of the benchmarks, read from PyPI archives."),
    ("dxp_plugins.plotting", "Figures for calibration (matplotlib, optional)."),
    ("dxp_plugins.errors", "Errors and warnings."),
)


#: A Sphinx cross-reference (``:class:`~a.b.C```): written as its name in Markdown.
_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def _markdown(text: str) -> str:
    """reST inline markup as Markdown: roles as code, ``double`` back-quotes as single."""
    text = _ROLE.sub(
        lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text
    )
    return text.replace("``", "`")


def _summary(value: Any) -> str:
    """The first paragraph of ``value``'s own docstring (empty if it has none)."""
    doc = inspect.getdoc(value) if (inspect.isclass(value) or callable(value)) else None
    if not doc:
        return ""
    return _markdown(" ".join(doc.split("\n\n", 1)[0].split()))


def _constant(value: Any) -> str:
    """A short constant's value (numbers, strings and tuples of them), else nothing."""
    if isinstance(value, bool | int | float | str | tuple | frozenset):
        shown = repr(tuple(sorted(value)) if isinstance(value, frozenset) else value)
        return f"`{shown}`" if len(shown) <= 80 else ""
    return ""


def _parameters(value: Any) -> str:
    """``(a, b, *, c)``: the parameter names of a function or a class's constructor
    (nothing for a class whose constructor is a built-in one: Python versions differ)."""
    if inspect.isclass(value) and not any(
        "__init__" in vars(cls) or "__new__" in vars(cls)
        for cls in value.__mro__
        if cls.__module__.startswith("dxp_plugins")
    ):
        return ""
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return ""
    parts: list[str] = []
    keyword_only = False
    for parameter in signature.parameters.values():
        if parameter.kind is parameter.VAR_POSITIONAL:
            parts.append(f"*{parameter.name}")
            keyword_only = True
        elif parameter.kind is parameter.VAR_KEYWORD:
            parts.append(f"**{parameter.name}")
        else:
            if parameter.kind is parameter.KEYWORD_ONLY and not keyword_only:
                parts.append("*")
                keyword_only = True
            parts.append(parameter.name)
    return "(" + ", ".join(parts) + ")"


def _entry(module: Any, name: str) -> str:
    value = getattr(module, name)
    if inspect.isclass(value):
        kind = (
            "warning"
            if issubclass(value, Warning)
            else "exception"
            if issubclass(value, BaseException)
            else "class"
        )
        head = f"`{name}{_parameters(value)}`"
    elif inspect.isroutine(value):
        kind = "function"
        head = f"`{name}{_parameters(value)}`"
    elif callable(value):  # a typing alias such as Selector: its signature varies by Python
        kind = "type"
        head = f"`{name}`"
    else:
        kind = "constant"
        head = f"`{name}`"
    summary = _constant(value) if kind == "constant" else "" if kind == "type" else _summary(value)
    summary = summary.replace("|", "\\|")
    return f"| {head} | {kind} | {summary} |"


def _members(cls: type, public: set[type]) -> list[str]:
    """Rows for the public methods and properties of ``cls`` that it defines, or has from
    this package's classes that are not on the page themselves (a subclass of ``Mechanism``
    lists its own; scikit-learn's ``get_params`` and the like are theirs), in order."""
    rows, seen = [], set()
    for owner in cls.__mro__:
        if not owner.__module__.startswith("dxp_plugins") or (owner is not cls and owner in public):
            continue
        for name, member in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(member, property | functools.cached_property):
                getter = member.fget if isinstance(member, property) else member.func
                rows.append(f"| `{cls.__name__}.{name}` | property | {_summary(getter)} |")
            elif isinstance(member, classmethod | staticmethod) or inspect.isfunction(member):
                function = getattr(cls, name)
                if inspect.isfunction(member):  # an instance method: without self
                    function = functools.partial(function, None)
                head = f"`{cls.__name__}.{name}{_parameters(function)}`"
                rows.append(f"| {head} | method | {_summary(getattr(cls, name))} |")
    return rows


def render() -> str:
    """The whole page."""
    lines = [
        "# API reference",
        "",
        "Every public name, by module: what `from <module> import <name>` may use (each",
        "module's `__all__`), with its parameters and the first paragraph of its docstring;",
        "a class's public methods and properties follow it where it first appears.",
        "Generated by `tests/api_reference.py` (`.venv/bin/python -m tests.api_reference >",
        "docs/api.md`); `tests/test_api_reference.py` fails when it is stale. Guides: the",
        "[README](../README.md), [concepts](concepts.md), [the Python API in practice](python.md),",
        "[front doors](front-doors.md), [TEM and BRR](tem-brr.md), [LPLP](lplp.md),",
        "[choosing epsilon](choosing-epsilon.md), [what is protected](protection.md),",
        "[embeddings](embeddings.md), [plugins](plugins.md), [performance](performance.md).",
        "",
    ]
    listed: set[type] = set()
    public = {
        value
        for path, _ in MODULES
        for name in importlib.import_module(path).__all__
        if inspect.isclass(value := getattr(importlib.import_module(path), name))
    }
    for path, blurb in MODULES:
        module = importlib.import_module(path)
        names = [name for name in module.__all__ if not name.startswith("_")]
        lines += [f"## `{path}`", "", blurb, "", "| name | kind | summary |", "|---|---|---|"]
        for name in names:
            lines.append(_entry(module, name))
            value = getattr(module, name)
            if inspect.isclass(value) and not issubclass(value, BaseException):
                if value not in listed:  # members once, where the class first appears
                    lines += _members(value, public)
                listed.add(value)
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(render(), end="")
