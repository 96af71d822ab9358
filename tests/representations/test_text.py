"""Counts, TF-IDF and LSI on real sentences, against scikit-learn, scipy and numpy computations.

The corpora ship with gensim: Pang & Lee polarity sentences (200 lines,
latin-1, each starting with ``__label__neg`` or ``__label__pos``) and the Lee
background news corpus (300 unlabeled documents).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from gensim.utils import simple_preprocess
from scipy.linalg import subspace_angles
from sklearn.feature_extraction.text import CountVectorizer

from pearlstats.exceptions import BlockError, DataError, NotFittedError, OptionError
from pearlstats.representations import LSI, BagOfWords, TfIdf


def gensim_test_file(name: str) -> Path:
    import gensim

    return Path(gensim.__file__).parent / "test" / "test_data" / name


def load_polarity() -> pd.DataFrame:
    """The 200 labelled sentences: columns ``text`` and ``label`` (1 = positive)."""
    lines = gensim_test_file("pang_lee_polarity.cor").read_text(encoding="latin-1").splitlines()
    tags, texts = zip(*(line.split(" ", 1) for line in lines))
    return pd.DataFrame(
        {"text": [t.strip() for t in texts], "label": [int(tag == "__label__pos") for tag in tags]}
    )


def load_lee_background() -> list[str]:
    lines = gensim_test_file("lee_background.cor").read_text(encoding="latin-1").splitlines()
    return [line for line in lines if line.strip()]


@pytest.fixture(scope="module")
def corpus():
    polarity = load_polarity()
    assert polarity.shape == (200, 2) and polarity["label"].sum() == 100
    return {"train": polarity["text"].tolist(), "new": load_lee_background()[:40]}


def sklearn_counts(train, new, **options):
    vectorizer = CountVectorizer(analyzer=simple_preprocess, **options).fit(train)
    return vectorizer.get_feature_names_out().tolist(), vectorizer.transform(new)


def in_sklearn_order(block, vocabulary, sklearn_vocabulary):
    position = {word: j for j, word in enumerate(vocabulary)}
    return block[:, [position[word] for word in sklearn_vocabulary]]


@pytest.mark.parametrize(
    "options", [{}, {"min_df": 2, "max_df": 0.5}], ids=["all-words", "filtered"]
)
def test_counts_match_sklearn_count_vectorizer(corpus, options):
    learner = BagOfWords(**options).fit(corpus["train"])
    words, expected = sklearn_counts(corpus["train"], corpus["new"], **options)
    assert sorted(learner.vocabulary_) == words
    block = learner.transform(corpus["new"])
    assert sp.isspmatrix_csr(block) and block.dtype == np.float64
    assert (in_sklearn_order(block, learner.vocabulary_, words) != expected).nnz == 0


def test_max_features_keeps_the_words_in_most_documents(corpus):
    learner = BagOfWords(max_features=30).fit(corpus["train"])
    frequencies = pd.Series({word: sum(word in simple_preprocess(t) for t in corpus["train"])
                             for word in BagOfWords().fit(corpus["train"]).vocabulary_})
    assert len(learner.vocabulary_) == 30
    assert frequencies[learner.vocabulary_].min() >= frequencies.drop(learner.vocabulary_).max()


def test_tfidf_is_count_times_log2_idf_unit_rows(corpus):
    learner = TfIdf().fit(corpus["train"])
    words, train_counts = sklearn_counts(corpus["train"], corpus["train"])
    _, new_counts = sklearn_counts(corpus["train"], corpus["new"])
    document_frequency = np.asarray((train_counts > 0).sum(axis=0)).ravel()
    weights = new_counts.toarray() * np.log2(len(corpus["train"]) / document_frequency)
    norms = np.linalg.norm(weights, axis=1, keepdims=True)
    expected = np.divide(weights, norms, out=np.zeros_like(weights), where=norms > 0)
    block = learner.transform(corpus["new"])
    assert sp.isspmatrix_csr(block)
    np.testing.assert_allclose(
        in_sklearn_order(block, learner.vocabulary_, words).toarray(), expected, atol=1e-12
    )


def test_lsi_spans_the_top_singular_directions_of_tfidf(corpus):
    k = 10
    learner = LSI(k, seed=0).fit(corpus["train"])
    X = TfIdf().fit(corpus["train"]).transform(corpus["train"])
    # Reference: the dense SVD, not the sparse solver LSI itself uses.
    _, singular, right = np.linalg.svd(X.toarray(), full_matrices=False)
    singular, right = singular[:k], right[:k]
    assert min(np.cos(subspace_angles(learner.components_, right.T))) >= 0.999
    np.testing.assert_allclose(learner.singular_values_, np.sort(singular)[::-1], rtol=1e-8)
    block = learner.transform(corpus["new"])
    new_tfidf = learner.tfidf_.transform(corpus["new"])
    np.testing.assert_allclose(block, new_tfidf @ learner.components_, atol=1e-12)
    np.testing.assert_array_equal(
        LSI(k, seed=0).fit(corpus["train"]).transform(corpus["new"]), block
    )


def test_custom_tokenizer_is_used(corpus):
    learner = BagOfWords(tokenizer=str.split).fit(["Hello World", "hello again"])
    assert learner.vocabulary_ == ["Hello", "World", "again", "hello"]


def test_unknown_words_are_ignored():
    learner = BagOfWords().fit(["good film"])
    block = learner.transform(["unseen words only", "good good"])
    expected = [[0.0, 0.0], [2.0 if word == "good" else 0.0 for word in learner.vocabulary_]]
    np.testing.assert_array_equal(block.toarray(), expected)


def test_errors_name_the_problem(corpus):
    with pytest.raises(DataError, match="single string"):
        BagOfWords().fit("one document")
    with pytest.raises(OptionError, match="list of str"):
        BagOfWords(tokenizer=str.lower).fit(["a b"])
    with pytest.raises(OptionError, match="max_df"):
        TfIdf(max_df=2.0)
    with pytest.raises(BlockError, match="no vocabulary"):
        BagOfWords().fit(["!!", "?"])
    with pytest.raises(NotFittedError):
        TfIdf().transform(["text"])
    with pytest.raises(BlockError, match="n_components <= 2"):
        LSI(5).fit(["good film", "bad film", "good plot"])


def _tokenizer_without_return(text):
    text.lower().split()  # forgot `return`: the tokenizer returns None


def test_a_tokenizer_returning_none_is_named_not_a_bare_type_error():
    # used to be "TypeError: 'NoneType' object is not iterable" from inside the check
    with pytest.raises(OptionError, match="the tokenizer must return a list of str; for "
                                          "document 0 it returned None"):
        TfIdf(tokenizer=_tokenizer_without_return).fit(["good film", "bad plot"])


def test_a_generator_tokenizer_keeps_its_tokens():
    # the check used to use the generator up, leaving every document empty
    docs = ["good good film", "bad film", "good plot"]
    lazy = BagOfWords(tokenizer=lambda text: (word for word in text.split())).fit(docs)
    reference = CountVectorizer(tokenizer=str.split, lowercase=False, token_pattern=None)
    counts = reference.fit_transform(docs).toarray()
    order = [reference.vocabulary_[word] for word in lazy.vocabulary_]
    np.testing.assert_array_equal(lazy.transform(docs).toarray(), counts[:, order])


def test_lsi_refuses_components_beyond_the_rank_of_the_tfidf_matrix(corpus):
    # 40 real sentences, each twice: 80 documents, but the TF-IDF matrix has the rank of the 40
    # distinct ones. A direction past the rank used to be the solver's arbitrary null-space
    # vector: zero on the training rows, but different for each seed on new documents.
    distinct = corpus["train"][:40]
    doubled = distinct + distinct
    # Reference: numpy's rank of the dense matrix (its default tolerance, which the 1e-10
    # squared-ratio cut-off agrees with on a matrix of unit-length rows)
    rank = np.linalg.matrix_rank(TfIdf().fit(doubled).transform(doubled).toarray())
    assert rank <= 40
    with pytest.raises(BlockError, match=rf"found only {rank} non-zero singular value\(s\).*"
                                         rf"use n_components <= {rank}"):
        LSI(rank + 1, seed=0).fit(doubled)
    # at the rank the block does not depend on the seed beyond rounding (1e-10 on values
    # of order 1: the solver converges to machine precision)
    blocks = [LSI(rank, seed=s).fit(doubled).transform(corpus["new"]) for s in (0, 1)]
    np.testing.assert_allclose(blocks[0], blocks[1], atol=1e-10)


def test_lsi_of_documents_sharing_every_word_is_a_block_error_not_arpack():
    # every word in every document: all idf are 0 (log2(3/3)), the TF-IDF matrix is zero
    documents = ["good film", "film good", "good good film"]
    np.testing.assert_array_equal(TfIdf().fit(documents).transform(documents).toarray(), 0.0)
    with pytest.raises(BlockError, match="TF-IDF matrix of zeros"):
        LSI(1, seed=0).fit(documents)


def test_lsi_names_itself_for_a_wrong_input_not_the_tfidf_inside_it():
    from pearlstats.representations import LSI

    docs = ["good film", "bad film", "good plot", "a bad plot"]
    lsi = LSI(2, seed=0).fit(docs)
    with pytest.raises(DataError, match=r"^LSI needs a list of documents, got a single string"):
        lsi.transform("good movie")
    with pytest.raises(DataError, match=r"^LSI got no documents"):
        LSI(2, seed=0).fit([])
    # LSI's own columns= picks the DataFrame column (the TfIdf inside it has none)
    frame = pd.DataFrame({"id": range(4), "text": docs})
    np.testing.assert_array_equal(LSI(2, seed=0, columns="text").fit(frame).transform(frame),
                                  lsi.transform(docs))
