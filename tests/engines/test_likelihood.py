"""The row-wise likelihood terms every engine sums, against statsmodels' families."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import gammaln

from pearlstats.engines.likelihood import mean_of, row_terms, variance_of


@pytest.mark.parametrize("kind", ["binomial", "poisson"])
def test_losses_means_and_variances_equal_statsmodels(kind):
    rng = np.random.default_rng(0)
    eta = rng.normal(scale=4.0, size=500)
    if kind == "binomial":
        family, y = sm.families.Binomial(), (rng.uniform(size=500) < 0.4).astype(float)
        constant = 0.0
    else:
        family, y = sm.families.Poisson(), rng.poisson(3.0, size=500).astype(float)
        constant = gammaln(y + 1)  # statsmodels' Poisson log-likelihood keeps log(y!)
    mu_sm = family.link.inverse(eta)
    loss, mu = row_terms(kind, eta.copy(), y)
    np.testing.assert_allclose(mu, mu_sm, rtol=1e-13)
    np.testing.assert_allclose(mean_of(kind, eta), mu_sm, rtol=1e-13)
    np.testing.assert_allclose(loss, -family.loglike_obs(y, mu_sm) - constant, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(variance_of(kind, mu), family.variance(mu_sm), rtol=1e-12)


def test_extreme_linear_predictors_stay_finite_and_eta_becomes_its_absolute_value():
    eta = np.array([-1000.0, -40.0, 40.0, 1000.0])
    work = eta.copy()
    loss, mu = row_terms("binomial", work, np.array([0.0, 1.0, 0.0, 1.0]))
    assert np.isfinite(loss).all() and np.isfinite(mu).all()
    np.testing.assert_allclose(loss[[1, 2]], [40.0, 40.0], rtol=1e-15)  # the wrong side
    np.testing.assert_array_equal(work, np.abs(eta))
    loss, mu = row_terms("poisson", np.array([1000.0]), np.array([1.0]))
    assert np.isfinite(mu).all() and np.isfinite(loss).all()
