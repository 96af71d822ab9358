"""A covariate that a block makes redundant (issue 26, item 6): named at fit, NaN in params.

``x1`` beside a block holding the principal components of ``(x1, x2)``: in every candidate with
that block, ``x1`` is the intercept plus a combination of the block's columns, so the candidate's
coefficients of the intercept, ``x1`` and the block are not identified (statsmodels fits it with
pinv and warns only later, anonymously). The other block's coefficients stay identified.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.tools.sm_exceptions import SingularMatrixWarning

import pearlstats as pearl

FORMULA = "y ~ x1 + block(p) + block(b)"


def _data(n: int = 120, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n) + 0.3, rng.normal(size=n)
    centred = np.column_stack([x1, x2]) - [x1.mean(), x2.mean()]
    pcs = centred @ np.linalg.svd(centred, full_matrices=False)[2].T
    b = rng.normal(size=(n, 2))
    return {"y": x1 + 0.5 * x2 + b[:, 0] + rng.normal(size=n), "x1": x1, "p": pcs, "b": b}


def _fit(data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit(FORMULA, data, seed=0)
    return res, [w for w in caught if issubclass(w.category, pearl.UnidentifiedCoefficientWarning)]


def test_the_redundant_covariate_is_named_at_fit_once_with_its_candidates():
    data = _data()
    # numpy's own rank: x1 adds nothing to the intercept and p, which are independent
    ones = np.ones((120, 1))
    assert np.linalg.matrix_rank(np.column_stack([ones, data["x1"], data["p"]])) == 3
    assert np.linalg.matrix_rank(np.column_stack([ones, data["p"]])) == 3
    res, caught = _fit(data)
    assert len(caught) == 1
    message = str(caught[0].message)
    for label in ("p", "p+b"):
        assert f"candidate {label!r}: covariate(s) ['Intercept', 'x1'] with ['p[0]', 'p[1]']" \
            in message
    assert "candidate 'b'" not in message


def test_unidentified_terms_are_nan_and_the_rest_match_statsmodels():
    data = _data()
    res, _ = _fit(data)
    w = res.weights
    assert (w[["p", "p+b"]] > 0).all()
    y, ones = data["y"], np.ones((120, 1))
    designs = {"p": np.column_stack([ones, data["x1"], data["p"]]),
               "b": np.column_stack([ones, data["x1"], data["b"]]),
               "p+b": np.column_stack([ones, data["x1"], data["p"], data["b"]])}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingularMatrixWarning)  # statsmodels' pinv, anonymous
        fits = {label: sm.OLS(y, X).fit() for label, X in designs.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularMatrixWarning)  # no anonymous warning any more
        table, interval = res.coef_table(terms="all"), res.conf_int()
        params, bse = table["coef"], table["std err"]
        text = str(res.summary())
    unidentified = ["Intercept", "x1", "p[0]", "p[1]"]
    assert params[unidentified].isna().all() and bse[unidentified].isna().all()
    assert res.params.isna().all() and res.bse.isna().all()  # Intercept and x1
    assert interval.loc[["Intercept", "x1"]].isna().all().all()
    # b's columns: identified in b and p+b (statsmodels' pinv gives the unique values there)
    expected = w["b"] * fits["b"].params[2:] + w["p+b"] * fits["p+b"].params[4:]
    np.testing.assert_allclose(params[["b[0]", "b[1]"]], expected, rtol=1e-8)
    # predictions do not depend on the split
    predicted = sum(w[label] * fits[label].fittedvalues for label in designs)
    np.testing.assert_allclose(res.fittedvalues, predicted, rtol=1e-8)
    # the summary's notes say it in words, wrapped to 100 columns (issue 29)
    assert "Not identified (shown as --): Intercept in p, p+b" in re.sub(
        r"\+\s+", "+", " ".join(text.split()))


def test_a_fit_with_identified_coefficients_does_not_warn():
    data = _data()
    data["x1"] = np.random.default_rng(5).normal(size=120)  # no longer in p's span
    res, caught = _fit(data)
    assert caught == []
    assert res.params.notna().all()


def test_a_ridge_identifies_every_coefficient():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = pearl.fit(FORMULA, _data(), seed=0, ridge=0.1)
    assert not [w for w in caught if w.category is pearl.UnidentifiedCoefficientWarning]
    assert res.params.notna().all()


def _multinomial_with_a_constant_column(n: int = 300, seed: int = 1):
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=n)
    eta = 0.8 * a[:, 0] - 0.5 * b[:, 1] + 0.3 * x
    y = np.digitize(eta + 0.5 * rng.normal(size=n), [-0.5, 0.5])
    blocks = {"a": np.column_stack([a, np.ones(n)]), "b": b}  # a bias column beside the intercept
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.UnidentifiedCoefficientWarning)
        res = pearl.fit("y ~ x + block(a) + block(b)", {"y": y, "x": x}, blocks=blocks,
                        family="multinomial", seed=0, honest=False)
    return res, y, x, a, b


def test_a_multinomial_candidate_with_a_constant_column_has_the_ses_of_its_identified_terms():
    """A block with a bias column: MNLogit's refit inverted its singular Hessian and bse,
    conf_int(), coef_table() raised numpy's LinAlgError. The identified terms' SEs are those of
    MNLogit without the redundant column (any full-rank reparametrisation gives them; 1e-6:
    both at optima converged far below it), the intercept and the bias column NaN."""
    res, y, x, a, b = _multinomial_with_a_constant_column()
    exog = sm.add_constant(np.column_stack([x, a, b]))  # without the constant column
    direct = sm.MNLogit(y, exog).fit(disp=0, tol=1e-12, maxiter=200)
    ours = pearl.results.averaging.candidate_bse(res, "a+b")
    np.testing.assert_allclose(ours.loc[["x", "a[0]", "a[1]", "b[0]", "b[1]"]].to_numpy(),
                               np.asarray(direct.bse)[1:], rtol=1e-6)
    assert np.isfinite(res.bse.loc["x"].to_numpy()).all()
    assert np.isnan(res.bse.loc["Intercept"].to_numpy()).all()
    res.conf_int(), res.coef_table()  # numpy's LinAlgError before
    with pytest.raises(pearl.CandidateError, match=r"\['Intercept', 'a\[2\]'\] are not identified"):
        res.candidates["a+b"]  # statsmodels' inverse of its singular Hessian raises here


def test_the_multinomial_pseudo_inverse_ses_equal_mnlogit_on_a_full_rank_candidate():
    """The pseudo-inverse path on a candidate whose columns have full rank is MNLogit's bse."""
    res, y, x, a, b = _multinomial_with_a_constant_column()
    params = res.candidate_params("b").to_numpy()
    ours = pearl.results.averaging._multinomial_pinv_bse(res, "b", params)
    np.testing.assert_allclose(ours, np.asarray(res.candidates["b"].bse), rtol=1e-6)


def test_statsmodels_refit_that_drops_a_small_column_is_warned_of():
    """Columns of magnitudes 1e12 and 1e-6 in one block: statsmodels' pseudo-inverse drops the
    small direction (its fitted values off by O(0.1)), while the reported estimate solves on
    standardised columns and equals OLS on the rescaled columns, scaled back (1e-8)."""
    rng = np.random.default_rng(3)
    n = 300
    a, x = rng.normal(size=(n, 2)), rng.normal(size=n)
    y = a[:, 1] + 0.4 * x + rng.normal(size=n)
    scale = np.array([1e12, 1e-6])
    res = pearl.fit("y ~ x + block(a)", {"y": y, "x": x, "a": a * scale}, seed=0, honest=False)
    direct = sm.OLS(y, np.column_stack([np.ones(n), x, a])).fit()
    np.testing.assert_allclose(res.candidate_params("a").to_numpy(),
                               direct.params / np.r_[1, 1, scale], rtol=1e-8)
    with pytest.warns(pearl.PearlWarning, match=r"statsmodels' refit of candidate 'a'.*"
                                                r"magnitudes 3.*e-06 to 2.*e\+12"):
        res.candidates["a"]
    with warnings.catch_warnings():  # an ordinary block: statsmodels agrees, no warning
        warnings.simplefilter("error", pearl.PearlWarning)
        pearl.fit("y ~ x + block(a)", {"y": y, "x": x, "a": a}, seed=0,
                  honest=False).candidates["a"]
