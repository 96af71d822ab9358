"""Covariance types and tests of the averaged common terms (read through ``PearlResults``).

``cov_type``/``get_robustcov`` choose the candidates' covariance (statsmodels'
``get_robustcov_results``); ``cov_params()``, ``tvalues``, ``pvalues``,
``t_test``, ``wald_test`` and ``f_test`` are about the averaged coefficients of
the terms in every candidate, ``sum_j w_j b_j``, with the candidates and their
weights held fixed (see :mod:`pearlstats.results.covariance`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._lazy import lazy_module
from ..checks import align_by_label
from ..exceptions import DataError
from ..in_memory_only import refuse_results_feature
from ..inference.robust import cov_spec
from . import covariance
from .dispersion import dispersion_table

stats = lazy_module("scipy.stats")  # quantiles and tail areas, on first use

__all__ = ["AveragedTests"]


def _without_dropped(values: pd.Series | pd.DataFrame, dropped: pd.Index | None,
                     rows: pd.Index) -> pd.Series | pd.DataFrame:
    """*values* without the labels of the rows ``missing='drop'`` removed.

    Parameters
    ----------
    values : Series or DataFrame
        One value per row, labelled as the data the fit was given.
    dropped : pandas.Index or None
        Labels of the rows the fit dropped (None: none recorded).
    rows : pandas.Index
        Labels of the rows the fit used; a label among them is kept.

    Returns
    -------
    Series or DataFrame
        *values* at every other label, in its own order, ready to be matched to *rows*.
    """
    if dropped is None or not len(dropped):
        return values
    return values[~values.index.isin(dropped.difference(rows))]


class AveragedTests:
    """Covariance types, ``cov_params()`` and tests of the averaged common terms."""

    @property
    def cov_type(self) -> str:
        """The candidates' covariance type: ``"nonrobust"``, ``"HC0"``-``"HC3"``,
        ``"cluster (G groups)"`` or ``"HAC (L lags)"``.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.cov_type
        'nonrobust'
        >>> res.get_robustcov("HC3").cov_type
        'HC3'
        """
        return covariance.describe(self)

    def get_robustcov(self, cov_type: str = "HC1", *, scale: str | float | None = None,
                      **kwds: Any) -> Any:
        """These results with another covariance of the candidates' refits, nothing refitted.

        As statsmodels' ``get_robustcov_results``: ``bse``, ``conf_int()``,
        ``coef_table()``, ``candidate_params()``, the summary, ``cov_params()``, the tests
        and ``get_prediction`` of the copy use it (``candidates[label]``, statsmodels' own
        refits, keep theirs: ``candidates[label].model.fit(cov_type=...)`` refits one with
        another; only OLS results have ``get_robustcov_results``).

        Parameters
        ----------
        cov_type : {"nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster", "HAC"}, default "HC1"
            The candidates' covariance (statsmodels' names).
        **kwds
            ``groups=`` (cluster: one label per row the fit used, or a Series aligned
            with :attr:`row_labels`; the labels of rows ``missing='drop'`` removed may be
            in it, so a column of the data the fit was given serves; default: the fit's
            own ``groups=``, if it has them), ``use_correction=``
            (cluster, default True: the factor ``G/(G-1) (n-1)/(n-k)``; HAC, default False:
            ``n/(n-k)``),
            ``df_correction=`` (cluster, default True: t quantiles with G - 1 df),
            ``maxlags=`` (HAC, Bartlett weights, rows in the fit's order).
        scale : {None, "X2"} or float, optional
            With ``cov_type="nonrobust"``, binomial and Poisson fits: the dispersion the
            classical covariances are multiplied by, as ``fit(scale=)`` (the same copy,
            without refitting): ``"X2"``, each candidate's Pearson ``X^2 / df_resid``
            (statsmodels' ``GLM(...).fit(scale="X2")``, R's quasipoisson and
            quasibinomial), or a positive number (R's ``summary(fit, dispersion=)``).
            None: the family's own, 1. z quantiles stay (statsmodels' GLM ``use_t=False``
            default, whatever its scale; R's quasi families use t with df_resid).

        Returns
        -------
        PearlResults

        Notes
        -----
        Each candidate's sandwich equals statsmodels' ``get_robustcov_results`` of its
        refit (``OLS``; ``GLM`` with weights; ``Logit``/``GLM(Poisson())``), except where
        statsmodels gives HC0 for HC1-HC3 (Logit and GLM): these are then R's
        ``sandwich::vcovHC`` (``n/(n-k)``; the GLM hat values), and frequency weights
        count rows in ``n`` (a weight of 2 is the row twice). Gaussian, binomial and
        Poisson fits on a dense design in memory; others are refused by name.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=80)
        >>> data = {"y": x + rng.normal(size=80) * (1 + x**2), "x": x,
        ...         "a": rng.normal(size=(80, 1)), "b": rng.normal(size=(80, 1))}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> robust = res.get_robustcov("HC3")
        >>> robust.cov_type, bool(robust.bse["x"] > res.bse["x"])
        ('HC3', True)

        Overdispersed counts: the classical covariance at Pearson's X2 / df.

        >>> counts = dict(data, y=rng.negative_binomial(1, 1 / (1 + np.exp(1 + 0.5 * x))))
        >>> poisson = pearl.fit("y ~ x + block(a) + block(b)", counts, family="poisson",
        ...                     seed=0, honest=False)
        >>> quasi = poisson.get_robustcov("nonrobust", scale="X2")
        >>> bool(quasi.bse["x"] > 1.4 * poisson.bse["x"])
        True
        """
        groups = kwds.get("groups")
        if isinstance(groups, str):
            raise DataError(f"groups={groups!r}: get_robustcov takes the group labels, one per row "
                            f"the fit used ({self.nobs}), not a column name; give the column's "
                            "values, or the name to fit(cov_kwds={'groups': name})")
        if isinstance(groups, (pd.Series, pd.DataFrame)):
            kept = _without_dropped(groups, self._state.dropped_labels, self.row_labels)
            kwds["groups"] = np.asarray(align_by_label("groups=", kept, self.row_labels))
        if (isinstance(cov_type, str) and cov_type.lower() == "cluster"
                and "groups" not in kwds and self._state.groups is not None):
            kwds["groups"] = self._state.groups  # the fit's groups=, as fit(cov_type=) takes
        spec = cov_spec(cov_type, kwds, nobs=self.nobs, scale=scale)
        if spec.robust and self._on_partitions:  # a dispersion is read from the partitions
            refuse_results_feature("get_robustcov(a robust cov_type)")
        return covariance.with_cov_type(self, spec)

    def cov_params(self) -> pd.DataFrame:
        """Covariance of :attr:`params` under fixed weights: the candidates' joint covariance.

        ``L V L'``, where V is the joint covariance of the coefficients of the candidates
        with positive weight (stacked estimating equations of candidates fitted on the
        same rows: the block of candidates j and k is ``A_j^-1 (sum_i s_ij s_ik') A_k^-1``
        under :attr:`cov_type`, not zero) and L takes ``sum_j w_j b_j`` of each common
        term. One candidate with weight 1: its statsmodels ``cov_params()``. It is the
        covariance of the fixed-weight average, smaller than :attr:`bse` squared, which
        adds the spread between the candidates (Burnham & Anderson's unconditional SE).
        The candidates and their cross-validated weights are held fixed: the sampling
        variability of the weights and of the choice of candidates is not in it.
        Gaussian, binomial and Poisson fits on a dense design in memory.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "x": rng.normal(size=60),
        ...         "a": rng.normal(size=(60, 1)), "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> res.cov_params().shape
        (2, 2)
        """
        return covariance.averaged_cov(self)[0]

    @property
    def tvalues(self) -> pd.Series:
        """``params / sqrt(diag(cov_params()))``: t for gaussian fits, z otherwise.

        ``P>|t|`` uses the smallest residual df of the weighted candidates (G - 1 with a
        cluster covariance). The candidates and their cross-validated weights are held
        fixed: the sampling variability of the weights and of the choice of candidates is
        not in it.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.tvalues.round(3)
        Intercept   -0.037
        x            3.933
        Name: tvalues, dtype: float64
        """
        cov, _ = covariance.averaged_cov(self)
        return pd.Series(self.params.reindex(cov.index).to_numpy()
                         / np.sqrt(np.diagonal(cov.to_numpy())), index=cov.index,
                         name="tvalues")

    @property
    def pvalues(self) -> pd.Series:
        """Two-sided p-values of :attr:`tvalues` (t with df for gaussian fits, else normal).

        The candidates and their cross-validated weights are held fixed: the sampling
        variability of the weights and of the choice of candidates is not in it.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.pvalues.round(4)
        Intercept    0.9703
        x            0.0002
        Name: pvalues, dtype: float64
        """
        _, df = covariance.averaged_cov(self)
        t = np.abs(self.tvalues)
        tail = stats.t.sf(t, df) if covariance.uses_t(self) else stats.norm.sf(t)
        return pd.Series(2 * tail, index=t.index, name="pvalues")

    def t_test(self, r_matrix: Any, use_t: bool | None = None) -> Any:
        """statsmodels' ``t_test`` of linear hypotheses about :attr:`params`.

        The covariance is :meth:`cov_params`. The candidates and their cross-validated
        weights are held fixed: the sampling variability of the weights and of the choice
        of candidates is not in it.

        Parameters
        ----------
        r_matrix : str, list of str, dict, array_like or tuple
            The hypotheses, as statsmodels': a string (``"x = 0"``, ``"x = Intercept"``,
            ``"x = 0, Intercept = 1"``), a list of such strings, a dict ``{"x": 0}``, a
            matrix over :attr:`params`' terms, or an ``(R, q)`` tuple.
        use_t : bool, optional
            t (True) or normal (False) reference distribution; default: t for gaussian
            fits, normal otherwise.

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "x": rng.normal(size=60),
        ...         "a": rng.normal(size=(60, 1)), "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> bool(np.isclose(res.t_test("x = 0").pvalue, res.pvalues["x"]))
        True
        """
        tested, r_matrix = covariance.statsmodels_view(self, r_matrix)
        return tested.t_test(r_matrix, use_t=use_t)

    def wald_test(self, r_matrix: Any, use_f: bool | None = None, *,
                  scalar: bool = True) -> Any:
        """statsmodels' ``wald_test`` of linear hypotheses about :attr:`params` (joint).

        F with the t tests' df for gaussian fits, chi2 otherwise, unless *use_f* says.
        The candidates and their cross-validated weights are held fixed: the sampling
        variability of the weights and of the choice of candidates is not in it.

        Parameters
        ----------
        r_matrix : str, list of str, dict, array_like or tuple
            The joint hypotheses, as for :meth:`t_test`.
        use_f : bool, optional
            F (True) or chi2 (False); default: F for gaussian fits, chi2 otherwise.
        scalar : bool, default True
            Return the statistic as a float (statsmodels' future default).

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> test = res.wald_test("x = 0, Intercept = 0")  # joint
        >>> round(float(test.statistic), 3), round(float(test.pvalue), 4), int(test.df_num)
        (7.77, 0.0011, 2)
        """
        tested, r_matrix = covariance.statsmodels_view(self, r_matrix)
        use_f = tested.use_t if use_f is None else use_f
        return tested.wald_test(r_matrix, use_f=use_f, scalar=scalar)

    def f_test(self, r_matrix: Any) -> Any:
        """statsmodels' ``f_test``: :meth:`wald_test` with the F distribution.

        The candidates and their cross-validated weights are held fixed: the sampling
        variability of the weights and of the choice of candidates is not in it.

        Parameters
        ----------
        r_matrix : str, list of str, dict, array_like or tuple
            The joint hypotheses, as for :meth:`t_test`.

        Returns
        -------
        statsmodels.stats.contrast.ContrastResults

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> test = res.f_test("x = 0")
        >>> round(float(test.fvalue), 3), int(test.df_num), int(test.df_denom)
        (15.467, 1, 56)
        >>> bool(np.isclose(test.fvalue, res.tvalues["x"] ** 2))  # one restriction: F = t**2
        True
        """
        tested, r_matrix = covariance.statsmodels_view(self, r_matrix)
        return tested.f_test(r_matrix)

    def dispersion(self) -> pd.DataFrame:
        """Pearson's ``X^2 / df`` of each candidate with weight: is a Poisson fit overdispersed?

        The classical covariance (``cov_type="nonrobust"``, statsmodels' ``GLM(Poisson())``
        with ``scale = 1``) assumes a count's variance equals its mean. Where the counts
        vary more, ``dispersion`` is well above 1 and the SEs, tests and intervals are too
        small by about its square root; a sandwich (``get_robustcov("HC1")``, or
        ``fit(..., cov_type="HC1")``) does not assume it, and the quasi-Poisson covariance
        (``get_robustcov("nonrobust", scale="X2")``, or ``fit(..., scale="X2")``) scales each
        candidate's by its ``dispersion``. With the classical covariance the summary notes
        it when every candidate with weight has ``pvalue`` below 0.01.

        Returns
        -------
        DataFrame
            Indexed by candidate: ``weight``, ``pearson_chi2`` (statsmodels' GLM
            ``pearson_chi2`` of the all-rows refit), ``df_resid``, ``dispersion``
            (``pearson_chi2 / df_resid``) and ``pvalue`` (upper tail of
            ``chi2(df_resid)`` at ``pearson_chi2`` under dispersion 1).

        Raises
        ------
        OptionError
            For a family other than Poisson.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(1)
        >>> a, b = rng.normal(size=(300, 2)), rng.normal(size=(300, 1))
        >>> y = rng.poisson(np.exp(0.5 + 0.4 * a[:, 0]))  # Poisson: dispersion near 1
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 family="poisson", seed=0, honest=False)
        >>> table = res.dispersion()
        >>> list(table.columns)
        ['weight', 'pearson_chi2', 'df_resid', 'dispersion', 'pvalue']
        >>> table["dispersion"].round(2).to_dict()  # b lacks a[0]: its counts vary more
        {'a': 0.96, 'b': 1.22, 'a+b': 0.95}
        """
        return dispersion_table(self)
