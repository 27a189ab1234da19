"""How often an attacker recovers the input word from 1, 4 and 16 releases (Madlib, TEM, BRR).

The guarantee of a word-level mechanism is ``epsilon * d``: on its own it bounds nothing a
reader cares about at the epsilon the docs use (with a realistic prior it allows 78-100%
recovery from one release). This benchmark measures what an attacker actually recovers,
and checks every measurement against the cap the guarantee implies (an end-to-end audit).

* **Attacker**: knows the mechanism, epsilon, the public table (GloVe 6B 50d, 10k words)
  and the domain's word frequencies: the prior pi is the share of each in-vocabulary,
  privatized token of the 1,500 Pang & Lee reviews, tokenized and selected as the text path
  does (``dxp_plugins.text.tokenizer`` + ``TokenizedText``, then ``EmbeddingTable.lookup``).
* **Targets**: ``--tokens`` input words drawn i.i.d. from pi (a fixed seed), each released
  ``max(--releases)`` times by the library (``privatize_ids``, seeded); an attack on k
  releases sees the first k. Content words: GloVe rank >= 100 (rank < 100: the, of, and...).
* **Attacks**: *prior only* (always "the"); *kept / majority* (guess the output; for k > 1
  the most frequent output, ties to the higher prior); *MAP*, argmax pi(w) prod_j p(y_j | w):
  - TEM: Bayes-optimal. p(y | w) is the library's exact law ``TEM.distribution(w)`` for every
    support word, so the k = 1 Bayes success, sum_y max_w pi(w) p(y | w), and the kept rate
    are computed exactly and printed beside the measured ones (a self-check of the sampler
    against the law: the run fails if an exact value is outside the measured 99.9% interval).
  - Madlib, BRR: near-optimal, Rao-Blackwellised through the noisy point v. Pr[w | v] is
    exact (pi(w) exp(-eps ||v - phi(w)||) for Madlib, pi(w) (p / (1 - p))^H(v, c_w) for BRR),
    so Pr[w | y] = E[Pr[w | v] | decode(v) = y] is estimated from a pool of ``--pool``
    triples (w ~ pi, v, y) drawn as the mechanism's own ``_sample`` does; for k releases
    Pr[w | y_1..y_k] ∝ pi(w)^(1-k) prod_j Pr[w | y_j] ("RB"). A second MAP needs no pool:
    it treats each output's own point as if it were the noisy point ("surrogate"), which
    the pool's estimation error lets win at several k > 1. "Best MAP" is the larger of the
    two per cell (a slightly optimistic choice among two attacks on the same tokens). These
    rates are LOWER BOUNDS on what an attacker can do: more compute (a larger pool) raises
    them, at k = 16 noticeably.
  None of the attacks uses context: an attacker with a language model over the surrounding
  private words does better.
* **Guarantee cap**: with q_w = Pr[guess w | input w], ``epsilon * d``-privacy of k releases
  forces sum_w exp(-k eps d(w, w')) q_w <= 1 for every w'; the dual point lambda = c pi of
  that LP gives success <= min_c [c + sum_w (pi_w - c D_w)^+], D_w = sum_w' pi_w'
  exp(-k eps d(w, w')). No attack under prior pi can beat it if the guarantee holds: the run
  exits 1, loudly, when the lower 95% bound of any measured success (all tokens) exceeds it.

Library internals used (to draw the attacker's pool exactly as ``Madlib._sample`` and
``BRR._sample`` draw a release, without touching private state): the module functions
``dxp_plugins.mechanisms.madlib.sample_noise`` and ``dxp_plugins.mechanisms.brr.sample_flips``
/ ``flip_probability``, with the public ``Madlib.neighbor_index.search``,
``BRR.binary_index.search`` and ``BRR.codes``. The pool's kept rate is checked against the
released one (the same law, another generator: numpy PCG64 instead of seeded ChaCha20).

    python benchmarks/attack_success.py             # 5,000 tokens, 500k pool: ~2 minutes
    python benchmarks/attack_success.py --full      # 10,000 tokens, 1M pool: about twice the work
    python benchmarks/attack_success.py --madlib 1,3,5 --tem none --brr 0.25,0.5
    python benchmarks/attack_success.py --madlib-index hnsw --tem none --brr none --name NAME

Writes benchmarks/results/attack_success.json and .md (``--full``: attack_success_full.*;
``--name``).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from common import (
    RESULTS,
    add_faiss_threads,
    epsilon_list,
    file_stem,
    float_range,
    glove_vocab,
    int_range,
    machine,
    markdown_table,
    positive_int,
    save,
    set_faiss_threads,
)

import dxp_plugins as dxp
from dxp_plugins.datasets import load_pang_lee
from dxp_plugins.mechanisms.brr import flip_probability, sample_flips
from dxp_plugins.mechanisms.madlib import sample_noise
from dxp_plugins.text import TokenizedText, tokenizer

#: GloVe ranks below this are function words (the, of, and, ...); the rest content words.
FUNCTION_RANK = 100
#: Pool points whose posterior is computed at once (x support words, float32).
POOL_CHUNK = 4096
Z95, Z999 = 1.959964, 3.290527


# -- setting -----------------------------------------------------------------------------------
@dataclass
class Setting:
    """The public table and the attacker's prior pi over its support S (table ids)."""

    table: Any
    support: np.ndarray
    prior: np.ndarray
    tokens: int  # privatized tokens of the corpus
    in_vocab: int  # ... of which in the table

    @classmethod
    def load(cls, vocab_size: int) -> Setting:
        table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab_size)
        texts, _ = load_pang_lee("reviews")
        counts = np.zeros(len(table), dtype=np.int64)
        tokens = 0
        for doc in tokenizer().pipe(texts):
            text = TokenizedText.from_doc(doc)  # the text path's default selection
            words = [word for word, keep in zip(text.words, text.selected, strict=True) if keep]
            ids = table.lookup(words)  # NFKC + lower case, as the mechanisms look words up
            tokens += len(ids)
            counts += np.bincount(ids[ids >= 0], minlength=len(table))
        support = np.flatnonzero(counts)
        return cls(table, support, counts[support] / counts.sum(), tokens, int(counts.sum()))

    @property
    def log_prior(self) -> np.ndarray:
        return np.log(self.prior)

    def draw(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` table ids drawn i.i.d. from pi."""
        return self.support[rng.choice(len(self.support), size=count, p=self.prior)]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        return self.table.vectors[ids].astype(np.float64)

    def describe(self) -> dict[str, Any]:
        top = np.argsort(-self.prior)[:5]
        return {
            "vocab_size": len(self.table),
            "support": len(self.support),
            "privatized_tokens": self.tokens,
            "oov_share": 1 - self.in_vocab / self.tokens,
            "top_prior": [
                [self.table.words[self.support[i]], float(self.prior[i])] for i in top.tolist()
            ],
        }


# -- the guarantee's cap -----------------------------------------------------------------------
def euclidean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances between the rows of a and b (float64)."""
    d2 = (a**2).sum(1)[:, None] + (b**2).sum(1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(d2, 0.0))


def guarantee_caps(
    setting: Setting, distance: Callable[[slice], np.ndarray], totals: list[float]
) -> dict[float, dict[str, float]]:
    """For each total epsilon E (k releases at eps: E = k eps), the LP dual bound on the
    success of any attack under pi that the E * d guarantee allows (module docstring), and
    max_w pi_w / D_w, which bounds Pr[w | y] for every output y.

    ``distance(rows)``: distances from support words ``rows`` to every support word."""
    size = len(setting.support)
    mass = {total: np.empty(size) for total in totals}  # D_w
    for start in range(0, size, 512):
        rows = slice(start, min(start + 512, size))
        d = distance(rows)
        for total in totals:
            mass[total][rows] = np.exp(-total * d) @ setting.prior
    caps = {}
    for total in totals:
        ratio = setting.prior / mass[total]
        order = np.argsort(ratio)  # f(c) = c + sum_{B_w > c} (pi_w - c D_w): min at some c = B_w
        b, p, d = ratio[order], setting.prior[order], mass[total][order]
        p_after = np.concatenate([np.cumsum(p[::-1])[::-1][1:], [0.0]])
        d_after = np.concatenate([np.cumsum(d[::-1])[::-1][1:], [0.0]])
        lp = float(min((b + p_after - b * d_after).min(), 1.0))
        caps[total] = {"cap": lp, "max_posterior": float(min(ratio.max(), 1.0))}
    return caps


# -- attacks -----------------------------------------------------------------------------------
def majority(observed: np.ndarray, log_prior: np.ndarray) -> np.ndarray:
    """The most frequent output of each row; ties go to the higher prior."""
    out = np.empty(len(observed), dtype=np.int64)
    for i, row in enumerate(observed):
        values, counts = np.unique(row, return_counts=True)
        top = values[counts == counts.max()]
        out[i] = top[np.argmax(log_prior[top])]
    return out


def tem_exact_map(
    setting: Setting, mechanism: Any, observed: np.ndarray, ks: list[int]
) -> tuple[dict[int, np.ndarray], dict[str, float]]:
    """Bayes MAP guesses for k releases from the library's exact laws, and the exact k = 1
    kept rate and Bayes success under pi."""
    needed, column = np.unique(observed, return_inverse=True)
    column = column.reshape(observed.shape)
    best = {k: np.full(len(observed), -np.inf) for k in ks}
    guess = {k: np.zeros(len(observed), dtype=np.int64) for k in ks}
    joint_max = np.zeros(len(setting.table))  # max_w pi(w) p(y | w), per output y
    kept = 0.0
    for word, weight in zip(setting.support.tolist(), setting.prior.tolist(), strict=True):
        law = mechanism.distribution(word)
        kept += weight * law[word]
        np.maximum(joint_max, weight * law, out=joint_max)
        with np.errstate(divide="ignore"):
            log_likelihood = np.log(law[needed])[column]
        cumulative = np.cumsum(log_likelihood, axis=1)
        log_weight = math.log(weight)
        for k in ks:
            score = cumulative[:, k - 1] + log_weight
            better = score > best[k]  # strict: the first maximiser wins ties, as argmax
            best[k][better] = score[better]
            guess[k][better] = word
    return guess, {"exact_kept": kept, "exact_bayes_k1": float(joint_max.sum())}


class PoolAttack:
    """Madlib and BRR attacks on the observed outputs: the attacker's tables over the
    outputs seen (rows) and the support words (columns), and the MAP guesses from them."""

    def __init__(self, setting: Setting, mechanism: Any, epsilon: float, observed: np.ndarray):
        self.setting, self.mechanism, self.epsilon = setting, mechanism, epsilon
        self.observed = observed
        self.needed = np.unique(observed)
        self.row_of = np.full(len(setting.table), -1, dtype=np.int64)
        self.row_of[self.needed] = np.arange(len(self.needed))
        self.madlib = mechanism.name == "madlib"
        support = setting.support
        if self.madlib:
            self.points = setting.vectors(support).astype(np.float32)
            self.sq = (setting.vectors(support) ** 2).sum(1).astype(np.float32)
        else:
            self.n_bits = mechanism.codes.n_bits
            self.signs = mechanism.codes.bits_of(support).astype(np.float32) * 2 - 1
            p = flip_probability(epsilon)
            self.per_flip = math.log(p) - math.log1p(-p)  # log-likelihood per flipped bit

    def log_noise(self, noisy: np.ndarray) -> np.ndarray:
        """log p(noisy point | w) for every support word w, up to a constant per row
        (float32): -eps ||v - phi(w)|| (Madlib), H(v, c_w) log(p / (1 - p)) (BRR)."""
        if self.madlib:
            v = noisy.astype(np.float32)
            d2 = (v**2).sum(1)[:, None] + self.sq[None, :] - 2 * v @ self.points.T
            return -self.epsilon * np.sqrt(np.maximum(d2, 0, out=d2), out=d2)
        bits = np.unpackbits(noisy, axis=1, count=self.n_bits).astype(np.float32) * 2 - 1
        return self.per_flip * (self.n_bits - bits @ self.signs.T) / 2

    def pool_posteriors(self, pool: int, seed: int) -> tuple[np.ndarray, dict[str, float]]:
        """log Pr[w | y] (Rao-Blackwellised) for every observed output y, from ``pool`` draws
        (w ~ pi, noisy point v, y) made as the mechanism's ``_sample`` makes them."""
        setting, mechanism, epsilon = self.setting, self.mechanism, self.epsilon
        total = np.zeros((len(self.needed), len(setting.support)), dtype=np.float32)
        hits = np.zeros(len(self.needed))
        log_prior = setting.log_prior.astype(np.float32)[None, :]
        rng = np.random.default_rng(seed)
        inputs = setting.draw(pool, rng)
        kept = 0
        for start in range(0, pool, POOL_CHUNK):
            ids = inputs[start : start + POOL_CHUNK]
            if self.madlib:  # Madlib._sample: phi(w) + Z (float64), then the nearest word
                noise = sample_noise(rng, len(ids), setting.table.dim, epsilon)
                noisy = setting.vectors(ids) + noise
                out = mechanism.neighbor_index.search(noisy, rng)
            else:  # BRR._sample: the packed code XOR packed flips, then the nearest code
                flips = np.packbits(sample_flips(rng, len(ids), self.n_bits, epsilon), axis=1)
                noisy = np.bitwise_xor(mechanism.codes.packed[ids], flips)
                out = mechanism.binary_index.search(noisy, rng)
            kept += int((out == ids).sum())
            use = self.row_of[out] >= 0
            rows = self.row_of[out[use]]
            log_post = self.log_noise(noisy[use])
            log_post += log_prior
            log_post -= log_post.max(1, keepdims=True)
            post = np.exp(log_post, out=log_post)
            post /= post.sum(1, keepdims=True)  # Pr[w | v], exact
            groups, group = np.unique(rows, return_inverse=True)
            ones = np.ones(len(rows), dtype=np.float32)
            by_group = sp.csr_matrix(
                (ones, (group, np.arange(len(rows)))), (len(groups), len(rows))
            )
            total[groups] += by_group @ post
            hits += np.bincount(rows, minlength=len(self.needed))
        total += setting.prior.astype(np.float32)[None, :]  # smoothing: (R_y + pi) / (n_y + 1)
        total /= (hits + 1.0).astype(np.float32)[:, None]
        return np.log(total, out=total), {
            "pool_kept": kept / pool,
            "outputs_without_pool_point": float((hits[self.row_of[self.observed]] == 0).mean()),
        }

    def surrogate_likelihoods(self) -> np.ndarray:
        """log p(v = the output's own point | w): the output treated as the noisy point."""
        if self.madlib:
            points = self.setting.vectors(self.needed)
        else:
            points = self.mechanism.codes.packed[self.needed]
        table = np.empty((len(self.needed), len(self.setting.support)), dtype=np.float32)
        for start in range(0, len(self.needed), POOL_CHUNK):
            table[start : start + POOL_CHUNK] = self.log_noise(points[start : start + POOL_CHUNK])
        return table

    def guesses(self, table: np.ndarray, ks: list[int], posterior: bool) -> dict[int, np.ndarray]:
        """argmax_w of pi(w)^(1-k) prod_j Pr[w | y_j] (``posterior``: ``table`` holds
        log Pr[w | y]) or pi(w) prod_j p(y_j | w) (``table`` holds log-likelihoods)."""
        support, log_prior = self.setting.support, self.setting.log_prior
        guess = {k: np.empty(len(self.observed), dtype=np.int64) for k in ks}
        for start in range(0, len(self.observed), 100):
            block = table[self.row_of[self.observed[start : start + 100]]]  # tokens, k, |S|
            running, done = np.zeros((len(block), len(support))), 0
            for k in ks:
                running += block[:, done:k].sum(1, dtype=np.float64)
                done = k
                score = running + ((1 - k) if posterior else 1) * log_prior[None, :]
                guess[k][start : start + 100] = support[score.argmax(1)]
        return guess


# -- scoring -----------------------------------------------------------------------------------
def wilson(hits: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = hits / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def rate(hit: np.ndarray) -> dict[str, Any]:
    low, high = wilson(int(hit.sum()), len(hit))
    return {"rate": float(hit.mean()) if len(hit) else math.nan, "low": low, "high": high}


def score(guess: np.ndarray, targets: np.ndarray, content: np.ndarray) -> dict[str, Any]:
    hit = guess == targets
    return {"all": rate(hit), "content": rate(hit[content])}


def fmt(cell: dict[str, Any]) -> str:
    return f"{cell['rate']:.3f} [{cell['low']:.3f}, {cell['high']:.3f}]"


def pct(value: float) -> str:
    return f"{100 * value:.1f}%"


# -- command line ------------------------------------------------------------------------------
def epsilons_or_none(text: str) -> list[float]:
    """An argparse ``type``: comma-separated epsilons, or ``none`` to skip the mechanism."""
    return [] if text.strip().lower() in {"", "none"} else epsilon_list(text)


def release_counts(text: str) -> list[int]:
    """An argparse ``type``: comma-separated release counts, e.g. ``1,4,16``."""
    parse = int_range(1, 256)
    return sorted({parse(item.strip()) for item in text.split(",")})


def unwrap(markdown: str) -> str:
    """Each prose paragraph on one line (the source wraps them; tables stay as they are)."""
    blocks = markdown.strip().split("\n\n")
    keep = ("|", "#")
    return "\n\n".join(b if b.startswith(keep) else " ".join(b.split("\n")) for b in blocks) + "\n"


def git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=Path(__file__).parent, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


LABEL = {"madlib": "Madlib", "tem": "TEM", "brr": "BRR"}
MAP_NAMES = {"map": "exact", "map_rb": "RB", "map_surrogate": "surrogate"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="10,000 tokens and a 1M pool")
    parser.add_argument(
        "--vocab-size", type=glove_vocab, default=10_000, help="GloVe words (10,000)"
    )
    parser.add_argument("--tokens", type=positive_int, help="targets (default 5,000; full 10,000)")
    parser.add_argument(
        "--pool", type=positive_int, help="Madlib/BRR attacker's draws (default 500k; full 1M)"
    )
    parser.add_argument(
        "--releases", type=release_counts, default=[1, 4, 16], help="k (default 1,4,16)"
    )
    parser.add_argument(
        "--madlib",
        type=epsilons_or_none,
        default=[3.75, 10.0],
        help="epsilons (default 3.75,10; none: skip)",
    )
    parser.add_argument(
        "--madlib-index",
        choices=["exact", "hnsw"],
        default="exact",
        help="Madlib's nearest-neighbour search (the attacker's pool decodes with the same)",
    )
    parser.add_argument(
        "--tem",
        type=epsilons_or_none,
        default=[2.0, 2.45],
        help="epsilons (default 2,2.45; none: skip)",
    )
    parser.add_argument(
        "--brr",
        type=epsilons_or_none,
        default=[0.5],
        help="epsilons per bit (default 0.5; none: skip)",
    )
    parser.add_argument(
        "--tem-beta",
        type=float_range(0.0, 1.0, open_low=True, open_high=True),
        help="TEM's beta (default: the library's)",
    )
    parser.add_argument("--n-bits", type=positive_int, default=256, help="BRR code length")
    parser.add_argument(
        "--content-rank", type=int_range(0), default=FUNCTION_RANK, help="content: rank >= this"
    )
    parser.add_argument(
        "--seed", type=int_range(0), default=25, help="targets, releases and pools (25)"
    )
    parser.add_argument(
        "--name",
        type=file_stem,
        help="results benchmarks/results/NAME.json|md (default attack_success[_full])",
    )
    add_faiss_threads(parser)
    args = parser.parse_args(argv)
    args.tokens = args.tokens or (10_000 if args.full else 5_000)
    args.pool = args.pool or (1_000_000 if args.full else 500_000)
    args.name = args.name or ("attack_success_full" if args.full else "attack_success")
    args.grid = [("madlib", e) for e in args.madlib] + [("tem", e) for e in args.tem]
    args.grid += [("brr", e) for e in args.brr]
    if not args.grid:
        parser.error("no epsilon to measure")
    return args


def all_caps(
    setting: Setting, grid: list[tuple[str, float]], ks: list[int], codes: Any
) -> dict[tuple[str, float], dict[str, float]]:
    """The guarantee's caps at every total epsilon k * eps: Euclidean (Madlib, TEM) and
    Hamming between the BRR codes ``codes``."""
    caps: dict[tuple[str, float], dict[str, float]] = {}
    euclid_totals = sorted({k * e for m, e in grid if m != "brr" for k in ks})
    if euclid_totals:
        points = setting.vectors(setting.support)
        found = guarantee_caps(setting, lambda r: euclidean(points[r], points), euclid_totals)
        caps.update({("euclidean", t): c for t, c in found.items()})
    hamming_totals = sorted({k * e for m, e in grid if m == "brr" for k in ks})
    if hamming_totals:
        signs = codes.bits_of(setting.support).astype(np.float32) * 2 - 1
        found = guarantee_caps(
            setting,
            lambda r: ((codes.n_bits - signs[r] @ signs.T) / 2).astype(np.float64),
            hamming_totals,
        )
        caps.update({("hamming", t): c for t, c in found.items()})
    return caps


def self_checks(
    name: str,
    epsilon: float,
    pairs: list[tuple[str, float]],
    observed: np.ndarray,
    map_k1: np.ndarray,
    targets: np.ndarray,
    pool: int,
) -> list[dict[str, Any]]:
    """k = 1 rates measured on the releases against the exact law (TEM) or the pool."""
    checks = []
    for what, value in pairs:
        hit = (observed[:, 0] if what == "kept" else map_k1) == targets
        low, high = wilson(int(hit.sum()), len(hit), Z999)
        # a pool estimate has its own error: widen by its 99.9% half-width
        spread = 0.0 if name == "tem" else Z999 * math.sqrt(value * (1 - value) / pool)
        checks.append(
            {
                "mechanism": name,
                "epsilon": epsilon,
                "quantity": what,
                "reference": "exact law" if name == "tem" else f"pool of {pool:,}",
                "expected": value,
                "measured": float(hit.mean()),
                "low_99_9": low,
                "high_99_9": high,
                "ok": bool(low - spread <= value <= high + spread),
            }
        )
    return checks


def tables(rows: list[dict[str, Any]], checks: list[dict[str, Any]], ks: list[int]) -> list[str]:
    """The summary, per-attack and self-check tables (Markdown)."""

    def best(row: dict[str, Any], group: str) -> float:
        return max(a[group]["rate"] for a in row["attacks"].values())

    def both(row: dict[str, Any], attack: str | None = None) -> str:
        if attack is None:
            return f"{pct(best(row, 'all'))} / {pct(best(row, 'content'))}"
        cells = row["attacks"][attack]
        return f"{pct(cells['all']['rate'])} / {pct(cells['content']['rate'])}"

    by_setting: dict[tuple[str, float], dict[int, dict[str, Any]]] = {}
    for r in rows:
        by_setting.setdefault((r["mechanism"], r["epsilon"]), {})[r["k"]] = r
    summary = markdown_table(
        [
            "mechanism, ε",
            "kept (all / content)",
            *(f"{k} release{'s' if k > 1 else ''} (all / content)" for k in ks),
            f"guarantee cap (k = {', '.join(map(str, ks))})",
        ],
        [
            [
                f"{LABEL[mech]} {eps:g}",
                both(cells[1], "majority") if 1 in cells else "-",
                *(both(cells[k]) for k in ks),
                " / ".join(f"{cells[k]['cap']:.3f}" for k in ks),
            ]
            for (mech, eps), cells in by_setting.items()
        ],
    )
    detail = markdown_table(
        [
            "mechanism",
            "ε",
            "k",
            "kept / majority (all)",
            "best MAP (all)",
            "kept / majority (content)",
            "best MAP (content)",
            "MAP used",
            "prior only",
            "cap",
            "max low - cap",
        ],
        [
            [
                LABEL[r["mechanism"]],
                f"{r['epsilon']:g}",
                r["k"],
                fmt(r["attacks"]["majority"]["all"]),
                fmt(r["best_map"]["all"]),
                fmt(r["attacks"]["majority"]["content"]),
                fmt(r["best_map"]["content"]),
                f"{MAP_NAMES[r['best_map']['all']['attack']]} / "
                f"{MAP_NAMES[r['best_map']['content']['attack']]}",
                f"{r['attacks']['prior_only']['all']['rate']:.3f}",
                f"{r['cap']:.3f}",
                f"{r['margin']:+.3f}",
            ]
            for r in rows
        ],
    )
    check = markdown_table(
        ["mechanism", "ε", "k = 1", "reference", "expected", "measured [99.9%]", "agrees"],
        [
            [
                LABEL[c["mechanism"]],
                f"{c['epsilon']:g}",
                c["quantity"],
                c["reference"],
                f"{c['expected']:.4f}",
                f"{c['measured']:.4f} [{c['low_99_9']:.4f}, {c['high_99_9']:.4f}]",
                "yes" if c["ok"] else "**NO**",
            ]
            for c in checks
        ],
    )
    return [summary, detail, check]


def audit(rows: list[dict[str, Any]], checks: list[dict[str, Any]]) -> tuple[str, bool]:
    """The verdict (Markdown) and whether the run passed."""
    breaches = [r for r in rows if r["margin"] > 0]
    failed = [c for c in checks if not c["ok"]]
    if breaches:
        verdict = (
            f"**FAILED: {len(breaches)} measured success rate(s) exceed the guarantee's cap** "
            "(lower 95% bound above the cap): "
            + "; ".join(
                f"{LABEL[r['mechanism']]} ε {r['epsilon']:g} k = {r['k']} by {r['margin']:+.4f}"
                for r in breaches
            )
            + ". Either a mechanism does not meet its stated guarantee or the cap is wrong."
        )
    else:
        worst = max(rows, key=lambda r: r["margin"])
        verdict = (
            "**Cap check passed**: no measured success's lower 95% bound exceeds the "
            f"guarantee's cap (closest: {LABEL[worst['mechanism']]} ε {worst['epsilon']:g}, "
            f"k = {worst['k']}: lower bound - cap = {worst['margin']:+.4f})."
        )
    if failed:
        verdict += (
            f"\n\n**SELF-CHECK FAILED** ({len(failed)}): a k = 1 rate of the releases falls "
            "outside the 99.9% interval around the library's exact law (TEM) or the attacker's "
            "pool (Madlib/BRR): the sampler and the law (or the pool's copy of it) disagree."
        )
    else:
        verdict += " Self-checks agree (99.9% intervals)."
    return verdict, not (breaches or failed)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    set_faiss_threads(args)
    ks, kmax, tokens, pool = args.releases, max(args.releases), args.tokens, args.pool
    attack_ks = sorted({1, *ks})  # k = 1 always: the self-checks are at one release
    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    started, cpu_started, load_start = time.perf_counter(), time.process_time(), os.getloadavg()[0]

    def log(line: str) -> None:
        print(f"[{time.perf_counter() - started:5.0f} s] {line}", file=sys.stderr, flush=True)

    setting = Setting.load(args.vocab_size)
    log_prior_full = np.full(len(setting.table), -np.inf)
    log_prior_full[setting.support] = setting.log_prior
    targets = setting.draw(tokens, np.random.default_rng(args.seed))
    content = setting.table.frequency_rank[targets] >= args.content_rank
    the = setting.support[np.argmax(setting.prior)]
    info = setting.describe()
    log(
        f"prior: {info['support']:,} words, {info['privatized_tokens']:,} tokens "
        f"({pct(info['oov_share'])} out of the table); {tokens:,} targets, "
        f"{content.sum():,} content words"
    )

    def build(name: str, epsilon: float) -> Any:
        options: dict[str, Any] = {"random_state": args.seed}
        if name == "tem" and args.tem_beta is not None:
            options["beta"] = args.tem_beta
        if name == "brr":
            options["n_bits"] = args.n_bits
        if name == "madlib":
            options["index"] = args.madlib_index
        return dxp.make_mechanism(name, setting.table, epsilon=epsilon, **options)

    has_brr = any(name == "brr" for name, _ in args.grid)
    caps = all_caps(setting, args.grid, ks, build("brr", 1.0).codes if has_brr else None)
    log("guarantee caps")
    rows: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    for index, (name, epsilon) in enumerate(args.grid):
        tic = time.perf_counter()
        mechanism = build(name, epsilon)
        observed = mechanism.privatize_ids(np.repeat(targets, kmax)).reshape(tokens, kmax)
        if name == "tem":
            guesses, extra = tem_exact_map(setting, mechanism, observed, attack_ks)
            extra["gamma"] = mechanism.gamma
            pairs = [("kept", extra["exact_kept"]), ("Bayes MAP", extra["exact_bayes_k1"])]
            maps = {"map": guesses}
        else:
            attack = PoolAttack(setting, mechanism, epsilon, observed)
            table, extra = attack.pool_posteriors(pool, args.seed + 1 + index)
            maps = {"map_rb": attack.guesses(table, attack_ks, posterior=True)}
            del table
            table = attack.surrogate_likelihoods()
            maps["map_surrogate"] = attack.guesses(table, attack_ks, posterior=False)
            del table, attack
            pairs = [("kept", extra["pool_kept"])]
        map_k1 = next(iter(maps.values()))[1]  # TEM: the exact MAP
        checks += self_checks(name, epsilon, pairs, observed, map_k1, targets, pool)
        metric = "hamming" if name == "brr" else "euclidean"
        extra["seconds"] = time.perf_counter() - tic
        for k in ks:
            attacks = {
                "prior_only": score(np.full(tokens, the), targets, content),
                "majority": score(majority(observed[:, :k], log_prior_full), targets, content),
                **{attack: score(found[k], targets, content) for attack, found in maps.items()},
            }
            cap = caps[(metric, k * epsilon)]
            rows.append(
                {
                    "mechanism": name,
                    "epsilon": epsilon,
                    "k": k,
                    "total_epsilon": k * epsilon,
                    "attacks": attacks,
                    "best_map": {
                        group: max(
                            (
                                {**a[group], "attack": n}
                                for n, a in attacks.items()
                                if n in MAP_NAMES
                            ),
                            key=lambda c: c["rate"],
                        )
                        for group in ("all", "content")
                    },
                    "cap": cap["cap"],
                    "max_posterior_bound": cap["max_posterior"],
                    "margin": max(a["all"]["low"] for a in attacks.values()) - cap["cap"],
                    "details": extra,
                }
            )
        maps = ", ".join(f"k={r['k']} {r['best_map']['all']['rate']:.3f}" for r in rows[-len(ks) :])
        log(f"{name} ε {epsilon:g}: MAP {maps} ({extra['seconds']:.0f} s)")

    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    summary, detail, check = tables(rows, checks, ks)
    verdict, passed = audit(rows, checks)
    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--", "dxp_plugins")
    command = " ".join(["python", "benchmarks/attack_success.py", *sys.argv[1:]])
    load_end = os.getloadavg()[0]
    top_word, top_share = info["top_prior"][0]
    n_content = int(content.sum())
    library = f"dxp_plugins {dxp.__version__}, commit {commit[:12] or 'unknown'}"
    if dirty:
        library += " with uncommitted changes under dxp_plugins/"
    markdown = f"""# How often an attacker recovers the input word

`{command}` on {machine()}: {elapsed:.0f} s wall, {cpu:.0f} s CPU (load average
{load_start:.1f} at start, {load_end:.1f} at end); {library}.

The attacker knows the mechanism, ε, the public table (GloVe 6B 50d, {len(setting.table):,}
words) and the domain's word frequencies: prior π = the {info["privatized_tokens"]:,}
privatized tokens of the 1,500 Pang & Lee reviews that are in the table ({info["support"]:,}
distinct words; {pct(info["oov_share"])} of tokens are out of the table and left out;
largest weight "{top_word}" {pct(top_share)}). It sees k releases of one token and guesses
the input. Targets: {tokens:,} tokens drawn from π (seed {args.seed}), {n_content:,}
({pct(n_content / tokens)}) content words (GloVe rank ≥ {args.content_rank}); each released
{kmax} times by `privatize_ids` (Madlib's search: {args.madlib_index}), an attack on k
releases uses the first k. Attacks: prior
only (always "{top_word}"); kept / majority (the most frequent output, ties to the higher
prior; at k = 1 the output itself: the kept rate); MAP (argmax π(w) Π p(y_j | w): exact and
Bayes-optimal for TEM, through `TEM.distribution`; for Madlib and BRR the better of a
Rao-Blackwellised MAP from a {pool:,}-draw pool ("RB") and a surrogate MAP that treats the
output as the noisy point ("surrogate"), per cell).

**Madlib and BRR rates are lower bounds**: an attacker with more compute (a larger pool)
does better, noticeably at k = 16. All rates are for an attacker who sees one token's
releases: one who also uses the context (a language model over the neighbouring private
words) does better.

## Summary: best attack, all tokens / content words

Best of prior only, majority and the MAP attacks, for all tokens and for content words
separately
(95% Wilson half-width ≤ {Z95 * math.sqrt(0.25 / tokens):.3f} on all tokens,
≤ {Z95 * math.sqrt(0.25 / max(1, n_content)):.3f} on content words). The guarantee cap is
the most any attack under π could reach if the ε·d guarantee (kε for k releases) were all
one knew.

{summary}

## Every attack, with 95% Wilson intervals

"cap": the LP dual bound the guarantee implies for k releases (total ε = kε) under π;
"max low - cap": the largest lower 95% bound of any attack's success on all tokens, minus
the cap (positive: a breach of the guarantee).

{detail}

## Self-checks (k = 1)

TEM: the kept rate and the Bayes success computed exactly from `TEM.distribution`, against
those measured on the releases. Madlib/BRR: the kept rate of the attacker's pool (the
mechanism's sampling steps, driven by numpy's generator) against the releases'.

{check}

## Audit

{verdict}
"""
    (RESULTS / f"{args.name}.md").write_text(unwrap(markdown))
    import faiss

    path = save(
        args.name,
        {
            "command": command,
            "library": dxp.__version__,
            "commit": commit,
            "uncommitted_library_changes": dirty.splitlines(),
            "versions": {
                "python": sys.version.split()[0],
                "numpy": np.__version__,
                "faiss": faiss.__version__,
            },
            "setting": info,
            "tokens": tokens,
            "content_tokens": n_content,
            "content_rank": args.content_rank,
            "pool": pool,
            "seed": args.seed,
            "releases": ks,
            "rows": rows,
            "self_checks": checks,
            "passed": passed,
            "seconds": elapsed,
            "cpu_seconds": cpu,
            "load_average": [load_start, load_end],
        },
    )
    print(
        f"{summary}\n\n{detail}\n\n{check}\n\n{verdict}\n\ntotal {elapsed:.0f} s; results: {path}"
    )
    if not passed:
        bar = "!" * 78
        print(f"\n{bar}\nATTACK AUDIT FAILED (see the Audit section above)\n{bar}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
