"""Numerical edges found by the sixteenth session's review (the LPLP sampler's are in
test_lplp_noise_exact.py, TEM's user metrics in test_tem_user_metrics.py)."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.errors import DxpWarning
from dxp_plugins.mechanisms.tem import theorem_4_2_gamma


def test_the_accountant_never_loses_a_small_charge():
    """F8: 16,800 + 1,000 x 1e-12 was 16,800 exactly; a cap could be crossed by any number
    of tiny releases once the total was large."""
    ledger = dxp.Accountant()
    ledger.charge(16_800.0, 1)
    for _ in range(1000):
        ledger.charge(1e-12, 1)
    assert ledger.spent - 16_800.0 == pytest.approx(1e-9, rel=1e-3)
    assert _round_trip(ledger).spent == ledger.spent
    capped = dxp.Accountant(cap=16_800.0)
    capped.charge(16_800.0, 1)
    with pytest.raises(dxp.BudgetExceededError):
        for _ in range(100_000):  # the cap's 1e-12 relative slack is 1.68e-8: ~16,800 charges
            capped.charge(1e-12, 1)
    assert 16_000 < capped.releases < 17_600
    assert capped.spent <= capped.cap * (1 + 1e-12) + 1e-11


def _round_trip(ledger: dxp.Accountant) -> dxp.Accountant:
    return dxp.Accountant.resume(ledger.to_dict())


def test_an_accountant_pickled_before_the_compensated_sum_still_loads():
    ledger = dxp.Accountant()
    ledger.charge(2.5, 3)
    state = ledger.__getstate__()
    del state["_spent_low"]  # as pickled by earlier versions
    old = dxp.Accountant.__new__(dxp.Accountant)
    old.__setstate__(state)
    assert old.spent == 2.5 and pickle.loads(pickle.dumps(old)).spent == 2.5


@pytest.mark.parametrize("value", [np.timedelta64(3, "D"), np.datetime64(3, "D")])
def test_time_deltas_are_not_numbers(glove_5k, value):
    """F10: numpy counts timedelta64 as a signed integer; 3 days were accepted as epsilon."""
    with pytest.raises(TypeError, match="epsilon must be a real number"):
        dxp.Madlib(glove_5k, value)
    with pytest.raises(TypeError, match="gamma must be a real number"):
        dxp.TEM(glove_5k, 1.0, gamma=value)
    with pytest.raises(ValueError, match="spend must be a finite number"):
        dxp.Accountant(cap=1.0).charge(value, 1)


def test_gamma_refuses_complex_values(glove_5k):
    with pytest.raises(TypeError, match="gamma must be a real number"):
        dxp.TEM(glove_5k, 1.0, gamma=np.complex128(1 + 2j))


def test_a_subnormal_beta_never_gives_an_infinite_gamma():
    """F11: (1 - beta)(|W| - 1)/beta overflowed to gamma = inf, accepted, while an explicit
    gamma=inf is refused."""
    with pytest.raises(ValueError, match="beta=1e-310 gives an infinite gamma"):
        theorem_4_2_gamma(1.0, 1e-310, 5000)
    with pytest.raises(ValueError, match=r"beta=0\.9999999999999999 gives gamma <= 0"):
        theorem_4_2_gamma(1.0, 1 - 1e-16, 2)


def test_rows_shadowed_by_case_are_named_once():
    """F7: "us" behind "US" (a cased word2vec table) was never looked up and its tokens
    took the vector of "US", silently."""
    table = dxp.EmbeddingTable(["US", "us", "x"], np.array([[5.0, 0], [0, 0], [0, 1]]))
    with pytest.warns(DxpWarning, match=r"1 embedding rows differ .* row 1 'us' behind 'US'"):
        assert table.lookup(["us", "Us"]).tolist() == [0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table.lookup(["us"])  # once per table


def test_compatibility_variants_are_the_same_word_and_pass_silently():
    """GloVe holds 11 such pairs ("ﬁrst"/"first", "…"/"..."): NFKC makes them one word."""
    table = dxp.EmbeddingTable(["first", "ﬁrst", "..."], np.eye(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert table.lookup(["ﬁrst", "FIRST"]).tolist() == [0, 0]


def test_the_default_embeddings_raise_no_case_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DxpWarning)
        table = dxp.load_embeddings("glove-6b-50d")
        assert table.lookup(["hockey"]).tolist() != [-1]


@pytest.mark.parametrize(("centre", "spread", "distance"), [(0.0, 1e-30, 1.0), (1e3, 1e-3, 1e13)])
def test_the_exact_index_breaks_float64_ties_as_exact_search_does(centre, spread, distance):
    """F9: when every row ties in float64 (a spread below the float64 resolution of the
    query: tiny rows, or rows 1e-3 apart seen from a noisy vector 1e13 away, as at
    epsilon = 1e-12), faiss's float32 candidates decided, not the documented lowest row."""
    from dxp_plugins.neighbors import exact_search, get_index

    rng = np.random.default_rng(0)
    vectors = (centre + rng.normal(size=(300, 8)) * spread).astype(np.float32)
    table = dxp.EmbeddingTable([f"w{i}" for i in range(300)], vectors)
    queries = vectors[0].astype(np.float64) + rng.normal(size=(50, 8)) * distance
    if spread < 1e-10:  # the table itself is too small to tell apart: warned about (F13)
        with pytest.warns(DxpWarning, match="cannot tell the rows apart"):
            index = get_index(table, "exact")
    else:
        index = get_index(table, "exact")
    found = index.search_raw(queries)
    np.testing.assert_array_equal(found, exact_search(vectors, queries))


def test_rows_shadowed_by_invisible_characters_are_not_called_case_variants():
    """The lookup deletes zero-width marks: 'foo\\u200b' behind 'foo' is the same word."""
    table = dxp.EmbeddingTable(["foo", "foo\u200b", "bar\ufeff", "bar"], np.eye(4))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert table.lookup(["foo", "bar"]).tolist() == [0, 2]


def test_an_error_filter_on_the_case_warning_raises_at_every_lookup():
    table = dxp.EmbeddingTable(["US", "us"], np.eye(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DxpWarning)
        for _ in range(2):  # the first lookup raised, later ones passed silently
            with pytest.raises(DxpWarning):
                table.lookup(["us"])
