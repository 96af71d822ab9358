"""Wide blocks: infeasible candidates are recorded before any Gram matrix or Hessian is formed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm

from pearlstats.design.candidates import build_candidates
from pearlstats.design.folds import make_folds
from pearlstats.engines.glm import glm_cv_predict
from pearlstats.engines.ols import ols_cv_predict

N, WIDE = 300, 20_000
ROOT = Path(__file__).resolve().parents[2]


def _problem():
    rng = np.random.default_rng(0)
    small_a, small_b = rng.normal(size=(N, 2)), rng.normal(size=(N, 3))
    wide = rng.random(size=(N, WIDE)) * (rng.random(size=(N, WIDE)) < 0.01)  # sparse, TF-IDF-like
    X = np.column_stack([np.ones(N), small_a, small_b, wide])
    slices = {"a": slice(1, 3), "b": slice(3, 6), "tfidf": slice(6, 6 + WIDE)}
    candidates = build_candidates("all", slices, [f"c{i}" for i in range(X.shape[1])], 1)
    y = small_a[:, 0] - small_b[:, 1] + rng.normal(size=N)
    return X, y, candidates


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_wide_block_candidates_are_infeasible_and_the_rest_equal_direct_fits(family):
    X, y, candidates = _problem()
    folds = make_folds(5, N, seed=0)
    if family == "gaussian":
        out = ols_cv_predict(X, y, candidates, folds)
        fit = lambda yy, XX: sm.OLS(yy, XX).fit()
    else:
        y = (y > 0).astype(float)
        out = glm_cv_predict("binomial", X, y, candidates, folds)
        fit = lambda yy, XX: sm.Logit(yy, XX).fit(disp=0, tol=1e-12)
    wide = [j for j, c in enumerate(candidates) if "tfidf" in c.label]
    assert out.failed[wide].all() and not np.delete(out.failed, wide).any()
    infeasible = {e.candidate for e in out.entries if e.kind == "infeasible"}
    assert infeasible == {candidates[j].label for j in wide}
    for j, candidate in enumerate(candidates):
        if j in wide:
            continue
        for k in range(5):
            train = folds != k
            reference = fit(y[train], X[train][:, candidate.columns]).predict(
                X[~train][:, candidate.columns]
            )
            np.testing.assert_allclose(out.predictions[~train, j], reference, atol=1e-7)


def test_wide_block_with_ridge_is_recorded_as_too_wide_with_the_memory_it_would_need():
    X, y, candidates = _problem()
    out = ols_cv_predict(X, y, candidates, make_folds(5, N, seed=0), ridge=0.1)
    wide = [j for j, c in enumerate(candidates) if "tfidf" in c.label]
    assert out.failed[wide].all() and not np.delete(out.failed, wide).any()
    reasons = [e.reason for e in out.entries if e.kind == "infeasible"]
    assert len(reasons) == len(wide) and all("GiB" in r and "limit" in r for r in reasons)


def test_wide_block_peak_memory_stays_small():
    """The engine's peak resident memory grows by far less than one 20 000 x 20 000 Gram matrix (3.2
    GB)."""
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from tests.engines.test_wide_blocks import _problem
        from pearlstats.design.folds import make_folds
        from pearlstats.engines.ols import ols_cv_predict
        X, y, candidates = _problem()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        ols_cv_predict(X, y, candidates, make_folds(5, len(y), seed=0))
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    growth_kib = int(result.stdout.strip().splitlines()[-1])
    assert growth_kib < 200 * 1024  # well under 1 GB; X itself (48 MB) was allocated before
