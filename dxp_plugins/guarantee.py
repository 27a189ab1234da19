"""What a release guarantees (PRIVACY.md 12-13).

A :class:`Guarantee` describes one release: which mechanism, epsilon and metric, which
public embeddings (fingerprint), how many tokens were privatized and how many passed
through unchanged, the OOV policy and whether the noise was secure or seeded.

A record travels with the private text (``doc._.dxp_guarantee``, ``--report``), so it holds
only what the release already shows: token counts (the output's length and its unchanged
tokens). It never holds a count of out-of-vocabulary inputs: under the default ``oov="unk"``
they are privatized like any word, and their number is a noiseless function of the private
text (the leak PRIVACY.md 20 forbids "drop" for).

Metric DP composes additively over token positions: two documents of equal length
``x, x'`` give outputs whose likelihood ratio is at most ``exp(sum_i epsilon * d(x_i, x'_i))``.
``spend`` is ``sum_i epsilon`` over privatized tokens, i.e. the bound per unit of the
largest per-token distance. An :class:`Accountant` sums spend over releases and can refuse
a release that would exceed a cap *before* any noise is drawn.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import BudgetExceededError

#: ``Guarantee.selection`` when every word is privatized (the default text path: only
#: whitespace and the public punctuation allow-list pass through).
ALL_WORDS = "every word"


def counted(count: int, noun: str) -> str:
    """``"1 token"``, ``"3 tokens"``: counts in the statements users read."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _library_version() -> str:
    from . import __version__

    return __version__


@dataclass(frozen=True)
class Guarantee:
    """The guarantee of one release (a token batch, a document or a corpus)."""

    mechanism: str
    epsilon: float
    metric: str
    embeddings: str
    vocab_size: int
    tokens_privatized: int
    tokens_passed_through: int
    oov_policy: str
    rng: str
    releases: int = 1
    selection: str = ALL_WORDS
    library_version: str = field(default_factory=_library_version)

    @property
    def spend(self) -> float:
        """``epsilon * tokens_privatized``: the bound per unit of per-token distance."""
        return self.epsilon * self.tokens_privatized

    @property
    def statement(self) -> str:
        """One sentence a user can read."""
        unit = {
            "euclidean": "Euclidean distance between word embeddings",
            "hamming": "Hamming distance between binary word codes",
        }.get(self.metric, f"{self.metric} distance between word embeddings")
        each = (
            "the 1 privatized token is"
            if self.tokens_privatized == 1
            else f"each of {self.tokens_privatized} privatized tokens is"
        )
        return (
            f"{self.mechanism}: {each} "
            f"{self.epsilon:g}*d-private for d = {unit} "
            f"(total {self.spend:g} per unit distance); "
            f"{counted(self.tokens_passed_through, 'token')} "
            f"passed through unchanged; noise {self.rng}."
            + (
                ""
                if self.selection == ALL_WORDS
                else f" Which tokens were privatized was decided from the raw text "
                f"({self.selection}): that decision is not protected, so the bound holds "
                "between texts that select the same tokens and share the unselected ones."
            )
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict, with the derived ``spend`` and ``statement`` included."""
        record = dataclasses.asdict(self)
        record["spend"] = self.spend
        record["statement"] = self.statement
        return record

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Guarantee:
        """The inverse of :meth:`to_dict` (e.g. of ``doc._.dxp_guarantee``); ``spend`` and
        ``statement`` are derived, so they are ignored."""
        names = {item.name for item in dataclasses.fields(cls)}
        return cls(**{key: value for key, value in record.items() if key in names})

    def merge(self, other: Guarantee) -> Guarantee:
        """The guarantee of both releases together (same mechanism settings only)."""
        keys = (
            "mechanism",
            "epsilon",
            "metric",
            "embeddings",
            "vocab_size",
            "oov_policy",
            "rng",
            "selection",
        )
        for key in keys:
            if getattr(self, key) != getattr(other, key):
                raise ValueError(f"cannot merge guarantees with different {key}")
        return dataclasses.replace(
            self,
            tokens_privatized=self.tokens_privatized + other.tokens_privatized,
            tokens_passed_through=self.tokens_passed_through + other.tokens_passed_through,
            releases=self.releases + other.releases,
        )

    def add_passed_through(self, count: int) -> Guarantee:
        """This guarantee with ``count`` more tokens passed through unchanged."""
        return dataclasses.replace(self, tokens_passed_through=self.tokens_passed_through + count)

    @staticmethod
    def combine(guarantees: Iterable[Guarantee]) -> Guarantee | None:
        """Merge an iterable of compatible guarantees (None when empty)."""
        total: Guarantee | None = None
        for guarantee in guarantees:
            total = guarantee if total is None else total.merge(guarantee)
        return total


class Accountant:
    """Sums spend across releases; with ``cap`` set, refuses releases that would exceed it.

    The total is kept as aggregates (not a list of records), so streaming a huge corpus
    through one accountant uses constant memory. Thread-safe. ``releases`` counts charges:
    one per mechanism call, so one per batch of documents (a :class:`Guarantee`'s
    ``releases`` counts the per-document records merged into it).

    An accountant is a shared ledger: ``copy.copy``/``copy.deepcopy`` (and so scikit-learn's
    ``clone``, which ``GridSearchCV`` uses) return the same object, so every fit of a clone
    is charged to it. A pickle, and so a worker process (``n_jobs`` with processes,
    ``nlp.pipe(n_process=2)``) or a saved and loaded model, gets a copy that the original
    never hears from; so does a forked child (``nlp.pipe(n_process=2)`` forks on Linux). A
    copy without a cap records its own releases; a copy *with* a cap refuses every charge
    (fails closed), because each copy would otherwise enforce the cap on its own and their
    total could exceed it.

    Spends add up only in one unit: a Madlib ε is per unit of Euclidean distance between
    vectors, a BRR ε per flipped bit, an LPLP ε per document of L1 distance N. The first
    release fixes ``unit``; a release in another unit is refused (ValueError), with or
    without a cap, rather than summed into a meaningless total. Convert between metrics
    with :func:`dxp_plugins.calibration.equivalent_epsilon` and keep one accountant each.
    """

    def __init__(self, cap: float | None = None) -> None:
        if cap is not None and not _is_amount(cap):
            raise ValueError("cap must be a finite number >= 0 or None")
        self.cap = None if cap is None else float(cap)
        self._is_copy = False
        self._owner_pid = os.getpid()
        self._lock = threading.Lock()
        self.spent = 0.0
        self.tokens_privatized = 0
        self.releases = 0
        self.unit: str | None = None

    @property
    def remaining(self) -> float:
        """Budget left before the cap (inf without a cap)."""
        return math.inf if self.cap is None else max(self.cap - self.spent, 0.0)

    def charge(self, spend: float, tokens: int, unit: str | None = None) -> None:
        """Record a release; over the cap raise BudgetExceededError and charge nothing.

        ``spend`` must be a finite number >= 0: a NaN or negative charge would disable the
        cap for every later release (PRIVACY.md 13).
        """
        with self._lock:
            self._refusal(spend, unit)
            self.spent += spend
            self.tokens_privatized += tokens
            self.releases += 1
            if unit is not None:
                self.unit = unit

    def check(self, spend: float, unit: str | None = None) -> None:
        """Raise what :meth:`charge` would raise for ``spend``, charging nothing (a release
        made in parts checks its total first; another thread may still spend meanwhile)."""
        with self._lock:
            self._refusal(spend, unit)

    def _refusal(self, spend: float, unit: str | None) -> None:
        """Raise if ``spend`` in ``unit`` may not be charged (called holding the lock)."""
        if not _is_amount(spend):
            raise ValueError("spend must be a finite number >= 0")
        if self.cap is not None and self.is_copy:
            raise BudgetExceededError(
                f"this Accountant (cap {self.cap:g}) is a copy in another process or made by "
                "pickling (a forked or spawned worker, a loaded object): its cap cannot hold "
                "together with the original's. Release in one process (n_jobs=1, "
                "n_process=1 or a thread backend), or give this copy an "
                "Accountant(cap=...) of its own (a loaded estimator: set_params(accountant="
                "...) and fit again)"
            )
        if unit is not None and self.unit is not None and unit != self.unit:
            raise ValueError(
                f"this Accountant sums epsilon per {self.unit}; a release measured per "
                f"{unit} cannot be added to it. Keep one Accountant per metric and "
                "embeddings, or convert epsilon with "
                "dxp_plugins.calibration.equivalent_epsilon"
            )
        if self.cap is not None and self.spent + spend > self.cap * (1 + 1e-12):
            raise BudgetExceededError(
                f"release of {spend:g} would exceed the privacy budget cap {self.cap:g} "
                f"({self.spent:g} already spent)"
            )

    @property
    def is_copy(self) -> bool:
        """True for a pickled copy or in a forked child: the original never hears of its
        charges, so with a cap it refuses them."""
        return self._is_copy or os.getpid() != self._owner_pid

    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"unit": None, "_owner_pid": -1, **state})  # older pickles
        self._is_copy = True
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        cap = "no cap" if self.cap is None else f"cap={self.cap:g}"
        if self.cap is not None and self.is_copy:
            cap += ", a copy: refuses charges"
        return f"Accountant(spent={self.spent:g}, releases={self.releases}, {cap})"


def _is_amount(value: Any) -> bool:
    """A finite real number >= 0 (bools and NaN are not amounts)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value) and float(value) >= 0
    except OverflowError:  # an int beyond float: not a finite amount
        return False
