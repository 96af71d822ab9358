"""The MLP downstream learner: end-to-end PEARL fits, no fold leakage, determinism, failures.

Blocks come from scikit-learn's digits (a PCA by numpy SVD on separate
unlabeled rows, and a few raw pixels), so the checks do not depend on
pearlstats' own representation learners. Networks are kept tiny so the file
runs in seconds on two shared cores.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="the MLP downstream learner needs the optional 'deep' extra (torch)"
)

import pearlstats as pearl
from pearlstats.design.candidates import Candidate
from pearlstats.downstream.mlp import MLP, MLPResults
from pearlstats.exceptions import AllCandidatesFailedError, CandidateFailureWarning, OptionError
from pearlstats.families import EncodedResponse

FAST = {"hidden": 16, "epochs": 40, "batch_size": 128, "lr": 1e-2, "patience": 5}
FORMULA = "y ~ block(pca) + block(pix)"
PIXELS = [20, 21, 27, 28, 35, 36, 43, 44]


@pytest.fixture(scope="module")
def digits():
    from sklearn.datasets import load_digits

    images = load_digits()
    X, y = images.data, images.target
    order = np.random.default_rng(0).permutation(len(y))
    unlabeled, train, test = order[:500], order[500:860], order[860:1160]
    center = X[unlabeled].mean(axis=0)
    _, _, Vt = np.linalg.svd(X[unlabeled] - center, full_matrices=False)

    def rows(index):
        return {"y": y[index], "pca": (X[index] - center) @ Vt[:8].T, "pix": X[index][:, PIXELS]}

    return rows(train), rows(test)


@pytest.fixture(scope="module")
def multinomial_fit(digits):
    train, _ = digits
    return pearl.fit(
        FORMULA, train, family="multinomial", cv=3, seed=0, downstream=MLP(**FAST, seed=0)
    )


def _explicit_folds(n, k=3, seed=1):
    return np.random.default_rng(seed).permutation(np.arange(n) % k)


def test_multinomial_pearl_end_to_end(digits, multinomial_fit):
    train, test = digits
    res = multinomial_fit
    weights = res.weights.to_numpy()
    assert weights.min() >= 0 and weights.sum() == pytest.approx(1.0, abs=1e-9)
    assert res.cv_predictions.shape == (len(train["y"]), 3 * 10)
    text = str(res.summary())
    assert "multinomial" in text and "pca" in text

    probabilities = res.predict({key: test[key] for key in ("pca", "pix")}).to_numpy()
    assert probabilities.shape == (len(test["y"]), 10)
    assert probabilities.min() >= 0
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-12)
    majority = np.mean(test["y"] == np.bincount(train["y"]).argmax())
    assert np.mean(probabilities.argmax(axis=1) == test["y"]) > majority + 0.5

    refit = res.candidates["pca+pix"]
    assert isinstance(refit, MLPResults)
    inputs = 1 + 8 + 8  # intercept, then both blocks
    assert refit.n_params == (inputs * 16 + 16) + (16 * 10 + 10)
    assert "16 ReLU" in repr(refit)


def test_out_of_fold_predictions_ignore_the_held_out_responses(digits):
    """Relabelling fold 0's rows must not move fold 0's out-of-fold predictions."""
    train, _ = digits
    folds = _explicit_folds(len(train["y"]))
    relabelled = dict(train, y=np.where(folds == 0, (train["y"] + 3) % 10, train["y"]))
    options = {"family": "multinomial", "cv": folds, "seed": 0}
    original = pearl.fit(
        FORMULA, train, downstream=MLP(**FAST), **options
    ).cv_predictions.to_numpy()
    changed = pearl.fit(
        FORMULA, relabelled, downstream=MLP(**FAST), **options
    ).cv_predictions.to_numpy()
    held_out = folds == 0
    np.testing.assert_array_equal(original[held_out], changed[held_out])
    # the other folds' networks trained on the relabelled rows, so theirs move
    assert np.abs(original[~held_out] - changed[~held_out]).max() > 1e-3


def test_fold_predictions_come_from_a_network_trained_on_the_training_rows_only(digits):
    train, _ = digits
    n = len(train["y"])
    X = np.column_stack([np.ones(n), train["pca"]])
    codes = train["y"].astype(np.intp)
    classes = list(range(10))
    candidate = Candidate("pca", ("pca",), np.arange(9))
    folds = _explicit_folds(n)
    family = MLP(**FAST, seed=3).bind("multinomial")
    out = family.cv_predict(X, EncodedResponse(codes, classes), [candidate], folds, 0.0)
    for k in range(3):
        rows = folds != k
        # only the training rows exist for this network: any leak of fold k is impossible here
        fitted, notes = family.fit_params(
            X[rows], EncodedResponse(codes[rows], classes), candidate.columns, 0.0, "pca"
        )
        assert notes == []
        mine = family.predict(fitted, X[~rows][:, candidate.columns])
        # the same float32 network; only the float64 BLAS rounding of the last layer may differ
        np.testing.assert_allclose(out.predictions[~rows, 0], mine, rtol=1e-10, atol=1e-14)


def test_same_seed_same_predictions_regardless_of_candidate_order(digits, multinomial_fit):
    train, _ = digits
    again = pearl.fit(
        FORMULA, train, family="multinomial", cv=3, seed=0, downstream=MLP(**FAST, seed=0),
        candidates=[("pca", "pix"), ("pix",), ("pca",)],
    )
    first = multinomial_fit.cv_predictions
    np.testing.assert_array_equal(again.cv_predictions[first.columns].to_numpy(), first.to_numpy())
    other_seed = pearl.fit(
        FORMULA, train, family="multinomial", cv=3, seed=0, downstream=MLP(**FAST, seed=1)
    )
    assert not np.allclose(other_seed.cv_predictions.to_numpy(), first.to_numpy())


def _nonlinear_rows(rng, n):
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    return a, b, np.sin(2 * a[:, 0]) + a[:, 1] ** 2


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_heads_beat_a_constant_predictor_on_held_out_rows(family):
    rng = np.random.default_rng(7)
    a, b, signal = _nonlinear_rows(rng, 500)
    if family == "gaussian":
        y = signal + rng.normal(scale=0.3, size=500)
    elif family == "binomial":
        y = np.where(rng.random(500) < 1 / (1 + np.exp(-2 * (signal - 1))), "yes", "no")
    else:
        y = rng.poisson(np.exp(0.5 * signal)).astype(float)
    fit_rows, test_rows = slice(0, 300), slice(300, 500)
    data = {"y": y[fit_rows], "a": a[fit_rows], "b": b[fit_rows]}
    res = pearl.fit("y ~ block(a) + block(b)", data, family=family, cv=3, seed=0,
                    downstream=MLP(hidden=32, epochs=150, batch_size=64, lr=1e-2, patience=15))
    assert res.cv_predictions.shape == (300, 3)
    predicted = res.predict({"a": a[test_rows], "b": b[test_rows]}).to_numpy()
    assert predicted.shape == (200,)
    observed = y[test_rows]
    if family == "gaussian":
        constant = y[fit_rows].mean()
        assert np.mean((observed - predicted) ** 2) < 0.25 * np.mean((observed - constant) ** 2)
    elif family == "binomial":
        hit = (observed == "yes").astype(float)
        assert predicted.min() > 0 and predicted.max() < 1
        rate = np.mean(y[fit_rows] == "yes")

        def log_loss(p):
            return -np.mean(hit * np.log(p) + (1 - hit) * np.log(1 - p))

        assert log_loss(predicted) < 0.85 * log_loss(np.full(200, rate))
    else:
        from scipy.stats import poisson

        constant = y[fit_rows].mean()
        assert (
            poisson.logpmf(observed, predicted).mean()
            > poisson.logpmf(observed, constant).mean() + 0.5
        )


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_a_network_without_hidden_layers_is_the_glm(family):
    """hidden=() leaves the head and loss alone: full-batch training must reach statsmodels' MLE."""
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    X = np.column_stack([np.ones(300), rng.normal(size=(300, 3))])
    eta = 0.5 + X[:, 1] - 0.8 * X[:, 2]
    if family == "binomial":
        y = (rng.random(300) < 1 / (1 + np.exp(-eta))).astype(float)
        model, response = sm.Logit(y, X), EncodedResponse(y, [0, 1])
    else:
        y = rng.poisson(np.exp(0.5 * eta)).astype(float)
        model, response = sm.GLM(y, X, family=sm.families.Poisson()), EncodedResponse(y)
    linear = MLP(
        hidden=(), epochs=400, batch_size=512, lr=5e-2, validation_fraction=0.0, patience=400
    )
    fitted, _ = linear.bind(family).fit_params(X, response, np.arange(4), 0.0, "x")
    assert (
        fitted.n_params == 4 + 1
    )  # the intercept column is standardised to 0; the bias takes its place
    np.testing.assert_allclose(
        fitted.predict(X), model.fit(disp=0).predict(X), rtol=2e-3, atol=2e-3
    )


def test_pickled_results_predict_identically_with_and_without_torch(
    digits, multinomial_fit, tmp_path
):
    _, test = digits
    blocks = {key: test[key] for key in ("pca", "pix")}
    expected = multinomial_fit.predict(blocks).to_numpy()
    restored = pickle.loads(pickle.dumps(multinomial_fit))
    np.testing.assert_array_equal(restored.predict(blocks).to_numpy(), expected)

    path = tmp_path / "fit.pkl"
    path.write_bytes(pickle.dumps((multinomial_fit, blocks, expected)))
    script = textwrap.dedent(f"""
        import importlib.abc, pickle, sys
        import numpy as np

        class NoTorch(importlib.abc.MetaPathFinder):  # as if torch were not installed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ModuleNotFoundError("No module named torch")

        sys.meta_path.insert(0, NoTorch())
        import pearlstats.downstream.mlp
        from pearlstats.representations.deep import MissingDependencyError
        res, blocks, expected = pickle.loads(open({str(path)!r}, "rb").read())
        assert np.array_equal(res.predict(blocks).to_numpy(), expected)
        try:
            pearlstats.downstream.mlp.MLP().bind("gaussian")
        except MissingDependencyError as err:
            assert "torch" in str(err)
        else:
            raise AssertionError("bind without torch did not raise")
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def test_diverging_training_is_recorded_not_raised():
    rng = np.random.default_rng(0)
    X = np.column_stack([np.ones(60), rng.normal(size=(60, 3))])
    y = X[:, 1] + rng.normal(size=60)
    family = MLP(hidden=8, epochs=5, lr=1e20).bind("gaussian")
    candidates = [Candidate("a", ("a",), np.arange(3)), Candidate("b", ("b",), np.array([0, 3]))]
    out = family.cv_predict(X, EncodedResponse(y), candidates, _explicit_folds(60), 0.0)
    assert out.failed.tolist() == [True, True]
    assert np.isnan(out.predictions).all()
    assert [(e.candidate, e.stage, e.kind, e.excluded) for e in out.entries] == [
        ("a", "cv", "failed", True), ("b", "cv", "failed", True)]
    assert "diverged" in out.entries[0].reason

    fitted, notes = family.fit_params(X, EncodedResponse(y), np.arange(3), 0.0, "a")
    assert [(n.stage, n.excluded) for n in notes] == [("refit", False)]
    assert fitted.best_epoch == 0 and np.isfinite(family.predict(fitted, X[:, :3])).all()

    data = {"y": y, "a": X[:, 1:3], "b": X[:, 3:]}
    with (
        pytest.raises(AllCandidatesFailedError, match="diverged"),
        pytest.warns(CandidateFailureWarning),
    ):
        pearl.fit(
            "y ~ block(a) + block(b)",
            data,
            cv=3,
            seed=0,
            downstream=MLP(hidden=8, epochs=5, lr=1e20),
        )


def test_early_stopping_and_ridge():
    rng = np.random.default_rng(2)
    X = np.column_stack([np.ones(200), rng.normal(size=(200, 4))])
    codes = (X[:, 1] + X[:, 2] ** 2 + rng.normal(size=200) > 1).astype(float)
    family = MLP(hidden=16, epochs=300, lr=5e-2, patience=4, validation_fraction=0.2).bind(
        "binomial"
    )
    response = EncodedResponse(codes, ["no", "yes"])
    fitted, _ = family.fit_params(X, response, np.arange(5), 0.0, "x")
    counts = np.bincount(codes.astype(int))
    assert fitted.n_validation == int(np.floor(0.2 * counts[0]) + np.floor(0.2 * counts[1]))
    assert fitted.best_epoch == int(np.argmin(fitted.validation_loss))
    assert (
        fitted.epochs_run == fitted.best_epoch + 4 < 300
    )  # stopped after `patience` epochs without improvement

    penalised, _ = family.fit_params(X, response, np.arange(5), 1.0, "x")

    def weight_norm(f):
        return sum(float((W**2).sum()) for W, _ in f.layers)

    assert weight_norm(penalised) < 0.5 * weight_norm(fitted)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"hidden": 0}, "hidden"),
        ({"hidden": "64"}, "hidden"),
        ({"epochs": 0}, "epochs"),
        ({"lr": 0.0}, "lr"),
        ({"weight_decay": -1.0}, "weight_decay"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"patience": 1.5}, "patience"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_options_name_the_option(options, named):
    with pytest.raises(OptionError, match=named):
        MLP(**options)


def test_bind_rejects_unknown_families():
    with pytest.raises(OptionError, match="tweedie"):
        MLP().bind("tweedie")


@pytest.mark.parametrize("downstream", [None, "mlp", "estimator"])
def test_a_constant_gaussian_response_is_refused_with_or_without_a_downstream_model(downstream):
    """The base family's response checks hold for every downstream model (the network used to
    train on a constant response without a word, where OLS and an estimator refuse it)."""
    from sklearn.linear_model import LinearRegression

    from pearlstats.exceptions import ResponseError

    rng = np.random.default_rng(0)
    data = {"y": np.full(60, 3.0), "a": rng.normal(size=(60, 3))}
    model = {None: None, "mlp": MLP(**FAST, seed=0), "estimator": LinearRegression()}[downstream]
    with pytest.raises(ResponseError, match="the gaussian response is constant"):
        pearl.fit("y ~ block(a)", data, downstream=model, seed=0)
