"""What a third-party plugin may and must do (plugin-author review, eighteenth session).

A mechanism states its own name (guarantees record and merge releases under it) and metric,
and returns one vocabulary row per input; a loader's table errors name the loader; a
function both decorated and declared as an entry point is one entry; loaders need not take
``vocab_size``; the doors' shared tables follow a re-registered loader and an edited data
folder.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import re
import sys
import textwrap
import warnings
from pathlib import Path

import catalogue
import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins import registry
from dxp_plugins.doors import DoorSettings
from dxp_plugins.embeddings.shared import load_embeddings_setting
from dxp_plugins.mechanisms.base import Mechanism
from dxp_plugins.mechanisms.madlib import Madlib
from tests.door_fixtures import own_registrations_undone, register


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    return dxp.EmbeddingTable([f"w{i}" for i in range(20)], rng.normal(size=(20, 4)))


# -- mechanisms: name, metric, output ----------------------------------------------------------
def test_a_subclass_of_a_builtin_must_name_itself(table):
    """A Madlib subclass drawing other noise was recorded, stated and merged as 'madlib'."""

    class LooseMadlib(Madlib):
        pass

    with pytest.raises(TypeError, match=r"LooseMadlib must set its own class attribute name"):
        LooseMadlib(table, 5.0)

    class Claiming(Madlib):
        name = "madlib"

    with pytest.raises(TypeError, match=r"'madlib' is a built-in mechanism's name"):
        Claiming(table, 5.0)

    class Named(Madlib):
        name = "loose-madlib"

    named, madlib = Named(table, 5.0), Madlib(table, 5.0)
    named.privatize(["w1"])
    madlib.privatize(["w1"])
    assert named.last_guarantee.mechanism == "loose-madlib"
    assert named.last_guarantee.statement.startswith("loose-madlib")
    with pytest.raises(ValueError, match="different mechanism"):
        dxp.Guarantee.combine([named.last_guarantee, madlib.last_guarantee])


class _Echo(Mechanism):
    """Every word to a fixed function of its row (plumbing only)."""

    name = "echo-test"
    metric = "discrete"
    result = staticmethod(lambda ids: np.maximum(ids, 0))

    def _sample(self, ids, rng, epsilon):
        return self.result(ids)


def test_a_mechanism_without_a_name_or_metric_fails_before_any_spend(table):
    class NoName(Mechanism):
        metric = "discrete"

        def _sample(self, ids, rng, epsilon):
            return np.maximum(ids, 0)

    with pytest.raises(TypeError, match="NoName must set its own class attribute name"):
        NoName(table, 1.0)

    class NoMetric(Mechanism):
        name = "no-metric-test"

        def _sample(self, ids, rng, epsilon):
            return np.maximum(ids, 0)

    ledger = dxp.Accountant()
    mechanism = NoMetric(table, 1.0, accountant=ledger)
    with pytest.raises(TypeError, match="NoMetric must set metric"):
        mechanism.privatize(["w1", "w2"])
    assert ledger.spent == 0 and ledger.releases == 0


@pytest.mark.parametrize(
    ("result", "got"),
    [
        (lambda ids: np.full(len(ids), -1), "ids outside that range"),
        (lambda ids: np.full(len(ids), 20), "ids outside that range"),
        (lambda ids: np.maximum(ids, 0)[:-1], r"shape \(2,\) and dtype int64"),
        (lambda ids: ids + 0.5, "dtype float64"),
        (lambda ids: np.maximum(ids, 0)[:, None], r"shape \(3, 1\)"),
        (lambda ids: list(np.maximum(ids, 0)), "got list"),
    ],
)
def test_a_sample_that_is_not_one_row_per_input_is_refused(table, result, got):
    """A plugin's -1 used to become the last word of the vocabulary, silently; other shapes
    came back from privatize_ids as they were, or failed in numpy's words."""
    mechanism = _Echo(table, 1.0)
    mechanism.result = result
    with pytest.raises(
        TypeError, match=rf"_Echo._sample must return .*of 3 row ids in \[0, 20\).*{got}"
    ):
        mechanism.privatize(["w1", "w2", "w3"])
    with pytest.raises(TypeError, match=r"_Echo\._sample must return"):
        mechanism.privatize_ids(np.array([1, 2, 3]))
    mechanism.result = lambda ids: np.maximum(ids, 0)
    assert mechanism.privatize(["w1", "w2", "w3"]) == ["w1", "w2", "w3"]


# -- registration ------------------------------------------------------------------------------
def test_a_function_both_decorated_and_declared_is_one_entry(monkeypatch, tmp_path):
    """Importing the entry point ran the decorator: a second 'source', and the name was
    refused ('declared by 2 sources') from the second use on."""
    (tmp_path / "decorated_plugin_test.py").write_text(
        textwrap.dedent(
            """
            import numpy as np
            import dxp_plugins as dxp
            from dxp_plugins import registry

            @registry.embeddings.register("decorated-test.v1")
            def load(vocab_size=None):
                '''Two words, decorated and declared.'''
                return dxp.EmbeddingTable(["yes", "no"], np.eye(2), name="decorated-test")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "decorated_plugin_test", raising=False)
    installed = catalogue.AVAILABLE_ENTRY_POINTS
    existing = [entry for group in installed.groups for entry in installed.select(group=group)]
    entry = importlib.metadata.EntryPoint(
        name="decorated-test.v1", value="decorated_plugin_test:load", group="dxp_plugins_embeddings"
    )
    monkeypatch.setattr(
        catalogue, "AVAILABLE_ENTRY_POINTS", importlib.metadata.EntryPoints([*existing, entry])
    )
    with own_registrations_undone():
        for _ in range(3):
            assert dxp.load_embeddings("decorated-test.v1").words == ("yes", "no")
        assert "decorated-test.v1" not in registry.duplicates(registry.embeddings)
        other = importlib.import_module("decorated_plugin_test")
        registry.embeddings.register("decorated-test.v1", func=lambda: other.load())  # another
        with pytest.raises(ValueError, match="declared by 2 sources"):
            dxp.load_embeddings("decorated-test.v1")


# -- loaders -----------------------------------------------------------------------------------
def _ranked(words=("a", "b", "c", "d")):
    rank = np.arange(len(words))[::-1].copy()  # "d" is the most frequent
    return dxp.EmbeddingTable(list(words), np.eye(len(words)), frequency_rank=rank, name="ranked")


def test_a_loader_without_vocab_size_is_cut_by_the_door(monkeypatch):
    """Every door passed vocab_size to the loader: one without that parameter failed at
    the first document with Python's 'unexpected keyword argument'."""
    register(monkeypatch, "embeddings", "ranked-test.v1", lambda: _ranked())
    settings = DoorSettings.create(epsilon=1.0, embeddings="ranked-test.v1", vocab_size=2)
    assert settings.load_embeddings().words == ("c", "d")
    register(monkeypatch, "embeddings", "kwargs-test.v1", lambda **options: _ranked())
    settings = DoorSettings.create(epsilon=1.0, embeddings="kwargs-test.v1", vocab_size=2)
    assert settings.load_embeddings().words == ("c", "d")  # it took vocab_size and ignored it
    register(
        monkeypatch,
        "embeddings",
        "unranked-test.v1",
        lambda: dxp.EmbeddingTable(["a", "b"], np.eye(2)),
    )
    settings = DoorSettings.create(epsilon=1.0, embeddings="unranked-test.v1", vocab_size=1)
    with pytest.raises(ValueError, match="returned 2 rows and no frequency_rank"):
        settings.load_embeddings()
    register(  # takes **options, ignores vocab_size, no rank: refused too (docs review 2)
        monkeypatch,
        "embeddings",
        "unranked-kwargs-test.v1",
        lambda **options: dxp.EmbeddingTable(["a", "b"], np.eye(2)),
    )
    settings = DoorSettings.create(epsilon=1.0, embeddings="unranked-kwargs-test.v1", vocab_size=1)
    with pytest.raises(ValueError, match="returned 2 rows and no frequency_rank"):
        settings.load_embeddings()


def test_a_plugin_loaders_own_errors_are_left_as_raised(monkeypatch):
    """A TypeError inside a plugin loader was reworded into the library's own ValueError,
    which the CLI prints in full (its message may quote what the loader read)."""

    def failing(vocab_size=None):
        raise TypeError("zq7 read from the file")

    failing.__module__ = "some_plugin"
    register(monkeypatch, "embeddings", "failing-test.v1", failing)
    with pytest.raises(TypeError, match="zq7") as error:
        load_embeddings_setting("failing-test.v1", {}, None)
    assert not str(error.value).startswith("embeddings")


def test_table_errors_name_the_loader(monkeypatch):
    register(
        monkeypatch,
        "embeddings",
        "dup-test.v1",
        lambda: dxp.EmbeddingTable(["a", "b", "a"], np.eye(3)),
    )
    register(
        monkeypatch,
        "embeddings",
        "nan-test.v1",
        lambda: dxp.EmbeddingTable(["a", "b"], np.array([[0.0, np.nan], [1.0, 0.0]])),
    )
    with pytest.raises(
        dxp.InvalidTableError,
        match=r"embeddings 'dup-test.v1': words must be unique \(row 2 repeats row 0\)",
    ):
        dxp.load_embeddings("dup-test.v1")
    with pytest.raises(
        dxp.InvalidTableError, match=r"embeddings 'nan-test.v1': vectors must be finite"
    ):
        load_embeddings_setting("nan-test.v1", {}, None)


# -- the doors' shared tables ------------------------------------------------------------------
def test_a_re_registered_loader_is_a_new_shared_table(monkeypatch):
    """The doors' cache kept serving the first table of a name after the loader was
    registered again (a notebook cell run twice), while load_embeddings loaded the new one."""
    register(monkeypatch, "embeddings", "notebook-test.v1", lambda: _ranked())
    first = load_embeddings_setting("notebook-test.v1", {}, None)
    assert load_embeddings_setting("notebook-test.v1", {}, None) is first  # still shared
    register(monkeypatch, "embeddings", "notebook-test.v1", lambda: _ranked("wxyz"))
    assert load_embeddings_setting("notebook-test.v1", {}, None).words == tuple("wxyz")


def test_an_edited_data_folder_is_a_new_shared_table(monkeypatch, tmp_path):
    """Files directly in a directory argument are stamped like a file argument."""

    def load(data_dir: str):
        words = (tmp_path / "data" / "words.txt").read_text().split()
        return dxp.EmbeddingTable(words, np.eye(len(words)))

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "words.txt").write_text("a b c")
    register(monkeypatch, "embeddings", "folder-test.v1", load)
    params = {"data_dir": str(tmp_path / "data")}
    first = load_embeddings_setting("folder-test.v1", params, None)
    assert load_embeddings_setting("folder-test.v1", params, None) is first
    (tmp_path / "data" / "words.txt").write_text("a b c d e")
    assert len(load_embeddings_setting("folder-test.v1", params, None)) == 5


def test_a_plugin_that_cannot_load_fails_when_a_door_is_configured(monkeypatch):
    """It failed only at the first document (an unknown name failed at once)."""
    import spacy

    installed = catalogue.AVAILABLE_ENTRY_POINTS
    existing = [entry for group in installed.groups for entry in installed.select(group=group)]
    broken = [
        importlib.metadata.EntryPoint(
            name="broken-test.v1", value="no_such_module_zq7:load", group=group
        )
        for group in ("dxp_plugins_embeddings", "dxp_plugins_mechanisms")
    ]
    monkeypatch.setattr(
        catalogue, "AVAILABLE_ENTRY_POINTS", importlib.metadata.EntryPoints([*existing, *broken])
    )
    with pytest.raises(dxp.PluginLoadError, match=r"embedding 'broken-test\.v1' failed to load"):
        DoorSettings.create(epsilon=1.0, embeddings="broken-test.v1")
    with pytest.raises(dxp.PluginLoadError, match=r"mechanism 'broken-test\.v1' failed to load"):
        spacy.blank("en").add_pipe(
            "dxp_privatizer", config={"epsilon": 1.0, "mechanism": "broken-test.v1"}
        )


def test_the_load_locks_do_not_keep_old_loaders_alive(monkeypatch):
    """Diff review F5: the per-setting lock table (kept for the process) held each
    re-registered loader, with what it closed over."""
    import gc

    from dxp_plugins.embeddings import shared

    class Loader:
        def __call__(self):
            return _ranked()

    old = Loader()
    gone = __import__("weakref").ref(old)
    register(monkeypatch, "embeddings", "locks-test.v1", old)
    load_embeddings_setting("locks-test.v1", {}, None)
    # not monkeypatch: it would keep the replaced loader to restore it
    catalogue.REGISTRY[("dxp_plugins", "embeddings", "locks-test.v1")] = lambda: _ranked("wxyz")
    del old
    shared._LATEST_TABLE.clear()  # the latest table may keep it (one): the locks must not
    gc.collect()
    assert gone() is None


class _Unnamed(Madlib):
    """A subclass written before every class had to name itself (pickled then)."""


def test_a_pickled_mechanism_of_an_unnamed_subclass_is_refused_when_loaded(table):
    import pickle

    built = Madlib(table, 5.0)
    old = Madlib.__new__(_Unnamed)
    old.__dict__.update(built.__dict__)  # as unpickling a pickle made before the check does
    with pytest.raises(TypeError, match="_Unnamed must set its own class attribute name"):
        pickle.loads(pickle.dumps(old))
    assert pickle.loads(pickle.dumps(built)).name == "madlib"


def test_the_library_errors_survive_a_pickle():
    """Raised in a worker process they are pickled back (diff review F10): the keyword
    fields made them fail to unpickle, or lose their positions."""
    import pickle

    errors = [
        dxp.PluginLoadError("mechanism 'x' failed to load: ...", RuntimeError("gpu")),
        dxp.TextTooLongError(document=3, length=100, limit=40),
        dxp.OOVError("out-of-vocabulary token in document 1 (token 2)", document=1, token=2),
        dxp.InvalidTableError("embeddings 'x': words must be unique"),
    ]
    for error in errors:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert vars(copy).keys() == vars(error).keys()
        for key, value in vars(error).items():
            assert repr(getattr(copy, key)) == repr(value)


def test_an_entry_points_target_is_read_without_running_module_code(monkeypatch):
    """A plugin module's PEP 562 __getattr__ may import or raise; a target with extras
    ('module:func [extra]') is the function it names."""
    import types

    from dxp_plugins.registry import _imported_target

    module = types.ModuleType("lazy_plugin_test")

    def refuse(name):
        raise RuntimeError("would import a GPU stack")

    def load():
        return None

    module.__getattr__ = refuse  # type: ignore[attr-defined]
    module.load = load  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lazy_plugin_test", module)
    assert _imported_target("lazy_plugin_test:load") is load
    assert _imported_target("lazy_plugin_test:load [gpu]") is load
    assert _imported_target("lazy_plugin_test:missing") is None
    assert _imported_target("not_imported_plugin_test:load") is None


def test_a_saved_pipeline_follows_a_plugins_moved_data_folder(monkeypatch, tmp_path):
    """Only an argument named 'path' could change when a saved pipeline was loaded (plugin
    review F10): a plugin's data_dir was refused as changed settings although the saved
    fingerprint, checked on the first document, proves the table is the same."""
    import shutil

    import spacy

    def load(data_dir: str):
        words = (Path(data_dir) / "words.txt").read_text().split()
        return dxp.EmbeddingTable(words, np.eye(len(words)), name="folder")

    register(monkeypatch, "embeddings", "moving-test.v1", load)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "words.txt").write_text("north south east west")
    config = {
        "epsilon": 2.0,
        "embeddings": "moving-test.v1",
        "embeddings_params": {"data_dir": str(tmp_path / "a")},
    }
    nlp = spacy.blank("en")
    nlp.add_pipe("dxp_privatizer", config=config)
    nlp.to_disk(tmp_path / "pipeline")
    shutil.move(tmp_path / "a", tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "words.txt").write_text("north south east")

    def reload(folder: str):
        key = "components.dxp_privatizer.embeddings_params.data_dir"
        return spacy.load(tmp_path / "pipeline", config={key: str(tmp_path / folder)})

    assert reload("b")("north east")._.dxp_guarantee["vocab_size"] == 4
    with pytest.raises(ValueError, match="differ from those this pipeline was saved with"):
        reload("c")("north east")
    with pytest.raises(ValueError, match="settings differ"):  # not a folder: still a change
        reload("missing")


# -- the base settings a mechanism is given are the ones it uses (review 28, F1 and F2) ------
class _Forgetful(_Echo):
    """Takes ``**kwargs`` and drops them: the user's accountant and seed never arrive."""

    name = "forgetful-test"

    def __init__(self, embeddings, epsilon, *, smoothing=1.0, **kwargs):
        super().__init__(embeddings, epsilon)


def _tenfold(embeddings, epsilon, **kwargs):
    """A factory building another epsilon than the door states."""
    return _Echo(embeddings, epsilon * 10, **kwargs)


@pytest.mark.parametrize(
    ("factory", "dropped", "seeded"),
    [
        (_Forgetful, "accountant (it charges another ledger)", "random_state (given 7, holds"),
        (_tenfold, "epsilon (given 1.0, holds 10.0)", "epsilon (given 1.0, holds 10.0)"),
    ],
)
def test_a_mechanism_that_drops_its_base_settings_is_refused_before_any_release(
    monkeypatch, table, factory, dropped, seeded
):
    """Contributor review 28 F1: such a plugin released past the user's cap (11 spent, the
    user's capped ledger reading 0) and drew secure noise for a seeded door; now every
    door's build refuses it, naming what it did not keep."""
    from dxp_plugins.estimators import TextPrivatizer

    register(monkeypatch, "mechanisms", "dropping", factory)
    capped = dxp.Accountant(cap=5.0)
    door = TextPrivatizer(
        mechanism="dropping", embeddings=table, epsilon=1.0, accountant=capped, random_state=3
    )
    refused = pytest.raises(TypeError, match=re.escape(f"did not keep {dropped}"))
    with refused, pytest.warns(dxp.SeededRandomnessWarning):
        door.fit_transform(["w1 w2 w3"])
    assert capped.spent == 0 and capped.releases == 0
    with pytest.raises(TypeError, match=re.escape(seeded)), warnings.catch_warnings():
        warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)  # when it got the seed
        dxp.make_mechanism("dropping", table, epsilon=1.0, random_state=7)


def test_the_record_names_what_was_charged_and_drawn_whatever_the_hook_says(table):
    """Contributor review 28 F2: a guarantee hook delegating to a wrapped Madlib recorded
    an identity mechanism's seeded pass-through releases as secure Madlib with oov 'unk'.
    Only what the hook may state (BRR: its codes' fingerprint) is taken from it."""

    class Wrapper(_Echo):
        name = "wrapper-test"

        def guarantee(self, tokens_privatized, tokens_passed_through=0):
            inner = Madlib(self.embeddings, 99.0)
            record = inner.guarantee(tokens_privatized, tokens_passed_through)
            return dataclasses.replace(record, embeddings="stated-by-the-hook")

    with pytest.warns(dxp.PrivacyWarning):  # seeded, and passthrough
        mechanism = Wrapper(table, 2.0, random_state=9, oov="passthrough")
    mechanism.privatize(["w1", "unknown-word"])
    record = mechanism.last_guarantee
    assert (record.mechanism, record.epsilon, record.metric) == ("wrapper-test", 2.0, "discrete")
    assert (record.oov_policy, record.rng) == ("passthrough", "seeded")
    assert record.embeddings == "stated-by-the-hook"
    released = dxp.privatize_text("w1 w2", mechanism).guarantee
    assert (released.mechanism, released.rng) == ("wrapper-test", "seeded")


def test_a_hook_cannot_state_a_mask_or_a_vocabulary_the_release_did_not_have(table):
    """Plugin review 29 F4: a hook returning ``mask="identifiers"`` and another vocabulary
    size put "Mask 'identifiers' replaced 0 runs ..." into the statement of a release no
    mask ran on (its numbers privatized as words), and a 10**6-word vocabulary."""

    class Claims(_Echo):
        name = "claims-test"

        def guarantee(self, tokens_privatized, tokens_passed_through=0):
            record = super().guarantee(tokens_privatized, tokens_passed_through)
            return dataclasses.replace(
                record, vocab_size=10**6, mask="identifiers", selection="nouns", releases=7
            )

    with pytest.warns(dxp.SeededRandomnessWarning):
        mechanism = Claims(table, 2.0, random_state=9)
    for record in (
        dxp.privatize_text("w1 555 w2", mechanism).guarantee,
        mechanism.last_guarantee,
    ):
        assert record.mask is None and "Mask" not in record.statement
        assert (record.vocab_size, record.releases) == (len(table), 1)
        assert record.selection == Madlib(table, 2.0).guarantee(0).selection


def test_a_constructor_without_the_base_keywords_is_refused_when_a_door_is_configured(
    monkeypatch, table
):
    """Contributor review 28 F8: it failed only at the first Doc, after ``add_pipe`` (and
    a saved pipeline) had succeeded with a component that could never run."""
    import spacy

    def no_keywords(embeddings, epsilon):
        return _Echo(embeddings, epsilon)

    register(monkeypatch, "mechanisms", "no-keywords", no_keywords)
    nlp = spacy.blank("en")
    config = {"mechanism": "no-keywords", "epsilon": 1.0, "embeddings": "glove-6b-50d"}
    expected = r"unknown argument\(s\) \['accountant', 'oov', 'random_state'\]"
    with pytest.raises(TypeError, match=expected):
        nlp.add_pipe("dxp_privatizer", config=config)


def test_a_discrete_metric_is_stated_as_a_distance_between_words(table):
    """Contributor review 28 F13: randomized response over words read "discrete distance
    between word embeddings", which no embedding gives it."""
    mechanism = _Echo(table, 2.0)
    mechanism.privatize(["w1"])
    statement = mechanism.last_guarantee.statement
    assert "d = discrete distance between words (1 for any two different words)" in statement


class _OwnPolicy(_Echo):
    """Passes everything on but sets its own OOV policy."""

    name = "own-policy-test"

    def __init__(self, embeddings, epsilon, *, oov="unk", **kwargs):
        super().__init__(embeddings, epsilon, oov="raise", **kwargs)


class _OwnSource(_Echo):
    """Re-seeds from the door's seed: a new RandomSource, which would replay the stream."""

    name = "own-source-test"

    def __init__(self, embeddings, epsilon, *, random_state=None, **kwargs):
        seed = getattr(random_state, "seed", random_state)
        super().__init__(embeddings, epsilon, random_state=seed, **kwargs)


@pytest.mark.parametrize(
    ("factory", "params", "dropped"),
    [
        (_OwnPolicy, {"oov": "unk"}, "oov (given 'unk', holds 'raise')"),
        (_Forgetful, {"random_state": np.int64(5)}, "random_state (given 5, holds None)"),
    ],
)
def test_each_base_setting_is_checked(monkeypatch, table, factory, params, dropped):
    """Diff review 28 (mutants P1, N1): a dropped oov, or a seed given as a numpy int."""
    register(monkeypatch, "mechanisms", "checked", factory)
    with pytest.raises(TypeError, match=re.escape(f"did not keep {dropped}")):
        dxp.make_mechanism("checked", table, epsilon=1.0, **params)


def test_a_door_source_replaced_by_a_new_one_is_refused(monkeypatch, table):
    """Diff review 28 (mutant P3): the doors hand a RandomSource; a mechanism that makes
    its own from the same seed would replay the door's stream in every copy."""
    from dxp_plugins._random import RandomSource

    register(monkeypatch, "mechanisms", "own-source", _OwnSource)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dxp.SeededRandomnessWarning)
        source = RandomSource(3)
        with pytest.raises(TypeError, match=re.escape("random_state (it draws from another")):
            dxp.make_mechanism("own-source", table, epsilon=1.0, random_state=source)


def test_the_record_of_nothing_released_is_forced_too(table):
    """Diff review 28 (mutant P4): a run that held no document records what the mechanism
    would have charged and drawn by, not what its hook says."""

    class Liar(_Echo):
        name = "liar-test"

        def guarantee(self, tokens_privatized, tokens_passed_through=0):
            record = Madlib(self.embeddings, 99.0).guarantee(tokens_privatized)
            return dataclasses.replace(record, rng="secure")

    with pytest.warns(dxp.SeededRandomnessWarning):
        mechanism = Liar(table, 2.0, random_state=4)
    settings = DoorSettings.create(mechanism="madlib", embeddings=table, epsilon=2.0)
    record = settings.nothing_released(mechanism)
    assert (record.mechanism, record.epsilon, record.metric, record.rng) == (
        "liar-test",
        2.0,
        "discrete",
        "seeded",
    )
    assert record.releases == 0
