"""Time against input size on hostile text: each step grows the input 10x, and a linear path
takes about 10x the time (a quadratic one 100x). The shapes an adversarial-input review
found quadratic (thirty-first session), through the functions the doors call:

* ``identifiers`` mask on ``"1!" * n + " @"`` (short matches in a run before an ``@``);
* ``identifiers`` mask on ``"1 " * n`` (a table of numbers: one span per 1,000 characters);
* ``composed`` (Unicode NFC) on ``"a"`` + alternating combining marks (U+0301 U+0316);
* ``normalize_word`` (NFKC lookup key) on the same marks.

    python benchmarks/hostile_input.py [--sizes 10000 100000 1000000]

Prints one table (seconds per size, and each step's time ratio) and writes
benchmarks/results/hostile_input.json|md.
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from typing import Any

from common import RESULTS, machine, markdown_table, positive_int, save

from dxp_plugins import masks
from dxp_plugins._normalize import composed, normalize_word

CASES: dict[str, tuple[Callable[[int], str], Callable[[str], Any]]] = {
    "identifiers, '1!' * n + ' @'": (
        lambda n: "1!" * (n // 2) + " @",
        lambda text: list(masks.identifiers(text)),
    ),
    "identifiers, '1 ' * n": (
        lambda n: "1 " * (n // 2),
        lambda text: list(masks.identifiers(text)),
    ),
    "composed, a + marks": (lambda n: "a" + "\u0301\u0316" * (n // 2), composed),
    "normalize_word, a + marks": (lambda n: "a" + "\u0301\u0316" * (n // 2), normalize_word),
}


def seconds(function: Callable[[str], Any], text: str) -> float:
    start = time.perf_counter()
    function(text)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=positive_int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    args = parser.parse_args()
    composed("a" + "\u0301" * 64)  # build the non-starter pattern outside the timings
    rows, payload = [], {}
    for name, (make, function) in CASES.items():
        times = [seconds(function, make(size)) for size in args.sizes]
        ratios = [later / earlier for earlier, later in itertools.pairwise(times)]
        rows.append([name, *times, *ratios])
        payload[name] = {"sizes": args.sizes, "seconds": times, "step_ratios": ratios}
    steps = [f"x{b / a:g} step" for a, b in itertools.pairwise(args.sizes)]
    headers = ["case", *(f"{size:,} chars (s)" for size in args.sizes), *steps]
    table = markdown_table(headers, rows)
    print(table)
    save("hostile_input", payload)
    (RESULTS / "hostile_input.md").write_text(f"{machine()}\n\n{table}\n")


if __name__ == "__main__":
    main()
