"""``PearlResults``: what a PEARL fit found, and prediction for new rows.

Everything is computed once in :func:`pearlstats.fit` and read through plain
properties; derived tables are ``cached_property``. Candidates are refitted on
all rows only where needed: those with non-zero weight at fit time (prediction
needs them), any other on first access — so a pool of thousands of candidates
does not pay thousands of statsmodels fits.

The consistency diagnostics (block importance, weight stability, tau-hat,
re-weighting, honest risk) come from :class:`~pearlstats.results.diagnostics.WeightDiagnostics`,
the held-out scores from :mod:`pearlstats.results.evaluation`, the summary from
:mod:`pearlstats.results.summary`.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..design.data import data_index, first_block_index, resolve_blocks, split_data
from ..design.offsets import formula_offset
from ..design.spec import DesignSpec
from ..distributed.data import uses_dask
from ..distributed.predict import evaluate_dask, predict_dask
from ..engines._common import ridge_penalty_weights
from ..engines.wide import candidate_exog, candidate_rows
from ..exceptions import (
    AllCandidatesFailedError,
    CandidateError,
    DataError,
    FoldError,
    OptionError,
    PearlWarning,
    ResponseError,
    UnknownCandidateError,
)
from ..ledger import FailureLedger
from ..nested import NestedCV, conformal_prediction, nested_cross_validation
from ..observation_weights import check_new_offset, check_observation_weights, mean_se
from ..stages import FitState
from . import averaging, evaluation
from .diagnostics import WeightDiagnostics
from .readonly import cached_table
from .strategies import STRATEGIES, combine, strategy_weights
from .summary import build_summary

if TYPE_CHECKING:
    from ..plotting import PlotAccessor
    from .summary import PearlSummary

__all__ = ["PearlResults", "results_from_state", "top_weights"]


class _LazyCandidates(Mapping):
    """Mapping label -> statsmodels results, each built on first access."""

    def __init__(self, results: "PearlResults"):
        self._results = results
        self._cache: dict = {}

    def __getitem__(self, label):
        if label not in self._cache:
            self._cache[label] = self._results._statsmodels_results(label)
        return self._cache[label]

    def __iter__(self):
        return iter(self._results.candidate_labels)

    def __len__(self):
        return len(self._results.candidate_labels)

    def __repr__(self):
        return (
            f"<{len(self)} candidates, refitted with statsmodels on first access: "
            f"{list(self)[:5]}...>"
        )


class PearlResults(WeightDiagnostics):
    """Results of :func:`pearlstats.fit`.

    Attributes are read-only (tables are returned as copies: editing one
    cannot change the fit). ``weights``, ``cv_predictions``, ``cv_risk``,
    ``folds`` and ``baselines`` describe the cross-validation stage;
    ``candidates`` gives each candidate's statsmodels results refitted on all
    rows; :meth:`predict` averages the refitted candidates on new rows.
    ``block_importance``, ``diagnostics``, ``weight_stability`` and
    ``failures`` describe the weights; :meth:`evaluate` scores PEARL and the
    baselines on test rows, :meth:`honest_risk` by nested cross-validation
    (the only method that stores something: its latest result, for the
    summary).

    Examples
    --------
    >>> import numpy as np, pearlstats as pearl
    >>> rng = np.random.default_rng(0)
    >>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 2)),
    ...         "b": rng.normal(size=(60, 2))}
    >>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
    >>> float(res.weights.sum())
    1.0
    """

    def __init__(self, state: FitState):
        self._state = state
        self._spec = state.design.spec.formula
        self._family = state.family
        self._loss = state.loss
        self._design = state.design
        self._response = state.response
        self._pool = list(state.candidates.pool)
        self._extras = list(state.candidates.extras)
        self._folds = state.folds
        self._cv_spec = state.cv_spec
        self._seed = state.seed
        self._ridge = state.ridge
        self._predictions = state.output.predictions
        self._failed = state.output.failed
        self._solution = state.solution
        self._ledger = FailureLedger(list(state.ledger))
        self._representations = state.representations
        self._dropped_rows = state.dropped_rows
        labels = state.row_labels
        self._row_labels = pd.RangeIndex(len(state.response.y)) if labels is None else labels
        self._params: dict = {}
        self._params_lock = threading.Lock()
        self._last_honest_risk = None
        self._candidates = _LazyCandidates(self)
        for label in self.weights.index[self.weights.to_numpy() > 0]:
            self._candidate_params(label)

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_params_lock"]  # locks do not pickle; a fresh one is made on load
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._params_lock = threading.Lock()

    # ---- description of the fit -------------------------------------------------
    @property
    def stages(self) -> FitState:
        """The frozen values the fit's stages produced (design, folds, OOF predictions, ...)."""
        return self._state

    @property
    def design_spec(self) -> DesignSpec:
        """What rebuilds the design matrix for any rows (patsy's DesignInfo, the blocks' layout)."""
        return self._design.spec

    @property
    def formula(self) -> str:
        return self._spec.formula

    @property
    def family(self) -> str:
        return self._family.name

    @property
    def loss(self) -> str:
        """Name of the surrogate loss the weights minimise."""
        return self._loss.name

    @property
    def original_loss(self) -> str:
        """The loss the surrogate stands for (e.g. ``"log-loss"`` for cross-entropy)."""
        return self._loss.original

    @property
    def nobs(self) -> int:
        return len(self._folds)

    @property
    def seed(self) -> int:
        """The seed of the folds (drawn and recorded when ``fit`` got none)."""
        return self._seed

    @property
    def ridge(self) -> float:
        return self._ridge

    @property
    def n_folds(self) -> int:
        return int(self._folds.max()) + 1

    @property
    def folds(self) -> np.ndarray:
        """Fold label (0..K-1) of each row."""
        return self._folds.copy()

    @property
    def classes(self) -> list | None:
        """Class labels in code order (classification), else None."""
        return None if self._response.classes is None else list(self._response.classes)

    @property
    def block_dims(self) -> dict:
        """Width of each foundation block, in formula order."""
        return self._design.block_dims

    @property
    def block_names(self) -> list:
        return list(self._design.block_slices)

    @property
    def candidate_labels(self) -> list:
        return [candidate.label for candidate in self._pool]

    @property
    def candidate_blocks(self) -> pd.Series:
        """Blocks (tuple of names) each candidate uses."""
        return pd.Series([c.blocks for c in self._pool], index=self.candidate_labels, name="blocks")

    @property
    def n_params(self) -> pd.Series:
        """Number of coefficients of each candidate (per class equation for multinomial)."""
        return pd.Series(
            [c.n_params for c in self._pool], index=self.candidate_labels, name="n_params"
        )

    @property
    def dropped_rows(self) -> np.ndarray:
        """Positions of rows removed by ``missing='drop'`` (empty otherwise)."""
        return self._dropped_rows.copy()

    @property
    def row_labels(self) -> pd.Index:
        """Labels of the rows the fit used, in order: the data's index labels for a DataFrame
        or a dict of pandas Series (without the rows ``missing='drop'`` removed), positions
        for other dicts.

        :attr:`cv_predictions`, :attr:`fittedvalues` and :attr:`resid` are indexed by them,
        as statsmodels indexes its fitted values by the data's rows.
        """
        return self._row_labels

    # ---- cross-validation stage ------------------------------------------------
    @cached_table
    def weights(self) -> pd.Series:
        """Simplex weights over the candidates (failed candidates get exactly 0)."""
        return pd.Series(self._solution.weights, index=self.candidate_labels, name="weight")

    @property
    def weight_objective(self) -> float:
        """Mean surrogate loss of the weighted out-of-fold prediction."""
        return float(self._solution.objective)

    @property
    def kkt_gap(self) -> float:
        """Certified optimality gap of the weight solver (Frank-Wolfe duality gap)."""
        return float(self._solution.kkt_gap)

    @property
    def weight_solver(self) -> str:
        return self._solution.solver

    @cached_table
    def cv_predictions(self) -> pd.DataFrame:
        """Out-of-fold predictions, one column per candidate.

        Gaussian/poisson: means; binomial: probability of ``classes[1]``;
        multinomial: class probabilities with MultiIndex columns
        ``(candidate, class)``. NaN for failed candidates.
        """
        J = len(self._pool)
        values = self._predictions[:, :J]
        # copy=False: the cached table shares the stored predictions (readers get copies).
        if values.ndim == 2:
            return pd.DataFrame(values, columns=self.candidate_labels, index=self.row_labels,
                                copy=False)
        columns = pd.MultiIndex.from_product(
            [self.candidate_labels, self.classes], names=["candidate", "class"]
        )
        return pd.DataFrame(values.reshape(len(values), -1), columns=columns,
                            index=self.row_labels)

    def _pointwise(self, prediction: np.ndarray) -> np.ndarray:
        return self._loss.pointwise(self._response.y, prediction)

    @cached_property
    def _candidate_losses(self) -> np.ndarray:
        """Per-row surrogate loss (n, J_all) of every candidate, pool then extras."""
        columns = [
            self._pointwise(self._predictions[:, j]) for j in range(self._predictions.shape[1])
        ]
        return np.column_stack(columns)

    @cached_table
    def cv_risk(self) -> pd.Series:
        """Each candidate's cross-validated risk under the surrogate loss."""
        J = len(self._pool)
        return pd.Series(
            self._candidate_losses[:, :J].mean(axis=0), index=self.candidate_labels, name="cv_risk"
        )

    @cached_table
    def cv_risk_se(self) -> pd.Series:
        """Standard error of each CV risk: SD of the per-row losses / sqrt(n)."""
        J = len(self._pool)
        se = self._mean_se(self._candidate_losses[:, :J])
        return pd.Series(se, index=self.candidate_labels, name="cv_risk_se")

    def _mean_se(self, values: np.ndarray) -> np.ndarray:
        """SE of the mean of per-row (weighted) losses: SD / sqrt(n) without weights."""
        return mean_se(values, self._response.row_weights, self._response.weight_type)

    @property
    def failures(self) -> pd.DataFrame:
        """The failure ledger: candidate, fold, stage, kind, reason, action, excluded."""
        return self._ledger.to_frame()

    @property
    def failed(self) -> pd.Series:
        """Whether each candidate failed in cross-validation (and so has weight 0)."""
        return pd.Series(
            self._failed[: len(self._pool)], index=self.candidate_labels, name="failed"
        )

    # ---- honest (nested) risk of every strategy -------------------------------------
    @cached_table
    def honest(self) -> pd.DataFrame | None:
        """Honest risk of PEARL and every baseline, from nested cross-validation.

        Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best; columns ``risk``,
        ``se``, ``ratio`` (PEARL's risk / the row's, on the same held-out
        rows) and ``ratio_se`` (paired delta-method SE). Inside each outer fold
        the whole procedure is re-run on the other rows — PEARL re-solves its
        weights, MS re-selects, Best re-chooses — so, unlike :attr:`baselines`,
        a ratio above 1 is possible. Computed on first use (about ``honest``
        times the cross-validation's cost); None when the fit was made with
        ``honest=False`` or the nested cross-validation could not run (then
        :attr:`honest_failure` says why).
        """
        if self._state.honest is False:
            return None
        try:
            result = evaluation.honest_risk(self, nested=self._nested)
        except (FoldError, AllCandidatesFailedError, ResponseError) as err:
            # ResponseError: an outer training set's gaussian response is constant
            self._honest_failure = str(err)
            warnings.warn(
                f"the nested cross-validation for res.honest could not run: {err}",
                PearlWarning,
                stacklevel=2,
            )
            return None
        self._last_honest_risk = result
        message = result.warning_against_ms()
        if message:
            warnings.warn(
                f"{message}; consider a simpler candidate set or more rows",
                PearlWarning,
                stacklevel=2,
            )
        return result.table

    @cached_property
    def _nested(self) -> NestedCV:
        """The nested cross-validation shared by :attr:`honest` and prediction intervals."""
        return nested_cross_validation(self._state, outer=self._state.honest or 5,
                                       option="honest")

    def _conformal(self, X: np.ndarray, index, alpha: float):
        """CV+ interval (DataFrame mean, lower, upper) or prediction sets (DataFrame of bools)."""
        if not (isinstance(alpha, float | int) and 0 < alpha < 1):
            raise OptionError(
                f"alpha={alpha!r}; use a number between 0 and 1, e.g. 0.1 for 90% coverage"
            )
        result = conformal_prediction(self._state, self._nested, X, float(alpha))
        if self.classes is None:
            lower, upper = result
            mean = self._format(self._combined_prediction(X), index)
            return pd.DataFrame(
                {"mean": mean.to_numpy(), "lower": lower, "upper": upper}, index=index
            )
        return pd.DataFrame(result, columns=self.classes, index=index)

    @property
    def honest_failure(self) -> str | None:
        """Why :attr:`honest` is None although the fit asked for it (else None)."""
        return getattr(self, "_honest_failure", None)

    # ---- baselines ----------------------------------------------------------------
    @cached_property
    def _all_candidates(self) -> list:
        return self._pool + self._extras

    @cached_table
    def strategy_weights(self) -> pd.DataFrame:
        """Weights each strategy (PEARL and the paper's baselines) puts on every candidate.

        Columns index pool candidates first, then the single-block / fusion
        candidates fitted only for the baselines.
        """
        labels = [c.label for c in self._all_candidates]
        table = strategy_weights(
            self._solution.weights, self._all_candidates, len(self._pool),
            self._candidate_losses.mean(axis=0), self._failed,
        )
        return pd.DataFrame(table, index=labels).T.loc[list(STRATEGIES)]

    @cached_property
    def _strategy_losses(self) -> pd.DataFrame:
        weights = self.strategy_weights.to_numpy()
        columns = {}
        for name, w in zip(self.strategy_weights.index, weights):
            columns[name] = self._pointwise(combine(self._predictions, w, self._loss))
        return pd.DataFrame(columns)

    @cached_table
    def baselines(self) -> pd.DataFrame:
        """CV risk of PEARL and each baseline, its SE, and the risk ratio PEARL / baseline.

        ``ratio_se`` is a paired (delta-method) standard error of the ratio,
        from per-row loss differences on the same rows. With observation weights the
        risks are weighted means and the SEs those of
        :func:`~pearlstats.observation_weights.mean_se`.
        """
        losses = self._strategy_losses
        pearl = losses["PEARL"].to_numpy()
        rows = {}
        for name in losses.columns:
            other = losses[name].to_numpy()
            risk, risk_pearl = other.mean(), pearl.mean()
            ratio = risk_pearl / risk
            # delta method for mean(a)/mean(b) with paired rows
            influence = (pearl - ratio * other) / risk
            rows[name] = {
                "cv_risk": risk,
                "se": float(self._mean_se(other)),
                "risk_ratio": ratio,
                "ratio_se": float(self._mean_se(influence)),
                "candidate": self._strategy_label(name),
            }
        return pd.DataFrame.from_dict(rows, orient="index")

    def _strategy_label(self, name: str) -> str:
        weights = self.strategy_weights.loc[name]
        if weights.isna().any():
            return "failed"
        chosen = weights.index[weights.to_numpy() > 0]
        return chosen[0] if len(chosen) == 1 else f"{len(chosen)} candidates"

    # ---- refits and prediction ---------------------------------------------------------
    def _find(self, label: str):
        for candidate in self._all_candidates:
            if candidate.label == label:
                return candidate
        raise UnknownCandidateError(
            f"no candidate {label!r}; candidates are {self.candidate_labels[:20]}"
        )

    def _candidate_params(self, label: str) -> np.ndarray:
        # Refits happen on first use, possibly from several threads at once.
        with self._params_lock:
            if label not in self._params:
                candidate = self._find(label)
                params, notes = self._family.fit_params(
                    self._design.X, self._response, candidate.columns, self._ridge, label
                )
                self._ledger.extend(notes)
                self._params[label] = params
            return self._params[label]

    @property
    def candidates(self) -> Mapping:
        """Mapping label -> statsmodels results of the candidate refitted on all rows."""
        return self._candidates

    def candidate_params(self, label: str) -> pd.Series | pd.DataFrame:
        """Coefficients of one candidate refitted on all rows, labelled by design column.

        The averaged model's coefficients are :attr:`params`.
        """
        candidate = self._find(label)
        names = [self._design.column_names[i] for i in candidate.columns]
        values = self._candidate_params(label)
        if not isinstance(values, np.ndarray):
            raise OptionError(
                f"candidate {label!r} is not a linear model ({type(values).__name__}); "
                f"inspect it with results.candidates[{label!r}]"
            )
        if values.ndim == 2:
            return pd.DataFrame(values, index=names, columns=self.classes[1:])
        return pd.Series(values, index=names, name=label)

    def _statsmodels_results(self, label: str):
        candidate = self._find(label)
        names = [self._design.column_names[i] for i in candidate.columns]
        exog = pd.DataFrame(candidate_exog(self._design.X, candidate.columns, label), columns=names)
        # A separated candidate may have been fitted with a larger ridge than the fit's.
        ridge = getattr(self._family, "candidate_ridge", lambda _, value: value)(label, self._ridge)
        # the penalty of the engines, on statsmodels' unscaled coefficients
        return self._family.statsmodels_results(
            self._response, exog, self._candidate_params(label), ridge,
            ridge_penalty_weights(exog.to_numpy()),
        )

    def _design_for(self, newdata, blocks) -> tuple[np.ndarray, pd.Index | None]:
        frame, embedded = split_data(newdata)
        source = blocks
        if source is None and self._representations is not None and not embedded:
            needed = getattr(self._representations, "input_columns", [])
            missing = [column for column in needed if column not in frame.columns]
            if missing:
                raise DataError(f"new data lacks column(s) {missing} that the representations read")
            source = self._representations
        resolved = resolve_blocks(
            self.block_names, frame, embedded, source, index=data_index(newdata)
        )
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
        """
        return self._design_for(newdata, blocks)[0]

    def candidate_predictions_for(self, X: np.ndarray, labels: Sequence[str],
                                  offset: np.ndarray | None = None) -> dict:
        """Each named candidate's prediction on design rows *X* (see :meth:`design_matrix`).

        Candidates are refitted on all labeled rows on first use; the
        baseline-only candidates (single blocks, fusion) may be named too.
        *offset* (one per row of *X*) is needed by, and only by, a fit with an offset.
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
                alpha: float = 0.05, *, offset: Any = None,
                exposure: Any = None) -> pd.Series | pd.DataFrame:
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
            and about ``1 - alpha`` in practice, whatever the model. Poisson
            bounds are on the count scale (lower clipped at 0).
            ``"set"`` (binomial, multinomial): a boolean DataFrame, one column
            per class, of adaptive prediction sets (Romano, Sesia & Candès
            2020) calibrated the same way.
            ``"confidence"`` (gaussian fits): a DataFrame ``mean, mean_se, lower,
            upper`` for the averaged mean. Per candidate the delta method gives
            ``x' V x``; the candidates combine as the coefficients do
            (unconditional SE, t quantiles), conditional on the weights.
        alpha : float, default 0.05
            Intervals and sets at level ``1 - alpha``.
        offset, exposure : array_like, optional
            Needed by a fit with ``offset=`` or ``exposure=`` (and refused
            without one): one value per new row, added to the linear predictor
            (``log(exposure)`` for exposure). Intervals are not yet supported
            with weights/offsets.

        Returns
        -------
        Series or DataFrame
            Means (gaussian, poisson), probability of ``classes[1]`` (binomial;
            the Series is named ``P(y=<classes[1]>)``), or class probabilities
            with one column per class (multinomial).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.choice(["high", "low"], 60), "a": rng.normal(size=(60, 2))}
        >>> res = pearl.fit("y ~ block(a)", data, family="binomial", seed=0)
        >>> res.predict({"a": np.zeros((1, 2))}).name
        'P(y=low)'
        """
        if uses_dask(newdata, blocks):  # a lazy dask Series / array, partition by partition
            if self._response.offset is not None or offset is not None or exposure is not None:
                raise OptionError("predicting dask rows with an offset/exposure is not yet "
                                  "supported; predict an in-memory sample with offset=")
            return predict_dask(self, newdata, blocks)
        X, index = self._design_for(newdata, blocks)
        new_offset = self._new_offset(offset, exposure, X, newdata)
        if interval is None:
            return self._format(np.asarray(self._combined_prediction(X, new_offset)), index)
        self._refuse_weighted(f"predict(interval={interval!r})")
        if interval == "confidence":
            return averaging.confidence_interval(self, X, index, alpha)
        if interval == "prediction" and self.classes is None:
            return self._conformal(X, index, alpha)
        if interval == "set" and self.classes is not None:
            return self._conformal(X, index, alpha)
        usable = "'set'" if self.classes is not None else "'prediction' or 'confidence'"
        raise OptionError(
            f"interval={interval!r} is not available for a {self.family} fit; use None or {usable}"
        )

    def _new_offset(self, offset, exposure, X, newdata) -> np.ndarray | None:
        """The new rows' offset: rebuilt from their columns (``offset()`` in the formula), else
        *offset* and *exposure* as given (a fit without an offset refuses them)."""
        spec = self._design.spec
        if spec.formula.offset_codes:
            if offset is not None or exposure is not None:
                raise OptionError("this fit's offset comes from the formula's offset() terms, "
                                  "which are rebuilt from the new rows; leave offset=/exposure= "
                                  "None")
            return formula_offset(spec.formula, split_data(newdata)[0],
                                  dict(spec.covariates.namespace))
        return check_new_offset(offset, exposure, X.shape[0], self._response.offset is not None)

    def _combined_prediction(self, X: np.ndarray, offset: np.ndarray | None = None) -> np.ndarray:
        """The weighted combination of the refitted candidates on design rows *X*."""
        active = self.weights[self.weights > 0]
        parts = self._candidate_predictions(X, active.index, offset)
        stacked = np.stack([parts[label] for label in active.index], axis=1)
        return self._loss.combine(stacked, active.to_numpy())

    def encode_response(self, values: Any) -> np.ndarray:
        """Encode response values of new rows with the fit's classes."""
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
                 offset: Any = None, exposure: Any = None) -> pd.DataFrame:
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
            Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best (each as the fit chose
            it from the cross-validation) and ``Oracle block``; columns ``MSE``,
            ``MAE`` (regression) or ``accuracy``, ``cross_entropy``, ``MSE``
            (classification). ``Oracle block`` is the single-block candidate
            best on these test rows (named in ``.attrs["best_candidate"]``), a
            reference in hindsight that no strategy could have picked.

        weights : array_like, optional
            Positive weights of the test rows: every score is then a weighted
            mean (without them the test rows count equally, whatever the fit's
            weights were).
        offset, exposure : array_like, optional
            The test rows' offset/exposure, needed by (and only by) a fit with
            an offset, as for :meth:`predict`; ``offset()`` in the formula is
            rebuilt from the test rows.

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
        if uses_dask(test_data, blocks):  # scored partition by partition
            self._refuse_weighted("evaluate() of dask data")
            if weights is not None:
                raise OptionError("evaluate(weights=) is not yet supported for dask test data")
            return evaluate_dask(self, test_data, blocks)
        X = self.design_matrix(test_data, blocks)
        new_offset = self._new_offset(offset, exposure, X, test_data)
        if weights is not None:
            weights = check_observation_weights(weights, "variance", None, None, self.family,
                                                X.shape[0]).weights
        return evaluation.evaluate(self, test_data, blocks, weights, new_offset)

    def summary(
        self,
        correct: str | Sequence[str | Sequence[str]] | None = None,
        *,
        coefficients: bool | None = None,
        weight_uncertainty: bool | int = False,
    ) -> PearlSummary:
        """A statsmodels ``Summary`` with the weights, baselines and diagnostics.

        Use ``print(res.summary())``, ``.as_latex()`` or ``.as_html()``.

        Parameters
        ----------
        correct : str, tuple or sequence of them, optional
            Correctly specified candidates (as in a simulation); adds tau-hat,
            their total weight (see :meth:`tau_hat`).
        coefficients : bool, optional
            Show the averaged coefficients of the block columns too (default:
            only when there are few); the formula's covariates come first.
        weight_uncertainty : bool or int, default False
            Add the refitting bootstrap's SD and 95% interval of each weight
            (``True``: 200 resamples; an int >= 2: that many; 0: none).

        Raises
        ------
        OptionError
            *coefficients* not None or a bool, *weight_uncertainty* not a bool or an int.
        """
        return build_summary(self, correct, coefficients=coefficients,
                             weight_uncertainty=weight_uncertainty)

    @property
    def plot(self) -> PlotAccessor:
        """The fit's figures: ``res.plot.weights()``, ``.cv_risk()``, ``.block_importance()``, ...

        See :class:`~pearlstats.plotting.PlotAccessor` (matplotlib is imported on first use).
        """
        from ..plotting import PlotAccessor

        return PlotAccessor(self)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    # ---- the averaged model (pearlstats.results.averaging) -------------------------------
    @property
    def params(self) -> pd.Series | pd.DataFrame:
        """Model-averaged coefficients, MuMIn's *full average* ``sum_j w_j b_j``.

        A candidate that lacks a term contributes 0; only candidates with positive
        weight enter. The formula's covariates (in every candidate) come first,
        then the blocks' columns in formula order. A
        DataFrame (terms x classes after the reference) for multinomial fits.
        With ``ridge > 0`` these are penalised (shrunken) coefficients
        (:attr:`ridge_note`). A term some weighted candidate cannot identify (its
        columns linearly dependent on all rows, named at fit by an
        :class:`~pearlstats.exceptions.UnidentifiedCoefficientWarning`) is NaN,
        as are its :attr:`bse` and :meth:`conf_int`. One candidate's:
        :meth:`candidate_params`.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "a": rng.normal(size=(60, 1)),
        ...         "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
        >>> list(res.params.index)
        ['Intercept', 'a[0]', 'b[0]']
        """
        return averaging.params(self)

    @property
    def bse(self) -> pd.Series | pd.DataFrame:
        """Unconditional standard errors of :attr:`params` (Burnham & Anderson 2002, eq. 4.9).

        ``sum_j w_j sqrt(se_j**2 + (b_j - b_avg)**2)`` with ``b_j = se_j = 0`` where
        candidate j lacks the term; the weights are taken as fixed. Warns when
        ``ridge > 0`` (see :attr:`ridge_note`).
        """
        return averaging.bse(self)

    def conf_int(self, alpha: float = 0.05) -> pd.DataFrame:
        """Confidence intervals ``params +- z se`` (columns ``lower``, ``upper``).

        For gaussian fits each candidate's t quantile is folded into its
        variance (Burnham & Anderson 2002, section 4.3.3), so one candidate with
        weight 1 gives statsmodels' OLS ``conf_int()``. Rows are (class, term) for
        multinomial fits. Conditional on the weights; warns when ``ridge > 0``.
        """
        return averaging.conf_int(self, alpha)

    @property
    def ridge_note(self) -> str | None:
        """Why coefficients and SEs need care when a weighted candidate has a ridge (else None)."""
        return averaging.ridge_note(self)

    @property
    def fittedvalues(self) -> pd.Series | pd.DataFrame:
        """The averaged prediction on the fit's rows, laid out as :meth:`predict`'s."""
        return averaging.fittedvalues(self)

    @property
    def resid(self) -> pd.Series | pd.DataFrame:
        """Response residuals ``y - fittedvalues`` (one-hot minus probabilities for multinomial)."""
        return averaging.residuals(self, "response")

    @property
    def resid_pearson(self) -> pd.Series:
        """Pearson residuals ``(y - mu) / sqrt(V(mu))`` (unit dispersion; not multinomial)."""
        return averaging.residuals(self, "pearson")

    def residuals(self, kind: str = "response") -> pd.Series | pd.DataFrame:
        """Residuals of the averaged model: ``kind="response"`` or ``"pearson"``."""
        return averaging.residuals(self, kind)

    @cached_table
    def candidate_table(self) -> pd.DataFrame:
        """Per candidate: ``weight``, ``cv_risk``, ``n_params`` and statsmodels' ``df_model``.

        ``df_model`` is the rank of the candidate's design less one for a constant
        column (per class equation for multinomial, as ``n_params``).
        """
        return averaging.candidate_table(self)

    def __repr__(self) -> str:
        return (
            f"<PearlResults {self.family}, n={self.nobs}, K={self.n_folds}, "
            f"J={len(self._pool)} candidates; top weights {top_weights(self.weights)}>"
        )


def top_weights(weights: pd.Series, count: int = 3) -> str:
    """The *count* largest weights as ``"label: 0.123, ..."`` (for the results' reprs)."""
    top = weights.sort_values(ascending=False).head(count)
    return ", ".join(f"{label}: {w:.3f}" for label, w in top.items())


def results_from_state(state: FitState) -> PearlResults:
    """The one place a :class:`PearlResults` is built: from a fit's stage values."""
    return PearlResults(state)
