"""LPLP building blocks: groupings (partitions, equal sizes, dispersal), balanced k-means
solvers, calibration, decompression, the DP histogram and input validation (PRIVACY.md 26)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import dxp_plugins as dxp
from dxp_plugins import registry
from dxp_plugins.lplp import balanced, calibrate, check_partition, compression, groupings, noise
from dxp_plugins.lplp.compression import DecompressionPlan, check_counts, decompress
from dxp_plugins.lplp.groupings import GroupingContext, make_groups
from dxp_plugins.lplp.histogram import dp_histogram
from dxp_plugins.lplp.release import LPLPRelease

GROUPINGS = ["random", "frequency", "glove-cluster", "glove-disperse"]


@pytest.fixture(scope="module")
def words(glove_5k) -> list[str]:
    """300 public words, plus two without a vector (they follow the documented rule)."""
    return [*glove_5k.words[100:400], "zzqxoov", "qqxzoov"]


def context(words, glove_5k, n_groups, seed=0, histogram=None) -> GroupingContext:
    return GroupingContext(
        n_features=len(words),
        n_groups=n_groups,
        rng=np.random.default_rng(seed),
        words=tuple(words),
        embeddings=glove_5k,
        histogram=histogram,
    )


def test_zipf_weights_follow_the_public_rank_and_put_unknown_words_last(words, glove_5k):
    from dxp_plugins.lplp.weights import public_weights

    weights, description = public_weights("zipf", context(words, glove_5k, 10))
    ranks = glove_5k.frequency_rank[glove_5k.lookup(words[:300])]
    np.testing.assert_allclose(weights[:300], 1.0 / (ranks + 1.0))
    np.testing.assert_allclose(weights[300:], 1.0 / (len(glove_5k) + 1.0))  # below any word
    assert "zipf" in description


# -- groupings -----------------------------------------------------------------------------
def test_registry_lists_the_builtin_groupings():
    assert set(GROUPINGS) <= set(registry.names(registry.groupings))
    for name in GROUPINGS:
        assert callable(registry.resolve(registry.groupings, name))


@pytest.mark.parametrize("name", GROUPINGS)
@pytest.mark.parametrize("n_groups", [2, 30, 151])  # 302 words: divisible, not, K = M/2
def test_each_grouping_is_an_equal_size_partition(words, glove_5k, name, n_groups):
    labels = make_groups(name, context(words, glove_5k, n_groups))
    assert labels.shape == (len(words),)
    sizes = np.bincount(labels, minlength=n_groups)
    assert len(sizes) == n_groups and sizes.min() >= 1
    assert sizes.max() - sizes.min() <= 1  # equal sizes (up to one where K does not divide M)


def test_glove_cluster_groups_are_semantic(words, glove_5k):
    """Balanced clusters are tighter than random groups of the same sizes."""
    vectors = context(words, glove_5k, 30).word_vectors()
    spread = {}
    for name in ("glove-cluster", "random"):
        labels = make_groups(name, context(words, glove_5k, 30))
        means = np.stack([vectors[labels == g].mean(0) for g in range(30)])
        spread[name] = balanced.assignment_cost(vectors, means, labels)
    assert spread["glove-cluster"] < 0.8 * spread["random"]


@pytest.mark.parametrize("n_groups", [30, 151])
def test_glove_disperse_puts_one_word_of_each_cluster_in_each_group(
    monkeypatch, words, glove_5k, n_groups
):
    seen = {}
    true_kmeans = groupings.balanced_kmeans

    def spy(points, n_clusters, rng, **params):
        seen["clusters"] = true_kmeans(points, n_clusters, rng, **params)
        return seen["clusters"]

    monkeypatch.setattr(groupings, "balanced_kmeans", spy)
    labels = make_groups("glove-disperse", context(words, glove_5k, n_groups))
    clusters = seen["clusters"]
    assert clusters.max() + 1 == -(-len(words) // n_groups)
    for group in range(n_groups):
        members = clusters[labels == group]
        assert len(np.unique(members)) == len(members)  # never two words of one cluster
    if len(words) % n_groups == 0:  # K divides M: exactly one word of every cluster
        for group in range(n_groups):
            assert sorted(clusters[labels == group]) == list(range(clusters.max() + 1))


def test_frequency_grouping_deals_round_robin_over_the_public_rank(words, glove_5k):
    labels = make_groups("frequency", context(words, glove_5k, 7))
    ids = glove_5k.lookup(words)
    known = np.flatnonzero(ids >= 0)
    order = known[np.argsort(glove_5k.frequency_rank[ids[known]])]
    assert labels[order].tolist() == (np.arange(len(order)) % 7).tolist()
    # Words without a rank come last, in feature order.
    assert labels[[-2, -1]].tolist() == [len(order) % 7, (len(order) + 1) % 7]


def test_frequency_grouping_over_a_dp_histogram(words, glove_5k):
    counts = np.arange(len(words))[::-1].astype(float)
    labels = make_groups(
        "frequency", context(words, glove_5k, 5, histogram=lambda: counts), order="histogram"
    )
    assert labels.tolist() == (np.arange(len(words)) % 5).tolist()
    with pytest.raises(ValueError, match="histogram_epsilon"):
        make_groups("frequency", context(words, glove_5k, 5), order="histogram")


def test_words_without_vectors_sit_at_the_public_unk_point(words, glove_5k):
    vectors = context(words, glove_5k, 3).word_vectors()
    np.testing.assert_allclose(vectors[-1], glove_5k.unk_vector())
    np.testing.assert_allclose(vectors[0], glove_5k.vectors[glove_5k.lookup([words[0]])[0]])


def test_a_user_grouping_plugs_in_through_the_registry():
    @registry.groupings.register("test-halves")
    def halves(context):
        return np.arange(context.n_features) * context.n_groups // context.n_features

    ctx = GroupingContext(n_features=6, n_groups=2, rng=np.random.default_rng(0))
    assert make_groups("test-halves", ctx).tolist() == [0, 0, 0, 1, 1, 1]

    @registry.groupings.register("test-broken")
    def broken(context):
        return np.zeros(context.n_features, dtype=int)  # leaves group 1 empty

    with pytest.raises(ValueError, match="at least one feature"):
        make_groups("test-broken", ctx)
    with pytest.raises(ValueError, match="unknown grouping "):
        make_groups("no-such-grouping", ctx)


def test_groupings_needing_words_or_embeddings_say_so():
    ctx = GroupingContext(n_features=6, n_groups=2, rng=np.random.default_rng(0))
    for name in ("frequency", "glove-cluster", "glove-disperse"):
        with pytest.raises(ValueError, match="vocabulary"):
            make_groups(name, ctx)


# -- balanced assignment: both exact solvers find the same optimum -------------------------
@pytest.mark.parametrize(("points", "clusters"), [(60, 4), (101, 7), (90, 45)])
def test_hungarian_and_transport_agree(points, clusters):
    rng = np.random.default_rng(points)
    data, centroids = rng.normal(size=(points, 3)), rng.normal(size=(clusters, 3))
    sizes = balanced.cluster_sizes(points, clusters)
    costs = []
    for solver in ("hungarian", "transport"):
        labels = balanced.balanced_assignment(data, centroids, sizes, solver=solver)
        assert np.bincount(labels, minlength=clusters).tolist() == sizes.tolist()
        costs.append(balanced.assignment_cost(data, centroids, labels))
    assert costs[0] == pytest.approx(costs[1], rel=1e-9)


def test_balanced_kmeans_handles_duplicate_points():
    points = np.r_[np.zeros((10, 2)), np.ones((2, 2))]
    labels = balanced.balanced_kmeans(points, 4, np.random.default_rng(0))
    assert np.bincount(labels).tolist() == [3, 3, 3, 3]


def test_squared_distances_match_the_definition_across_chunks(monkeypatch):
    monkeypatch.setattr(balanced, "_CHUNK", 7)
    rng = np.random.default_rng(3)
    points, centroids = rng.normal(size=(30, 5)), rng.normal(size=(4, 5))
    expected = ((points[:, None, :] - centroids[None]) ** 2).sum(axis=-1)
    np.testing.assert_allclose(balanced._squared_distances(points, centroids), expected)


def test_balanced_kmeans_refuses_a_transport_problem_too_big_for_memory(monkeypatch):
    """Open work 10: refused before the k-means warm start, with the estimate in the message."""
    monkeypatch.setattr(balanced, "available_memory", lambda: 1000)

    def no_warm_start(*args, **kwargs):
        raise AssertionError("the warm start ran before the memory check")

    monkeypatch.setattr("sklearn.cluster.KMeans", no_warm_start)
    points = np.random.default_rng(0).normal(size=(4000, 3))
    with pytest.raises(MemoryError, match=r"4,000 words into 1,000 clusters needs about 0\.2 GiB"):
        balanced.balanced_kmeans(points, 1000, np.random.default_rng(0))
    with pytest.raises(MemoryError, match="'random' or 'frequency' grouping"):
        balanced.balanced_kmeans(points[:100], 10, np.random.default_rng(0), solver="transport")
    # the Hungarian solver (up to HUNGARIAN_MAX points) is not the transport estimate's concern
    monkeypatch.undo()
    monkeypatch.setattr(balanced, "available_memory", lambda: 1000)
    labels = balanced.balanced_kmeans(points[:100], 10, np.random.default_rng(0))
    assert np.bincount(labels).tolist() == [10] * 10


def test_available_memory_reads_this_machine():
    available = balanced.available_memory()
    if Path("/proc/meminfo").exists():  # Linux: a number, or the reader is broken
        assert available is not None
    assert available is None or 0 < available < 2**50


def test_balanced_kmeans_progress_bar_on_request(capsys):
    points = np.random.default_rng(1).normal(size=(40, 3))
    balanced.balanced_kmeans(points, 4, np.random.default_rng(0), progress=True)
    assert "balanced k-means (40 words, 4 clusters)" in capsys.readouterr().err
    balanced.balanced_kmeans(points, 4, np.random.default_rng(0), progress=False)
    assert capsys.readouterr().err == ""


# -- calibration ------------------------------------------------------------------------------
def test_sound_calibration_does_not_rescale():
    sound = calibrate(1.0, 2, 100, 25)
    assert sound.rate == 0.5 and sound.epsilon == sound.claimed_epsilon == 1.0
    assert calibrate(1.0, 2, 100, 100).rate == sound.rate  # K = M: the same noise


def test_paper_calibration_reports_its_true_epsilon():
    paper = calibrate(1.0, 2, 100, 25, calibration="paper")
    assert paper.claimed_epsilon == 1.0 and paper.epsilon == pytest.approx(4.0)
    assert paper.rate == pytest.approx(2.0)


# -- decompression --------------------------------------------------------------------------
def test_decompression_preserves_group_totals_and_follows_weights():
    labels = np.array([0, 0, 0, 1, 1, 2])
    plan = DecompressionPlan.build(labels, 3, [1.0, 0.0, 3.0, 0.0, 0.0, 5.0])
    counts = np.array([[4000, 3, 2], [1, 1000, 0]])
    out = decompress(counts, plan, np.random.default_rng(0)).toarray()
    np.testing.assert_array_equal(out @ np.eye(3)[labels], counts)
    assert out[:, 1].sum() == 0  # zero public weight: never drawn
    assert abs(out[0, 2] / 4000 - 0.75) < 0.03
    assert out[1, 3] + out[1, 4] == 1000 and abs(out[1, 3] - 500) < 80  # all-zero: uniform


@pytest.mark.parametrize("scale", [1.0, 1e308, 1e-300])
def test_decompression_at_any_scale_of_the_weights(scale):
    """Group totals of weights near the float maximum overflowed to inf: every probability
    of the group became 0 and its counts landed on column 0, a word of another group."""
    labels = np.array([0, 1, 0, 1])
    plan = DecompressionPlan.build(labels, 2, scale * np.array([1.0, 1.0, 1.0, 1.5]))
    out = decompress(np.array([[0, 4000]]), plan, np.random.default_rng(0)).toarray()
    assert out[0, 0] == out[0, 2] == 0 and out[0, 1] + out[0, 3] == 4000
    assert abs(out[0, 3] / 4000 - 0.6) < 0.03


@pytest.mark.parametrize("labels", [[0, 1, 2, 3], [2, 0, 3, 1]], ids=["identity", "permuted"])
def test_decompression_without_compression_puts_each_count_on_its_feature(labels):
    labels = np.array(labels)
    plan = DecompressionPlan.build(labels, 4, np.ones(4))
    counts = np.array([[5, 0, 7, 1], [0, 0, 0, 0], [0, 2, 0, 9]])
    out = decompress(counts, plan, np.random.default_rng(0))
    assert sp.issparse(out) and out.has_sorted_indices and out.indices.dtype == np.int32
    np.testing.assert_array_equal(out.toarray(), counts[:, labels])  # feature j <- its group


def test_sparse_decompression_keeps_each_document_in_its_row(monkeypatch):
    """Few counts over many features: the (document, feature, count) triplet assembly. Every
    document keeps its own group totals row by row (one-word groups, multinomial draws and
    unit-by-unit draws alike), and the output equals the dense block's for the same seed
    (both assemble the same draws)."""
    labels = np.r_[np.repeat(np.arange(38), 50), np.arange(38, 138)]  # 38 x 50 words, 100 x 1
    plan = DecompressionPlan.build(labels, 138, np.random.default_rng(4).random(len(labels)))
    counts = np.zeros((10, 138), dtype=np.int64)
    for doc in range(10):
        counts[doc, doc] = doc + 1  # drawn unit by unit (at most twice the group's size)
        counts[doc, 20 + doc] = 150 + doc  # one multinomial draw
        counts[doc, 38 + doc] = 3 + doc  # a one-word group
    # Path coverage: below the density where the draws are assembled in a dense block.
    assert (
        np.minimum(counts, plan.sizes).sum()
        <= compression._DENSE_ABOVE * len(counts) * plan.n_features
    )
    out = decompress(counts, plan, np.random.default_rng(0))
    np.testing.assert_array_equal(out.toarray() @ np.eye(138, dtype=np.int64)[labels], counts)
    monkeypatch.setattr(compression, "_DENSE_ABOVE", 0.0)
    dense = decompress(counts, plan, np.random.default_rng(0))
    np.testing.assert_array_equal(out.toarray(), dense.toarray())


def test_empty_release_spends_nothing():
    accountant = dxp.Accountant()
    release = LPLPRelease([0, 1, 0], epsilon=1.0, accountant=accountant)
    output, record = release.release(sp.csr_matrix((0, 3), dtype=np.int64))
    assert output.shape == (0, 3) and record.documents == 0 and accountant.spent == 0


@pytest.fixture
def noise_draws(monkeypatch) -> list[tuple[int, ...]]:
    """Shapes of the geometric noise drawn (PRIVACY.md 13: a refused release draws none)."""
    draws: list[tuple[int, ...]] = []
    sample = noise.sample_two_sided_geometric

    def counted(rng, shape, rate):
        draws.append(tuple(np.atleast_1d(shape)))
        return sample(rng, shape, rate)

    monkeypatch.setattr(noise, "sample_two_sided_geometric", counted)
    return draws


def test_accountant_is_charged_before_noise_and_cap_refuses(noise_draws):
    accountant = dxp.Accountant(cap=1.5)
    release = LPLPRelease([0, 1, 0], epsilon=1.0, accountant=accountant)
    release.release(np.ones((4, 3), dtype=int))
    assert accountant.spent == 1.0 and accountant.tokens_privatized == 4
    drawn = len(noise_draws)
    assert drawn > 0
    with pytest.raises(dxp.BudgetExceededError):
        release.release(np.ones((4, 3), dtype=int))
    assert len(noise_draws) == drawn
    with pytest.raises(dxp.BudgetExceededError):
        dp_histogram(sp.csr_matrix(np.ones((4, 3), dtype=int)), 1.0, 1, None, accountant)
    assert len(noise_draws) == drawn and accountant.spent == 1.0


def test_the_accountant_is_charged_the_true_epsilon_of_the_paper_mode():
    """calibration="paper" claims epsilon but spends M*epsilon/K: the ledger and its cap
    must see the true amount, as the record does."""
    accountant = dxp.Accountant(cap=3.0)
    paper = LPLPRelease(np.arange(8) % 2, epsilon=1.0, calibration="paper", accountant=accountant)
    assert paper.guarantee(1).epsilon == 4.0
    with pytest.raises(dxp.BudgetExceededError):
        paper.release(np.ones((1, 8), dtype=int))
    accountant = dxp.Accountant()
    paper = LPLPRelease(np.arange(8) % 2, epsilon=1.0, calibration="paper", accountant=accountant)
    _, record = paper.release(np.ones((2, 8), dtype=int))
    assert accountant.spent == record.spend == 4.0  # per document: each is one individual


def test_a_refused_release_keeps_the_last_record():
    """The record once was overwritten before the charge, so a refused release (PRIVACY.md
    12-13) replaced the record of the last release that did happen."""
    accountant = dxp.Accountant(cap=1.0)
    release = LPLPRelease(np.arange(5), epsilon=1.0, accountant=accountant)
    _, first = release.release(np.ones((2, 5), dtype=int))
    with pytest.raises(dxp.BudgetExceededError):
        release.release(np.ones((7, 5), dtype=int))
    assert release.last_guarantee is first and release.last_guarantee.documents == 2
    assert accountant.spent == 1.0 and accountant.releases == 1


def test_guarantee_record_and_merge():
    release = LPLPRelease([0, 0, 1, 1], epsilon=0.5, n_changes=3, grouping="custom")
    record = release.guarantee(10)
    assert (record.epsilon, record.n_changes, record.n_features, record.n_groups) == (
        0.5,
        3,
        4,
        2,
    )
    assert record.rng == "secure" and record.to_dict()["spend"] == 0.5
    assert "(3, 0.5)-LPLP" in record.statement == record.to_dict()["statement"]
    merged = record.merge(release.guarantee(5))
    assert merged.documents == 15 and merged.releases == 2 and merged.spend == 1.0
    assert merged.release_spend == 1.0 and "for the histogram" not in merged.statement
    with pytest.raises(ValueError, match="epsilon"):
        record.merge(LPLPRelease([0, 0, 1, 1], epsilon=1.0).guarantee(1))


def test_a_release_records_the_calibration_it_was_charged_and_drawn_at(monkeypatch):
    """One calibration per release: another thread assigning ``epsilon`` right after the
    release looked it up changes neither the charge nor the record."""
    accountant = dxp.Accountant()
    release = LPLPRelease(np.arange(4), epsilon=0.5, accountant=accountant)
    lookup = release.noise_calibration

    def reassigned_after_lookup():
        calibrated = lookup()
        release.epsilon = 50.0  # "another thread"
        return calibrated

    monkeypatch.setattr(release, "noise_calibration", reassigned_after_lookup)
    _, record = release.release(np.ones((3, 4), dtype=int))
    assert record.epsilon == 0.5 and record.spend == accountant.spent == 0.5


def test_an_lplp_release_keys_its_generator_before_the_charge(monkeypatch):
    from dxp_plugins import _random

    def no_entropy():
        raise OSError("no entropy")

    accountant = dxp.Accountant()
    release = LPLPRelease(np.arange(4), epsilon=0.5, accountant=accountant)
    monkeypatch.setattr(_random, "_secure_generator", no_entropy)
    with pytest.raises(OSError, match="entropy"):
        release.release(np.ones((3, 4), dtype=int))
    assert (accountant.spent, accountant.releases) == (0.0, 0)


def test_the_statement_of_repeated_releases_states_what_they_give_together():
    """A merged record of two releases may hold the same documents twice: each release of
    a document is (N, eps)-LPLP and k releases of it (N, k*eps), not (N, eps)."""
    release = LPLPRelease([0, 0, 1, 1], epsilon=1.0, grouping="custom")
    counts = np.ones((20, 4), dtype=int)
    merged = release.release(counts)[1].merge(release.release(counts)[1])
    assert merged.documents == 40 and merged.spend == 2.0
    assert (
        "LPLP: 2 releases of 40 documents in all; each release of a document is (1, 1)-LPLP"
        in merged.statement
    )
    assert (
        "a document in k of the releases is (1, k*1)-LPLP, in all of them (1, 2)-LPLP"
        in merged.statement
    )
    assert "This record's spend: 2 (2 releases x 1)." in merged.statement
    one = release.guarantee(20).statement
    assert one.startswith("LPLP: each of 20 documents is (1, 1)-LPLP") and "spend" not in one


def test_lplp_statements_say_what_n_and_epsilon_mean_in_word_occurrences():
    """A change of c occurrences moves a count vector by c in L1 (a replacement by 2) and
    the geometric noise's loss is linear in L1, so the statement gives e^(c*eps/N)."""
    one = LPLPRelease([0, 0, 1, 1], epsilon=1.0).guarantee(20).statement
    assert (
        "In words: adding or removing c word occurrences in a document changes the "
        "probability of any output by at most a factor e^(c*1) (replacing a word by another "
        "is c = 2), so whether a document holds a word c times is protected only at that "
        "factor; this counts one column per word (with n-gram columns of lengths 1 to n, one "
        "word moves up to n^2 counts: c = n^2)." in one
    )
    three = LPLPRelease([0, 0, 1, 1], epsilon=2.5, n_changes=3).guarantee(1).statement
    assert "e^(c*2.5/3) (e^2.5 for c up to 3; replacing a word by another is c = 2)" in three
    release = LPLPRelease([0, 0, 1, 1], epsilon=1.0)
    counts = np.ones((2, 4), dtype=int)
    merged = release.release(counts)[1].merge(release.release(counts)[1]).statement
    assert "In words (per release): adding or removing c word occurrences" in merged
    # The factor the clause states is the law's: shifting one compressed count by c
    # changes the two-sided geometric pmf by exactly e^(c*eps/N).
    from dxp_plugins.lplp.noise import two_sided_geometric_pmf

    pmf = two_sided_geometric_pmf(np.arange(-20, 21), 2.5 / 3)
    assert np.allclose(np.log(pmf[:-2] / pmf[2:]).max(), 2 * 2.5 / 3)


def test_printing_an_lplp_guarantee_shows_its_statement_and_repr_its_fields():
    record = LPLPRelease([0, 0, 1, 1], epsilon=1.0).guarantee(20)
    assert str(record) == f"{record}" == record.statement
    assert repr(record).startswith("LPLPGuarantee(epsilon=1.0, claimed_epsilon=1.0, ")


def test_lplp_statements_never_round_epsilon_down():
    import dataclasses

    release = LPLPRelease([0, 0, 1, 1], epsilon=2.0000004, histogram_epsilon=0.1000001)
    statement = release.guarantee(3).statement
    assert "(1, 2.0000004)-LPLP" in statement and "e^2.0000004" in statement
    assert "histogram (1, 0.1000001)" in statement
    # Summed in decimal from the numbers shown: the binary sum reads 2.1000004999999997,
    # less than 2.0000004 + 0.1000001.
    assert "This record's spend: 2.1000005 (2.0000004 for 1 release" in statement
    three = dataclasses.replace(LPLPRelease([0, 0, 1, 1], epsilon=0.1).guarantee(3), releases=3)
    assert three.spend == 0.30000000000000004
    assert "in all of them (1, 0.3)-LPLP" in three.statement
    assert "This record's spend: 0.3 (3 releases x 0.1)" in three.statement


def test_lplp_records_read_back_checked():
    import dataclasses
    import json

    from dxp_plugins.lplp.guarantee import LPLPGuarantee

    release = LPLPRelease([0, 0, 1, 1], epsilon=0.5, histogram_epsilon=0.25, grouping="custom")
    record = release.guarantee(10)
    as_json = json.loads(json.dumps(record.to_dict()))
    assert LPLPGuarantee.from_dict(as_json) == record
    for change in (
        {"spend": 0.1},
        {"release_spend": 0.1},
        {"statement": "private"},
        {"documents": -1},
        {"epsilon": float("nan")},
        {"histogram_epsilon": 0.0},
        {"calibration": "loose"},
        {"rng": "quantum"},
        {"hacked": 1},
    ):
        (name,) = change
        with pytest.raises((TypeError, ValueError), match=name):
            LPLPGuarantee.from_dict({**as_json, **change})
    with pytest.raises(ValueError, match="different library_version"):
        record.merge(dataclasses.replace(record, library_version="0.0.1"))


# -- validation (PRIVACY.md 23, 26) ----------------------------------------------------------
@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ([0, 1], "3 integers"),
        ([0, 1, 3], "must lie in"),
        ([0, 0, 0], "at least one feature"),
        ([-1, 0, 1], "must lie in"),
        ([0.0, 1.0, 0.5], "3 integers"),
        ([[0, 1, 0]], "3 integers"),
    ],
    ids=["short", "out of range", "empty group", "negative", "float", "2-D"],
)
def test_bad_partitions_raise(labels, message):
    """Each by its own check (another check failing by accident would hide a removed one)."""
    with pytest.raises(ValueError, match=message):
        check_partition(labels, 3, 2)


@pytest.mark.parametrize(
    "counts",
    [np.array([[1, -1]]), np.array([[0.5, 1.0]]), np.array([[np.nan, 1.0]]), np.array([1, 2])],
    ids=["negative", "fractional", "nan", "1-D"],
)
def test_bad_counts_raise(counts):
    with pytest.raises(ValueError):
        check_counts(counts)


@pytest.mark.parametrize(
    "counts",
    [
        np.array([[1e19, 1.0]]),
        np.array([[2**63 + 5, 1]], dtype=np.uint64),
        np.array([[2**62, 2**62]], dtype=np.int64),
    ],
    ids=["float 1e19", "uint64 2**63+5", "int64 total 2**63"],
)
def test_counts_beyond_int64_are_refused(counts):
    """They once wrapped to negative int64 counts in the cast or the group sums."""
    with pytest.raises(ValueError, match="too large") as error:
        check_counts(counts)
    assert not re.search(r"\d{4}", str(error.value))  # no data value in the message
    with pytest.raises(ValueError, match="too large"):
        LPLPRelease(np.arange(2), epsilon=5.0).release(counts)


def test_dp_histogram_refuses_corpus_totals_beyond_int64_before_charging():
    accountant = dxp.Accountant()
    counts = sp.csr_matrix(np.array([[2**62 - 1, 0], [2**62 - 1, 1]], dtype=np.int64))
    with pytest.raises(ValueError, match="corpus total"):
        dp_histogram(counts, 1.0, 1, np.random.default_rng(0), accountant)
    assert accountant.spent == 0 and accountant.releases == 0
    dp_histogram(counts[:, 1:], 1.0, 1, np.random.default_rng(0), accountant)
    assert accountant.spent == 1.0


def test_counts_are_accepted_as_integral_floats_and_sparse():
    assert check_counts(np.array([[1.0, 0.0]])).dtype == np.int64
    assert check_counts(sp.coo_matrix(np.array([[2, 0]]))).toarray().tolist() == [[2, 0]]
    # narrow dtypes: duplicate COO entries summed in int8 wrapped (100 + 100 + 56 -> 0), and
    # scipy refuses float16
    for dtype in (np.int8, np.uint8, np.bool_):
        values = np.array([100, 100, 56]).astype(dtype)
        coo = sp.coo_matrix((values, ([0, 0, 0], [1, 1, 1])), shape=(1, 2))
        assert check_counts(coo).toarray().tolist() == [[0, int(values.astype(np.int64).sum())]]
    half = np.array([[3, 0], [2048, 1]], dtype=np.float16)
    assert check_counts(half).toarray().tolist() == [[3, 0], [2048, 1]]
    # 64-bit duplicates wrap in their own type (2**63 + 2**63 -> 0): refused, like any
    # total of that size
    for dtype, values in [(np.uint64, [2**63, 2**63]), (np.int64, [2**63 - 1, 2**63 - 1, 2])]:
        coo = sp.coo_matrix((np.array(values, dtype=dtype), ([0] * len(values), [1] * len(values))))
        with pytest.raises(ValueError, match="too large"):
            check_counts(coo)


def test_dense_narrow_counts_are_not_copied_to_64_bits():
    import tracemalloc

    dense = (np.random.default_rng(0).random((1000, 5000)) < 0.01).astype(np.int8)
    tracemalloc.start()
    try:
        check_counts(dense)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < dense.size  # an int64 copy would be 8x the input (40 MB); ~2.5 MB here


@pytest.mark.parametrize(
    ("params", "error"),
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"epsilon": True}, TypeError),
        ({"epsilon": "1"}, TypeError),
        ({"n_changes": 0}, ValueError),
        ({"calibration": "loose"}, ValueError),
        ({"weights": [1.0, 2.0]}, ValueError),
        ({"weights": [1.0, -1.0, 1.0]}, ValueError),
        ({"histogram_epsilon": -1.0}, ValueError),
    ],
)
def test_bad_release_settings_raise(params, error):
    settings = {"epsilon": 1.0, **params}
    with pytest.raises(error):
        LPLPRelease([0, 1, 0], **settings)


def test_dp_histogram_is_clamped_and_noisy():
    counts = sp.csr_matrix(np.array([[5, 0, 1], [3, 0, 0]]))
    draws = np.stack([dp_histogram(counts, 1.0, 1, np.random.default_rng(i)) for i in range(400)])
    assert draws.min() >= 0
    assert abs(draws[:, 0].mean() - 8) < 0.3 and draws[:, 1].max() > 0


# -- the noise sampler at large epsilon / N (PRIVACY.md 10, 23) -------------------------------
@pytest.mark.parametrize("rate", [44.0, 100.0, 700.0])
def test_sampler_release_and_histogram_work_at_every_accepted_rate(rate):
    """Sparse-regime gaps ~ 1 / (2 e^-rate) once overflowed the int64 cast above rate ~42
    (negative indices, IndexError). Pr[Z != 0] < 2e-19 here, so every draw is 0."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        draws = noise.sample_two_sided_geometric(rng, (100, 100), rate)
        assert draws.shape == (100, 100) and draws.dtype == np.int64 and not draws.any()
    counts = np.arange(50 * 1000).reshape(50, 1000) % 3
    output, record = LPLPRelease(np.arange(1000), epsilon=rate).release(counts)
    assert output.shape == (50, 1000) and record.epsilon == rate
    np.testing.assert_array_equal(output.toarray(), counts)
    histogram = dp_histogram(sp.csr_matrix(counts), rate, 1, rng)
    np.testing.assert_array_equal(histogram, counts.sum(axis=0))


def test_rates_whose_noise_exceeds_int64_are_refused():
    """epsilon / N below noise.MIN_RATE once saturated both geometric draws at the same int64
    value, so they cancelled and the EXACT counts were released (PRIVACY.md 23)."""
    with pytest.raises(ValueError, match="beyond int64"):
        LPLPRelease(np.arange(6), epsilon=1e-6, n_changes=10**14)
    with pytest.raises(ValueError, match="beyond int64"):
        LPLPRelease(np.arange(6), epsilon=1.0, n_changes=10**18)
    with pytest.raises(ValueError, match="beyond int64"):
        noise.sample_two_sided_geometric(np.random.default_rng(0), 10, noise.MIN_RATE / 2)
    accountant = dxp.Accountant()
    counts = sp.csr_matrix(np.array([[5, 0, 3]]))
    with pytest.raises(ValueError, match="beyond int64"):
        dp_histogram(counts, 1e-6, 10**14, np.random.default_rng(0), accountant)
    assert accountant.spent == 0
    draws = noise.sample_two_sided_geometric(np.random.default_rng(0), 10_000, noise.MIN_RATE)
    assert np.abs(draws).max() <= 2**62 and (draws != 0).mean() > 0.99


# -- records describe only what they were told ---------------------------------------------
def test_release_record_never_calls_given_weights_uniform():
    counts = np.array([[5, 0, 1, 9], [0, 3, 0, 1]])
    release = LPLPRelease([0, 0, 1, 1], epsilon=1.0, weights=counts.sum(axis=0))
    _, record = release.release(counts)
    assert "uniform" not in record.weights
    assert record.grouping != "none"  # 4 features in 2 groups is a compression
    assert "uniform" in LPLPRelease([0, 0, 1, 1], epsilon=1.0).guarantee(1).weights


def test_lplp_docstrings_cite_no_section_of_the_unavailable_paper():
    """Review 9, L9: the Schofield, Yauney & Mimno paper is not available offline, so the
    LPLP modules say so once and cite the privacy contract instead; no module invents a
    section number for it (topics.py cited a "Sec. 5" nothing in the repository supports)."""
    import importlib
    import inspect
    import pkgutil

    import dxp_plugins.lplp as lplp
    from dxp_plugins import topics
    from dxp_plugins.estimators import lplp as estimator

    doc = " ".join(lplp.__doc__.split())
    assert "not available offline" in doc
    assert "PRIVACY.md 8" in doc and "9 (" in doc and "10 (" in doc
    modules = [topics, estimator, lplp] + [
        importlib.import_module(f"dxp_plugins.lplp.{info.name}")
        for info in pkgutil.iter_modules(lplp.__path__)
    ]
    for module in modules:
        source = inspect.getsource(module)
        assert not re.search(r"(Sec\.|Section|§|Eq\.|Algorithm)\s*\d", source), module.__name__


def test_calibrate_names_its_setting_as_the_transformer_does():
    """API review (twenty-second session): ``calibrate(mode=...)`` refused a bad value with
    an error naming ``calibration``, a parameter it did not have."""
    assert calibrate(1.0, 2, 100, 25, calibration="paper").calibration == "paper"
    with pytest.raises(ValueError, match="calibration must be one of"):
        calibrate(1.0, 2, 100, 25, calibration="papr")
    with pytest.raises(TypeError):
        calibrate(1.0, 2, 100, 25, mode="paper")


def test_a_release_records_the_fingerprint_of_the_embeddings_it_is_given(glove_5k):
    """API review: a table was accepted and failed only at the first release ("guarantee
    field embeddings must be a str"), and a registry name was recorded where every other
    record holds a fingerprint."""
    counts = np.array([[1, 0, 2]])
    release = LPLPRelease([0, 1, 0], epsilon=1.0, embeddings=glove_5k, random_state=None)
    release.release(counts)
    assert release.last_guarantee.embeddings == glove_5k.fingerprint
    again = LPLPRelease([0, 1, 0], epsilon=1.0, embeddings=glove_5k.fingerprint)
    assert again.embeddings == glove_5k.fingerprint
    assert LPLPRelease([0, 1, 0], epsilon=1.0).embeddings == ""
    with pytest.raises(ValueError, match="fingerprint"):
        LPLPRelease([0, 1, 0], epsilon=1.0, embeddings="glove-6b-50d")
    with pytest.raises(TypeError, match="EmbeddingTable or its fingerprint"):
        LPLPRelease([0, 1, 0], epsilon=1.0, embeddings=42)
