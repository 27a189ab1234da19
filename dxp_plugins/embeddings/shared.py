"""Embedding tables shared within the process: one live table per loader, arguments and
files, used by :func:`dxp_plugins.load_embeddings` and by every front door.

Tables are immutable, so :func:`dxp_plugins.load_embeddings` and the doors (the spaCy
component, :class:`~dxp_plugins.estimators.TextPrivatizer`,
:class:`~dxp_plugins.estimators.LPLPTransformer`) share one table, and its nearest-neighbour
index, while anything holds it (a second 400k-word copy cost 279 MiB). A door keeps its own
cut of a loader's table (``vocab_size``) under a key of its own. Keys hold the loader (a name
registered again is a new table) and stamps of the files its arguments name (an edited file
is a new table).
"""

from __future__ import annotations

import glob
import inspect
import json
import os
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._locks import key_lock

if TYPE_CHECKING:
    from .table import EmbeddingTable


def load_embeddings_setting(
    embeddings: str | EmbeddingTable, embeddings_params: Mapping[str, Any], vocab_size: int | None
) -> EmbeddingTable:
    """The table of checked settings (:func:`check_embeddings_setting`); loads of the same
    registry name and arguments are shared within the process."""
    if not isinstance(embeddings, str):
        return embeddings if vocab_size is None else embeddings.most_frequent(vocab_size)
    params = dict(embeddings_params)
    if vocab_size is not None:
        params["vocab_size"] = vocab_size
    from .. import registry

    loader = registry.resolve(registry.embeddings, embeddings)

    def load() -> EmbeddingTable:
        call = _call_params(loader, params)
        raw = shared_table(embeddings, loader, call, lambda: _load(embeddings, loader, call))
        return _cut(embeddings, raw, vocab_size)

    # The door's table (cut to vocab_size when the loader returned more rows) is shared
    # between doors; the loader's own table with load_embeddings (one shared value for
    # both would let whichever loaded first decide what the other got).
    table = _shared("door", embeddings, loader, params, load)
    _LATEST_TABLE[:] = [table]  # a door's, kept for the next clone in a grid search
    return table


def shared_table(
    name: str, loader: Any, params: dict[str, Any], load: Callable[[], EmbeddingTable]
) -> EmbeddingTable:
    """``load()`` (which returns ``loader(**params)``, checked), or the live table an
    earlier load of the same name, loader, arguments and files returned:
    :func:`dxp_plugins.load_embeddings` and the doors share one table and its index while
    any of them holds it. An argument that is not JSON (an object) loads without sharing."""
    return _shared("loader", name, loader, params, load)


def _shared(
    kind: str,
    name: str,
    loader: Any,
    params: dict[str, Any],
    load: Callable[[], EmbeddingTable],
) -> EmbeddingTable:
    try:
        key = json.dumps(params, sort_keys=True)
    except TypeError:
        return load()
    # The loader itself is part of the key: a name registered again (a notebook cell run
    # twice) is a new table.
    return _load_shared((kind, name), key, (loader, *_file_stamps(params)), load)


def _call_params(loader: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` as the door calls ``loader`` with them: a loader without a ``vocab_size``
    parameter is called without it (the door then cuts the table: :func:`_cut`)."""
    if params.get("vocab_size") is not None and not takes(loader, "vocab_size"):
        return {key: value for key, value in params.items() if key != "vocab_size"}
    return params


def _cut(name: str, table: EmbeddingTable, vocab_size: int | None) -> EmbeddingTable:
    """The ``vocab_size`` most frequent words of a loader's table that has more rows (a
    loader that takes no ``vocab_size``, or returned more); one without a frequency rank
    is refused."""
    if vocab_size is None or len(table) <= vocab_size:
        return table
    if table.frequency_rank is None:
        raise ValueError(
            f"embeddings {name!r}: vocab_size keeps the most frequent words, but its loader "
            f"returned {len(table)} rows and no frequency_rank"
        )
    return table.most_frequent(vocab_size)


def _load(name: str, loader: Any, params: dict[str, Any]) -> EmbeddingTable:
    """``loader(**params)`` checked as :func:`dxp_plugins.load_embeddings` checks it.
    Arguments are bound before the call; a mismatch, or a built-in loader's TypeError (an
    argument of the wrong type), is a ValueError naming the embeddings. A plugin loader's
    own errors are left as raised (the CLI withholds their messages: they may quote what
    the loader read)."""
    from . import checked_table

    try:
        inspect.signature(loader).bind(**params)
    except TypeError as error:
        raise ValueError(f"embeddings {name!r}: {error}") from None
    except ValueError:  # not introspectable: the call checks
        pass
    try:
        table = checked_table(name, lambda: loader(**params))
    except TypeError as error:
        if not str(getattr(loader, "__module__", "")).startswith("dxp_plugins."):
            raise
        raise ValueError(f"embeddings {name!r}: {error}") from None
    return table


def takes(function: Any, parameter: str) -> bool:
    """Whether ``function`` accepts the keyword ``parameter`` (True if not introspectable)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD
        or (p.name == parameter and p.kind is not inspect.Parameter.POSITIONAL_ONLY)
        for p in parameters
    )


#: The per-key locks of :func:`_load_shared` (one small entry per setting loaded).
_SHARED_LOCKS: dict[Any, Any] = {}


def _load_shared(
    name: tuple[str, str],
    params_json: str,
    stamps: tuple[Any, ...],
    load: Callable[[], EmbeddingTable],
) -> EmbeddingTable:
    """Tables are immutable, so doors with the same embeddings share one (and its index);
    ``stamps`` (see :func:`_file_stamps`) makes an edited vectors file a new key. A lock per
    key makes threads at first use of a setting wait for one load (an ``lru_cache`` alone
    lets each of them load its own table)."""
    # The lock's key leaves out the loader (stamps[0]): a lock is kept per setting for the
    # life of the process, and must not keep every loader registered again alive.
    with key_lock(_SHARED_LOCKS, (name, params_json, stamps[1:])):
        key = (name, params_json, stamps)
        table = _LIVE_TABLES.get(key)
        if table is None:
            table = load()
            _LIVE_TABLES[key] = table
        return table


#: Loaders' and doors' tables by setting, while anything holds one, and the latest door
#: table (kept for the next clone in a grid search). An ``lru_cache`` of four would keep four
#: 400k tables and their indexes for the life of the process: 670 MiB after a grid over
#: ``vocab_size`` with every estimator deleted.
_LIVE_TABLES: weakref.WeakValueDictionary[tuple[Any, ...], EmbeddingTable] = (
    weakref.WeakValueDictionary()
)
_LATEST_TABLE: list[EmbeddingTable] = []


#: Entries of a directory argument stamped (a plugin's data folder), in name order.
STAMPED_ENTRIES = 256


def _file_stamps(params: dict[str, Any]) -> tuple[Any, ...]:
    """(name, file, size, mtime, ctime, inode) of each argument naming an existing file, e.g.
    ``path`` (and of its ``.npy`` sidecars, ``path.*.npy``, as gensim saves a ``.kv``),
    and of the first :data:`STAMPED_ENTRIES` files directly inside one naming a directory
    (a plugin's ``data_dir``): an edited file is a new key. Data a loader finds by other
    means (an environment variable, a service) is loaded once per process."""
    stamps: list[tuple[Any, ...]] = []
    for key, value in sorted(params.items()):
        if not isinstance(value, str | os.PathLike):
            continue
        if os.path.isfile(value):
            # gensim's .kv keeps its arrays beside it (NAME.vectors.npy): stamped too, or an
            # edited array file would return the stale table.
            for file in (
                os.fspath(value),
                *sorted(glob.glob(glob.escape(os.fspath(value)) + ".*.npy")),
            ):
                try:
                    status = os.stat(file)
                except OSError:  # removed meanwhile: the loader says what it can read
                    continue
                stamps.append(
                    (
                        key,
                        file,
                        status.st_size,
                        status.st_mtime_ns,
                        status.st_ctime_ns,
                        status.st_ino,
                    )
                )
        elif os.path.isdir(value):
            try:  # unreadable, or a file gone meanwhile: the loader says what it can read
                with os.scandir(os.fspath(value)) as entries:
                    files = sorted((e for e in entries if e.is_file()), key=lambda e: str(e.name))
                for entry in files[:STAMPED_ENTRIES]:
                    status = entry.stat()
                    stamps.append(
                        (
                            key,
                            str(entry.name),
                            status.st_size,
                            status.st_mtime_ns,
                            status.st_ctime_ns,
                        )
                    )
            except OSError:
                stamps.append((key, "unreadable"))
    return tuple(stamps)
