"""randomgen's SIMD ChaCha20 against its scalar one, on the draws our mechanisms make.

Both implementations give the same values (randomgen's documentation; the suite checks it
for our keyings), so the library draws with whichever ``_random._simd_is_faster`` times
faster on the machine. This benchmark shows the choice's effect, as ratios from one run
(best of 5 each, interleaved), and which implementation the probe chose here:

    python benchmarks/bench_chacha.py [--draws 1000000] [--vocab-size 100000]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from common import best_time, machine, markdown_table, positive_int, save

import dxp_plugins as dxp
from dxp_plugins._random import RandomSource, _simd_is_faster
from dxp_plugins.lplp import noise
from dxp_plugins.mechanisms.madlib import sample_noise


def workloads(
    source: RandomSource, draws: int, vocab_size: int
) -> dict[str, tuple[int, Callable[[], Any]]]:
    """Name -> (items per call, call), all drawing from ``source``'s generator."""
    rng = source.generator()
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=vocab_size)
    madlib = dxp.Madlib(table, epsilon=10.0, random_state=source)
    ids = np.arange(2_000) * (len(table) // 2_000)
    madlib.privatize_ids(ids[:1])  # builds the index outside the timings
    rows = draws // 50
    return {
        "raw 64-bit words": (draws, lambda: rng.bit_generator.random_raw(draws)),
        "standard normals": (draws, lambda: rng.standard_normal(draws)),
        "standard exponentials": (draws, lambda: rng.standard_exponential(draws)),
        "Madlib noise, 50-d rows": (rows, lambda: sample_noise(rng, rows, 50, 10.0)),
        "LPLP geometric, rate 0.5": (draws, lambda: noise.geometric(rng, draws, 0.5)),
        f"Madlib exact, 2,000 words, {vocab_size:,} vocab": (
            len(ids),
            lambda: madlib.privatize_ids(ids),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=positive_int, default=1_000_000)
    parser.add_argument("--vocab-size", type=positive_int, default=100_000)
    args = parser.parse_args()
    from randomgen import ChaCha

    if not ChaCha(seed=0).use_simd:  # randomgen switches SIMD on wherever the CPU has it
        raise SystemExit("randomgen has no SIMD ChaCha on this CPU: nothing to compare")
    source = RandomSource()  # secure: what releases draw from
    rng = source.generator()
    rows = []
    for name, (items, call) in workloads(source, args.draws, args.vocab_size).items():
        seconds = {True: float("inf"), False: float("inf")}
        for _ in range(5):
            for flag in (True, False):
                rng.bit_generator.use_simd = flag
                seconds[flag] = min(seconds[flag], best_time(call, repeats=1))
        rows.append(
            {
                "workload": name,
                "items": items,
                "simd_ns": 1e9 * seconds[True] / items,
                "scalar_ns": 1e9 * seconds[False] / items,
                "scalar_speedup": seconds[True] / seconds[False],
            }
        )
    chosen = "SIMD" if _simd_is_faster() else "scalar"
    print(f"randomgen ChaCha20: SIMD vs scalar\nmachine: {machine()}; the probe chose {chosen}\n")
    print(
        markdown_table(
            ["workload", "items", "SIMD (ns/item)", "scalar (ns/item)", "scalar speed-up"],
            [
                [
                    r["workload"],
                    f"{r['items']:,}",
                    r["simd_ns"],
                    r["scalar_ns"],
                    r["scalar_speedup"],
                ]
                for r in rows
            ],
        )
    )
    print(f"saved {save('chacha', {'draws': args.draws, 'chosen': chosen, 'rows': rows})}")


if __name__ == "__main__":
    main()
