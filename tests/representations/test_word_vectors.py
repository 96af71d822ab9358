"""Word2Vec and Doc2Vec learners: averages and inference checked against gensim itself and plain
loops."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from gensim.models.keyedvectors import pseudorandom_weak_vector
from gensim.utils import simple_preprocess
from test_text import load_lee_background, load_polarity

from pearlstats.exceptions import BlockError, NotFittedError, OptionError
from pearlstats.representations import Doc2Vec, Word2Vec
from pearlstats.representations.word_vectors import infer_vector

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def corpus():
    return {"train": load_lee_background(), "new": load_polarity()["text"].tolist()[:60]}


@pytest.fixture(scope="module")
def word2vec(corpus):
    return Word2Vec(vector_size=20, min_count=2, seed=7).fit(corpus["train"])


@pytest.fixture(scope="module")
def doc2vec(corpus):
    return Doc2Vec(vector_size=20, dm=0, min_count=2, epochs=20, seed=7).fit(corpus["train"])


def test_word2vec_block_is_the_mean_of_known_word_vectors(word2vec, corpus):
    documents = corpus["new"] + ["zzzz qqqq"]
    block = word2vec.transform(documents)
    vectors = word2vec.vectors_
    for row, text in enumerate(documents):
        known = [
            vectors[w].astype(np.float64)
            for w in simple_preprocess(text)
            if w in vectors.key_to_index
        ]
        expected = np.mean(known, axis=0) if known else np.zeros(20)
        np.testing.assert_allclose(block[row], expected, rtol=1e-12, atol=1e-15)
    assert block.dtype == np.float64 and not block[-1].any()


def test_word2vec_seed_gives_identical_vectors_and_another_seed_does_not(word2vec, corpus):
    again = (
        Word2Vec(vector_size=20, min_count=2, seed=7).fit(corpus["train"]).transform(corpus["new"])
    )
    other = (
        Word2Vec(vector_size=20, min_count=2, seed=8).fit(corpus["train"]).transform(corpus["new"])
    )
    np.testing.assert_array_equal(again, word2vec.transform(corpus["new"]))
    assert not np.allclose(other, again)


@pytest.mark.parametrize("dm", [1, 0])
def test_doc2vec_inference_is_gensims_given_the_same_randomness(corpus, dm):
    learner = Doc2Vec(vector_size=10, dm=dm, min_count=2, epochs=5, seed=1).fit(
        corpus["train"][:80]
    )
    model = learner.model_
    for words in (simple_preprocess(text) for text in corpus["new"][:3]):
        model.random = np.random.RandomState(99)
        expected = model.infer_vector(words)  # starts from a vector seeded by hash(" ".join(words))
        start = pseudorandom_weak_vector(10, seed_string=" ".join(words))
        np.testing.assert_array_equal(infer_vector(model, words, start, key=99), expected)


def test_doc2vec_inferred_training_documents_are_nearest_their_trained_vectors(doc2vec, corpus):
    inferred = doc2vec.transform(corpus["train"])
    trained = doc2vec.model_.dv.vectors[: len(inferred)].astype(np.float64)
    inferred /= np.linalg.norm(inferred, axis=1, keepdims=True)
    trained /= np.linalg.norm(trained, axis=1, keepdims=True)
    nearest = np.argmax(inferred @ trained.T, axis=1)
    assert np.mean(nearest == np.arange(len(inferred))) >= 0.8


def test_doc2vec_rows_do_not_depend_on_the_batch_and_unknown_text_is_zero(doc2vec, corpus):
    batch = doc2vec.transform(corpus["new"][:5] + ["zzzz qqqq"])
    alone = np.vstack([doc2vec.transform([text]) for text in corpus["new"][:5]])
    np.testing.assert_array_equal(batch[:5], alone)
    assert not batch[5].any() and np.all(np.abs(batch[:5]).sum(axis=1) > 0)


def test_blocks_are_identical_in_a_process_with_another_hash_seed(
    word2vec, doc2vec, corpus, tmp_path
):
    script = textwrap.dedent(
        f"""
        import sys
        import numpy as np
        sys.path[:0] = [{str(REPO)!r}, {str(REPO / "tests" / "representations")!r}]
        from test_text import load_lee_background, load_polarity
        from pearlstats.representations import Doc2Vec, Word2Vec
        train, new = load_lee_background(), load_polarity()["text"].tolist()[:60]
        w2v = Word2Vec(vector_size=20, min_count=2, seed=7).fit(train).transform(new)
        doc2vec = Doc2Vec(vector_size=20, dm=0, min_count=2, epochs=20, seed=7)
        d2v = doc2vec.fit(train).transform(new)
        np.savez({str(tmp_path / "blocks.npz")!r}, w2v=w2v, d2v=d2v)
        """
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=120)
    other = np.load(tmp_path / "blocks.npz")
    np.testing.assert_array_equal(other["w2v"], word2vec.transform(corpus["new"]))
    np.testing.assert_array_equal(other["d2v"], doc2vec.transform(corpus["new"]))


def test_errors_name_the_problem(corpus):
    with pytest.raises(BlockError, match="min_count=50"):
        Word2Vec(min_count=50, seed=0).fit(["a few words", "only here"])
    with pytest.raises(BlockError, match="min_count=50"):
        Doc2Vec(min_count=50, seed=0).fit(["a few words", "only here"])
    with pytest.raises(OptionError, match="vector_size"):
        Word2Vec(vector_size=0)
    with pytest.raises(OptionError, match="seed"):
        Doc2Vec(seed=-1)
    with pytest.raises(NotFittedError):
        Doc2Vec().transform(["text"])
    with pytest.raises(NotFittedError):
        Word2Vec().transform(["text"])


@pytest.mark.parametrize("learner", [Word2Vec, Doc2Vec])
def test_training_options_that_train_nothing_are_refused(learner, corpus):
    """gensim takes negative=-1 without a word and trains nothing (its loop over negative + 1
    samples is empty): the block was the random start. Checked here on gensim itself."""
    from gensim.models import Word2Vec as GensimWord2Vec

    documents = [simple_preprocess(text) for text in corpus["train"][:40]]
    model = GensimWord2Vec(vector_size=8, negative=-1, min_count=2, seed=0, workers=1)
    model.build_vocab(documents)
    start = model.wv.vectors.copy()
    model.train(documents, total_examples=len(documents), epochs=2)
    np.testing.assert_array_equal(model.wv.vectors, start)
    for options, message in [({"negative": -1}, "negative=-1 must be a finite number >= 0"),
                             ({"negative": 2.5}, "negative=2.5 must be an integer >= 0"),
                             ({"hs": 0, "negative": 0}, "no training objective"),
                             ({"hs": 2}, "hs=2 must be 0 or 1"),
                             ({"alpha": 0.0}, "alpha=0.0 must be a finite positive number"),
                             ({"sample": -1e-3}, "sample=-0.001 must be a finite number >= 0")]:
        with pytest.raises(OptionError, match=message):
            learner(**options)
        with pytest.raises(OptionError, match=message):
            learner().set_params(**options)
    trained = learner(vector_size=8, hs=1, negative=0, min_count=2, epochs=2, seed=0)
    assert np.abs(trained.fit_transform(corpus["train"][:40])).sum() > 0
