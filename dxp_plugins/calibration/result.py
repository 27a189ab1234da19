"""The per-word result of a plausible-deniability evaluation (Madlib paper, Section 4.1):
N_w and S_w with their intervals, entropy proxies, worst cases and table exports."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._tables import finite_or_none, write_csv
from .._validation import check_choice


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
    #: The mass S_w must cover: S_w is the fewest outputs holding ``1 - eta`` of w's law.
    eta: float
    n_samples: int | None
    confidence: float
    words: tuple[str, ...]
    ids: np.ndarray
    #: N_w: the probability that w comes out as itself (Madlib §4.1), and its bounds.
    n_w: np.ndarray
    n_w_low: np.ndarray
    n_w_high: np.ndarray
    #: S_w: the effective support of w's output law (Madlib §4.1), and its bounds.
    s_w: np.ndarray
    s_w_low: np.ndarray
    s_w_high: np.ndarray
    distinct: np.ndarray | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        """One line (the arrays are many: read them as attributes, or ``summary()``)."""
        draws = "" if self.n_samples is None else f", n_samples={self.n_samples}"
        return (
            f"PlausibleDeniability(mechanism={self.mechanism!r}, epsilon={self.epsilon:g}, "
            f"words={len(self.words)}, method={self.method!r}{draws}, eta={self.eta:g}, "
            f"mean N_w={float(np.mean(self.n_w)):.3g}, max N_w={float(np.max(self.n_w)):.3g}, "
            f"mean S_w={float(np.mean(self.s_w)):.4g}, min S_w={int(np.min(self.s_w))})"
        )

    @property
    def h_inf(self) -> np.ndarray:
        """Renyi min-entropy proxy ``log(1 / N_w)`` in nats (inf where N_w = 0); the
        min-entropy itself where w is its own most likely output (large epsilon), an
        overstatement of it otherwise."""
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
