"""Catalogue registries, fed by entry points (README.md "Embeddings").

* ``embeddings`` -- entry-point group ``dxp_plugins_embeddings``: loaders returning an
  :class:`~dxp_plugins.embeddings.table.EmbeddingTable`;
* ``mechanisms`` -- group ``dxp_plugins_mechanisms``: mechanism classes;
* ``groupings``  -- group ``dxp_plugins_groupings``: LPLP feature groupings;
* ``token_filters`` -- group ``dxp_plugins_token_filters``: predicates ``(spacy Token) -> bool``
  choosing which tokens the front doors privatize (config ``token_filter = "name"``);
* ``masks`` -- group ``dxp_plugins_masks``: functions ``text -> iterable of (start, end)``
  finding what the front doors replace by ``[...]`` before privatizing (config
  ``mask = "name"``; built-ins ``identifiers``, ``emails``, ``urls``, ``numbers``:
  :mod:`dxp_plugins.masks`).

A third-party package adds an entry with one line in its own metadata, e.g.::

    [project.entry-points.dxp_plugins_embeddings]
    "my-vectors.v1" = "my_package.loaders:load_my_vectors"

Names are resolved by :func:`resolve`, never by catalogue's ``Registry.get`` (which lets
whichever entry point comes first on ``sys.path`` win and imports every plugin to word an
error):

* a name is looked up among the local registrations (``registry.embeddings.register``) and
  the declared entry points *without importing anything*; an unknown name is a
  ``ValueError`` listing the available names, whatever state other plugins are in;
* only the chosen entry is imported; a plugin that fails to import (or is not callable) is
  a ``ValueError`` naming that plugin;
* a name this library declares (distribution ``dxp-plugins``) always resolves to the
  built-in: a plugin or local registration reusing it is ignored, with one warning naming
  where the duplicate comes from;
* a name declared by two or more other sources (two distributions, or a distribution and a
  local registration) with different targets is refused with a ``ValueError`` naming them:
  which one wins would depend on the order of ``sys.path``, and a silently different
  mechanism or table changes what the guarantee means. Uninstall one, or register under
  another name.

:func:`duplicates` lists every name with more than one declaration, and :func:`describe`
(``dxp embeddings list``) shows them.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, overload

import catalogue

from .errors import PluginLoadError, PluginWarning, warn

_F = TypeVar("_F", bound=Callable[..., Any])


class _Registry(Protocol):
    """A ``catalogue.Registry`` as type checkers should see it (catalogue ships no types),
    so that a function decorated with ``register(name)`` keeps its signature."""

    namespace: Sequence[str]
    entry_point_namespace: str

    @overload
    def register(self, name: str, *, func: None = None) -> Callable[[_F], _F]: ...
    @overload
    def register(self, name: str, *, func: _F) -> _F: ...
    def __contains__(self, name: str) -> bool: ...
    def get(self, name: str) -> Any: ...
    def get_all(self) -> dict[str, Any]: ...
    def find(self, name: str) -> dict[str, str | int | None]: ...
    def get_entry_point(self, name: str, default: Any = None) -> Any: ...
    def get_entry_points(self) -> dict[str, Any]: ...


embeddings: _Registry = catalogue.create("dxp_plugins", "embeddings", entry_points=True)
mechanisms: _Registry = catalogue.create("dxp_plugins", "mechanisms", entry_points=True)
groupings: _Registry = catalogue.create("dxp_plugins", "groupings", entry_points=True)
token_filters: _Registry = catalogue.create("dxp_plugins", "token_filters", entry_points=True)
masks: _Registry = catalogue.create("dxp_plugins", "masks", entry_points=True)

#: The distribution whose entry points are this library's built-ins.
BUILTIN_DISTRIBUTION = "dxp-plugins"
#: Source shown for ``registry.<kind>.register(name)`` calls made in this process.
LOCAL = "local registration"

#: (namespace, name, sources) already warned about: a shadowed built-in warns once.
_WARNED: set[tuple[Any, ...]] = set()
_WARNED_LOCK = threading.Lock()


@dataclass(frozen=True)
class Declaration:
    """One place a registry name comes from (nothing is imported to list it)."""

    #: ``"dxp-plugins"`` for the built-ins, another distribution's name, ``LOCAL``, or
    #: ``"unknown distribution"`` for an entry point without metadata.
    source: str
    #: ``module:attribute`` of an entry point; ``None`` for a local registration.
    target: str | None
    builtin: bool
    entry_point: Any = None  # importlib.metadata.EntryPoint, loaded only when chosen
    local: Any = None  # the registered object itself

    def describe(self) -> str:
        return self.source if self.target is None else f"{self.source} ({self.target})"

    @property
    def identity(self) -> tuple[Any, ...]:
        """Two declarations with one identity are one entry (e.g. a distribution found
        twice on ``sys.path``)."""
        if self.target is None:
            return (LOCAL, id(self.local))
        return (self.source, self.target)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distribution(entry_point: Any) -> str | None:
    dist = getattr(entry_point, "dist", None)
    if dist is None:
        return None
    try:
        return _distribution_name(dist)
    except TypeError:  # an unhashable stand-in for a distribution: read it each time
        return _distribution_name.__wrapped__(dist)


@functools.lru_cache(maxsize=1024)
def _distribution_name(dist: Any) -> str | None:
    """A distribution's name, read once per distribution object: ``dist.name`` parses its
    METADATA file on every access, which would make each registry look-up (and so each
    ``TextPrivatizer.transform``, which re-checks its settings) cost milliseconds.
    catalogue lists the entry points once, at import, so the same distribution objects
    come back on every look-up."""
    name = getattr(dist, "name", None)
    return name if isinstance(name, str) else None


def declarations(registry: catalogue.Registry) -> dict[str, list[Declaration]]:
    """Every name of ``registry`` with where it is declared (built-ins first; no imports)."""
    found: dict[str, list[Declaration]] = {}
    for entry in registry._get_entry_points():
        dist = _distribution(entry)
        builtin = dist is not None and _normalize(dist) == BUILTIN_DISTRIBUTION
        declaration = Declaration(
            source=dist or "unknown distribution",
            target=str(entry.value),
            builtin=builtin,
            entry_point=entry,
        )
        found.setdefault(str(entry.name), []).append(declaration)
    namespace = tuple(registry.namespace)
    for keys, value in catalogue._get_all(namespace).items():
        if len(keys) != len(namespace) + 1:
            continue
        listed = found.setdefault(keys[-1], [])
        # A plugin that both decorates a function and declares it as an entry point:
        # importing the entry point registers it again, as the same object (one entry).
        if not any(_imported_target(d.target) is value for d in listed):
            listed.append(Declaration(LOCAL, None, False, local=value))
    for name, listed in found.items():
        unique = {d.identity: d for d in listed}  # the same entry twice is one entry
        found[name] = sorted(unique.values(), key=lambda d: not d.builtin)  # stable
    return found


def _imported_target(target: str | None) -> Any:
    """The object an entry point's ``module:attribute`` names if its module is already
    imported (nothing is imported here), else None."""
    if target is None:
        return None
    module_name, _, attribute = target.partition(":")
    attribute = attribute.split("[")[0].strip()  # "module:func [extra]"
    value = sys.modules.get(module_name.strip())
    if value is None or not attribute:
        return None
    for part in attribute.split("."):
        try:  # a module's own __getattr__ may import or raise: never let it break a lookup
            value = inspect.getattr_static(value, part)
        except AttributeError:
            return None
    return value


def names(registry: catalogue.Registry) -> list[str]:
    """Every name a registry declares (local registrations and entry points), sorted, each
    once; :func:`duplicates` tells which have several declarations."""
    return sorted(declarations(registry))


def duplicates(registry: catalogue.Registry) -> dict[str, list[str]]:
    """Names declared more than once -> where each declaration comes from (built-in first)."""
    return {
        name: [d.describe() for d in listed]
        for name, listed in sorted(declarations(registry).items())
        if len(listed) > 1
    }


def _kind(registry: catalogue.Registry) -> str:
    return str(registry.namespace[-1]).removesuffix("s")  # "mechanisms" -> "mechanism"


def _choose(registry: catalogue.Registry, name: str, listed: list[Declaration]) -> Declaration:
    """The declaration ``name`` resolves to (built-in first; several others: refused)."""
    kind = _kind(registry)
    if listed[0].builtin:
        ignored = [d for d in listed[1:] if not d.builtin]
        if ignored:
            sources = "; ".join(d.describe() for d in ignored)
            key = (tuple(registry.namespace), name, tuple(d.identity for d in ignored))
            with _WARNED_LOCK:
                first = key not in _WARNED
                _WARNED.add(key)
            if first:
                warn(
                    f"{kind} name {name!r} is a built-in of {BUILTIN_DISTRIBUTION} and is also "
                    f"declared by {sources}; using the built-in (register the plugin under "
                    "another name to use it)",
                    PluginWarning,
                )
        return listed[0]
    if len(listed) > 1:
        sources = "; ".join(d.describe() for d in listed)
        raise ValueError(
            f"{kind} {name!r} is declared by {len(listed)} sources: {sources}; which one "
            "wins would depend on the install or import order, so none is used: remove one or "
            "register it under another name"
        )
    return listed[0]


def _load_error(kind: str, name: str, declaration: Declaration, reason: Exception) -> Exception:
    return PluginLoadError(
        f"{kind} {name!r} failed to load: {declaration.describe()}: "
        f"{type(reason).__name__}: {reason}",
        reason,
    )


def _load(kind: str, name: str, declaration: Declaration) -> Any:
    if declaration.target is None:
        entry = declaration.local
    elif declaration.builtin:  # this library's own module: a failure is a bug, shown as is
        entry = declaration.entry_point.load()
    else:
        try:
            entry = declaration.entry_point.load()
        except Exception as error:  # anything the plugin's import raises
            raise _load_error(kind, name, declaration, error) from error
    if not callable(entry):
        what = declaration.target or "the registered object"
        reason = TypeError(f"{what} is not callable (its type is {type(entry).__name__})")
        raise _load_error(kind, name, declaration, reason)
    return entry


def resolve(registry: catalogue.Registry, name: str, *, setting: str | None = None) -> Any:
    """The entry registered as ``name``: a ``ValueError`` listing what is available when the
    name is unknown (worded ``"{setting}: unknown name ..."`` when a door's ``setting`` is
    given), naming the plugin when it fails to load, and naming the sources when several
    non-built-in ones declare it (see the module docstring). One scan of the declarations."""
    if not isinstance(name, str):
        raise TypeError(f"registry name must be str, got {type(name).__name__}")
    found = declarations(registry)
    listed = found.get(name)
    if not listed:
        available = ", ".join(sorted(found)) or "none"
        unknown = f"unknown {_kind(registry)}" if setting is None else f"{setting}: unknown name"
        hint = (
            f" (a {_kind(registry).replace('_', ' ')} registered in your own code exists once "
            "that code has run: import its module first; dxp's and spaCy's commands take its file "
            "as --code)"
            if registry is token_filters or registry is masks
            else ""
        )
        close = difflib.get_close_matches(name.lower(), sorted(found), n=1, cutoff=0.75)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"{unknown} {name!r}; available: {available}{guess}{hint}")
    return _load(_kind(registry), name, _choose(registry, name, listed))


def describe(registry: catalogue.Registry) -> dict[str, str]:
    """Name -> docstring summary (its first paragraph, on one line) of every entry; a broken
    plugin is listed as ``[failed to load: ErrorType]`` and warns (with the error) instead of
    failing.

    A duplicate name says so in its line: which declaration is used and which are ignored,
    or that it is refused (two non-built-in sources; nothing is imported for it).
    """
    described: dict[str, str] = {}
    for name, listed in sorted(declarations(registry).items()):
        if len(listed) > 1 and not listed[0].builtin:
            sources = "; ".join(d.describe() for d in listed)
            described[name] = f"[refused: declared by {sources}]"
            continue
        try:
            entry = _load(_kind(registry), name, listed[0])
        except Exception as error:  # a third-party entry point may fail to import
            cause = error.reason if isinstance(error, PluginLoadError) else error
            warn(
                f"{registry.namespace[-1]} entry {name!r} failed to load: "
                f"{type(cause).__name__}: {cause}",
                PluginWarning,
            )
            described[name] = f"[failed to load: {type(cause).__name__}]"
            continue
        doc = (getattr(entry, "__doc__", None) or "").strip()
        line = " ".join(doc.split("\n\n")[0].split())  # the summary, however many lines
        if not line and sys.flags.optimize >= 2:  # python -OO strips docstrings
            line = "(description stripped by python -OO: run without it to read it)"
        if len(listed) > 1:
            ignored = "; ".join(d.describe() for d in listed[1:])
            line = f"{line} [duplicate name: also declared by {ignored}; the built-in is used]"
        described[name] = line
    return described
