"""``pearlstats.fit``: the PEARL pipeline, stage by stage.

Data flows one way: rows -> blocks -> design (a spec that rebuilds it for any
rows) -> candidate column sets -> folds -> out-of-fold prediction matrix ->
simplex weights -> :class:`~pearlstats.results.PearlResults`. Each arrow is a
function of :mod:`pearlstats.stages`; ``fit`` only checks its arguments and
composes them.
"""

from __future__ import annotations

import copy

from .checks import check_choice, check_eval_env, check_int, check_n_jobs, check_seed
from .design.candidates import DEFAULT_MAX_CANDIDATES
from .design.formula import parse_formula
from .distributed.data import uses_dask
from .distributed.results import DaskPearlResults
from .engines._common import check_ridge
from .exceptions import DataError, OptionError
from .families import get_family
from .results.core import PearlResults, results_from_state
from .stages import FitState, assign_folds, build_pool, cross_validate, prepare_rows, solve_stage_weights
from .weights.losses import get_loss

__all__ = ["fit"]


def _frozen_representations(blocks):
    """A private copy of a fitted Representations, so refitting the caller's object cannot change a fit."""
    if hasattr(blocks, "transform") and not isinstance(blocks, dict):
        return copy.deepcopy(blocks)
    return blocks


def _check_no_response_leak(formula, blocks) -> None:
    """The response must never be an input of the representations."""
    read = set(getattr(blocks, "input_columns", None) or ())
    leaked = sorted(read & ({formula.response} | set(formula.response_variables)), key=str)
    if leaked:
        raise DataError(
            f"the representations read the column(s) {leaked}, which the formula uses as the response: "
            "the blocks would contain the answer. Fit the Representations with columns= that exclude "
            "the response"
        )


def fit(
    formula: str,
    data,
    *,
    blocks=None,
    family: str = "gaussian",
    loss: str | None = None,
    candidates="all",
    cv=5,
    seed: int | None = None,
    n_jobs: int | None = None,
    ridge: float = 0.0,
    max_candidates: int = DEFAULT_MAX_CANDIDATES,
    missing: str = "raise",
    eval_env: int = 0,
    downstream=None,
    honest: int | bool = 5,
) -> PearlResults | DaskPearlResults:
    """Fit PEARL: cross-validated convex model averaging over candidate block sets.

    Parameters
    ----------
    formula : str
        A patsy formula; each ``block(name)`` term is one foundation
        representation block, every other term (intercept, covariates,
        ``C(group)``, transforms) is in every candidate.
    data : DataFrame or dict
        The labeled rows: the response, covariates, and (in a dict) possibly
        the blocks as 2-D arrays under their names. A dask DataFrame (or a
        dict of dask arrays) is fitted where it lives, partition by partition
        (:mod:`pearlstats.distributed`; gaussian, binomial and poisson, numeric
        covariates; ``cv`` is K or a fold-column name, folds hashed from row
        positions) and gives a :class:`~pearlstats.distributed.DaskPearlResults`.
    blocks : dict or Representations, optional
        Block name -> 2-D array or DataFrame with one row per row of *data*,
        or a fitted :class:`~pearlstats.Representations` applied to *data*.
        The result keeps a private copy of a ``Representations``: refitting
        yours later does not change this fit's predictions. The
        representations must not read the response column.

        Rows are matched as statsmodels users expect: pandas objects by index
        label (a DataFrame block whose index is a permutation of *data*'s is
        re-ordered; different labels are an error naming them), arrays by
        position. At prediction, DataFrame blocks are matched by column name
        (re-ordered columns are re-aligned; missing or extra ones are an error).
    family : {"gaussian", "binomial", "multinomial", "poisson"}
        Downstream model: ``OLS``, ``Logit``, ``MNLogit`` or Poisson ``GLM``.
    loss : str, optional
        Surrogate loss the weights minimise. Defaults: squared error
        (gaussian), cross-entropy of the averaged probabilities (binomial,
        multinomial), Poisson deviance (poisson). Also ``"squared"`` (Brier
        for classes), ``"cross_entropy"``, ``"hinge"``, ``"absolute"``.
    candidates : {"all", "single", "nested", "columns"} or list
        How candidate sets are built from the blocks; a list gives explicit
        sets as tuples of block names (or ``"a+b"`` strings).
    cv : int, "loo" or array-like
        K for K-fold (stratified for classes), ``"loo"`` for leave-one-out
        (closed form for gaussian), or one fold label per row.
    seed : int, optional
        Seeds the folds. ``None`` draws one, recorded in ``results.seed``.
    n_jobs : int, optional
        Parallel workers for the cross-validation fits (joblib; honours
        ``joblib.parallel_config``, including a dask backend).
    ridge : float, default 0
        L2 penalty on the (standardised, non-intercept) coefficients of every
        candidate; use it when classes separate or blocks are wide.
    max_candidates : int, default 32767
        Refuse candidate specifications larger than this.
    missing : {"raise", "drop"}
        ``"raise"`` reports rows with NaN/inf; ``"drop"`` removes them and
        records their positions in ``results.dropped_rows``.
    eval_env : int, default 0
        How many frames above the caller to look up names used by the
        formula's functions (as in patsy).
    downstream : object, optional
        Another downstream learner for every candidate instead of the
        family's statsmodels model, e.g. ``pearl.MLP(hidden=64)`` (needs the
        ``deep`` extra). It must provide ``bind(family)`` returning an object
        with the family interface (``cv_predict``, ``fit_params``, ``predict``,
        ``statsmodels_results``); the response coding and the weights' loss
        stay the family's.
    honest : int or False, default 5
        Outer folds of the nested cross-validation that gives ``res.honest``
        and the summary's Strategies table: the whole procedure (inner
        folds, candidates, weights, each baseline's choice) is re-run inside
        each outer fold and scored on the held-out rows, as R's
        ``CV.SuperLearner`` reports it. It runs on first use of
        ``res.honest`` or the summary and costs about *honest* times the
        cross-validation; ``False`` skips it (the summary then shows the
        optimistic in-sample CV risks, labelled as such).

    Returns
    -------
    PearlResults or DaskPearlResults

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
    """
    formula_spec = parse_formula(formula)
    family_ = get_family(family)
    loss_ = get_loss(loss, family_.name)
    if downstream is not None:
        if not hasattr(downstream, "bind"):
            raise OptionError(
                f"downstream={downstream!r} has no bind(family) method; use e.g. pearl.MLP() or leave it None"
            )
        family_ = downstream.bind(family_)
    missing = check_choice(
        "missing", missing, {"raise": "report rows with NaN/inf", "drop": "remove those rows"}
    )
    ridge = check_ridge(ridge)
    seed = check_seed(seed)
    n_jobs = check_n_jobs(n_jobs)
    env = check_eval_env(eval_env)
    honest = False if honest is False else check_int("honest", honest, minimum=2)
    blocks = _frozen_representations(blocks)
    _check_no_response_leak(formula_spec, blocks)
    if uses_dask(data, blocks):
        # dask rows: partition-wise sums, computed where the data lives (pearlstats.distributed)
        from .distributed.fit import fit_distributed

        reps = blocks if hasattr(blocks, "transform") and not isinstance(blocks, dict) else None
        return fit_distributed(formula_spec, family_, loss_, data, blocks, candidates, cv, seed, ridge,
                               max_candidates, missing, env, reps)

    prepared = prepare_rows(formula_spec, data, blocks, family_, missing, env)
    candidates_ = build_pool(prepared.design, candidates, max_candidates)
    folds = assign_folds(cv, prepared.response, seed)
    loo = isinstance(cv, str) and cv == "loo"
    output = cross_validate(family_, prepared.design.X, prepared.response, candidates_.everything, folds,
                            loo=loo, ridge=ridge, n_jobs=n_jobs)
    labels = [candidate.label for candidate in candidates_.pool]
    solution, entries = solve_stage_weights(output, len(labels), prepared.response.y, loss_, labels)
    state = FitState(
        family=family_, loss=loss_, design=prepared.design, response=prepared.response,
        candidates=candidates_, folds=folds, cv_spec=cv, seed=seed, ridge=ridge, output=output,
        solution=solution, ledger=tuple(entries),
        representations=blocks if hasattr(blocks, "transform") and not isinstance(blocks, dict) else None,
        dropped_rows=prepared.dropped_rows, honest=honest,
    )
    return results_from_state(state)
