"""Prediction and scoring of new rows with a fit's refitted candidates.

:class:`Prediction` is the part of :class:`~pearlstats.PearlResults`
that rebuilds the design of new rows (:attr:`design_spec`), averages the
refitted candidates on them (``predict``, with CV+ intervals and prediction
sets from the nested cross-validation), and scores PEARL and the baselines on
held-out rows (``evaluate``).

Rows that are not in memory (dask partitions) are predicted and scored by a
:class:`LazyRows` the results object holds, given by :func:`pearlstats.fit`
when it builds the results. The results layer therefore never imports the code
that knows where such rows live: that code (today
:mod:`pearlstats.distributed`) sits beside the results, not below them, and
the fit, above both, hands one to the other. Without a ``LazyRows`` every row
is read in memory.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from .._warnings import warn
from ..checks import align_by_label, check_choice
from ..design.data import (
    check_no_dates,
    count_rows,
    data_index,
    first_block_index,
    labelled_rows,
    resolve_blocks,
    split_data,
)
from ..design.formula import covariate_row_variables
from ..design.offsets import formula_offset
from ..engines.wide import candidate_rows
from ..exceptions import (
    CandidateError,
    DataError,
    MissingValueError,
    ObservationWeightWarning,
    OptionError,
    ResponseError,
)
from ..nested import check_conformal_available, conformal_prediction
from ..observation_weights import (
    check_new_offset,
    check_observation_weights,
    check_positive_rows,
    named_columns,
)
from ..stages import drop_missing_inputs, incomplete_rows
from . import averaging, evaluation
from .link_scale import WHICH, linear_name, linear_predictor
from .prediction_frame import PredictionResults, mean_frame

__all__ = ["LazyRows", "Prediction"]


class LazyRows(Protocol):
    """Prediction and scoring of rows that live outside this process (e.g. dask partitions).

    ``holds(data, blocks)`` says whether *data*/*blocks* are such rows;
    ``predict(res, newdata, blocks)`` returns the lazy PEARL prediction of
    them and ``evaluate(res, test_data, blocks)`` the (small, in-memory)
    score table of :meth:`Prediction.evaluate`, both from the public
    attributes of the results *res*.
    """

    def holds(self, data: Any, blocks: Any) -> bool: ...

    def predict(self, res: Any, newdata: Any, blocks: Any) -> Any: ...

    def evaluate(self, res: Any, test_data: Any, blocks: Any) -> pd.DataFrame: ...


def _named_in(data: Any, weights: Any, offset: Any, exposure: Any) -> tuple:
    """*weights*, *offset*, *exposure* with a column name of *data* replaced by that column,
    read in the data's row order, as :func:`~pearlstats.fit` reads ``weights="w"``."""
    if not any(isinstance(value, str) for value in (weights, offset, exposure)):
        return weights, offset, exposure
    weights, _, offset, exposure = named_columns((weights, None, offset, exposure),
                                                 split_data(data)[0])
    return weights, offset, exposure


class Prediction:
    """Predictions and held-out scores of new rows (read through ``PearlResults``)."""

    def _conformal(self, X: np.ndarray, index, alpha: float, offset=None, weights=None):
        """CV+ interval (DataFrame mean, lower, upper) or prediction sets (DataFrame of bools)."""
        if isinstance(alpha, bool) or not (isinstance(alpha, numbers.Real) and 0 < alpha < 1):
            raise OptionError(
                f"alpha={alpha!r}; use a number between 0 and 1, e.g. 0.1 for 90% coverage"
            )
        if self.classes is None and alpha > 0.5:
            # the lower bound is the alpha-quantile of mu - R, the upper the (1 - alpha)-quantile
            # of mu + R: ordered for alpha <= 1/2, crossed beyond
            raise OptionError(f"alpha={alpha!r}: a CV+ interval is for coverage 1 - alpha of at "
                              "least 50% (alpha <= 0.5); beyond, its bounds cross")
        new_weights = weights  # checked by predict and get_prediction (_new_row_weights)
        self._warn_beyond_training(new_weights, offset)
        state = self._state
        if state.partitions is not None:  # dask rows: the outer re-runs are passes over them
            result = state.partitions.conformal(X, float(alpha), state.honest or 5, state.seed,
                                                state.family, state.loss, state.ridge)
        else:
            check_conformal_available(state)  # before self._nested runs the outer re-runs
            result = conformal_prediction(state, self._nested, X, float(alpha), offset=offset,
                                          new_weights=new_weights)
        if self.classes is None:
            lower, upper = result
            mean = self._format(self._combined_prediction(X, offset), index)
            return pd.DataFrame(
                {"mean": mean.to_numpy(), "lower": lower, "upper": upper}, index=index
            )
        return pd.DataFrame(result, columns=self.classes, index=index)

    def _warn_beyond_training(self, new_weights, offset) -> None:
        """Warn where a new row's variance weight, or (Poisson) exposure, is more than twice
        every training row's: CV+ covers new rows like the training rows, and its scores
        scale only the noise (``sqrt(w_i / w_new) R_i``; counts' absolute residuals), not the
        refits' own error, so such rows under-cover (a probe gave 0.76 and 0.57 for a nominal
        0.90 with new weights 50 and 5 000 times the largest training one). Rows below the
        range get wider intervals, not narrower."""
        response = self._response
        beyond = []
        if new_weights is not None and response.row_weights is not None:
            beyond.append(("a variance weight", np.asarray(new_weights),
                           np.max(response.row_weights)))
        if offset is not None and response.offset is not None and self.family == "poisson":
            # exposure compares as exp(offset): the counts' scale
            beyond.append(("an exposure (exp of the offset)", np.exp(offset),
                           np.exp(np.max(response.offset))))
        for what, new, largest in beyond:
            above = np.flatnonzero(new > 2 * largest)
            if above.size:
                warn(f"{above.size} of {len(new)} new rows have {what} more than twice every "
                     f"training row's (largest {largest:.4g}, new up to {np.max(new):.4g}): "
                     "the CV+ interval covers new rows like the training rows and under-covers "
                     "rows far beyond them; predict such rows from a fit whose training rows "
                     "reach them", ObservationWeightWarning)

    def _new_row_weights(self, weights, m: int, rows: pd.Index | None) -> np.ndarray | None:
        """The new rows' variance weights for a CV+ interval (None: 1 each), checked and
        (a Series) matched to the new rows' labels *rows*."""
        if weights is None:
            return None
        if self._response.weight_type != "variance" or self.classes is not None:
            raise OptionError("predict(weights=) is each new row's variance weight, for "
                              "interval='prediction' of a fit with weight_type='variance'; "
                              "leave it None here")
        return check_observation_weights(weights, "variance", None, None, self.family, m,
                                         rows).weights

    def _design_for(self, newdata, blocks) -> tuple[np.ndarray, pd.Index | None]:
        frame, embedded = split_data(newdata)
        check_no_dates(frame, self._design.spec.covariates.row_variables)
        source = blocks
        if source is None and self._representations is not None and not embedded:
            # the columns of the formula's blocks: another learner's are not read
            needed = self._representations.columns_read_by(self.block_names)
            missing = [column for column in needed if column not in frame.columns]
            if missing:
                raise DataError(f"new data lacks column(s) {missing} that the representations read")
            source = self._representations
        resolved = resolve_blocks(
            self.block_names, frame, embedded, source, index=data_index(newdata)
        )
        count_rows(frame, resolved)  # fit's check: a block of another length names both counts
        labels = data_index(newdata)
        if labels is not None and len(labels) == len(frame):
            frame = frame.set_axis(labels)  # a bad value is named by its row's label, as at fit
        X = self._design.spec.design_matrix(frame, resolved)
        if X.shape[0] == 0:
            raise DataError("the new data has no rows; give at least one row to predict")
        # A dict's rows are identified by its DataFrame blocks' labels, if it has any.
        index = data_index(newdata)
        if index is None:
            index = first_block_index(self.block_names, embedded, source)
        return X, index

    def design_matrix(self, newdata: Any, blocks: Any = None) -> np.ndarray:
        """The design matrix of new rows, rebuilt with the fit's :attr:`design_spec`.

        Parameters
        ----------
        newdata, blocks
            As for :meth:`predict`.

        Returns
        -------
        ndarray (m, p)
            Covariate columns, then each block's, as :attr:`design_spec.column_names <design_spec>`;
            a CSR matrix when a block is a sparse matrix of more than 1 000 columns.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> new = {"x": [0.0, 1.0], "a": np.zeros((2, 2)), "b": np.ones((2, 2))}
        >>> res.design_matrix(new)
        array([[1., 0., 0., 0., 1., 1.],
               [1., 1., 0., 0., 1., 1.]])
        """
        return self._design_for(newdata, blocks)[0]

    def candidate_predictions_for(self, X: np.ndarray, labels: Sequence[str],
                                  offset: np.ndarray | None = None) -> dict:
        """Each named candidate's prediction on design rows *X* (see :meth:`design_matrix`).

        Candidates are refitted on all labeled rows on first use; the
        baseline-only candidates (single blocks, fusion) may be named too.

        Parameters
        ----------
        X : ndarray (m, p)
            Design rows laid out as the fit's (:meth:`design_matrix` of new rows).
        labels : sequence of str
            Candidate labels (:attr:`candidate_labels`, or a baseline-only candidate's).
        offset : ndarray (m,), optional
            One offset per row of *X*: needed by, and only by, a fit with an offset.

        Returns
        -------
        dict
            Label -> predictions on the response scale (an (m, classes) array for
            multinomial fits).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> new = {"x": [0.0, 1.0], "a": np.zeros((2, 2)), "b": np.ones((2, 2))}
        >>> X = res.design_matrix(new)
        >>> parts = res.candidate_predictions_for(X, ["a", "b"])
        >>> {label: prediction.round(3) for label, prediction in parts.items()}
        {'a': array([-0.004,  0.48 ]), 'b': array([-0.237,  0.19 ])}
        """
        return self._candidate_predictions(X, labels, offset)

    def _candidate_predictions(self, X: np.ndarray, labels, offset=None) -> dict:
        if (offset is None) != (self._response.offset is None):
            check_new_offset(None if offset is None else offset, None, X.shape[0],
                             self._response.offset is not None)
        if offset is not None:
            return {
                label: self._family.predict_with_offset(
                    self._candidate_params(label), X[:, self._find(label).columns], offset)
                for label in labels
            }
        return {
            label: self._family.predict(
                self._candidate_params(label),
                candidate_rows(self._family, X, self._find(label).columns),
            )
            for label in labels
        }

    def _refuse_weighted(self, what: str) -> None:
        """Raise OptionError if this fit has observation weights/offsets (*what* unsupported)."""
        if self._response.weighted:
            raise OptionError(f"{what} is not yet supported with observation weights/offsets/"
                              "exposure")

    def _format(self, values: np.ndarray, index) -> pd.Series | pd.DataFrame:
        if values.ndim == 2:
            return pd.DataFrame(values, columns=self.classes, index=index)
        return pd.Series(values, index=index, name=averaging.prediction_name(self))

    def predict_candidates(
        self, newdata: Any, blocks: Any = None, labels: Sequence[str] | None = None, *,
        offset: Any = None, exposure: Any = None,
    ) -> pd.DataFrame:
        """Each candidate's prediction for new rows, refitted on all labeled rows.

        Laid out like :attr:`cv_predictions` (MultiIndex ``(candidate, class)``
        columns for multinomial). With the candidates' predictions on a large
        test sample, the best convex combination in hindsight — the ``inf_w R(w)``
        of the paper's Theorem 1 — is ``solve_weights(P_test, y_test, loss)``.

        Parameters
        ----------
        newdata, blocks
            As for :meth:`predict`.
        labels : str or list of str, optional
            Candidates to predict with (default: all of them; refits happen
            on first use); one label may be given as a string.
        offset, exposure : array_like, optional
            As for :meth:`predict`.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> new = {"x": [0.0, 1.0], "a": np.zeros((2, 2)), "b": np.ones((2, 2))}
        >>> res.predict_candidates(new).round(3)
               a      b    a+b
        0 -0.004 -0.237 -0.136
        1  0.480  0.190  0.319
        """
        X, index = self._design_for(newdata, blocks)
        new_offset = self._new_offset(offset, exposure, X, newdata)
        if labels is None:
            labels = self.candidate_labels
        elif isinstance(labels, str):
            labels = [labels]  # list("a+b") would be the characters "a", "+", "b"
        else:
            given = labels
            labels = list(labels) if isinstance(labels, Iterable) else []
            if not labels:
                raise CandidateError(
                    f"labels={given!r}; give candidate labels, e.g. {self.candidate_labels[:3]}"
                )
        parts = self._candidate_predictions(X, labels, new_offset)
        if self.family != "multinomial":
            return pd.DataFrame({label: parts[label] for label in labels}, index=index)
        columns = pd.MultiIndex.from_product([labels, self.classes], names=["candidate", "class"])
        values = np.stack([parts[label] for label in labels], axis=1)
        return pd.DataFrame(values.reshape(len(values), -1), columns=columns, index=index)

    def predict(self, newdata: Any, blocks: Any = None, interval: str | None = None,
                alpha: float = 0.05, *, offset: Any = None, exposure: Any = None,
                weights: Any = None, revised: bool = True, missing: str = "raise",
                which: str = "mean") -> pd.Series | pd.DataFrame:
        """PEARL prediction for new rows: the weighted average of the refitted candidates.

        Parameters
        ----------
        newdata : DataFrame or dict
            Covariates (and, in a dict, possibly the blocks). With a
            ``Representations`` used at fit time, raw rows suffice.
        blocks : dict or Representations, optional
            Blocks for the new rows when not in *newdata*. DataFrame blocks
            are matched to the rows by index label: to a DataFrame
            *newdata*'s index, or (a dict *newdata*) to the first DataFrame
            block's, whose labels then index the prediction.
        interval : {None, "prediction", "set", "confidence"}, optional
            ``"prediction"`` (gaussian, poisson): a DataFrame ``mean, lower,
            upper`` of CV+ intervals (Barber, Candès, Ramdas & Tibshirani 2021)
            over the *whole* PEARL procedure: the weights are re-solved without
            each outer fold of the nested cross-validation behind
            :attr:`honest`, so coverage is at least ``1 - 2 alpha`` in theory
            and about ``1 - alpha`` in practice, whatever the model. The
            coverage is marginal: over the training rows and a new row drawn
            together, not conditional on the new row's x. Poisson bounds are on
            the count scale (lower clipped at 0).
            ``"set"`` (binomial, multinomial): a boolean DataFrame, one column
            per class, of adaptive prediction sets (Romano, Sesia & Candès
            2020) calibrated the same way, with the same marginal coverage.
            ``"confidence"`` (gaussian fits): a DataFrame ``mean, mean_se, lower,
            upper`` for the averaged mean. Per candidate the delta method gives
            ``x' V x``; the candidates combine as the coefficients do
            (unconditional SE, Burnham & Anderson 2002 eq. 6.12, t quantiles),
            so a row that picks out a term every candidate has gets that
            coefficient's :meth:`conf_int`.
            It estimates the fixed-weight average of the candidates' means,
            with the weights and the candidate set held fixed; for that target
            it is conservative (issue 28 measured 0.98-0.99 at 95% with eq. 4.9,
            which is never wider than eq. 6.12), and it is
            not an interval for a new response.
            Dask rows get point predictions only (an interval is refused by
            name: predict an in-memory sample of them instead); an unknown
            value is an ``OptionError`` before any work, on every backend.
        alpha : float, default 0.05
            Intervals and sets at level ``1 - alpha`` (a CV+ interval needs
            ``alpha <= 0.5``: beyond, its bounds cross).
        offset, exposure : array_like, optional
            Needed by a fit with ``offset=`` or ``exposure=`` (and refused
            without one): one value per new row, added to the linear predictor
            (``log(exposure)`` for exposure); with ``interval="prediction"`` or
            ``"set"`` every outer fold's procedure predicts the new rows with
            them (Poisson bounds on the count scale of the new row's exposure).
            A pandas Series (here and for *weights*) is matched to a DataFrame
            *newdata*'s rows by index label, an array by position, as at fit; a
            string names a column of *newdata* (``offset="log_t"``), as at fit.
        weights : array_like, optional
            Only for ``interval="prediction"`` of a fit with
            ``weight_type="variance"``: each new row's variance weight (default 1:
            a row of variance ``sigma^2``). The CV+ scores are then the held-out
            residuals times ``sqrt(w_i)`` and a new row's interval uses them divided
            by ``sqrt(weights)``; that scales the noise, not the refits' own error,
            so a new row whose weight (or, for Poisson, exposure) is more than twice
            every training row's is warned of (it under-covers: CV+ covers rows like
            the training rows). With frequency weights the training rows count
            ``w_i`` times in the CV+ quantiles and in the prediction sets' counts
            (a new row has no weight). Prediction sets are refused with variance
            weights. ``interval="confidence"`` uses the refits' weighted
            covariances (statsmodels' GLM with ``freq_weights``/``var_weights``)
            and adds the new rows' offset to the mean and both bounds.
        revised : bool, default True
            ``interval="confidence"`` only: eq. 6.12 (as :attr:`bse`), or eq. 4.9
            with ``False`` (see :meth:`get_prediction`).
        missing : {"raise", "drop", "nan"}, default "raise"
            What to do with a new row that has a missing or infinite value in a
            covariate, a block, its offset/exposure or its weight (the rows
            ``fit(missing="drop")`` would drop). ``"raise"`` names the first
            such row; ``"drop"`` predicts the other rows only (they keep their
            index labels, or their positions when the new data has none, and the
            dropped positions are in ``.attrs["dropped_rows"]``, as
            :meth:`evaluate`'s); ``"nan"`` returns every row, NaN (``<NA>`` in a
            prediction set) where a value is missing, as statsmodels' ``predict``
            and R's ``na.exclude`` do (new data without a complete row is refused,
            a ``MissingValueError``). Rows in memory only.
        which : {"mean", "linear"}, default "mean"
            ``"linear"``: the prediction on the scale of the linear predictor
            (statsmodels' ``which="linear"``, R's ``type = "link"``), with the new
            rows' offset in it. PEARL averages the candidates' means, so this is
            the link of the averaged mean (``logit`` of the probability, ``log``
            of a Poisson mean; for classes ``log(p_c / p_0)``, the first class
            the reference with a column of 0, as ``MNLogit``), which equals the
            candidates' linear predictor only where one candidate has all the
            weight, and keeps fewer digits than it where a probability is within
            1e-7 of 0 or 1 (``+-inf`` where it rounds to 0 or 1). Point
            predictions only (``interval=None``).

        Returns
        -------
        Series or DataFrame
            Means (gaussian, poisson), probability of ``classes[1]`` (binomial;
            the Series is named ``P(y=<classes[1]>)``), or class probabilities
            with one column per class (multinomial); with ``which="linear"``
            their link (the Series named ``logit(P(y=...))`` or
            ``log(prediction)``).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.choice(["high", "low"], 60), "a": rng.normal(size=(60, 2))}
        >>> res = pearl.fit("y ~ block(a)", data, family="binomial", seed=0)
        >>> res.predict({"a": np.zeros((1, 2))}).name
        'P(y=low)'
        >>> new = {"a": np.array([[0.0, 0.0], [np.nan, 1.0]])}
        >>> res.predict(new, missing="nan").isna().tolist()
        [False, True]
        >>> res.predict({"a": np.zeros((1, 2))}, which="linear").name
        'logit(P(y=low))'
        """
        which = check_choice("which", which, WHICH)
        if which == "linear":
            if interval is not None:
                raise OptionError(f"predict(which='linear') gives point predictions; the "
                                  f"interval={interval!r} is on the response's scale: leave "
                                  "which='mean' for it")
            mean = self.predict(newdata, blocks, offset=offset, exposure=exposure,
                                weights=weights, missing=missing)
            linear = linear_predictor(self.family, mean)
            if getattr(mean, "ndim", 2) == 1 and hasattr(mean, "rename"):
                linear = linear.rename(linear_name(self.family, mean.name))
            if isinstance(mean, pd.Series | pd.DataFrame):
                linear.attrs = dict(mean.attrs)  # missing="drop"'s dropped_rows
            return linear
        self._check_interval(interval)
        missing = check_choice("missing", missing, {
            "raise": "name the first incomplete row", "drop": "predict the complete rows",
            "nan": "NaN for the incomplete rows"})
        if self._lazy_rows is not None and self._lazy_rows.holds(newdata, blocks):
            if missing != "raise":
                raise OptionError(f"predict(missing={missing!r}) is for rows in memory; drop "
                                  "the incomplete dask rows first, e.g. ddf.dropna()")
            if self._response.offset is not None or offset is not None or exposure is not None:
                raise OptionError("predicting dask rows with an offset/exposure is not yet "
                                  "supported; predict an in-memory sample with offset=")
            if interval is not None or weights is not None:
                raise OptionError(
                    f"interval={interval!r} (and weights=) is not yet supported for dask rows: "
                    "their prediction is the point prediction only; compute the rows you need "
                    "intervals for (e.g. ddf.partitions[0].compute(), a pandas DataFrame) and "
                    "predict those, or leave interval=None"
                )
            return self._lazy_rows.predict(self, newdata, blocks)
        weights, offset, exposure = _named_in(newdata, weights, offset, exposure)
        if missing != "raise":
            return self._predict_complete_rows(newdata, blocks, missing, interval=interval,
                                               alpha=alpha, offset=offset, exposure=exposure,
                                               weights=weights, revised=revised)
        X, index = self._design_for(newdata, blocks)
        new_offset = self._new_offset(offset, exposure, X, newdata)
        if interval is None and weights is None:
            return self._format(np.asarray(self._combined_prediction(X, new_offset)), index)
        if weights is not None and interval != "prediction":
            raise OptionError(f"predict(weights=) is each new row's variance weight for "
                              f"interval='prediction'; with interval={interval!r} leave it None")
        weights = self._new_row_weights(weights, X.shape[0], data_index(newdata))
        if interval == "confidence":
            # The refits are GLMs with the fit's weights and offset, so their covariances are
            # the weighted ones; an offset shifts every candidate's mean, not its SE.
            out = averaging.confidence_interval(self, X, index, alpha, revised)
            if new_offset is not None:
                out[["mean", "lower", "upper"]] += new_offset[:, None]
            return out
        return self._conformal(X, index, alpha, new_offset, weights)

    def _predict_complete_rows(self, newdata: Any, blocks: Any, missing: str, *,
                               offset: Any, exposure: Any, weights: Any,
                               **options: Any) -> pd.Series | pd.DataFrame:
        """:meth:`predict` of the complete rows, the others dropped or given NaN (*missing*)."""
        _, embedded = split_data(newdata)
        index = data_index(newdata)
        if index is None:
            index = first_block_index(self.block_names, embedded, blocks)
        kept, _, weights, offset, exposure, dropped = self._complete_rows(
            newdata, blocks, weights, offset, exposure, response=False)
        n_given = len(next(iter(kept.values()))) + len(dropped) if kept else len(dropped)
        if not n_given:
            raise DataError("the new data has no rows; give at least one row to predict")
        if len(dropped) == n_given:
            raise MissingValueError(f"every one of the {n_given} new rows has a missing or "
                                    "infinite value; there is no row to predict")
        out = self.predict(kept, None, offset=offset, exposure=exposure, weights=weights,
                           **options)
        positions = np.setdiff1d(np.arange(n_given), dropped)
        if index is None:
            index = pd.RangeIndex(n_given)  # positions label the rows, as without missing=
        if missing == "drop":
            out.index = index[positions]
        else:
            out = _pad_rows(out, positions, index)
        out.attrs["dropped_rows"] = tuple(int(row) for row in dropped)
        return out

    def _check_interval(self, interval: Any) -> None:
        """Refuse an *interval* this fit cannot give, before any work (on every backend)."""
        gaussian = self.family == "gaussian"
        usable = (("set",) if self.classes is not None
                  else ("prediction", "confidence") if gaussian else ("prediction",))
        if interval == "confidence" and not gaussian:
            averaging.refuse_confidence_interval(self.family)  # names get_prediction
        if interval is not None and interval not in usable:
            named = " or ".join(repr(option) for option in usable)
            raise OptionError(
                f"interval={interval!r} is not available for a {self.family} fit; use None or "
                f"{named}"
            )

    def get_prediction(self, newdata: Any, blocks: Any = None, *, offset: Any = None,
                       exposure: Any = None, weights: Any = None,
                       revised: bool = True) -> PredictionResults:
        """The averaged mean of new rows with its SE and intervals, as statsmodels'.

        Parameters
        ----------
        newdata, blocks, offset, exposure
            As for :meth:`predict`.
        weights : array_like, optional
            The new rows' variance weights for the observation interval (as
            :meth:`predict`'s ``weights`` with ``interval="prediction"``).
        revised : bool, default True
            How the candidates' means and SEs combine into the mean's SE: Burnham &
            Anderson's eq. 6.12 (MuMIn's ``revised.var = TRUE``), as :attr:`bse` and
            :meth:`conf_int` combine the coefficients, or eq. 4.9 with ``False``.

        Returns
        -------
        PredictionResults
            ``predicted_mean``, ``se_mean``, ``conf_int(obs=False, alpha=0.05)`` and
            ``summary_frame(alpha=0.05)`` with statsmodels' columns ``mean, mean_se,
            mean_ci_lower, mean_ci_upper, obs_ci_lower, obs_ci_upper``. The mean
            interval uses the candidates' covariance (:attr:`cov_type`) by the delta
            method, the weights and candidates held fixed (one candidate: the same
            ``mean_se`` as statsmodels' ``get_prediction``; a gaussian fit's interval takes
            t quantiles with n - k df for every ``cov_type``, as R's ``predict.lm`` and
            statsmodels with ``use_t=True``, where ``OLS.fit(cov_type=...)`` defaults to
            normal quantiles for a robust covariance; a cluster covariance's t takes G - 1
            df, as its coefficients' intervals do in both packages, where statsmodels'
            ``get_prediction`` of a cluster fit keeps n - k df: its mean intervals are
            narrower than these, with the same ``mean_se``); the observation interval is CV+
            over the whole procedure, whose coverage of a new response is marginal (on
            average over new rows, not at each x). Binomial fits have mean columns only;
            multinomial fits are refused.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "x": rng.normal(size=60),
        ...         "a": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ x + block(a)", data, seed=0, honest=False)
        >>> new = {"x": np.zeros(2), "a": np.zeros((2, 1))}
        >>> list(res.get_prediction(new).summary_frame(alpha=0.1).columns)
        ['mean', 'mean_se', 'mean_ci_lower', 'mean_ci_upper', 'obs_ci_lower', 'obs_ci_upper']
        """
        if self._lazy_rows is not None and self._lazy_rows.holds(newdata, blocks):
            raise OptionError("get_prediction of dask rows is not available yet; predict an "
                              "in-memory sample, or use predict() for the lazy means")
        weights, offset, exposure = _named_in(newdata, weights, offset, exposure)
        X, index = self._design_for(newdata, blocks)
        new_offset = self._new_offset(offset, exposure, X, newdata)
        weights = self._new_row_weights(weights, X.shape[0], data_index(newdata))
        if self.family == "multinomial":
            mean_frame(self, X, index, 0.05, new_offset, revised)  # raises, naming the others
        # partials of module functions and bound methods, not closures: the results pickle
        observations = None
        if self.family != "binomial":
            observations = functools.partial(self._conformal, X, index, offset=new_offset,
                                             weights=weights)
        return PredictionResults(
            functools.partial(mean_frame, self, X, index, offset=new_offset, revised=revised),
            observations)

    def _new_offset(self, offset, exposure, X, newdata) -> np.ndarray | None:
        """The new rows' offset: rebuilt from their columns (``offset()`` in the formula), else
        *offset* and *exposure* as given (a fit without an offset refuses them)."""
        spec = self._design.spec
        if spec.formula.offset_codes:
            if offset is not None or exposure is not None:
                raise OptionError("this fit's offset comes from the formula's offset() terms, "
                                  "which are rebuilt from the new rows; leave offset=/exposure= "
                                  "None")
            return formula_offset(spec.formula, labelled_rows(newdata),
                                  dict(spec.covariates.namespace))
        return check_new_offset(offset, exposure, X.shape[0], self._response.offset is not None,
                                data_index(newdata), self._family.name)

    def _combined_prediction(self, X: np.ndarray, offset: np.ndarray | None = None) -> np.ndarray:
        """The weighted combination of the refitted candidates on design rows *X*."""
        active = self.weights[self.weights > 0]
        parts = self._candidate_predictions(X, active.index, offset)
        stacked = np.stack([parts[label] for label in active.index], axis=1)
        return self._loss.combine(stacked, active.to_numpy())

    def encode_response(self, values: Any) -> np.ndarray:
        """Encode response values of new rows with the fit's classes.

        Parameters
        ----------
        values : array_like
            Response values of new rows: classes seen at fit time for a
            classification fit, numbers otherwise.

        Returns
        -------
        ndarray
            Class codes in the order of :attr:`classes` (floats 0/1 for binomial,
            integers for multinomial), or the numeric response.

        Raises
        ------
        ResponseError
            A value that was not a class at fit time.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
        >>> y = np.where(a[:, 0] + rng.normal(size=60) > 0, "yes", "no")
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 family="binomial", seed=0)
        >>> res.encode_response(["no", "yes", "yes"])
        array([0., 1., 1.])
        """
        values = pd.Series(np.asarray(values))
        if self.classes is None:
            return self._family.encode(values).y
        # One lookup decides both whether a value is a class and which code it gets. Python
        # equality says 0 is False and 1.0 is 1, as the fit's classes were compared; pandas'
        # Categorical does not, and coded such values -1 (the last class) without a word.
        position = {label: code for code, label in enumerate(self.classes)}
        given = values.tolist()
        unknown = sorted(set(given) - set(position), key=str)
        if unknown:
            raise ResponseError(
                f"response values {unknown[:10]} were not classes at fit time ({self.classes})"
            )
        codes = np.array([position[value] for value in given], dtype=np.intp)
        return codes.astype(float) if self.family == "binomial" else codes

    def evaluate(self, test_data: Any, blocks: Any = None, *, weights: Any = None,
                 offset: Any = None, exposure: Any = None,
                 missing: str = "raise") -> pd.DataFrame:
        """Scores of PEARL and the paper's baselines on held-out rows.

        Parameters
        ----------
        test_data : DataFrame or dict
            Test rows with the response (and, in a dict, possibly the blocks).
        blocks : dict or Representations, optional
            Blocks for the test rows when not in *test_data*.

        Returns
        -------
        DataFrame
            Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best, AICc, BIC, Covariates
            (each as the fit chose it from the cross-validation), ``Null`` (the
            summary's reference: the intercept-only model fitted on the fit's rows,
            which Covariates equals when the formula has no covariate) and
            ``Oracle block``; columns ``MSE``, ``MAE`` (regression; Poisson fits add
            ``poisson_deviance``) or ``accuracy``, ``cross_entropy``, ``MSE``
            (classification). ``Oracle block`` is the single-block candidate
            best on these test rows (named in ``.attrs["best_candidate"]``), a
            reference in hindsight that no strategy could have picked.

        weights : array_like or str, optional
            Positive weights of the test rows (or the name of their column): every
            score is then a weighted mean (without them the test rows count equally,
            whatever the fit's weights were).
        offset, exposure : array_like, optional
            The test rows' offset/exposure, needed by (and only by) a fit with
            an offset, as for :meth:`predict`; ``offset()`` in the formula is
            rebuilt from the test rows. pandas Series are matched to a
            DataFrame *test_data*'s rows by index label, arrays by position.
        missing : {"raise", "drop"}, default "raise"
            As for :func:`pearlstats.fit`: ``"raise"`` reports test rows with
            NaN/inf (response, covariates, blocks, weights or offset);
            ``"drop"`` scores the other rows, and the positions of those
            removed are in ``.attrs["dropped_rows"]``.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(120, 2)), rng.normal(size=(120, 2))
        >>> data = {"y": a[:, 0] + rng.normal(size=120), "a": a, "b": b}
        >>> res = pearl.fit("y ~ block(a) + block(b)", {k: v[:80] for k, v in data.items()}, seed=0)
        >>> list(res.evaluate({k: v[80:] for k, v in data.items()}).columns)
        ['MSE', 'MAE']
        """
        missing = check_choice("missing", missing, {"raise": "report rows with NaN/inf",
                                                    "drop": "score the other rows"})
        if self._lazy_rows is not None and self._lazy_rows.holds(test_data, blocks):
            if missing == "drop":
                raise OptionError("evaluate(missing='drop') is for rows in memory; drop the "
                                  "incomplete dask rows first, e.g. ddf.dropna()")
            self._refuse_weighted("evaluate() of dask data")
            if weights is not None:
                raise OptionError("evaluate(weights=) is not yet supported for dask test data")
            return self._lazy_rows.evaluate(self, test_data, blocks)
        weights, offset, exposure = _named_in(test_data, weights, offset, exposure)
        dropped = np.zeros(0, dtype=np.intp)
        if missing == "drop":
            test_data, blocks, weights, offset, exposure, dropped = self._complete_rows(
                test_data, blocks, weights, offset, exposure)
        X = self.design_matrix(test_data, blocks)
        new_offset = self._new_offset(offset, exposure, X, test_data)
        if weights is not None:
            # weights of the scores, not of a fit: every family's metrics take them (the
            # family check refuses fitting a multinomial with weights), so checked as values
            weights = check_observation_weights(weights, "variance", None, None, "gaussian",
                                                X.shape[0], data_index(test_data)).weights
        table = evaluation.evaluate(self, test_data, blocks, weights, new_offset)
        # a tuple, not an array: pandas compares attrs when tables are concatenated, and an
        # array's truth value is ambiguous there
        table.attrs["dropped_rows"] = tuple(int(row) for row in dropped)
        return table

    def _complete_rows(self, test_data, blocks, weights, offset, exposure,
                       response: bool = True) -> tuple:
        """The test rows ``missing="drop"`` keeps, as a dict of columns and blocks, with their
        weights/offset/exposure (pandas ones matched by label first), and the dropped positions.

        The rows are found as the fit finds them (:func:`~pearlstats.stages.incomplete_rows`),
        plus those whose test weight or offset is NaN/inf; with *response* False (``predict``)
        a missing response does not count.
        """
        spec = self._design.spec
        env = EvalEnvironment([dict(spec.covariates.namespace or {})])
        frame, embedded = split_data(test_data)
        rows = data_index(test_data)
        source = blocks
        if source is None and self._representations is not None and not embedded:
            source = self._representations
        frame, row_variables = covariate_row_variables(spec.formula, frame, env)
        if not len(frame.columns):  # blocks only (a dict): the rows are the blocks'
            resolved = resolve_blocks(self.block_names, frame, embedded, source, index=rows)
            frame = pd.DataFrame(index=pd.RangeIndex(count_rows(frame, resolved)))
        n_given = len(frame)
        # rows a Representations cannot map (a None/NaN text), as the fit drops them
        frame, embedded, early = drop_missing_inputs(frame, embedded, source)
        resolved = resolve_blocks(self.block_names, frame, embedded, source, index=rows)
        n = count_rows(frame, resolved)
        bad = incomplete_rows(spec.formula, frame, row_variables, resolved, env, response)
        if spec.formula.offset_codes:
            bad |= ~np.isfinite(formula_offset(spec.formula, frame, env, "drop"))
        aligned = [None if value is None else
                   np.asarray(align_by_label(f"{name}=", value, rows), dtype=float)
                   for name, value in (("weights", weights), ("offset", offset),
                                       ("exposure", exposure))]
        for name, values in zip(("weights", "offset", "exposure"), aligned):
            if values is not None and values.shape != (n_given,):
                # checked here, before the incomplete rows go: an array as long as the rows
                # kept would otherwise be read against them, each value a row off
                raise DataError(f"{name}= must be one number per row of the data "
                                f"({n_given} rows), got shape {values.shape}")
        aligned = [values[~early] if values is not None else values for values in aligned]
        for values in aligned:
            if values is not None and values.shape == (n,):
                bad |= ~np.isfinite(values)
        keep = ~bad
        labels = (pd.RangeIndex(n_given) if rows is None else rows)[~early]
        # (an exposure given to a fit without one is refused by name when predicted)
        exposure_checked = aligned[2] if self._response.offset is not None else None
        for name, values in (("weights", aligned[0]), ("exposure", exposure_checked)):
            if values is not None and values.shape == (n,):
                # checked on the complete rows before the others go, so that a bad value is
                # named by its row's label (or position) in the data, not among the rows kept
                check_positive_rows(name, np.where(keep, values, 1.0), labels)
        kept = {column: frame[column].to_numpy()[keep] for column in frame.columns}
        kept |= {name: block.values[keep] for name, block in resolved.items()}
        aligned = [values[keep] if values is not None and values.shape == (n,) else values
                   for values in aligned]
        dropped = np.flatnonzero(early)
        dropped = np.sort(np.concatenate([dropped, np.flatnonzero(~early)[bad]]))
        return (kept, None, *aligned, dropped)


def _pad_rows(out: pd.Series | pd.DataFrame, positions: np.ndarray,
              index: pd.Index) -> pd.Series | pd.DataFrame:
    """*out* (the rows at *positions*) spread over all of *index*, missing elsewhere.

    Positions, not labels, place the rows: new data may repeat an index label.
    A boolean column (a prediction set) becomes pandas' nullable ``boolean``, whose
    ``<NA>`` keeps the other rows' ``True``/``False`` (a float NaN would make them 1.0/0.0).
    """
    if len(positions) == len(index):  # nothing to pad: the output as predict gives it
        return out.set_axis(index)
    frame = out.to_frame() if isinstance(out, pd.Series) else out
    frame = frame.astype({column: "boolean" for column in frame.columns
                          if frame[column].dtype == bool})
    frame = frame.set_axis(positions).reindex(pd.RangeIndex(len(index))).set_axis(index)
    return frame.iloc[:, 0].rename(out.name) if isinstance(out, pd.Series) else frame
