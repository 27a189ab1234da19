"""What survives a release unchanged: review words, and numbers that look like identifiers.

Two measurements, one run each (secure noise, so the digits move between runs):

* **words**: the share of privatized Pang & Lee sentence tokens that come out as the word
  that went in, for Madlib at ε 10 and BRR at ε 0.5 per bit (the pair the README's CLI
  example calls equal by the privacy ratio: the same average loss between word pairs does
  not mean the same behaviour);
* **numbers**: synthetic lines ``ssn 343-76-9916 card 4133 7061 8766 2073 born 1941-08-09``
  (a seeded generator makes the data, never the noise) through Madlib at ε 10: the share of
  number tokens unchanged, and of lines whose whole birth date (year, month, day) survives.

    python benchmarks/kept_words.py                      # 400k words, ~15 s
    python benchmarks/kept_words.py --vocab-size 100000

Writes benchmarks/results/kept_words.json and .md.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from common import RESULTS, int_range, machine, markdown_table, positive_int, save

import dxp_plugins as dxp
from dxp_plugins.datasets import load_pang_lee
from dxp_plugins.text import tokenize

SETTINGS = [("madlib", 10.0, {}), ("brr", 0.5, {"n_bits": 256})]


def selected_tokens(texts: list[str]) -> list[list[str]]:
    """The tokens the text path privatizes, lower-cased as the lookup sees them."""
    documents = [tokenize(text) for text in texts]
    return [
        [word.lower() for word, keep in zip(doc.words, doc.selected, strict=True) if keep]
        for doc in documents
    ]


def kept_share(mechanism: dxp.Mechanism, documents: list[list[str]]) -> float:
    """Share of tokens released as themselves."""
    private, _ = mechanism.privatize_batch(documents)
    pairs = [
        (a, b)
        for doc, out in zip(documents, private, strict=True)
        for a, b in zip(doc, out, strict=True)
    ]
    return sum(a == b for a, b in pairs) / len(pairs)


def identifier_lines(count: int, seed: int) -> list[str]:
    """Synthetic lines of an SSN, a card number and a birth date."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(count):
        ssn = f"{rng.integers(100, 900)}-{rng.integers(10, 100)}-{rng.integers(1000, 10000)}"
        card = " ".join(str(rng.integers(1000, 10000)) for _ in range(4))
        born = f"{rng.integers(1930, 2010)}-{rng.integers(1, 13):02d}-{rng.integers(1, 29):02d}"
        lines.append(f"ssn {ssn} card {card} born {born}")
    return lines


def number_survival(mechanism: dxp.Mechanism, lines: list[str]) -> tuple[float, float]:
    """Share of number tokens unchanged, and of lines whose three date numbers all are."""
    documents = selected_tokens(lines)
    private, _ = mechanism.privatize_batch(documents)
    numbers = unchanged = dates = 0
    for doc, out in zip(documents, private, strict=True):
        digits = [i for i, word in enumerate(doc) if word.isdigit()]
        numbers += len(digits)
        unchanged += sum(doc[i] == out[i] for i in digits)
        dates += all(doc[i] == out[i] for i in digits[-3:])
    return unchanged / numbers, dates / len(documents)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab-size", type=int_range(2, 400_000), default=400_000)
    parser.add_argument("--sentences", type=positive_int, default=200)
    parser.add_argument("--lines", type=positive_int, default=500)
    parser.add_argument("--seed", type=int, default=0, help="of the synthetic lines only")
    args = parser.parse_args(argv)
    emb = dxp.load_embeddings("glove-6b-50d", vocab_size=args.vocab_size)
    sentences = selected_tokens(load_pang_lee("sentences")[0][: args.sentences])
    rows = []
    for name, epsilon, options in SETTINGS:
        share = kept_share(dxp.make_mechanism(name, emb, epsilon=epsilon, **options), sentences)
        rows.append([f"{name} ε {epsilon:g}", "review words", f"{share:.1%}"])
    madlib = dxp.make_mechanism("madlib", emb, epsilon=10.0)
    numbers, dates = number_survival(madlib, identifier_lines(args.lines, args.seed))
    rows.append(["madlib ε 10", "number tokens", f"{numbers:.1%}"])
    rows.append(["madlib ε 10", "lines with the whole birth date", f"{dates:.1%}"])
    for row in rows:
        print(" | ".join(row))
    table = markdown_table(["mechanism", "unchanged", "share"], rows)
    save("kept_words", {"vocab_size": args.vocab_size, "rows": rows})
    (RESULTS / "kept_words.md").write_text(
        f"# What survives unchanged ({machine()})\n\n`python benchmarks/kept_words.py "
        f"--vocab-size {args.vocab_size}`: GloVe 6B 50d, {args.vocab_size:,} words; "
        f"{args.sentences} Pang & Lee sentences ({sum(map(len, sentences)):,} privatized "
        f"tokens); {args.lines} synthetic identifier lines (seed {args.seed}); one run, "
        f"secure noise.\n\n{table}\n"
    )


if __name__ == "__main__":
    sys.exit(main())
