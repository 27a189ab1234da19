"""gensim (issue 4): KeyedVectors as the embeddings of every door, end to end, and private
documents feeding a gensim model. Uses the real files shipped in gensim's wheel."""

from __future__ import annotations

import re
import shutil
import textwrap
import warnings

import numpy as np
import pytest
import spacy

pytest.importorskip("gensim")  # Python 3.14: gensim has no wheel, and is not a dependency there

from gensim.models import KeyedVectors, LdaModel, Word2Vec
from gensim.test.utils import datapath

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer, topics
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
    with pytest.warns(dxp.OOVWarning):  # a 76-word table reads little of the news
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


def test_a_saved_pipeline_follows_its_moved_vectors_file(tmp_path):
    """A keyed-vectors.v1 pipeline was tied to the path it was saved with: a new path was
    refused as changed settings. With the saved fingerprint, checked on the first document,
    a new path is accepted when it holds the same table, and only then."""
    saved_at, moved_to, other = (tmp_path / name / "vectors.txt" for name in ("a", "b", "c"))
    for path in (saved_at, moved_to, other):
        path.parent.mkdir()
    shutil.copy(GLOVE_TXT, saved_at)
    nlp = spacy.blank("en")
    params = {"path": str(saved_at), "no_header": True}
    config = {"epsilon": 2.0, "embeddings": "keyed-vectors.v1", "embeddings_params": params}
    nlp.add_pipe("dxp_privatizer", config=config)
    nlp.to_disk(tmp_path / "pipeline")
    shutil.move(saved_at, moved_to)
    rows = moved_to.read_text(encoding="utf-8").splitlines(keepends=True)
    other.write_text("".join(rows[:-1]), encoding="utf-8")  # one word fewer

    def load(path):
        overrides = {"components.dxp_privatizer.embeddings_params.path": str(path)}
        return spacy.load(tmp_path / "pipeline", config=overrides)

    doc = load(moved_to)("The president said.")
    fingerprint = dxp.load_embeddings("keyed-vectors.v1", **GLOVE_PARAMS).fingerprint
    assert doc._.dxp_guarantee["embeddings"] == fingerprint
    with pytest.raises(ValueError, match="differ from those this pipeline was saved with"):
        load(other)("The president said.")
    # Saved without a fingerprint (the file was not there): a new path is still refused.
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config=config)  # saved_at is gone
    with pytest.warns(UserWarning, match="without the embeddings fingerprint"):
        nlp.to_disk(tmp_path / "pipeline")
    with pytest.raises(ValueError, match=r"settings differ .*embeddings_params: saved"):
        load(moved_to)


def test_the_to_gensim_recipe_for_filtering_keeps_ids_in_the_dictionary():
    """Filtering the Dictionary that to_gensim returns (filter_extremes) renumbers its ids
    under the corpus; its docstring's recipe filters the count columns first."""
    from sklearn.feature_extraction.text import CountVectorizer

    with open(datapath("lee_background.cor"), encoding="utf-8") as stream:
        texts = [line for line in stream if line.strip()][:60]
    vectorizer = CountVectorizer()
    counts, names = vectorizer.fit_transform(texts), vectorizer.get_feature_names_out()
    [recipe] = re.findall(r"::\n\n(.*?)\n\s*$", topics.to_gensim.__doc__, flags=re.S)
    scope = {"np": np, "counts": counts, "names": names, "to_gensim": topics.to_gensim}
    exec(textwrap.dedent(recipe), scope)
    corpus, dictionary = scope["corpus"], scope["dictionary"]
    assert 0 < len(dictionary) < len(names)
    assert max(i for document in corpus for i, _ in document) < len(dictionary)
    assert min(dictionary.dfs.values()) >= 5
    LdaModel(corpus, id2word=dictionary, num_topics=2, passes=1, random_state=0)
