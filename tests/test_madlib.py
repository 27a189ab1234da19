"""Madlib's public API: tokens, ids, OOV policies, batching (PRIVACY.md 11, 18, 20, 22)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.embeddings import OOV_ID, EmbeddingTable
from tests.fixtures import BUILTIN_MECHANISMS


@pytest.fixture
def mech(glove_5k):
    return dxp.Madlib(glove_5k, epsilon=8.0)


def test_privatize_returns_vocabulary_words(mech, glove_5k):
    tokens = ["The", "hockey", "team", "won", "hockey"]
    out = mech.privatize(tokens)
    assert len(out) == len(tokens) and set(out) <= set(glove_5k.words)


def test_large_epsilon_keeps_words_small_epsilon_moves_them(glove_5k):
    words = ["hockey", "encryption", "music", "river"] * 50
    strong = dxp.Madlib(glove_5k, epsilon=200.0).privatize(words)
    weak = dxp.Madlib(glove_5k, epsilon=0.5).privatize(words)
    kept = {w for w in words if w in glove_5k}
    assert np.mean([o == w for o, w in zip(strong, words, strict=True) if w in kept]) > 0.95
    assert np.mean([o == w for o, w in zip(weak, words, strict=True)]) < 0.1


def test_fresh_noise_for_every_occurrence(mech):
    out = mech.privatize(["hockey"] * 400)
    assert len(set(out)) > 5  # one reused noise vector would give a single word


def test_fresh_noise_for_every_call(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=3.0)
    ids = np.arange(100)
    assert not np.array_equal(mech.privatize_ids(ids), mech.privatize_ids(ids))


def test_privatize_ids_accepts_unk_and_validates(mech):
    out = mech.privatize_ids(np.array([0, 5, OOV_ID]))
    assert out.dtype == np.int64 and out.shape == (3,)
    assert mech.last_guarantee.tokens_privatized == 3
    for bad in ([5000], [-2], [[1, 2]], [0.5], ["a"], [True]):
        with pytest.raises(ValueError):
            mech.privatize_ids(np.array(bad))
    with pytest.raises(ValueError):  # would wrap to -1 (the UNK point) in an int64 cast
        mech.privatize_ids(np.array([2**64 - 1], dtype=np.uint64))
    assert mech.privatize_ids([]).shape == (0,)


def test_oov_default_privatizes_the_public_unk_point(mech):
    canary = "zq7canaryxx"
    out = mech.privatize([canary, "hockey"] * 20)
    assert canary not in out
    assert mech.last_guarantee.tokens_privatized == 40


def test_guarantee_does_not_count_oov_inputs(mech):
    """Under oov='unk' an OOV word is privatized like any other: the record of a release
    must not tell which (or how many) inputs were out of vocabulary (PRIVACY.md 20)."""
    _, with_oov = mech.privatize_batch([["send", "it", "to", "zq7canaryxx"]])
    _, without = mech.privatize_batch([["send", "it", "to", "alice"]])
    assert with_oov[0].to_dict() == without[0].to_dict()


def test_oov_raise_names_position_not_token(glove_5k):
    mech = dxp.Madlib(glove_5k, epsilon=8.0, oov="raise")
    with pytest.raises(dxp.OOVError) as error:
        mech.privatize_batch([["hockey"], ["team", "zq7secretxx"]])
    message = str(error.value)
    assert "zq7secretxx" not in message and "document 1" in message and "token 1" in message
    assert mech.accountant.spent == 0


def test_oov_passthrough_is_a_warned_counted_opt_in(glove_5k):
    with pytest.warns(dxp.PrivacyWarning, match="passthrough"):
        mech = dxp.Madlib(glove_5k, epsilon=8.0, oov="passthrough")
    out = mech.privatize(["zq7canaryxx", "hockey"])
    assert out[0] == "zq7canaryxx"
    record = mech.last_guarantee
    assert (record.tokens_privatized, record.tokens_passed_through) == (1, 1)
    assert record.oov_policy == "passthrough"


def test_unknown_oov_policy_rejected(glove_5k):
    with pytest.raises(ValueError, match="oov"):
        dxp.Madlib(glove_5k, epsilon=1.0, oov="drop")


def test_batch_gives_one_guarantee_per_document(mech):
    outputs, guarantees = mech.privatize_batch([["hockey", "team"], [], ["zq7canaryxx"]])
    assert [len(doc) for doc in outputs] == [2, 0, 1]
    assert [g.tokens_privatized for g in guarantees] == [2, 0, 1]
    assert mech.last_guarantee.tokens_privatized == 3 and mech.last_guarantee.releases == 3


def test_empty_input_spends_nothing(mech):
    assert mech.privatize([]) == []
    assert mech.accountant.spent == 0 and mech.last_guarantee.tokens_privatized == 0


@pytest.mark.parametrize("bad", ["hockey team", [["nested"]], [1, 2], None])
def test_token_input_must_be_a_sequence_of_str(mech, bad):
    with pytest.raises(TypeError):
        mech.privatize(bad)


@pytest.mark.parametrize("epsilon", [0, -1, float("nan"), float("inf"), True, "1", None])
def test_epsilon_is_validated(glove_5k, epsilon):
    with pytest.raises((TypeError, ValueError)):
        dxp.Madlib(glove_5k, epsilon=epsilon)


def test_make_mechanism_by_registry_name(glove_5k):
    mech = dxp.make_mechanism("madlib", glove_5k, epsilon=2.0, index="hnsw", index_params={"m": 16})
    assert isinstance(mech, dxp.Madlib) and mech.neighbor_index.params["m"] == 16
    assert len(mech.privatize(["hockey"] * 10)) == 10
    with pytest.raises(ValueError, match="does not take"):
        dxp.make_mechanism("madlib", glove_5k, epsilon=2.0, index_params={"m": 16})


def test_chunked_release_keeps_token_order(glove_5k, monkeypatch):
    """100 ids in 15 chunks of 7: at epsilon 500 every word is its own output, so the output
    equals the input only if the chunks are put back in order. It checks the order alone:
    not memory, nor the noise (the next test checks that it is fresh in every chunk)."""
    monkeypatch.setattr(dxp.Madlib, "chunk_size", 7)
    mech = dxp.Madlib(glove_5k, epsilon=500.0)
    ids = np.arange(100)
    np.testing.assert_array_equal(mech.privatize_ids(ids), ids)


@pytest.mark.parametrize(("epsilon", "seed"), [(0.5, 31), (2.0, 32)])
def test_chunks_draw_fresh_noise(monkeypatch, epsilon, seed):
    """PRIVACY.md 11 across the chunks of ``Mechanism._release`` (review of the suite, M4):
    one word 40,000 times in chunks of 1,000 on the plane fixture, where the exact law is
    known (quadrature, ``tests/audit/plane_law.py``, at epsilon * d = 2 between words, so
    outputs vary). Outputs at the same place in chunks 2j and 2j + 1 must coincide only as
    often as independent draws of that law do. T4: every chunk drawn from a copy of the
    same generator (the stream replayed per chunk) gives |z| = 241 against the bound 6
    (correct code: 1.4 and 1.5). Seeded: never a chance failure; about 0.1 s."""
    from dxp_plugins.audit import coincidence_z
    from tests.audit.plane_law import plane_law
    from tests.fixtures import plane_fixture

    chunk, chunks = 1000, 40
    monkeypatch.setattr(dxp.Madlib, "chunk_size", chunk)
    table = plane_fixture(epsilon)
    mech = dxp.Madlib(table, epsilon=epsilon, random_state=seed)
    out = mech.privatize_ids(np.zeros(chunk * chunks, dtype=np.int64)).reshape(chunks, chunk)
    law = plane_law(table.vectors[0].astype(np.float64), table.vectors, epsilon)
    assert law.max() < 0.9  # path coverage: the word often moves
    z = coincidence_z(out[0::2].ravel(), out[1::2].ravel(), law, law)
    assert abs(z) < 6.0, z


def test_repr_shows_settings_not_secrets(mech):
    text = repr(mech)
    assert "epsilon=8.0" in text and "rng='secure'" in text and "ChaCha" not in text


def test_distribution_is_not_available_without_closed_form(mech):
    with pytest.raises(NotImplementedError):
        mech.distribution("hockey")


@pytest.mark.parametrize(
    ("params", "error"),
    [({"m": 0}, ValueError), ({"ef_search": 1.5}, TypeError), ({"disk_cache": "no"}, TypeError)],
)
def test_hnsw_parameters_are_checked_when_the_mechanism_is_made(glove_5k, params, error):
    with pytest.raises(error):
        dxp.Madlib(glove_5k, epsilon=10.0, index="hnsw", index_params=params)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("index", "bogus"),
        ("index_params", {"m": 0}),
        ("metric", "angular"),
        ("oov", "passthrough"),
        ("embeddings", "glove-6b-50d"),
        ("ledger_unit", "unit of nothing"),
    ],
)
def test_settings_other_than_epsilon_are_fixed(mech, setting, value):
    """Plain attributes read at each release skipped construction's checks: ``index =
    "bogus"`` failed only after the accountant was charged, ``oov = "passthrough"`` skipped
    the opt-in warning, ``metric`` renamed the guarantee but not the distances."""
    before = repr(mech), mech.ledger_unit
    with pytest.raises(AttributeError, match="build a new Madlib"):
        setattr(mech, setting, value)
    assert mech.privatize(["house"])[0] in mech.embeddings
    assert (repr(mech), mech.ledger_unit) == before
    assert mech.last_guarantee.metric == "euclidean" and mech.last_guarantee.oov_policy == "unk"


def test_index_params_are_a_copy_and_the_accountant_is_validated(glove_5k):
    params = {"m": 8}
    mech = dxp.Madlib(glove_5k, epsilon=10.0, index="hnsw", index_params=params)
    params["m"] = 0
    mech.index_params["m"] = 0
    assert mech.index_params == {"m": 8}
    with pytest.raises(TypeError, match="Accountant"):
        mech.accountant = 5.0
    accountant = dxp.Accountant()
    mech = dxp.Madlib(glove_5k, epsilon=10.0)
    mech.accountant = accountant
    mech.privatize(["house", "home"])
    assert accountant.spent == 20.0


def test_pickles_of_builds_with_plain_setting_attributes_still_load():
    """Settings became read-only properties (embeddings -> _embeddings, codes -> _codes, ...):
    mechanisms pickled by the build before (6a6c20d, the file in tests/data) loaded but
    failed on first use ('no attribute _embeddings')."""
    import pickle
    from pathlib import Path

    if np.lib.NumpyVersion(np.__version__) < "2.0.0":
        pytest.skip("the file was pickled under numpy 2 (numpy 1 cannot read its arrays)")
    path = Path(__file__).parent / "data" / "mechanisms_before_read_only_settings.pkl"
    mechanisms = pickle.loads(path.read_bytes())
    for name, metric in (("madlib", "euclidean"), ("tem", "euclidean"), ("brr", "hamming")):
        mechanism = mechanisms[name]
        assert mechanism.embeddings.name in ("compass", "binary-codes")
        assert mechanism.oov == "unk" and mechanism.metric == metric
        assert mechanism.accountant.spent == pytest.approx(mechanism.epsilon)  # kept
        with pytest.warns(dxp.PrivacyWarning, match="is a copy"):  # an unpickled ledger
            assert set(mechanism.privatize(["north", "west"])) <= set(mechanism.embeddings.words)
    assert mechanisms["brr"].n_bits == mechanisms["brr"].codes.n_bits == 3


# -- found by mutation testing (review 8) -------------------------------------------------
def test_a_release_whose_index_cannot_be_built_spends_nothing():
    """Kills M8 (Madlib._prepare_release a no-op: the index is first built inside _sample,
    after the charge). A table the exact index refuses (a row beyond 1e18 of the mean)
    must fail the release before the accountant is charged (PRIVACY.md 13, base._release)."""
    table = EmbeddingTable(["a", "b", "c"], [[0.0, 0.0], [1.0, 0.0], [1e20, 0.0]])
    accountant = dxp.Accountant()
    mech = dxp.Madlib(table, epsilon=1.0, accountant=accountant)
    for release in (lambda: mech.privatize_ids([0, 1]), lambda: mech.privatize(["a"])):
        with pytest.raises(ValueError, match="rescale the vectors"):
            release()
    assert (accountant.spent, accountant.releases, accountant.unit) == (0.0, 0, None)


def test_oov_tokens_are_privatized_from_the_public_centroid():
    """Kills B8 (the UNK point replaced by row 0's vector: OOV tokens would be privatized
    as the word 'a', and the guarantee between an OOV token and w would be eps*d(a, w), not
    the eps*d(UNK, w) that PRIVACY.md 20 and Madlib's docstring state).

    The centroid (7.5, 0) is nearest to b (2.5 away; c and d 3.2, a 7.5): it decodes to b
    whenever ||Z|| < (3.2016 - 2.5) / 2 = 0.35. At epsilon = 100, ||Z|| ~ Gamma(2, 0.01):
    Pr[||Z|| > 0.35] = e^-35 * 36 = 2.3e-14 per draw, < 3e-11 over the 1,050 draws."""
    table = EmbeddingTable(
        ["a", "b", "c", "d"], [[0.0, 0.0], [10.0, 0.0], [10.0, 2.0], [10.0, -2.0]]
    )
    np.testing.assert_allclose(table.unk_vector(), [7.5, 0.0])  # the documented public point
    mech = dxp.Madlib(table, epsilon=100.0)
    assert set(mech.privatize_ids(np.full(1000, -1)).tolist()) == {1}
    with pytest.warns(dxp.OOVWarning, match="vocabulary of 4 words"):
        assert set(mech.privatize(["zq7canaryxx"] * 50)) == {"b"}


def _oov_words(count: int) -> list[str]:
    return [f"zq{i}xkcanary" for i in range(count)]


@pytest.mark.parametrize("name", BUILTIN_MECHANISMS)
def test_a_release_mostly_out_of_vocabulary_warns_with_counts_only(glove_5k, name):
    """Text the table cannot read (another language, a small vocab_size) comes out as words
    drawn around the UNK point: say so, with counts and never a token (an error or warning
    never echoes private text)."""
    from dxp_plugins.mechanisms.base import OOV_WARN_MIN

    mech = dxp.make_mechanism(name, glove_5k, epsilon=5.0)
    known = ["the", "good", "film"] * 7
    with pytest.warns(dxp.OOVWarning, match=r"^most tokens of a release") as caught:
        mech.privatize(_oov_words(21) + known[:19])
    assert "canary" not in str(caught[0].message)
    assert OOV_WARN_MIN == 20  # the documented figure (README, front-doors.md)
    with pytest.warns(dxp.OOVWarning):
        mech.privatize(_oov_words(20))  # at the minimum, all of them
    # Below either threshold: half (20 of 40), or fewer than 20 tokens.
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.OOVWarning)
        mech.privatize(_oov_words(20) + known[:20])
        mech.privatize(_oov_words(19))
        mech.privatize_ids(np.full(100, OOV_ID))  # ids name the UNK point on purpose
        capped = dxp.make_mechanism(name, glove_5k, epsilon=5.0, accountant=dxp.Accountant(0))
        with pytest.raises(dxp.BudgetExceededError):  # refused: nothing released, no warning
            capped.privatize(_oov_words(30))


def test_a_loop_over_unreadable_texts_warns_once(glove_5k):
    """The warning's text holds no counts, so Python's default filter shows it once per
    call site, not once per document of a service or a loop."""
    mech = dxp.Madlib(glove_5k, 5.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter("default")
        for size in range(25, 35):
            mech.privatize(_oov_words(size))
    assert [type(w.message) for w in caught] == [dxp.OOVWarning]


def test_only_oov_unk_warns_about_a_mostly_oov_release(glove_5k):
    """``"raise"`` refuses the tokens and ``"passthrough"`` warned when chosen and counts
    them as raw words in the record."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", dxp.OOVWarning)
        with pytest.raises(dxp.OOVError):
            dxp.Madlib(glove_5k, 5.0, oov="raise").privatize(_oov_words(30))
        with pytest.warns(dxp.PrivacyWarning):
            passthrough = dxp.Madlib(glove_5k, 5.0, oov="passthrough")
        assert passthrough.privatize(_oov_words(30)) == _oov_words(30)


def test_a_door_warns_about_text_its_table_cannot_read(glove_5k):
    french = (
        "Les chercheurs ont constaté que les données personnelles étaient partagées sans "
        "consentement préalable, malgré les engagements répétés des entreprises concernées "
        "envers leurs utilisateurs européens et les autorités nationales de contrôle."
    )
    madlib = dxp.Madlib(glove_5k, 5.0)
    with pytest.warns(dxp.OOVWarning, match="not in the embeddings' vocabulary"):
        dxp.privatize_text(french, madlib)
