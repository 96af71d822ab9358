"""``pearlstats.fit``: the PEARL pipeline, stage by stage.

Data flows one way: rows -> blocks -> design (a spec that rebuilds it for any
rows) -> candidate column sets -> folds -> out-of-fold prediction matrix ->
simplex weights -> :class:`~pearlstats.PearlResults`. Each arrow is a
function of :mod:`pearlstats.stages`; ``fit`` only checks its arguments and
composes them (``_fit_in_memory`` lists the stages in order). Dask data goes,
after :func:`~pearlstats.in_memory_only.refuse_in_memory_only`, through
the same stages computed partition by partition
(:func:`~pearlstats.distributed.state.dask_fit_state`), and gives the same
results class. This module sits on top of the layers (the ``[tool.importlinter]``
contract in ``pyproject.toml``): it is the one place that knows both the results
and the dask code, and hands the results the dask predictor
(:data:`~pearlstats.distributed.predict.DASK_ROWS`).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from ._warnings import warn
from .checks import (
    align_by_label,
    check_choice,
    check_eval_env,
    check_int,
    check_n_jobs,
    check_seed,
)
from .design.candidates import DEFAULT_MAX_CANDIDATES
from .design.data import data_index, labelled_rows, split_data
from .design.folds import check_cv, describe_cv, fold_column_names, fold_labels_for_rows
from .design.formula import FormulaSpec, parse_formula
from .design.offsets import formula_offset
from .design.splitters import Splits, check_groups, group_codes, resolve_splits, splitter_name
from .distributed.data import uses_dask
from .distributed.predict import DASK_ROWS
from .distributed.state import dask_fit_state
from .downstream.estimator import bind_estimator, is_estimator
from .engines._common import check_ridge
from .exceptions import (
    DataError,
    FoldError,
    ObservationWeightWarning,
    OptionError,
    format_positions,
)
from .families import SEPARATION_CHOICES, get_family
from .honest_se import NestedSE, check_honest_se
from .in_memory_only import refuse_in_memory_only
from .inference.robust import (
    CovSpec,
    check_cov_names,
    check_scale,
    cov_type_name,
    refuse_hac_frequency,
    refuse_scale_family,
)
from .observation_weights import (
    ObservationWeights,
    check_observation_weights,
    few_observations_note,
    named_columns,
    refuse_unsupported,
)
from .progress import check_progress, fit_bar_delay, progress_bar, timed
from .results.core import PearlResults, results_from_state
from .results.covariance import with_cov_type
from .results.identification import warn_unidentified
from .stages import (
    FitState,
    Prepared,
    WeightOptions,
    assign_folds,
    build_pool,
    complement_rows,
    cross_validate_splits,
    prepare_rows,
)
from .weight_stage import cross_validate_draws, solve_draw_weights
from .weights.losses import Loss, get_loss
from .weights.row_weighted import RowWeightedLoss
from .weights.shrinkage import SIZE_RULE_CONSTANT, check_shrinkage_target

logger = logging.getLogger(__name__)

__all__ = ["fit"]


def _frozen_representations(blocks):
    """Private copy of fitted Representations: refitting the caller's object cannot alter a fit."""
    if hasattr(blocks, "transform") and not isinstance(blocks, dict):
        return copy.deepcopy(blocks)
    return blocks


def _check_no_response_leak(formula, blocks) -> None:
    """The response must never be an input of the representations."""
    # the property itself, not getattr(..., None): an unfitted object's NotFittedError is an
    # AttributeError, which a getattr default would swallow
    read = set(blocks.input_columns if hasattr(type(blocks), "input_columns") else ())
    leaked = sorted(read & ({formula.response} | set(formula.response_variables)), key=str)
    if leaked:
        raise DataError(
            f"the representations read the column(s) {leaked}, which the formula uses as the "
            "response: the blocks would contain the answer. Fit the Representations with columns= "
            "that exclude the response"
        )


def _bind_downstream(family, downstream):
    """The family interface of a *downstream* learner (the family itself without one)."""
    if downstream is None:
        return family
    if hasattr(downstream, "bind"):
        return downstream.bind(family)
    if is_estimator(downstream):  # any fit/predict object, e.g. a scikit-learn estimator
        return bind_estimator(downstream, family)
    raise OptionError(
        f"downstream={downstream!r} has neither bind(family) nor fit and predict methods; "
        "use pearl.MLP(), a scikit-learn style estimator, or leave it None"
    )


def _observation_weights(data: Any, blocks: Any, formula: FormulaSpec, env: EvalEnvironment,
                         family: str, given: tuple, options: dict,
                         missing: str = "raise") -> ObservationWeights:
    """The checked weights/offset of the rows given (before ``missing="drop"``, which also
    drops the rows whose weight or offset is NaN: their positions are in ``unusable``).

    *given* is ``(weights, weight_type, offset, exposure)``; the formula's ``offset()``
    terms count as *offset*. With any of them, the *options* of
    :func:`~pearlstats.observation_weights.refuse_unsupported` not yet supported are refused.
    """
    if all(value is None for value in given) and not formula.offset_codes:
        return check_observation_weights(None, None, None, None, family, 0)
    refuse_unsupported(**options)
    given = named_columns(given, split_data(data)[0])  # weights="count", as cv="fold"
    if formula.offset_codes:
        if given[2] is not None or given[3] is not None:
            raise OptionError("give the offset either in the formula (offset(...)) or as "
                              "offset=/exposure=, not both")
        given = given[:2] + (formula_offset(formula, labelled_rows(data), env, missing), None)
    index = data_index(data)
    n = len(index) if index is not None else len(split_data(data)[0])
    observed = check_observation_weights(*given, family, n, index, missing)
    if formula.offset_codes:
        observed = dataclasses.replace(observed, offset_source="in the formula")
    return observed


def with_observation_weights(prepared: Prepared, loss: Loss, observed: ObservationWeights,
                             n_coefficients: int) -> tuple[Prepared, Loss]:
    """The prepared rows' response carrying *observed*, and the loss weighted by its rows
    (*n_coefficients*: the largest candidate's, for :func:`few_observations_note`)."""
    if not observed.given:
        return prepared, loss
    response = prepared.response.with_observation_weights(
        observed.weights, observed.offset, observed.weight_type, observed.offset_source)
    if observed.weights is not None:
        loss = RowWeightedLoss(loss.family, loss, observed.weights, observed.weight_type)
        note = few_observations_note(observed.weights, observed.weight_type, n_coefficients)
        if note:
            warn(note, ObservationWeightWarning)
    return dataclasses.replace(prepared, response=response), loss


def _check_honest(honest) -> int | bool:
    """Outer folds of the honest risk: True asks for the default 5, False skips it."""
    if isinstance(honest, (bool, np.bool_)):
        return 5 if honest else False
    return check_int("honest", honest, minimum=2)


def _check_cv_repeats(cv_repeats, cv, groups) -> int:
    cv_repeats = check_int("cv_repeats", cv_repeats, minimum=1)
    if cv_repeats > 1 and (isinstance(cv, bool) or not isinstance(cv, numbers.Integral)):
        raise OptionError(
            f"cv_repeats={cv_repeats} needs cv=K (an int), got {describe_cv(cv)}: leave-one-out, "
            "given fold labels and splitters are the same in every draw"
        )
    if cv_repeats > 1 and groups is not None:
        raise OptionError(f"cv_repeats={cv_repeats} is not available with groups= yet: the "
                          "groups are dealt into folds once")
    return cv_repeats


def _check_weight_shrinkage(value):
    if value is None or (isinstance(value, str) and value in ("cv", "size")):
        return value
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    raise OptionError(
        f"weight_shrinkage={value!r}; use None (no shrinkage), a number in [0, 1], 'cv' "
        f"(chosen by cross-validation) or 'size' (min(1, {SIZE_RULE_CONSTANT:g} J / n))"
    )


def _check_shrinkage(weight_shrinkage, shrinkage_target):
    """The pair (amount, target) of the shrinkage options, or None without shrinkage."""
    amount = _check_weight_shrinkage(weight_shrinkage)
    target = check_shrinkage_target(shrinkage_target)
    if amount is None and target != "candidates":
        raise OptionError(
            f"shrinkage_target={shrinkage_target!r} needs weight_shrinkage (a number in [0, 1], "
            "'cv' or 'size'); without it the weights are not shrunk"
        )
    return None if amount is None else (amount, target)


@dataclasses.dataclass(frozen=True)
class _Options:
    """The checked options of :func:`fit` that its stages read."""

    missing: str
    ridge: float
    seed: int
    n_jobs: int | None
    env: EvalEnvironment
    honest: int | bool
    honest_se: str | NestedSE
    cv_repeats: int
    shrinkage: tuple | None
    candidates: Any
    max_candidates: int
    groups: Any = None
    progress: bool | None = None
    cov: tuple = ("nonrobust", None)  # cov_type, cov_kwds (names checked)
    scale: str | float | None = None  # the dispersion of a nonrobust covariance (checked)


def _representations(blocks: Any) -> Any:
    """The fitted Representations among the blocks (None for arrays)."""
    return blocks if hasattr(blocks, "transform") and not isinstance(blocks, dict) else None


def fit(
    formula: str,
    data: Any,
    *,
    blocks: Any = None,
    family: str = "gaussian",
    loss: str | None = None,
    candidates: str | Sequence[str | Sequence[str]] = "all",
    cv: int | str | np.ndarray | Sequence = 5,
    seed: int | None = None,
    n_jobs: int | None = None,
    ridge: float = 0.0,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    missing: str = "raise",
    eval_env: int = 0,
    downstream: Any = None,
    honest: int | bool = 5,
    honest_se: str | NestedSE = "naive",
    separation: str = "ridge",
    cv_repeats: int = 1,
    weight_shrinkage: float | str | None = None,
    shrinkage_target: str | Mapping[str, float] = "candidates",
    weights: Any = None,
    weight_type: str | None = None,
    offset: Any = None,
    exposure: Any = None,
    groups: Any = None,
    progress: bool | None = None,
    cov_type: str = "nonrobust",
    cov_kwds: Mapping[str, Any] | None = None,
    scale: str | float | None = None,
) -> PearlResults:
    """Fit PEARL: cross-validated convex model averaging over candidate block sets.

    Parameters
    ----------
    formula : str
        A patsy formula; each ``block(name)`` term is one foundation
        representation block, every other term (intercept, covariates,
        ``C(group)``, transforms) is in every candidate. Stateful transforms
        (``center(x)``, ``standardize(x)``, ``bs(x, df=4)``, ``cr(x, df=4)``) learn
        their means, scales and knots once, on all the fit's rows, as statsmodels'
        and R's do: the cross-validation's held-out rows inform them through their
        covariates (never their responses).
    data : DataFrame or dict
        The labeled rows: the response, covariates, and (in a dict) possibly
        the blocks as 2-D arrays under their names. The pandas Series of a dict
        meet by index label, in the first Series' row order (which arrays and
        lists beside them follow by position). A dask DataFrame (or a
        dict of dask arrays) is fitted where it lives, partition by partition
        (:mod:`pearlstats.distributed`; every family, numeric covariates; ``cv``
        is K, folds hashed from row positions, or a fold-column name) and gives a
        :class:`~pearlstats.PearlResults` whose row-sized values
        (``cv_predictions``, ``folds``, fitted values) are lazy dask collections;
        what it cannot do yet is refused by name, with the reason
        (:func:`~pearlstats.in_memory_only.refuse_in_memory_only`).
    blocks : dict or Representations, optional
        Block name -> 2-D array or DataFrame with one row per row of *data*,
        or a fitted :class:`~pearlstats.Representations` applied to *data*.
        The result keeps a private copy of a ``Representations``: refitting
        yours later does not change this fit's predictions. The
        representations must not read the response column. Block arrays of
        float64 are read in place, not copied (as statsmodels holds ``exog``),
        so that a fit needs less memory than its data: modifying such an
        array in place after the fit changes what is computed later from it
        (refits on first use, ``res.honest``); pass a copy if you will.

        Rows are matched as statsmodels users expect: pandas objects by index
        label (a DataFrame block whose index is a permutation of *data*'s is
        re-ordered; different labels are an error naming them), arrays by
        position. At prediction, DataFrame blocks are matched by column name
        (re-ordered columns are re-aligned; missing or extra ones are an error).
    family : {"gaussian", "binomial", "multinomial", "poisson"}
        Downstream model: ``OLS``, ``Logit``, ``MNLogit`` or Poisson ``GLM``.
        A gaussian response without variance (all values within 16 ulps of
        each other at its largest magnitude) is a ``ResponseError``. A Poisson
        response may hold non-integer values (rates, averages), as statsmodels'
        GLM and R's ``quasipoisson`` take them: the coefficients and the
        deviance risks are the quasi-likelihood ones (``cov_type="HC0"`` or
        ``scale="X2"`` for their SEs), but ``llf``, AIC, AICc and BIC (with
        ``log(y!)`` as ``gammaln(y + 1)``) are no likelihood's there.
    loss : str, optional
        Surrogate loss the weights minimise. Defaults: squared error
        (gaussian), cross-entropy of the averaged probabilities (binomial,
        multinomial), Poisson deviance (poisson). Also ``"squared"`` (Brier
        for classes), ``"cross_entropy"``, ``"hinge"``, ``"absolute"``.
        Where the squared loss's optimum is not unique (candidates that fit
        exactly, duplicates, a mix that reproduces another candidate), the
        weights are the minimum-norm point of the optimal face: tied
        candidates share the weight as evenly as the optimum allows
        (:mod:`pearlstats.weights.solvers`).
    candidates : {"all", "single", "nested", "columns"} or list
        How candidate sets are built from the blocks; a list gives explicit
        sets as tuples of block names (or ``"a+b"`` strings).
    cv : int, "loo", str or array-like
        K for K-fold (stratified for classes), ``"loo"`` for leave-one-out
        (closed form for gaussian), the name of a column of *data* that holds
        one fold label per row (as R users give fold ids; ``"loo"`` is
        reserved), or the fold labels themselves (a Series is matched to a
        DataFrame *data* by index label; the rows ``missing="drop"`` removes
        lose their labels too; every label is a fold, -1 included: unlike
        ``PredefinedSplit``'s test_fold, where -1 marks a row never tested, so
        give ``PredefinedSplit(test_fold)`` for that), or a splitter: any object with
        ``split(X, y, groups)`` and ``get_n_splits`` (scikit-learn's ``GroupKFold``,
        ``StratifiedGroupKFold``, ``TimeSeriesSplit``, ``PredefinedSplit``,
        ``LeaveOneGroupOut``, ...), called on the kept rows with the response
        (class codes for classes) and *groups*. A splitter whose test sets overlap
        (a row tested twice, e.g. ``ShuffleSplit``) is refused, as is a list of
        (train, test) pairs (give the splitter that made them). Dask data takes K
        (folds hashed from row positions) or a column name.
    seed : int, optional
        Seeds the folds. ``None`` draws one, recorded in ``results.seed``. A splitter
        that shuffles with ``random_state=None`` (``KFold(5, shuffle=True)``,
        ``GroupKFold(shuffle=True)``) is run as a copy with ``random_state=seed`` (the
        object given is not changed), so the same seed gives the same folds; a
        ``random_state`` the splitter has is kept (a ``RandomState`` instance moves on
        with each use, as in scikit-learn, so two fits with it differ).
    n_jobs : int, optional
        Parallel workers for the cross-validation fits (joblib; honours
        ``joblib.parallel_config``, including a dask backend). The same ``seed``
        and ``n_jobs`` give identical numbers; another ``n_jobs`` can move them at
        rounding level (measured up to 1e-15 gaussian, 1e-14 multinomial: the
        workers' BLAS may group sums differently), never the folds.
    ridge : float, default 0
        L2 penalty on the (standardised, non-intercept) coefficients of every
        candidate; use it when classes separate or blocks are wide. A sparse
        block (e.g. :class:`~pearlstats.TfIdf`) with more than
        1 000 columns stays sparse: its candidates with at least as many
        columns as training rows are recorded as infeasible without a ridge,
        and with ``ridge > 0`` are fitted in the row space (the n x n dual),
        never forming a p x p matrix. Multinomial fits penalise the C - 1
        non-reference classes' coefficients (statsmodels' ``MNLogit``
        parametrisation, the first class the reference: in sorted order, or a
        categorical response's first category), so with
        ``ridge > 0`` their probabilities depend on which class that is, unlike
        the symmetric penalty of glmnet or scikit-learn's ``LogisticRegression``.
    max_candidates : int, default 32767
        Refuse candidate specifications larger than this.
    missing : {"raise", "drop"}
        ``"raise"`` reports rows with NaN/inf; ``"drop"`` removes them and
        records their positions in ``results.dropped_rows``: a missing value
        in the response, a covariate, a block, or the row's ``weights``,
        ``offset`` or ``exposure`` (as statsmodels' ``missing="drop"``).
        A ``timedelta64`` covariate is read as seconds (with a warning); a
        ``datetime64`` one is refused (convert it to a number first).
    eval_env : int, default 0
        How many frames above the caller to look up names used by the
        formula's functions (as in patsy).
    downstream : object, optional
        Another downstream learner for every candidate instead of the
        family's statsmodels model, e.g. ``pearl.MLP(hidden=64)`` (needs the
        ``deep`` extra), or any estimator with ``fit`` and ``predict``
        (``predict_proba`` for binomial and multinomial), such as scikit-learn's
        ``RandomForestRegressor()``: a fresh copy is fitted on each candidate's
        design columns in each fold and on all rows, and one that raises in a
        fold is recorded in ``res.failures`` with weight 0
        (:mod:`pearlstats.downstream.estimator`). Other objects provide
        ``bind(family)`` returning the family interface (``cv_predict``,
        ``fit_params``, ``predict``, ``statsmodels_results``). The response
        coding and the weights' loss stay the family's.
    honest : int or bool, default 5
        Outer folds of the nested cross-validation that gives ``res.honest``
        and the summary's Strategies table: the whole procedure (inner
        folds, candidates, weights, each baseline's choice) is re-run inside
        each outer fold and scored on the held-out rows, as R's
        ``CV.SuperLearner`` reports it. It runs on first use of
        ``res.honest`` or the summary and costs about *honest* times the
        cross-validation; ``True`` is the default 5 outer folds, ``False``
        skips it (the summary then shows the optimistic in-sample CV risks,
        labelled as such). With a time-ordered splitter (``TimeSeriesSplit``) the
        outer folds are the last *honest* blocks of rows, each scored by the
        procedure re-run on the rows before it less the splitter's gap (not cut to
        its ``max_train_size``: the fit refits its candidates on all its rows, so the
        outer fits do too), and cut between ``groups=`` (:func:`pearlstats.nested.forward_splits`),
        and the splitter is re-run on each outer training set's rows. Folds that are
        given rather than drawn are kept, not re-drawn: with fold labels, a splitter
        whose splits are a partition (``GroupKFold``, ``KFold``, ``LeaveOneGroupOut``,
        ``PredefinedSplit`` without -1) or ``cv=K`` with ``groups=``, the fit's K folds
        are dealt whole to ``min(honest, K)`` outer folds (``res.honest_outer_folds``:
        ``honest=5`` with ``GroupKFold(3)`` runs 3), and each outer training set's inner
        folds are its remaining folds as they are (K - 1 with K outer folds; the splitter
        is not re-run). With ``cv=K`` alone (and ``"loo"``) each outer training set gets
        K folds drawn afresh.
    honest_se : {"naive", "nested"} or NestedSE, default "naive"
        Standard errors of ``res.honest``: ``"naive"`` is SD / sqrt(n) of the
        held-out row losses, which treats rows as independent and under-covers
        the test risk at small n; ``"nested"`` (or ``NestedSE(repeats=R)``,
        default R = 50) is the nested cross-validation of Bates, Hastie &
        Tibshirani (2023), with a bias-corrected risk (:mod:`pearlstats.honest_se`).
        It costs about 2R-3R times ``res.honest`` for 5 outer folds (R = 5: 8-15x;
        0.5 CPU-s at n = 100 with 7 gaussian candidates, 3 CPU-s for 7 logistic ones
        at n = 150); not available
        for dask data, fold labels given as ``cv=``, a splitter object, ``groups=``,
        observation weights or ``honest`` below 3.
    separation : {"ridge", "drop", "raise"}, default "ridge"
        What to do with a logistic (binomial or multinomial) candidate whose
        classes are (quasi-)separated, or a Poisson candidate whose counts are
        0 on one side of a direction of its columns (its means there go to 0,
        R's "fitted rates numerically 0"), on all rows or in some fold, so that
        its maximum-likelihood estimate does not exist. ``"ridge"`` refits
        it, in every fold and on all rows alike, with the smallest ridge of
        1e-4, 1e-3, 1e-2, 0.1, 1 (above *ridge*; on standardised columns,
        intercept unpenalised, as *ridge*) for which all those fits reach a
        finite optimum, like scikit-learn's default regularised logistic
        regression; the ledger (``results.failures``, kind ``"separation"``)
        and one :class:`~pearlstats.exceptions.SeparationWarning` per fit
        name the candidates and their ridges. The re-runs of nested
        cross-validation (``res.honest``) and of the refitting bootstrap
        choose their ridges on their own training rows, as this function
        would on those rows, so no held-out row informs them. ``"drop"``
        gives such a candidate weight 0; ``"raise"`` raises
        :class:`~pearlstats.exceptions.SeparationError` naming it (also
        from the nested re-runs of ``res.honest``). Gaussian fits ignore it. A
        Poisson fold whose training rows count nothing at all is refused
        (no ridge gives its intercept an optimum). A quasi-complete separation
        (the rows of one level of a categorical covariate all 0, or all 1) is
        found in memory and on dask data alike. Binomial and Poisson fits that
        still take large steps are stopped as separated only once a linear
        program finds the direction along which their likelihood rises for
        ever (a fit converging slowly from far away goes on). A multinomial
        level whose rows lack a class the other rows have is separation in
        memory; a fit on dask data does not yet detect it.
    cv_repeats : int, default 1
        Repeated K-fold (``cv`` an int): the candidates' out-of-fold
        predictions are computed for this many fold draws, and the weights
        minimise the average of the draws' out-of-fold losses, which varies
        less from sample to sample than one draw's. Draw 0 is the folds of
        ``cv_repeats=1`` (so 1 is the plain fit), draw r >= 1 is seeded by
        ``numpy.random.SeedSequence([seed, r])``. ``res.folds``,
        ``res.cv_predictions``, ``res.cv_risk`` and ``res.baselines``
        describe draw 0; ``res.weight_objective`` is the average over the
        draws. A candidate failing in any draw gets weight 0. The nested
        cross-validation of ``res.honest`` and the refitting bootstrap re-run
        the procedure with *cv_repeats* fold draws as well; the fold-complement
        stability table re-solves the stored draw 0 only. Costs about
        *cv_repeats* times the cross-validation.
    weight_shrinkage : float, "cv", "size" or None, default None
        Shrink the weights toward a fixed target ``u`` (*shrinkage_target*):
        ``(1 - lam) * w + lam * u``. A
        number in [0, 1] is ``lam``; ``"cv"`` chooses it from 0, 0.1, ..., 1
        by cross-validation over the out-of-fold predictions (for each fold,
        of each draw, the weights are re-solved without that fold's rows and
        every ``lam`` is scored on them): only the labeled rows are used; it
        needs 2 or more test splits (a single test split, a holdout, is refused),
        and a re-solve of :attr:`weight_stability` whose rows are tested by one
        split only takes the fit's amount.
        ``"size"`` sets ``lam = min(1, 2.5 J / n)`` from the number J of
        candidates that did not fail and the n labeled rows
        (:func:`~pearlstats.weights.shrinkage.size_shrinkage`); with
        ``shrinkage_target="single-block"`` it beats every baseline's mean
        test MSE in all 16 cells of the paper's simulation grid (on which its
        constant was chosen), but it is a prior, not a free lunch: where the
        target predicts poorly (digits, movie reviews) it is worse than no
        shrinkage, and on heteroscedastic and t3 designs it did not beat the
        best baseline in 3 of 4 cells. ``"cv"`` is not a safe default either:
        on those designs it chose a mean amount of 0.21-0.51 toward a poor
        target and lost to the best baseline in 5 of 6 cells; its out-of-fold
        predictions for a held-out fold come from candidates that saw that
        fold's rows (a second-order leak, measured in the documentation's
        "Benchmark results" page, section "Shrinkage off the paper's design").
        Compare ``res.honest`` of the fits to choose. The
        amount is recorded in ``results.failures`` (stage ``"weights"``, kind
        ``"shrinkage"``); ``res.kkt_gap`` then bounds how far the shrunk
        weights' objective is above the optimum.
    shrinkage_target : str or mapping, default "candidates"
        What *weight_shrinkage* shrinks toward: ``"candidates"``, equal
        weights over the candidates that did not fail (the SA-cand
        baseline); ``"single-block"``, equal weights over the single-block
        candidates that did not fail (the SA-FRL baseline), which suits few
        rows and wide blocks (the documentation's "Benchmark results" page,
        section "Small samples"); or
        a mapping of candidate labels to weights >= 0 (normalised to sum 1
        over the candidates that did not fail). Needs *weight_shrinkage*.
    weights : array_like or str, optional
        Positive observation weights, one per row of *data*, or the name of a
        column of *data* that holds them (as ``cv="fold"``) (a Series is
        matched to a DataFrame *data* by index label), with gaussian, binomial
        or poisson. Every candidate is fitted with them in every fold and on
        all rows (the weighted likelihood of statsmodels' GLM), and the
        PEARL weights minimise the weighted mean surrogate loss; CV risks and
        baselines are weighted means. Scaling all weights by a constant
        changes nothing, except that frequency weights count ``sum w``
        observations wherever the sample size enters (the size rule, SEs,
        residual df, the bootstrap: :func:`~pearlstats.observation_weights.effective_nobs`);
        frequency weights summing to at most the coefficients, or to 1, warn
        (:class:`~pearlstats.exceptions.ObservationWeightWarning`). The honest
        re-runs (``res.honest``) fit each outer
        fold's rows with their weights and offsets and score the held-out rows
        by weighted means; ``cv_repeats`` stacks the draws with the rows'
        weights. ``ridge > 0`` penalises each candidate's weighted fit with the
        weighted column SDs (the separation ladder too); ``weight_shrinkage="cv"``
        scores each amount by the weighted mean loss. Not yet supported with them
        (refused by name): ``downstream``, the hinge and absolute losses, sparse
        wide blocks, dask data, multinomial and prediction sets with variance
        weights. The stability re-solves and the bootstrap with variance
        weights resample rows that keep their weights; the bootstrap with frequency weights
        resamples the expanded data (as multinomial counts of the rows). CV+ intervals and
        sets: see ``res.predict``. SEs of CV risks: see
        :func:`~pearlstats.observation_weights.mean_se`.
    weight_type : {"frequency", "variance"}
        Needed with *weights*: ``"frequency"`` counts rows (statsmodels'
        ``freq_weights``: a weight of 2 is the row twice); ``"variance"``
        scales each row's variance by 1/w (``var_weights``, R's
        ``glm(weights=)`` for gaussian and poisson). The candidate fits and
        PEARL weights are the same; the statsmodels refits'
        (``res.candidates[label]``, a ``GLM``) inference differs. R's binomial
        ``weights`` are numbers of trials (a proportion response), a
        different thing not offered here.
    offset : array_like, optional
        Added to every candidate's linear predictor, one value per row
        (gaussian, binomial, poisson); ``res.predict`` then needs ``offset=``
        (and/or ``exposure=``) for the new rows. Alternatively a formula term
        ``offset(expr)`` (e.g. ``y ~ offset(np.log(t)) + block(a)``, not
        together with *offset*/*exposure*) is evaluated on the rows and
        rebuilt from the new rows' columns by ``res.predict``. The same
        options as with *weights* are not yet supported.
    exposure : array_like, optional
        Poisson only: positive exposures (time or size at risk); adds
        ``log(exposure)`` to the offset, so the candidates model rates.
    groups : str or array_like, optional
        Groups of rows that must stay together (subjects, sites, documents): a
        column name of *data* or one label per row (a Series is matched by index
        label). With ``cv=K`` whole groups are dealt into K folds, balanced by rows
        (largest group first into the fold with the fewest rows; ties broken by
        *seed*), so fold sizes differ by at most the largest group's rows; with a
        splitter they are its ``groups`` (a splitter that ignores them, as
        ``TimeSeriesSplit`` and ``KFold`` do, cuts its folds between rows, and scikit-learn
        warns so). The outer folds of ``res.honest`` then keep the folds, and so the
        groups a group splitter keeps together, whole; with a time-ordered splitter
        they are cut between groups, whatever the splitter does, which needs each
        group's rows consecutive (a date's rows together, in time order).
        ``cv=LeaveOneGroupOut()`` gives one fold per group, as a column of fold labels
        does.
    progress : bool, optional
        Progress bars (:mod:`pearlstats.progress`): on this fit when it is
        expected to run long (rows x candidates x fold fits above about 2 s of
        work), and later on the honest re-runs and the nested SE of
        ``res.honest``. None (default) follows ``pearl.get_option("progress")``.
    cov_type : {"nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster", "HAC"}
        The covariance of the candidates' refits, statsmodels' names; each candidate's
        equals its refit's ``get_robustcov_results(cov_type)`` (the notes of
        :meth:`~pearlstats.PearlResults.get_robustcov` say where GLMs differ).
        The averaged terms' ``bse``, ``conf_int()``, ``cov_params()`` and tests,
        ``candidate_params()`` and ``get_prediction``'s mean intervals use it. Their
        reference distribution is that of ``get_robustcov_results``, not of
        ``OLS.fit(cov_type=)`` (whose default ``use_t=False`` is normal): t with
        ``df_resid`` for gaussian fits (G - 1 df for ``"cluster"``, see *cov_kwds*), normal
        for binomial and poisson ones; ``t_test(..., use_t=)`` chooses per test.
        ``res.candidates[label]`` stays statsmodels' own (nonrobust) results;
        ``res.candidates[label].get_robustcov_results(...)`` (OLS) or
        ``.model.fit(cov_type=...)`` gives a robust one. See
        :meth:`~pearlstats.PearlResults.get_robustcov`, which changes it
        afterwards without refitting. In memory, gaussian, binomial and poisson.
    cov_kwds : dict, optional
        Its keywords: ``groups`` (cluster: one label per row of *data*, or a column
        name; default the fit's *groups*), ``maxlags`` (HAC), ``use_correction``,
        ``df_correction``. *cov_type* is read in any case (``"hc3"``), as statsmodels
        reads it.
    scale : {None, "X2"} or float, optional
        The dispersion of the classical covariance (``cov_type="nonrobust"``) of binomial
        and Poisson fits, as statsmodels' ``GLM(...).fit(scale=)``. None: the family's own
        (1 for binomial and Poisson; a gaussian fit estimates its scale, as now).
        ``"X2"`` (any case): each candidate's covariance is multiplied by its Pearson
        ``X^2 / df_resid`` (observation weights in ``X^2``, frequency weights counted in
        ``df_resid``), R's ``glm(family = quasipoisson)`` / ``quasibinomial``; the joint
        covariance of the averaged terms (``cov_params()``) scales candidates j and k's
        block by their Pearson residuals' ``sum w r_j r_k / sqrt(df_j df_k)``
        (:mod:`pearlstats.results.covariance`). A positive number is a fixed dispersion
        (R's ``summary(fit, dispersion=)``). A binomial fit's response is 0/1, whose Pearson
        ``X^2`` says little about dispersion (``res.dispersion()`` is for Poisson fits);
        statsmodels and R compute it all the same. ``bse``, ``conf_int()``, ``cov_params()``,
        the tests, ``candidate_params()``, ``get_prediction`` and the summary (a
        "Dispersion:" row) use it; z quantiles stay, as statsmodels' GLM uses them
        (``use_t=False``) whatever its scale (R's quasi families use t). Refused with a
        robust *cov_type* (the sandwich uses no scale), gaussian and multinomial fits, a
        *downstream* learner, and sparse or wide blocks. On dask data too.
        :meth:`~pearlstats.PearlResults.get_robustcov` sets it afterwards.

    Returns
    -------
    PearlResults

    Examples
    --------
    >>> import numpy as np, pearlstats as pearl
    >>> rng = np.random.default_rng(0)
    >>> a, b = rng.normal(size=(100, 2)), rng.normal(size=(100, 3))
    >>> y = a[:, 0] - b[:, 1] + rng.normal(scale=0.1, size=100)
    >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, seed=1)
    >>> list(res.weights.index)
    ['a', 'b', 'a+b']
    >>> bool(res.weights.idxmax() == "a+b")
    True

    Overdispersed counts, with the quasi-Poisson dispersion (Pearson X2 / df):

    >>> counts = rng.negative_binomial(1, 1 / (1 + np.exp(1 + 0.5 * a[:, 0])))
    >>> quasi = pearl.fit("y ~ block(a) + block(b)", {"y": counts, "a": a, "b": b},
    ...                   family="poisson", seed=1, honest=False, scale="X2")
    >>> plain = quasi.get_robustcov("nonrobust")  # dispersion 1
    >>> bool(quasi.bse["Intercept"] > 1.4 * plain.bse["Intercept"])
    True
    """
    formula_spec = parse_formula(formula)
    separation = check_choice("separation", separation, SEPARATION_CHOICES)
    family_ = get_family(family).configured(separation=separation)
    loss_ = get_loss(loss, family_.name)
    family_ = _bind_downstream(family_, downstream)
    honest = _check_honest(honest)
    rule = check_cv(cv, fold_column_names(data))
    groups = check_groups(groups, rule.kind, fold_column_names(data), data)
    cov_type = cov_type_name(cov_type)
    _refuse_robust_early(cov_type, family_.name, downstream)
    refuse_hac_frequency(cov_type, weight_type if weights is not None else None)
    scale = _check_scale_early(scale, cov_type, family_.name, downstream)
    options = _Options(
        missing=check_choice("missing", missing, {"raise": "report rows with NaN/inf",
                                                  "drop": "remove those rows"}),
        ridge=check_ridge(ridge), seed=check_seed(seed), n_jobs=check_n_jobs(n_jobs),
        env=check_eval_env(eval_env), honest=honest,
        honest_se=check_honest_se(honest_se, honest,
                                  rule.kind in ("column", "labels", "splitter")
                                  or groups is not None,
                                  weights is not None, uses_dask(data, blocks)),
        cv_repeats=_check_cv_repeats(cv_repeats, cv, groups),
        shrinkage=_check_shrinkage(weight_shrinkage, shrinkage_target),
        candidates=candidates, max_candidates=max_candidates, groups=groups,
        progress=check_progress(progress),
        cov=(cov_type, _cov_keywords(cov_type, cov_kwds, groups)), scale=scale,
    )
    blocks = _frozen_representations(blocks)
    _check_no_response_leak(formula_spec, blocks)
    given = (weights, weight_type, offset, exposure)
    if uses_dask(data, blocks):
        refuse_in_memory_only(
            family=family_.name, loss=loss_.name, missing=options.missing, rule=rule, cv=cv,
            cv_repeats=options.cv_repeats, downstream=downstream, grouped=groups is not None,
            weighted=any(value is not None for value in given) or bool(formula_spec.offset_codes),
            cov_type=cov_type,
        )
        state = dask_fit_state(formula_spec, family_, loss_, data, blocks, candidates, rule,
                               options.seed, options.ridge, max_candidates, options.env,
                               _representations(blocks), options.honest, options.shrinkage)
        warn_unidentified(state)  # as in memory: at fit time, from the all-rows Gram
        res = results_from_state(state, DASK_ROWS)
        # the dispersion is read from the partitions' refit and stacked-score sums
        return res if scale is None else with_cov_type(res, CovSpec(scale=scale))
    observed = _observation_weights(data, blocks, formula_spec, options.env, family_.name, given,
                                    dict(downstream=downstream), options.missing)
    return _fit_in_memory(formula_spec, data, blocks, family_, loss_, rule.for_rows(data),
                          observed, options)


def _fold_draws(cv: Any, prepared: Prepared, options: _Options,
                groups: np.ndarray | None = None) -> list:
    """The fold stage: one draw of fold labels per ``cv_repeats`` (splits that are not a
    partition: their one draw, -1 for the rows no split tests). *groups* (codes): those the
    folds keep whole."""
    if isinstance(cv, Splits):
        return [cv.folds]
    return [assign_folds(cv, prepared.response, options.seed, groups)] + [
        assign_folds(cv, prepared.response, np.random.SeedSequence([options.seed, r]))
        for r in range(1, options.cv_repeats)
    ]


def _refuse_missing_groups(groups: Any, index: pd.Index | None, kept: np.ndarray,
                           n_given: int) -> None:
    """Refuse ``groups=`` missing at a row the fit keeps, naming the row as given (its label,
    or its position in the data given): after ``missing="drop"`` a position among the kept
    rows would name another row."""
    if groups is None or isinstance(groups, str) or np.ndim(groups) != 1:
        return
    everything = np.arange(n_given)
    values = np.asarray(fold_labels_for_rows(groups, index, everything, n_given, "groups"))
    if len(values) == n_given:
        missing = np.intersect1d(np.flatnonzero(pd.isna(values)), kept)
    elif len(values) == len(kept):  # labels given for the kept rows only
        missing = kept[np.flatnonzero(pd.isna(values))]
    else:
        return  # the wrong number of labels: resolve_splits says so
    if missing.size:
        raise FoldError(f"groups are missing at {format_positions(missing, labels=index)}; give "
                        "every row a group")


def _cross_validate(family: Any, prepared: Prepared, candidates: Any, cv: Any, draws: list,
                    options: _Options) -> tuple[list, Any]:
    """Every candidate's out-of-fold predictions in each fold draw (the cross-validation
    stage), and the family with the separation ridges it chose."""
    if isinstance(cv, Splits):
        return [cross_validate_splits(family, prepared.design.X, prepared.response,
                                      candidates.everything, cv, ridge=options.ridge)], family
    loo = isinstance(cv, str) and cv == "loo"
    return cross_validate_draws(family, prepared.design.X, prepared.response,
                                candidates.everything, draws, loo=loo, ridge=options.ridge,
                                n_jobs=options.n_jobs)


def _fit_in_memory(formula: FormulaSpec, data: Any, blocks: Any, family: Any, loss: Loss,
                   cv: Any, observed: ObservationWeights, options: _Options) -> PearlResults:
    """The stages of a fit on rows in memory, in order; the results are built from their values."""
    prepared = prepare_rows(formula, data, blocks, family, options.missing, options.env,
                            observed.unusable)
    candidates = build_pool(prepared.design, options.candidates, options.max_candidates)
    n_given = len(prepared.response.y) + len(prepared.dropped_rows)
    kept = complement_rows(prepared.dropped_rows, n_given)
    prepared, loss = with_observation_weights(prepared, loss, observed.kept(kept),
                                              max(c.n_params for c in candidates.pool))
    family.check_fit_response(prepared.response)  # net of the offset, which is now attached
    cv = fold_labels_for_rows(cv, data_index(data), kept, n_given)
    _refuse_missing_groups(options.groups, data_index(data), kept, n_given)
    groups = fold_labels_for_rows(options.groups, data_index(data), kept, n_given, "groups")
    cv = resolve_splits(cv, groups, prepared.response.y, options.seed, n_given,
                        removed=prepared.dropped_rows)
    if isinstance(cv, Splits) and int(cv.folds.max()) == 0 and options.shrinkage is not None \
            and options.shrinkage[0] == "cv":  # refused before the cross-validation is run
        raise OptionError(
            f"weight_shrinkage='cv' chooses the amount by cross-validation over the test splits, "
            f"which needs at least 2, and {splitter_name(cv.splitter)} has a single test split "
            "(a holdout); give weight_shrinkage='size' or an amount in [0, 1], or a splitter "
            "with 2 or more test splits")
    group_rows = None if groups is None else group_codes(np.asarray(groups))
    draws = _fold_draws(cv, prepared, options, group_rows)
    sizes = dict(n=len(prepared.response.y), candidates=len(candidates.everything),
                 fold_fits=sum(int(d.max()) + 1 for d in draws))
    delay = fit_bar_delay(**sizes, newton=family.name != "gaussian")
    with progress_bar(2, "pearl.fit: cross-validation", options.progress, delay) as bar:
        with timed(logger, "cross-validation", **sizes):
            outputs, family = _cross_validate(family, prepared, candidates, cv, draws, options)
        bar.update()
        bar.set_description("pearl.fit: weights", refresh=False)
        with timed(logger, "weights", candidates=sizes["candidates"], draws=len(draws)):
            output, solution, entries = solve_draw_weights(
                outputs, prepared.response.y, candidates.pool, draws, loss, options.shrinkage,
                context=f"in the {family.name} fit of {formula.formula!r}",
            )
        logger.debug("weight solve: solver %s, objective %.10g, KKT gap %.3g, %d nonzero",
                     solution.solver, solution.objective, solution.kkt_gap,
                     int(np.count_nonzero(solution.weights)))
        bar.update()
    state = FitState(
        family=family, loss=loss, design=prepared.design, response=prepared.response,
        candidates=candidates, folds=draws[0], cv_spec=cv, seed=options.seed,
        ridge=options.ridge, output=output, solution=solution, ledger=tuple(entries),
        representations=_representations(blocks), dropped_rows=prepared.dropped_rows,
        honest=options.honest, row_labels=prepared.row_labels,
        dropped_labels=prepared.dropped_labels,
        weight_options=WeightOptions(options.cv_repeats, options.shrinkage),
        honest_se=options.honest_se, progress=options.progress,
        groups=group_rows,
    )
    warn_unidentified(state)
    return _with_cov(results_from_state(state, DASK_ROWS), options, data, kept, n_given)


def _cov_keywords(cov_type: str, cov_kwds: Any, groups: Any) -> dict:
    """The checked *cov_kwds*; a cluster covariance without groups of its own clusters by
    the fit's ``groups=`` (the groups its folds keep whole), where it has them."""
    kwds = check_cov_names(cov_type, cov_kwds)
    if cov_type == "cluster" and "groups" not in kwds:
        if groups is None:
            raise OptionError("cov_type='cluster' needs the clusters: cov_kwds={'groups': ...} "
                              "(a column name or one label per row), or the fit's groups=")
        kwds["groups"] = groups
    return kwds


def _refuse_robust_early(cov_type: str, family: str, downstream: Any) -> None:
    """Refuse before any fitting the robust covariances no refit of *family* has sums for
    (the other cases, sparse or wide blocks, are known once the design is built)."""
    if cov_type == "nonrobust" or (family != "multinomial" and downstream is None):
        return
    what = "a downstream network" if downstream is not None else "multinomial fits"
    raise OptionError(
        f"cov_type={cov_type!r} is computed from sums over the rows for gaussian, binomial and "
        f"poisson fits, not for {what}; fit with cov_type='nonrobust' and refit a candidate "
        "in statsmodels with the covariance you want, e.g. "
        "res.candidates[label].model.fit(cov_type='HC0')")


def _check_scale_early(scale: Any, cov_type: str, family: str, downstream: Any) -> Any:
    """*scale* checked before any fitting: a known value, with ``cov_type="nonrobust"``, a
    binomial or Poisson family, no downstream network (whose refits have no sums)."""
    scale = check_scale(scale, cov_type)
    refuse_scale_family(scale, family)
    if scale is not None and downstream is not None:
        raise OptionError(f"scale={scale!r} is computed from the candidates' GLM refits, which "
                          "a downstream network does not have; drop scale=")
    return scale


def _with_cov(res: PearlResults, options: _Options, data: Any, kept: np.ndarray,
              n_given: int) -> PearlResults:
    """*res* with the covariance type of ``fit(cov_type=, cov_kwds=, scale=)``; cluster
    groups given as a column name or one per row of *data* are taken at the rows the fit
    kept."""
    cov_type, kwds = options.cov
    if cov_type == "nonrobust":
        return res if options.scale is None else res.get_robustcov(cov_type,
                                                                   scale=options.scale)
    groups = kwds.get("groups")
    if isinstance(groups, str):
        frame = split_data(data)[0]
        if groups not in frame:
            raise DataError(f"cov_kwds groups={groups!r} is not a column of the data")
        groups = frame[groups]
    elif isinstance(groups, (pd.Series, pd.DataFrame)):
        groups = align_by_label("cov_kwds groups=", groups, data_index(data))
    if groups is not None:
        values = np.asarray(groups)
        # one label per given row: those of the rows the fit kept (missing="drop")
        kwds = {**kwds, "groups": values[kept] if values.ndim == 1 and len(values) == n_given
                else values}
    return res.get_robustcov(cov_type, **kwds)
