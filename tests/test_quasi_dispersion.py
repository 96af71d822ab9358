"""The quasi-likelihood dispersion ``scale="X2"`` (and a fixed one) of binomial and Poisson fits.

References: statsmodels' ``GLM(...).fit(scale="X2")`` of each candidate on the same columns,
weights, offset and exposure; for several weighted candidates, the stacked classical
sandwich written out here from statsmodels' refits, with block (j, k) times ``phi_jk = sum w
r_j r_k / sqrt(df_j df_k)`` of their Pearson residuals. Tolerance 1e-8 relative: the
candidates' coefficients are the engines' Newton optimum and statsmodels' IRLS (tol 1e-12)
optimum of the same convex problem, equal to about 1e-10 relative on these well-conditioned
designs, and the covariances are smooth in them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import InMemoryOnlyError, OptionError
from pearlstats.results import averaging

RTOL = 1e-8
N = 240
FORMULA = "y ~ x + block(a) + block(b)"
FAMILIES = {"binomial": sm.families.Binomial(), "poisson": sm.families.Poisson()}


def _rows(family: str = "poisson", seed: int = 0):
    """Overdispersed counts (negative binomial, Pearson X2 / df about 2-3), or 0/1 rows."""
    rng = np.random.default_rng(seed)
    x, a, b = rng.normal(size=N), rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    exposure = rng.uniform(0.5, 3.0, size=N)
    offset = 0.2 * rng.normal(size=N)
    eta = 0.3 + 0.4 * x + 0.5 * a[:, 0] + 0.4 * b[:, 1]
    if family == "poisson":
        mean = exposure * np.exp(eta + offset)
        y = rng.negative_binomial(2, 2 / (2 + mean)).astype(float)
    else:
        y = (rng.random(N) < 1 / (1 + np.exp(-eta - offset))).astype(float)
    weights = rng.integers(1, 4, size=N).astype(float)
    return {"y": y, "x": x, "a": a, "b": b}, offset, exposure, weights


def _fit(data, formula=FORMULA, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few-observation and separation notes: not under test
        # equal weights over the candidates (shrinkage 1 toward them): several weighted ones
        return pearl.fit(formula, data, seed=0, honest=False, weight_shrinkage=1.0, **options)


CASES = {  # fit options -> statsmodels GLM options
    "poisson": ("poisson", lambda o, e, w: ({}, {})),
    "poisson-frequency": ("poisson", lambda o, e, w: (
        dict(weights=w, weight_type="frequency"), dict(freq_weights=w))),
    "poisson-variance": ("poisson", lambda o, e, w: (
        dict(weights=w, weight_type="variance"), dict(var_weights=w))),
    "poisson-offset-exposure": ("poisson", lambda o, e, w: (
        dict(offset=o, exposure=e), dict(offset=o, exposure=e))),
    "binomial": ("binomial", lambda o, e, w: (dict(offset=o), dict(offset=o))),
}


def _design(data, label: str) -> np.ndarray:
    return np.column_stack([np.ones(N), data["x"]] + [data[b] for b in label.split("+")])


def _statsmodels(data, family, label, glm_options, scale="X2"):
    model = sm.GLM(data["y"], _design(data, label), family=FAMILIES[family], **glm_options)
    return model.fit(scale=scale, tol=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_each_candidate_x2_covariance_equals_statsmodels(case):
    family, options = CASES[case]
    data, offset, exposure, weights = _rows(family)
    fit_options, glm_options = options(offset, exposure, weights)
    res = _fit(data, family=family, scale="X2", **fit_options)
    table = res.candidate_params()
    for label in ("a", "b", "a+b"):
        glm = _statsmodels(data, family, label, glm_options)
        assert glm.scale > 1.3 or family == "binomial"  # the counts are overdispersed
        np.testing.assert_allclose(averaging.candidate_cov(res, label)[0].to_numpy(),
                                   glm.cov_params(), rtol=RTOL)
        np.testing.assert_allclose(table.loc[label, "std err"].to_numpy(), glm.bse, rtol=RTOL)
        np.testing.assert_allclose(table.loc[label, ["lower", "upper"]].to_numpy(),
                                   glm.conf_int(), rtol=RTOL)  # z quantiles, as statsmodels


def test_one_candidate_averaged_terms_equal_statsmodels_x2():
    data, offset, exposure, _ = _rows("poisson", seed=1)
    res = _fit(data, "y ~ x + block(a)", family="poisson", scale="X2", offset=offset,
               exposure=exposure)
    glm = _statsmodels(data, "poisson", "a", dict(offset=offset, exposure=exposure))
    np.testing.assert_allclose(res.bse, glm.bse[:2], rtol=RTOL)
    np.testing.assert_allclose(res.cov_params().to_numpy(), glm.cov_params()[:2, :2],
                               rtol=RTOL)
    np.testing.assert_allclose(res.conf_int().to_numpy(), glm.conf_int()[:2], rtol=RTOL)
    np.testing.assert_allclose(res.pvalues, glm.pvalues[:2], rtol=1e-7)
    assert not glm.use_t  # statsmodels keeps z with scale="X2"
    test = res.t_test("x = 0.2")
    theirs = glm.t_test("x1 = 0.2")
    np.testing.assert_allclose([test.sd.item(), test.pvalue], [theirs.sd.item(), theirs.pvalue],
                               rtol=1e-7)
    # the mean's interval at new rows: statsmodels' GLM get_prediction with the X2 scale
    new = {"x": data["x"][:5], "a": data["a"][:5]}
    frame = res.get_prediction(new, offset=offset[:5], exposure=exposure[:5]).summary_frame()
    X = np.column_stack([np.ones(5), data["x"][:5], data["a"][:5]])
    expected = glm.get_prediction(X, offset=offset[:5], exposure=exposure[:5]).summary_frame()
    np.testing.assert_allclose(frame["mean_se"], expected["mean_se"], rtol=RTOL)
    np.testing.assert_allclose(frame["mean_ci_lower"], expected["mean_ci_lower"], rtol=RTOL)


def _stacked_x2(data, family, labels, weights, glm_options, w_rows):
    """The averaged common terms' covariance written out from statsmodels' refits: blocks
    phi_jk A_j (sum w sqrt(V_j V_k) x_j x_k') A_k, phi_jk = sum w r_j r_k / sqrt(df_j df_k)."""
    parts = []
    for label in labels:
        glm = _statsmodels(data, family, label, glm_options, scale=1.0)
        X, mu = _design(data, label), glm.mu
        V = mu if family == "poisson" else mu * (1 - mu)
        A = np.linalg.inv((X * (w_rows * V)[:, None]).T @ X)
        parts.append((X, (data["y"] - mu) / np.sqrt(V), V, A, glm.df_resid))
    blocks = []
    for Xj, rj, Vj, Aj, dfj in parts:
        row = []
        for Xk, rk, Vk, Ak, dfk in parts:
            phi = np.sum(w_rows * rj * rk) / np.sqrt(dfj * dfk)
            row.append(phi * Aj @ ((Xj * (w_rows * np.sqrt(Vj * Vk))[:, None]).T @ Xk) @ Ak)
        blocks.append(row)
    V = np.block(blocks)
    L = np.zeros((2, V.shape[0]))
    start = 0
    for label, (X, *_) in zip(labels, parts):
        L[0, start], L[1, start + 1] = weights[label], weights[label]
        start += X.shape[1]
    return L @ V @ L.T, parts


@pytest.mark.parametrize("case", ["poisson-variance", "poisson-frequency", "binomial"])
def test_cov_params_is_the_stacked_sandwich_with_pearson_phi_jk(case):
    family, options = CASES[case]
    data, offset, exposure, weights = _rows(family, seed=2)
    fit_options, glm_options = options(offset, exposure, weights)
    res = _fit(data, family=family, scale="X2", **fit_options)
    labels = list(res.weights.index[res.weights > 0])
    assert labels == ["a", "b", "a+b"]
    w_rows = weights if "weights" in fit_options else np.ones(N)
    expected, parts = _stacked_x2(data, family, labels, res.weights, glm_options, w_rows)
    np.testing.assert_allclose(res.cov_params().to_numpy(), expected, rtol=RTOL)
    # phi_jk is neither a common scale nor sqrt(phi_jj phi_kk): the test tells them apart
    phi = np.array([[np.sum(w_rows * p[1] * q[1]) / np.sqrt(p[4] * q[4]) for q in parts]
                    for p in parts])
    geometric = np.sqrt(np.outer(np.diagonal(phi), np.diagonal(phi)))
    assert np.max(np.abs(phi / geometric - 1)) > 1e-4
    assert np.ptp(np.diagonal(phi)) / np.mean(np.diagonal(phi)) > 1e-3


def test_get_robustcov_nonrobust_x2_equals_the_fit_with_scale_x2():
    data, offset, exposure, _ = _rows("poisson", seed=3)
    fitted = _fit(data, family="poisson", scale="x2", exposure=exposure)  # any case
    plain = _fit(data, family="poisson", exposure=exposure)
    copy = plain.get_robustcov("nonrobust", scale="X2")
    for res in (fitted, copy):
        assert res.cov_type == "nonrobust"
    pd.testing.assert_series_equal(copy.bse, fitted.bse, rtol=1e-12)
    pd.testing.assert_frame_equal(copy.cov_params(), fitted.cov_params(), rtol=1e-12)
    pd.testing.assert_frame_equal(copy.candidate_params(), fitted.candidate_params(),
                                  rtol=1e-12)
    assert str(copy.summary()) == str(fitted.summary())
    # and back to dispersion 1 without refitting
    pd.testing.assert_series_equal(fitted.get_robustcov("nonrobust").bse, plain.bse,
                                   rtol=1e-12)
    assert np.all(fitted.bse > 1.2 * plain.bse)


def test_a_fixed_dispersion_multiplies_every_covariance():
    data, *_ = _rows("poisson", seed=4)
    plain = _fit(data, family="poisson")
    fixed = _fit(data, family="poisson", scale=2.5)
    np.testing.assert_allclose(fixed.cov_params(), 2.5 * plain.cov_params(), rtol=1e-12)
    # bse adds the spread between the candidates' coefficients, which the scale leaves
    assert np.all(fixed.bse > plain.bse) and np.all(fixed.bse < np.sqrt(2.5) * plain.bse)
    np.testing.assert_allclose(fixed.candidate_params()["std err"],
                               np.sqrt(2.5) * plain.candidate_params()["std err"], rtol=1e-12)
    assert "2.5 (fixed)" in str(fixed.summary())


def test_scale_is_refused_by_name_where_it_does_not_apply():
    data, *_ = _rows("poisson", seed=5)
    gaussian = dict(data, y=data["x"] + data["a"][:, 0])
    with pytest.raises(OptionError, match="scale='X2' is for binomial and poisson.*gaussian"):
        pearl.fit(FORMULA, gaussian, scale="X2")
    classes = dict(data, y=np.minimum(data["y"], 2))
    with pytest.raises(OptionError, match="scale='X2' is for binomial and poisson.*multinomial"):
        pearl.fit(FORMULA, classes, family="multinomial", scale="X2")
    with pytest.raises(OptionError, match="cov_type='HC1'.*uses no scale"):
        pearl.fit(FORMULA, data, family="poisson", cov_type="HC1", scale="X2")
    for bad in ("pearson", -1.0, 0, True, np.inf):
        with pytest.raises(OptionError, match="is not known"):
            pearl.fit(FORMULA, data, family="poisson", scale=bad)
    with pytest.raises(OptionError, match="scale='dev'.*not available.*'X2'"):
        pearl.fit(FORMULA, data, family="poisson", scale="dev")
    with pytest.raises(OptionError, match="downstream"):
        pearl.fit(FORMULA, data, family="poisson", scale="X2",
                  downstream=pytest.importorskip("sklearn.ensemble").RandomForestRegressor())
    res = _fit(data, family="poisson")
    with pytest.raises(OptionError, match="cov_type='HC1'.*uses no scale"):
        res.get_robustcov(scale="X2")  # the default HC1
    with pytest.raises(OptionError, match="gaussian fit estimates its scale"):
        _fit(gaussian).get_robustcov("nonrobust", scale="X2")


def test_summary_names_the_dispersion_and_drops_the_overdispersion_note():
    data, *_ = _rows("poisson", seed=6)
    plain = _fit(data, family="poisson")
    quasi = plain.get_robustcov("nonrobust", scale="X2")
    assert "Overdispersion:" in str(plain.summary())
    assert "Dispersion:" not in str(plain.summary())
    text = str(quasi.summary())
    assert "Overdispersion:" not in text
    row = next(line for line in text.splitlines() if "Dispersion:" in line)
    assert row.split() == ["Dispersion:", "Pearson", "X2", "/", "df"]
    assert "Covariance type: nonrobust, dispersion Pearson X2 / df." in " ".join(text.split())
    assert "Dispersion:" in quasi.summary().as_latex()
    assert "Dispersion:" in quasi.summary().as_html()


def test_x2_standard_errors_of_the_blocks_do_not_depend_on_the_exposure_unit():
    data, offset, exposure, _ = _rows("poisson", seed=7)
    days = _fit(data, family="poisson", scale="X2", exposure=exposure)
    hours = _fit(data, family="poisson", scale="X2", exposure=24 * exposure)
    blocks = ["a[0]", "a[1]", "b[0]", "b[1]"]
    ours, theirs = days.candidate_params(), hours.candidate_params()
    rows = ours.index.get_level_values("term").isin(blocks)
    np.testing.assert_allclose(theirs["std err"][rows], ours["std err"][rows], rtol=1e-7)
    np.testing.assert_allclose(hours.bse["x"], days.bse["x"], rtol=1e-7)
    np.testing.assert_allclose(hours.params["Intercept"], days.params["Intercept"] - np.log(24),
                               rtol=1e-7)


def test_randhie_doctor_visits_x2_standard_errors_are_sqrt_dispersion_times_classical():
    """Real overdispersed counts: RAND Health Insurance Experiment doctor visits (n = 20190),
    Pearson X2 / df 6.28 for statsmodels' Poisson GLM on all nine covariates."""
    frame = sm.datasets.randhie.load_pandas().data
    health, plan = ["physlm", "disea", "hlthg", "hlthf", "hlthp"], ["idp", "lpi", "fmde"]
    data = {"y": frame["mdvis"].to_numpy(float), "lncoins": frame["lncoins"].to_numpy(),
            "health": frame[health].to_numpy(), "plan": frame[plan].to_numpy()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = pearl.fit("y ~ lncoins + block(health) + block(plan)", data, family="poisson",
                          seed=0, honest=False)
    quasi = plain.get_robustcov("nonrobust", scale="X2")
    table = plain.dispersion()
    for label, row in table.iterrows():
        ratio = (quasi.candidate_params().loc[label, "std err"]
                 / plain.candidate_params().loc[label, "std err"])
        np.testing.assert_allclose(ratio, np.sqrt(row["dispersion"]), rtol=1e-12)
    X = sm.add_constant(frame[["lncoins"] + health + plan])
    glm = sm.GLM(frame["mdvis"], X, family=sm.families.Poisson()).fit(scale="X2", tol=1e-12)
    assert 6.0 < glm.scale < 6.5
    np.testing.assert_allclose(table.loc["health+plan", "dispersion"], glm.scale, rtol=RTOL)
    np.testing.assert_allclose(quasi.candidate_params().loc["health+plan", "std err"],
                               glm.bse, rtol=RTOL)
    ratio = quasi.bse / plain.bse  # about sqrt(6.28) = 2.5 for the averaged terms too
    assert np.all((ratio > 0.9 * np.sqrt(glm.scale)) & (ratio < 1.1 * np.sqrt(glm.scale)))


def test_dask_fit_with_scale_x2_equals_the_in_memory_fit():
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    data, *_ = _rows("poisson", seed=8)
    frame = pd.DataFrame({"y": data["y"], "x": data["x"]})
    blocks = {name: da.from_array(data[name], chunks=(80, 2)) for name in ("a", "b")}
    memory = _fit(data, family="poisson", scale="X2")
    with dask.config.set(scheduler="synchronous"):
        lazy = _fit(dd.from_pandas(frame, npartitions=3), blocks=blocks, family="poisson",
                    scale="X2")
        np.testing.assert_allclose(lazy.weights, memory.weights, rtol=1e-12)
        np.testing.assert_allclose(lazy.cov_params(), memory.cov_params(), rtol=RTOL)
        np.testing.assert_allclose(lazy.bse, memory.bse, rtol=RTOL)
        np.testing.assert_allclose(lazy.candidate_params()["std err"],
                                   memory.candidate_params()["std err"], rtol=RTOL)
        # after the fact too, as in memory (only a robust type needs the rows in one process)
        plain = _fit(dd.from_pandas(frame, npartitions=3), blocks=blocks, family="poisson")
        later = plain.get_robustcov("nonrobust", scale="X2")
        np.testing.assert_allclose(later.bse, memory.bse, rtol=RTOL)
        with pytest.raises(InMemoryOnlyError, match=r"get_robustcov\(a robust cov_type\)"):
            plain.get_robustcov("HC1")


def test_a_sparse_block_without_sums_refuses_the_dispersion_by_name():
    sparse = pytest.importorskip("scipy.sparse")
    data, *_ = _rows("poisson", seed=9)
    wide = sparse.random(N, 1001, density=0.01, format="csr", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ x + block(a) + block(w)", dict(data, w=wide), family="poisson",
                        seed=0, honest=False)
    with pytest.raises(OptionError, match=r"scale='X2'.*sparse or wide.*fit\(scale='X2'\)"):
        res.get_robustcov("nonrobust", scale="X2")
