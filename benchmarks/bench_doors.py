"""What each front door costs over the mechanism itself, and what batching buys.

    .venv/bin/python benchmarks/bench_doors.py [--sentences 2000] [--vocab-size 20000]
        [--mechanism madlib|tem|brr]

Workload: the first N Pang & Lee review sentences (dxp_plugins.datasets), a mechanism
(Madlib by default, exact search) at epsilon 10 over the most frequent GloVe words. All
doors share one embedding table and its indexes (built before timing). TEM, whose
mechanism time is small once its laws are cached, shows what the doors themselves cost;
its results go to ``doors_tem.json``. Reports words/s and the ratio to the bare
mechanism call on pre-tokenized text, measured in one run (best of 3).
"""

from __future__ import annotations

import argparse
import sys

import spacy
from common import (
    best_time,
    epsilon_arg,
    glove_vocab,
    machine,
    markdown_table,
    peak_rss_mb,
    positive_int,
    save,
)
from joblib import Parallel, delayed

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer
from dxp_plugins.datasets import load_pang_lee
from dxp_plugins.text import privatize_texts, tokenize


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=positive_int, default=2000)
    parser.add_argument("--vocab-size", type=glove_vocab, default=20_000)
    parser.add_argument("--epsilon", type=epsilon_arg, default=10.0)
    parser.add_argument("--mechanism", choices=["madlib", "tem", "brr"], default="madlib")
    args = parser.parse_args(argv)

    texts = [text.strip() for text in load_pang_lee("sentences")[0][: args.sentences]]
    tokenized = [tokenize(text) for text in texts]
    selected = [[w for w, keep in zip(t.words, t.selected, strict=True) if keep] for t in tokenized]
    words = sum(map(len, selected))
    settings = {
        "epsilon": args.epsilon,
        "vocab_size": args.vocab_size,
        "mechanism": args.mechanism,
    }

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=args.vocab_size)
    mechanism = dxp.make_mechanism(args.mechanism, table, epsilon=args.epsilon)
    mechanism.privatize(["warm", "up"])  # builds the index once for every door
    step = TextPrivatizer(**settings).fit(texts)
    # A capped ledger makes each call one charge: the texts are tokenized once more to count
    # their tokens before any noise (text.privatize_all); the cap is never reached here.
    capped = TextPrivatizer(**settings, accountant=dxp.Accountant(cap=1e15)).fit(texts)
    annotate = spacy.blank("en")
    annotate.add_pipe("dxp_privatizer", config=settings)
    replace = spacy.blank("en")
    replace.add_pipe("dxp_privatizer", config={**settings, "mode": "replace"})
    for nlp in (annotate, replace):
        nlp("warm up")

    def chunk(part: list[str]) -> list[object]:
        return list(privatize_texts(part, mechanism))

    def threaded(all_texts: list[str]) -> list[object]:
        parts = [all_texts[i : i + 500] for i in range(0, len(all_texts), 500)]
        return Parallel(n_jobs=2, backend="threading")(delayed(chunk)(p) for p in parts)

    cases = {
        "mechanism.privatize_batch (pre-tokenized)": lambda: mechanism.privatize_batch(selected),
        "text.privatize_texts": lambda: list(privatize_texts(texts, mechanism)),
        "TextPrivatizer.transform": lambda: step.transform(texts),
        "TextPrivatizer.transform, capped accountant": lambda: capped.transform(texts),
        # Every door at its default of 1000 texts per mechanism call (DEFAULT_BATCH_SIZE).
        "spaCy annotate, nlp.pipe": lambda: list(annotate.pipe(texts)),
        "spaCy replace, nlp.pipe": lambda: list(replace.pipe(texts)),
        "spaCy annotate, one nlp(text) per text": lambda: [annotate(text) for text in texts],
        # What a pandas user writes: df["text"].apply(lambda t: step.transform([t])[0]).
        "TextPrivatizer.transform, one text per call": lambda: [
            step.transform([text])[0] for text in texts
        ],
        # Chunks of 500 on joblib's threading backend, sharing the mechanism and its ledger.
        "privatize_texts, 500-text chunks on 2 joblib threads": lambda: threaded(texts),
    }
    seconds = {name: best_time(run) for name, run in cases.items()}
    base = seconds["mechanism.privatize_batch (pre-tokenized)"]
    rows = [
        [name, words / value, value / base, value * 1e3 / len(texts)]
        for name, value in seconds.items()
    ]
    headers = ["path", "words/s", "time / bare mechanism", "ms per text"]
    print(
        f"{len(texts)} sentences, {words:,} privatized words, {args.mechanism}, "
        f"vocab {args.vocab_size:,}"
    )
    print(f"{machine()}; peak RSS {peak_rss_mb():.0f} MiB\n")
    print(markdown_table(headers, rows))
    save(
        "doors" if args.mechanism == "madlib" else f"doors_{args.mechanism}",
        {
            "command": " ".join(sys.argv),
            "mechanism": args.mechanism,
            "texts": len(texts),
            "words": words,
            "vocab_size": args.vocab_size,
            "seconds": seconds,
        },
    )


if __name__ == "__main__":
    main()
