"""Privacy ratio (BRR §5, Appendix A) and the float64 metrics it and TEM rely on."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist

import dxp_plugins as dxp
from dxp_plugins import calibration
from dxp_plugins.calibration.pairwise import _sample_pairs, _z
from dxp_plugins.calibration.spaces import _space
from dxp_plugins.distances import get_metric
from dxp_plugins.embeddings.binary import BinaryCodes, hamming
from tests.fixtures import one_faiss_thread  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_faiss_thread")


@pytest.fixture(scope="module")
def glove_2k(glove_5k) -> dxp.EmbeddingTable:
    return glove_5k.most_frequent(2000)


# -- metrics ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["euclidean", "manhattan", "chebyshev", "angular"])
def test_metrics_match_scipy(glove_2k, name):
    metric = get_metric(name)
    vectors = glove_2k.vectors.astype(np.float64)
    queries = np.r_[vectors[:5], glove_2k.unk_vector()[None, :]]
    scipy_name = {"manhattan": "cityblock", "angular": "cosine"}.get(name, name)
    expected = cdist(queries, vectors, scipy_name)
    if name == "angular":
        expected = np.arccos(np.clip(1.0 - expected, -1.0, 1.0))
    np.testing.assert_allclose(metric.to_table(queries, glove_2k), expected, rtol=1e-7, atol=1e-7)
    np.testing.assert_allclose(
        metric.exact_to_table(queries[0], glove_2k), expected[0], rtol=1e-7, atol=1e-7
    )
    np.testing.assert_allclose(
        metric.pairs(queries, vectors[:6]), expected[np.arange(6), np.arange(6)], atol=1e-7
    )
    assert metric.to_table(vectors[:3], glove_2k)[np.arange(3), np.arange(3)].max() == 0.0


# -- P_d ----------------------------------------------------------------------------------------
def test_small_vocabulary_is_exact(glove_5k):
    small = glove_5k.most_frequent(300)
    summary = calibration.distance_summary(small)
    exact = pdist(small.vectors.astype(np.float64))
    assert summary.average_exact and summary.maximum_exact
    assert summary.average == pytest.approx(exact.mean(), rel=1e-12)
    assert summary.average_interval == (summary.average, summary.average)
    assert summary.maximum == pytest.approx(exact.max(), rel=1e-12)
    assert summary.pairs == len(exact) and summary.metric == "euclidean"


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_sampled_average_and_exact_maximum(glove_2k, metric):
    summary = calibration.distance_summary(glove_2k, metric=metric, n_pairs=20_000, random_state=0)
    scipy_name = "cityblock" if metric == "manhattan" else metric
    exact = pdist(glove_2k.vectors.astype(np.float64), scipy_name)
    low, high = summary.average_interval
    assert not summary.average_exact and low < exact.mean() < high
    assert summary.maximum_exact and summary.maximum == pytest.approx(exact.max(), rel=1e-12)


def test_maximum_bracket_under_a_budget(glove_2k):
    summary = calibration.distance_summary(glove_2k, n_pairs=1000, max_work=0, random_state=0)
    true_max = pdist(glove_2k.vectors.astype(np.float64)).max()
    assert summary.maximum <= true_max + 1e-12 <= summary.maximum_upper + 2e-12


def test_hamming_space_uses_the_complement_trick():
    rng = np.random.default_rng(3)
    codes = BinaryCodes(rng.random((300, 20)) < 0.5)
    summary = calibration.distance_summary(codes)
    distances = hamming(codes.packed, codes.packed)
    upper = distances[np.triu_indices(300, k=1)]
    assert summary.metric == "hamming"
    assert summary.average == pytest.approx(upper.mean())
    assert summary.maximum == upper.max() and summary.maximum_exact


def test_mechanisms_bring_their_metric(glove_2k):
    tem = dxp.TEM(glove_2k, epsilon=1.0, metric="angular", gamma=1.0)
    summary = calibration.distance_summary(tem, n_pairs=2000, max_work=0, random_state=0)
    assert summary.metric == "angular" and summary.maximum_upper <= math.pi
    with pytest.raises(ValueError, match="own metric"):
        calibration.distance_summary(tem, metric="euclidean")
    with pytest.raises(TypeError):
        calibration.distance_summary([1, 2, 3])


# -- the ratio and the equivalent epsilon ------------------------------------------------
def test_privacy_ratio_madlib_vs_brr(glove_2k):
    madlib = dxp.Madlib(glove_2k, epsilon=10.0)
    brr = dxp.BRR(glove_2k, epsilon=1.0)
    ratio = calibration.privacy_ratio(madlib, brr, n_pairs=20_000, random_state=1)
    assert ratio.paired and ratio.a.metric == "euclidean" and ratio.b.metric == "hamming"
    assert ratio.average == pytest.approx(ratio.a.average / ratio.b.average)
    low, high = ratio.average_interval
    assert low < ratio.average < high and high - low < 0.05 * ratio.average
    # the exact average ratio lies in the interval
    vectors = glove_2k.vectors.astype(np.float64)
    exact_a = pdist(vectors).mean()
    bits = brr.codes.bits()
    exact_b = pdist(bits, "hamming").mean() * bits.shape[1]
    assert low < exact_a / exact_b < high
    assert ratio.maximum_interval[0] <= ratio.maximum <= ratio.maximum_interval[1]
    assert ratio.equivalent_epsilon(10.0) == pytest.approx(10.0 * ratio.average)
    assert calibration.equivalent_epsilon(10.0, ratio, statistic="maximum") == pytest.approx(
        10.0 * ratio.maximum
    )


def test_conservative_equivalent_epsilon_uses_the_low_end_of_the_interval(glove_2k):
    madlib, brr = dxp.Madlib(glove_2k, epsilon=10.0), dxp.BRR(glove_2k, epsilon=1.0)
    ratio = calibration.privacy_ratio(madlib, brr, n_pairs=1000, max_work=0, random_state=1)
    low = ratio.average_interval[0]
    assert low < ratio.average
    assert ratio.equivalent_epsilon(10.0, conservative=True) == pytest.approx(10.0 * low)
    # a bracketed maximum: the low end of the bracket, and no warning (nothing is hidden)
    assert not ratio.a.maximum_exact
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value = calibration.equivalent_epsilon(10.0, ratio, statistic="maximum", conservative=True)
    assert value == pytest.approx(10.0 * ratio.maximum_interval[0])
    assert value <= 10.0 * ratio.maximum
    with pytest.raises(ValueError, match="needs a PrivacyRatio"):
        calibration.equivalent_epsilon(10.0, 0.5, conservative=True)
    with pytest.raises(TypeError, match="True or False"):
        calibration.equivalent_epsilon(10.0, ratio, conservative="yes")
    wide = dataclasses.replace(ratio, average_interval=(-0.1, 2 * ratio.average))
    with pytest.raises(ValueError, match="sample more pairs"):
        wide.equivalent_epsilon(10.0, conservative=True)


def test_a_bracketed_maximum_warns_when_it_converts_epsilon(glove_2k):
    madlib, brr = dxp.Madlib(glove_2k, epsilon=10.0), dxp.BRR(glove_2k, epsilon=1.0)
    ratio = calibration.privacy_ratio(madlib, brr, n_pairs=1000, max_work=0, random_state=1)
    assert not ratio.a.maximum_exact
    with pytest.warns(RuntimeWarning, match="bracketed"):
        calibration.equivalent_epsilon(10.0, ratio, statistic="maximum")
    calibration.equivalent_epsilon(10.0, ratio)  # the average is unaffected: no warning


def test_one_metric_on_one_table_warns_that_the_ratio_is_one(glove_2k):
    """Madlib and TEM on one table: R = 1, so 'TEM's epsilon matching Madlib's' was Madlib's
    own, silently, though the two behave very differently at it (review 14, F5)."""
    madlib, tem = dxp.Madlib(glove_2k, 5.0), dxp.TEM(glove_2k, 5.0)
    with pytest.warns(UserWarning, match="R is 1 .* calibrate each by plausible deniability"):
        ratio = calibration.privacy_ratio(madlib, tem, n_pairs=2000, random_state=0)
    assert ratio.paired and ratio.average == pytest.approx(1.0, rel=1e-9)
    # Another metric on the same table, or BRR's codes of it, are what the ratio is for.
    manhattan = dxp.TEM(glove_2k, 5.0, metric="manhattan")
    calibration.privacy_ratio(madlib, manhattan, n_pairs=2000, random_state=0)
    calibration.privacy_ratio(madlib, dxp.BRR(glove_2k, 1.0), n_pairs=2000, random_state=0)


def test_unpaired_spaces(glove_5k, glove_2k):
    ratio = calibration.privacy_ratio(
        glove_5k.most_frequent(500), glove_2k, metric_b="manhattan", n_pairs=5000, random_state=2
    )
    assert not ratio.paired and ratio.b.metric == "manhattan" and 0 < ratio.average < 1


@pytest.mark.parametrize(
    ("args", "kwargs", "error"),
    [
        ((10.0, 0.0), {}, ValueError),
        ((10.0, math.inf), {}, ValueError),
        ((10.0, "0.5"), {}, TypeError),
        ((10.0, True), {}, TypeError),
        ((10.0, 0.5), {"statistic": "median"}, ValueError),
        ((-1.0, 0.5), {}, ValueError),
    ],
)
def test_equivalent_epsilon_validation(args, kwargs, error):
    with pytest.raises(error):
        calibration.equivalent_epsilon(*args, **kwargs)
    assert calibration.equivalent_epsilon(10.0, 0.25) == 2.5


def test_privacy_ratio_needs_two_words_in_each_space(glove_2k):
    one = glove_2k.most_frequent(1)
    for a, b in ((one, glove_2k), (glove_2k, one)):
        with pytest.raises(ValueError, match="at least 2 words"):
            calibration.privacy_ratio(a, b)


# -- P_d^max search, metrics of codes, intervals (review 8) ----------------------------------
def test_angular_maximum_bracket_is_a_bound_when_the_centroid_is_zero():
    """Integer rows summing to zero: the angular distance to the centroid is NaN, the
    pruning bound NaN, and max(best, nan) returned best as the 'upper' end (2.514 < 2.929)."""
    rng = np.random.default_rng(0)
    rows = rng.integers(-9, 10, size=(40, 5)).astype(float)
    rows = np.r_[rows, -rows.sum(axis=0, keepdims=True)]
    table = dxp.EmbeddingTable([f"w{i}" for i in range(len(rows))], rows)
    assert np.linalg.norm(table.unk_vector()) == 0.0
    true_max = np.arccos(np.clip(1 - pdist(rows, "cosine"), -1, 1)).max()
    summary = calibration.distance_summary(table, metric="angular", max_work=0, random_state=0)
    assert summary.maximum <= true_max + 1e-12 <= summary.maximum_upper + 2e-12
    exact = calibration.distance_summary(table, metric="angular")
    assert exact.maximum_exact and exact.maximum == pytest.approx(true_max, rel=1e-12)


def test_maximum_search_prunes_with_twice_the_radius(glove_5k):
    """d(i, j) <= 2 max(r_i, r_j): on 5k GloVe words 2 rows need scanning against 1,011
    with r_i + max r (on all 400k: 58 against 4,693, so the default budget returned a
    bracket [21.10, 23.00] instead of the exact 21.10)."""
    summary = calibration.distance_summary(
        glove_5k, n_pairs=100, max_work=256 * len(glove_5k), random_state=0
    )
    assert summary.maximum_exact
    assert summary.maximum == pytest.approx(pdist(glove_5k.vectors.astype(np.float64)).max())


def test_binary_codes_refuse_another_metric():
    codes = BinaryCodes(np.random.default_rng(0).random((50, 16)) < 0.5)
    with pytest.raises(ValueError, match="metric"):
        calibration.distance_summary(codes, metric="euclidean")
    with pytest.raises(ValueError, match="metric"):
        calibration.privacy_ratio(codes, codes, metric_a="manhattan")


def _pairs(size: int, n_pairs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    i, j, exact = _sample_pairs(size, n_pairs, np.random.default_rng(seed))
    assert not exact
    return i, j


def test_average_interval_is_the_normal_interval_of_the_sampled_pairs(glove_5k):
    """The normal interval of the mean: standard error, not standard deviation."""
    table = glove_5k.most_frequent(2000)
    summary = calibration.distance_summary(table, n_pairs=5000, random_state=3)
    i, j = _pairs(len(table), 5000, 3)
    vectors = table.vectors.astype(np.float64)
    d = np.linalg.norm(vectors[i] - vectors[j], axis=1)
    half = _z(0.99) * d.std(ddof=1) / math.sqrt(len(d))
    assert summary.average == pytest.approx(d.mean(), rel=1e-9)
    np.testing.assert_allclose(summary.average_interval, (d.mean() - half, d.mean() + half))


def test_paired_ratio_interval_is_the_delta_method_with_covariance(glove_5k):
    """The delta method with the pairs' covariance (its sign, its presence and the width
    are each checked). The same pairs serve both spaces; Euclidean and Hamming distances on them are
    strongly correlated (0.84 on 2k words), so the covariance term matters."""
    table = glove_5k.most_frequent(2000)
    madlib, brr = dxp.Madlib(table, 10.0), dxp.BRR(table, 1.0)
    ratio = calibration.privacy_ratio(madlib, brr, n_pairs=5000, random_state=4, max_work=0)
    i, j = _pairs(len(table), 5000, 4)
    a = _space(madlib, None).pairs(i, j)
    b = _space(brr, None).pairs(i, j)
    r = a.mean() / b.mean()
    n = len(a)
    variance = (
        a.var(ddof=1) / a.mean() ** 2
        + b.var(ddof=1) / b.mean() ** 2
        - 2 * np.cov(a, b)[0, 1] / (a.mean() * b.mean())
    ) / n
    half = _z(0.99) * r * math.sqrt(variance)
    assert ratio.paired and ratio.average == pytest.approx(r, rel=1e-12)
    np.testing.assert_allclose(ratio.average_interval, (r - half, r + half), rtol=1e-9)
    unpaired_half = (
        _z(0.99)
        * r
        * math.sqrt((a.var(ddof=1) / a.mean() ** 2 + b.var(ddof=1) / b.mean() ** 2) / n)
    )
    assert half < 0.7 * unpaired_half  # pairing is what makes the interval narrow


def test_ratio_maximum_interval_brackets_the_true_ratio_under_a_budget(glove_5k):
    """Under a work budget the P_d^max ratio is an interval holding the true ratio."""
    table = glove_5k.most_frequent(2000)
    madlib, brr = dxp.Madlib(table, 10.0), dxp.BRR(table, 1.0)
    ratio = calibration.privacy_ratio(madlib, brr, n_pairs=1000, max_work=0, random_state=1)
    assert not (ratio.a.maximum_exact and ratio.b.maximum_exact)
    true_a = pdist(table.vectors.astype(np.float64)).max()
    bits = brr.codes.bits()
    true_b = pdist(bits, "hamming").max() * bits.shape[1]
    low, high = ratio.maximum_interval
    assert low <= true_a / true_b <= high
    assert low == pytest.approx(ratio.a.maximum / ratio.b.maximum_upper)
    assert high == pytest.approx(ratio.a.maximum_upper / ratio.b.maximum)
