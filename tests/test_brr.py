"""BRR, binary codes and the binary index: API, validation (PRIVACY.md 26), SimHash,
neighbourhood overlap, storage, exact decoding and uniform ties."""

from __future__ import annotations

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.audit import g_test
from dxp_plugins.embeddings.binary import (
    BinaryCodes,
    check_codes,
    hamming,
    neighbour_overlap,
    projection,
    simhash,
)
from dxp_plugins.errors import OOVError
from dxp_plugins.mechanisms.brr import flip_probability, sample_flips
from dxp_plugins.neighbors import BinaryIndex
from tests.fixtures import all_codes, even_weight_codes, one_faiss_thread  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_faiss_thread")


def test_registry_defaults_and_guarantee(glove_5k):
    mech = dxp.make_mechanism("brr", glove_5k, epsilon=1.0)
    assert isinstance(mech, dxp.BRR) and mech.n_bits == 256 and mech.metric == "hamming"
    out = mech.privatize(["the", "house", "qzxv-not-a-word"])
    # Every output is a vocabulary word, so the OOV token was privatized from the UNK point
    # (the default oov="unk"), not passed through raw: "qzxv-not-a-word" is not in glove_5k.
    assert len(out) == 3 and all(word in glove_5k for word in out)
    record = mech.last_guarantee
    assert record.metric == "hamming" and record.tokens_privatized == 3
    assert record.oov_policy == "unk" and record.tokens_passed_through == 0
    assert record.embeddings == mech.fingerprint != glove_5k.fingerprint
    assert "Hamming distance" in record.statement
    assert mech.fingerprint != dxp.BRR(glove_5k, epsilon=1.0, n_bits=64).fingerprint


def test_code_length_is_fixed_and_every_bit_flips():
    """n_bits was a plain attribute that sampling read: ``n_bits = 7`` on 8-bit codes left
    the last bit unflipped (P(y|x) = 0 for words one bit apart) under an unchanged
    guarantee. It is read-only now, and sampling uses the codes' own length."""
    mech = dxp.BRR.from_codes(["x", "y"], [[0] * 8, [0] * 7 + [1]], epsilon=1.0)
    for setting, value in [("n_bits", 7), ("codes", [[0] * 7, [1] * 7]), ("metric", "x")]:
        with pytest.raises(AttributeError, match="build a new BRR"):
            setattr(mech, setting, value)
    for setting, value in [("n_bits", 7), ("packed", np.zeros((2, 1), dtype=np.uint8))]:
        with pytest.raises(AttributeError):
            setattr(mech.codes, setting, value)
    assert mech.n_bits == mech.codes.n_bits == 8
    counts = np.bincount(mech.privatize_ids(np.zeros(20_000, dtype=np.int64)), minlength=2)
    law = np.array([1.0 - flip_probability(1.0), flip_probability(1.0)])
    np.testing.assert_allclose(mech.distribution("x"), law, rtol=1e-12)
    assert g_test(counts, law) > 1e-6


def test_memory_is_bounded_by_blocks_not_by_codes(glove_5k):
    """SimHash projections and flip uniforms are float64, 8 bytes per bit: 5,000 words x
    4,096 bits and 8,192 tokens used to need 160 + 256 MiB of scratch. Blocks of rows
    bound it, and give the same codes and the same seeded flips as one big array."""
    import tracemalloc

    tracemalloc.start()
    try:
        mech = dxp.BRR(glove_5k, 1.0, n_bits=4096)
        mech.privatize_ids(np.arange(8192) % len(glove_5k))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 96 << 20, peak / 2**20  # three 32 MiB blocks
    whole = glove_5k.vectors[:3000].astype(np.float64) @ projection(glove_5k.dim, 1024)
    np.testing.assert_array_equal(simhash(glove_5k.vectors[:3000], 1024), whole > 0)
    flips = mech._flips(np.random.default_rng(4), 2500, 1.0)  # three blocks of 1,024 rows
    one_draw = sample_flips(np.random.default_rng(4), 2500, 4096, 1.0)
    np.testing.assert_array_equal(flips, np.packbits(one_draw, axis=1))


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        ([[0, 1, 2], [1, 0, 1]], "only 0 and 1"),
        ([[0, 1, 1], [1, 0]], "equal length"),
        ([0, 1, 1], "2-D"),
        (np.zeros((0, 4)), "2-D"),
        ([["0", "1"], ["1", "0"]], "0/1 values"),
        ([[0.0, 0.5], [1.0, 0.0]], "only 0 and 1"),
    ],
)
def test_code_validation(codes, message):
    with pytest.raises(ValueError, match=message):
        check_codes(codes)


def test_user_codes(glove_5k):
    rows = len(glove_5k)
    bits = np.random.default_rng(0).random((rows, 24)) < 0.5
    mech = dxp.BRR(glove_5k, epsilon=2.0, codes=bits.astype(np.int8))
    assert mech.n_bits == 24
    np.testing.assert_array_equal(mech.codes.bits(), bits)
    with pytest.raises(ValueError, match="rows"):
        dxp.BRR(glove_5k, epsilon=2.0, codes=bits[:10])
    with pytest.raises(ValueError, match="n_bits"):
        dxp.BRR(glove_5k, epsilon=2.0, codes=bits, n_bits=32)
    with pytest.raises(ValueError):
        dxp.BRR(glove_5k, epsilon=2.0, n_bits=0)
    with pytest.raises(TypeError):
        dxp.BRR(glove_5k, epsilon=2.0, n_bits=2.5)


def test_from_codes_and_oov():
    codes = all_codes(4)
    mech = dxp.BRR.from_codes([f"c{i}" for i in range(16)], codes, epsilon=3.0)
    assert mech.privatize(["c3"])[0].startswith("c")
    with pytest.raises(OOVError):
        dxp.BRR.from_codes([f"c{i}" for i in range(16)], codes, 3.0, oov="raise").privatize(["x"])


def test_codes_in_place_of_a_table_point_to_from_codes():
    """Review 9 L4: codes given where the table goes were sent to gensim's loader."""
    codes = all_codes(4)
    for given in (codes, BinaryCodes(codes)):
        with pytest.raises(TypeError, match=r"BRR\.from_codes\(words, codes, epsilon\)"):
            dxp.BRR(given, epsilon=1.0)


def test_a_word_to_code_mapping_takes_the_tables_place():
    """docs/tem-brr.md's ``dxp.BRR({word: code, ...}, epsilon)``: a {word: code} mapping is
    the same mechanism as BRR.from_codes over its items."""
    codes = all_codes(4)
    words = [f"c{i}" for i in range(len(codes))]
    mapping = dict(zip(words, codes.tolist(), strict=True))
    mech = dxp.BRR(mapping, epsilon=2.0, random_state=3)
    same = dxp.BRR.from_codes(words, codes, 2.0, random_state=3)
    assert mech.fingerprint == same.fingerprint
    assert list(mech.embeddings.words) == words
    assert mech.privatize(words * 5) == same.privatize(words * 5)
    assert np.array_equal(mech.codes.packed, same.codes.packed)
    with pytest.raises(TypeError, match="codes given twice"):
        dxp.BRR(mapping, epsilon=2.0, codes=codes)
    with pytest.raises(ValueError, match="only 0 and 1"):
        dxp.BRR({"a": [0, 2], "b": [1, 1]}, epsilon=2.0)
    assert dxp.make_mechanism("brr", mapping, epsilon=2.0).fingerprint == same.fingerprint


def test_simhash_is_public_and_data_independent(glove_5k):
    codes = BinaryCodes.simhash(glove_5k, 128)
    assert BinaryCodes.simhash(glove_5k, 128) is codes  # cached on the table
    # A word's code depends on its own vector only: the same rows from a smaller table.
    small = glove_5k.most_frequent(300)
    np.testing.assert_array_equal(
        BinaryCodes.simhash(small, 128).packed, codes.packed[small.lookup(list(small.words))]
    )
    directions = projection(50, 128)
    block = directions[:, :50]
    np.testing.assert_allclose(block.T @ block, np.eye(50), atol=1e-12)  # orthonormal blocks
    np.testing.assert_array_equal(simhash(glove_5k.vectors[:5], 128), codes.bits()[:5])


def test_neighbour_overlap_grows_with_bits(glove_5k):
    short = neighbour_overlap(glove_5k, BinaryCodes.simhash(glove_5k, 32), n_words=300)
    long = neighbour_overlap(glove_5k, BinaryCodes.simhash(glove_5k, 256), n_words=300)
    assert 0.0 <= short < long <= 1.0
    assert long > 0.4
    exact = BinaryCodes(simhash(glove_5k.vectors, 256))
    assert neighbour_overlap(glove_5k, exact, n_words=50, metric="angular") > 0.4


def test_storage_report(glove_5k):
    report = dxp.BRR(glove_5k, epsilon=1.0).storage()
    assert report["brr_codes"] == len(glove_5k) * 32
    assert report["madlib_vectors"] == len(glove_5k) * 50 * 4
    assert report["ratio"] == pytest.approx(0.16, abs=0.01) and report["saving"] > 0.8


def test_storage_reads_madlibs_index_size_without_building_it(glove_5k):
    """``storage()`` built Madlib's exact index to read its size (+93 MiB at 400k words).
    The size it states is the built index's, twins (one row per group) included."""
    vectors = glove_5k.vectors[:1500].copy()
    vectors[[7, 300, 1200]] = vectors[5]  # one group of four identical rows
    table = dxp.EmbeddingTable(glove_5k.words[:1500], vectors)
    report = dxp.BRR(table, epsilon=1.0, n_bits=64).storage()
    assert not any(key[0] == "neighbor-index" for key in table.cache if isinstance(key, tuple))
    built = dxp.neighbors.get_index(table, "exact").nbytes
    assert report["madlib_index"] == built == (1500 - 3) * 51 * 4
    assert dxp.BRR(table, epsilon=1.0, n_bits=64).storage() == report  # read from the index now


def test_distribution_needs_short_codes(glove_5k):
    with pytest.raises(NotImplementedError):
        dxp.BRR(glove_5k, epsilon=1.0, n_bits=64).distribution("the")


def test_codes_whose_length_is_not_a_multiple_of_8():
    """Padding bits are never flipped: the law matches exact enumeration at 10 bits."""
    rng = np.random.default_rng(1)
    codes = rng.random((40, 10)) < 0.5
    mech = dxp.BRR.from_codes([f"c{i}" for i in range(40)], codes, epsilon=1.0)
    counts = np.bincount(mech.privatize_ids(np.full(60_000, 7)), minlength=40)
    assert g_test(counts, mech.distribution(7)) > 1e-6


# -- the binary index ---------------------------------------------------------------------------
def test_binary_index_is_exact():
    rng = np.random.default_rng(2)
    packed = np.packbits(rng.random((500, 64)) < 0.5, axis=1)
    queries = np.packbits(rng.random((300, 64)) < 0.5, axis=1)
    found = BinaryIndex(packed).search(queries, np.random.default_rng())
    distances = hamming(queries, packed)
    np.testing.assert_array_equal(distances[np.arange(300), found], distances.min(axis=1))


def test_binary_index_ties_beyond_the_first_neighbours_are_uniform():
    """16 codes at distance 1 from the query (more than TIE_K): range search, uniform pick."""
    bits = np.eye(16, dtype=bool)
    farther = np.eye(16, dtype=bool) | np.roll(np.eye(16, dtype=bool), 1, axis=1)  # distance 2
    codes = np.r_[bits, np.ones((1, 16), dtype=bool), farther]
    index = BinaryIndex(np.packbits(codes, axis=1))
    query = np.packbits(np.zeros((40_000, 16), dtype=bool), axis=1)
    counts = np.bincount(index.search(query, np.random.default_rng()), minlength=len(codes))
    assert counts[16:].sum() == 0  # never a code beyond the minimum distance
    assert g_test(counts[:16], np.full(16, 1 / 16)) > 1e-6


def test_codes_are_fingerprinted_by_their_bits_and_read_only(glove_5k):
    """Two code books for one table are different Hamming spaces: different fingerprints,
    ledger units and indexes (a shared index decoded with the other book's codes)."""
    rng = np.random.default_rng(5)
    first = rng.random((len(glove_5k), 16)) < 0.5
    second = rng.random((len(glove_5k), 16)) < 0.5
    a, b = (dxp.BRR(glove_5k, 40.0, codes=bits) for bits in (first, second))
    assert a.codes.fingerprint != b.codes.fingerprint and a.ledger_unit != b.ledger_unit
    assert a.guarantee(1).embeddings != b.guarantee(1).embeddings
    assert a.codes.bits().shape == (len(glove_5k), 16)
    unique = np.flatnonzero(np.unique(second, axis=0, return_counts=True)[1] == 1)
    word = int(np.flatnonzero((second == np.unique(second, axis=0)[unique[0]]).all(axis=1))[0])
    a.privatize_ids(np.arange(10))  # builds and caches a's index first
    assert (b.privatize_ids(np.full(200, word)) == word).mean() > 0.9
    with pytest.raises(ValueError):
        a.codes.packed[0, 0] = 1
    odd = dxp.BRR.from_codes(["a", "b", "c", "d", "e"], all_codes(10)[:5], 1.0)
    assert odd.codes.bits().shape == (5, 10)


def test_binary_index_validation():
    with pytest.raises(ValueError):
        BinaryIndex(np.zeros((0, 2), dtype=np.uint8))
    index = BinaryIndex(np.zeros((3, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="shape"):
        index.search(np.zeros((1, 3), dtype=np.uint8), np.random.default_rng())
    assert index.search(np.zeros((0, 2), dtype=np.uint8), np.random.default_rng()).size == 0
    assert index.nbytes >= 6


def test_the_unk_code_is_the_public_code_of_the_centroid(glove_5k):
    """OOV words start from the code the public binarization gives the table's centroid
    (the same projection as every word's code), not from another projection."""
    mech = dxp.BRR(glove_5k, 1.0, n_bits=64)
    with_centroid = dxp.EmbeddingTable(
        [*glove_5k.words, "<centroid>"], np.r_[glove_5k.vectors, glove_5k.unk_vector()[None]]
    )
    centroid_code = dxp.BRR(with_centroid, 1.0, n_bits=64).codes.packed[-1]
    np.testing.assert_array_equal(mech._unk_code, centroid_code)


def test_oov_tokens_are_privatized_from_the_unk_code_not_row_0():
    """Review 10 (mutant B8): OOV tokens started from row 0's code, unseen because the audit
    fixture's UNK code is row 0's. Here the per-bit majority of the user codes is row 2;
    at epsilon 40 no bit flips (p ~ 4e-18), so an OOV token comes out as that word."""
    codes = [[1] * 8, [1, 1, 1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1, 0, 0]]
    mech = dxp.BRR.from_codes(["a", "b", "c"], codes, 40.0)
    assert (mech.privatize_ids(np.full(200, -1)) == 2).all()
    assert mech.privatize(["not-a-code-word"]) == ["c"]


@pytest.mark.statistical
def test_one_token_calls_follow_the_exact_law():
    """Review 10 (mutant B11, PRIVACY.md 2): a tie-break generator seeded from the input
    word (or a constant) passes every batch test, since the positions of one call still
    differ, but decodes the ties of each one-token release deterministically (3.5x the
    stated loss at epsilon 0.5). Separate one-token calls must keep the exact law."""
    codes = even_weight_codes(8)
    mech = dxp.BRR.from_codes([f"c{i}" for i in range(len(codes))], codes, 0.5)
    row = np.array([5])
    out = np.array([mech.privatize_ids(row)[0] for _ in range(3000)])
    law = mech.distribution(5)
    assert g_test(np.bincount(out, minlength=len(law)), law) > 1e-6


def test_exact_law_of_a_second_codebook_on_the_same_table_is_its_own():
    """Review 10 (mutant B14): the exact decoding table is cached on the embeddings table;
    two code books of one table must not share it (distribution() feeds exact
    calibration and plausible deniability)."""
    words = [f"w{i}" for i in range(6)]
    table = dxp.EmbeddingTable(words, np.eye(6))
    rng = np.random.default_rng(3)
    first, second = (rng.random((6, 8)) < 0.5 for _ in range(2))
    assert not np.array_equal(first, second)
    dxp.BRR(table, 1.0, codes=first).distribution(0)  # caches the first book's decoding
    mech = dxp.BRR(table, 1.0, codes=second)
    alone = dxp.BRR.from_codes(words, second, 1.0)  # a table of its own: nothing shared
    for row in range(6):
        np.testing.assert_allclose(mech.distribution(row), alone.distribution(row), rtol=1e-12)


def test_simhash_of_vectors_with_a_common_offset_warns(glove_5k):
    """BYOE review F3: SimHash's hyperplanes pass through the origin, so a table whose
    vectors share a large offset (+20, or all made non-negative) got codes that collide
    (244 of 256 bits constant over GloVe's 5k words at +20), silently. The real table, and
    the shifted one centred again, do not warn (warnings are errors in this suite)."""
    shifted = dxp.EmbeddingTable(glove_5k.words, glove_5k.vectors + 20.0)
    with pytest.warns(dxp.DxpWarning, match=r"bits are the same .* Centre them first"):
        dxp.BRR(shifted, epsilon=1.0, random_state=0)
    centred = shifted.vectors - shifted.vectors.mean(axis=0)
    codes = BinaryCodes.simhash(dxp.EmbeddingTable(glove_5k.words, centred))
    assert len(np.unique(codes.packed, axis=0)) == len(glove_5k)
    BinaryCodes.simhash(glove_5k)
