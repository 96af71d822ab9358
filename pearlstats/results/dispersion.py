"""Overdispersion of a Poisson fit: each weighted candidate's Pearson statistic per residual df.

A Poisson candidate's classical covariance (statsmodels' ``GLM(Poisson())``, ``scale = 1``)
assumes that the variance of a count equals its mean. Counts that vary more
(overdispersed: Pearson's ``X^2 / df`` well above 1, as R's ``summary.glm`` and the
quasi-Poisson family make users look for) leave the SEs, tests and intervals too small by
about ``sqrt(X^2 / df)``; a sandwich covariance (``cov_type="HC0"``-``"HC3"``) does not
assume the variance. The statistics come from the candidates' refits on all rows (one
pass of sums, :mod:`pearlstats.inference.refit_sums`, in memory and on dask).

Examples
--------
>>> import numpy as np, pearlstats as pearl
>>> rng = np.random.default_rng(0)
>>> a, b = rng.normal(size=(200, 2)), rng.normal(size=(200, 1))
>>> y = rng.negative_binomial(1, 1 / (1 + np.exp(1 + 0.5 * a[:, 0])))  # variance > mean
>>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, family="poisson",
...                 seed=0, honest=False)
>>> table = dispersion_table(res)
>>> list(table.columns)
['weight', 'pearson_chi2', 'df_resid', 'dispersion', 'pvalue']
>>> bool((table["dispersion"] > 2).all())
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..exceptions import OptionError
from . import averaging
from .covariance import cov_spec_of

if TYPE_CHECKING:  # core imports this module
    from .core import PearlResults

__all__ = ["dispersion_table", "overdispersion_note"]

stats = lazy_module("scipy.stats")  # the chi-square tail, on first use

# every weighted candidate's Pearson statistic beyond this upper-tail probability of its
# chi-square(df_resid) law under dispersion 1 before the summary says the counts are
# overdispersed: a note on evidence, not on noise around 1
_EVIDENCE = 0.01


def dispersion_table(res: PearlResults) -> pd.DataFrame:
    """Pearson's ``X^2`` of each candidate with positive weight, per residual df.

    Parameters
    ----------
    res : PearlResults
        A Poisson fit.

    Returns
    -------
    DataFrame
        Indexed by candidate: ``weight``, ``pearson_chi2`` (statsmodels' GLM
        ``pearson_chi2`` of the all-rows refit, observation weights included),
        ``df_resid``, ``dispersion`` (``pearson_chi2 / df_resid``, 1 under the Poisson
        model) and ``pvalue`` (the upper tail of ``chi2(df_resid)`` at ``pearson_chi2``:
        small for counts more variable than Poisson).

    Raises
    ------
    OptionError
        For a family other than Poisson: a gaussian fit estimates its scale, and a 0/1
        response's Pearson statistic says nothing of its dispersion.
    """
    if res.family != "poisson":
        raise OptionError(f"dispersion is for Poisson fits, this one is {res.family}: a "
                          "gaussian fit estimates its scale (res.candidates[label].scale), and "
                          "a 0/1 response's Pearson statistic says nothing of dispersion")
    labels = averaging.active_labels(res)
    rows = []
    for label in labels:
        refit = averaging.inference_refit(res, label)
        refit = res.candidates[label] if refit is None else refit  # statsmodels' GLM
        chi2, df = float(refit.pearson_chi2), float(refit.df_resid)
        rows.append([float(res.weights[label]), chi2, df, chi2 / df if df > 0 else np.nan,
                     float(stats.chi2.sf(chi2, df)) if df > 0 else np.nan])
    return pd.DataFrame(rows, index=pd.Index(labels, name="candidate"),
                        columns=["weight", "pearson_chi2", "df_resid", "dispersion", "pvalue"])


def overdispersion_note(res: PearlResults) -> str:
    """The summary's note on overdispersed counts, or ``""``.

    Said for a Poisson fit whose covariance assumes dispersion 1 (``cov_type="nonrobust"``
    without ``scale=``) when every candidate with weight has a Pearson statistic beyond the
    1 % upper tail of its chi-square law: then the classical SEs are too small, by about
    the square root of the weighted mean dispersion. Not said when the dispersion is
    estimated or given (``scale="X2"`` or a number).
    """
    if (res.family != "poisson" or res.cov_type != "nonrobust"
            or cov_spec_of(res).scale is not None):
        return ""
    table = dispersion_table(res)
    if table.empty or not (table["pvalue"] < _EVIDENCE).all():
        return ""
    mean = float(np.average(table["dispersion"], weights=table["weight"]))
    spread = (f"{table['dispersion'].min():.2f} to {table['dispersion'].max():.2f} over the "
              f"candidates with weight, {mean:.2f} weighted" if len(table) > 1
              else f"{mean:.2f}")
    return (f" Overdispersion: Pearson chi-square / df is {spread} (1 under the Poisson model; "
            f"P < {_EVIDENCE} for each), so the SEs, z and intervals, which assume 1, are too "
            f"small by a factor of about {np.sqrt(mean):.1f}; a robust (sandwich, HC1) "
            "covariance type does not assume it, and the quasi-Poisson dispersion (Pearson "
            "chi-square / df, statsmodels' scale X2) estimates it.")
