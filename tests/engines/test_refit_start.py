"""The all-rows refits of binomial and Poisson candidates reuse the cross-validation's fits.

The cross-validation's all-rows fit of a candidate solves the refit's problem (same rows,
standardisation, ridge and start); the refit takes it instead of solving again, and the
coefficients are the same as a refit from scratch and statsmodels'.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.design.candidates import Candidate
from pearlstats.engines import glm


def _problem(kind: str, n: int = 3000):
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    eta = 0.5 * a[:, 0] - 0.4 * b[:, 1] + 0.3
    y = (eta + rng.logistic(size=n) > 0.0) if kind == "binomial" else rng.poisson(np.exp(eta))
    X = np.column_stack([np.ones(n), a, b])
    candidates = [Candidate("a+b", ("a", "b"), np.arange(6)),
                  Candidate("b", ("b",), np.array([0, 4, 5]))]
    return X, y.astype(float), candidates, np.arange(n) % 5


def _counting(monkeypatch) -> list:
    calls: list = []
    solve = glm._solve

    def counted(*args, **kwargs):
        calls.append(1)
        return solve(*args, **kwargs)

    monkeypatch.setattr(glm, "_solve", counted)
    return calls


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
@pytest.mark.parametrize("ridge", [0.0, 0.1])
def test_refit_after_cross_validation_reuses_its_all_rows_fit(kind, ridge, monkeypatch):
    X, y, candidates, folds = _problem(kind)
    glm.glm_cv_predict(kind, X, y, candidates, folds, ridge)
    calls = _counting(monkeypatch)
    reused = [glm.glm_fit(kind, X, y, c.columns, ridge)[0] for c in candidates]
    assert calls == []  # no Newton fit at all: the cross-validation's optima are the answers
    # Another array with the same values is not matched (it could differ by the time of the
    # refit): those refits solve from scratch.
    cold = [glm.glm_fit(kind, X.copy(), y, c.columns, ridge)[0] for c in candidates]
    assert len(calls) == len(candidates)
    for mine, fresh in zip(reused, cold):
        # Both fits stop with Newton decrements near 1e-24 (coefficients within ~1e-12 of
        # the optimum); the CV's sums its Hessians by fold, so rounding differs slightly.
        np.testing.assert_allclose(mine, fresh, rtol=1e-10, atol=1e-12)
    if ridge == 0.0:
        family = sm.families.Binomial() if kind == "binomial" else sm.families.Poisson()
        for c, mine in zip(candidates, reused):
            full = sm.GLM(y, X[:, c.columns], family=family).fit(tol=1e-12)
            # statsmodels' IRLS stops on a 1e-12 change of deviance: agreement to ~1e-8.
            np.testing.assert_allclose(mine, full.params, rtol=1e-7, atol=1e-9)


def test_refit_on_other_response_does_not_reuse():
    X, y, candidates, folds = _problem("binomial")
    glm.glm_cv_predict("binomial", X, y, candidates, folds, 0.0)
    other = 1.0 - y  # same rows, another response: its own problem
    params, _ = glm.glm_fit("binomial", X, other, candidates[0].columns, 0.0)
    full = sm.GLM(other, X, family=sm.families.Binomial()).fit(tol=1e-12)
    np.testing.assert_allclose(params, full.params, rtol=1e-7, atol=1e-9)
