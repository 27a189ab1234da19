"""Making epsilon interpretable and comparable: plausible deniability, choosing epsilon,
and the privacy ratio between metrics.

Plausible deniability (Feyisetan et al., WSDM 2020, Section 4.1). For a word w and a
mechanism M:

* ``N_w = Pr[M(w) = w]``, the probability that w is released unchanged; its Renyi
  min-entropy proxy is ``H_inf ~ log(1 / N_w)``;
* ``S_w``, the size of the smallest set of outputs holding at least ``1 - eta`` of the
  output mass (the effective support); its Renyi-0 proxy is ``H_0 ~ log S_w``.

Small N_w and large S_w mean a released word plausibly came from many inputs. Both move
with epsilon in opposite directions: N_w grows and S_w shrinks as epsilon grows.

* :func:`plausible_deniability` -- N_w and S_w for a sample of words: exact from the
  mechanism's closed-form law (``mech.distribution(word)``: TEM, BRR on small codes) or by
  Monte Carlo (``mech.privatize_ids`` on all words x ``n_samples`` draws in a few batched
  calls) with Clopper-Pearson confidence bounds for N_w and S_w;
* :func:`choose_epsilon` -- the paper's Section 4.1 procedure: the largest epsilon whose
  worst case over a word sample meets a target such as ``max N_w <= 0.5`` and
  ``min S_w >= 50`` (a grid, then bisection, using the monotonicity in epsilon);
* :func:`sample_words` -- a uniform sample of public vocabulary words to calibrate on;
* :func:`neighbor_distances` -- nearest-neighbour distances, so that
  ``epsilon * median d_NN`` can be read as "how many nats separate a word from its
  nearest neighbour" (PRIVACY.md 15).

Everything here reads public data only (vocabulary words, never user text). Monte Carlo
draws go through ``mech.privatize_ids`` and so are charged to ``mech.accountant``: calibrate
on a mechanism built for the purpose, not on one whose accountant guards a real budget
(:func:`choose_epsilon` builds its own, each with a fresh accountant).

Privacy ratio (BRR paper, Section 5 and Appendix A). Mechanisms in different metrics are not
comparable by epsilon alone: Madlib's epsilon is per unit of Euclidean distance between
GloVe vectors, BRR's per flipped bit. The BRR paper compares them through a statistic P_d of
the metric over the vocabulary -- the average pairwise distance ``P_d^avg`` or the maximum
``P_d^max`` -- and the ratio ``R = P_dA / P_dB``: a mechanism in metric B with
``epsilon_B = R * epsilon_A`` spends the same privacy on a "typical" (or the farthest) pair
of words as one in metric A with ``epsilon_A``.

* :func:`distance_summary` -- P_d^avg from uniformly sampled pairs of distinct words with a
  confidence interval (exact when the vocabulary is small), and P_d^max by an exact search
  pruned with the triangle inequality (a bracket when a work budget runs out);
* :func:`privacy_ratio` -- R for two spaces (paired samples when they share a vocabulary);
* :func:`equivalent_epsilon` -- ``epsilon_B = R * epsilon_A``.

A space is a mechanism (its own metric: Madlib Euclidean, TEM its metric, BRR Hamming on its
codes), an :class:`~dxp_plugins.embeddings.table.EmbeddingTable` (with ``metric=``), or
:class:`~dxp_plugins.embeddings.binary.BinaryCodes`. Everything here reads public data only.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ._validation import check_choice, check_epsilon, check_int, check_probability
from .distances import Metric, get_metric
from .embeddings.binary import BinaryCodes, hamming
from .embeddings.table import OOV_ID, EmbeddingTable
from .errors import warn

if TYPE_CHECKING:
    from .mechanisms.base import Mechanism
#: Default mass left out of S_w: S_w is the smallest output set holding 95% of the mass.
DEFAULT_ETA = 0.05
#: Default epsilon grid of :func:`choose_epsilon` (geometric, 0.25 ... 64).
DEFAULT_GRID = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: Draws per batched ``privatize_ids`` call in Monte Carlo (bounds memory, drives progress).
MC_BATCH = 1 << 18
METHODS = ("auto", "exact", "monte_carlo")


# -- per-word statistics ----------------------------------------------------------------------
def support_size(probabilities: np.ndarray, eta: float) -> int:
    """Size of the smallest set of outputs with mass ``>= 1 - eta`` (the largest first).

    ``eta = 0`` gives the full support (every output with positive probability).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if eta == 0.0:
        return int(np.count_nonzero(p > 0))
    ranked = np.sort(p)[::-1]
    cumulative = np.cumsum(ranked)
    # Relative slack for float rounding in the running sum.
    target = (1.0 - eta) * cumulative[-1] * (1.0 - 1e-12)
    return int(min(np.searchsorted(cumulative, target, side="left") + 1, len(p)))


def _sampled_support(draws: np.ndarray, needed: float) -> tuple[np.ndarray, np.ndarray]:
    """Fewest outputs (most frequent first) whose counts reach ``needed``, and the number of
    distinct outputs, for each row of ``draws`` (W x n)."""
    words, n = draws.shape
    ordered = np.sort(draws, axis=1)
    starts = np.ones_like(ordered, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    flat = np.flatnonzero(starts.ravel())
    run_row = flat // n
    run_length = np.diff(np.r_[flat, words * n])
    # Sort runs by (row, length descending) with one integer sort.
    keys = np.sort(run_row * (n + 1) + (n - run_length))
    row = keys // (n + 1)
    length = n - keys % (n + 1)
    cumulative = np.cumsum(length)
    first = np.searchsorted(row, np.arange(words), side="left")
    before = cumulative - length - np.r_[0, cumulative][first][row]
    support = np.bincount(row[before < needed - 1e-9], minlength=words)
    distinct = np.bincount(row, minlength=words)
    return support.astype(np.int64), distinct.astype(np.int64)


def _fewest_successes(trials: int, mass: float, alpha: float, upper: bool) -> int | None:
    """Smallest count whose one-sided Clopper-Pearson bound (upper or lower) reaches
    ``mass``, or None when even ``trials`` successes do not."""
    from .audit import clopper_pearson

    bounds = clopper_pearson(np.arange(trials + 1), trials, alpha)[1 if upper else 0]
    reached = np.flatnonzero(bounds >= mass * (1.0 - 1e-12))
    return int(reached[0]) if reached.size else None


def _support_bounds(
    draws: np.ndarray, eta: float, alpha: float, vocab_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence bounds on the true S_w from ``draws`` (W x n), each holding with
    probability >= 1 - alpha per word.

    Lower: if T is the true top-S_w set, Pr[T] >= 1 - eta and its count is at most the count
    of the sample's top S_w outputs, so the Clopper-Pearson upper bound of that count reaches
    1 - eta: S_w is at least the fewest sample outputs whose count does. Upper (sample
    split): the top outputs of the first half holding enough mass form a set A chosen
    without the second half; when the second half's lower bound of Pr[A] reaches 1 - eta,
    S_w <= |A|, else only the vocabulary size bounds it.
    """
    words, n = draws.shape
    needed = _fewest_successes(n, 1.0 - eta, alpha, upper=True)
    low = _sampled_support(draws, needed if needed is not None else n)[0]
    high = np.full(words, vocab_size, dtype=np.int64)
    half = n // 2
    enough_first = _fewest_successes(half, 1.0 - eta, alpha, upper=False) if half else None
    enough_second = _fewest_successes(n - half, 1.0 - eta, alpha, upper=False)
    if enough_first is None or enough_second is None:
        return np.maximum(low, 1), high
    rows = np.arange(words, dtype=np.int64)[:, None]
    keys, counts = np.unique(rows * vocab_size + draws[:, :half], return_counts=True)
    key_row = keys // vocab_size
    order = np.lexsort((keys, -counts, key_row))  # per row: most frequent first
    start = np.searchsorted(key_row[order], np.arange(words))
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys)) - start[key_row[order]] + 1
    cumulative = np.cumsum(counts[order])
    within = cumulative - np.r_[0, cumulative][start][key_row[order]]
    size = np.full(words, vocab_size, dtype=np.int64)
    reached = within >= enough_first
    np.minimum.at(size, key_row[order][reached], rank[order][reached])
    second = rows * vocab_size + draws[:, half:]
    position = np.minimum(np.searchsorted(keys, second), len(keys) - 1)
    inside = (keys[position] == second) & (rank[position] <= size[:, None])
    confirmed = np.count_nonzero(inside, axis=1) >= enough_second
    high[confirmed] = size[confirmed]
    return np.maximum(low, 1), high


@dataclass(frozen=True, eq=False)
class PlausibleDeniability:
    """N_w and S_w of one mechanism on a sample of words (:func:`plausible_deniability`).

    Arrays hold one entry per word. ``method`` is ``"exact"`` (intervals are points) or
    ``"monte_carlo"`` (``n_samples`` draws per word; each interval end is a one-sided
    bound holding with probability ``(1 + confidence) / 2`` per word). ``distinct`` (Monte
    Carlo only) counts the distinct outputs seen in the draws.

    Monte Carlo N_w has Clopper-Pearson bounds. The plug-in S_w is the support of the
    empirical law: mostly below the true S_w (it never exceeds the distinct outputs seen,
    and a sample's most frequent outputs over-represent their mass) but sometimes above it.
    ``s_w_low`` is a lower confidence bound: the fewest sample outputs whose count has a
    Clopper-Pearson upper bound reaching ``1 - eta`` (the true top-S_w set holds that
    mass and the sample's top S_w outputs hold at least its count). ``s_w_high`` splits
    the draws: the first half picks the set, the second half confirms its mass; when
    it cannot be confirmed (long tails, few draws) it is the vocabulary size.
    """

    mechanism: str
    epsilon: float
    metric: str
    embeddings: str
    vocab_size: int
    method: str
    eta: float
    n_samples: int | None
    confidence: float
    words: tuple[str, ...]
    ids: np.ndarray
    n_w: np.ndarray
    n_w_low: np.ndarray
    n_w_high: np.ndarray
    s_w: np.ndarray
    s_w_low: np.ndarray
    s_w_high: np.ndarray
    distinct: np.ndarray | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def h_inf(self) -> np.ndarray:
        """Renyi min-entropy proxy ``log(1 / N_w)`` in nats (inf where N_w = 0)."""
        with np.errstate(divide="ignore"):
            return np.asarray(-np.log(self.n_w))

    @property
    def h_0(self) -> np.ndarray:
        """Renyi-0 (Hartley) entropy proxy ``log S_w`` in nats."""
        return np.asarray(np.log(self.s_w))

    def worst_case(self, conservative: bool = True) -> tuple[float, float]:
        """``(max N_w, min S_w)`` over the words; with ``conservative`` the interval ends
        that are least favourable (upper bound of N_w, lower bound of S_w)."""
        n_w = self.n_w_high if conservative else self.n_w
        s_w = self.s_w_low if conservative else self.s_w
        return float(n_w.max()), float(s_w.min())

    def meets(
        self, max_n_w: float | None = None, min_s_w: float | None = None, conservative: bool = True
    ) -> bool:
        """Whether the worst case over the words meets the target."""
        worst_n, worst_s = self.worst_case(conservative)
        ok_n = max_n_w is None or worst_n <= max_n_w
        ok_s = min_s_w is None or worst_s >= min_s_w
        return bool(ok_n and ok_s)

    def summary(self) -> dict[str, Any]:
        """Means, medians and worst cases (with the words attaining them), JSON-ready."""
        worst_n = int(np.argmax(self.n_w))
        worst_s = int(np.argmin(self.s_w))
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "metric": self.metric,
            "method": self.method,
            "eta": self.eta,
            "n_samples": self.n_samples,
            "confidence": self.confidence,
            "words": len(self.words),
            "mean_n_w": float(self.n_w.mean()),
            "median_n_w": float(np.median(self.n_w)),
            "max_n_w": float(self.n_w[worst_n]),
            "max_n_w_upper": float(self.n_w_high.max()),
            "max_n_w_word": self.words[worst_n],
            "mean_s_w": float(self.s_w.mean()),
            "median_s_w": float(np.median(self.s_w)),
            "min_s_w": int(self.s_w[worst_s]),
            "min_s_w_lower": int(self.s_w_low.min()),
            "min_s_w_word": self.words[worst_s],
            "share_n_w_above_half": float(np.mean(self.n_w > 0.5)),
            # H_inf is infinite for words never kept (N_w = 0): averaged over the others.
            "mean_h_inf": finite_or_none(float(np.mean(self.h_inf[self.n_w > 0])))
            if np.any(self.n_w > 0)
            else None,
            "words_never_kept": int(np.sum(self.n_w == 0)),
            "mean_h_0": float(self.h_0.mean()),
        }

    def histogram(self, statistic: str = "n_w", bins: Any = 20) -> tuple[np.ndarray, np.ndarray]:
        """``numpy.histogram`` of ``"n_w"``, ``"s_w"``, ``"h_inf"`` or ``"h_0"``."""
        check_choice(statistic, "statistic", ("n_w", "s_w", "h_inf", "h_0"))
        values = np.asarray(getattr(self, statistic), dtype=np.float64)
        counts, edges = np.histogram(values[np.isfinite(values)], bins=bins)
        return counts, edges

    # -- table export ------------------------------------------------------------------------
    def to_columns(self) -> dict[str, list[Any]]:
        """One column per statistic, one row per word (feeds ``pandas.DataFrame``)."""
        count = len(self.words)
        columns: dict[str, list[Any]] = {
            "mechanism": [self.mechanism] * count,
            "epsilon": [self.epsilon] * count,
            "method": [self.method] * count,
            "word": list(self.words),
            "n_w": self.n_w.tolist(),
            "n_w_low": self.n_w_low.tolist(),
            "n_w_high": self.n_w_high.tolist(),
            "s_w": self.s_w.tolist(),
            "s_w_low": self.s_w_low.tolist(),
            "s_w_high": self.s_w_high.tolist(),
            "h_inf": [finite_or_none(v) for v in self.h_inf.tolist()],
            "h_0": self.h_0.tolist(),
        }
        if self.distinct is not None:
            columns["distinct"] = self.distinct.tolist()
        return columns

    def to_records(self) -> list[dict[str, Any]]:
        """One dict per word."""
        columns = self.to_columns()
        return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]

    def to_frame(self) -> Any:
        """A ``pandas.DataFrame`` of :meth:`to_columns` (needs pandas installed)."""
        import importlib

        try:
            pandas = importlib.import_module("pandas")
        except ImportError:
            raise ImportError("to_frame() needs pandas; use to_columns() or to_csv()") from None
        return pandas.DataFrame(self.to_columns())

    def to_csv(self, path: str | Path | None = None) -> str:
        """The per-word table as CSV (written to ``path`` when given)."""
        return write_csv(self.to_records(), path)

    def to_dict(self) -> dict[str, Any]:
        """Summary, settings and the per-word table, JSON-ready."""
        return {
            "summary": self.summary(),
            "embeddings": self.embeddings,
            "vocab_size": self.vocab_size,
            "settings": self.settings,
            "per_word": self.to_records(),
        }

    def to_json(self, path: str | Path | None = None) -> str:
        """:meth:`to_dict` as JSON (written to ``path`` when given)."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def write_csv(records: Sequence[dict[str, Any]], path: str | Path | None = None) -> str:
    """Records (dicts with the same keys) as CSV text, also written to ``path`` when given."""
    buffer = io.StringIO()
    if records:
        writer = csv.DictWriter(buffer, fieldnames=list(records[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(records)
    text = buffer.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


# -- plausible deniability --------------------------------------------------------------------
def _word_ids(
    table: EmbeddingTable, words: Sequence[str | int]
) -> tuple[np.ndarray, tuple[str, ...]]:
    if isinstance(words, str) or not isinstance(words, Sequence | np.ndarray):
        raise TypeError("words must be a sequence of vocabulary words or row ids")
    if len(words) == 0:
        raise ValueError("give at least one word")
    as_array = np.asarray(words)
    if np.issubdtype(as_array.dtype, np.integer):
        ids = as_array.astype(np.int64).ravel()
        if np.min(ids) < 0 or np.max(ids) >= len(table):
            raise ValueError(f"word ids must lie in [0, {len(table)})")
    else:
        if not all(isinstance(word, str) for word in words):
            raise TypeError("words must be all str or all integer row ids")
        ids = table.lookup(list(words))  # type: ignore[arg-type]
        if np.any(ids == OOV_ID):
            # Calibration words are public vocabulary words; N_w is undefined off it.
            raise ValueError(
                f"{int(np.sum(ids == OOV_ID))} calibration word(s) are not in the vocabulary"
            )
    names = table.word_array()[ids]
    return ids, tuple(str(name) for name in names)


def _progress(progress: bool | None, total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    disable = None if progress is None else not progress
    return tqdm(total=total, desc=desc, unit="word", file=sys.stderr, disable=disable, leave=False)


def _first_law(mech: Mechanism, first_id: int) -> np.ndarray | None:
    """The law of the first word, or None when the mechanism has no closed form."""
    try:
        return mech.distribution(first_id)
    except NotImplementedError:
        return None


def plausible_deniability(
    mech: Mechanism,
    words: Sequence[str | int],
    n_samples: int = 1000,
    eta: float = DEFAULT_ETA,
    *,
    method: str = "auto",
    confidence: float = 0.95,
    progress: bool | None = False,
) -> PlausibleDeniability:
    """N_w and S_w of ``mech`` for each of ``words`` (Madlib paper, Section 4.1).

    Parameters
    ----------
    mech:
        Any :class:`~dxp_plugins.mechanisms.base.Mechanism`.
    words:
        Vocabulary words or row ids (see :func:`sample_words`).
    n_samples:
        Monte Carlo draws per word.
    eta:
        S_w is the size of the smallest output set with mass ``>= 1 - eta``, in [0, 1).
    method:
        ``"exact"`` uses ``mech.distribution(word)`` (the closed-form output law),
        ``"monte_carlo"`` draws ``n_samples`` outputs per word through
        ``mech.privatize_ids`` (charged to ``mech.accountant``); ``"auto"`` (default) is
        exact where the mechanism has a closed form.
    confidence:
        Two-sided level of the Monte Carlo intervals; each end is a one-sided bound at
        ``(1 + confidence) / 2`` per word (N_w: Clopper-Pearson, exact for the binomial
        count; S_w: see :class:`PlausibleDeniability`).
    progress:
        tqdm bar on stderr (None: when stderr is a terminal).

    Monte Carlo caveats: S_w is the plug-in value of the empirical law, so it cannot exceed
    the number of distinct outputs seen and is mostly low when the law has a long tail
    (measured on GloVe 5k with an exact law: 19% of the true S_w when that was ~4,000 and
    n_samples = 1000; 62% when it was ~360), but it is not a bound: it can also land above
    the true value. Judge a target by ``s_w_low``. Use ``n_samples`` well above the S_w you
    target. With ``eta = 0`` it is the number of distinct outputs in ``n_samples`` draws.
    """
    from .audit import clopper_pearson
    from .mechanisms.base import Mechanism

    if not isinstance(mech, Mechanism):
        raise TypeError("mech must be a Mechanism")
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    eta = _check_eta(eta)
    check_choice(method, "method", METHODS)
    confidence = check_probability(confidence, "confidence")
    table = mech.embeddings
    ids, names = _word_ids(table, words)
    first = None
    if method != "monte_carlo":
        first = _first_law(mech, int(ids[0]))
        if first is None and method == "exact":
            raise ValueError(
                f"{mech.name} has no closed-form output law here: use method='monte_carlo'"
            )
        method = "exact" if first is not None else "monte_carlo"
    common: dict[str, Any] = {
        "mechanism": mech.name,
        "epsilon": mech.epsilon,
        "metric": mech.metric,
        "embeddings": table.fingerprint,
        "vocab_size": len(table),
        "eta": eta,
        "confidence": confidence,
        "words": names,
        "ids": ids,
        "settings": mech._settings(),
    }
    desc = f"{mech.name} eps={mech.epsilon:g}"
    if method == "exact":
        n_w = np.empty(len(ids))
        s_w = np.empty(len(ids), dtype=np.int64)
        with _progress(progress, len(ids), desc) as bar:
            for position, row in enumerate(ids.tolist()):
                if position == 0 and first is not None:
                    law = _checked_law(first, len(table))
                else:
                    law = _checked_law(mech.distribution(row), len(table))
                n_w[position] = law[row]
                s_w[position] = support_size(law, eta)
                bar.update(1)
        return PlausibleDeniability(
            method="exact",
            n_samples=None,
            n_w=n_w,
            n_w_low=n_w,
            n_w_high=n_w,
            s_w=s_w,
            s_w_low=s_w,
            s_w_high=s_w,
            **common,
        )
    draws = np.empty((len(ids), n_samples), dtype=np.int64)
    per_call = max(1, MC_BATCH // n_samples)
    with _progress(progress, len(ids), desc) as bar:
        for start in range(0, len(ids), per_call):
            block = ids[start : start + per_call]
            released = mech.privatize_ids(np.repeat(block, n_samples))
            draws[start : start + len(block)] = released.reshape(len(block), n_samples)
            bar.update(len(block))
    hits = np.count_nonzero(draws == ids[:, None], axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = clopper_pearson(hits, n_samples, alpha)
    s_w, distinct = _sampled_support(draws, (1.0 - eta) * n_samples)
    s_low, s_high = _support_bounds(draws, eta, alpha, len(table))
    return PlausibleDeniability(
        method="monte_carlo",
        n_samples=n_samples,
        n_w=hits / n_samples,
        n_w_low=np.asarray(low),
        n_w_high=np.asarray(high),
        s_w=s_w,
        s_w_low=s_low,
        s_w_high=s_high,
        distinct=distinct,
        **common,
    )


def _check_eta(eta: Any) -> float:
    value = check_probability(eta, "eta", open_interval=False)
    if value >= 1.0:
        raise ValueError("eta must lie in [0, 1)")
    return value


def _checked_law(law: Any, size: int) -> np.ndarray:
    array = np.asarray(law, dtype=np.float64)
    if array.shape != (size,) or not np.all(array >= 0) or abs(array.sum() - 1.0) > 1e-6:
        raise ValueError("distribution() must return a probability vector over the vocabulary")
    return array


# -- choosing epsilon ---------------------------------------------------------------------------
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


def _factory(
    mechanism: str | MechanismFactory,
    embeddings: EmbeddingTable | str | None,
    params: dict[str, Any],
) -> MechanismFactory:
    if callable(mechanism):
        if embeddings is not None or params:
            raise ValueError("embeddings= and params= apply to a registry name, not a factory")
        return mechanism
    if not isinstance(mechanism, str):
        raise TypeError("mechanism must be a registry name or a callable epsilon -> Mechanism")
    if embeddings is None:
        raise ValueError("a mechanism given by name needs embeddings=")
    if isinstance(embeddings, str):
        from .embeddings import load_embeddings

        embeddings = load_embeddings(embeddings)
    table = embeddings

    def build(epsilon: float) -> Mechanism:
        from .guarantee import Accountant
        from .mechanisms import make_mechanism

        # A fresh accountant: calibration draws public words and must not touch a budget.
        return make_mechanism(mechanism, table, epsilon=epsilon, accountant=Accountant(), **params)

    return build


def choose_epsilon(
    mechanism: str | MechanismFactory,
    words: Sequence[str | int],
    *,
    embeddings: EmbeddingTable | str | None = None,
    params: dict[str, Any] | None = None,
    max_n_w: float | None = 0.5,
    min_s_w: float | None = 50,
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

    ``mechanism`` is a registry name (with ``embeddings=`` and extra ``params=``; each
    epsilon gets its own mechanism and a fresh accountant) or a callable
    ``epsilon -> Mechanism``. The target is ``max_w N_w <= max_n_w`` and
    ``min_w S_w >= min_s_w`` (None drops a condition). The search evaluates ``epsilons`` in
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
    For reproducible results seed the mechanisms (``params={"random_state": 0}`` with a
    registry name).
    """
    if max_n_w is None and min_s_w is None:
        raise ValueError("give a target: max_n_w, min_s_w or both")
    if max_n_w is not None:
        max_n_w = check_probability(max_n_w, "max_n_w", open_interval=False)
    if min_s_w is not None and (isinstance(min_s_w, bool) or not min_s_w >= 1):
        raise ValueError("min_s_w must be a number >= 1")
    grid = sorted({check_epsilon(value, "epsilons") for value in epsilons})
    if not grid:
        raise ValueError("give at least one epsilon")
    refine = check_int(refine, "refine", minimum=0)
    build = _factory(mechanism, embeddings, dict(params or {}))
    done: dict[float, PlausibleDeniability] = {}

    def evaluate(epsilon: float) -> bool:
        mech = build(epsilon)
        if not math.isclose(float(mech.epsilon), epsilon, rel_tol=1e-12):
            raise ValueError(
                f"the factory built a mechanism with epsilon={mech.epsilon:g} when asked for "
                f"{epsilon:g}: it must use its argument"
            )
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
        if result.method == "monte_carlo" and min_s_w is not None and n_samples is not None:
            judged = "s_w_low" if conservative else "s_w"
            reach = (
                _fewest_successes(n_samples, 1.0 - eta, (1.0 - confidence) / 2.0, upper=True)
                if conservative
                else math.ceil((1.0 - eta) * n_samples - 1e-9)
            )
            if reach is not None and min_s_w > reach:
                raise ValueError(
                    f"min_s_w={min_s_w:g} cannot be met by Monte Carlo with n_samples="
                    f"{n_samples}: {judged} is at most {reach} (it never exceeds the outputs "
                    f"seen); raise n_samples well above min_s_w"
                )
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
            RuntimeWarning,
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


# -- word samples and the scale of epsilon -----------------------------------------------------
def sample_words(
    embeddings: EmbeddingTable,
    n: int,
    *,
    pool: int | None = None,
    random_state: int | None = None,
) -> list[str]:
    """``n`` distinct words drawn uniformly from the ``pool`` most frequent (all by default;
    fewer, with a warning, when the pool is smaller than ``n``).

    Only words that look up to their own row are drawn: a few rows (``ﬁrst``, ``…``) are
    unreachable because normalisation (PRIVACY.md 21) sends their word to another row. The
    vocabulary is public, so the sample needs no secure randomness; ``random_state`` makes
    it reproducible.
    """
    if not isinstance(embeddings, EmbeddingTable):
        raise TypeError("embeddings must be an EmbeddingTable")
    n = check_int(n, "n", minimum=1)
    if random_state is not None:  # numpy's own error would name no argument
        random_state = check_int(random_state, "random_state", minimum=0)
    if pool is not None:
        pool = check_int(pool, "pool", minimum=1)
        embeddings_pool = embeddings.most_frequent(pool) if pool < len(embeddings) else embeddings
    else:
        embeddings_pool = embeddings
    candidates = np.asarray(embeddings_pool.words, dtype=object)
    reachable = candidates[
        embeddings.word_array()[embeddings.lookup(list(candidates))] == candidates
    ]
    size = len(reachable)
    if n > size:
        warn(
            f"asked for {n} words but the pool holds {size}: sampling all {size}",
            UserWarning,
        )
    rng = np.random.default_rng(random_state)
    rows = np.sort(rng.choice(size, size=min(n, size), replace=False))
    return [str(word) for word in reachable[rows]]


def neighbor_distances(embeddings: EmbeddingTable, words: Sequence[str | int]) -> np.ndarray:
    """Euclidean distance from each word to its nearest *other* vocabulary row.

    ``epsilon * d`` bounds the log-likelihood ratio between a word and its nearest neighbour
    under an ``epsilon * d``-private mechanism, so ``epsilon * median(d)`` makes a Euclidean
    epsilon readable (PRIVACY.md 15). Brute force in float64 blocks (exact).
    """
    ids, _ = _word_ids(embeddings, words)
    vectors = embeddings.vectors
    squares = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64)
    out = np.empty(len(ids))
    step = max(1, (32 << 20) // (8 * len(vectors)))
    for start in range(0, len(ids), step):
        block = ids[start : start + step]
        queries = vectors[block].astype(np.float64)
        distances = squares[None, :] - 2.0 * (queries @ vectors.T.astype(np.float64))
        distances += squares[block][:, None]
        distances[np.arange(len(block)), block] = np.inf
        out[start : start + len(block)] = np.sqrt(np.maximum(distances.min(axis=1), 0.0))
    return out


#: Default budget of the exact P_d^max search, in (row, word) distance evaluations.
DEFAULT_MAX_WORK = 200_000_000


# -- metric spaces over a vocabulary ------------------------------------------------------------
class _Space:
    metric: str
    size: int
    identity: Any  # vocabulary identity: paired sampling when two spaces share it
    diameter_bound = math.inf  # no two points of the space are farther apart

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(max_j d(i, j), argmax_j)`` for each i in ids."""
        raise NotImplementedError

    def center_distances(self) -> np.ndarray:
        """d(c, j) for every word j from one public centre point c."""
        raise NotImplementedError


class _VectorSpace(_Space):
    def __init__(self, table: EmbeddingTable, metric: Metric) -> None:
        self.table, self.distance = table, metric
        self.metric, self.size, self.identity = metric.name, len(table), table.fingerprint
        if metric.name == "angular":
            self.diameter_bound = math.pi

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        vectors = self.table.vectors
        return self.distance.pairs(vectors[i].astype(np.float64), vectors[j].astype(np.float64))

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points = self.table.vectors[ids].astype(np.float64)
        distances = self.distance.to_table(points, self.table)
        far = np.argmax(distances, axis=1)
        return distances[np.arange(len(ids)), far], far

    def center_distances(self) -> np.ndarray:
        centre = self.table.unk_vector()
        if self.metric == "angular" and not np.linalg.norm(centre) > 0:
            centre = self.table.vectors[0].astype(np.float64)  # any point with a direction
        return self.distance.exact_to_table(centre, self.table)


class _CodeSpace(_Space):
    def __init__(self, codes: BinaryCodes, identity: Any = None) -> None:
        from .neighbors import _faiss

        faiss = _faiss()

        self.codes = codes
        self.metric, self.size = "hamming", len(codes)
        self.identity = identity if identity is not None else codes.fingerprint
        self.diameter_bound = float(codes.n_bits)
        self._index = faiss.IndexBinaryFlat(codes.packed.shape[1] * 8)
        self._index.add(np.ascontiguousarray(codes.packed))

    def pairs(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        from .embeddings.binary import _POPCOUNT

        xor = np.bitwise_xor(self.codes.packed[i], self.codes.packed[j])
        return _POPCOUNT[xor].sum(axis=1).astype(np.float64)

    def farthest(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # The farthest code from c is the nearest to its complement (padding bits included).
        complement = np.ascontiguousarray(np.bitwise_not(self.codes.packed[ids]))
        distances, far = self._index.search(complement, 1)
        total = self.codes.packed.shape[1] * 8
        return (total - distances[:, 0]).astype(np.float64), far[:, 0].astype(np.int64)

    def center_distances(self) -> np.ndarray:
        return hamming(self.codes.majority()[None, :], self.codes.packed)[0].astype(np.float64)


def _space(space: Any, metric: Any) -> _Space:
    """The space's distances; P_d needs a pair of words, so at least 2."""
    resolved = _resolve_space(space, metric)
    if resolved.size < 2:
        raise ValueError("P_d needs at least 2 words: a 1-word space has no pairs")
    return resolved


def _resolve_space(space: Any, metric: Any) -> _Space:
    from .mechanisms.base import Mechanism

    if isinstance(space, BinaryCodes):
        if metric is not None and metric != "hamming":
            raise ValueError("binary codes are compared in Hamming distance; do not pass metric=")
        return _CodeSpace(space)
    if isinstance(space, EmbeddingTable):
        return _VectorSpace(space, get_metric("euclidean" if metric is None else metric))
    if isinstance(space, Mechanism):
        if metric is not None:
            raise ValueError("a mechanism brings its own metric; do not pass metric=")
        codes = getattr(space, "codes", None)
        if isinstance(codes, BinaryCodes):
            return _CodeSpace(codes, identity=space.embeddings.fingerprint)
        distance = getattr(space, "distance_metric", None)
        if isinstance(distance, Metric):
            return _VectorSpace(space.embeddings, distance)
        return _VectorSpace(space.embeddings, get_metric(space.metric))
    raise TypeError(
        f"expected a Mechanism, EmbeddingTable or BinaryCodes, got {type(space).__name__}"
    )


# -- P_d ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DistanceSummary:
    """P_d^avg and P_d^max of one metric over a vocabulary."""

    metric: str
    vocab_size: int
    average: float
    average_interval: tuple[float, float]
    confidence: float
    pairs: int
    average_exact: bool
    maximum: float  # exact when maximum_exact, else the largest distance found
    maximum_upper: float  # an upper bound of the true maximum
    maximum_exact: bool


def _sample_pairs(size: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """``count`` uniform pairs of distinct words, or every pair when there are fewer."""
    if size * (size - 1) // 2 <= count:
        i, j = np.triu_indices(size, k=1)
        return i, j, np.array(True)
    i = rng.integers(0, size, count)
    j = rng.integers(0, size - 1, count)
    j += j >= i
    return i, j, np.array(False)


def _mean_interval(values: np.ndarray, z: float, exact: bool) -> tuple[float, tuple[float, float]]:
    mean = float(values.mean())
    if exact:
        return mean, (mean, mean)
    half = z * float(values.std(ddof=1)) / math.sqrt(len(values))
    return mean, (mean - half, mean + half)


def _z(confidence: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


def _maximum(space: _Space, max_work: int) -> tuple[float, float, bool]:
    """Exact diameter via ``d(i, j) <= d(i, c) + max_k d(c, k)``, within a work budget."""
    radius = space.center_distances()
    if not np.all(np.isfinite(radius)):
        raise ValueError("the centre of the P_d^max search has no finite distances")
    # d(i, j) <= r_i + r_j <= 2 max(r_i, r_j): the pair is found from its larger-radius row.
    upper_each = np.minimum(2.0 * radius, space.diameter_bound)
    best = 0.0
    start = int(np.argmax(radius))
    for _ in range(3):  # double sweeps: a good lower bound, cheaply
        value, far = space.farthest(np.array([start]))
        best = max(best, float(value[0]))
        start = int(far[0])
    order = np.argsort(-upper_each, kind="stable")
    block = max(1, min(256, (64 << 20) // (8 * space.size)))
    work = 0
    for offset in range(0, space.size, block):
        rows = order[offset : offset + block]
        if upper_each[rows[0]] <= best:
            return best, best, True
        if work + len(rows) * space.size > max_work:
            return best, max(best, float(upper_each[rows[0]])), False
        best = max(best, float(space.farthest(rows)[0].max()))
        work += len(rows) * space.size
    return best, best, True


def distance_summary(
    space: Any,
    *,
    metric: Any = None,
    n_pairs: int = 100_000,
    confidence: float = 0.99,
    max_work: int = DEFAULT_MAX_WORK,
    random_state: int | None = None,
) -> DistanceSummary:
    """P_d^avg (sampled, with a ``confidence`` interval) and P_d^max of a space.

    ``n_pairs`` uniform pairs of distinct words estimate the average (every pair when the
    vocabulary has fewer). The maximum is searched exactly; when that needs more than
    ``max_work`` distance evaluations the result is a bracket
    ``[maximum, maximum_upper]`` with ``maximum_exact=False``.
    """
    resolved = _space(space, metric)
    n_pairs = check_int(n_pairs, "n_pairs", minimum=2)
    confidence = check_probability(confidence, "confidence")
    max_work = check_int(max_work, "max_work", minimum=0)
    i, j, exact = _sample_pairs(resolved.size, n_pairs, np.random.default_rng(random_state))
    values = resolved.pairs(i, j)
    average, interval = _mean_interval(values, _z(confidence), bool(exact))
    maximum, upper, maximum_exact = _maximum(resolved, max_work)
    return DistanceSummary(
        metric=resolved.metric,
        vocab_size=resolved.size,
        average=average,
        average_interval=interval,
        confidence=confidence,
        pairs=len(values),
        average_exact=bool(exact),
        maximum=maximum,
        maximum_upper=upper,
        maximum_exact=maximum_exact,
    )


# -- the privacy ratio ----------------------------------------------------------------------
@dataclass(frozen=True)
class PrivacyRatio:
    """``R = P_dA / P_dB`` for the average and the maximum (BRR §5)."""

    a: DistanceSummary
    b: DistanceSummary
    average: float
    average_interval: tuple[float, float]
    maximum: float
    maximum_interval: tuple[float, float]  # from the P_d^max brackets (a point when exact)
    paired: bool

    def equivalent_epsilon(self, epsilon_a: float, statistic: str = "average") -> float:
        """``epsilon_B = R * epsilon_A``."""
        return equivalent_epsilon(epsilon_a, self, statistic=statistic)


def privacy_ratio(
    a: Any,
    b: Any,
    *,
    metric_a: Any = None,
    metric_b: Any = None,
    n_pairs: int = 100_000,
    confidence: float = 0.99,
    max_work: int = DEFAULT_MAX_WORK,
    random_state: int | None = None,
) -> PrivacyRatio:
    """The privacy ratio ``R = P_dA / P_dB`` of two spaces (mechanisms, tables or codes).

    When both spaces share a vocabulary (e.g. Madlib on a table and BRR on its codes) the
    same sampled pairs serve both, and the interval of the average ratio uses the delta
    method with their covariance; otherwise the samples are independent.
    """
    space_a, space_b = _space(a, metric_a), _space(b, metric_b)
    n_pairs = check_int(n_pairs, "n_pairs", minimum=2)
    confidence = check_probability(confidence, "confidence")
    rng = np.random.default_rng(random_state)
    paired = space_a.identity == space_b.identity and space_a.size == space_b.size
    i, j, exact_a = _sample_pairs(space_a.size, n_pairs, rng)
    if paired:
        ib, jb, exact_b = i, j, exact_a
    else:
        ib, jb, exact_b = _sample_pairs(space_b.size, n_pairs, rng)
    values_a, values_b = space_a.pairs(i, j), space_b.pairs(ib, jb)
    z = _z(confidence)
    summaries = []
    for space, values, exact in ((space_a, values_a, exact_a), (space_b, values_b, exact_b)):
        average, interval = _mean_interval(values, z, bool(exact))
        maximum, upper, maximum_exact = _maximum(space, max_work)
        summaries.append(
            DistanceSummary(
                space.metric,
                space.size,
                average,
                interval,
                confidence,
                len(values),
                bool(exact),
                maximum,
                upper,
                maximum_exact,
            )
        )
    sa, sb = summaries
    if sb.average <= 0 or sb.maximum <= 0:
        raise ValueError("P_dB is zero: every pair of words is at distance 0 in metric B")
    ratio = sa.average / sb.average
    variance = 0.0
    if not exact_a:
        variance += float(values_a.var(ddof=1)) / len(values_a) / sa.average**2
    if not exact_b:
        variance += float(values_b.var(ddof=1)) / len(values_b) / sb.average**2
    if paired and not exact_a:
        covariance = float(np.cov(values_a, values_b)[0, 1]) / len(values_a)
        variance -= 2.0 * covariance / (sa.average * sb.average)
    half = z * ratio * math.sqrt(max(variance, 0.0))
    return PrivacyRatio(
        a=sa,
        b=sb,
        average=ratio,
        average_interval=(ratio - half, ratio + half),
        maximum=sa.maximum / sb.maximum,
        maximum_interval=(sa.maximum / sb.maximum_upper, sa.maximum_upper / sb.maximum),
        paired=paired,
    )


def equivalent_epsilon(
    epsilon_a: float, ratio: PrivacyRatio | float, *, statistic: str = "average"
) -> float:
    """The epsilon in metric B matching ``epsilon_a`` in metric A: ``R * epsilon_a``.

    ``ratio`` is a :class:`PrivacyRatio` (``statistic`` "average" or "maximum" picks R) or
    R itself.
    """
    from ._validation import check_epsilon

    epsilon_a = check_epsilon(epsilon_a, "epsilon_a")
    check_choice(statistic, "statistic", ("average", "maximum"))
    if isinstance(ratio, PrivacyRatio):
        value = ratio.average if statistic == "average" else ratio.maximum
        if statistic == "maximum" and not (ratio.a.maximum_exact and ratio.b.maximum_exact):
            low, high = ratio.maximum_interval
            warn(
                "P_d^max was bracketed, not found exactly (its search ran out of budget): "
                f"the maximum ratio lies in [{low:.4g}, {high:.4g}] and "
                f"{ratio.maximum:.4g} is the ratio of the largest distances found",
                RuntimeWarning,
            )
    elif isinstance(ratio, int | float) and not isinstance(ratio, bool):
        value = float(ratio)
    else:
        raise TypeError("ratio must be a PrivacyRatio or a number")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"the privacy ratio must be a finite number > 0, got {value:g}")
    return check_epsilon(value * epsilon_a, "equivalent epsilon")
