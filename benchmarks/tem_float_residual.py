"""TEM's float residual: how far the law its sampler realizes is from the exact law.

The default sampler draws by inverse CDF from two levels of float64 running sums
(:class:`dxp_plugins.mechanisms.tem.WordLaw`: ``block_cdf`` over blocks, then ``cumsum``
inside the chosen block). The probability it realizes for output y is the width of y's
interval in those sums, which rounding moves by about ``2^-52 * (block total) / w_y``
relative to ``w_y``. Two columns per epsilon, max over the words and all |W| outputs of
``|p - exact| / exact`` against :meth:`TEM.distribution` (direct float64):

* table: ``WordLaw.probabilities`` (the weights the table holds, divided by their total);
* realized: the interval widths of the running sums the sampler searches, differenced in
  extended precision (what a draw's probability really is).

    python benchmarks/tem_float_residual.py           # 10 most frequent + 10 uniform words

Writes benchmarks/results/tem_float_residual.json and .md.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from common import RESULTS, epsilon_list, int_range, machine, markdown_table, positive_int, save

import dxp_plugins as dxp
from dxp_plugins.mechanisms.tem import TEM, WordLaw


def realized_law(law: WordLaw, size: int) -> np.ndarray:
    """The probability of every output under ``law.sample``: widths of its intervals."""
    extended = np.longdouble
    blocks = len(law.weights) // law.block
    cdf = law.block_cdf.astype(extended)
    block_mass = np.diff(np.r_[extended(0), cdf]) / cdf[-1]
    running = np.cumsum(law.weights.reshape(blocks, law.block), axis=1).astype(extended)
    zero = np.zeros((blocks, 1), dtype=extended)
    within = np.diff(np.c_[zero, running], axis=1) / running[:, -1:]
    realized = np.zeros(size, dtype=extended)
    ids = np.arange(size) if law.inside is None else law.inside
    realized[ids] = (within * block_mass[:blocks, None]).ravel()[: law.ball_size]
    if law.n_outside:
        outside = np.ones(size, dtype=bool)
        outside[ids] = False
        realized[outside] = block_mass[-1] / law.n_outside
    return realized


def residuals(tem: TEM, ids: np.ndarray) -> tuple[float, float]:
    """Max relative error of the table and of the realized law over ``ids``' laws."""
    size = len(tem.embeddings)
    table_error = realized_error = 0.0
    for word, (law, _) in zip(
        ids.tolist(), tem._laws(ids, tem.epsilon, tem.gamma, admit_all=True), strict=True
    ):
        exact = tem.distribution(word)
        table = law.probabilities(size)
        table_error = max(table_error, float(np.max(np.abs(table - exact) / exact)))
        realized = realized_law(law, size)
        error = np.abs(realized - exact.astype(np.longdouble)) / exact
        realized_error = max(realized_error, float(np.max(error)))
    return table_error, realized_error


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", type=int_range(2, 400_000), default=100_000)
    parser.add_argument("--words", type=positive_int, default=10, help="frequent + uniform")
    parser.add_argument("--epsilons", type=epsilon_list, default=[1.0, 2.0, 5.0, 10.0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    emb = dxp.load_embeddings("glove-6b-50d", vocab_size=args.vocab)
    uniform = np.random.default_rng(args.seed).integers(0, len(emb), args.words)
    ids = np.unique(np.r_[np.arange(min(args.words, len(emb))), uniform]).astype(np.int64)
    rows = []
    for epsilon in args.epsilons:
        table_error, realized_error = residuals(TEM(emb, epsilon=epsilon), ids)
        rows.append([epsilon, f"{table_error:.2g}", f"{realized_error:.2g}"])
        print(f"epsilon {epsilon:g}: table {table_error:.2g}, realized {realized_error:.2g}")
    headers = ["epsilon", "table vs exact", "realized (sampler) vs exact"]
    table = markdown_table(headers, rows)
    save("tem_float_residual", {"vocab": args.vocab, "words": len(ids), "rows": rows})
    (RESULTS / "tem_float_residual.md").write_text(
        f"# TEM float residual ({machine()})\n\n`python benchmarks/tem_float_residual.py`: "
        f"GloVe {args.vocab:,} words, {len(ids)} input words (the {args.words} most frequent "
        f"and {args.words} uniform, seed {args.seed}); max relative error over all outputs.\n\n"
        f"{table}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
