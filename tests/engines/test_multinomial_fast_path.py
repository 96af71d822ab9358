"""The unpenalised multinomial fits' Newton-CG fast path (engines/multinomial.py).

The fast path must reach the optimum the exact Newton path and statsmodels reach, and must
leave every fit it cannot certify (separation, collinear columns) to the exact path.
"""

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.design.candidates import Candidate
from pearlstats.engines import multinomial
from pearlstats.engines.multinomial import _solve_unpenalised, multinomial_cv_predict


def _data(seed=3, n=600, classes=4):
    rng = np.random.default_rng(seed)
    blocks = rng.normal(size=(n, 6))
    scores = blocks[:, :3] @ rng.normal(scale=0.8, size=(3, classes))
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    codes = (rng.random(n)[:, None] > p.cumsum(axis=1)).sum(axis=1)
    X = np.column_stack([np.ones(n), blocks])
    candidates = [Candidate("a", ("a",), np.array([0, 1, 2, 3])),
                  Candidate("b", ("b",), np.array([0, 4, 5, 6])),
                  Candidate("a+b", ("a", "b"), np.arange(7))]
    folds = np.arange(n) % 4
    return X, codes, classes, candidates, folds


def _spy(monkeypatch):
    """Count the fast path's answers: a list of True (solved) / False (left to the exact path)."""
    calls = []

    def spy(*args):
        result = _solve_unpenalised(*args)
        calls.append(result is not None)
        return result

    monkeypatch.setattr(multinomial, "_solve_unpenalised", spy)
    return calls


def test_fast_path_fits_equal_statsmodels_per_fold(monkeypatch):
    X, codes, classes, candidates, folds = _data()
    calls = _spy(monkeypatch)
    out = multinomial_cv_predict(X, codes, classes, candidates, folds)
    assert calls and all(calls)  # every all-rows and fold fit was the fast path's
    for j, candidate in enumerate(candidates):
        for k in range(4):
            train = folds != k
            reference = sm.MNLogit(codes[train], X[train][:, candidate.columns]).fit(
                method="newton", disp=0, tol=1e-14, maxiter=100)
            # Both solve to a Newton decrement far below 1e-16 on a problem of condition
            # number ~10 (N(0, 1) columns, probabilities away from 0 and 1): the probabilities
            # agree to rounding times that, 1e-10 leaves two orders of slack.
            np.testing.assert_allclose(out.predictions[folds == k, j],
                                       reference.predict(X[folds == k][:, candidate.columns]),
                                       rtol=0, atol=1e-10)


def test_fast_and_exact_paths_reach_the_same_optimum(monkeypatch):
    X, codes, classes, candidates, folds = _data(seed=4, classes=6)
    fast = multinomial_cv_predict(X, codes, classes, candidates, folds)
    monkeypatch.setattr(multinomial, "_solve_unpenalised", lambda *args: None)
    exact = multinomial_cv_predict(X, codes, classes, candidates, folds)
    # Two Newton methods converged to a decrement below 1e-20 (the exact path's chord steps to
    # its stall rule, ~1e-12 in f): probabilities equal to 1e-9.
    np.testing.assert_allclose(fast.predictions, exact.predictions, rtol=0, atol=1e-9)


def test_fast_path_leaves_separated_classes_to_the_exact_path(monkeypatch):
    """A separating block: Newton-CG declared convergence on the flat tail with training rows'
    log-odds near 26 (below the exact path's separation bound of 30; the fold fits then
    disagreed on separation), so the fast path must refuse it on its own, tighter bound and
    the exact path must flag every fit."""
    rng = np.random.default_rng(8)
    codes = np.repeat([0, 1, 2], 20)
    a = rng.normal(size=(codes.size, 2)) + 0.8 * codes[:, None]
    s = np.column_stack([3.0 * codes + rng.uniform(0.2, 0.8, size=codes.size),
                         rng.normal(size=codes.size)])
    X = np.column_stack([np.ones(codes.size), a, s])
    folds = np.random.default_rng(1).permutation(codes.size) % 5
    calls = _spy(monkeypatch)
    out = multinomial_cv_predict(X, codes, 3, [Candidate("s", ("s",), np.array([0, 3, 4]))],
                                 folds)
    assert calls and not any(calls)
    assert out.failed[0]
    assert all(entry.kind == "separation" for entry in out.entries)


@pytest.mark.parametrize("trouble", ["collinear", "absent class"])
def test_fast_path_leaves_ill_posed_fits_to_the_exact_path(trouble):
    X, codes, classes, _, folds = _data(seed=5)
    weights = np.stack([(folds != k).astype(float) for k in range(4)])
    if trouble == "collinear":
        X = np.column_stack([X, X[:, 1] + X[:, 2]])
    else:
        weights[0, codes == 2] = 0.0  # fold 0's training rows lack class 2
    assert _solve_unpenalised(X, codes, classes, weights, None) is None
