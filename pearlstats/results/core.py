"""``PearlResults``: what a PEARL fit found, built once from the fit's stage values.

Everything is computed once in :func:`pearlstats.fit` and read through plain
properties; derived tables are ``cached_property``. The class is assembled
from one part per job, each in its own module:

- this module: the description of the fit and of its cross-validation stage
  (``weights``, ``cv_predictions``, ``cv_risk``, ``folds``, ...), the summary,
  the figures and the averaged model (:mod:`pearlstats.results.averaging`);
- :mod:`~pearlstats.results.risks`: ``strategy_weights``, ``baselines`` and
  ``honest``, the risks of PEARL and the paper's baselines;
- :mod:`~pearlstats.results.refits`: candidates refitted on all rows, on first use;
- :mod:`~pearlstats.results.prediction`: ``predict``, ``predict_candidates``
  and ``evaluate`` of new rows;
- :mod:`~pearlstats.results.diagnostics`: block importance, weight stability,
  tau-hat, re-weighting, honest risk, the refitting bootstrap.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..backends.lazy import computed, is_dask_collection, row_frame
from ..design.spec import DesignSpec
from ..design.splitters import Splits
from ..in_memory_only import RESULTS_NEEDING_ROWS, refuse_results_feature
from ..ledger import FailureLedger
from ..observation_weights import mean_se
from ..stages import FitState
from . import averaging
from .diagnostics import WeightDiagnostics
from .hypothesis import AveragedTests
from .prediction import LazyRows, Prediction
from .readonly import cached_table
from .refits import CandidateRefits, _LazyCandidates
from .risks import StrategyRisks

if TYPE_CHECKING:
    from ..plotting import PlotAccessor
    from .summary import PearlSummary

__all__ = ["PearlResults", "results_from_state", "top_weights"]


class PearlResults(Prediction, StrategyRisks, CandidateRefits, WeightDiagnostics,
                   AveragedTests):
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

    def __init__(self, state: FitState, lazy_rows: LazyRows | None = None):
        # the frozen state's arrays refuse writes: res.stages.solution.weights[:] = ... would
        # change the summary's strategies while res.weights kept the fitted ones
        for values in (state.solution.weights, state.output.predictions, state.folds,
                       state.response.y, state.design.X):
            if isinstance(values, np.ndarray):
                values.flags.writeable = False
        self._state = state
        self._lazy_rows = lazy_rows
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

    def __getattribute__(self, name: str):
        # A fit on dask data refuses, here and only here, what needs its rows in one process
        # (the table of reasons is pearlstats.in_memory_only.RESULTS_NEEDING_ROWS).
        if name in RESULTS_NEEDING_ROWS and object.__getattribute__(self, "_on_partitions"):
            refuse_results_feature(name)
        return object.__getattribute__(self, name)

    @property
    def _on_partitions(self) -> bool:
        """Whether the fit's rows are dask partitions (see :mod:`pearlstats.distributed`)."""
        return self.__dict__["_state"].partitions is not None

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
        """The frozen values the fit's stages produced (design, folds, OOF predictions, ...).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> type(res.stages).__name__
        'FitState'
        >>> res.stages.design.spec is res.design_spec
        True
        """
        return self._state

    @property
    def design_spec(self) -> DesignSpec:
        """What rebuilds the design matrix for any rows (patsy's DesignInfo, the blocks' layout).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.design_spec.column_names
        ['Intercept', 'x', 'a[0]', 'a[1]', 'b[0]', 'b[1]']
        """
        return self._design.spec

    @property
    def formula(self) -> str:
        """The formula the fit was given.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.formula
        'y ~ x + block(a) + block(b)'
        """
        return self._spec.formula

    @property
    def family(self) -> str:
        """Name of the response family: gaussian, binomial, multinomial or poisson.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.family
        'gaussian'
        """
        return self._family.name

    @property
    def loss(self) -> str:
        """Name of the surrogate loss the weights minimise.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.loss
        'squared'
        """
        return self._loss.name

    @property
    def original_loss(self) -> str:
        """The loss the surrogate stands for (e.g. ``"log-loss"`` for cross-entropy).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
        >>> y = np.where(a[:, 0] + rng.normal(size=60) > 0, "yes", "no")
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 family="binomial", seed=0)
        >>> res.loss, res.original_loss
        ('cross_entropy', 'log-loss')
        """
        return self._loss.original

    @property
    def nobs(self) -> int:
        """Number of rows the fit used (after ``missing='drop'``).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.nobs
        60
        """
        return len(self._folds)

    @property
    def seed(self) -> int:
        """The seed of the folds (drawn and recorded when ``fit`` got none).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.seed
        0
        >>> drawn = pearl.datasets.example_fit(seed=None)  # no seed: one is drawn
        >>> isinstance(drawn.seed, int)
        True
        """
        return self._seed

    @property
    def ridge(self) -> float:
        """Ridge penalty of the candidates' fits (``fit(..., ridge=)``; 0: none).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.ridge
        0.0
        >>> pearl.datasets.example_fit(ridge=0.1).ridge
        0.1
        """
        return self._ridge

    @property
    def n_folds(self) -> int:
        """Number of cross-validation folds K.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.n_folds
        5
        """
        if self._state.partitions is not None:  # known from the passes (no pass over the folds)
            return len(self._state.partitions.fitted.labels)
        return int(self._folds.max()) + 1

    @property
    def folds(self) -> np.ndarray:
        """Fold label (0..K-1) of each row; -1 for a row no split tests (``TimeSeriesSplit``).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.folds[:8]
        array([2, 2, 1, 1, 2, 1, 4, 2])
        >>> np.bincount(res.folds)
        array([12, 12, 12, 12, 12])
        """
        return self._folds.copy()

    @property
    def classes(self) -> list | None:
        """Class labels in code order (classification), else None.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
        >>> y = np.where(a[:, 0] + rng.normal(size=60) > 0, "yes", "no")
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 family="binomial", seed=0)
        >>> res.classes
        ['no', 'yes']
        """
        return None if self._response.classes is None else list(self._response.classes)

    @property
    def block_dims(self) -> dict:
        """Width of each foundation block, in formula order.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.block_dims
        {'a': 2, 'b': 2}
        """
        return self._design.block_dims

    @property
    def block_names(self) -> list:
        """Names of the foundation blocks, in formula order.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.block_names
        ['a', 'b']
        """
        return list(self._design.block_slices)

    @property
    def candidate_labels(self) -> list:
        """Labels of the candidates (blocks joined by ``+``), in the order of :attr:`weights`.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.candidate_labels
        ['a', 'b', 'a+b']
        """
        return [candidate.label for candidate in self._pool]

    @property
    def candidate_blocks(self) -> pd.Series:
        """Blocks (tuple of names) each candidate uses.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.candidate_blocks
        a        (a,)
        b        (b,)
        a+b    (a, b)
        Name: blocks, dtype: object
        """
        return pd.Series([c.blocks for c in self._pool], index=self.candidate_labels, name="blocks")

    @property
    def n_params(self) -> pd.Series:
        """Number of coefficients of each candidate (per class equation for multinomial).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.n_params
        a      4
        b      4
        a+b    6
        Name: n_params, dtype: int64
        """
        return pd.Series(
            [c.n_params for c in self._pool], index=self.candidate_labels, name="n_params"
        )

    @property
    def dropped_rows(self) -> np.ndarray:
        """Positions of rows removed by ``missing='drop'`` (empty otherwise).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b, x = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)), rng.normal(size=60)
        >>> data = {"y": a[:, 0] + 0.5 * x + rng.normal(size=60), "x": x, "a": a, "b": b}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> holes = dict(data, x=np.where(np.arange(60) % 20 == 3, np.nan, x))
        >>> dropped = pearl.fit("y ~ x + block(a) + block(b)", holes, seed=0, missing="drop")
        >>> dropped.dropped_rows, dropped.nobs
        (array([ 3, 23, 43]), 57)
        """
        return self._dropped_rows.copy()

    @property
    def row_labels(self) -> pd.Index:
        """Labels of the rows the fit used, in order: the data's index labels for a DataFrame
        or a dict of pandas Series (without the rows ``missing='drop'`` removed), positions
        for other dicts.

        :attr:`cv_predictions`, :attr:`fittedvalues` and :attr:`resid` are indexed by them,
        as statsmodels indexes its fitted values by the data's rows. For a fit on dask data
        this is positions 0..n-1 (the labels are not gathered on the client); those outputs
        are then dask objects indexed by a dask DataFrame's own index, partition by
        partition (positions for a dict of dask arrays), so they align with its rows.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b, x = rng.normal(size=(60, 2)), rng.normal(size=(60, 2)), rng.normal(size=60)
        >>> data = {"y": a[:, 0] + 0.5 * x + rng.normal(size=60), "x": x, "a": a, "b": b}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> import pandas as pd
        >>> frame = pd.DataFrame({"y": data["y"], "x": x}, index=[f"row{i}" for i in range(60)])
        >>> labelled = pearl.fit("y ~ x + block(a) + block(b)", frame, blocks={"a": a, "b": b},
        ...                      seed=0)
        >>> list(labelled.row_labels[:3])
        ['row0', 'row1', 'row2']
        >>> list(labelled.fittedvalues.index[:3])
        ['row0', 'row1', 'row2']
        """
        return self._row_labels

    # ---- cross-validation stage ------------------------------------------------
    @cached_table
    def weights(self) -> pd.Series:
        """Simplex weights over the candidates (failed candidates get exactly 0).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.weights.round(3)
        a      0.908
        b      0.092
        a+b    0.000
        Name: weight, dtype: float64
        """
        return pd.Series(self._solution.weights, index=self.candidate_labels, name="weight")

    @property
    def weight_objective(self) -> float:
        """Mean surrogate loss of the weighted out-of-fold prediction.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> round(res.weight_objective, 3)
        1.008
        """
        return float(self._solution.objective)

    @property
    def kkt_gap(self) -> float:
        """Certified optimality gap of the weight solver (Frank-Wolfe duality gap).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.kkt_gap < 1e-8
        True
        """
        return float(self._solution.kkt_gap)

    @property
    def weight_solver(self) -> str:
        """Name of the solver that found the weights (see :class:`~pearlstats.WeightSolution`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.weight_solver
        'quadprog'
        """
        return self._solution.solver

    @cached_table
    def cv_predictions(self) -> pd.DataFrame:
        """Out-of-fold predictions, one column per candidate.

        Gaussian/poisson: means; binomial: probability of ``classes[1]``;
        multinomial: class probabilities with MultiIndex columns
        ``(candidate, class)`` (for a fit on dask data, a dask DataFrame with columns
        ``"candidate[class]"``). NaN for failed candidates.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.cv_predictions.head(3).round(3)
               a      b    a+b
        0  0.691  0.363  0.453
        1  0.338  0.216  0.682
        2 -0.061  0.452 -0.029
        """
        J = len(self._pool)
        values = self._predictions[:, :J]
        # copy=False: the cached table shares the stored predictions (readers get copies).
        if values.ndim == 2:
            return row_frame(values, self.row_labels, self.candidate_labels, copy=False,
                             labels=averaging.lazy_row_labels(self))
        columns = pd.MultiIndex.from_product(
            [self.candidate_labels, self.classes], names=["candidate", "class"]
        )
        if is_dask_collection(values):  # a dask DataFrame's columns are flat: "candidate[class]"
            return row_frame(values.reshape(values.shape[0], -1), self.row_labels,
                             [f"{label}[{level}]" for label, level in columns],
                             labels=averaging.lazy_row_labels(self))
        return pd.DataFrame(values.reshape(len(values), -1), columns=columns,
                            index=self.row_labels, copy=False)

    @property
    def _tested_rows(self) -> np.ndarray | None:
        """The rows the cross-validation tests, those of its risks (None: every row)."""
        return self._cv_spec.tested if isinstance(self._cv_spec, Splits) else None

    def _pointwise(self, prediction: np.ndarray) -> np.ndarray:
        """Per-row losses of out-of-fold *prediction* (of the tested rows: see _tested_rows)."""
        rows = self._tested_rows
        if rows is not None:  # with observation weights, the loss weighted by those rows'
            loss = self._loss.restricted(rows) if hasattr(self._loss, "restricted") else self._loss
            return loss.pointwise(self._response.y[rows], prediction[rows])
        if self._state.partitions is not None:
            # lazy per-row losses of the engines' own outputs: the checks of pointwise would
            # gather every row on the client (np.asarray); each partition's were checked there
            return self._loss.row_losses(self._response.y, prediction)
        return self._loss.pointwise(self._response.y, prediction)

    @cached_property
    def _candidate_losses(self) -> np.ndarray:
        """Per-row surrogate loss (n, J_all) of every candidate, pool then extras."""
        columns = [
            self._pointwise(self._predictions[:, j]) for j in range(self._predictions.shape[1])
        ]
        return np.stack(columns, axis=1)

    @cached_table
    def cv_risk(self) -> pd.Series:
        """Each candidate's cross-validated risk under the surrogate loss.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.cv_risk.round(3)
        a      1.013
        b      1.580
        a+b    1.052
        Name: cv_risk, dtype: float64
        """
        J = len(self._pool)
        (risk,) = computed(self._candidate_losses[:, :J].mean(axis=0))
        return pd.Series(risk, index=self.candidate_labels, name="cv_risk")

    @cached_table
    def cv_risk_se(self) -> pd.Series:
        """Standard error of each CV risk: SD of the per-row losses / sqrt(n).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.cv_risk_se.round(3)
        a      0.233
        b      0.232
        a+b    0.239
        Name: cv_risk_se, dtype: float64
        """
        J = len(self._pool)
        (se,) = computed(self._mean_se(self._candidate_losses[:, :J]))
        return pd.Series(se, index=self.candidate_labels, name="cv_risk_se")

    def _mean_se(self, values: np.ndarray) -> np.ndarray:
        """SE of the mean of per-row (weighted) losses: SD / sqrt(n) without weights."""
        weights, rows = self._response.row_weights, self._tested_rows
        if weights is not None and rows is not None:
            weights = weights[rows]
        return mean_se(values, weights, self._response.weight_type)

    @property
    def failures(self) -> pd.DataFrame:
        """The failure ledger: candidate, fold, stage, kind, reason, action, excluded.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> list(res.failures.columns)
        ['candidate', 'fold', 'stage', 'kind', 'reason', 'action', 'excluded']
        >>> len(res.failures)  # nothing failed
        0
        """
        return self._ledger.to_frame()

    @property
    def failed(self) -> pd.Series:
        """Whether each candidate failed in cross-validation (and so has weight 0).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.failed
        a      False
        b      False
        a+b    False
        Name: failed, dtype: bool
        """
        return pd.Series(
            self._failed[: len(self._pool)], index=self.candidate_labels, name="failed"
        )


    def summary(
        self,
        correct: str | Sequence[str | Sequence[str]] | None = None,
        *,
        coefficients: bool | str | None = None,
        weight_uncertainty: bool | int = False,
        panels: str | Sequence[str] = "main",
    ) -> PearlSummary:
        """A statsmodels ``Summary`` with the weights, baselines and diagnostics.

        Use ``print(res.summary())``, ``.as_latex()`` or ``.as_html()``.

        Parameters
        ----------
        correct : str, tuple or sequence of them, optional
            Correctly specified candidates (as in a simulation); adds tau-hat,
            their total weight (see :meth:`tau_hat`).
        coefficients : bool or {"conditional", "full"}, optional
            The coefficients panel shows the terms in every candidate (as
            :attr:`params`, with intervals); ``True`` or ``"conditional"`` adds the
            block columns' conditional average, ``"full"`` their full average
            (:meth:`coef_table`), without intervals.
        weight_uncertainty : bool or int, default False
            Add the bootstrap distribution of each weight under the refitting
            bootstrap of the procedure: its mean, spread and 2.5 % and 97.5 %
            quantiles, which are not standard errors or a confidence interval
            (``True``: 200 resamples; an int >= 2: that many; 0: none).
        panels : str or sequence of str, default "main"
            The sections ``as_latex()`` sets when not told: ``"main"``, ``"all"``
            or names of :data:`~pearlstats.results.summary.PANELS` (the text
            and HTML show every section).

        Raises
        ------
        OptionError
            *coefficients* not None or a bool, *weight_uncertainty* not a bool or an
            int, *panels* not known.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> summary = res.summary()
        >>> print(summary.tables[0])  # doctest: +NORMALIZE_WHITESPACE
                                 PEARL model averaging
        ========================================================================
                   Formula: y ~ x + block(a) + block(b) No. observations:     60
                    Family:                    gaussian Cross-validation: 5-fold
            Surrogate loss:               squared error   Candidates (J):      3
        Loss it stands for:               squared error             Seed:      0
            Blocks (M = 2):                a (2), b (2)            Ridge:      0
        ------------------------------------------------------------------------
        """
        from .summary import build_summary  # statsmodels' Summary: imported by those who ask

        return build_summary(self, correct, coefficients=coefficients,
                             weight_uncertainty=weight_uncertainty, panels=panels)

    @property
    def plot(self) -> PlotAccessor:
        """The fit's figures: ``res.plot.weights()``, ``.cv_risk()``, ``.block_importance()``, ...

        See :class:`~pearlstats.plotting.PlotAccessor` (matplotlib is imported on first use).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> ax = res.plot.weights()
        >>> type(ax).__name__
        'PearlFigure'
        """
        from ..plotting import PlotAccessor

        return PlotAccessor(self)

    def _repr_html_(self) -> str:
        return self.summary().as_html()

    def _with_state(self, state: FitState) -> PearlResults:
        """Results of another fit state (e.g. re-solved weights), predicting rows as this one
        (with its covariance type)."""
        out = results_from_state(state, self._lazy_rows)
        out.__dict__["_cov_spec"] = self.__dict__.get("_cov_spec")
        return out

    # ---- the averaged model (pearlstats.results.averaging) -------------------------------
    @property
    def params(self) -> pd.Series | pd.DataFrame:
        """Model-averaged coefficients of the terms in every candidate: intercept, covariates.

        ``sum_j w_j b_j`` over the candidates with positive weight; for these terms
        MuMIn's full and conditional averages coincide. Block columns mean
        different things in different candidates and are not here: see
        :meth:`candidate_params` (per candidate) and :meth:`coef_table` (averaged on
        request). A DataFrame (terms x classes after the reference) for
        multinomial fits. With ``ridge > 0`` these are penalised (shrunken)
        coefficients (:attr:`ridge_note`). A term some weighted candidate cannot
        identify (its columns linearly dependent on all rows, named at fit by an
        :class:`~pearlstats.exceptions.UnidentifiedCoefficientWarning`) is NaN, as
        are its :attr:`bse` and :meth:`conf_int`.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "x": rng.normal(size=60),
        ...         "a": rng.normal(size=(60, 1)), "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> list(res.params.index)
        ['Intercept', 'x']
        """
        return averaging.params(self)

    @property
    def bse(self) -> pd.Series | pd.DataFrame:
        """Unconditional standard errors of :attr:`params`, MuMIn's default (revised) formula.

        ``sqrt(sum_j w_j (se_j**2 + (b_j - b_avg)**2))`` (Burnham & Anderson 2002,
        eq. 6.12; MuMIn's ``revised.var = TRUE``). Eq. 4.9,
        ``sum_j w_j sqrt(se_j**2 + (b_j - b_avg)**2)`` (pearlstats' formula before
        issue 28), is ``coef_table(revised=False)["std err"]``. The weights and the
        candidate set are taken as fixed. Warns when ``ridge > 0``
        (see :attr:`ridge_note`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.bse.round(3)
        Intercept    0.133
        x            0.127
        dtype: float64
        """
        return averaging.bse(self)

    def conf_int(self, alpha: float = 0.05, *, revised: bool = True) -> pd.DataFrame:
        """Confidence intervals ``params +- q se`` (columns ``lower``, ``upper``): ``q`` the
        normal quantile, or for gaussian fits each candidate's t quantile (its residual df).

        They estimate the fixed-weight average of the candidates' coefficients:
        the weights and the candidate set are held fixed, so the sampling
        variability of the cross-validated weights is not in them. Their coverage
        of the true coefficients over 400 simulated data sets is in
        ``vignettes/results/inference_checks_coefficients.md``: 0.94-0.975 on
        three designs, 0.85-0.87 for a covariate whose noise variance grows with
        it (the candidates' OLS SEs assume constant variance). For gaussian fits
        each candidate's t quantile is folded into its variance (Burnham &
        Anderson 2002, section 4.3.3), so one candidate with weight 1 gives
        statsmodels' OLS ``conf_int()``. Rows are (class, term) for multinomial
        fits. Warns when ``ridge > 0``.

        Parameters
        ----------
        alpha : float, default 0.05
            Intervals at level ``1 - alpha``.
        revised : bool, default True
            The SE formula: eq. 6.12 (MuMIn's default) or, with ``False``, eq. 4.9.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.conf_int().round(3)
                   lower  upper
        Intercept -0.270  0.261
        x          0.225  0.733
        """
        return averaging.conf_int(self, alpha, revised)

    def coef_table(self, terms: str = "common", average: str = "full", *,
                   revised: bool = True, alpha: float = 0.05) -> pd.DataFrame:
        """Averaged coefficients with SEs, MuMIn's ``coefTable(full=)`` / ``coef(full=)``.

        Parameters
        ----------
        terms : {"common", "all"}, default "common"
            ``"common"``: the terms in every candidate (as :attr:`params`);
            ``"all"``: the block columns too.
        average : {"full", "conditional"}, default "full"
            ``"full"``: a candidate without the term contributes 0 (MuMIn's
            ``full = TRUE``); ``"conditional"``: the subset average over the
            candidates that have the term, their weights renormalised (MuMIn's
            ``full = FALSE``). The two agree on the common terms.
        revised : bool, default True
            SE formula: Burnham & Anderson (2002) eq. 6.12, or eq. 4.9 with ``False``.
        alpha : float, default 0.05
            Level of the intervals of the common terms.

        Returns
        -------
        pandas.DataFrame
            Columns ``coef``, ``std err``, ``lower``, ``upper`` and ``weight`` (the
            sum of the weights of the candidates with the term, MuMIn's
            importance). Block columns have no interval (NaN): their average is
            a summary over candidates in which the column means different things,
            not an estimate whose interval was shown to cover; ``attrs["note"]``
            says so.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> data = {"y": rng.normal(size=60), "x": rng.normal(size=60),
        ...         "a": rng.normal(size=(60, 1)), "b": rng.normal(size=(60, 1))}
        >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
        >>> table = res.coef_table(terms="all", average="conditional")
        >>> list(table.columns)
        ['coef', 'std err', 'lower', 'upper', 'weight']
        >>> bool(table.loc["x", "std err"] == res.bse["x"])
        True
        """
        return averaging.coef_table(self, terms, average, revised=revised, alpha=alpha)

    @property
    def ridge_note(self) -> str | None:
        """Why coefficients and SEs need care when a weighted candidate has a ridge (else None).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> print(res.ridge_note)
        None
        >>> shrunk = pearl.datasets.example_fit(ridge=0.1)
        >>> shrunk.ridge_note is not None
        True
        """
        return averaging.ridge_note(self)

    @property
    def fittedvalues(self) -> pd.Series | pd.DataFrame:
        """The averaged prediction on the fit's rows, laid out as :meth:`predict`'s.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.fittedvalues.head(3).round(3)
        0    0.706
        1    0.351
        2   -0.020
        Name: prediction, dtype: float64
        """
        return averaging.fittedvalues(self)

    @property
    def resid(self) -> pd.Series | pd.DataFrame:
        """Response residuals ``y - fittedvalues`` (one-hot minus probabilities for multinomial).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.resid.head(3).round(3)
        0    1.272
        1    0.754
        2    0.470
        Name: resid, dtype: float64
        """
        return averaging.residuals(self, "response")

    @property
    def resid_pearson(self) -> pd.Series:
        """Pearson residuals ``(y - mu) / sqrt(V(mu))`` (unit dispersion; not multinomial).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
        >>> y = np.where(a[:, 0] + rng.normal(size=60) > 0, "yes", "no")
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 family="binomial", seed=0)
        >>> res.resid_pearson.head(3).round(3)
        0    0.956
        1    0.592
        2    1.608
        Name: resid_pearson, dtype: float64
        """
        return averaging.residuals(self, "pearson")

    def residuals(self, kind: str = "response") -> pd.Series | pd.DataFrame:
        """Residuals of the averaged model: ``kind="response"`` or ``"pearson"``.

        Parameters
        ----------
        kind : {"response", "pearson"}, default "response"
            :attr:`resid` (``y - fittedvalues``) or :attr:`resid_pearson`.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> bool((res.residuals("response") == res.resid).all())
        True
        """
        return averaging.residuals(self, kind)

    @cached_table
    def candidate_table(self) -> pd.DataFrame:
        """Per candidate: ``weight``, ``cv_risk``, ``n_params`` and statsmodels' ``df_model``,
        then ``llf``, ``aic``, ``aicc`` and ``bic`` of its fit on all rows.

        ``df_model`` is the rank of the candidate's design less one for a constant
        column (per class equation for multinomial, as ``n_params``). The information
        criteria count parameters as R's ``logLik`` (and so MuMIn) does: the coefficients plus
        the gaussian variance, so a gaussian ``aic`` is statsmodels' ``OLS.aic`` plus 2
        (:mod:`pearlstats.weights.information`); the strategies ``AICc`` and ``BIC`` weigh the
        candidates by them. A downstream network has no such columns.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(100, 2)), rng.normal(size=(100, 1))
        >>> y = a[:, 0] + rng.normal(size=100)
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
        ...                 seed=0, honest=False)
        >>> res.candidate_table[["weight", "aicc"]].round(3)
             weight     aicc
        a       1.0  267.953
        b       0.0  328.215
        a+b     0.0  269.987
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


def results_from_state(state: FitState, lazy_rows: LazyRows | None = None) -> PearlResults:
    """The one place a :class:`PearlResults` is built: from a fit's stage values.

    *lazy_rows* predicts and scores rows that are not in memory (see
    :mod:`pearlstats.results.prediction`); without it every row is read in memory.
    """
    return PearlResults(state, lazy_rows)
