"""The privacy ledger (PRIVACY.md 13): sums the spend of releases and refuses, before any
noise is drawn, a release that would exceed its cap."""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from typing import Any

from ._locks import fork_safe_lock
from ._process import this_process
from ._validation import is_amount, is_integral
from ._wording import counted, number
from .errors import BudgetExceededError, PrivacyWarning, warn

__all__ = ["Accountant"]

#: (process id, ledger id) of the ledgers whose copies warned in this process.
_WARNED_COPIES: set[tuple[tuple[int, int], str]] = set()


class Accountant:
    """Sums spend across releases; with ``cap`` set, refuses releases that would exceed it.

    The total is kept as aggregates (not a list of records), so streaming a huge corpus
    through one accountant uses constant memory. Thread-safe. ``releases`` counts charges:
    one per mechanism call that privatizes something, so one per batch of documents, but
    one for a whole capped :func:`~dxp_plugins.text.privatize_all` call (as
    ``TextPrivatizer`` makes) or a long text, and one for an LPLP ``fit_transform``'s DP
    histogram and release together (a :class:`Guarantee`'s ``releases`` counts the
    per-document records merged into it).
    ``cap`` may be reassigned (validated: a NaN or negative cap is refused); ``spent``,
    ``tokens_privatized``, ``releases`` and ``unit`` are read-only: only :meth:`charge`
    moves them.

    An accountant is a shared ledger: ``copy.copy``/``copy.deepcopy`` (and so scikit-learn's
    ``clone``, which ``GridSearchCV`` uses) return the same object, so every fit of a clone
    is charged to it. A pickle, and so a worker process (``n_jobs`` with processes,
    ``nlp.pipe(n_process=2)``) or a saved and loaded model, gets a copy that the original
    never hears from; so does a forked child (``nlp.pipe(n_process=2)`` forks on Linux). A
    copy without a cap records its own releases, and the first it records in a process
    warns (:class:`~dxp_plugins.PrivacyWarning`) that the original's total leaves them out,
    unless the library made the ledger as a default nobody passed in; a copy *with* a cap
    refuses every charge (fails closed), because each copy would otherwise enforce the cap
    on its own and their total could exceed it. ``refuse_copies=True`` makes the copies of an
    uncapped ledger refuse too: every release is then made, and counted, where the ledger
    lives (a process-based ``n_jobs`` fails instead of charging copies nobody reads).

    Spends add up only in one unit: a Madlib ε is per unit of Euclidean distance between
    vectors, a BRR ε per bit in which two words' codes differ, an LPLP ε per document of L1
    distance N. The first release fixes ``unit``; a release in another unit is refused
    (ValueError), with or without a cap, rather than summed into a meaningless total.
    Convert between metrics with :func:`dxp_plugins.calibration.equivalent_epsilon` and keep
    one accountant each.
    """

    def __init__(self, cap: float | None = None, *, refuse_copies: bool = False) -> None:
        self._lock = fork_safe_lock(self)
        self._cap: float | None = None
        self.cap = cap
        if not isinstance(refuse_copies, bool):
            raise TypeError(f"refuse_copies must be True or False, got {refuse_copies!r}")
        self._refuse_copies = refuse_copies
        self._is_copy = False
        self._owner = this_process()
        # The sum of the charges, compensated (Neumaier): a plain float total loses any
        # charge below half an ulp of it (1,000 charges of 1e-12 add nothing to 16,800);
        # _spent + _spent_low stays within a few ulps of the exact sum.
        self._spent = 0.0
        self._spent_low = 0.0
        self._tokens_privatized = 0
        self._releases = 0
        self._words_released_raw = 0
        self._unit: str | None = None
        #: False for the ledger a mechanism or door makes when none is passed in: a copy of
        #: it charged elsewhere does not warn (nobody reads that total across processes).
        self._passed_in = True
        #: Names the ledger in its copies: a process warns once per ledger, however many
        #: copies it unpickles (scikit-learn's n_jobs unpickles one per fit).
        self._ledger_id = secrets.token_hex(8)

    @classmethod
    def default(cls) -> Accountant:
        """The uncapped ledger an object makes when none is passed in (a copy of it charged
        in another process does not warn)."""
        ledger = cls()
        ledger._passed_in = False
        return ledger

    @property
    def cap(self) -> float | None:
        """The most the ledger may total (None: no cap). Assignable, validated like the
        constructor's ``cap`` (a finite number >= 0 or None): a NaN would switch it off."""
        return self._cap

    @cap.setter
    def cap(self, value: float | None) -> None:
        if value is not None and not is_amount(value):
            raise ValueError("cap must be a finite number >= 0 or None")
        with self._lock:
            self._cap = None if value is None else float(value)

    @property
    def refuse_copies(self) -> bool:
        """Whether a copy (pickled, forked) refuses every charge even without a cap (a
        capped ledger's copies always do)."""
        return self._refuse_copies

    def _copies_refuse(self) -> bool:
        """Whether this object is a copy that must refuse charges."""
        return (self._cap is not None or self._refuse_copies) and self.is_copy

    @property
    def spent(self) -> float:
        """The spend charged so far (read-only: only :meth:`charge` adds to it), summed
        with compensation (no charge is lost however small beside the total)."""
        return self._spent + self._spent_low

    @property
    def tokens_privatized(self) -> int:
        """The tokens (or documents, for LPLP) charged so far (read-only)."""
        return self._tokens_privatized

    @property
    def releases(self) -> int:
        """The charges so far (read-only)."""
        return self._releases

    @property
    def words_released_raw(self) -> int:
        """Words the releases charged here let out raw and unprotected (``oov="passthrough"``,
        words a restricted selection left out): they spend nothing, so only this count
        shows them (read-only; the doors add to it through :meth:`record_raw`)."""
        return self._words_released_raw

    @property
    def unit(self) -> str | None:
        """What the ledger's epsilon is per, fixed by the first release (read-only)."""
        return self._unit

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
            self._add(float(spend))
            self._tokens_privatized += tokens
            self._releases += 1
            if unit is not None:
                self._unit = unit
            seen = (this_process(), self._ledger_id)
            warn_copy = self._passed_in and self.is_copy and seen not in _WARNED_COPIES
        if warn_copy:
            warn(
                "this Accountant is a copy (pickled, or in a worker process): it records "
                "this release, but the ledger it was copied from never sees it, so that "
                "total leaves it out. Combine the releases' guarantees where that ledger "
                "lives (Guarantee.combine), release in one process or with threads, "
                "continue a saved ledger with Accountant.resume, or make copies refuse: "
                "Accountant(refuse_copies=True), or a cap",
                PrivacyWarning,
            )
            # Marked once warned: a warning made an error (warnings.filterwarnings) stopped
            # this release, and must stop the next one too.
            _WARNED_COPIES.add(seen)

    def _add(self, spend: float) -> None:
        """Neumaier's compensated summation step (called holding the lock)."""
        total = self._spent + spend
        if abs(self._spent) >= abs(spend):
            self._spent_low += (self._spent - total) + spend
        else:
            self._spent_low += (spend - total) + self._spent
        self._spent = total

    def record_raw(self, words: int) -> None:
        """Count ``words`` released raw beside a release (no spend, so never refused)."""
        if not is_integral(words) or words < 0:
            raise ValueError(f"words must be an int >= 0, got {words!r}")
        with self._lock:
            self._words_released_raw += int(words)

    def check(self, spend: float, unit: str | None = None) -> None:
        """Raise what :meth:`charge` would raise for ``spend``, charging nothing (a release
        made in parts checks its total first; another thread may still spend meanwhile)."""
        with self._lock:
            self._refusal(spend, unit)

    def _refusal(self, spend: float, unit: str | None) -> None:
        """Raise if ``spend`` in ``unit`` may not be charged (called holding the lock)."""
        if not is_amount(spend):
            raise ValueError("spend must be a finite number >= 0")
        if self._copies_refuse():
            held = "refuse_copies=True" if self.cap is None else f"cap {number(self.cap)}"
            raise BudgetExceededError(
                f"this Accountant ({held}) is a copy in another process or made by "
                "pickling (a forked or spawned worker, a loaded object): the original "
                "would never see its releases, nor could a cap hold across copies. Release "
                "in one process (n_jobs=1, "
                "n_process=1, num_proc=None or a thread backend), or build an "
                "Accountant(cap=share) in each worker (a pool initializer): the workers are "
                "then bounded only by the sum of the shares, while no worker is restarted or "
                "replaced. A loaded estimator: set_params("
                "accountant=Accountant.resume(saved ledger)) and fit again"
            )
        if unit is not None and self.unit is not None and unit != self.unit:
            raise ValueError(
                f"this Accountant sums epsilon per {self.unit}; a release measured per "
                f"{unit} cannot be added to it. {_one_ledger_each(self.unit, unit)}"
            )
        if self.cap is not None and self.spent + spend > self.cap * (1 + 1e-12):
            raise BudgetExceededError(
                f"release of {number(spend)} would exceed the privacy budget cap "
                f"{number(self.cap)} ({number(self.spent)} already spent)"
            )

    def to_dict(self) -> dict[str, Any]:
        """The ledger as a JSON-ready dict (``spent``, ``tokens_privatized``, ``releases``,
        ``words_released_raw``, ``unit``, ``cap``, ``refuse_copies``), for :meth:`resume` in
        a later session. A copy that refuses charges (with a cap, or ``refuse_copies``;
        pickled, forked) refuses (BudgetExceededError): resumed, it would count apart from
        the original. Save the original."""
        with self._lock:
            if self._copies_refuse():
                raise BudgetExceededError(
                    "this Accountant is a copy that refuses charges (pickled, or in another "
                    "process; a cap or refuse_copies=True): "
                    "only the original ledger can be saved for resume"
                )
            return {
                "spent": self.spent,
                "tokens_privatized": self._tokens_privatized,
                "releases": self._releases,
                "words_released_raw": self._words_released_raw,
                "unit": self._unit,
                "cap": self._cap,
                "refuse_copies": self._refuse_copies,
            }

    @classmethod
    def resume(cls, record: Mapping[str, Any]) -> Accountant:
        """A ledger that owns its cap again, starting from a :meth:`to_dict` record (a
        pickled accountant is a copy that refuses capped charges). Resume a ledger once, and
        only after everything that charged it has stopped: two live ledgers would each hold
        the cap alone, and their total could exceed it. Unknown or missing keys and values
        that no ledger holds are refused."""
        if not isinstance(record, Mapping):
            raise TypeError(f"an accountant record must be a dict, got {type(record).__name__}")
        keys = {"spent", "tokens_privatized", "releases", "words_released_raw", "unit", "cap"}
        optional = {"refuse_copies"}  # records saved before it were written without it
        if not keys <= set(record) <= keys | optional:
            wrong = sorted(map(str, (set(record) ^ keys) - optional))
            raise ValueError(
                f"an accountant record has exactly {sorted(keys)} (and may have "
                f"{sorted(optional)}); not {wrong}"
            )
        spent, unit = record["spent"], record["unit"]
        if not is_amount(spent):
            raise ValueError(f"spent must be a finite number >= 0, got {spent!r}")
        for name in ("tokens_privatized", "releases", "words_released_raw"):
            value = record[name]
            if not is_integral(value) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if not (unit is None or isinstance(unit, str)):
            raise TypeError(f"unit must be a str or None, got {type(unit).__name__}")
        if record["releases"] == 0 and (unit is not None or spent or record["tokens_privatized"]):
            raise ValueError("a ledger without releases has no unit, spend or tokens")
        ledger = cls(cap=record["cap"], refuse_copies=record.get("refuse_copies", False))
        ledger._spent = float(spent)
        ledger._tokens_privatized = int(record["tokens_privatized"])
        ledger._releases = int(record["releases"])
        ledger._words_released_raw = int(record["words_released_raw"])
        ledger._unit = unit
        return ledger

    @property
    def is_copy(self) -> bool:
        """True for a pickled copy or in a forked child: the original never hears of its
        charges, so with a cap it refuses them."""
        return self._is_copy or this_process() != self._owner

    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {
            "_refuse_copies": False,  # pickled before the option
            "_unit": None,
            "_owner": (-1, -1),
            "_words_released_raw": 0,
            "_spent_low": 0.0,
            "_passed_in": True,
            "_ledger_id": secrets.token_hex(8),
            **state,
        }
        for name in ("cap", "spent", "tokens_privatized", "releases", "unit"):
            if name in state:  # pickled when these were plain attributes
                state[f"_{name}"] = state.pop(name)
        state.pop("_owner_pid", None)  # pickled before the fork count (a copy either way)
        self.__dict__.update(state)
        self._is_copy = True
        self._lock = fork_safe_lock(self)

    def __repr__(self) -> str:
        cap = "no cap" if self.cap is None else f"cap={number(self.cap)}"
        if self._refuse_copies:
            cap += ", refuse_copies=True"
        if self._copies_refuse():
            cap += ", a copy: refuses charges"
        raw = self.words_released_raw
        raw_words = f", {counted(raw, 'word')} released raw" if raw else ""
        return f"Accountant(spent={number(self.spent)}, releases={self.releases}{raw_words}, {cap})"


def _one_ledger_each(unit: str, other: str) -> str:
    """What to do instead of adding releases in ``other`` to a ledger in ``unit``."""
    lplp = ("LPLP" in unit) + ("LPLP" in other)
    if lplp == 2:
        return "Keep one Accountant per n_changes (N)."
    if lplp == 1:
        return "Keep one Accountant for word-level releases and one for LPLP releases."
    return (
        "Keep one Accountant per metric and embeddings, or convert epsilon with "
        "dxp_plugins.calibration.equivalent_epsilon."
    )
