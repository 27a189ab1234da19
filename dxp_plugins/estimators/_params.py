"""Settings as they were at ``fit``, for the estimators' changed-since-fit checks."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np


def snapshot(value: Any) -> Any:
    """``value`` with its containers (dicts, lists, tuples, sets) and arrays copied at every
    depth, so a setting edited in place after fit (``params["index"] = ...``, ``pos.add(...)``,
    ``labels[0] = 3`` in a dict) no longer compares equal to its snapshot; any other object
    (a table, a ledger, a function) is kept as itself."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, dict):
        copied = copy.copy(value)  # keeps the dict's own type (an OrderedDict, a defaultdict)
        for key, item in value.items():
            copied[key] = snapshot(item)
        return copied
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(snapshot(item) for item in value))
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(snapshot(item) for item in value)
    return value
