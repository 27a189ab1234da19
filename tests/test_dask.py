"""Dask names a task by a hash of its arguments and computes equal names once. Two
privatizations of one column with one object are two releases: each must draw its own
noise, not reuse the first's output while every guarantee counts both; and hashing a seeded
object must not pickle it (its copy warned about a stream no task used)."""

from __future__ import annotations

import warnings

import pytest

import dxp_plugins as dxp
from dxp_plugins import LPLPTransformer, TextPrivatizer
from dxp_plugins._random import RandomSource
from dxp_plugins.errors import SeededRandomnessWarning

dask = pytest.importorskip("dask")
dask_bag = pytest.importorskip("dask.bag")
from dask.base import tokenize  # noqa: E402

TEXTS = ["the hockey team won the final", "send the encryption keys before sunday"] * 20


def _privatize_partition(texts, mechanism):
    return [result.text for result in dxp.privatize_texts(list(texts), mechanism)]


def _transform_partition(texts, privatizer):
    return privatizer.transform(list(texts))


def test_two_releases_of_one_column_draw_two_noises(glove_5k):
    ledger = dxp.Accountant()
    madlib = dxp.Madlib(glove_5k, epsilon=10, accountant=ledger)
    column = dask_bag.from_sequence(TEXTS, npartitions=2)
    first = column.map_partitions(_privatize_partition, madlib)
    second = column.map_partitions(_privatize_partition, madlib)
    assert first.name != second.name
    one, two = dask.compute(first, second, scheduler="threads")
    assert len(one) == len(two) == len(TEXTS)
    assert one != two  # 440 tokens at eps 10 on 5k words: equal only by reuse
    assert ledger.releases == 4  # two releases of two partitions, each drawn


def test_a_text_privatizer_is_released_anew_per_task(glove_5k):
    privatizer = TextPrivatizer(epsilon=10, embeddings=glove_5k).fit(TEXTS)
    column = dask_bag.from_sequence(TEXTS, npartitions=2)
    first = column.map_partitions(_transform_partition, privatizer)
    second = column.map_partitions(_transform_partition, privatizer)
    one, two = dask.compute(first, second, scheduler="threads")
    assert one != two
    assert privatizer.accountant_.releases == 4


def test_every_noisy_object_gets_a_fresh_token_without_being_pickled(glove_5k):
    nlp = __import__("spacy").blank("en")
    component = nlp.add_pipe("dxp_privatizer", config={"epsilon": 10, "vocab_size": 5_000})
    objects = [
        dxp.Madlib(glove_5k, epsilon=10),
        dxp.TEM(glove_5k, epsilon=2),
        dxp.BRR(glove_5k, epsilon=0.5),
        TextPrivatizer(epsilon=10, embeddings=glove_5k),
        LPLPTransformer(epsilon=1.0),
        RandomSource(),
        component,
    ]
    for noisy in objects:
        assert tokenize(noisy) != tokenize(noisy), type(noisy).__name__


def test_tokenizing_a_seeded_mechanism_does_not_warn_of_a_copy(glove_5k):
    with pytest.warns(SeededRandomnessWarning):
        seeded = dxp.Madlib(glove_5k, epsilon=10, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tokenize(seeded)
        dask_bag.from_sequence(TEXTS, npartitions=2).map_partitions(
            _privatize_partition, seeded
        ).compute(scheduler="sync")
    assert [str(w.message) for w in caught if w.category is SeededRandomnessWarning] == []
