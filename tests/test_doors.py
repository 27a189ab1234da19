"""Settings shared by the front doors (dxp_plugins.doors): range checks with clear errors,
generic over the mechanisms registry, the shared randomness source, and token selection."""

from __future__ import annotations

import re

import numpy as np
import pytest
import spacy
from spacy.tokens import Span

import dxp_plugins as dxp
from dxp_plugins._random import RandomSource
from dxp_plugins.doors import DoorSettings
from dxp_plugins.text import privatize_texts
from tests.door_fixtures import KaryRandomizedResponse, register
from tests.optional import requires_gensim

FAST = {"embeddings": "glove-6b-50d", "vocab_size": 2000}


TEM = {"mechanism": "tem"}


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"epsilon": None}, ValueError, "epsilon is required"),
        ({"epsilon": 0}, ValueError, "epsilon must lie in"),
        ({"epsilon": -1.0}, ValueError, "epsilon must lie in"),
        ({"epsilon": float("nan")}, ValueError, "finite"),
        ({"epsilon": float("inf")}, ValueError, "finite"),
        ({"epsilon": 1e9}, ValueError, "epsilon must lie in"),
        ({"epsilon": True}, TypeError, "real number"),
        ({"epsilon": "10"}, TypeError, "real number"),
        ({"mechanism": "nope"}, ValueError, "mechanism: unknown name 'nope'; available: "),
        ({"mechanism": 3}, TypeError, "registry name"),
        ({"mechanism_params": {"epsilon": 2}}, ValueError, "may not set epsilon (give it dir"),
        # The spaCy config's own spelling (was: "use the door's own setting", naming none).
        ({"mechanism_params": {"random_state": 2}}, ValueError, "random_state (give it as seed)"),
        ({"mechanism_params": {"indx": "hnsw"}}, ValueError, "unknown option(s) 'indx'"),
        ({"mechanism_params": [1]}, TypeError, "mechanism_params must be a dict"),
        ({"embeddings": "glove-7b"}, ValueError, "embeddings: unknown name 'glove-7b'"),
        ({"embeddings": {"a": [0.0]}}, TypeError, "or an EmbeddingTable, got dict"),
        ({"vocab_size": 0}, ValueError, "vocab_size must be >= 1"),
        ({"vocab_size": 2.5}, TypeError, "vocab_size must be an integer"),
        ({"embeddings_params": {"vocab_size": 5}}, ValueError, "either directly"),
        ({"oov": "drop"}, ValueError, "oov must be one of"),
        ({"pos": ["NOUNS"]}, ValueError, "unknown part-of-speech tag(s) 'NOUNS'"),
        ({"pos": 5}, TypeError, "pos must be a list"),
        ({"entities": [""]}, ValueError, "non-empty strings"),
        ({"token_filter": "missing"}, ValueError, "token_filter: unknown name 'missing'"),
        ({"token_filter": "missing"}, ValueError, "import its module first"),  # spacy review
        ({"seed": -1}, ValueError, "seed must be >= 0"),
        ({"seed": 1.5}, TypeError, "seed must be an integer"),
        ({"seed": np.random.default_rng(0)}, TypeError, "seed must be None"),  # was random_state
        # Option values too, before any table is loaded (were: on the first document).
        (TEM | {"mechanism_params": {"beta": 2.0}}, ValueError, "beta must lie in (0, 1)"),
        (TEM | {"mechanism_params": {"metric": "cosine"}}, ValueError, "metric must be one of"),
        (TEM | {"mechanism_params": {"gamma": -1}}, ValueError, "gamma"),
        (TEM | {"mechanism_params": {"beta": 0.1, "gamma": 1}}, ValueError, "beta or gamma"),
        (TEM | {"mechanism_params": {"cache_mb": "big"}}, TypeError, "cache_mb"),
        ({"mechanism_params": {"index": "ivf"}}, ValueError, "index must be one of"),
        ({"mechanism_params": {"index_params": {"m": 0}}}, ValueError, "does not take"),
        ({"mechanism_params": {"index": "hnsw", "index_params": {"m": 0}}}, ValueError, "m must"),
        ({"mechanism": "brr", "mechanism_params": {"n_bits": 0}}, ValueError, "n_bits must"),
    ],
)
def test_bad_settings_raise_clear_errors(changes, error, message):
    settings = {"epsilon": 10.0, **FAST, **changes}
    with pytest.raises(error) as raised:
        DoorSettings.create(**settings)
    assert message in str(raised.value)


def test_errors_name_the_setting_as_the_door_spells_it(glove_5k):
    """Review 9 M3: messages named another door's spelling (``seed`` to a random_state
    user, ``mechanism_params`` and "the door's own setting" to a command-line user)."""
    flags = {"seed": "--seed", "mechanism_params": "--param", "accountant": None}
    cases = [
        ({"seed": -1}, {"seed": "random_state"}, ValueError, "^random_state must be >= 0"),
        ({"seed": 1.5}, {"seed": "random_state"}, TypeError, "^random_state must be an int"),
        ({"seed": -1}, flags, ValueError, "^--seed must be >= 0"),
        (
            {"mechanism_params": {"random_state": 1, "accountant": 2}},
            flags,
            ValueError,
            r"^--param may not set accountant \(not settable here\), random_state \(give "
            r"it as --seed\)$",
        ),
        ({"mechanism_params": {"bta": 1}}, flags, ValueError, "^--param: unknown option"),
    ]
    for changes, names, error, message in cases:
        with pytest.raises(error, match=message):
            DoorSettings.create(epsilon=1.0, **{**FAST, **changes}, names=names)
    with pytest.raises(ValueError, match=r"^random_state must be >= 0"):
        dxp.TextPrivatizer(epsilon=1.0, embeddings=glove_5k, random_state=-1).fit(["a"])
    with pytest.raises(ValueError, match=r"random_state \(give it directly\)"):
        dxp.TextPrivatizer(epsilon=1.0, mechanism_params={"random_state": 3}).fit(["a"])
    for seed, error in ((-1, ValueError), (1.5, TypeError)):
        with pytest.raises(error, match=r"^random_state must"):  # was: "seed must"
            dxp.Madlib(glove_5k, 10.0, random_state=seed)
    with pytest.raises(ValueError, match=r"random_state \(give it as seed\)"):
        spacy.blank("en").add_pipe(
            "dxp_privatizer", config={"epsilon": 1.0, "mechanism_params": {"random_state": 3}}
        )


def test_constants_carry_their_own_doc_comments():
    """Review 9 L11: the ``#:`` comment of RESERVED_MECHANISM_PARAMS sat above
    DEFAULT_BATCH_SIZE, so Sphinx and IDEs gave both sentences to the batch size."""
    import inspect

    from dxp_plugins import doors

    lines = inspect.getsource(doors).splitlines()

    def comment_of(name):
        row = next(i for i, line in enumerate(lines) if line.startswith(f"{name} = "))
        above = []
        while lines[row - 1].startswith("#:"):
            row -= 1
            above.insert(0, lines[row])
        return " ".join(above)

    assert comment_of("RESERVED_MECHANISM_PARAMS").startswith("#: Parameters a door sets")
    assert "Parameters a door" not in comment_of("DEFAULT_BATCH_SIZE")
    assert comment_of("DEFAULT_BATCH_SIZE").startswith("#: Documents per mechanism call")


@requires_gensim
def test_loader_argument_errors_name_the_embeddings():
    with pytest.raises(ValueError, match=r"embeddings_params: unknown option.*'colour'"):
        DoorSettings.create(epsilon=1.0, embeddings_params={"colour": "red"})  # at once
    settings = DoorSettings.create(  # a loader's TypeError (a path of the wrong type)
        epsilon=1.0, embeddings="keyed-vectors.v1", embeddings_params={"path": 5}
    )
    with pytest.raises(ValueError, match=r"embeddings 'keyed-vectors\.v1'"):
        settings.load_embeddings()


def test_settings_normalise_and_round_trip_through_json():
    settings = DoorSettings.create(
        epsilon=3, pos="NOUN", entities=("PERSON", "PERSON"), mechanism_params={"index": "exact"}
    )
    assert settings.epsilon == 3.0 and isinstance(settings.epsilon, float)
    assert settings.pos == ("NOUN",) and settings.entities == ("PERSON",)
    config = settings.to_config()
    assert DoorSettings.create(**config) == settings
    assert config["pos"] == ["NOUN"] and config["seed"] is None


def test_embeddings_of_the_same_settings_are_shared():
    first = DoorSettings.create(epsilon=1.0, **FAST).load_embeddings()
    again = DoorSettings.create(epsilon=9.0, embeddings_params={"vocab_size": 2000})
    assert again.load_embeddings() is first  # one table (and one faiss index) per process
    assert len(first) == 2000


def test_a_door_table_nothing_uses_is_freed_but_the_latest():
    """Memory review F4: an lru_cache of four kept four tables and their indexes for the
    life of the process after every estimator using them was gone."""
    import gc
    import weakref

    from dxp_plugins import doors
    from dxp_plugins.embeddings import shared

    tables = [doors.load_embeddings_setting("glove-6b-50d", {}, size) for size in (1231, 1232)]
    in_use = doors.load_embeddings_setting("glove-6b-50d", {}, 1233)
    refs = [weakref.ref(table) for table in tables]
    assert doors.load_embeddings_setting("glove-6b-50d", {}, 1231) is tables[0]  # shared
    latest = doors.load_embeddings_setting("glove-6b-50d", {}, 1234)
    del tables, latest
    gc.collect()
    assert [ref() for ref in refs] == [None, None]  # used by nothing: freed
    assert doors.load_embeddings_setting("glove-6b-50d", {}, 1233) is in_use  # in use: kept
    assert len(shared._LATEST_TABLE[0]) == 1233


def test_any_registered_mechanism_builds_with_its_options(monkeypatch, glove_5k):
    register(monkeypatch, "mechanisms", "k-rr-test", KaryRandomizedResponse)
    settings = DoorSettings.create(
        epsilon=2.0,
        mechanism="k-rr-test",
        mechanism_params={"restrict_to": 50},
        embeddings=glove_5k,
    )
    source = RandomSource()
    mechanism = settings.build_mechanism(source)
    assert isinstance(mechanism, KaryRandomizedResponse) and mechanism.restrict_to == 50
    assert mechanism._random is source  # the door's source, not a new one
    with pytest.raises(ValueError, match="accepts: restrict_to"):
        DoorSettings.create(epsilon=2.0, mechanism="k-rr-test", mechanism_params={"index": "x"})


def test_mechanism_takes_a_door_random_source(glove_5k):
    with pytest.warns(dxp.SeededRandomnessWarning):
        source = RandomSource(4)
    first = dxp.Madlib(glove_5k, epsilon=3.0, random_state=source)
    assert first.rng_mode == "seeded" and first._random is source
    second = dxp.Madlib(glove_5k, epsilon=3.0, random_state=4)
    ids = np.arange(100)
    np.testing.assert_array_equal(first.privatize_ids(ids), second.privatize_ids(ids))


# -- selection --------------------------------------------------------------------------------
@pytest.fixture
def tagged_doc():
    """A real spaCy Doc with POS tags and one entity set by hand (no model needed)."""
    nlp = spacy.blank("en")
    doc = nlp.make_doc("Alice sent the keys to Bob in Paris.")
    tags = ["PROPN", "VERB", "DET", "NOUN", "ADP", "PROPN", "ADP", "PROPN", "PUNCT"]
    for token, tag in zip(doc, tags, strict=True):
        token.pos_ = tag
    doc.ents = [Span(doc, 7, 8, label="GPE"), Span(doc, 0, 1, label="PERSON")]
    return doc


def selected(settings: DoorSettings, doc) -> list[str]:
    flags = settings.selector()(doc)
    return [token.text for token, flag in zip(doc, flags, strict=True) if flag]


def test_default_selection_is_all_words():
    assert DoorSettings.create(epsilon=1.0).selector() is None


def test_selection_by_pos_entities_and_filter(monkeypatch, tagged_doc):
    assert selected(DoorSettings.create(epsilon=1.0, pos=["NOUN"]), tagged_doc) == ["keys"]
    gpe = DoorSettings.create(epsilon=1.0, entities=["GPE"])
    assert selected(gpe, tagged_doc) == ["Paris"]
    anything = DoorSettings.create(epsilon=1.0, entities=["*"])
    assert selected(anything, tagged_doc) == ["Alice", "Paris"]
    union = DoorSettings.create(epsilon=1.0, pos=["NOUN"], entities=["*"])
    assert selected(union, tagged_doc) == ["Alice", "keys", "Paris"]
    register(monkeypatch, "token_filters", "capitalised.v1", lambda token: token.is_title)
    custom = DoorSettings.create(epsilon=1.0, token_filter="capitalised.v1", pos=["VERB"])
    assert selected(custom, tagged_doc) == ["Alice", "sent", "Bob", "Paris"]


def test_selection_by_pos_needs_tags():
    doc = spacy.blank("en")("untagged words")
    with pytest.raises(ValueError, match="needs part-of-speech tags"):
        DoorSettings.create(epsilon=1.0, pos=["NOUN"]).selector()(doc)
    with pytest.raises(ValueError, match="needs named entities"):
        DoorSettings.create(epsilon=1.0, entities=["*"]).selector()(doc)


def test_entity_types_are_checked_against_the_pipeline():
    """A typo or wrong case would select nothing and release every name unchanged."""
    nlp = spacy.blank("en")
    typo = DoorSettings.create(epsilon=1.0, entities=["PERSN"])
    typo.check_entities(nlp)  # no entity component: nothing to check against
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(
        [{"label": "PERSON", "pattern": "Alice"}, {"label": "GPE", "pattern": "Oslo"}]
    )
    for labels, unknown in ((["PERSN"], "'PERSN'"), (["person", "GPE"], "'person'")):
        with pytest.raises(
            ValueError, match=rf"unknown entity type\(s\) {unknown}; .* GPE, PERSON"
        ):
            DoorSettings.create(epsilon=1.0, entities=labels).check_entities(nlp)
    for labels in (["PERSON"], ["*"], ["*", "GPE"]):
        DoorSettings.create(epsilon=1.0, entities=labels).check_entities(nlp)
    # A span_ruler with annotate_ents adds its labels (it does not declare doc.ents).
    spans = nlp.add_pipe("span_ruler", config={"annotate_ents": True, "overwrite": False})
    spans.add_patterns([{"label": "SECRET", "pattern": "zq7"}])
    DoorSettings.create(epsilon=1.0, entities=["SECRET", "GPE"]).check_entities(nlp)
    with pytest.raises(ValueError, match="'SECRT'"):
        DoorSettings.create(epsilon=1.0, entities=["SECRT"]).check_entities(nlp)
    # A custom component may set entities without saying so: nothing to check against.
    nlp.add_pipe("dxp_test_sets_ents")
    DoorSettings.create(epsilon=1.0, entities=["ANYTHING"]).check_entities(nlp)


@spacy.Language.component("dxp_test_sets_ents")
def _sets_ents(doc):
    return doc


def test_text_path_takes_a_selection(monkeypatch, glove_5k):
    register(monkeypatch, "token_filters", "long.v1", lambda token: len(token) > 4)
    select = DoorSettings.create(epsilon=1.0, token_filter="long.v1").selector()
    mech = dxp.Madlib(glove_5k, epsilon=0.01)  # nearly uniform: selected words change
    [result] = privatize_texts(["the encryption keys, please"], mech, select=select)
    words = result.text.split()
    assert words[0] == "the" and words[2] == "keys," and words[1] != "encryption"
    record = result.guarantee
    assert (record.tokens_privatized, record.tokens_passed_through) == (2, 3)


def test_a_filter_accepting_everything_still_passes_layout_and_punctuation(monkeypatch, glove_5k):
    """A selection narrows the default; it never adds whitespace or allow-listed punctuation
    (which would be charged, and whitespace replaced by words)."""
    register(monkeypatch, "token_filters", "every.v1", lambda token: True)
    settings = DoorSettings.create(epsilon=1.0, token_filter="every.v1")
    mech = dxp.Madlib(glove_5k, epsilon=300.0)
    text = "hello ,  world ! ( again )"
    [result] = privatize_texts([text], mech, select=settings.selector())
    assert re.sub(r"\w+", "W", result.text) == "W ,  W ! ( W )"
    record = result.guarantee
    assert (record.tokens_privatized, record.tokens_passed_through) == (3, 4)
    assert settings.selection_label() == "token_filter every.v1"
    assert record.selection == "token_filter every.v1"


def test_guarantee_dicts_read_back(glove_5k):
    record = dxp.Madlib(glove_5k, epsilon=2.0).guarantee(3, 1)
    assert dxp.Guarantee.from_dict(record.to_dict()) == record


def test_threads_at_first_use_of_a_setting_share_one_load(monkeypatch):
    """_load_shared was a bare lru_cache, which does not make threads wait for a load in
    progress: 8 threads at first use of one setting got 5-8 tables, each building its own
    indexes (review 10, F3). The slow load widens the window."""
    import threading
    import time

    from dxp_plugins import doors
    from dxp_plugins.embeddings import shared

    loads = []
    load = shared._load

    def slow_load(name, loader, params):
        loads.append(params)
        time.sleep(0.05)
        return load(name, loader, params)

    monkeypatch.setattr(shared, "_load", slow_load)
    barrier = threading.Barrier(8)
    tables: list[dxp.EmbeddingTable | None] = [None] * 8

    def first_use(i: int) -> None:
        barrier.wait()
        tables[i] = doors.load_embeddings_setting("glove-6b-50d", {}, 1237)  # used nowhere else

    threads = [threading.Thread(target=first_use, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(loads) == 1
    assert tables[0] is not None and len(tables[0]) == 1237
    assert all(table is tables[0] for table in tables)


def test_load_embeddings_and_the_doors_share_one_live_table(monkeypatch, glove_5k):
    """A user's ``load_embeddings`` table and a door's of the same settings were two copies
    (+279 MiB at 400k words, memory review, twenty-first session). Now one table while it is
    alive; a loader registered again, other arguments or an object argument load anew."""
    import gc

    from dxp_plugins import doors
    from dxp_plugins.embeddings import shared

    calls = []

    def loader(vocab_size=None, scale=1.0):
        calls.append((vocab_size, scale))
        table = glove_5k.most_frequent(vocab_size or len(glove_5k))
        return dxp.EmbeddingTable(table.words, table.vectors * np.float32(scale))

    register(monkeypatch, "embeddings", "shared-test.v1", loader)
    mine = dxp.load_embeddings("shared-test.v1", vocab_size=300)
    door = dxp.TextPrivatizer(embeddings="shared-test.v1", vocab_size=300, epsilon=1.0)
    assert door.fit(["a text"]).mechanism_.embeddings is mine
    assert doors.load_embeddings_setting("shared-test.v1", {}, 300) is mine
    assert dxp.load_embeddings("shared-test.v1", vocab_size=300) is mine
    assert calls == [(300, 1.0)]
    other = dxp.load_embeddings("shared-test.v1", vocab_size=300, scale=2.0)
    assert other is not mine and len(calls) == 2
    register(monkeypatch, "embeddings", "shared-test.v1", lambda **kw: loader(**kw))
    assert dxp.load_embeddings("shared-test.v1", vocab_size=300) is not mine
    del mine, other, door
    shared._LATEST_TABLE.clear()
    gc.collect()
    before = len(calls)
    dxp.load_embeddings("shared-test.v1", vocab_size=300, scale=2.0)
    assert len(calls) == before + 1  # nobody held it: loaded again


def test_load_embeddings_keeps_its_type_error_when_a_door_cut_the_table(monkeypatch, glove_5k):
    """A door cuts the table of a loader that takes no ``vocab_size`` itself; the user's call
    with ``vocab_size`` stays the loader's TypeError, whichever came first."""
    from dxp_plugins import doors

    register(monkeypatch, "embeddings", "no-vocab-test.v1", lambda: glove_5k)
    assert len(doors.load_embeddings_setting("no-vocab-test.v1", {}, 50)) == 50
    with pytest.raises(TypeError):
        dxp.load_embeddings("no-vocab-test.v1", vocab_size=50)


def test_a_door_cuts_a_shared_loader_table_whichever_loaded_first(monkeypatch):
    """Diff review F1: load_embeddings and the doors shared one value per arguments, but a
    door cuts a loader's table to vocab_size (refusing one without a rank) and
    load_embeddings does not: whichever loaded first decided what the other got (a door
    asked for 300 words used 400; the refusal vanished)."""
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(400)]
    vectors = rng.normal(size=(400, 8)).astype(np.float32)

    def ranked(vocab_size=None):  # ignores vocab_size
        return dxp.EmbeddingTable(words, vectors, frequency_rank=np.arange(400))

    def unranked(vocab_size=None):
        return dxp.EmbeddingTable(words, vectors)

    for order in ("door first", "user first"):
        name = f"uncut-{order.split()[0]}.v1"
        register(monkeypatch, "embeddings", name, ranked)
        door = dxp.TextPrivatizer(embeddings=name, vocab_size=300, epsilon=1.0)
        if order == "door first":
            door.fit(["x"])
            mine = dxp.load_embeddings(name, vocab_size=300)
        else:
            mine = dxp.load_embeddings(name, vocab_size=300)
            door.fit(["x"])
        assert len(door.mechanism_.embeddings) == 300, order
        assert len(mine) == 400, order  # the loader's own table, as it returned it
    register(monkeypatch, "embeddings", "uncut-norank.v1", unranked)
    mine = dxp.load_embeddings("uncut-norank.v1", vocab_size=300)
    with pytest.raises(ValueError, match="no frequency_rank"):
        dxp.TextPrivatizer(embeddings="uncut-norank.v1", vocab_size=300, epsilon=1.0).fit(["x"])
    assert len(mine) == 400


@requires_gensim
def test_a_kv_whose_vectors_file_changed_is_loaded_again(tmp_path):
    """BYOE review F8: gensim saves a .kv's array beside it (NAME.kv.vectors.npy); only the
    .kv was stamped, so new vectors in that file returned the stale table."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors(vector_size=2)
    kv.add_vectors([f"w{i}" for i in range(50)], np.ones((50, 2), dtype=np.float32))
    path = str(tmp_path / "big.kv")
    kv.save(path, sep_limit=0)  # the array beside it, as gensim does above 10 MB
    sidecar = tmp_path / "big.kv.vectors.npy"
    assert sidecar.is_file()
    first = dxp.load_embeddings("keyed-vectors.v1", path=path)
    np.save(sidecar, np.full((50, 2), 2.0, dtype=np.float32))
    second = dxp.load_embeddings("keyed-vectors.v1", path=path)
    assert second is not first and second.vectors[0, 0] == 2.0


def test_a_file_rewritten_with_the_same_size_and_mtime_is_loaded_again(tmp_path, monkeypatch):
    """Diff review F5: a same-size rewrite within the file system's time resolution kept
    its stamp (size, mtime, inode) and served the old table; the change time is stamped
    too."""
    import os

    path = tmp_path / "vectors.txt"
    calls = []

    def loader(path, vocab_size=None):
        calls.append(path)
        with open(path, encoding="utf-8") as lines:
            rows = [line.split() for line in lines]
        return dxp.EmbeddingTable(
            [r[0] for r in rows], np.array([[float(x) for x in r[1:]] for r in rows])
        )

    register(monkeypatch, "embeddings", "stamped-test.v1", loader)
    path.write_text("a 1 0\nb 0 1\nc 1 1\n", encoding="utf-8")
    first = dxp.load_embeddings("stamped-test.v1", path=str(path))
    stat = path.stat()
    path.write_text("a 2 0\nb 0 2\nc 2 2\n", encoding="utf-8")  # same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # a coarse clock: same mtime
    second = dxp.load_embeddings("stamped-test.v1", path=str(path))
    assert len(calls) == 2 and second.fingerprint != first.fingerprint
