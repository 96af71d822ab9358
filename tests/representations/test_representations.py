"""The Representations container: columns, input kinds, seeds, pickling, errors, and use in
pearl.fit."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA as SklearnPCA
from sklearn.decomposition import KernelPCA as SklearnKernelPCA
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.random_projection import GaussianRandomProjection
from test_text import load_polarity

import pearlstats as pearl
from pearlstats.exceptions import (
    BlockError,
    DataError,
    MissingValueError,
    NotFittedError,
    OptionError,
)
from pearlstats.representations import (
    PCA,
    BagOfWords,
    Doc2Vec,
    FunctionLearner,
    KernelPCA,
    Raw,
    Representations,
    TfIdf,
    Word2Vec,
)

SIMULATION_KERNELS = ("rbf", "poly", "sigmoid", "cosine")


def squares(frame):
    """Module-level, so a Representations using it pickles."""
    return frame.to_numpy() ** 2


def simulation_learners(**options):
    learners = {"pca": PCA(2)}
    learners.update({f"kpca_{k}": KernelPCA(2, kernel=k, **options) for k in SIMULATION_KERNELS})
    return learners


@pytest.fixture(scope="module")
def frames():
    rng = np.random.default_rng(8)
    unlabeled = pd.DataFrame(rng.normal(size=(600, 2)), columns=["x1", "x2"])
    new = pd.DataFrame(rng.normal(size=(100, 2)), columns=["x1", "x2"])
    new["y"] = rng.normal(size=100)  # an extra column the learners must not read
    return {"unlabeled": unlabeled, "new": new}


@pytest.fixture(scope="module")
def texts():
    polarity = load_polarity()
    return pd.DataFrame(
        {"text": polarity["text"], "length": polarity["text"].str.len().astype(float)}
    )


def test_simulation_blocks_agree_with_sklearn_on_new_rows(frames):
    reps = Representations(simulation_learners(), columns=["x1", "x2"], seed=0).fit(
        frames["unlabeled"]
    )
    blocks = reps.transform(frames["new"])
    assert list(blocks) == reps.names == ["pca", *(f"kpca_{k}" for k in SIMULATION_KERNELS)]
    assert (
        reps.dims == dict.fromkeys(reps.names, 2)
        and reps.input_columns == ["x1", "x2"]
        and reps.is_fitted
    )
    train, new = frames["unlabeled"].to_numpy(), frames["new"][["x1", "x2"]].to_numpy()
    expected = {"pca": SklearnPCA(2).fit(train).transform(new)}
    for k in SIMULATION_KERNELS:
        expected[f"kpca_{k}"] = (
            SklearnKernelPCA(2, kernel=k, eigen_solver="dense").fit(train).transform(new)
        )
    for name, block in blocks.items():
        assert block.shape == (100, 2) and block.dtype == np.float64
        assert min(np.cos(subspace_angles(block, expected[name]))) >= 0.999
        np.testing.assert_allclose(np.abs(block), np.abs(expected[name]), atol=1e-8)


def test_each_learner_reads_its_own_columns_and_text(texts):
    rng = np.random.default_rng(1)
    data = texts.assign(x1=rng.normal(size=len(texts)), x3=rng.normal(size=len(texts)))
    reps = Representations({
        "pca": PCA(1),
        "joint": Raw(columns=["x1", "x3"]),
        "words": TfIdf(columns="text"),
        "size": Raw(columns="length", standardize=True),
    }, columns=["x1", "length"]).fit(data)
    blocks = reps.transform(data.head(20))
    np.testing.assert_array_equal(blocks["joint"], data[["x1", "x3"]].head(20).to_numpy())
    expected_pca = (
        SklearnPCA(1).fit(data[["x1", "length"]]).transform(data[["x1", "length"]].head(20))
    )
    np.testing.assert_allclose(np.abs(blocks["pca"]), np.abs(expected_pca), atol=1e-8)
    assert sp.isspmatrix_csr(blocks["words"]) and blocks["words"].shape == (20, reps.dims["words"])
    assert reps.input_columns == ["x1", "length", "x3", "text"]


def test_dict_rows_may_hold_2d_columns():
    rng = np.random.default_rng(2)
    pixels = rng.uniform(size=(80, 16))
    data = {"pixels": pixels, "brightness": pixels.mean(axis=1)}
    reps = Representations(
        {"raw": Raw(columns="pixels"), "pca": PCA(3, columns=["pixels", "brightness"])}
    ).fit(data)
    blocks = reps.transform(data)
    np.testing.assert_array_equal(blocks["raw"], pixels)
    both = np.column_stack([pixels, data["brightness"]])
    np.testing.assert_allclose(
        np.abs(blocks["pca"]), np.abs(SklearnPCA(3).fit(both).transform(both)), atol=1e-10
    )


def test_without_columns_a_learner_reads_the_fitted_columns_only(frames):
    reps = Representations({"raw": Raw()}).fit(frames["unlabeled"])
    assert reps.input_columns == ["x1", "x2"]
    np.testing.assert_array_equal(
        reps.transform(frames["new"])["raw"], frames["new"][["x1", "x2"]].to_numpy()
    )


def test_sklearn_objects_functions_and_inferred_text(frames, texts):
    reps = Representations({"projection": GaussianRandomProjection(2), "square": squares},
                           columns=["x1", "x2"], seed=3).fit(frames["unlabeled"])
    blocks = reps.transform(frames["new"])
    np.testing.assert_array_equal(blocks["square"], frames["new"][["x1", "x2"]].to_numpy() ** 2)
    seed = reps["projection"].random_state
    assert isinstance(seed, int)  # the container's seed reached the scikit-learn object
    direct = GaussianRandomProjection(2, random_state=seed).fit(frames["unlabeled"].to_numpy())
    np.testing.assert_array_equal(
        blocks["projection"], direct.transform(frames["new"][["x1", "x2"]].to_numpy())
    )
    text_reps = Representations({
        "sk_tfidf": TfidfVectorizer(),
        "lengths": FunctionLearner(lambda f: f["length"].to_numpy(), columns="length"),
    }, columns="text").fit(texts)
    text_blocks = text_reps.transform(texts.head(5))
    expected = TfidfVectorizer().fit(texts["text"]).transform(texts["text"].head(5))
    assert (
        sp.isspmatrix_csr(text_blocks["sk_tfidf"])
        and (text_blocks["sk_tfidf"] != expected).nnz == 0
    )
    np.testing.assert_array_equal(text_blocks["lengths"], texts[["length"]].head(5).to_numpy())


def test_seed_reaches_every_stochastic_learner_by_name(frames, texts):
    def blocks(seed, extra=False):
        learners = {"kpca": KernelPCA(2, method="nystrom", n_landmarks=40),
                    "projection": GaussianRandomProjection(2)}
        if extra:
            learners = {"first": PCA(1), **learners}
        reps = Representations(learners, columns=["x1", "x2"], seed=seed).fit(frames["unlabeled"])
        return reps.transform(frames["new"])

    same, again, other = blocks(5), blocks(5), blocks(6)
    for name in ("kpca", "projection"):
        np.testing.assert_array_equal(same[name], again[name])
        assert not np.allclose(np.abs(same[name]), np.abs(other[name]))
        np.testing.assert_array_equal(
            blocks(5, extra=True)[name], same[name]
        )  # keyed by name, not position
    word_blocks = [
        Representations({"w2v": Word2Vec(10, min_count=2)}, columns="text", seed=s)
        .fit(texts)
        .transform(texts.head(10))["w2v"]
        for s in (1, 1, 2)
    ]
    np.testing.assert_array_equal(word_blocks[0], word_blocks[1])
    assert not np.allclose(word_blocks[0], word_blocks[2])


def test_the_learners_passed_in_are_not_changed(frames):
    learner = KernelPCA(2, method="nystrom", n_landmarks=40)
    reps = Representations({"a": learner, "b": learner}, seed=1).fit(frames["unlabeled"])
    assert learner.seed is None and learner._weights is None
    assert reps["a"].seed != reps["b"].seed


def test_fit_transform_equals_fit_then_transform(frames):
    reps = Representations(simulation_learners(), columns=["x1", "x2"], seed=0)
    once = reps.fit_transform(frames["unlabeled"])
    twice = reps.fit(frames["unlabeled"]).transform(frames["unlabeled"])
    for name in once:
        np.testing.assert_array_equal(once[name], twice[name])


def test_pickled_representations_give_identical_blocks(frames, texts):
    rng = np.random.default_rng(4)
    data = texts.assign(x1=rng.normal(size=len(texts)), x2=rng.normal(size=len(texts)))
    learners = {
        **simulation_learners(method="randomized"),
        "square": squares,
        "raw": Raw(standardize=True),
        "counts": BagOfWords(columns="text"),
        "tfidf": TfIdf(columns="text"),
        "w2v": Word2Vec(10, min_count=2, columns="text"),
        "d2v": Doc2Vec(10, min_count=2, columns="text"),
    }
    reps = Representations(learners, columns=["x1", "x2"], seed=9).fit(data)
    before = reps.transform(data.head(30))
    restored = pickle.loads(pickle.dumps(reps))
    after = restored.transform(data.head(30))
    assert restored.dims == reps.dims and list(after) == list(before)
    for name, block in before.items():
        if sp.issparse(block):
            assert sp.isspmatrix_csr(after[name]) and (after[name] != block).nnz == 0
        else:
            np.testing.assert_array_equal(after[name], block)


def test_state_errors(frames):
    reps = Representations({"pca": PCA(2)})
    with pytest.raises(NotFittedError, match="fit"):
        reps.transform(frames["new"])
    with pytest.raises(NotFittedError):
        reps.dims
    with pytest.raises(NotFittedError, match="input_columns"):
        reps.input_columns
    assert Representations({"pca": PCA(2)}, columns=["x1", "x2"]).input_columns == ["x1", "x2"]
    with pytest.raises(BlockError, match="no representation named 'pcaa'"):
        reps.fit(frames["unlabeled"])["pcaa"]


def test_construction_errors():
    with pytest.raises(BlockError, match="non-empty dict"):
        Representations([PCA(2)])
    with pytest.raises(BlockError, match="class PCA"):
        Representations({"pca": PCA})
    with pytest.raises(BlockError, match="fit"):
        Representations({"pca": 3})
    with pytest.raises(BlockError, match="identifier"):
        Representations({"my pca": PCA(2)})
    with pytest.raises(BlockError, match="more than once"):
        Representations({"pca": PCA(2)}, columns=["x1", "x1"])
    with pytest.raises(OptionError, match="seed"):
        Representations({"pca": PCA(2)}, seed="zero")


def test_data_errors_name_the_learner_and_the_column(frames, texts):
    reps = Representations({"pca": PCA(2, columns=["x1", "x2"]), "words": TfIdf(columns="text")})
    with pytest.raises(DataError, match=r"representation 'words' reads column\(s\) \['text'\]"):
        reps.fit(frames["unlabeled"])
    numeric = Representations({"pca": PCA(2)}, columns=["x1", "x2"]).fit(frames["unlabeled"])
    with pytest.raises(DataError, match=r"'pca' reads column\(s\) \['x2'\]"):
        numeric.transform(frames["new"][["x1"]])
    holes = frames["new"].copy()
    holes.loc[[3, 7], "x2"] = np.nan
    with pytest.raises(MissingValueError, match="'pca': column 'x2' .* rows 3, 7"):
        numeric.transform(holes)
    with pytest.raises(DataError, match="column 'text' has dtype"):
        Representations({"pca": PCA(1)}, columns=["text"]).fit(texts)
    with pytest.raises(BlockError, match="exactly one column"):
        Representations({"words": TfIdf()}, columns=["text", "length"]).fit(texts)
    with pytest.raises(DataError, match="holds float values"):
        Representations({"words": TfIdf()}, columns="length").fit(texts)
    missing_text = texts.head(10).copy()
    missing_text.loc[2, "text"] = None
    with pytest.raises(MissingValueError, match="'text' is missing in row 2"):
        Representations({"words": TfIdf()}, columns="text").fit(missing_text)
    with pytest.raises(DataError, match="DataFrame or a dict"):
        numeric.transform(np.ones((3, 2)))
    with pytest.raises(DataError, match="different lengths"):
        numeric.transform({"x1": [1.0, 2.0], "x2": [1.0]})


def test_learner_failures_are_reported_with_the_learner_name(frames):
    def broken(frame):
        raise ZeroDivisionError("bad arithmetic")

    with pytest.raises(
        BlockError, match=r"'broken' \(FunctionLearner\) failed in transform: ZeroDivisionError"
    ):
        Representations({"broken": broken}).fit(frames["unlabeled"])
    with pytest.raises(BlockError, match="'short' returned 1 rows for 600"):
        Representations({"short": lambda f: np.ones((1, 2))}).fit_transform(frames["unlabeled"])
    with pytest.raises(BlockError, match="'nan' returned NaN or infinite values in rows 0, 1"):
        Representations({"nan": lambda f: np.full((len(f), 1), np.nan)}).fit_transform(
            frames["unlabeled"]
        )
    with pytest.raises(
        BlockError, match=r"representation 'kpca' \(KernelPCA\) failed in fit: .*n_components <= 2"
    ):
        Representations({"kpca": KernelPCA(3, kernel="linear", method="exact")}).fit(
            frames["unlabeled"]
        )


def test_pearl_fit_and_predict_use_the_representations(frames):
    rng = np.random.default_rng(12)
    labeled = pd.DataFrame(rng.normal(size=(150, 2)), columns=["x1", "x2"])
    labeled["y"] = labeled["x1"] ** 2 + 0.3 * rng.normal(size=150)
    reps = Representations(simulation_learners(), columns=["x1", "x2"], seed=0).fit(
        frames["unlabeled"]
    )
    formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
    res = pearl.fit(formula, labeled, blocks=reps, cv=5, seed=0)
    explicit = pearl.fit(formula, labeled, blocks=reps.transform(labeled), cv=5, seed=0)
    np.testing.assert_allclose(res.weights.to_numpy(), explicit.weights.to_numpy(), atol=1e-10)
    new = frames["new"]
    np.testing.assert_allclose(
        res.predict(new).to_numpy(),
        explicit.predict(new, blocks=reps.transform(new)).to_numpy(),
        atol=1e-10,
    )


def test_paper_simulation_end_to_end_predicts_raw_rows_like_hand_made_blocks():
    """Five blocks learned on the paper's 2 000 unlabeled rows; predict(raw rows) == predict(blocks
    by hand)."""
    from pearlstats.datasets import simulate_paper

    sim = simulate_paper(200, N=2000, n_test=300, sigma=0.5, seed=21)
    reps = Representations(simulation_learners(), columns=["x1", "x2"], seed=0).fit(sim.unlabeled)
    formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
    res = pearl.fit(formula, sim.labeled, blocks=reps, cv=5, seed=3)
    assert len(res.weights) == 31 and res.weights.sum() == pytest.approx(1.0, abs=1e-12)

    # The blocks "by hand": each learner refitted alone on the same unlabeled rows.
    by_hand = {}
    for name, learner in simulation_learners().items():
        if hasattr(learner, "seed"):
            learner.seed = reps[name].seed
        by_hand[name] = learner.fit(sim.unlabeled[["x1", "x2"]].to_numpy()).transform(
            sim.test[["x1", "x2"]].to_numpy()
        )
    from_raw = res.predict(sim.test)
    from_blocks = res.predict(sim.test, blocks=by_hand)
    np.testing.assert_allclose(from_raw.to_numpy(), from_blocks.to_numpy(), rtol=1e-9, atol=1e-9)
    # and the averaged model does something: better than predicting the labeled mean
    assert np.mean((sim.test["y"] - from_raw) ** 2) < np.var(sim.test["y"])


def test_binomial_pearl_over_three_text_blocks_of_real_sentences(texts):
    """Pang & Lee sentences: TF-IDF reduced by LSI, Word2Vec and Doc2Vec blocks; new sentences
    predicted."""
    from pearlstats.representations import LSI

    labels = load_polarity()["label"].to_numpy()
    data = pd.DataFrame({"text": texts["text"], "positive": labels})
    reps = Representations(
        {"lsi": LSI(8), "w2v": Word2Vec(8, min_count=2), "d2v": Doc2Vec(8, min_count=2)},
        columns="text",
        seed=5,
    ).fit(data)
    res = pearl.fit("positive ~ block(lsi) + block(w2v) + block(d2v)", data, blocks=reps,
                    family="binomial", cv=5, seed=1, ridge=1e-3)
    assert len(res.weights) == 7 and res.failures.empty
    new = pd.DataFrame(
        {"text": ["a moving , beautifully acted film .", "dull , tedious and far too long ."]}
    )
    probabilities = res.predict(new)
    assert probabilities.shape == (2,) and np.all((probabilities > 0) & (probabilities < 1))
    # the same prediction from the blocks of the new sentences computed by the fitted learners
    np.testing.assert_allclose(
        probabilities.to_numpy(), res.predict(new, blocks=reps.transform(new)).to_numpy()
    )


def test_evaluate_missing_drop_drops_rows_whose_text_is_missing(texts):
    # fit(missing="drop") dropped rows with a None/NaN text; evaluate(missing="drop") raised
    # the MissingValueError of the Representations instead of dropping them.
    from pearlstats.representations import LSI

    data = pd.DataFrame({"text": texts["text"], "positive": load_polarity()["label"]})
    reps = Representations({"lsi": LSI(4)}, columns="text", seed=0).fit(data)
    res = pearl.fit("positive ~ block(lsi)", data.iloc[::2], blocks=reps, family="binomial",
                    seed=0, honest=False)
    test = data.iloc[1::2].head(30).copy()
    test.iloc[[2, 17], 0] = [None, np.nan]
    test.iloc[9, 1] = np.nan  # and a missing response, dropped as before
    weights = np.random.default_rng(3).uniform(0.5, 2.0, len(test))
    keep = np.ones(len(test), dtype=bool)
    keep[[2, 9, 17]] = False
    scores = res.evaluate(test, weights=weights, missing="drop")
    # Reference: the same rows removed by hand (and their weights, by position); identical
    # arithmetic on the same rows, so equal to rounding
    by_hand = res.evaluate(test[keep], weights=weights[keep])
    pd.testing.assert_frame_equal(scores, by_hand, check_exact=False, rtol=1e-12, atol=0)
    assert scores.attrs["dropped_rows"] == (2, 9, 17)


def test_a_missing_text_is_named_by_the_data_label_at_fit_and_predict(texts):
    # The row label is how the user finds the row (df.loc[...]), as for covariates and blocks;
    # the message named its position, "row 3", even in data with labels of its own.
    from pearlstats.representations import LSI

    data = pd.DataFrame({"text": texts["text"], "positive": load_polarity()["label"],
                         "length": texts["length"]})
    data.index = [f"S{i:03d}" for i in range(len(data))]
    reps = Representations({"lsi": LSI(4)}, columns="text", seed=0).fit(data)
    res = pearl.fit("positive ~ block(lsi)", data, blocks=reps, family="binomial", seed=0,
                    honest=False)
    holed = data.head(20).copy()
    holed.loc["S003", "text"] = None
    calls = {
        "fit": lambda: pearl.fit("positive ~ block(lsi)", holed, blocks=reps,
                                 family="binomial", seed=0, honest=False),
        "predict": lambda: res.predict(holed),
        "get_prediction": lambda: res.get_prediction(holed),
        "evaluate": lambda: res.evaluate(holed),
        "transform": lambda: reps.transform(holed),
    }
    for name, call in calls.items():
        with pytest.raises(MissingValueError) as info:
            call()
        assert "'text' is missing in row labelled 'S003' (None, NaN or pd.NA)" in str(info.value)
        assert "row 3" not in str(info.value), name
    # a numeric learner's input too
    numeric = Representations({"pca": PCA(1)}, columns=["length"]).fit(data)
    holed = data.head(20).copy()
    holed.loc["S011", "length"] = np.nan
    with pytest.raises(MissingValueError, match="in row labelled 'S011'"):
        pearl.fit("positive ~ block(pca)", holed, blocks=numeric, family="binomial", seed=0)
    # a dict's rows have no labels: the position
    with pytest.raises(MissingValueError, match="'text' is missing in row 3 "):
        reps.transform({"text": holed["text"].where(holed.index != "S003", None).to_numpy()})


def test_a_fit_runs_only_the_formulas_learners():
    """A container holding a text learner whose column the labelled and new rows lack: a
    formula without that block fits and predicts (it refused, naming the unused learner or
    its column), equal to the same blocks transformed by hand and given as arrays."""
    rng = np.random.default_rng(0)
    unlabeled = pd.DataFrame({"x1": rng.normal(size=80), "x2": rng.normal(size=80),
                              "text": ["good film"] * 40 + ["bad plot"] * 40})
    reps = pearl.Representations({"tfidf": pearl.TfIdf(columns="text"),
                                  "pca": pearl.PCA(n_components=1, columns=["x1", "x2"]),
                                  "raw": pearl.Raw(columns=["x1"])}).fit(unlabeled)
    labeled = unlabeled.drop(columns="text").assign(y=rng.normal(size=80))
    res = pearl.fit("y ~ block(pca) + block(raw)", labeled, blocks=reps, seed=0, honest=False)
    by_hand = reps.transform(unlabeled, names=["pca", "raw"])
    assert list(by_hand) == ["pca", "raw"]
    arrays = pearl.fit("y ~ block(pca) + block(raw)", labeled, blocks=by_hand, seed=0,
                       honest=False)
    np.testing.assert_array_equal(res.weights, arrays.weights)
    new = labeled.head(5)
    np.testing.assert_array_equal(
        res.predict(new), arrays.predict(new, blocks=reps.transform(unlabeled.head(5),
                                                                     names=["pca", "raw"])))
    assert reps.columns_read_by(["pca", "raw"]) == ["x1", "x2"]
    with pytest.raises(pearl.BlockError, match=r"\['nope'\] are not among its blocks"):
        reps.transform(unlabeled, names=["nope"])


def test_a_lone_str_of_names_is_one_block_name():
    """transform(names="pca") and columns_read_by("pca") read the str as one name, as
    columns= does: with blocks pca, p and a they asked for blocks p, c and a ("['c'] are not
    among its blocks"), and names="pa" silently gave the blocks p and a."""
    rng = np.random.default_rng(0)
    rows = pd.DataFrame(rng.normal(size=(50, 3)), columns=["x1", "x2", "x3"])
    reps = Representations({"pca": PCA(2), "p": PCA(1), "a": Raw(columns=["x3"])},
                           columns=["x1", "x2"]).fit(rows)
    blocks = reps.transform(rows.head(4), names="pca")
    assert list(blocks) == ["pca"]
    reference = SklearnPCA(2).fit(rows[["x1", "x2"]]).transform(rows[["x1", "x2"]].head(4))
    np.testing.assert_allclose(np.abs(blocks["pca"]), np.abs(reference), atol=1e-12)
    raw = reps.transform(rows.head(4), names="a")
    assert list(raw) == ["a"]
    np.testing.assert_array_equal(raw["a"], rows[["x3"]].head(4).to_numpy())
    with pytest.raises(BlockError, match=r"\['pa'\] are not among its blocks"):
        reps.transform(rows, names="pa")
    assert reps.columns_read_by("pca") == ["x1", "x2"]
    assert reps.columns_read_by("a") == ["x3"]
    assert reps.columns_read_by("pa") == []


def test_seed_reaches_the_steps_of_a_scikit_learn_pipeline(frames):
    """A Pipeline learner's steps whose random_state is None get a seed derived from the
    container's (they kept None, and two fits with the same seed differed); a step's own
    random_state is kept, and the learner passed in is left as it was."""
    from sklearn.pipeline import make_pipeline

    given = make_pipeline(GaussianRandomProjection(2), GaussianRandomProjection(2, random_state=7))

    def fitted(seed):
        return Representations({"proj": given}, columns=["x1", "x2"], seed=seed).fit(
            frames["unlabeled"])

    same, again, other = fitted(5), fitted(5), fitted(6)
    blocks = [reps.transform(frames["new"])["proj"] for reps in (same, again, other)]
    np.testing.assert_array_equal(blocks[0], blocks[1])
    assert not np.allclose(np.abs(blocks[0]), np.abs(blocks[2]))
    first, second = (step for _, step in same["proj"].steps)
    assert second.random_state == 7 == other["proj"][1].random_state  # the step's own seed wins
    assert isinstance(first.random_state, int)
    assert first.random_state != other["proj"][0].random_state
    assert given[0].random_state is None  # the user's pipeline is not seeded in place
    # the block is the pipeline fitted by hand with those seeds
    by_hand = make_pipeline(GaussianRandomProjection(2, random_state=first.random_state),
                            GaussianRandomProjection(2, random_state=7))
    by_hand.fit(frames["unlabeled"].to_numpy())
    np.testing.assert_array_equal(blocks[0],
                                  by_hand.transform(frames["new"][["x1", "x2"]].to_numpy()))
