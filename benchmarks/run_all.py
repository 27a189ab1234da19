"""Run the throughput benchmarks one after another (``bash dev.sh bench``).

    python benchmarks/run_all.py            # Madlib, HNSW, k_nearest, TEM/BRR, doors, LPLP, more
    python benchmarks/run_all.py --peers    # also the peer comparison (~30+ minutes)

Each script prints its own table and writes benchmarks/results/*.json|md; the LPLP topic
quality study (benchmarks/lplp_20news.py without --throughput), the calibration
reproductions and the attack-success audit (benchmarks/attack_success.py, ~2 minutes; it
exits 1 if a measured attack beats the guarantee's cap) are run on their own (see
docs/lplp.md and docs/choosing-epsilon.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    ["bench_madlib.py"],
    ["hnsw_recall.py"],  # after bench_madlib.py, whose HNSW graphs it reads from the cache
    ["bench_k_nearest.py"],
    ["bench_tem_brr.py"],
    ["bench_doors.py"],
    ["hostile_input.py"],
    ["lplp_20news.py", "--throughput"],
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peers", action="store_true", help="also run benchmarks/peers/run.py")
    args = parser.parse_args()
    runs = SCRIPTS + ([["peers/run.py"]] if args.peers else [])
    failed = []
    for script, *options in runs:
        print(f"\n=== {script} {' '.join(options)}", flush=True)
        result = subprocess.run([sys.executable, str(HERE / script), *options], check=False)
        if result.returncode != 0:
            failed.append(script)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
