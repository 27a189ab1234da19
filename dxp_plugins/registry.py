"""Catalogue registries, fed by entry points (CONVENTIONS.md "catalogue registries").

* ``embeddings`` -- entry-point group ``dxp_plugins_embeddings``: loaders returning an
  :class:`~dxp_plugins.embeddings.table.EmbeddingTable`;
* ``mechanisms`` -- group ``dxp_plugins_mechanisms``: mechanism classes;
* ``groupings``  -- group ``dxp_plugins_groupings``: LPLP feature groupings;
* ``token_filters`` -- group ``dxp_plugins_token_filters``: predicates ``(spacy Token) -> bool``
  choosing which tokens the front doors privatize (config ``token_filter = "name"``).

A third-party package adds an entry with one line in its own metadata, e.g.::

    [project.entry-points.dxp_plugins_embeddings]
    "my-vectors.v1" = "my_package.loaders:load_my_vectors"
"""

from __future__ import annotations

from typing import Any

import catalogue

from .errors import warn

embeddings = catalogue.create("dxp_plugins", "embeddings", entry_points=True)
mechanisms = catalogue.create("dxp_plugins", "mechanisms", entry_points=True)
groupings = catalogue.create("dxp_plugins", "groupings", entry_points=True)
token_filters = catalogue.create("dxp_plugins", "token_filters", entry_points=True)


def names(registry: catalogue.Registry) -> list[str]:
    """Every name a registry can resolve (local registrations and entry points), sorted."""
    local = {key[-1] for key in catalogue._get_all(registry.namespace)}
    advertised = {entry.name for entry in registry._get_entry_points()}
    return sorted(local | advertised)


def resolve(registry: catalogue.Registry, name: str) -> Any:
    """``registry.get(name)`` with an error that lists what is available."""
    if not isinstance(name, str):
        raise TypeError(f"registry name must be str, got {type(name).__name__}")
    try:
        return registry.get(name)
    except catalogue.RegistryError:
        available = ", ".join(names(registry)) or "none"
        kind = registry.namespace[-1].removesuffix("s")  # "mechanisms" -> "mechanism"
        raise ValueError(f"unknown {kind} {name!r}; available: {available}") from None


def describe(registry: catalogue.Registry) -> dict[str, str]:
    """Name -> first docstring line of every entry; a broken plugin warns instead of failing."""
    described: dict[str, str] = {}
    for name in names(registry):
        try:
            entry = registry.get(name)
        except Exception as error:  # a third-party entry point may fail to import
            warn(
                f"{registry.namespace[-1]} entry {name!r} failed to load: "
                f"{type(error).__name__}: {error}",
                RuntimeWarning,
            )
            continue
        doc = (getattr(entry, "__doc__", None) or "").strip()
        described[name] = doc.splitlines()[0] if doc else ""
    return described
