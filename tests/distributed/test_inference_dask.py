"""Refits on dask data (pearlstats.distributed.inference) against statsmodels on the same rows.

The dask data come in partitions of unequal sizes, one of them empty; the all-rows
coefficients are those of the distributed fit's passes (``fit_partitions``).
"""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

da = pytest.importorskip("dask.array", reason="dask is not installed")
dask = pytest.importorskip("dask")

import statsmodels.api as sm  # noqa: E402
from patsy import EvalEnvironment  # noqa: E402
from statsmodels.tools.sm_exceptions import SingularMatrixWarning  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.design.formula import parse_formula  # noqa: E402
from pearlstats.distributed.data import dask_rows, head_design  # noqa: E402
from pearlstats.distributed.fit import fit_partitions  # noqa: E402
from pearlstats.distributed.inference import (  # noqa: E402
    PartitionRefit,
    RowsNeededError,
    refit_partitions,
)
from pearlstats.exceptions import (  # noqa: E402
    OptionError,
    UnidentifiedCoefficientWarning,
    UnknownCandidateError,
)
from pearlstats.families import get_family  # noqa: E402
from pearlstats.results import averaging  # noqa: E402
from pearlstats.results.identification import unidentified_terms  # noqa: E402
from pearlstats.stages import build_pool  # noqa: E402
from pearlstats.weights.losses import get_loss  # noqa: E402

FORMULA = "y ~ x + block(a) + block(b)"
CHUNKS = (90, 0, 60, 77)  # unequal, one empty
COLUMNS = {"a": ["Intercept", "x", "a[0]", "a[1]"],
           "b": ["Intercept", "x", "b[0]", "b[1]", "b[2]"],
           "a+b": ["Intercept", "x", "a[0]", "a[1]", "b[0]", "b[1]", "b[2]"],
           "covariates only": ["Intercept", "x"]}  # the Covariates baseline's candidate
RTOL = 1e-8


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _problem(family: str, shift: float = 5.0, seed: int = 0, n: int = sum(CHUNKS)):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 3))
    x = rng.normal(size=n)
    signal = a[:, 0] - b[:, 1] + 0.3 * x
    if family == "gaussian":
        y = signal + rng.normal(size=n)
    elif family == "binomial":
        y = (signal + rng.logistic(size=n) > 0).astype(float)
    else:
        y = rng.poisson(np.exp(0.3 * signal)).astype(float)
    return {"y": y, "x": x + shift, "a": a, "b": b}


def _dask(data: dict, chunks: tuple = CHUNKS) -> dict:
    return {name: da.from_array(value, chunks=(chunks,) + value.shape[1:])
            for name, value in data.items()}


def _exog(data: dict, label: str) -> pd.DataFrame:
    """The candidate's design columns built by hand (not by pearlstats)."""
    parts = {"Intercept": np.ones(len(data["y"])), "x": data["x"]}
    for block in ("a", "b"):
        parts.update({f"{block}[{i}]": data[block][:, i] for i in range(data[block].shape[1])})
    return pd.DataFrame({name: parts[name] for name in COLUMNS[label]})


def _statsmodels(family: str, data: dict, label: str):
    exog = _exog(data, label)
    if family == "gaussian":
        return sm.OLS(data["y"], exog).fit()
    if family == "binomial":
        return sm.Logit(data["y"], exog).fit(disp=0, tol=1e-14, maxiter=100)
    return sm.GLM(data["y"], exog, family=sm.families.Poisson()).fit(tol=1e-14)


def _dask_refits(family: str, data: dict, ridge: float = 0.0, chunks: tuple = CHUNKS,
                 coefs: np.ndarray | None = None):
    """The distributed fit's passes on dask data, then the refits from one more pass."""
    formula = parse_formula(FORMULA)
    rows = dask_rows(_dask(data, chunks), None, formula)
    design = head_design(rows, formula, EvalEnvironment.capture(0))
    pool = build_pool(design, "all", 100)
    if coefs is None:
        fitted = fit_partitions(rows, design.spec, get_family(family), get_loss(None, family),
                                ("hash", 4, 0), pool.everything, len(pool.pool), ridge,
                                design.X.mean(axis=0))
        assert not fitted.failed.any()
        coefs = fitted.coefs
    refits = refit_partitions(rows, design.spec, family, pool.everything, coefs, ridge)
    return refits, coefs, rows, design, pool


def _close(actual, expected, rtol=RTOL, atol=0.0):
    np.testing.assert_allclose(np.asarray(actual, dtype=float), np.asarray(expected, dtype=float),
                               rtol=rtol, atol=atol)


def _close_interval(actual, direct, alpha, rtol=RTOL):
    """Interval ends b -+ q se equal to *rtol* of |b| + q se: b and se agree to *rtol*, so the
    ends do to that scale; an end near 0 has no relative digits of its own."""
    expected = np.asarray(direct.conf_int(alpha), dtype=float)
    params, bse = np.asarray(direct.params), np.asarray(direct.bse)
    quantile = (expected[:, 1] - params) / bse
    scale = np.abs(params) + quantile * bse
    np.testing.assert_array_less(np.abs(np.asarray(actual, dtype=float) - expected),
                                 np.broadcast_to(rtol * scale[:, None] + 1e-300, expected.shape))


def _close_cov(actual, expected, rtol=RTOL):
    """Covariances equal to *rtol* of sd_i sd_j (a near-0 covariance has no relative digits)."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    sd = np.sqrt(np.diagonal(expected))
    excess = np.abs(actual - expected) / np.outer(sd, sd)
    assert excess.max() <= rtol, f"covariances differ by {excess.max():.2e} of sd_i sd_j"


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_refits_equal_statsmodels_and_the_in_memory_fit(family):
    data = _problem(family)
    refits, *_ = _dask_refits(family, data)
    res = pearl.fit(FORMULA, data, family=family, seed=0, honest=False)
    assert sorted(refits) == sorted(COLUMNS)
    for label, refit in refits.items():
        direct = _statsmodels(family, data, label)
        assert list(refit.params.index) == COLUMNS[label] == list(refit.exog_names)
        assert refit.unidentified == () and refit.rank == len(COLUMNS[label])
        _close(refit.params, direct.params)
        _close(refit.bse, direct.bse)
        _close_cov(refit.cov_params(), direct.cov_params())
        _close_cov(refit.normalized_cov_params, direct.normalized_cov_params)
        for alpha in (0.05, 0.2):
            _close_interval(refit.conf_int(alpha), direct, alpha)
        _close(refit.tvalues, direct.tvalues)
        # d log p / d t is about -t: at p = 4e-6 (t = 4.6) the two optimisers' relative
        # difference of 8e-10 in t becomes 1.6e-8 in p
        _close(refit.pvalues, direct.pvalues, rtol=1e-7)
        for name in ("df_resid", "df_model", "nobs", "scale", "llf", "aic", "bic"):
            _close(getattr(refit, name), getattr(direct, name))
        assert refit.use_t == direct.use_t
        if family == "gaussian":
            _close(refit.ssr, direct.ssr)
        elif family == "poisson":  # GLM's (statsmodels' Logit has none)
            _close(refit.pearson_chi2, direct.pearson_chi2)
        # the in-memory fit's statsmodels refit and its coefficients
        _close(refit.params, res.candidates[label].params)
        _close(refit.bse, res.candidates[label].bse)
        _close(refit.params, res.candidate_params(label))
        cov, df_resid = averaging.candidate_cov(res, label)
        _close_cov(refit.cov_params(), cov)
        if family == "gaussian":
            assert refit.df_resid == df_resid


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_joint_covariance_and_tests_equal_the_in_memory_fit(family):
    """cov_params(), tvalues and t_test of the averaged terms from passes over the partitions.
    Equal weights (shrinkage 1 toward the candidates) and all-rows coefficients do not depend
    on the folds, so the in-memory fit is the same average."""
    data = _problem(family)
    options = dict(family=family, seed=0, honest=False, weight_shrinkage=1.0)
    lazy = pearl.fit(FORMULA, _dask(data), **options)
    res = pearl.fit(FORMULA, data, **options)
    _close_cov(lazy.cov_params().to_numpy(), res.cov_params().to_numpy())
    _close(lazy.tvalues, res.tvalues)
    _close(lazy.t_test("x = 0.3").pvalue, res.t_test("x = 0.3").pvalue, rtol=1e-7)


@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_ridge_refits_equal_the_in_memory_sandwich(family):
    ridge = 0.1
    data = _problem(family)
    refits, *_ = _dask_refits(family, data, ridge)
    res = pearl.fit(FORMULA, data, family=family, seed=0, ridge=ridge, honest=False)
    for label, refit in refits.items():
        _close(refit.params, res.candidate_params(label))
        cov, df_resid = averaging.candidate_cov(res, label)
        _close_cov(refit.cov_params(), cov)
        if family == "gaussian":
            _close(refit.df_resid, df_resid)
        memory = res.candidates[label]  # statsmodels' fit_regularized(L1_wt=0)
        assert refit.penalty == memory.penalty
        assert refit.penalty_ridge == memory.penalty_ridge
        _close(refit.penalty_alpha, memory.penalty_alpha, rtol=1e-10)


def _accurate_cov(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``(X'WX)^-1`` from the QR factor of ``sqrt(W) X`` (no Gram matrix is formed)."""
    R = np.linalg.qr(X * np.sqrt(w)[:, None], mode="r")
    Rinv = np.linalg.solve(R, np.eye(len(R)))
    return Rinv @ Rinv.T


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_shifted_covariate_in_sorted_partitions(family):
    """x + 1e4 with the rows sorted by x: partitions with different means lose no digits."""
    data = _problem(family, shift=1e4, seed=1)
    order = np.argsort(data["x"])
    data = {name: value[order] for name, value in data.items()}
    refits, *_ = _dask_refits(family, data)
    for label, refit in refits.items():
        assert refit.unidentified == ()
        X = _exog(data, label).to_numpy()
        b = refit.params.to_numpy()
        if family == "gaussian":
            w = np.ones(len(X))
            scale = np.sum((data["y"] - X @ b) ** 2) / (len(X) - X.shape[1])
        else:
            mu = 1 / (1 + np.exp(-(X @ b)))
            w, scale = mu * (1 - mu), 1.0
        # the candidate's score is 0 at its coefficients (they are the optimum): relative to
        # the size of its terms |X|'|r| (a column near 1e4 makes them large), to the Newton
        # stop's precision (a decrement of 1e-20 leaves a gradient near 1e-10 of that size)
        residual = data["y"] - (X @ b if family == "gaussian" else mu)
        size = np.abs(X).T @ np.abs(residual)
        assert (np.abs(X.T @ residual) <= 1e-10 * size).all()
        _close_cov(refit.cov_params(), scale * _accurate_cov(X, w))


def test_rank_deficient_candidate_gets_statsmodels_pseudo_inverse():
    """A block column that is 2 x + 1: rank, df and pinv(X'X) covariance as statsmodels' OLS."""
    data = _problem("gaussian")
    data["a"][:, 0] = 2 * data["x"] + 1
    refits, *_ = _dask_refits("gaussian", data)
    with pytest.warns(UnidentifiedCoefficientWarning):
        res = pearl.fit(FORMULA, data, seed=0, honest=False)
    assert {label: refit.unidentified for label, refit in refits.items() if refit.unidentified
            } == unidentified_terms(res.stages) == {"a": ("Intercept", "x", "a[0]"),
                                                    "a+b": ("Intercept", "x", "a[0]")}
    for label in ("a", "a+b"):  # the candidates with block a
        refit = refits[label]
        with pytest.warns(SingularMatrixWarning):
            direct = sm.OLS(data["y"], _exog(data, label)).fit()
        assert refit.rank == len(COLUMNS[label]) - 1
        for name in ("df_resid", "df_model", "ssr"):
            _close(getattr(refit, name), getattr(direct, name))
        expected = direct.cov_params().to_numpy()
        _close(refit.cov_params(), expected, rtol=0, atol=RTOL * np.abs(expected).max())


def test_refits_do_not_depend_on_the_partitioning():
    data = _problem("poisson")
    first, coefs, *_ = _dask_refits("poisson", data)
    other, *_ = _dask_refits("poisson", data, chunks=(3, 200, 0, 24), coefs=coefs)
    for label in first:
        _close_cov(other[label].cov_params(), first[label].cov_params(), rtol=1e-12)
        _close(other[label].llf, first[label].llf, rtol=1e-12)


def test_what_needs_the_rows_is_refused_by_name():
    data = _problem("gaussian")
    refits, coefs, rows, design, pool = _dask_refits("gaussian", data)
    refit = refits["a"]
    with pytest.raises(RowsNeededError, match="'resid' of candidate 'a' needs the rows"):
        refit.resid  # noqa: B018
    assert isinstance(RowsNeededError("x"), OptionError)
    assert not hasattr(refit, "get_prediction")
    with pytest.raises(RowsNeededError, match="'rsquared' of candidate 'a' is not available"):
        refit.rsquared  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        refit.nonsense  # noqa: B018
    with pytest.raises(OptionError, match="not 'multinomial'"):
        refit_partitions(rows, design.spec, "multinomial", pool.everything, coefs, 0.0)
    with pytest.raises(UnknownCandidateError, match="'c'"):
        refit_partitions(rows, design.spec, "gaussian", pool.everything, coefs, 0.0,
                         labels=["a", "c"])
    only = refit_partitions(rows, design.spec, "gaussian", pool.everything, coefs, 0.0,
                            labels=["b"])
    assert list(only) == ["b"]
    _close_cov(only["b"].cov_params(), refits["b"].cov_params(), rtol=1e-12)
    with pytest.raises(OptionError, match="alpha"):
        refit.conf_int(1.5)


def test_refit_is_read_only_and_pickles():
    data = _problem("binomial")
    refit = _dask_refits("binomial", data)[0]["a+b"]
    with pytest.raises(AttributeError):
        refit.df_resid = 3.0
    params, cov = refit.params, refit.normalized_cov_params
    params.iloc[0] = cov[0, 0] = 99.0  # copies: the refit keeps its own
    assert refit.params.iloc[0] != 99.0 and refit.normalized_cov_params[0, 0] != 99.0
    back = pickle.loads(pickle.dumps(refit))
    assert isinstance(back, PartitionRefit)
    _close_cov(back.cov_params(), refit.cov_params(), rtol=0)
