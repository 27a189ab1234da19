"""N_w and S_w of one mechanism on a sample of words (Madlib paper, Section 4.1): exact from
the mechanism's closed-form law, or by batched Monte Carlo with Clopper-Pearson bounds."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._progress import progress_bar
from .._validation import check_choice, check_int, check_probability
from .result import PlausibleDeniability
from .support import _sampled_support, _support_bounds, support_size
from .words import _word_ids

if TYPE_CHECKING:
    from ..mechanisms.base import Mechanism

#: Default mass left out of S_w: S_w is the smallest output set holding 95% of the mass.
DEFAULT_ETA = 0.05
#: Draws per batched ``privatize_ids`` call in Monte Carlo (bounds memory, drives progress).
MC_BATCH = 1 << 18
METHODS = ("auto", "exact", "monte_carlo")


def _progress(progress: bool | None, total: int, desc: str) -> Any:
    return progress_bar(progress, total=total, desc=desc, unit="word", leave=False)


def _first_law(mech: Mechanism, first_id: int) -> np.ndarray | None:
    """The law of the first word, or None when the mechanism has no closed form."""
    try:
        return mech.distribution(first_id)
    except NotImplementedError:
        return None


def has_closed_form(mech: Mechanism) -> bool:
    """Whether ``method="auto"`` computes ``mech``'s statistics exactly (its output law has a
    closed form), rather than by Monte Carlo. A probe, not a flag: it computes the law of
    row 0 (a distance pass over the vocabulary for TEM, ``2^L`` codes for BRR), since a
    plugin mechanism says so only by implementing ``distribution``."""
    return _first_law(mech, 0) is not None


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
    from ..audit import clopper_pearson
    from ..mechanisms.base import Mechanism

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
