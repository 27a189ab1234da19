"""Cost of LPLP's geometric draws across rates (sixteenth session: the exact split sampler).

For each rate epsilon/N: ns per draw of ``noise.geometric`` (what releases use) beside the
plain ``floor(E / rate)`` on the same secure generator, as a ratio from one run (best of 3
each, interleaved). Below ``noise.SPLIT_BELOW`` (2**-10) ``geometric`` splits a draw into
blocks to stay exact (docs/lplp.md); above, both are the same construction.

    python benchmarks/bench_lplp_noise.py [--draws 2000000]
"""

from __future__ import annotations

import argparse

import numpy as np
from common import best_time, machine, markdown_table, positive_int, save

from dxp_plugins._random import RandomSource
from dxp_plugins.lplp import noise

RATES = (0.5, 0.05, 2.0**-10, 2.0**-11, 1e-6, 1e-16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=positive_int, default=2_000_000)
    args = parser.parse_args()
    rng = RandomSource().generator()  # the secure ChaCha20 generator releases use
    rows = []
    for rate in RATES:
        exact = best_time(lambda r=rate: noise.geometric(rng, args.draws, r))
        plain = best_time(lambda r=rate: np.floor(rng.standard_exponential(args.draws) / r))
        rows.append(
            {
                "rate": rate,
                "split": rate < noise.SPLIT_BELOW,
                "geometric_ns": 1e9 * exact / args.draws,
                "plain_ns": 1e9 * plain / args.draws,
                "ratio": exact / plain,
            }
        )
    print(f"LPLP geometric draws, {args.draws:,} per rate\nmachine: {machine()}\n")
    print(
        markdown_table(
            ["epsilon/N", "split", "geometric (ns/draw)", "floor(E/rate) (ns/draw)", "ratio"],
            [
                [f"{r['rate']:.3g}", r["split"], r["geometric_ns"], r["plain_ns"], r["ratio"]]
                for r in rows
            ],
        )
    )
    print(f"saved {save('lplp_noise', {'draws': args.draws, 'rows': rows})}")


if __name__ == "__main__":
    main()
