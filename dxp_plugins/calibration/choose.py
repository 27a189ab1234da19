"""Choosing epsilon (Madlib paper, Section 4.1): the largest epsilon whose worst case over a
word sample meets a plausible-deniability target, by a grid then log-scale bisection."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._random import check_seed
from .._validation import check_epsilon, check_int, check_probability, is_real
from ..embeddings.table import EmbeddingTable
from ..errors import CalibrationWarning, warn
from .deniability import DEFAULT_ETA, has_closed_form, plausible_deniability
from .result import PlausibleDeniability
from .support import _fewest_successes

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism

#: Default epsilon grid of :func:`choose_epsilon` (geometric, 0.25 ... 64).
DEFAULT_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


@dataclass(frozen=True, eq=False)
class EpsilonChoice:
    """The result of :func:`choose_epsilon`.

    ``epsilon`` is the largest evaluated epsilon that met the target below the first one
    that failed (None when even the smallest failed; a larger epsilon that passes again, as
    TEM's S_w can when beta is not much below eta, is not chosen); ``bracket`` is
    ``(epsilon, smallest failing)`` (either may be None); ``evaluations`` holds every
    evaluation, sorted by epsilon.
    """

    epsilon: float | None
    bracket: tuple[float | None, float | None]
    max_n_w: float | None
    min_s_w: float | None
    conservative: bool
    method: str
    evaluations: tuple[PlausibleDeniability, ...]
    monotone: bool

    def __repr__(self) -> str:
        """One line; each evaluation is in ``evaluations`` (and ``table()``)."""
        bracket = tuple(None if e is None else float(f"{e:.6g}") for e in self.bracket)
        epsilon = None if self.epsilon is None else float(f"{self.epsilon:.6g}")
        return (
            f"EpsilonChoice(epsilon={epsilon}, bracket={bracket}, max_n_w={self.max_n_w}, "
            f"min_s_w={self.min_s_w}, conservative={self.conservative}, "
            f"method={self.method!r}, evaluations={len(self.evaluations)}, "
            f"monotone={self.monotone})"
        )

    @property
    def caveat(self) -> str:
        """What the choice does and does not establish."""
        text = (
            "The target was checked on the sampled words only; other words can be worse. "
            "The search assumes N_w grows and S_w shrinks with epsilon (N_w always does for "
            "Madlib and TEM; TEM's S_w can grow again at large epsilon when beta is not much "
            "below eta)."
        )
        if self.method == "monte_carlo":
            text += (
                " N_w and S_w are Monte Carlo estimates"
                + (
                    ": each word was checked with the upper Clopper-Pearson bound of N_w and "
                    "the lower bound of S_w, so each epsilon's worst case holds at the stated "
                    "confidence; several epsilons were checked, each with its own chance of a "
                    "false pass"
                    if self.conservative
                    else " (point estimates, no allowance for sampling error)"
                )
                + ". Re-check a borderline choice with a fresh word sample and more draws."
            )
        if self.evaluations and self.evaluations[0].settings.get("index") == "hnsw":
            text += (
                " The statistics are those of approximate (HNSW) search, which misses some "
                "isolated words and so understates their N_w (GloVe 400k, 'householder' at "
                "epsilon 5: 0.57 against 0.91 with exact search): the choice holds for HNSW "
                "only; calibrate with the index you deploy."
            )
        if not self.monotone:
            text += " Warning: the evaluations were not monotone in epsilon."
        if self.epsilon is not None and self.bracket[1] is None:
            text += " Every epsilon tried met the target: widen the grid upwards."
        return text

    def table(self) -> list[dict[str, Any]]:
        """One summary row per evaluated epsilon, with whether it met the target."""
        rows = []
        for result in self.evaluations:
            row = result.summary()
            row["meets_target"] = result.meets(self.max_n_w, self.min_s_w, self.conservative)
            rows.append(row)
        return rows

    def to_dict(self) -> dict[str, Any]:
        """The choice as JSON-ready values: the verdict, its target, the caveat, and one
        :meth:`table` row per evaluated epsilon (``evaluations``)."""
        return {
            "epsilon": self.epsilon,
            "bracket": list(self.bracket),
            "max_n_w": self.max_n_w,
            "min_s_w": self.min_s_w,
            "conservative": self.conservative,
            "method": self.method,
            "monotone": self.monotone,
            "caveat": self.caveat,
            "evaluations": self.table(),
        }

    def __str__(self) -> str:
        goal = []
        if self.max_n_w is not None:
            goal.append(f"max N_w <= {self.max_n_w:g}")
        if self.min_s_w is not None:
            goal.append(f"min S_w >= {self.min_s_w:g}")
        if self.epsilon is None:
            return f"no epsilon tried meets {' and '.join(goal)}"
        return f"epsilon = {self.epsilon:.4g} is the largest tried meeting {' and '.join(goal)}"


MechanismFactory = Callable[[float], "Mechanism"]

#: Mechanism arguments :func:`choose_epsilon` sets itself, and where to set them instead.
_RESERVED = {
    "epsilon": "choose_epsilon sets each mechanism's epsilon (give epsilons= for the grid)",
    "accountant": "choose_epsilon gives each mechanism a fresh accountant (calibration "
    "draws public words and never touches a budget)",
    "random_state": "use choose_epsilon's own random_state= argument",
    "embeddings": "use choose_epsilon's own embeddings= argument",
}


def _check_mechanism_params(mechanism_params: Any) -> dict[str, Any]:
    """The registry mechanism's options, without the ones choose_epsilon sets itself."""
    if mechanism_params is None:
        return {}
    if not isinstance(mechanism_params, Mapping):
        raise TypeError(f"mechanism_params must be a dict, got {type(mechanism_params).__name__}")
    for key in mechanism_params:
        if key in _RESERVED:
            raise ValueError(f"mechanism_params may not set {key}: {_RESERVED[key]}")
    return dict(mechanism_params)


def _factory(
    mechanism: str | MechanismFactory,
    embeddings: EmbeddingTable | str | None,
    mechanism_params: dict[str, Any],
    random_state: int | None,
) -> MechanismFactory:
    if callable(mechanism):
        given = [
            name
            for name, value in (
                ("embeddings", embeddings),
                ("mechanism_params", mechanism_params or None),
                ("random_state", random_state),
            )
            if value is not None
        ]
        if given:
            raise ValueError(
                f"a factory takes no {', '.join(given)}: it builds each mechanism with its own "
                "table, options and seed (these are for a mechanism given by registry name)"
            )
        return mechanism
    if not isinstance(mechanism, str):
        raise TypeError("mechanism must be a registry name or a callable epsilon -> Mechanism")
    if embeddings is None:
        raise ValueError("a mechanism given by name needs embeddings=")
    if isinstance(embeddings, str):
        from ..embeddings import load_embeddings

        embeddings = load_embeddings(embeddings)
    table = embeddings

    def build(epsilon: float) -> Mechanism:
        from ..guarantee import Accountant
        from ..mechanisms import make_mechanism

        params = dict(mechanism_params)
        if random_state is not None:
            params["random_state"] = random_state
        # A fresh accountant: calibration draws public words and must not touch a budget.
        return make_mechanism(
            mechanism, table, epsilon=epsilon, accountant=Accountant.default(), **params
        )

    return build


def choose_epsilon(
    mechanism: str | MechanismFactory,
    words: Sequence[str | int],
    *,
    embeddings: EmbeddingTable | str | None = None,
    mechanism_params: Mapping[str, Any] | None = None,
    random_state: int | None = None,
    max_n_w: float | None = None,
    min_s_w: float | None = None,
    epsilons: Sequence[float] = DEFAULT_GRID,
    refine: int = 4,
    n_samples: int = 1000,
    eta: float = DEFAULT_ETA,
    method: str = "auto",
    conservative: bool = True,
    confidence: float = 0.95,
    progress: bool | None = False,
    stop_at_failure: bool = True,
) -> EpsilonChoice:
    """The largest epsilon whose worst case over ``words`` meets the target (Madlib §4.1).

    ``mechanism`` is a registry name (with ``embeddings=``, the mechanism's options in
    ``mechanism_params=`` as every door names them, e.g. ``{"index": "hnsw"}``, and
    ``random_state=``; each epsilon gets its own mechanism and a fresh accountant) or a
    callable ``epsilon -> Mechanism``. ``mechanism_params`` may not set ``epsilon``,
    ``accountant``, ``random_state`` or ``embeddings``, which choose_epsilon sets itself
    (ValueError naming the key). The target is ``max_w N_w <= max_n_w`` and
    ``min_w S_w >= min_s_w``: give one or both (the paper's example is ``max_n_w=0.5,
    min_s_w=50``); a condition not given is not applied. ``min_s_w`` above the vocabulary
    size can never be met (S_w counts vocabulary words) and is refused before any draw.
    The search evaluates ``epsilons`` in
    increasing order until one fails, then bisects the bracket ``refine`` times on a log
    scale; it relies on N_w growing and S_w shrinking with epsilon and reports in
    ``monotone`` whether the evaluations agreed. N_w grows for Madlib (noise scales as
    1/epsilon around the input's convex Voronoi cell) and for TEM (the weights
    ``exp(-min(epsilon d / 2, ln((1 - beta)(|W| - 1) / beta)))`` of other words shrink).
    S_w shrank in every Madlib run; for TEM it shrinks only while the ball holds the mass:
    the ⊥ branch spreads about ``beta`` uniformly over the words outside the ball, whose
    number grows as the ball shrinks, so with ``beta`` not much below ``eta`` S_w grows
    again at large epsilon (measured at beta = 0.1, eta = 0.05; never at beta = 1e-3).
    ``stop_at_failure=False`` evaluates the whole grid (a full table, and a real
    monotonicity check), then bisects between the largest passing epsilon below the first
    failure and that failure.

    With Monte Carlo (no closed form) and ``conservative=True`` each word is judged by the
    upper confidence bound of N_w and the lower bound of S_w; see :attr:`EpsilonChoice.caveat`.
    For reproducible results seed the mechanisms: ``random_state=0`` with a registry name
    (None, the default, draws secure noise; an int warns, as everywhere), or seed them in
    the factory.
    """
    if max_n_w is None and min_s_w is None:
        raise ValueError("give a target: max_n_w, min_s_w or both")
    if max_n_w is not None:
        max_n_w = check_probability(max_n_w, "max_n_w", open_interval=False)
    if min_s_w is not None:
        if not is_real(min_s_w):
            raise TypeError(f"min_s_w must be a number, got {type(min_s_w).__name__}")
        if not (math.isfinite(min_s_w) and min_s_w >= 1):
            raise ValueError("min_s_w must be a finite number >= 1")
        min_s_w = float(min_s_w)  # a plain float: the choice's JSON stays strict
    grid = sorted({check_epsilon(value, "epsilons") for value in epsilons})
    if not grid:
        raise ValueError("give at least one epsilon")
    refine = check_int(refine, "refine", minimum=0)
    build = _factory(
        mechanism,
        embeddings,
        _check_mechanism_params(mechanism_params),
        check_seed(random_state, "random_state"),
    )
    if method == "monte_carlo":  # before any draw
        check_reachable(max_n_w, min_s_w, n_samples, eta, confidence, conservative)
    done: dict[float, PlausibleDeniability] = {}

    def evaluate(epsilon: float) -> bool:
        mech = build(epsilon)
        if not math.isclose(float(mech.epsilon), epsilon, rel_tol=1e-12):
            raise ValueError(
                f"the factory built a mechanism with epsilon={mech.epsilon:g} when asked for "
                f"{epsilon:g}: it must use its argument"
            )
        if min_s_w is not None and min_s_w > len(mech.embeddings):
            raise ValueError(
                f"min_s_w={min_s_w:g} cannot be met: S_w counts vocabulary words, and the "
                f"vocabulary has {len(mech.embeddings):,}"
            )
        if method == "auto" and not done and not has_closed_form(mech):
            # Monte Carlo it will be: refuse an unreachable target before the first draw
            check_reachable(max_n_w, min_s_w, n_samples, eta, confidence, conservative)
        result = plausible_deniability(
            mech,
            words,
            n_samples,
            eta,
            method=method,
            confidence=confidence,
            progress=progress,
        )
        done[epsilon] = result
        if result.method == "monte_carlo":  # known only now when method="auto"
            check_reachable(max_n_w, min_s_w, n_samples, eta, confidence, conservative)
        return result.meets(max_n_w, min_s_w, conservative)

    passing: float | None = None
    failing: float | None = None
    for epsilon in grid:
        if evaluate(epsilon):
            if failing is None:
                passing = epsilon
        elif failing is None:
            failing = epsilon
            if stop_at_failure:
                break
    if passing is not None and failing is not None:
        for _ in range(refine):
            middle = math.sqrt(passing * failing)
            if evaluate(middle):
                passing = middle
            else:
                failing = middle
    evaluations = tuple(done[key] for key in sorted(done))
    verdicts = [result.meets(max_n_w, min_s_w, conservative) for result in evaluations]
    monotone = all(a >= b for a, b in itertools.pairwise(verdicts))
    if not monotone:
        warn(
            "plausible-deniability checks were not monotone in epsilon (Monte Carlo noise or "
            "an unusual mechanism); inspect EpsilonChoice.table()",
            CalibrationWarning,
        )
    return EpsilonChoice(
        epsilon=passing,
        bracket=(passing, failing),
        max_n_w=max_n_w,
        min_s_w=min_s_w,
        conservative=conservative,
        method=evaluations[0].method,
        evaluations=evaluations,
        monotone=monotone,
    )


def check_reachable(
    max_n_w: float | None,
    min_s_w: float | None,
    n_samples: int | None,
    eta: float,
    confidence: float,
    conservative: bool,
    names: Mapping[str, str] | None = None,
) -> None:
    """ValueError for a target no Monte Carlo result with ``n_samples`` draws can meet, at
    any epsilon: ``s_w_low`` never exceeds the outputs seen (184 of 200 draws at eta 0.05),
    and ``n_w_high`` is at least the Clopper-Pearson bound of 0 hits (0.018 for 200 draws).

    :func:`choose_epsilon` calls it wherever Monte Carlo becomes known, always before a
    draw that could not help: up front for ``method="monte_carlo"``; for ``"auto"`` before
    the first mechanism without a closed form draws, and after a result turned out Monte
    Carlo. ``dxp calibrate`` calls it before its first draw, with ``names`` giving its own
    option spellings."""
    if n_samples is None:
        return
    called = {"min_s_w": "min_s_w", "max_n_w": "max_n_w", "n_samples": "n_samples", **(names or {})}
    alpha = (1.0 - confidence) / 2.0
    if min_s_w is not None:
        reach = (
            _fewest_successes(n_samples, 1.0 - eta, alpha, upper=True)
            if conservative
            else math.ceil((1.0 - eta) * n_samples - 1e-9)
        )
        if reach is not None and min_s_w > reach:
            judged = "s_w_low" if conservative else "s_w"
            raise ValueError(
                f"{called['min_s_w']}={min_s_w:g} cannot be met by Monte Carlo with "
                f"{called['n_samples']}={n_samples}: {judged} is at most {reach} (it never "
                f"exceeds the outputs seen); raise {called['n_samples']} well above "
                f"{called['min_s_w']}"
            )
    if max_n_w is not None and conservative:
        floor = 1.0 - alpha ** (1.0 / n_samples)  # the upper bound when the word never came back
        if max_n_w < floor:
            raise ValueError(
                f"{called['max_n_w']}={max_n_w:g} cannot be met by Monte Carlo with "
                f"{called['n_samples']}={n_samples}: n_w_high is at least {floor:.3g} even "
                f"when no draw returns the word; raise {called['n_samples']}"
            )
