"""Pretrained word vectors: blocks checked against vectors parsed by hand from gensim's test files.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from gensim.utils import simple_preprocess
from test_text import gensim_test_file, load_polarity

from pearlstats.exceptions import DataError, NotFittedError, OptionError
from pearlstats.representations import PretrainedVectors, load_word_vectors

GLOVE = gensim_test_file("test_glove.txt")  # GloVe text: no header line, 76 words x 50
# word2vec text with a "1694 100" header; one word is a latin-1 byte that is not valid UTF-8
FASTTEXT_VEC = gensim_test_file("pang_lee_polarity_fasttext.vec")


def parse_text_vectors(path, header: bool, encoding: str) -> dict[str, np.ndarray]:
    lines = path.read_text(encoding=encoding).splitlines()[1 if header else 0:]
    return {
        parts[0]: np.array(parts[1:], dtype=np.float64)
        for parts in (line.rstrip().split(" ") for line in lines)
    }


def expected_means(table, documents, size):
    rows = []
    for text in documents:
        known = [table[w] for w in simple_preprocess(text) if w in table]
        rows.append(np.mean(known, axis=0) if known else np.zeros(size))
    return np.array(rows)


@pytest.fixture(scope="module")
def sentences():
    return load_polarity()["text"].tolist()[:50] + ["qqqq zzzz"]


@pytest.mark.parametrize(
    "path, header, encoding",
    [(GLOVE, False, "utf-8"), (FASTTEXT_VEC, True, "latin-1")],
    ids=["glove", "word2vec-text"],
)
def test_blocks_are_means_of_the_file_vectors(path, header, encoding, sentences):
    table = parse_text_vectors(path, header, encoding)
    size = len(next(iter(table.values())))
    block = PretrainedVectors(path, encoding=encoding).fit(sentences).transform(sentences)
    # the files store 5-6 significant digits and gensim keeps float32
    np.testing.assert_allclose(block, expected_means(table, sentences, size), rtol=1e-6, atol=1e-6)
    assert not block[-1].any() and block.dtype == np.float64


@pytest.mark.parametrize("suffix, binary", [(".bin", True), (".txt", False)])
def test_binary_and_word2vec_text_files_give_the_same_block(tmp_path, sentences, suffix, binary):
    vectors = load_word_vectors(GLOVE, "glove")
    path = tmp_path / f"vectors{suffix}"
    vectors.save_word2vec_format(str(path), binary=binary)
    reference = PretrainedVectors(vectors).fit().transform(sentences)
    np.testing.assert_array_equal(PretrainedVectors(path).fit().transform(sentences), reference)


def test_gensim_native_format_and_limit(tmp_path, sentences):
    vectors = load_word_vectors(GLOVE)
    path = tmp_path / "vectors.kv"
    vectors.save(str(path))
    np.testing.assert_array_equal(load_word_vectors(path).vectors, vectors.vectors)
    limited = load_word_vectors(GLOVE, limit=10)
    assert limited.index_to_key == vectors.index_to_key[:10]


def test_copies_share_the_loaded_vectors():
    learner = PretrainedVectors(GLOVE).fit()
    assert copy.deepcopy(learner).vectors_ is learner.vectors_


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(OptionError, match="does not exist"):
        PretrainedVectors(tmp_path / "missing.txt").fit()
    broken = tmp_path / "broken.txt"
    broken.write_text("2 3\nword 0.1 oops 0.2\n")
    with pytest.raises(OptionError, match="broken.txt"):
        load_word_vectors(broken)
    with pytest.raises(OptionError, match="encoding='latin-1'"):
        load_word_vectors(FASTTEXT_VEC)
    with pytest.raises(OptionError, match="format"):
        PretrainedVectors(GLOVE, format="fasttext")
    with pytest.raises(NotFittedError):
        PretrainedVectors(GLOVE).transform(["text"])


@pytest.mark.parametrize("first_line", [None, "3", "3 x", ""],
                         ids=["glove-file", "one-token", "word", "empty-file"])
def test_a_word2vec_file_without_its_header_line_is_named(tmp_path, first_line):
    """format="word2vec" on a file whose first line is not "<count> <dim>" says so and points
    to format="glove": gensim's GloVe file raised int()'s bare ValueError (b'0.418'), a
    one-token header an IndexError. The same file read as GloVe gives its 76 x 50 vectors."""
    if first_line is None:
        path = GLOVE
    else:
        path = tmp_path / "odd.vec"
        path.write_text(first_line + ("\nthe 0.1 0.2\n" if first_line else ""))
    message = r"is not a word2vec header '<count> <dim>'.*format='glove'"
    with pytest.raises(OptionError, match=message):
        load_word_vectors(path, format="word2vec")
    with pytest.raises(OptionError, match=message):
        PretrainedVectors(path, format="word2vec").fit()
    if first_line is None:
        vectors = load_word_vectors(path, format="glove")
        table = parse_text_vectors(GLOVE, header=False, encoding="utf-8")
        assert len(vectors) == len(table) == 76
        np.testing.assert_allclose(vectors["the"], table["the"], rtol=1e-6)


@pytest.mark.parametrize("content, format", [("0 0\n", "word2vec"), ("5 0\n", "word2vec"),
                                             ("2 3\n", "word2vec"), ("", "glove"),
                                             ("\n\n", "auto"), ("a\nb\n", "glove")],
                         ids=["header-0-0", "size-0", "header-only", "empty-glove",
                              "blank-lines", "words-without-values"])
def test_a_file_without_word_vectors_is_refused(tmp_path, sentences, content, format):
    """A file holding no vectors gave every document an empty block row (a block of 0
    columns from a "0 0" header or blank lines), or gensim's TypeError about None."""
    path = tmp_path / "empty.txt"
    path.write_text(content)
    with pytest.raises(DataError, match=r"empty\.txt.*(no word vectors|0 value)"):
        PretrainedVectors(path, format=format).fit_transform(sentences)
    with pytest.raises(OptionError, match="limit=0 must be an integer >= 1"):
        load_word_vectors(GLOVE, limit=0)
