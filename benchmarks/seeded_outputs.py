"""Digests of seeded releases, to compare reproducibility across environments.

    python benchmarks/seeded_outputs.py            # one JSON line: versions + a digest each

Runs Madlib, TEM and BRR with ``random_state=7`` on 300 tokens at 20k GloVe words, and a
seeded LPLP release of a small count matrix; prints the Python, numpy and faiss versions
and a SHA-256 of each output. Equal digests in two environments mean the same private
words and counts (front-doors.md, "Seeded runs across versions").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import warnings
from typing import Any

SENTENCE = "the hockey team won the final and the fans sang until midnight in the city"
MECHANISMS = {"madlib": {"epsilon": 10.0}, "tem": {"epsilon": 2.0}, "brr": {"epsilon": 0.5}}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int, default=20_000, help="GloVe words (20000)")
    args = parser.parse_args(argv)
    if not 1 <= args.vocab_size <= 400_000:
        parser.error("--vocab-size: GloVe 6B has 400,000 words")

    import faiss
    import numpy as np

    import dxp_plugins as dxp

    warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=args.vocab_size)
    tokens = SENTENCE.split() * 20
    record: dict[str, Any] = {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "faiss": faiss.__version__,
        "vocab_size": args.vocab_size,
    }
    for name, params in MECHANISMS.items():
        mechanism = dxp.make_mechanism(name, table, random_state=7, **params)
        record[name] = digest(mechanism.privatize(tokens))
    lplp = dxp.LPLPTransformer(
        epsilon=1.0, n_groups=4, random_state=3, vocabulary=[f"w{i}" for i in range(8)]
    )
    released = lplp.fit_transform(np.arange(24).reshape(3, 8) % 5)
    dense = released.toarray() if hasattr(released, "toarray") else np.asarray(released)
    record["lplp"] = digest(dense.tolist())
    print(json.dumps(record))


if __name__ == "__main__":
    main()
