"""Agreement with R: lm, glm and quadprog::solve.QP reference values.

The reference files under ``tests/results/reference/`` were written by
``tests/results/reference/make_r_references.R`` (see the README there); R is not needed
to run these tests. Two kinds of check:

* direct statsmodels fits (``sm.OLS``, ``sm.Logit``, Poisson ``sm.GLM``) and the
  ``quadprog`` package on the same data agree with R, so the references are sound;
* ``pearlstats.fit`` with R's fold labels reproduces R's out-of-fold predictions
  and coefficients (1e-8) and the gaussian simplex weights (1e-6).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import quadprog
import statsmodels.api as sm

RESULTS = Path(__file__).parent / "results" / "reference"
BLOCKS = {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"], "c": ["c1"]}
LABELS = [
    "a",
    "b",
    "c",
    "a+b",
    "a+c",
    "b+c",
    "a+b+c",
]  # every non-empty subset, by size, in formula order
FAMILIES = ["gaussian", "binomial", "poisson"]
FORMULA = "y ~ x + block(a) + block(b) + block(c)"
COEF_TOL = 1e-8
WEIGHT_TOL = 1e-6


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(RESULTS / name)


def candidate_columns(label: str) -> list[str]:
    return [column for block in label.split("+") for column in BLOCKS[block]]


def r_coefficients(family: str, label: str) -> np.ndarray:
    """R's estimates in pearlstats' order: Intercept, x, then the block columns in formula order."""
    table = read(f"{family}_coefficients.csv")
    table = table[table["candidate"] == label].set_index("term")["estimate"]
    order = ["(Intercept)", "x", *candidate_columns(label)]
    assert sorted(table.index) == sorted(order)
    return table.loc[order].to_numpy()


def statsmodels_fit(family: str, y: np.ndarray, X: np.ndarray):
    if family == "gaussian":
        return sm.OLS(y, X).fit()
    if family == "binomial":
        return sm.Logit(y, X).fit(method="newton", tol=1e-12, maxiter=100, disp=False)
    return sm.GLM(y, X, family=sm.families.Poisson()).fit(tol=1e-14, maxiter=100)


def design(frame: pd.DataFrame, label: str) -> np.ndarray:
    return np.column_stack(
        [np.ones(len(frame)), frame[["x", *candidate_columns(label)]].to_numpy()]
    )


def simplex_qp(P: np.ndarray, y: np.ndarray, ridge: float = 0.0) -> np.ndarray:
    """The same programme R solved: min 1/2 w'(P'P + ridge I)w - (P'y)'w, sum(w) = 1, w >= 0."""
    J = P.shape[1]
    constraints = np.column_stack([np.ones(J), np.eye(J)])
    return quadprog.solve_qp(
        P.T @ P + ridge * np.eye(J), P.T @ y, constraints, np.r_[1.0, np.zeros(J)], meq=1
    )[0]


# ---- the reference files themselves --------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_reference_files_are_complete(family):
    data = read(f"{family}_data.csv")
    assert data.columns.tolist() == ["x", "a1", "a2", "b1", "b2", "b3", "c1", "y", "fold"]
    assert not data.isna().any().any()
    np.testing.assert_array_equal(data["fold"], np.arange(len(data)) % 5 + 1)
    predictions = read(f"{family}_cv_predictions.csv")
    assert predictions.columns.tolist() == LABELS and len(predictions) == len(data)
    assert not predictions.isna().any().any()
    assert set(read(f"{family}_coefficients.csv")["candidate"]) == set(LABELS)


# ---- R against direct statsmodels fits and the quadprog package ----------------------------------
@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("label", LABELS)
def test_statsmodels_coefficients_match_r(family, label):
    data = read(f"{family}_data.csv")
    fitted = statsmodels_fit(family, data["y"].to_numpy(dtype=float), design(data, label))
    np.testing.assert_allclose(
        fitted.params, r_coefficients(family, label), rtol=COEF_TOL, atol=COEF_TOL
    )


@pytest.mark.parametrize("family", FAMILIES)
def test_statsmodels_out_of_fold_predictions_match_r(family):
    data = read(f"{family}_data.csv")
    y, folds = data["y"].to_numpy(dtype=float), data["fold"].to_numpy()
    expected = read(f"{family}_cv_predictions.csv")
    for label in LABELS:
        X = design(data, label)
        oof = np.empty(len(data))
        for fold in np.unique(folds):
            held = folds == fold
            oof[held] = statsmodels_fit(family, y[~held], X[~held]).predict(X[held])
        np.testing.assert_allclose(
            oof, expected[label], rtol=COEF_TOL, atol=COEF_TOL, err_msg=label
        )


def test_r_gaussian_weights_solve_the_simplex_programme():
    """quadprog in Python gives R's weights, and they satisfy the KKT conditions of the QP."""
    data = read("gaussian_data.csv")
    P, y = read("gaussian_cv_predictions.csv")[LABELS].to_numpy(), data["y"].to_numpy()
    info = read("gaussian_qp_info.csv").set_index("quantity")["value"]
    assert info["ridge"] == 0  # P'P was positive definite: the weights are the exact minimiser
    weights = read("gaussian_weights.csv").set_index("candidate").loc[LABELS, "weight"].to_numpy()
    np.testing.assert_allclose(simplex_qp(P, y), weights, atol=1e-10)
    assert abs(weights.sum() - 1) < 1e-12 and weights.min() > -1e-12
    assert np.mean((y - P @ weights) ** 2) == pytest.approx(info["mse"], rel=1e-12)
    # KKT: the gradient P'(Pw - y) is equal (to the multiplier) on the support and no smaller off it
    gradient = P.T @ (P @ weights - y)
    support = weights > 1e-8
    assert support.sum() == info["n_active"] >= 2
    multiplier = gradient[support].mean()
    np.testing.assert_allclose(gradient[support], multiplier, atol=1e-8 * np.abs(gradient).max())
    assert np.all(gradient[~support] >= multiplier - 1e-8 * np.abs(gradient).max())


def test_duplicated_column_matches_r_solve_qp():
    data = read("qp_duplicate_data.csv")
    P, y = data[["p1", "p2", "p3", "p4"]].to_numpy(), data["y"].to_numpy()
    np.testing.assert_array_equal(data["p2"], data["p4"])
    info = read("qp_duplicate_info.csv").set_index("quantity")["value"]
    reference = read("qp_duplicate_weights.csv").set_index("column")
    # R refuses the singular P'P; the Python port of the same Fortran routine refuses it too
    assert "not positive definite" in info["unridged_error"]
    with pytest.raises(ValueError, match="not positive definite"):
        simplex_qp(P, y)
    ridge = float(info["ridge"])
    assert ridge == pytest.approx(1e-10 * np.mean(np.sum(P**2, axis=0)), rel=1e-12)
    np.testing.assert_allclose(simplex_qp(P, y, ridge), reference["ridged_weight"], atol=WEIGHT_TOL)
    reduced = reference["reduced_weight"].iloc[:3].to_numpy()
    np.testing.assert_allclose(simplex_qp(P[:, :3], y), reduced, atol=1e-10)
    # the ridge splits the duplicated weight (nearly) evenly and leaves the rest unchanged
    ridged = reference["ridged_weight"].to_numpy()
    np.testing.assert_allclose(ridged[[1, 3]], reduced[1] / 2, atol=WEIGHT_TOL)
    np.testing.assert_allclose(ridged[[0, 2]], reduced[[0, 2]], atol=WEIGHT_TOL)


# ---- pearlstats' public API against R ------------------------------------------------------------
@pytest.fixture(scope="module")
def pearl():
    return pytest.importorskip("pearlstats")


@pytest.fixture(scope="module")
def pearl_fits(pearl):
    fits = {}
    for family in FAMILIES:
        data = read(f"{family}_data.csv")
        blocks = {name: data[columns].to_numpy() for name, columns in BLOCKS.items()}
        fits[family] = pearl.fit(
            FORMULA,
            data,
            blocks=blocks,
            family=family,
            candidates="all",
            cv=data["fold"].to_numpy(),
        )
    return fits


@pytest.mark.parametrize("family", FAMILIES)
def test_pearl_uses_the_given_folds_and_candidates(pearl_fits, family):
    res = pearl_fits[family]
    folds = read(f"{family}_data.csv")["fold"].to_numpy()
    assert list(res.candidate_labels) == LABELS
    # same partition of the rows (fold codes may be relabelled)
    assert pd.crosstab(np.asarray(res.folds), folds).gt(0).sum(axis=1).eq(1).all()
    assert len(np.unique(res.folds)) == 5


@pytest.mark.parametrize("family", FAMILIES)
def test_pearl_out_of_fold_predictions_match_r(pearl_fits, family):
    expected = read(f"{family}_cv_predictions.csv")[LABELS]
    got = pearl_fits[family].cv_predictions[LABELS]
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), rtol=COEF_TOL, atol=COEF_TOL)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("label", LABELS)
def test_pearl_candidate_coefficients_match_r(pearl_fits, family, label):
    params = np.asarray(pearl_fits[family].candidates[label].params)
    np.testing.assert_allclose(params, r_coefficients(family, label), rtol=COEF_TOL, atol=COEF_TOL)


def test_pearl_gaussian_weights_match_r(pearl_fits):
    expected = read("gaussian_weights.csv").set_index("candidate")["weight"]
    got = pearl_fits["gaussian"].weights
    np.testing.assert_allclose(got[LABELS].to_numpy(), expected[LABELS].to_numpy(), atol=WEIGHT_TOL)


def test_pearl_weight_solver_on_the_duplicated_column_matches_r(pearl):
    weights_module = pytest.importorskip("pearlstats.weights")
    losses = pytest.importorskip("pearlstats.weights.losses")
    data = read("qp_duplicate_data.csv")
    P, y = data[["p1", "p2", "p3", "p4"]].to_numpy(), data["y"].to_numpy()
    reference = read("qp_duplicate_weights.csv")["ridged_weight"].to_numpy()
    solution = weights_module.solve_weights(P, y, losses.get_loss("squared", "gaussian"))
    np.testing.assert_allclose(solution.weights, reference, atol=WEIGHT_TOL)
