"""One measured run of one peer (runs inside the peers' isolated virtual environment).

    python peer_worker.py --peer mldp-text --mechanism madlib --vectors DIR --inputs FILE
        --epsilon 10 --budget 120

Imports only the standard library, numpy, the peer and :mod:`harness` (found next to this
file), times ``load`` (importing the peer and reading the vectors its own way), ``setup``
(everything else before the first word) and the words themselves, and prints one result
line. Correctness facts that can be measured cheaply here (mldp-text's IVF recall) are
measured on the peer's own objects after the timed part.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import BETA, emit, timed_sample, unchanged_share


def run_mldp(args: argparse.Namespace, words: list[str]) -> dict[str, Any]:
    """mldp-text: MultivariateCalibrated (Madlib) or TEM, ``replace_word`` one word per call."""
    import numpy as np

    start = time.perf_counter()
    import mldp_text
    from gensim.models import KeyedVectors

    vocab = (Path(args.vectors) / "words.txt").read_text(encoding="utf-8").split("\n")[:-1]
    matrix = np.load(Path(args.vectors) / "vectors.npy")
    # Not KeyedVectors(count=N): that preallocates N empty rows, and add_vectors appends
    # after them, so mldp-text ran on a table with N zero vectors in front (its TEM then
    # drew uniformly, its Madlib kept too many words: migration review F1).
    kv = KeyedVectors(vector_size=matrix.shape[1])
    kv.add_vectors(vocab, matrix)
    assert len(kv.index_to_key) == len(vocab) and None not in kv.key_to_index
    load = time.perf_counter() - start

    start = time.perf_counter()
    dim = matrix.shape[1]
    if args.mechanism == "madlib":
        mech = mldp_text.MultivariateCalibrated(epsilon=args.epsilon, embedding_matrix=kv, dim=dim)
    else:
        mech = mldp_text.TEM(epsilon=args.epsilon, embedding_matrix=kv, dim=dim)
    setup = time.perf_counter() - start

    def process(piece: list[str]) -> list[str]:
        return [mech.replace_word(word) for word in piece]

    result = timed_sample(process, words, chunk=1, budget=args.budget)
    extra: dict[str, Any] = {
        "oov_inputs": sum(1 for word in words if word not in kv.key_to_index),
    }
    if args.mechanism == "madlib":
        extra.update(ivf_recall(mech, kv, words, np))
    return {"load_s": load, "setup_s": setup, **result, **extra}


def ivf_recall(mech: Any, kv: Any, words: list[str], np: Any) -> dict[str, Any]:
    """Recall@1 of mldp-text's IVF index against exact search, on its own noisy vectors."""
    import faiss

    inside = [word for word in words if word in kv.key_to_index]
    noisy = np.stack([mech.get_perturbed_vector(kv[word], mech.dim)[0] for word in inside])
    noisy = np.ascontiguousarray(noisy, dtype=np.float32)
    exact = faiss.IndexFlatL2(kv.vectors.shape[1])
    exact.add(np.ascontiguousarray(kv.vectors, dtype=np.float32))
    _, truth = exact.search(noisy, 1)
    _, found = mech.index.search(noisy, 1)
    return {
        "recall_at_1": float(np.mean(found[:, 0] == truth[:, 0])),
        "recall_queries": len(inside),
        "index_misses": int(np.sum(found[:, 0] < 0)),
        "index": f"IVF nlist={mech.index.nlist} nprobe={mech.index.nprobe}",
    }


def run_pypantera(args: argparse.Namespace, words: list[str]) -> dict[str, Any]:
    """pypantera: CMP (Madlib) or TEM through ``obfuscateText`` on rows of ``--chunk`` words."""
    start = time.perf_counter()
    import pandas as pd

    # The wheel installs its code as a top-level package named ``src`` (PEERS.md).
    if args.mechanism == "madlib":
        from src.EmbeddingPerturbationMechanism.cmp import CMP

        mech = CMP({"embPath": str(Path(args.vectors) / "glove.txt"), "epsilon": args.epsilon})
    else:
        from src.SamplingPerturbationMechanism.tem import TEM

        settings = {"embPath": str(Path(args.vectors) / "glove.txt"), "epsilon": args.epsilon}
        mech = TEM({**settings, "beta": BETA})
    load = time.perf_counter() - start
    vocab = mech.vocab.embeddings
    oov = sum(1 for word in words if word not in vocab)  # before TEM adds OOV words to it

    def process(piece: list[str]) -> list[str]:
        frame = pd.DataFrame({"id": [0], "text": [" ".join(piece)]})
        out = mech.obfuscateText(frame, 1)
        return str(out["obfuscatedText"].iloc[0][0]).split()

    result = timed_sample(process, words, chunk=args.chunk, budget=args.budget)
    return {"load_s": load, "setup_s": 0.0, "oov_inputs": oov, **result}


def run_diffractor(args: argparse.Namespace, words: list[str]) -> dict[str, Any]:
    """dp-diffractor (1-Diffractor, geometric list mechanism) through ``rewrite``."""
    start = time.perf_counter()
    import nltk
    from diffractor import Diffractor, DiffractorConfig
    from diffractor import utils as diffractor_utils

    # Inputs are already tokens; nltk.word_tokenize would need the punkt data (PEERS.md).
    nltk.word_tokenize = str.split
    timing = {"list": 0.0}
    build = diffractor_utils.EmbeddingManager.create_sorted_list

    def timed_build(vectors: Any, vocab: Any) -> Any:
        begin = time.perf_counter()
        try:
            return build(vectors, vocab)
        finally:
            timing["list"] += time.perf_counter() - begin

    diffractor_utils.EmbeddingManager.create_sorted_list = staticmethod(timed_build)
    config = DiffractorConfig(epsilon=args.epsilon, replace_stopwords=True, verbose=False)
    mech = Diffractor(config, model_names=["glove-wiki-gigaword-300"])
    constructed = time.perf_counter() - start
    begin = time.perf_counter()
    mech.start()  # the worker pool (one process per embedding model)
    pool = time.perf_counter() - begin

    def process(piece: list[str]) -> list[str]:
        return str(mech.rewrite([" ".join(piece)], epsilon=args.epsilon)[0]).split()

    try:
        result = timed_sample(process, words, chunk=args.chunk, budget=args.budget)
    finally:
        mech.close()
    mapping = mech.mgr.word_to_idx[0]
    return {
        "load_s": constructed - timing["list"],
        "setup_s": timing["list"] + pool,
        "oov_inputs": sum(1 for word in words if word not in mapping),
        **result,
    }


RUNNERS = {"mldp-text": run_mldp, "pypantera": run_pypantera, "dp-diffractor": run_diffractor}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--peer", choices=sorted(RUNNERS), required=True)
    parser.add_argument("--mechanism", choices=["madlib", "tem", "diffractor"], required=True)
    parser.add_argument("--vectors", required=True, help="folder made by convert.py")
    parser.add_argument("--inputs", required=True, help="JSON list of input words")
    parser.add_argument("--epsilon", type=float, required=True)
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--chunk", type=int, default=10)
    args = parser.parse_args(argv)
    words = json.loads(Path(args.inputs).read_text(encoding="utf-8"))
    result = RUNNERS[args.peer](args, words)
    outputs = result.pop("outputs")
    if "unchanged" not in result:  # a runner that did not sample chunk by chunk
        result["unchanged"] = unchanged_share(words, outputs)
    result["outputs_sample"] = outputs[:20]
    emit(
        {
            "system": args.peer,
            "mechanism": args.mechanism,
            "epsilon": args.epsilon,
            "vocab_size": args.vocab_size,
            "inputs": len(words),
            "chunk": args.chunk,
            "python": sys.version.split()[0],
            "pid": os.getpid(),
            **result,
        }
    )


if __name__ == "__main__":
    main()
