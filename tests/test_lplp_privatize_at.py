"""LPLPTransformer(privatize_at="fit"): train on private counts, score on clean ones.

Review F3: in ``cross_val_score``/``GridSearchCV`` over a Pipeline, every validation fold went
through ``transform`` and got fresh noise (and a charge), so the models were compared on
noisy held-out counts and the search spent twice the budget. ``privatize_at="fit"`` releases
in ``fit_transform`` only, as ``TextPrivatizer``'s does (Lee corpus, public GloVe words)."""

from __future__ import annotations

import pickle
from typing import Any, ClassVar

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline

import dxp_plugins as dxp
from dxp_plugins.estimators.lplp import LPLPTransformer
from tests.test_lplp_estimator import counts, lee_texts, small_counts, vocabulary

#: The Lee corpus fixtures of test_lplp_estimator, used here as they are (exported, so the
#: linter sees them used: pytest finds fixtures by module attribute).
__all__ = ["counts", "lee_texts", "vocabulary"]


CONTAINERS = {
    "csr_matrix": sp.csr_matrix,
    "csc_matrix": sp.csc_matrix,
    "csr_array": sp.csr_array,
    "coo_array": sp.coo_array,
    "dense": lambda matrix: matrix.toarray(),
}


@pytest.mark.parametrize("container", CONTAINERS.values(), ids=CONTAINERS.keys())
def test_transform_returns_the_counts_unchanged_in_the_released_container(counts, container):
    """The container and dtype a release would have (int64; CSR matrix, csr_array, ndarray),
    the counts themselves, no charge, and no guarantee left standing for them."""
    X = container(counts[:30])
    ledger = dxp.Accountant()
    step = LPLPTransformer(epsilon=2.0, n_groups=50, privatize_at="fit", accountant=ledger)
    private = step.fit_transform(X)  # what Pipeline.fit calls: released and charged
    assert step.last_guarantee_ is not None and (ledger.spent, ledger.releases) == (2.0, 1)
    clean = step.transform(X)
    assert type(clean) is type(private) and clean.dtype == private.dtype == np.int64
    np.testing.assert_array_equal(sp.csr_matrix(clean).toarray(), counts[:30].toarray())
    assert step.last_guarantee_ is None  # raw counts out: no guarantee describes them
    assert (ledger.spent, ledger.releases) == (2.0, 1)


def test_transform_checks_the_counts_as_a_release_does(counts):
    ledger = dxp.Accountant()
    with pytest.raises(NotFittedError):
        LPLPTransformer(privatize_at="fit").transform(counts)
    step = LPLPTransformer(n_groups=50, privatize_at="fit", accountant=ledger)
    step.fit_transform(counts[:10])
    for bad, match in [
        (counts[:3, :-1], "features"),
        (-counts[:3], "non-negative"),
        (counts[:3].toarray() + 0.5, "integers"),
    ]:
        with pytest.raises(ValueError, match=match):
            step.transform(bad)
    assert ledger.releases == 1


def test_a_transform_after_fit_alone_warns_that_nothing_was_released(counts):
    """fit releases nothing, so fit(X).transform(X) is X itself, where fit_transform(X)
    releases it: the same warning as TextPrivatizer's, naming this estimator."""
    step = LPLPTransformer(n_groups=50, privatize_at="fit").fit(counts)
    with pytest.warns(dxp.PrivacyWarning, match=r"LPLPTransformer was fitted by fit\(\)"):
        assert (step.transform(counts[:5]) != counts[:5]).nnz == 0
    assert step.accountant_.spent == 0
    step.fit_transform(counts[:5])
    step.transform(counts[:5])  # warnings are errors: released at fit, so no warning now
    with pytest.raises(ValueError, match="privatize_at must be one of 'always', 'fit', got"):
        LPLPTransformer(privatize_at="test").fit(counts)


@pytest.mark.parametrize(("fitted", "changed"), [("always", "fit"), ("fit", "always")])
def test_privatize_at_changed_since_fit_is_refused(fitted, changed):
    step = LPLPTransformer(n_groups=4, privatize_at=fitted)
    step.fit_transform(small_counts())
    spent = step.accountant_.spent
    step.set_params(privatize_at=changed)
    with pytest.raises(ValueError, match="privatize_at changed since fit"):
        step.transform(small_counts())
    assert step.accountant_.spent == spent


class RecordingLDA(LatentDirichletAllocation):
    """LDA that keeps what ``score`` is given: the validation fold reaching the last step."""

    seen: ClassVar[list[Any]] = []

    def score(self, X: Any, y: Any = None) -> float:
        RecordingLDA.seen.append(X.copy())
        return float(super().score(X, y))


def lda_pipeline(vocabulary: list[str], privatize_at: str, ledger: dxp.Accountant) -> Any:
    return make_pipeline(
        CountVectorizer(vocabulary=vocabulary),
        LPLPTransformer(
            epsilon=0.5,
            n_groups=300,
            vocabulary=vocabulary,
            privatize_at=privatize_at,
            accountant=ledger,
            random_state=0,
        ),
        RecordingLDA(n_components=3, max_iter=3, random_state=0),
    )


@pytest.mark.parametrize("privatize_at", ["fit", "always"])
def test_cross_validation_releases_the_training_folds_only(lee_texts, vocabulary, privatize_at):
    """With "fit", k folds charge k releases (the fits) and the LDA step scores the clean
    held-out counts; with "always" each validation fold is released too: 2k, all noisy."""
    ledger, folds = dxp.Accountant(), KFold(3)
    RecordingLDA.seen.clear()
    pipeline = lda_pipeline(vocabulary, privatize_at, ledger)
    scores = cross_val_score(pipeline, lee_texts, cv=folds)
    assert np.isfinite(scores).all()
    releases = 3 if privatize_at == "fit" else 6
    assert ledger.releases == releases and ledger.spent == pytest.approx(0.5 * releases)
    clean = CountVectorizer(vocabulary=vocabulary).transform(lee_texts)
    held_out = [clean[test] for _, test in folds.split(lee_texts)]
    assert len(RecordingLDA.seen) == 3
    same = [(seen != fold).nnz == 0 for seen, fold in zip(RecordingLDA.seen, held_out, strict=True)]
    assert all(same) if privatize_at == "fit" else not any(same)


def test_a_grid_search_charges_each_fit_once(lee_texts, vocabulary):
    """2 candidates x 2 folds and the refit: 5 releases, where "always" charges 9."""
    ledger = dxp.Accountant()
    search = GridSearchCV(
        lda_pipeline(vocabulary, "fit", ledger),
        {"recordinglda__n_components": [2, 3]},
        cv=2,
    )
    search.fit(lee_texts)
    assert ledger.releases == 5 and ledger.spent == pytest.approx(2.5)
    assert search.best_estimator_[1].last_guarantee_.epsilon == 0.5  # the refit's release


def test_a_pickle_keeps_the_setting_and_whether_fit_released(counts):
    released = LPLPTransformer(n_groups=50, privatize_at="fit")
    released.fit_transform(counts[:5])
    restored = pickle.loads(pickle.dumps(released))
    assert restored.get_params()["privatize_at"] == "fit"
    assert (restored.transform(counts[:5]) != counts[:5]).nnz == 0  # no warning
    assert restored.last_guarantee_ is None
    unreleased = pickle.loads(pickle.dumps(LPLPTransformer(privatize_at="fit").fit(counts)))
    with pytest.warns(dxp.PrivacyWarning, match="privatizes nothing"):
        unreleased.transform(counts[:5])


def test_a_pickle_made_before_privatize_at_loads_as_always(counts):
    """Earlier pickles lack the parameter: they released on every transform, and load so
    (defaulting it to None, as the other added parameters, made a clone refuse to fit)."""
    fitted = LPLPTransformer(epsilon=1.0, n_groups=10).fit(counts)
    state = fitted.__getstate__()
    del state["privatize_at"], state["_fitted_params"]["privatize_at"], state["_released_at_fit"]
    old = LPLPTransformer.__new__(LPLPTransformer)
    old.__setstate__(state)
    assert old.get_params()["privatize_at"] == "always"
    assert (old.transform(counts[:3]) != counts[:3]).nnz > 0
    assert old.last_guarantee_.releases == 1 and old.accountant_.releases == 1
    assert clone(old).fit(counts).privatize_at == "always"
