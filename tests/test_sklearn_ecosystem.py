"""The sklearn ecosystem review (twenty-ninth session): the transformers inside scikit-learn's
ensembles, meta-estimators and parallel workers."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.ensemble import BaggingClassifier, BaggingRegressor
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import dxp_plugins as dxp
from dxp_plugins import LPLPTransformer, TextPrivatizer

TEXTS = ["the hockey team won", "the team lost the final", "a storm reached the coast"] * 4
LABELS = [0, 1, 0] * 4
COLUMN = np.asarray(TEXTS, dtype=object)[:, None]  # ensembles take 2-D input


@pytest.mark.parametrize("ensemble", [BaggingClassifier, BaggingRegressor])
@pytest.mark.parametrize("seed", [None, 0])
def test_an_ensemble_cannot_seed_a_privatizer_inside_it(glove_5k, ensemble, seed):
    """Review F1: BaggingClassifier and AdaBoost set every `*random_state` of their
    estimators to an int drawn from their own random_state, or from numpy's global state
    when None: a secure TextPrivatizer inside became seeded (np.random.seed(42) gave the
    same private text on every run). Refused before anything is charged."""
    ledger = dxp.Accountant()
    privatizer = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, accountant=ledger)
    steps = make_pipeline(privatizer, CountVectorizer(), LogisticRegression())
    model = ensemble(steps, n_estimators=2, random_state=seed)
    with pytest.raises(ValueError, match="Put the TextPrivatizer before the ensemble"):
        model.fit(COLUMN, LABELS)
    assert (ledger.spent, ledger.releases) == (0, 0)


def test_the_seeder_every_ensemble_calls_is_refused(glove_5k):
    """AdaBoost seeds its estimators through the same function (it needs sample_weight,
    which a Pipeline does not take without metadata routing, so it is called directly)."""
    from sklearn.ensemble._base import _set_random_states

    steps = make_pipeline(TextPrivatizer(epsilon=3.0, embeddings=glove_5k), CountVectorizer())
    with pytest.raises(ValueError, match="seeds every random_state of its estimators"):
        _set_random_states(steps, 0)
    assert steps[0].random_state is None
    alone = LPLPTransformer(epsilon=1.0)  # seeded directly, not through a Pipeline
    with pytest.raises(ValueError, match="seeds every random_state of its estimators"):
        _set_random_states(alone, 0)
    assert alone.random_state is None


def test_lplp_refuses_an_ensembles_seed_too():
    counts = sp.csr_matrix(np.tile([[3, 0, 1], [0, 2, 2]], (6, 1)))
    ledger = dxp.Accountant()
    steps = make_pipeline(
        LPLPTransformer(epsilon=1.0, accountant=ledger), LatentDirichletAllocation(2)
    )
    model = BaggingClassifier(make_pipeline(steps, LogisticRegression()), n_estimators=2)
    with pytest.raises(ValueError, match="Put the LPLPTransformer before the ensemble"):
        model.fit(counts, [0, 1] * 6)
    assert ledger.releases == 0


def test_the_privatizer_before_the_ensemble_releases_once(glove_5k):
    ledger = dxp.Accountant()
    model = make_pipeline(
        TextPrivatizer(epsilon=3.0, embeddings=glove_5k, accountant=ledger),
        CountVectorizer(),
        BaggingClassifier(LogisticRegression(), n_estimators=3, random_state=0),
    )
    model.fit(TEXTS, LABELS)
    assert ledger.releases == 1 and model[0].last_guarantee_.rng == "secure"


def test_a_seed_set_by_hand_is_still_a_seed(glove_5k):
    privatizer = TextPrivatizer(epsilon=3.0, embeddings=glove_5k).set_params(random_state=5)
    assert privatizer.random_state == 5
    steps = make_pipeline(privatizer, CountVectorizer())
    assert steps.set_params(textprivatizer__random_state=None)[0].random_state is None


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"a": "the hockey team"}, "not a dict"),
        ({"the hockey team", "a storm"}, "not a set"),
        (frozenset({"the hockey team"}), "not a frozenset"),
        ({"the hockey team": 1}.keys(), "not a dict_keys"),
        (sp.csr_matrix(np.ones((3, 1))), "sparse matrix"),
        (sp.csr_array(np.ones((3, 4))), "sparse matrix"),
    ],
)
def test_inputs_that_are_not_a_sequence_of_texts_are_refused_before_a_charge(
    glove_5k, given, message
):
    """Review F6: a dict privatized its keys (its values dropped, 5 charged), a set came
    back in no fixed order, a sparse matrix raised a bare IndexError."""
    ledger = dxp.Accountant()
    privatizer = TextPrivatizer(epsilon=3.0, embeddings=glove_5k, accountant=ledger)
    with pytest.raises(TypeError, match=message):
        privatizer.fit_transform(given)
    assert ledger.releases == 0
