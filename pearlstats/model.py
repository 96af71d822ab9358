"""``pearlstats.fit``: orchestration of the PEARL pipeline.

Data flows one way: rows -> blocks -> design matrix with block slices ->
candidate column sets -> out-of-fold prediction matrix -> simplex weights ->
refitted candidates -> :class:`~pearlstats.results.PearlResults`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs
from patsy import EvalEnvironment

from .candidates import DEFAULT_MAX_CANDIDATES, Candidate, build_candidates
from .cv import check_class_coverage, make_folds
from .data import Block, check_block_information, check_block_values, resolve_blocks, split_data
from .engines._common import EngineOutput, check_ridge
from .exceptions import AllCandidatesFailedError, CandidateFailureWarning, DataError, OptionError
from .families import get_family
from .formula import build_covariates, parse_formula, response_values
from .ledger import FailureLedger
from .losses import get_loss
from .results import PearlResults
from .weights import solve_weights

__all__ = ["fit", "Design"]


@dataclass(frozen=True)
class Design:
    """The full design matrix and where each block sits in it.

    Attributes
    ----------
    X : ndarray (n, p)
        Covariate columns first, then each block's columns in formula order.
    column_names : list of str
    n_covariates : int
    block_slices : dict of str -> slice
    covariates : formula.CovariateDesign
    """

    X: np.ndarray
    column_names: list
    n_covariates: int
    block_slices: dict
    covariates: object

    @property
    def block_dims(self) -> dict:
        return {name: slc.stop - slc.start for name, slc in self.block_slices.items()}


def _assemble(covariates, blocks) -> Design:
    parts = [covariates.matrix] + [block.values for block in blocks.values()]
    names = list(covariates.names)
    slices = {}
    start = covariates.matrix.shape[1]
    for block in blocks.values():
        slices[block.name] = slice(start, start + block.width)
        names.extend(block.column_names)
        start += block.width
    X = np.ascontiguousarray(np.hstack(parts), dtype=float)
    return Design(X, names, covariates.matrix.shape[1], slices, covariates)


def _missing_rows(frame: pd.DataFrame, columns) -> np.ndarray:
    """Rows with NaN/None (any dtype) or inf (numeric columns) in the given frame columns."""
    bad = np.zeros(len(frame), dtype=bool)
    for column in columns:
        values = frame[column]
        bad |= pd.isna(values).to_numpy()
        if values.dtype.kind in "fc":
            bad |= np.isinf(values.to_numpy())
    return bad


def _resolve_with_missing(spec, frame, embedded, blocks, missing):
    """Resolve the blocks and, with ``missing="drop"``, remove incomplete rows.

    Rows are dropped after the blocks are resolved and their row counts
    checked, so a mis-shaped block is reported the same way with either
    setting. Raw columns a ``Representations`` reads are cleaned before it is
    applied (it cannot transform missing inputs).

    Returns
    -------
    frame, resolved blocks, n rows, dropped positions (of the original rows)
    """
    kept = np.arange(len(frame))
    if missing == "drop" and hasattr(blocks, "transform") and not isinstance(blocks, dict):
        raw = [c for c in getattr(blocks, "input_columns", []) if c in frame.columns]
        bad = _missing_rows(frame, raw)
        frame, kept = frame.loc[~bad].reset_index(drop=True), kept[~bad]
        embedded = {name: value[~bad] for name, value in embedded.items()}
    resolved = resolve_blocks(spec.block_names, frame, embedded, blocks)
    n = len(frame) if len(frame.columns) else len(next(iter(resolved.values())).values)
    for block in resolved.values():
        if block.values.shape[0] != n:
            check_block_values(block.name, block.values, n)  # raises the row-count error
    if missing == "drop":
        used = [c for c in spec.variables if c in frame.columns]
        bad = _missing_rows(frame, used)
        for block in resolved.values():
            bad |= ~np.isfinite(block.values).all(axis=1)
        if bad.any():
            frame = frame.loc[~bad].reset_index(drop=True)
            resolved = {name: Block(b.name, b.values[~bad], b.column_names) for name, b in resolved.items()}
            kept = kept[~bad]
            n = int((~bad).sum())
    return frame, resolved, n, kept


def _baseline_candidates(pool: list[Candidate], design: Design) -> list[Candidate]:
    """Single-block and fusion candidates the paper's baselines need but the pool lacks."""
    have = {candidate.blocks for candidate in pool if candidate.label == "+".join(candidate.blocks)}
    covariates = np.arange(design.n_covariates)
    names = list(design.block_slices)
    wanted = [(name,) for name in names] + [tuple(names)]
    extra = []
    for blocks in dict.fromkeys(wanted):
        if blocks in have:
            continue
        columns = [covariates] + [np.arange(design.block_slices[b].start, design.block_slices[b].stop) for b in blocks]
        extra.append(Candidate("+".join(blocks), blocks, np.concatenate(columns).astype(int)))
    return extra


def _cross_validate(family, design, response, candidates, folds, loo, ridge, n_jobs) -> EngineOutput:
    def run(chunk):
        if loo:
            return family.loo_predict(design.X, response, chunk, ridge)
        return family.cv_predict(design.X, response, chunk, folds, ridge)

    if n_jobs in (None, 1) or len(candidates) < 2:
        return run(candidates)
    workers = effective_n_jobs(n_jobs)
    chunks = [list(part) for part in np.array_split(np.arange(len(candidates)), min(len(candidates), 4 * workers)) if len(part)]
    outputs = Parallel(n_jobs=n_jobs)(delayed(run)([candidates[i] for i in chunk]) for chunk in chunks)
    return EngineOutput(
        np.concatenate([out.predictions for out in outputs], axis=1),
        np.concatenate([out.failed for out in outputs]),
        [entry for out in outputs for entry in out.entries],
    )


def _check_n_jobs(n_jobs) -> None:
    valid = n_jobs is None or (isinstance(n_jobs, (int, np.integer)) and not isinstance(n_jobs, bool) and n_jobs != 0)
    if not valid:
        raise OptionError(f"n_jobs={n_jobs!r}; use None or 1 (serial), a positive int, or -1 for all cores")


def _resolve_seed(seed):
    if seed is None:
        return int(np.random.SeedSequence().entropy % (2**63))
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise OptionError(f"seed must be an int or None, got {seed!r}")
    return int(seed)


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
) -> PearlResults:
    """Fit PEARL: cross-validated convex model averaging over candidate block sets.

    Parameters
    ----------
    formula : str
        A patsy formula; each ``block(name)`` term is one foundation
        representation block, every other term (intercept, covariates,
        ``C(group)``, transforms) is in every candidate.
    data : DataFrame or dict
        The labeled rows: the response, covariates, and (in a dict) possibly
        the blocks as 2-D arrays under their names.
    blocks : dict or Representations, optional
        Block name -> 2-D array or DataFrame with one row per row of *data*,
        or a fitted :class:`~pearlstats.Representations` applied to *data*.
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
    """
    spec = parse_formula(formula)
    family_ = get_family(family)
    loss_ = get_loss(loss, family_.name)
    if downstream is not None:
        if not hasattr(downstream, "bind"):
            raise OptionError(
                f"downstream={downstream!r} has no bind(family) method; use e.g. pearl.MLP() or leave it None"
            )
        family_ = downstream.bind(family_)
    if missing not in ("raise", "drop"):
        raise OptionError(f"missing={missing!r}; use 'raise' (report rows with NaN/inf) or 'drop'")
    ridge = check_ridge(ridge)
    seed = _resolve_seed(seed)
    _check_n_jobs(n_jobs)
    if isinstance(eval_env, EvalEnvironment):
        env = eval_env
    elif isinstance(eval_env, (int, np.integer)) and not isinstance(eval_env, bool) and eval_env >= 0:
        env = EvalEnvironment.capture(int(eval_env), reference=1)
    else:
        raise OptionError(f"eval_env={eval_env!r}; use a non-negative int (frames above the caller) or a patsy EvalEnvironment")

    frame, embedded = split_data(data)
    if spec.response in embedded:
        raise DataError(
            f"response {spec.response!r} is a 2-D array in data; the response must be one value per row"
        )
    n_given = len(frame)
    frame, resolved, n, kept = _resolve_with_missing(spec, frame, embedded, blocks, missing)
    dropped = np.setdiff1d(np.arange(n_given), kept)
    for block in resolved.values():
        check_block_values(block.name, block.values, n)
    check_block_information(resolved)

    response = family_.encode(response_values(spec, frame, env))
    covariates = build_covariates(spec, frame, env)
    design = _assemble(covariates, resolved)

    pool = build_candidates(candidates, design.block_slices, design.column_names, design.n_covariates, max_candidates)
    extras = _baseline_candidates(pool, design)
    strata = response.y.astype(np.intp) if response.classes is not None else None
    folds = make_folds(cv, n, seed=seed, strata=strata)
    if strata is not None:
        check_class_coverage(strata, folds, response.classes)

    loo = isinstance(cv, str) and cv == "loo"
    output = _cross_validate(family_, design, response, pool + extras, folds, loo, ridge, n_jobs)
    ledger = FailureLedger()
    ledger.extend(output.entries)
    J = len(pool)
    failed = output.failed[:J]
    for candidate in [c.label for c, bad in zip(pool, failed) if bad]:
        warnings.warn(
            f"candidate {candidate!r} failed in cross-validation and gets weight 0; see results.failures",
            CandidateFailureWarning,
            stacklevel=2,
        )
    if failed.all():
        first = next(entry for entry in output.entries if entry.excluded)
        raise AllCandidatesFailedError(
            f"all {J} candidates failed in cross-validation (first: {first.candidate!r}, {first.kind}: "
            f"{first.reason}; {first.action})",
            ledger.to_frame(),
        )
    solution = solve_weights(output.predictions[:, :J], response.y, loss_, active=~failed)
    for group in solution.merged:
        labels = [pool[i].label for i in group]
        ledger.record(
            labels[0], None, "weights", "duplicate",
            f"candidates {labels} have identical out-of-fold predictions",
            "merged for the weight solver; their weight is split equally", False,
        )
    return PearlResults(
        spec=spec,
        family=family_,
        loss=loss_,
        design=design,
        response=response,
        pool=pool,
        extras=extras,
        folds=folds,
        cv_spec=cv,
        seed=seed,
        ridge=ridge,
        predictions=output.predictions,
        failed=output.failed,
        solution=solution,
        ledger=ledger,
        representations=blocks if hasattr(blocks, "transform") else None,
        dropped_rows=dropped,
    )
