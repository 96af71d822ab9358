"""Robust covariances of the candidates' refits (cov_type=, get_robustcov) against statsmodels.

Each fit has one candidate (``y ~ x + block(a)``: the candidate ``a`` with weight 1), whose
all-rows refit is the statsmodels model on the same columns. Tolerance: the coefficients are
the engines' Newton/least-squares optimum against statsmodels' (IRLS to tol 1e-12), equal to
about 1e-10 relative on these well-conditioned designs (condition number of X'WX < 10); the
sandwich is smooth in them, so 1e-8 relative leaves two orders of margin. Where statsmodels
gives HC0 for HC1-HC3 (Logit, GLM) the reference is the sandwich written out below (R's
``sandwich::vcovHC`` for glm); frequency weights are checked against the duplicated rows.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.exceptions import DataError, InMemoryOnlyError, OptionError
from pearlstats.results import averaging

RTOL = 1e-8
N = 150
FAMILIES = {"gaussian": sm.families.Gaussian(), "binomial": sm.families.Binomial(),
            "poisson": sm.families.Poisson()}
TYPES = [("HC0", {}), ("HC1", {}), ("HC2", {}), ("HC3", {}), ("cluster", "groups"),
         ("HAC", {"maxlags": 3})]


def _rows(family: str, seed: int = 1):
    rng = np.random.default_rng(seed)
    x, a = rng.normal(size=N), rng.normal(size=(N, 2))
    offset = 0.3 * rng.normal(size=N)
    eta = 0.3 + 0.5 * x + 0.5 * a[:, 0] + offset
    if family == "gaussian":
        y = eta + rng.normal(size=N) * (1 + x**2)  # heteroscedastic
    elif family == "binomial":
        y = (rng.random(N) < 1 / (1 + np.exp(-eta))).astype(float)
    else:
        y = rng.poisson(np.exp(eta)).astype(float)
    groups = rng.integers(0, 11, N)
    X = np.column_stack([np.ones(N), x, a])
    return {"y": y, "x": x, "a": a}, X, y, offset, groups, rng


def _kwds(kwds, groups):
    return {"groups": groups} if kwds == "groups" else dict(kwds)


def _glm_sandwich(glm, cov_type: str, var_weights=None) -> np.ndarray:
    """HC0-HC3 of a canonical-link GLM, written out: bread (X'WX)^-1, row scores
    v e x / (1 - h)^m, h the GLM hat values; HC1 times n / (n - k)."""
    X, mu = glm.model.exog, glm.mu
    v = np.ones(len(mu)) if var_weights is None else var_weights
    working = v * glm.model.family.variance(mu)
    bread = np.linalg.inv((X * working[:, None]).T @ X)
    h = np.einsum("ij,jk,ik->i", X, bread, X) * working
    power = {"HC0": 0, "HC1": 0, "HC2": 1, "HC3": 2}[cov_type]
    score = X * (v * (glm.model.endog - mu) / (1 - h) ** (power / 2))[:, None]
    cov = bread @ score.T @ score @ bread
    n, k = X.shape
    return cov * n / (n - k) if cov_type == "HC1" else cov


def _reference(family, X, y, offset, cov_type, kwds, var_weights=None):
    model = sm.GLM(y, X, family=FAMILIES[family], offset=offset, var_weights=var_weights)
    if family == "gaussian":  # OLS / WLS give HC1-HC3 and t quantiles with G - 1 df
        ols = sm.WLS(y - offset, X, weights=1.0 if var_weights is None else var_weights).fit()
        return ols.get_robustcov_results(cov_type, **kwds).cov_params()
    if cov_type in ("HC1", "HC2", "HC3"):  # statsmodels returns HC0 for these
        return _glm_sandwich(model.fit(tol=1e-12), cov_type, var_weights)
    return model.fit(cov_type=cov_type, cov_kwds=kwds, tol=1e-12).cov_params()


def _fit(data, family, offset, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # separation/convergence notes are not under test
        return pearl.fit("y ~ x + block(a)", data, family=family, seed=0, honest=False,
                         offset=offset, **options)


@pytest.mark.filterwarnings("ignore:cov_type not fully supported")  # statsmodels, var_weights
@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("weighted", [False, True])
def test_candidate_sandwich_equals_statsmodels(family, weighted):
    data, X, y, offset, groups, rng = _rows(family)
    v = rng.uniform(0.5, 2.0, N) if weighted else None
    options = {"weights": v, "weight_type": "variance"} if weighted else {}
    res = _fit(data, family, offset, **options)
    for cov_type, kwds in TYPES:
        kwds = _kwds(kwds, groups)
        robust = res.get_robustcov(cov_type, **kwds)
        cov, _ = averaging.candidate_cov(robust, "a")
        expected = _reference(family, X, y, offset, cov_type, kwds, v)
        np.testing.assert_allclose(cov.to_numpy(), np.asarray(expected), rtol=RTOL,
                                   err_msg=f"{family} {cov_type} weighted={weighted}")


@pytest.mark.parametrize("family", list(FAMILIES))
def test_frequency_weights_count_rows_as_duplicates(family):
    """A frequency weight f is the row f times: the sandwich of the duplicated rows."""
    data, X, y, offset, groups, rng = _rows(family, seed=2)
    f = rng.integers(1, 4, N).astype(float)
    res = _fit(data, family, offset, weights=f, weight_type="frequency")
    rows = np.repeat(np.arange(N), f.astype(int))
    for cov_type, kwds in TYPES[:5]:
        cov, _ = averaging.candidate_cov(res.get_robustcov(cov_type, **_kwds(kwds, groups)), "a")
        expected = _reference(family, X[rows], y[rows], offset[rows], cov_type,
                              _kwds(kwds, groups[rows]))
        np.testing.assert_allclose(cov.to_numpy(), np.asarray(expected), rtol=RTOL,
                                   err_msg=f"{family} {cov_type}")
    with pytest.raises(OptionError, match="frequency weights"):
        res.get_robustcov("HAC", maxlags=2).bse


@pytest.mark.parametrize("cov_type,kwds", [("HAC", {"maxlags": 9}), ("cluster", "groups"),
                                            ("HC3", {})])
def test_sandwich_does_not_depend_on_the_row_chunks(monkeypatch, cov_type, kwds):
    """HAC's lags cross chunk boundaries (chunks of 7 rows, fewer than 9 lags + 1)."""
    data, _, _, offset, groups, _ = _rows("binomial")
    res = _fit(data, "binomial", offset).get_robustcov(cov_type, **_kwds(kwds, groups))
    whole = averaging.candidate_cov(res, "a")[0]
    monkeypatch.setattr("pearlstats.backends.chunks.CHUNK_ROWS", 7)
    res = res.get_robustcov(cov_type, **_kwds(kwds, groups))  # a copy without cached sums
    np.testing.assert_allclose(averaging.candidate_cov(res, "a")[0], whole, rtol=1e-12)


def test_cluster_intervals_use_groups_minus_one_df_as_statsmodels():
    """t quantiles with G - 1 df, as OLS's get_robustcov_results (and fit(..., use_t=True);
    OLS.fit(cov_type=) alone switches to normal quantiles)."""
    data, X, y, offset, groups, _ = _rows("gaussian")
    res = _fit(data, "gaussian", offset, cov_type="cluster", cov_kwds={"groups": groups})
    ols = sm.OLS(y - offset, X).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                    use_t=True)
    table = res.candidate_params()
    np.testing.assert_allclose(table[["lower", "upper"]].to_numpy(),
                               np.asarray(ols.conf_int()), rtol=RTOL)
    np.testing.assert_allclose(res.conf_int().to_numpy(), np.asarray(ols.conf_int())[:2],
                               rtol=RTOL)


def test_fit_cov_type_equals_get_robustcov_and_summary_names_it():
    data, _, _, offset, groups, _ = _rows("poisson")
    res = _fit(data, "poisson", offset)
    fitted = _fit(data, "poisson", offset, cov_type="HC3")
    assert fitted.cov_type == "HC3" and res.cov_type == "nonrobust"
    np.testing.assert_allclose(fitted.bse, res.get_robustcov("HC3").bse, rtol=1e-12)
    assert not np.allclose(fitted.bse, res.bse)
    assert "Covariance type" in fitted.summary().as_text()
    assert "HC3" in fitted.summary().as_text() and "HC3" in fitted.summary().as_latex()
    by_name = _fit({**data, "g": groups}, "poisson", offset, cov_type="cluster",
                   cov_kwds={"groups": "g"})
    np.testing.assert_allclose(by_name.bse, res.get_robustcov("cluster", groups=groups).bse,
                               rtol=1e-12)


def test_cov_type_in_any_case_and_clusters_from_the_fits_groups():
    # statsmodels reads "hc3"; a cluster covariance without groups of its own takes those the
    # folds keep whole (groups=): the same sandwich as naming them again in cov_kwds
    data, _, _, offset, groups, _ = _rows("poisson")
    data = {**data, "g": groups}
    upper = _fit(data, "poisson", offset, cov_type="HC3")
    lower = _fit(data, "poisson", offset, cov_type="hc3")
    assert lower.cov_type == "HC3"
    np.testing.assert_array_equal(lower.bse, upper.bse)
    from_groups = _fit(data, "poisson", offset, cov_type="Cluster", cv=5, groups="g")
    named = _fit(data, "poisson", offset, cov_type="cluster", cv=5, groups="g",
                 cov_kwds={"groups": groups})
    assert from_groups.cov_type == "cluster (11 groups)"
    np.testing.assert_array_equal(from_groups.bse, named.bse)
    # get_robustcov afterwards takes the fit's groups the same way, through another type too
    later = _fit(data, "poisson", offset, cv=5, groups="g").get_robustcov("cluster")
    np.testing.assert_array_equal(later.bse, named.bse)
    np.testing.assert_array_equal(
        from_groups.get_robustcov("HC1").get_robustcov("cluster").bse, named.bse)
    with pytest.raises(OptionError, match="needs the clusters"):
        _fit(data, "poisson", offset, cov_type="cluster")


def test_bad_covariance_options_are_refused_by_name():
    data, _, _, offset, groups, _ = _rows("gaussian")
    res = _fit(data, "gaussian", offset)
    with pytest.raises(OptionError, match="HC4"):
        res.get_robustcov("HC4")
    with pytest.raises(OptionError, match="maxlags"):
        res.get_robustcov("HAC")
    with pytest.raises(OptionError, match="groups"):
        res.get_robustcov("cluster")
    with pytest.raises(OptionError, match="not \\['groups'\\]"):
        res.get_robustcov("HC1", groups=groups)
    with pytest.raises(DataError, match="one group label per row"):
        res.get_robustcov("cluster", groups=groups[:-1])
    with pytest.raises(OptionError, match="cov_type='HC9'"):
        _fit(data, "gaussian", offset, cov_type="HC9")


def test_multinomial_robust_covariance_is_refused_by_name():
    rng = np.random.default_rng(0)
    data = {"y": rng.choice(["a", "b", "c"], 90), "x": rng.normal(size=90),
            "a": rng.normal(size=(90, 2))}
    res = pearl.fit("y ~ x + block(a)", data, family="multinomial", seed=0, honest=False)
    with pytest.raises(OptionError, match="multinomial"):
        res.get_robustcov("HC0")
    # at fit, before any fitting, with advice statsmodels' MNLogit results can follow
    with pytest.raises(OptionError, match=r"multinomial.*model\.fit\(cov_type="):
        pearl.fit("y ~ x + block(a)", data, family="multinomial", cov_type="HC0")
    candidate = next(iter(res.candidates.values()))
    assert candidate.model.fit(cov_type="HC0", disp=0).cov_type == "HC0"


def test_dask_fit_refuses_robust_covariance_by_name():
    da = pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"y": rng.normal(size=60), "x": rng.normal(size=60)})
    blocks = {"a": da.from_array(rng.normal(size=(60, 2)), chunks=(30, 2))}
    lazy = dd.from_pandas(frame, npartitions=2)
    with pytest.raises(OptionError, match="cov_type='HC1'"):
        pearl.fit("y ~ x + block(a)", lazy, blocks=blocks, cov_type="HC1", honest=False)
    res = pearl.fit("y ~ x + block(a)", lazy, blocks=blocks, seed=0, honest=False)
    with pytest.raises(InMemoryOnlyError, match="get_robustcov"):
        res.get_robustcov("HC1")


@pytest.mark.parametrize("cov_type", ["HC0", "HC3"])
def test_ridge_candidate_sandwich_uses_the_penalised_bread(cov_type):
    """statsmodels has no robust covariance for fit_regularized; written out: bread H^-1 with
    H = X'X + n ridge diag(column variances, 0 for the intercept), rows' scores e x, HC3's
    leverages x' H^-1 x."""
    data, X, y, _, _, _ = _rows("gaussian", seed=4)
    ridge = 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ x + block(a)", data, seed=0, honest=False, ridge=ridge,
                        cov_type=cov_type)
        cov, _ = averaging.candidate_cov(res, "a")
    b = res.candidate_params("a").to_numpy()
    e = y - X @ b
    bread = np.linalg.inv(X.T @ X + N * ridge * np.diag(np.r_[0.0, X[:, 1:].var(axis=0)]))
    if cov_type == "HC3":
        e = e / (1 - np.einsum("ij,jk,ik->i", X, bread, X))
    expected = bread @ (X * e[:, None] ** 2).T @ X @ bread
    np.testing.assert_allclose(cov.to_numpy(), expected, rtol=RTOL)


def test_cluster_covariance_with_a_dropped_row_equals_statsmodels_on_the_kept_rows():
    """missing="drop" with one group label per given row: the labels of the kept rows, as
    an array, a Series in shuffled order (matched by label) or a column name."""
    import pandas as pd

    data, X, y, offset, groups, _ = _rows("gaussian")
    frame = pd.DataFrame({"y": y, "x": data["x"], "g": groups}, index=[f"r{i}" for i in range(N)])
    frame.loc["r7", "x"] = np.nan
    blocks = {"a": pd.DataFrame(data["a"], index=frame.index)}
    kept = np.flatnonzero(np.arange(N) != 7)
    expected = sm.OLS(y[kept] - offset[kept], X[kept]).fit().get_robustcov_results(
        "cluster", groups=groups[kept]).cov_params()
    shuffled = frame["g"].sample(frac=1.0, random_state=0)
    for given in (groups, shuffled, "g"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = pearl.fit("y ~ x + block(a)", frame, blocks=blocks, seed=0, honest=False,
                            offset=offset, missing="drop", cov_type="cluster",
                            cov_kwds={"groups": given})
        assert res.nobs == N - 1
        cov, _ = averaging.candidate_cov(res, "a")
        np.testing.assert_allclose(cov.to_numpy(), np.asarray(expected), rtol=RTOL)
        # get_robustcov takes a Series aligned by label with the kept rows
        again = res.get_robustcov("cluster", groups=shuffled.drop("r7"))
        np.testing.assert_allclose(averaging.candidate_cov(again, "a")[0].to_numpy(),
                                   np.asarray(expected), rtol=RTOL)


def test_get_robustcov_reads_a_data_column_of_groups_after_missing_drop():
    """A Poisson rate fit with missing="drop": ``get_robustcov("cluster", groups=column)``
    with the data's whole group column (shuffled; the dropped row's label in it) equals
    statsmodels' GLM on the kept rows with their exposure, as ``fit(cov_kwds=)`` does."""
    import pandas as pd

    data, X, y, _, groups, rng = _rows("poisson")
    exposure = rng.uniform(0.2, 3.0, N)
    y = rng.poisson(exposure * np.exp(X @ [0.3, 0.5, 0.5, 0.0])).astype(float)
    frame = pd.DataFrame({"y": y, "x": data["x"], "g": groups}, index=[f"r{i}" for i in range(N)])
    frame.loc["r7", "x"] = np.nan
    blocks = {"a": pd.DataFrame(data["a"], index=frame.index)}
    kept = np.flatnonzero(np.arange(N) != 7)
    expected = sm.GLM(y[kept], X[kept], family=sm.families.Poisson(), exposure=exposure[kept]).fit(
        tol=1e-12, cov_type="cluster", cov_kwds={"groups": groups[kept]}).cov_params()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ x + block(a)", frame, blocks=blocks, family="poisson", seed=0,
                        honest=False, exposure=exposure, missing="drop")
    column = frame["g"].sample(frac=1.0, random_state=0)
    robust = res.get_robustcov("cluster", groups=column)
    np.testing.assert_allclose(averaging.candidate_cov(robust, "a")[0].to_numpy(),
                               np.asarray(expected), rtol=RTOL)
    # a label that is no row of the data is still refused by name
    with pytest.raises(DataError, match="'elsewhere'"):
        res.get_robustcov("cluster", groups=column.rename(index={"r3": "elsewhere"}))


def test_missing_or_mislabelled_cluster_groups_are_refused_by_name():
    import pandas as pd

    data, _, _, offset, groups, _ = _rows("gaussian")
    res = _fit(data, "gaussian", offset)
    labels = np.array([f"g{g}" for g in groups], dtype=object)
    for missing in (None, np.nan):
        bad = labels.copy()
        bad[3] = missing
        with pytest.raises(DataError, match="groups are missing at"):
            res.get_robustcov("cluster", groups=bad)
    mixed = labels.copy()
    mixed[5] = 4
    with pytest.raises(DataError, match="groups mix labels"):
        res.get_robustcov("cluster", groups=mixed)
    # a Series is matched by label: a label the rows do not have is named, not a NaN group
    series = pd.Series(groups, index=np.arange(N))
    with pytest.raises(DataError, match="row labels differ"):
        res.get_robustcov("cluster", groups=series.rename(index={0: N}))
    with pytest.raises(DataError, match="not a column name"):
        res.get_robustcov("cluster", groups="g")


@pytest.mark.parametrize("cov_type", ["HC2", "HC3"])
def test_a_row_of_leverage_one_leaves_only_its_own_direction_undefined(cov_type):
    """A dummy that is 1 on one row: that row has leverage 1 (to rounding), its residual is
    rounding, and HC2/HC3 divide it by 1 - h, also rounding: 0/0. Its score moves only the
    dummy's coefficient (X'X e_lone = x_i), so the dummy's SE is NaN and every other SE is
    statsmodels' (which the 0/0 row does not reach). Was a finite number that changed with
    the seed (0.28-1.7 here; statsmodels' own 0.28-7.0). Tolerance: the rest agree to
    rounding (1e-8 leaves room for the leverage's cond * eps)."""
    rng = np.random.default_rng(1)
    n = 60
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    lone = np.r_[1.0, np.zeros(n - 1)]
    y = 1 + x + a[:, 0] + rng.normal(size=n)
    res = pearl.fit("y ~ x + lone + block(a)", {"y": y, "x": x, "lone": lone, "a": a}, seed=0,
                    honest=False).get_robustcov(cov_type)
    table = res.candidate_params()
    ols = sm.OLS(y, np.column_stack([np.ones(n), x, lone, a])).fit().get_robustcov_results(
        cov_type)
    assert np.isnan(table["std err"].to_numpy()[2])
    others = [0, 1, 3, 4]
    np.testing.assert_allclose(table["std err"].to_numpy()[others], ols.bse[others], rtol=1e-8)
    # the averaged terms' joint covariance: the dummy's row and column NaN, the rest finite
    cov = res.cov_params()
    assert np.isnan(cov.loc["lone"]).all() and np.isnan(cov["lone"]).all()
    assert np.isfinite(cov.loc[["Intercept", "x"], ["Intercept", "x"]].to_numpy()).all()
    assert np.isnan(res.bse["lone"]) and np.isfinite(res.bse[["Intercept", "x"]]).all()


def test_hac_with_frequency_weights_is_refused_where_it_is_asked_for(monkeypatch):
    """Refused at fit before any fitting (it was accepted, and bse or the summary failed or
    said nothing later) and at get_robustcov."""
    rng = np.random.default_rng(0)
    n = 40
    data = {"y": rng.normal(size=n), "x": rng.normal(size=n), "a": rng.normal(size=(n, 2))}
    weights = rng.integers(1, 4, size=n).astype(float)
    import pearlstats.fitting as fitting

    def no_fitting(*args, **kwargs):
        raise AssertionError("fitted before refusing")

    with monkeypatch.context() as patched:
        patched.setattr(fitting, "_fit_in_memory", no_fitting)
        with pytest.raises(OptionError, match="cov_type='HAC' with frequency weights"):
            pearl.fit("y ~ x + block(a)", data, weights=weights, weight_type="frequency",
                      cov_type="HAC", cov_kwds={"maxlags": 1}, seed=0, honest=False)
    res = pearl.fit("y ~ x + block(a)", data, weights=weights, weight_type="frequency",
                    seed=0, honest=False)
    with pytest.raises(OptionError, match="cov_type='HAC' with frequency weights"):
        res.get_robustcov("HAC", maxlags=1)
    varied = pearl.fit("y ~ x + block(a)", data, weights=weights, weight_type="variance",
                       seed=0, honest=False)
    assert np.isfinite(varied.get_robustcov("HAC", maxlags=1).bse).all()


@pytest.mark.parametrize("alpha", [0, 1, 1.5, -0.1, float("nan"), "0.05"])
def test_candidate_params_refuses_a_level_outside_zero_one(alpha):
    res = pearl.datasets.example_fit()
    with pytest.raises(OptionError, match="strictly between 0 and 1"):
        res.candidate_params(alpha=alpha)
