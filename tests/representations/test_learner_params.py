"""Every learner follows scikit-learn's estimator conventions (checked with its own tools)."""

from __future__ import annotations

import numpy as np
import pytest

sklearn_base = pytest.importorskip("sklearn.base")
from sklearn.utils.validation import check_is_fitted

import pearlstats.representations as frl
from pearlstats.exceptions import NotFittedError, OptionError
from pearlstats.representations import deep


def _learners():
    """One learner of each class, with non-default arguments (including **options)."""
    return [
        frl.PCA(np.int64(2), standardize=True),
        frl.Raw(standardize=True, columns=["a"]),
        frl.KernelPCA(2, kernel="poly", gamma=0.5, degree=2, seed=3),
        frl.BagOfWords(min_df=1, max_features=20),
        frl.TfIdf(smartirs="ntc", max_df=0.9),
        frl.LSI(2, seed=1, min_df=1, tokenizer=frl.cased_tokenizer),
        frl.Word2Vec(4, min_count=1, seed=1, negative=3),
        frl.Doc2Vec(4, dm=0, min_count=1, seed=1, alpha=0.02),
        frl.PretrainedVectors("vectors.txt", limit=10, encoding="latin-1"),
        frl.FunctionLearner(np.log1p, columns=["x"]),
        deep.Autoencoder(2, epochs=1, hidden_dim=8, seed=0, progress=False),
        deep.VAE(2, beta=0.5, epochs=1, hidden_dim=8, seed=0, progress=False),
        deep.SimCLR(2, temperature=0.2, epochs=1, hidden_dim=8, seed=0, progress=False),
        deep.SentenceEncoder("all-MiniLM-L6-v2", batch_size=4, progress=False),
    ]


LEARNERS = _learners()
IDS = [type(learner).__name__ for learner in LEARNERS]


@pytest.mark.parametrize("learner", LEARNERS, ids=IDS)
def test_sklearn_clone_keeps_every_constructor_argument(learner):
    # sklearn's clone rebuilds the learner from get_params(deep=False) and raises if the
    # constructor does not store each argument as given (its identity check)
    copy = sklearn_base.clone(learner)
    assert type(copy) is type(learner) and copy is not learner
    params, copied = learner.get_params(deep=False), copy.get_params(deep=False)
    assert params.keys() == copied.keys()
    for name, value in params.items():
        assert repr(copied[name]) == repr(value), name


@pytest.mark.parametrize("learner", LEARNERS, ids=IDS)
def test_set_params_round_trip(learner):
    params = learner.get_params(deep=True)
    fresh = type(learner)(**learner.get_params(deep=False))
    assert fresh.get_params(deep=True).keys() == params.keys()
    other = sklearn_base.clone(learner).set_params(**params)
    assert {k: repr(v) for k, v in other.get_params().items()} == {
        k: repr(v) for k, v in params.items()
    }


def test_set_params_changes_what_fit_uses_and_checks_values():
    X = np.random.default_rng(0).normal(size=(40, 4))
    pca = frl.PCA(2).set_params(n_components=3)
    assert pca.get_params()["n_components"] == 3
    assert pca.fit(X).transform(X).shape == (40, 3)
    with pytest.raises(OptionError, match="n_components=0 must be an integer"):
        frl.PCA(2).set_params(n_components=0)
    with pytest.raises(OptionError, match="no parameter 'n_component'.*n_components"):
        frl.PCA(2).set_params(n_component=1)
    # gensim options given as **options are parameters too
    w2v = frl.Word2Vec(4, negative=3).set_params(negative=5, window=2)
    assert w2v.options["negative"] == 5 and w2v.options["window"] == 2


def test_constructor_sets_no_fitted_attribute():
    for learner in _learners():
        fitted = [name for name in vars(learner) if name.endswith("_") and not name.startswith("_")]
        assert fitted == [], type(learner).__name__
        if isinstance(learner, frl.FunctionLearner):
            # nothing to learn: always ready, as scikit-learn's FunctionTransformer
            check_is_fitted(learner)
            continue
        with pytest.raises(Exception) as raised:  # scikit-learn's own judgement
            check_is_fitted(learner)
        assert type(raised.value).__name__ == "NotFittedError"


@pytest.mark.parametrize(
    "learner, X",
    [
        (frl.PCA(2), np.random.default_rng(1).normal(size=(30, 3))),
        (frl.KernelPCA(2, seed=0), np.random.default_rng(2).normal(size=(30, 3))),
        (frl.TfIdf(), ["good film", "bad film", "good plot"]),
        (frl.LSI(1, seed=0), ["good film", "bad film", "good plot"]),
    ],
    ids=["PCA", "KernelPCA", "TfIdf", "LSI"],
)
def test_clone_of_a_fitted_learner_is_unfitted(learner, X):
    learner.fit(X)
    check_is_fitted(learner)
    copy = sklearn_base.clone(learner)
    with pytest.raises(NotFittedError):
        copy.transform(X)
    # and fitting the clone gives the original's block
    np.testing.assert_array_equal(_dense(copy.fit(X).transform(X)), _dense(learner.transform(X)))


def _dense(block):
    return block.toarray() if hasattr(block, "toarray") else block


def _signature_defaults(cls) -> dict:
    """Every constructor argument's default over the class's bases (empty if it has none)."""
    import inspect

    defaults: dict = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is not None and klass is not object:
            for name, parameter in inspect.signature(init).parameters.items():
                defaults.setdefault(name, parameter.default)
    return defaults


@pytest.mark.parametrize("learner", LEARNERS, ids=IDS)
def test_repr_names_every_argument_given_away_from_its_default(learner):
    # KernelPCA(..., seed=3) printed as KernelPCA(n_components=2, kernel='poly', method='auto'):
    # a fitted Representations showed its learners without the seeds and gammas that make
    # two of them transform differently
    defaults = _signature_defaults(type(learner))
    text = repr(learner)
    for name, value in learner.get_params(deep=False).items():
        if callable(value):  # FunctionLearner(log1p), a tokenizer: shown by name or not at all
            continue
        if name not in defaults or repr(defaults[name]) != repr(value):  # given, or **options
            assert f"{name}=" in text, (name, text)


def test_set_params_takes_the_options_a_learner_was_built_without():
    """Word2Vec(8).set_params(negative=2) sets the gensim option as Word2Vec(8, negative=2)
    does (it said "has no parameter 'negative'", so a grid search over w2v__negative failed on
    a default learner); get_params reports it. Likewise Doc2Vec's and LSI's options."""
    from gensim.models import Word2Vec as GensimWord2Vec
    from gensim.utils import simple_preprocess
    from sklearn.linear_model import Ridge
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import Pipeline
    from test_text import load_polarity

    documents = load_polarity()["text"].tolist()[:300]
    w2v = frl.Word2Vec(6, min_count=2, seed=3).set_params(negative=2, sample=0)
    assert w2v.get_params()["negative"] == 2 and w2v.get_params()["sample"] == 0
    block = w2v.fit(documents).transform(documents[:20])
    # gensim trained by hand with the same settings (one worker: deterministic)
    tokens = [simple_preprocess(text) for text in documents]
    model = GensimWord2Vec(tokens, vector_size=6, min_count=2, seed=3, workers=1, negative=2,
                           sample=0, window=5, epochs=5, sg=0)
    expected = []
    for words in tokens[:20]:
        known = [model.wv[w].astype(np.float64) for w in words if w in model.wv.key_to_index]
        expected.append(np.mean(known, axis=0) if known else np.zeros(6))
    np.testing.assert_allclose(block, np.array(expected), rtol=1e-12, atol=1e-15)
    assert sklearn_base.clone(w2v).options["negative"] == 2
    d2v = frl.Doc2Vec(4).set_params(dm_concat=1, alpha=0.02)
    assert d2v.get_params()["dm_concat"] == 1 and d2v.options["alpha"] == 0.02
    lsi = frl.LSI(2).set_params(min_df=3, smartirs="ntc")
    assert lsi.get_params()["min_df"] == 3 and lsi.vocabulary == {"min_df": 3, "smartirs": "ntc"}
    assert lsi.fit(documents).tfidf_.vocabulary_ == frl.TfIdf(min_df=3).fit(documents).vocabulary_
    # the constructor's checks still apply, and an option gensim does not take is refused
    with pytest.raises(OptionError, match="no parameter 'sentences'"):
        frl.Word2Vec(4).set_params(sentences=documents)
    with pytest.raises(OptionError, match="no parameter 'negativ'.*'negative'"):
        frl.Word2Vec(4).set_params(negativ=5)
    with pytest.raises(OptionError, match="'seed' is None.*seed__x sets nothing"):
        frl.Word2Vec(4).set_params(seed__x=1)
    # a grid search over a gensim option of a default learner
    search = GridSearchCV(
        Pipeline([("w2v", frl.Word2Vec(4, min_count=2, seed=0)), ("ridge", Ridge())]),
        {"w2v__negative": [2, 5]}, cv=2,
    ).fit(documents, np.arange(len(documents)) % 2)
    assert search.best_params_["w2v__negative"] in (2, 5)
    assert search.best_estimator_["w2v"].get_params()["negative"] in (2, 5)
