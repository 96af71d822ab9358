"""cov_params(), tvalues, pvalues, t_test, wald_test and f_test of the averaged common terms.

References: statsmodels' OLS / GLM on a one-candidate fit (the average is that candidate),
the stacked sandwich written out below for several weighted candidates, and a Monte Carlo
covariance of the fixed-weight average. Tolerances as in test_robust_covariance: the refits
equal statsmodels' to about 1e-10 relative on these designs, so 1e-8.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import statsmodels.api as sm

import pearlstats as pearl

RTOL = 1e-8
N = 160


def _rows(seed: int, n: int = N, family: str = "gaussian"):
    rng = np.random.default_rng(seed)
    x, a, b = rng.normal(size=n), rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    eta = 0.2 + 0.5 * x + 0.6 * a[:, 0] + 0.6 * b[:, 1]
    if family == "gaussian":
        y = eta + rng.normal(size=n) * (0.5 + np.abs(x))
    else:
        y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)
    return {"y": y, "x": x, "a": a, "b": b}


def _fit(data, formula="y ~ x + block(a) + block(b)", **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # equal weights over the three candidates (shrinkage 1 toward them): several weighted
        # candidates, and weights that do not depend on the data set
        return pearl.fit(formula, data, seed=0, honest=False, weight_shrinkage=1.0, **options)


@pytest.mark.parametrize("cov_type", ["nonrobust", "HC1"])
def test_one_candidate_tests_equal_statsmodels(cov_type):
    data = _rows(0)
    res = _fit(data, "y ~ x + block(a)", cov_type=cov_type)
    X = np.column_stack([np.ones(N), data["x"], data["a"]])
    ols = sm.OLS(data["y"], X).fit()
    ols = ols if cov_type == "nonrobust" else ols.get_robustcov_results(cov_type)
    np.testing.assert_allclose(res.cov_params().to_numpy(), ols.cov_params()[:2, :2], rtol=RTOL)
    np.testing.assert_allclose(res.tvalues, ols.tvalues[:2], rtol=RTOL)
    np.testing.assert_allclose(res.pvalues, ols.pvalues[:2], rtol=1e-7)  # p ~ 1e-2..1e-9
    names = dict(Intercept="const", x="x1")
    for hypothesis in ("x = 0", "x = 0.4", "x = Intercept"):
        ours = res.t_test(hypothesis)
        theirs = ols.t_test(" ".join(names.get(word, word) for word in hypothesis.split()))
        for field in ("effect", "sd", "tvalue", "pvalue"):
            np.testing.assert_allclose(np.ravel(getattr(ours, field)),
                                       np.ravel(getattr(theirs, field)), rtol=1e-7)
    ours = res.wald_test("x = 0, Intercept = 0.3")
    theirs = ols.wald_test("x1 = 0, const = 0.3", scalar=True)
    np.testing.assert_allclose([ours.statistic, ours.pvalue], [theirs.statistic, theirs.pvalue],
                               rtol=1e-7)
    matrix = res.f_test(np.eye(2))
    theirs = ols.f_test(np.eye(4)[:2])
    np.testing.assert_allclose([matrix.fvalue, matrix.pvalue], [theirs.fvalue, theirs.pvalue],
                               rtol=1e-7)


def _stacked_sandwich(res, data, family, cov_type):
    """The joint covariance of the weighted candidates written out at their coefficients
    (whose agreement with statsmodels' is test_refit_sums'): blocks A_j^-1 (sum_i s_ij
    s_ik') A_k^-1 (HC0), or the model's for nonrobust."""
    labels = list(res.weights.index[res.weights > 0])
    parts = []
    for label in labels:
        X = np.column_stack([np.ones(N), data["x"]] + [data[b] for b in label.split("+")])
        eta = X @ res.candidate_params(label).to_numpy()
        mu = eta if family == "gaussian" else 1 / (1 + np.exp(-eta))
        v = np.ones(N) if family == "gaussian" else mu * (1 - mu)
        parts.append((X, data["y"] - mu, v, np.linalg.inv((X * v[:, None]).T @ X)))
    blocks = []
    for Xj, ej, vj, Aj in parts:
        row = []
        for Xk, ek, vk, Ak in parts:
            if cov_type == "HC0":
                meat = (Xj * (ej * ek)[:, None]).T @ Xk
            elif family == "gaussian":  # sigma_jk = e_j'e_k / sqrt(df_j df_k)
                df = (N - Xj.shape[1]) * (N - Xk.shape[1])
                meat = (ej @ ek) / np.sqrt(df) * Xj.T @ Xk
            else:
                meat = (Xj * np.sqrt(vj * vk)[:, None]).T @ Xk
            row.append(Aj @ meat @ Ak)
        blocks.append(row)
    V = np.block(blocks)
    L = np.zeros((2, V.shape[0]))
    start = 0
    for label, (X, *_) in zip(labels, parts):
        L[0, start], L[1, start + 1] = res.weights[label], res.weights[label]
        start += X.shape[1]
    return L @ V @ L.T, V, parts


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
@pytest.mark.parametrize("cov_type", ["nonrobust", "HC0"])
def test_cov_params_is_the_stacked_sandwich_of_the_weighted_candidates(family, cov_type):
    data = _rows(3, family=family)
    res = _fit(data, family=family, cov_type=cov_type)
    assert (res.weights > 0).sum() == 3
    expected, V, parts = _stacked_sandwich(res, data, family, cov_type)
    np.testing.assert_allclose(res.cov_params().to_numpy(), expected, rtol=RTOL)
    # the cross-candidate blocks matter: zeroing them gives another covariance
    sizes = np.cumsum([0] + [part[0].shape[1] for part in parts])
    assert np.any(np.abs(V[sizes[0]:sizes[1], sizes[1]:sizes[2]]) > 1e-3)
    # each candidate's own block is its covariance
    own = res.candidate_params().loc["a", "std err"].to_numpy()
    np.testing.assert_allclose(np.sqrt(np.diagonal(V[:sizes[1], :sizes[1]])), own, rtol=RTOL)


def test_cov_params_matches_the_monte_carlo_covariance_of_the_fixed_weight_average():
    """400 data sets of one heteroscedastic design, three candidates with weights 1/3 each:
    the mean HC3 cov_params() against the Monte Carlo variance of params, within 15 % (the
    Monte Carlo SD of a variance from 400 draws is about sqrt(2/400) = 7 %; HC3 because HC0
    is biased low at n = 120). Measured: 0.96 and 1.02 of it; without the cross-candidate
    blocks 0.35 (so this test tells them apart); nonrobust 0.92 and 0.43 (x's noise grows
    with x)."""
    start = time.perf_counter()
    estimates, covariances = [], []
    for seed in range(400):
        res = _fit(_rows(1000 + seed, n=120), cov_type="HC3", cv=3)
        estimates.append(res.params.to_numpy())
        covariances.append(res.cov_params().to_numpy())
    simulated = np.cov(np.array(estimates).T)
    predicted = np.mean(covariances, axis=0)
    np.testing.assert_allclose(np.diagonal(predicted), np.diagonal(simulated), rtol=0.15)
    assert time.perf_counter() - start < 120  # the budget this test was written for


def test_binomial_tests_with_t_and_f_references_equal_statsmodels_logit():
    # statsmodels' Logit has df_resid = n - k: use_t=True and f_test read it (z and chi2 stay
    # the defaults); a one-candidate fit is that Logit, so the p-values agree to its 1e-7.
    data = _rows(3, family="binomial")
    res = _fit(data, "y ~ x + block(a)", family="binomial")
    X = np.column_stack([np.ones(N), data["x"], data["a"]])
    logit = sm.Logit(data["y"], X).fit(disp=0, tol=1e-12)
    ours, theirs = res.f_test("x = 0, Intercept = 0"), logit.f_test("x1 = 0, const = 0")
    np.testing.assert_allclose([ours.fvalue, ours.pvalue, ours.df_denom],
                               [theirs.fvalue, theirs.pvalue, theirs.df_denom], rtol=1e-7)
    ours, theirs = res.wald_test("x = 0", use_f=True), logit.wald_test("x1 = 0", use_f=True,
                                                                      scalar=True)
    np.testing.assert_allclose(ours.pvalue, theirs.pvalue, rtol=1e-7)
    ours, theirs = res.t_test("x = 0", use_t=True), logit.t_test("x1 = 0", use_t=True)
    np.testing.assert_allclose(np.ravel(ours.pvalue), np.ravel(theirs.pvalue), rtol=1e-7)
    # the defaults stay normal, as statsmodels' Logit's
    np.testing.assert_allclose(res.pvalues["x"], logit.pvalues[1], rtol=1e-7)
    np.testing.assert_allclose(np.ravel(res.t_test("x = 0").pvalue), logit.pvalues[1], rtol=1e-7)


def _reproduced_covariate_fit():
    """x is also a column of block a, so its averaged coefficient is NaN (unidentified); z is
    in no block."""
    rng = np.random.default_rng(24)
    n = 60
    x, z = rng.normal(size=n), rng.normal(size=n)
    a = np.column_stack([rng.normal(size=(n, 2)), x])
    y = 1 + 0.5 * x + a[:, 0] + 0.3 * z + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pearl.fit("y ~ x + z + block(a) + block(b)",
                         {"y": y, "x": x, "z": z, "a": a, "b": rng.normal(size=(n, 1))},
                         seed=0, honest=False)


def test_tests_of_identified_terms_leave_out_an_unidentified_one():
    """A NaN coefficient (x, reproduced by a block) made every test NaN or raise inside
    statsmodels; hypotheses about the other terms are those terms' tests: "z = 0" is z's
    t value, its F the square, the matrix form the same (all from the same covariance, so
    equal to rounding)."""
    res = _reproduced_covariate_fit()
    assert np.isnan(res.params["x"]) and np.isfinite(res.tvalues["z"])
    t = res.t_test("z = 0")
    assert float(np.squeeze(t.tvalue)) == pytest.approx(res.tvalues["z"], rel=1e-12)
    assert float(np.squeeze(t.pvalue)) == pytest.approx(res.pvalues["z"], rel=1e-10)
    assert float(np.squeeze(res.t_test([0, 0, 1.0]).tvalue)) == pytest.approx(
        res.tvalues["z"], rel=1e-12)
    assert float(res.f_test("z = 0").fvalue) == pytest.approx(res.tvalues["z"] ** 2, rel=1e-12)
    assert float(res.wald_test("z = 0, Intercept = 1").statistic) > 0
    with pytest.raises(pearl.OptionError, match=r"involve \['x'\], which have no averaged"):
        res.t_test("x = 0")
    with pytest.raises(pearl.OptionError, match=r"involve \['x'\]"):
        res.f_test([[0, 1.0, 0], [0, 0, 1.0]])


def test_a_hypothesis_about_a_block_column_names_the_testable_terms():
    res = pearl.datasets.example_fit()
    with pytest.raises(pearl.OptionError, match=r"cannot test 'a0 = 0'.*\['Intercept', 'x'\]"):
        res.t_test("a0 = 0")
    with pytest.raises(pearl.OptionError, match=r"shape \(1, 3\); it needs one column per "):
        res.wald_test([[0, 1.0, 0]])
    # the (R, q) form is checked as the bare matrix is, and q against R's rows
    with pytest.raises(pearl.OptionError, match=r"shape \(1, 3\); it needs one column per "):
        res.t_test(([[0, 1.0, 0]], [0.0]))
    with pytest.raises(pearl.OptionError, match="q has 2 values; it needs one per row of R"):
        res.t_test(([[0, 1.0]], [0.0, 1.0]))
    with pytest.raises(pearl.OptionError, match="an empty hypothesis"):
        res.t_test("")


def test_list_and_dict_hypotheses_equal_statsmodels():
    # statsmodels hands a list of strings and a dict {term: value} to patsy, as a string
    data = _rows(2)
    res = _fit(data, "y ~ x + block(a)")
    X = np.column_stack([np.ones(N), data["x"], data["a"]])
    ols = sm.OLS(data["y"], X).fit()
    ours = res.t_test(["x = 0.4", "Intercept = 0"])
    theirs = ols.t_test(["x1 = 0.4", "const = 0"])
    np.testing.assert_allclose(np.ravel(ours.tvalue), np.ravel(theirs.tvalue), rtol=1e-7)
    np.testing.assert_allclose(np.ravel(ours.pvalue), np.ravel(theirs.pvalue), rtol=1e-7)
    ours = res.wald_test({"x": 0.4}, scalar=True)
    theirs = ols.wald_test({"x1": 0.4}, scalar=True)
    np.testing.assert_allclose([ours.statistic, ours.pvalue], [theirs.statistic, theirs.pvalue],
                               rtol=1e-7)


def test_a_term_pinned_by_a_row_of_leverage_one_is_named_under_hc3():
    # HC3 divides by 1 - h: the only row of level "c" has h = 1, so that term's variance is NaN
    # while its estimate is finite (no block reproduces it, unlike an unidentified term)
    data = _rows(3)
    level = np.array(["a", "b"])[np.arange(N) % 2]
    level[7] = "c"
    data["h"] = level
    res = _fit(data, "y ~ C(h) + x + block(a)", cov_type="HC3")
    assert np.isfinite(res.params["C(h)[T.c]"]) and np.isnan(res.bse["C(h)[T.c]"])
    with pytest.raises(pearl.OptionError, match=r"variance is NaN under cov_type='HC3'.*1 - h"):
        res.t_test("C(h)[T.c] = 0")
    assert np.isfinite(res.t_test("x = 0").pvalue)
