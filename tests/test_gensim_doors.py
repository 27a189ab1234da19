"""gensim (issue 4): KeyedVectors as the embeddings of every door, end to end, and private
documents feeding a gensim model. Uses the real files shipped in gensim's wheel."""

from __future__ import annotations

import re
import warnings

import spacy
from gensim.models import KeyedVectors, Word2Vec
from gensim.test.utils import datapath

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer
from dxp_plugins.cli import main as cli_main
from dxp_plugins.text import should_privatize

GLOVE_TXT = datapath("test_glove.txt")  # 76 real GloVe words, header-less text format
GLOVE_PARAMS = {"path": GLOVE_TXT, "no_header": True}
TEXTS = ["The president of the United States said the government would act.", "Who won?"]


def keyed_vectors() -> KeyedVectors:
    with warnings.catch_warnings():  # gensim leaves the header-less file open until GC
        warnings.simplefilter("ignore", ResourceWarning)
        return KeyedVectors.load_word2vec_format(GLOVE_TXT, no_header=True)


def private_nlp(epsilon: float) -> spacy.language.Language:
    nlp = spacy.blank("en")
    config = {
        "epsilon": epsilon,
        "embeddings": "keyed-vectors.v1",
        "embeddings_params": GLOVE_PARAMS,
    }
    nlp.add_pipe("dxp_privatizer", config=config)
    return nlp


def layout(text: str) -> str:
    return re.sub(r"\S+", "W", text)


def test_keyed_vectors_through_all_three_doors(tmp_path):
    kv = keyed_vectors()
    table = dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv, frequency_ordered=True)
    assert table.fingerprint == dxp.load_embeddings("keyed-vectors.v1", **GLOVE_PARAMS).fingerprint

    docs = list(private_nlp(2.0).pipe(TEXTS))
    words = [token._.dxp_text for doc in docs for token in doc if should_privatize(token.text)]
    assert set(words) <= set(kv.index_to_key) and len(words) == 13
    assert {doc._.dxp_guarantee["embeddings"] for doc in docs} == {table.fingerprint}

    step = TextPrivatizer(epsilon=2.0, embeddings=table)  # a KeyedVectors-backed table object
    private = step.fit_transform(TEXTS)
    assert [layout(t) for t in private] == [layout(t) for t in TEXTS]
    assert step.embeddings_fingerprint_ == table.fingerprint
    assert step.last_guarantee_.vocab_size == len(kv.index_to_key) == 76

    source, target, report = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "r.json"
    source.write_text("\n".join(TEXTS) + "\n")
    args = ["privatize", source, "-o", target, "--epsilon", 2, "--report", report]
    args += ["--embeddings", "keyed-vectors.v1", "--embeddings-param", f"path={GLOVE_TXT}"]
    args += ["--embeddings-param", "no_header=true"]
    assert cli_main([str(a) for a in args]) == 0
    assert [layout(t) for t in target.read_text().splitlines()] == [layout(t) for t in TEXTS]
    assert table.fingerprint in report.read_text()


def test_private_documents_train_a_gensim_model():
    """Token lists from the component feed gensim; no raw word reaches the model."""
    with open(datapath("lee_background.cor"), encoding="utf-8") as stream:
        corpus = [line for line in stream if line.strip()][:40]
    kv = keyed_vectors()
    sentences = [
        [token._.dxp_text for token in doc if should_privatize(token.text)]
        for doc in private_nlp(5.0).pipe(corpus)
    ]
    model = Word2Vec(sentences, vector_size=8, min_count=1, epochs=1, workers=1, seed=1)
    assert set(model.wv.index_to_key) <= set(kv.index_to_key)
    assert "bushfire" in corpus[0].lower() and sum(map(len, sentences)) > 5000


def test_lee_background_corpus_is_real_capitalised_news():
    from dxp_plugins.datasets import load_lee_background

    articles = load_lee_background()
    assert len(articles) == 300 and articles[0].startswith("Hundreds of people")
