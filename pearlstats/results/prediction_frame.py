"""``get_prediction``: the averaged mean of new rows with statsmodels' prediction vocabulary.

:class:`PredictionResults` has statsmodels' ``predicted_mean``, ``se_mean``,
``conf_int(obs=, alpha=)`` and ``summary_frame(alpha=)`` (columns ``mean``,
``mean_se``, ``mean_ci_lower``, ``mean_ci_upper``, ``obs_ci_lower``,
``obs_ci_upper``). The mean interval is the delta method per candidate with the
candidates' covariance (of the fit's ``cov_type``), combined over the weighted
candidates as ``predict(interval="confidence")`` combines them, the weights and
candidates held fixed; binomial and Poisson intervals are taken on the link scale
of the averaged mean (for one candidate, statsmodels' GLM interval). The
observation interval is CV+ (marginal coverage).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy.special import expit

from .._lazy import lazy_module
from ..engines.wide import dense_candidate_columns
from ..exceptions import OptionError
from ..inference import combined_mean_se
from ..inference._checks import _check_alpha
from .averaging import _columns as columns_of
from .averaging import active_labels, candidate_cov, confidence_interval

if TYPE_CHECKING:
    from .core import PearlResults


stats = lazy_module("scipy.stats")  # quantiles and tail areas, on first use

__all__ = ["PredictionResults", "mean_frame"]


def _glm_mean_frame(res: PearlResults, X: np.ndarray, alpha: float,
                    offset: np.ndarray | None, revised: bool) -> pd.DataFrame:
    """Binomial/Poisson: the averaged mean, its delta-method SE and the link-scale interval.

    A binomial mean near 1 is carried with its complement ``sum_j w_j expit(-eta_j)``, so that
    its logit and slope ``mean (1 - mean)`` keep their digits where the mean rounds to 1 (a
    linear predictor above about 37): one candidate's interval is then statsmodels' ``eta +-
    z se_eta`` mapped back, as far out as the floats go.
    """
    labels = active_labels(res)
    weights = res.weights[labels].to_numpy()
    binomial = res.family == "binomial"
    means, complements, variances = [], [], []
    for label in labels:
        XS = dense_candidate_columns(X, columns_of(res, label), label, "get_prediction")
        eta = XS @ res.candidate_params(label).to_numpy()
        if offset is not None:
            eta = eta + offset
        mu = expit(eta) if binomial else np.exp(eta)
        complement = expit(-eta) if binomial else None  # 1 - mu, to its last digit
        slope = mu * complement if binomial else mu  # d mu / d eta
        cov = candidate_cov(res, label)[0].to_numpy()
        means.append(mu)
        complements.append(complement)
        variances.append(slope**2 * np.sum((XS @ cov) * XS, axis=1))
    mean, se = combined_mean_se(np.stack(means), np.stack(variances), weights, revised=revised)
    if binomial:
        complement = weights @ np.stack(complements)
        link_mean, slope = np.log(mean) - np.log(complement), mean * complement
    else:
        link_mean, slope = np.log(mean), mean
    inverse = expit if binomial else np.exp
    half = stats.norm.isf(alpha / 2) * se / slope
    return pd.DataFrame({"mean": mean, "mean_se": se,
                         "mean_ci_lower": inverse(link_mean - half),
                         "mean_ci_upper": inverse(link_mean + half)})


def mean_frame(res: PearlResults, X: np.ndarray, index: pd.Index | None, alpha: float,
               offset: np.ndarray | None, revised: bool = True) -> pd.DataFrame:
    """``mean, mean_se, mean_ci_lower, mean_ci_upper`` of the averaged mean at rows *X*
    (the candidates combined by eq. 6.12, or eq. 4.9 with ``revised=False``)."""
    if res.family == "gaussian":
        out = confidence_interval(res, X, index, alpha, revised)
        out = out.rename(columns={"lower": "mean_ci_lower", "upper": "mean_ci_upper"})
        if offset is not None:  # an offset shifts every candidate's mean, not its SE
            out[["mean", "mean_ci_lower", "mean_ci_upper"]] += offset[:, None]
        return out
    if res.family not in ("binomial", "poisson"):
        raise OptionError(f"get_prediction is for gaussian, binomial and poisson fits, this one "
                          f"is {res.family}; use predict() for the class probabilities and "
                          "predict(interval='set') for prediction sets")
    out = _glm_mean_frame(res, X, alpha, offset, revised)
    out.index = pd.RangeIndex(len(out)) if index is None else index
    return out


class PredictionResults:
    """The averaged mean of new rows, its SE and intervals, as statsmodels' prediction results.

    Built by :meth:`PearlResults.get_prediction`. The mean interval (``obs=False``)
    is for the fixed-weight average of the candidates' means: the weights and the
    candidates are held fixed, and the candidates' covariance is the fit's
    ``cov_type``. The observation interval (``obs=True``, gaussian and Poisson) is
    CV+ (Barber, Candès, Ramdas & Tibshirani 2021) over the whole PEARL procedure:
    its coverage of a new response is marginal (on average over new rows and
    training sets, not at each x), at least ``1 - 2 alpha`` in theory and about
    ``1 - alpha`` in practice. Binomial fits have no observation interval
    (``predict(interval="set")`` gives prediction sets).
    """

    def __init__(self, means: Callable[[float], pd.DataFrame],
                 observations: Callable[[float], pd.DataFrame] | None):
        self._means = means
        self._observations = observations
        self._cache: dict = {}

    def _mean(self, alpha: float) -> pd.DataFrame:
        _check_alpha(alpha)  # every family's, as predict(interval=) checks it
        key = ("mean", float(alpha))
        if key not in self._cache:
            self._cache[key] = self._means(alpha)
        return self._cache[key]

    @property
    def predicted_mean(self) -> pd.Series:
        """The averaged mean of each new row (a probability for binomial fits)."""
        return self._mean(0.05)["mean"].rename("predicted_mean")

    @property
    def se_mean(self) -> pd.Series:
        """Standard error of :attr:`predicted_mean` (weights and candidates fixed)."""
        return self._mean(0.05)["mean_se"].rename("se_mean")

    def conf_int(self, obs: bool = False, alpha: float = 0.05) -> np.ndarray:
        """``(m, 2)`` lower and upper bounds: of the mean, or (``obs=True``) CV+ of a new
        response (marginal coverage)."""
        if not obs:
            return self._mean(alpha)[["mean_ci_lower", "mean_ci_upper"]].to_numpy()
        if self._observations is None:
            raise OptionError("obs=True: a binomial fit has no interval for a new response "
                              "(its values are the classes); use predict(interval='set') for "
                              "prediction sets")
        _check_alpha(alpha)
        key = ("obs", float(alpha))
        if key not in self._cache:
            self._cache[key] = self._observations(alpha)
        return self._cache[key][["lower", "upper"]].to_numpy()

    def summary_frame(self, alpha: float = 0.05) -> pd.DataFrame:
        """statsmodels' columns: ``mean``, ``mean_se``, ``mean_ci_lower``, ``mean_ci_upper``
        and (gaussian, Poisson) the CV+ ``obs_ci_lower``, ``obs_ci_upper``."""
        frame = self._mean(alpha).copy()
        if self._observations is not None:
            frame[["obs_ci_lower", "obs_ci_upper"]] = self.conf_int(obs=True, alpha=alpha)
        return frame
