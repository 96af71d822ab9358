"""Consistency diagnostics of the PEARL weights (mixed into ``PearlResults``).

* block importance: the total weight of the candidates that contain a block;
* concentration of the weights: effective number of candidates ``1 / sum w^2``,
  entropy, largest weight, number of non-zero weights;
* tau-hat (the paper's Theorem 2): the total weight on the candidates the
  analyst knows to be correctly specified, which tends to 1;
* stability: the weights re-solved on each fold's complement (or on bootstrap
  resamples of the rows) from the stored out-of-fold predictions (their
  fold-to-fold spread), and the refitting bootstrap's SD and percentile
  intervals (:mod:`pearlstats.results.bootstrap`), which refits the candidates;
* loss sensitivity: the weights re-solved under other surrogate losses.

The results' entry point to the honest (nested) risk of
:mod:`pearlstats.results.evaluation` is here too.

Examples
--------
>>> import numpy as np
>>> effective_candidates(np.array([0.5, 0.5, 0.0])), round(weight_entropy(np.array([0.5, 0.5])), 4)
(2.0, 0.6931)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import cached_property, partial
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .._warnings import warn
from ..checks import check_choice, check_int, check_n_jobs, check_seed
from ..exceptions import CandidateError, OptionError, PearlWarning, ResampleFailureWarning
from ..in_memory_only import refuse_results_feature
from ..weight_stage import fit_name, solve_draw_weights, solve_stored_weights
from ..weights.certificate import gap_table
from ..weights.losses import get_loss
from ..weights.row_weighted import WEIGHTED_LOSSES, RowWeightedLoss
from ..weights.solvers import solve_weights
from . import bootstrap, evaluation
from .readonly import cached_table

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..design.candidates import Candidate
    from ..weights.losses import Loss
    from .core import PearlResults
    from .evaluation import HonestRisk

__all__ = [
    "WeightDiagnostics",
    "Diagnostics",
    "block_membership",
    "effective_candidates",
    "weight_entropy",
    "resolve_candidates",
    "resampled_weights",
    "stability_table",
]


def block_membership(candidates: Sequence[Candidate], block_names: Sequence[str]) -> pd.DataFrame:
    """Boolean table (candidates x blocks): does the candidate use the block."""
    return pd.DataFrame(
        [[name in candidate.blocks for name in block_names] for candidate in candidates],
        index=[candidate.label for candidate in candidates],
        columns=list(block_names),
    )


def effective_candidates(weights: ArrayLike) -> float:
    """Effective number of candidates ``1 / sum w^2`` (1 for one candidate, J for equal weights)."""
    w = np.asarray(weights, dtype=float)
    return float(1.0 / np.sum(w**2))


def weight_entropy(weights: ArrayLike) -> float:
    """Entropy ``-sum w log w`` of the weights in nats (0 for a single candidate, log J at most)."""
    w = np.asarray(weights, dtype=float)
    w = w[w > 0]
    return float(0.0 - np.sum(w * np.log(w)))  # 0.0 - x, unlike -x, never prints "-0.0000"


def resolve_candidates(
    candidates: Sequence[Candidate], names: str | Sequence[str | Sequence[str]]
) -> list[str]:
    """Candidate labels for *names*: labels, ``"a+b"`` strings or tuples of block names.

    Block names may be given in any order.

    Raises
    ------
    CandidateError
        A name matches no candidate, or *names* is empty.
    """
    if isinstance(names, (str, tuple)):
        names = [names]
    labels = {candidate.label for candidate in candidates}
    by_blocks = {frozenset(candidate.blocks): candidate.label for candidate in candidates
                 if candidate.label == "+".join(candidate.blocks)}
    found, unknown = [], []
    for item in names:
        if isinstance(item, str) and item in labels:
            found.append(item)
            continue
        parts = item.split("+") if isinstance(item, str) else item
        label = by_blocks.get(frozenset(part.strip() for part in parts))
        if label is None:
            unknown.append(item)
        else:
            found.append(label)
    if unknown:
        shown = sorted(labels)[:10]
        raise CandidateError(
            f"{unknown} name no candidate; give candidate "
            f"labels such as {shown} or tuples of block names"
        )
    if not found:
        raise CandidateError("name at least one correctly specified candidate")
    return list(dict.fromkeys(found))


def resampled_weights(
    P: np.ndarray,
    y: np.ndarray,
    loss: Loss,
    active: np.ndarray,
    *,
    folds: np.ndarray | None = None,
    n_boot: int = 50,
    seed: int | np.random.SeedSequence | None = None,
    solve: Callable[..., np.ndarray] | None = None,
    frequency_weights: np.ndarray | None = None,
) -> tuple[np.ndarray, list[str], pd.DataFrame]:
    """Weights re-solved on each fold's complement, or on bootstrap resamples of the rows.

    Parameters
    ----------
    P : ndarray (n, J) or (n, J, C)
        Out-of-fold predictions.
    y : ndarray (n,)
    loss : Loss
    active : ndarray of bool (J,)
        Candidates allowed a weight.
    folds : ndarray of int, optional
        With folds, resample r uses every row outside fold r. Without, resample
        b uses rows ``np.random.default_rng(seed).integers(0, n, (n_boot, n))[b]``.
    n_boot : int
    seed : int, optional
    solve : callable, optional
        ``solve(rows, name, record)`` returns the weights of the row positions
        *rows* and appends its WeightSolution to the list *record*; default
        the simplex minimum of *loss* over *P*'s rows (no shrinkage). A fit
        passes its own weight stage
        (:func:`~pearlstats.weight_stage.solve_stored_weights`).
    frequency_weights : ndarray (n,), optional
        Rows that stand for ``w_i`` rows: resample b then draws row i
        ``counts[b, i]`` times, ``counts = resample_counts(w, np.random.default_rng(seed),
        n_boot)`` (:func:`~pearlstats.results.bootstrap.resample_counts`: a bootstrap of the
        expanded data, drawn without expanding it); *solve* is called with
        ``counts=`` the drawn rows' counts, their frequency weights.

    Returns
    -------
    weights : ndarray (R, J)
    names : list of str
        ``"fold k"`` or ``"boot b"``.
    gaps : DataFrame
        Per re-solve: its certified ``kkt_gap``, ``objective``, ``certified``
        and ``solver`` (:func:`~pearlstats.weights.certificate.gap_table`).
    """
    n = len(y)
    if folds is not None:
        samples = [np.flatnonzero(folds != k) for k in range(int(folds.max()) + 1)]
        names = [f"fold {k}" for k in range(len(samples))]
    elif frequency_weights is not None:
        drawn = bootstrap.resample_counts(frequency_weights, np.random.default_rng(seed), n_boot)
        names = [f"boot {b}" for b in range(n_boot)]
        record: list = []
        weights = np.vstack([solve(np.flatnonzero(c), name, record, counts=c[c > 0])
                             for c, name in zip(drawn, names)])
        return weights, names, gap_table(record, names)
    else:
        samples = list(np.random.default_rng(seed).integers(0, n, size=(n_boot, n)))
        names = [f"boot {b}" for b in range(n_boot)]
    if solve is None:
        def solve(rows, name, record):
            record.append(solve_weights(P[rows], y[rows], loss, active=active,
                                        context=f"in re-solve {name!r}"))
            return record[-1].weights
    record: list = []
    weights = np.vstack([solve(rows, name, record) for rows, name in zip(samples, names)])
    return weights, names, gap_table(record, names)


def _warn_failed_resamples(failed: Mapping[str, str], n_resamples: int, name: str) -> None:
    """Say which bootstrap resamples could not be fitted and were left out."""
    if not failed:
        return
    first, reason = next(iter(failed.items()))
    left = n_resamples - len(failed)
    # fewer than 2 left: no spread (NaN), which the table would show without a reason
    spread = (f"; only {left} was fitted, so the spread is undefined (NaN): use more "
              "resamples" if left < 2 else "")
    warn(
        f"{len(failed)} of the {n_resamples} bootstrap resamples of {name} could not be fitted "
        f"and are left out ({first}: {reason}); attrs['failed'] lists them all{spread}",
        ResampleFailureWarning,
    )


def _gap_attrs(gaps: pd.DataFrame) -> dict:
    """``attrs`` of a table of re-solved weights: each solve's gap, and those not certified.

    Plain dicts and lists of floats and strings, which pandas can compare and copy.
    """
    return {
        "kkt_gap": {str(name): float(gap) for name, gap in gaps["kkt_gap"].items()},
        "uncertified": [str(name) for name in gaps.index[~gaps["certified"]]],
    }


def stability_table(weights: pd.Series, resampled: pd.DataFrame) -> pd.DataFrame:
    """Full-sample weight with the mean and spread of the re-solved weights, per candidate.

    ``spread`` is the SD (ddof=1) of the weights across resamples that re-solve
    the stored out-of-fold predictions. It is named spread, not SD, because it
    is not the weights' sampling SD: the candidates are not refitted and fold
    complements overlap, so it understates it (use
    :meth:`WeightDiagnostics.weight_uncertainty` for the refitting bootstrap's).
    """
    return pd.DataFrame({
        "weight": weights,
        "mean": resampled.mean(axis=1),
        "spread": resampled.std(axis=1, ddof=1),
    })


class Diagnostics(Mapping):
    """Read-only mapping of the consistency diagnostics of a fit.

    Keys: ``effective_candidates``, ``weight_entropy``, ``max_weight``,
    ``n_nonzero``, ``kkt_gap``, ``weight_solver``, ``solver_ridge``,
    ``stability`` (DataFrame: weight, mean and fold-to-fold spread per
    candidate) and ``stability_resamples`` (what the stability resamples are).
    """

    def __init__(self, values: dict):
        self._values = dict(values)

    def __getitem__(self, key):
        value = self._values[key]
        # the stability table is the summary's too: a reader's edits must not reach it
        return value.copy() if isinstance(value, pd.DataFrame) else value

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __repr__(self):
        lines = [
            f"  {key}: {value!r}"
            for key, value in self._values.items()
            if not isinstance(value, pd.DataFrame)
        ]
        return (
            "Diagnostics(\n" + "\n".join(lines) + "\n  stability: DataFrame (see ['stability'])\n)"
        )


# Above this many folds the weights' stability comes from bootstrap resamples
# (fold complements of leave-one-out differ by one row and say little).
_MAX_STABILITY_FOLDS = 20
_STABILITY_BOOTSTRAPS = 50


# ---- the results' diagnostics ------------------------------------------------------------
class WeightDiagnostics:
    """Diagnostics of :class:`~pearlstats.PearlResults` (mixed into it).

    Reads the fit's stored state (candidates, out-of-fold predictions,
    weights, loss); nothing here refits a candidate except
    :meth:`honest_risk` and the refitting bootstrap
    (``resample_weights(..., refit=True)``, :meth:`weight_uncertainty`). :meth:`reweight`
    builds its results through the results class's ``_with_state``.
    """

    @cached_table
    def block_membership(self) -> pd.DataFrame:
        """Boolean table (candidates x blocks): which blocks each candidate uses.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.block_membership
                 a      b
        a     True  False
        b    False   True
        a+b   True   True
        """
        return block_membership(self.stages.candidates.pool, self.block_names)

    @cached_table
    def block_importance(self) -> pd.Series:
        """Per block, the total weight of the candidates that contain it.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.block_importance.round(3)
        a    0.908
        b    0.092
        Name: importance, dtype: float64
        """
        importance = self.block_membership.astype(float).T @ self.weights
        return importance.rename("importance")

    def resample_weights(self, method: str | None = None,
                         n_resamples: int = _STABILITY_BOOTSTRAPS, seed: int | None = None, *,
                         refit: bool = False, n_jobs: int | None = None,
                         progress: bool | None = None) -> pd.DataFrame:
        """Weights re-solved on subsets or bootstrap resamples of the rows.

        Without *refit*, the weights are re-solved from the stored
        out-of-fold predictions: cheap, but the candidates' fits stay fixed,
        so the spread understates the weights' sampling SD (fold complements
        share (K-2)/(K-1) of their rows, which shrinks their spread further).
        With ``refit=True`` each bootstrap resample re-runs the whole fit:
        folds drawn on the resample (copies of an original row share a fold,
        so a row never validates a model trained on its own copy), every
        candidate refitted by the cross-validation stage, weights re-solved;
        see :func:`pearlstats.results.bootstrap.bootstrap_resample`.

        Parameters
        ----------
        method : {"folds", "bootstrap"}, optional
            ``"folds"``: one re-solve on each fold's complement; ``"bootstrap"``:
            *n_resamples* bootstrap resamples of the rows. Default: folds when
            2 <= K <= 20, else bootstrap (always bootstrap with *refit*; a fit with a
            single test split, a holdout, has no fold complements with tested rows).
        n_resamples : int, default 50
            Bootstrap resamples (>= 2).
        seed : int, optional
            Seeds the bootstrap; defaults to the fit's seed. Without *refit*,
            resample b uses rows
            ``np.random.default_rng(seed).integers(0, n, (n_resamples, n))[b]``;
            with *refit*, resample b draws its rows and folds from the
            SeedSequence child ``np.random.SeedSequence(seed).spawn(b + 1)[b]``.
            With frequency weights a row of weight w stands for w rows: each
            resample is one of the expanded data, ``round(sum w)`` rows drawn in
            proportion to the weights, drawn as multinomial counts of the rows
            that become their frequency weights, in time proportional to the rows
            (:func:`~pearlstats.results.bootstrap.resample_counts`; with given fold
            labels and *refit*, whole groups are drawn and keep their weights).
            For a class response the refitting bootstrap draws each class's rows
            from that class. A resample that cannot be fitted (a rare class drawn
            in one row) is left out with a
            :class:`~pearlstats.exceptions.ResampleFailureWarning`;
            ``attrs["failed"]`` maps it to the reason.
        refit : bool, default False
            Refit the candidates on each resample (the refitting bootstrap).
        n_jobs : int, optional
            With *refit*: parallel workers over resamples (joblib); the
            weights do not depend on it.
        progress : bool, optional
            With *refit*: a progress bar over the resamples; None follows the
            fit's ``progress`` (and then ``pearl.get_option("progress")``).

        Returns
        -------
        DataFrame
            Candidates x resamples (columns ``"fold k"`` or ``"boot b"``).
            ``attrs["kkt_gap"]`` maps each resample to the certified gap of its
            weight solve (before any shrinkage), ``attrs["uncertified"]`` lists
            those above ``1e-10 (1 + objective)``.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.resample_weights().round(2)  # one re-solve per fold's complement
             fold 0  fold 1  fold 2  fold 3  fold 4
        a      0.91    0.95    0.82     0.9    0.92
        b      0.09    0.05    0.13     0.1    0.08
        a+b    0.00    0.00    0.05     0.0    0.00
        """
        if not isinstance(refit, (bool, np.bool_)):
            raise OptionError(f"refit={refit!r}; use True (refit the candidates) or False")
        single = self.n_folds == 1  # a holdout: its one split's complement is never tested
        if method is None:
            method = ("bootstrap" if refit or single or self.n_folds > _MAX_STABILITY_FOLDS
                      else "folds")
        method = check_choice("method", method, {
            "folds": "fold complements", "bootstrap": "bootstrap resamples of the rows",
        })
        if method == "folds" and single:
            raise OptionError(
                "method='folds' re-solves the weights on each fold's complement, but this fit "
                "has a single test split (a holdout), whose complement holds only rows it never "
                "tests, which have no out-of-fold predictions; use method='bootstrap' (the "
                "default for such a fit)")
        if refit and method == "folds":
            raise OptionError(
                "refit=True needs method='bootstrap'; fold complements re-solve stored predictions"
            )
        if method == "bootstrap":
            n_resamples = check_int("n_resamples", n_resamples, minimum=2)
        seed = self.seed if seed is None else check_seed(seed)
        n_jobs = check_n_jobs(n_jobs)
        state = self.stages
        J = len(state.candidates.pool)
        if state.partitions is not None:  # dask rows: fold complements by passes only
            if method != "folds":
                refuse_results_feature("resample_weights(method='bootstrap' or refit=True)")
            solutions = state.partitions.fold_complement(state.family, state.loss)
            names = [f"fold {k}" for k in range(len(solutions))]
            values, gaps = np.stack([s.weights for s in solutions]), gap_table(solutions, names)
        elif refit:
            values, names, gaps, failed = bootstrap.refitting_bootstrap(state, n_resamples, seed,
                                                                        n_jobs, progress)
        else:
            # A row of frequency weight w stands for w rows: the bootstrap draws from the
            # expanded data, as counts of the rows (their frequency weights in the re-solve).
            counted = method == "bootstrap" and state.response.weight_type == "frequency"
            # The fit's own weight stage, so shrunk weights are re-solved shrunk.
            values, names, gaps = resampled_weights(
                state.output.predictions[:, :J],
                state.response.y,
                state.loss,
                ~state.output.failed[:J],
                folds=state.folds if method == "folds" else None,
                n_boot=n_resamples,
                seed=seed,
                solve=partial(solve_stored_weights, state),
                frequency_weights=state.response.row_weights if counted else None,
            )
        table = pd.DataFrame(values.T, index=self.candidate_labels, columns=names)
        table.attrs.update(_gap_attrs(gaps))
        if refit:
            table.attrs["failed"] = failed
            _warn_failed_resamples(failed, n_resamples, fit_name(state))
        return table

    def weight_uncertainty(self, n_resamples: int = 200, alpha: float = 0.05,
                           seed: int | None = None, n_jobs: int | None = None,
                           progress: bool | None = None) -> pd.DataFrame:
        """The bootstrap distribution of the procedure's weights (not standard errors).

        Runs ``resample_weights("bootstrap", refit=True, ...)``: each
        resample re-draws the folds, refits every candidate and re-solves the
        weights. What it returns describes how the whole procedure's weights
        move under resampling; it is not a standard error or a confidence
        interval. Weights on the boundary of the simplex make the bootstrap
        inconsistent (Andrews 2000). In a Monte Carlo check on three designs
        (``vignettes/results/inference_checks_weights.md``) the spread was
        0.77-1.45 times the weights' Monte Carlo SD (the target of a standard
        error, 0.7-1.3, missed on two designs), the resampled weights were
        shifted away from the dominant candidate (by up to 0.22), and the
        quantiles excluded the full-sample weight in up to 11 % of data sets.
        The summary shows the latest result (:attr:`last_weight_uncertainty`).

        Parameters
        ----------
        n_resamples : int, default 200
            Bootstrap resamples (each is one full cross-validation of the pool).
        alpha : float, default 0.05
            The quantiles returned are ``alpha/2`` and ``1 - alpha/2``.
        seed : int, optional
            Defaults to the fit's seed.
        n_jobs : int, optional
            Parallel workers over resamples; the result does not depend on it.
        progress : bool, optional
            A progress bar over the resamples (:mod:`pearlstats.progress`); None
            follows ``pearl.get_option("progress")``.

        Returns
        -------
        DataFrame
            Per candidate: ``weight`` (full sample), ``mean`` and ``spread``
            (mean and SD, ddof=1, of the resampled weights), ``q_lower`` and
            ``q_upper`` (their ``alpha/2`` and ``1 - alpha/2`` quantiles).
            ``attrs`` records ``n_resamples`` (those fitted), ``n_failed`` and
            ``failed`` (the resamples that could not be fitted, and why),
            ``alpha``, ``seed``, ``kkt_gap`` (each resample's certified gap) and
            ``uncertified`` (as for :meth:`resample_weights`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> table = res.weight_uncertainty(n_resamples=20, seed=1, progress=False)
        >>> table.round(2)
             weight  mean  spread  q_lower  q_upper
        a      0.91  0.84    0.20     0.37     1.00
        b      0.09  0.10    0.10     0.00     0.29
        a+b    0.00  0.06    0.13     0.00     0.38
        """
        alpha = bootstrap.check_alpha(alpha)
        seed = self.seed if seed is None else check_seed(seed)
        resampled = self.resample_weights("bootstrap", n_resamples, seed, refit=True, n_jobs=n_jobs,
                                          progress=progress)
        table = bootstrap.uncertainty_table(self.weights, resampled, alpha)
        table.attrs.update(n_resamples=resampled.shape[1], alpha=alpha, seed=seed,
                           n_failed=len(resampled.attrs["failed"]),
                           failed=dict(resampled.attrs["failed"]),
                           kkt_gap=dict(resampled.attrs["kkt_gap"]),
                           uncertified=list(resampled.attrs["uncertified"]))
        self._last_weight_uncertainty = table
        return table

    @property
    def last_weight_uncertainty(self) -> pd.DataFrame | None:
        """The latest :meth:`weight_uncertainty` result, or None.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> print(res.last_weight_uncertainty)
        None
        >>> table = res.weight_uncertainty(n_resamples=5, progress=False)
        >>> res.last_weight_uncertainty.equals(table)
        True
        """
        return getattr(self, "_last_weight_uncertainty", None)

    @cached_table
    def weight_stability(self) -> pd.DataFrame:
        """Weights re-solved on each fold's complement (bootstrap if K > 20), candidates x draws.

        A fit with a single test split (a holdout: ``PredefinedSplit`` with one fold,
        ``ShuffleSplit(1)``) has no fold complement with tested rows, so its stability is
        the bootstrap resamples of the rows (:meth:`resample_weights`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.weight_stability.round(2)
             fold 0  fold 1  fold 2  fold 3  fold 4
        a      0.91    0.95    0.82     0.9    0.92
        b      0.09    0.05    0.13     0.1    0.08
        a+b    0.00    0.00    0.05     0.0    0.00
        """
        return self.resample_weights()

    @cached_property
    def diagnostics(self) -> Mapping:
        """Consistency diagnostics: concentration of the weights, solver gap, stability.

        Keys ``effective_candidates`` (1 / sum w^2), ``weight_entropy`` (nats),
        ``max_weight``, ``n_nonzero``, ``kkt_gap``, ``weight_solver``,
        ``solver_ridge``, ``stability`` (columns ``weight``, ``mean`` and
        ``spread``: mean and SD of :attr:`weight_stability`, the fold-to-fold
        spread, which understates the weights' sampling SD; the refitting
        bootstrap is :meth:`weight_uncertainty`) and ``stability_resamples``.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> list(res.diagnostics)  # doctest: +NORMALIZE_WHITESPACE
        ['effective_candidates', 'weight_entropy', 'max_weight', 'n_nonzero', 'kkt_gap',
         'weight_solver', 'solver_ridge', 'stability', 'stability_resamples']
        >>> res.diagnostics["n_nonzero"], round(res.diagnostics["effective_candidates"], 3)
        (2, 1.2)
        """
        w = self.weights.to_numpy()
        resamples = self.weight_stability
        by_folds = resamples.columns[0].startswith("fold")
        kind = "fold complements" if by_folds else f"bootstrap resamples (seed {self.seed})"
        if not by_folds and self.n_folds == 1:
            kind = (f"bootstrap resamples (seed {self.seed}; a single test split has no fold "
                    "complement with tested rows)")
        return Diagnostics({
            "effective_candidates": effective_candidates(w),
            "weight_entropy": weight_entropy(w),
            "max_weight": float(w.max()),
            "n_nonzero": int((w > 0).sum()),
            "kkt_gap": self.kkt_gap,
            "weight_solver": self.weight_solver,
            "solver_ridge": float(self.stages.solution.ridge),
            "stability": stability_table(self.weights, resamples),
            "stability_resamples": f"{resamples.shape[1]} {kind}",
        })

    def resolve_candidates(self, names: str | Sequence[str | Sequence[str]]) -> list:
        """Candidate labels for labels, ``"a+b"`` strings or tuples of block names (any order).

        Parameters
        ----------
        names : str, tuple of str, or sequence of them
            Candidates named by label (``"a+b"``) or by their blocks (``("b", "a")``).

        Returns
        -------
        list of str
            The candidates' labels, in the order given.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.resolve_candidates([("b", "a"), "a"])
        ['a+b', 'a']
        """
        return resolve_candidates(self.stages.candidates.pool, names)

    def tau_hat(self, correct: str | Sequence[str | Sequence[str]]) -> float:
        """Total weight on the correctly specified candidates (the paper's Theorem 2: tends to 1).

        Parameters
        ----------
        correct : str, tuple or sequence of them
            The correctly specified candidates, e.g. known in a simulation.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> a, b = rng.normal(size=(200, 1)), rng.normal(size=(200, 1))
        >>> data = {"y": 2 * a[:, 0] + rng.normal(size=200), "a": a, "b": b}
        >>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
        >>> res.tau_hat(["a", "a+b"]) > 0.99
        True
        """
        return float(self.weights[self.resolve_candidates(correct)].sum())

    def reweight(self, loss: str) -> PearlResults:
        """The same fit with weights re-solved under another surrogate loss, without new CV fits.

        Parameters
        ----------
        loss : str
            A surrogate loss for this family (see :func:`pearlstats.fit`).

        Returns
        -------
        PearlResults
            Its weights are the fit's weight stage re-run with *loss*: shrunk as
            the fit's were (``weight_shrinkage``), so ``reweight(res.loss)``
            gives ``res.weights``. With ``cv_repeats > 1`` only the first fold
            draw's out-of-fold predictions are stored, and a
            :class:`~pearlstats.exceptions.PearlWarning` says the weights use that draw alone.
            With observation weights the new loss is their weighted mean, as the fit's
            (losses they do not support, hinge and absolute, are refused by name).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.reweight("absolute").weights.round(3)
        a      1.0
        b      0.0
        a+b    0.0
        Name: weight, dtype: float64
        """
        new_loss = get_loss(loss, self.family)
        state = self.stages
        if state.response.row_weights is not None:  # the weighted mean of the new loss
            new_loss = RowWeightedLoss(new_loss.family, new_loss, state.response.row_weights,
                                       state.response.weight_type)
        if state.weight_options.cv_repeats > 1:
            warn(
                f"this fit's weights averaged {state.weight_options.cv_repeats} fold draws, but "
                "only the first draw's out-of-fold predictions are stored: the re-solved weights "
                "use that draw alone (refit with loss= for weights over every draw)",
                PearlWarning,
            )
        if state.partitions is not None:  # dask rows: the out-of-fold passes, another loss
            solution, entries = state.partitions.reweight(state.family, new_loss)
            return self._with_state(replace(state, loss=new_loss, solution=solution,
                                            ledger=tuple(entries)))
        # The fit's whole weight stage, shrinkage included: a plain simplex solve gave
        # unshrunk weights, so reweight(res.loss) differed from res.weights.
        _, solution, entries = solve_draw_weights(
            [state.output], state.response.y, state.candidates.pool, [state.folds], new_loss,
            state.weight_options.shrinkage, warn_failures=False,
            context=f"re-solving the weights of {fit_name(state)} with loss={loss!r}",
        )
        return self._with_state(
            replace(state, loss=new_loss, solution=solution, ledger=tuple(entries))
        )

    def loss_sensitivity(self, losses: Sequence[str] | None = None) -> pd.DataFrame:
        """Weights under several surrogate losses (candidates with a non-zero weight under any).

        Parameters
        ----------
        losses : sequence of str, optional
            Defaults to every loss the family supports (with observation weights or dask
            data, those the weights support there: squared, cross-entropy, Poisson deviance).

        Returns
        -------
        DataFrame
            Candidates x losses.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.loss_sensitivity().round(3)
           squared  absolute
        a    0.908       1.0
        b    0.092       0.0
        """
        names = self.stages.family.sensitivity_losses if losses is None else list(losses)
        if losses is None and (self.stages.response.row_weights is not None
                               or self.stages.partitions is not None):
            # by default, the losses that observation weights (and dask data) support
            names = [name for name in names if name in WEIGHTED_LOSSES]
        table = pd.DataFrame(
            {
                name: self.weights if name == self.loss else self.reweight(name).weights
                for name in names
            }
        )
        return table[(table > 0).any(axis=1)]

    def honest_risk(self, outer: int | str | np.ndarray = 5, seed: int | None = None) -> HonestRisk:
        """PEARL's own risk by nested cross-validation, as R's ``CV.SuperLearner``.

        Each outer fold is held out while the inner K-fold cross-validation
        and the weight solve are re-run on the remaining rows; every candidate
        refitted on those rows predicts the held-out fold. The summary shows
        the fit's own nested cross-validation (``res.honest``, ``honest=K`` of
        the fit), not this one, and warns when PEARL's honest risk there is more
        than one paired SE above that of MS (re-selected in each outer fold).

        Parameters
        ----------
        outer : int, "loo" or array-like, default 5
            Outer folds (stratified for classes).
        seed : int, optional
            Seeds the outer and inner folds; defaults to the fit's seed.

        Returns
        -------
        HonestRisk
            ``.risk`` (risk and SE of PEARL, MS and every candidate), ``.table``,
            ``.fold_weights``, ``.best_candidate``, ``.excess_over(strategy)``
            (PEARL's risk minus a strategy's, and its paired SE).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> nested = res.honest_risk(outer=3)
        >>> nested.risk.round(3)
                     risk     se
        PEARL       0.990  0.240
        MS          1.042  0.242
        SA-FRL      1.081  0.201
        SA-cand     1.041  0.212
        Fusion      1.136  0.260
        Best        1.042  0.242
        AICc        1.048  0.243
        BIC         1.044  0.243
        Covariates  1.575  0.226
        Null        1.779  0.287
        a           1.042  0.242
        b           1.555  0.222
        a+b         1.136  0.260
        """
        self._last_honest_risk = evaluation.honest_risk(self, outer=outer, seed=seed)
        return self._last_honest_risk

    @property
    def last_honest_risk(self) -> HonestRisk | None:
        """The latest outer cross-validation, or None: :meth:`honest_risk`'s, or the fit's own
        behind :attr:`honest` (run when :attr:`honest` or the summary is first read, which
        then replaces an earlier :meth:`honest_risk` result here; keep that one in a variable).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> nested = res.honest_risk(outer=3)
        >>> res.last_honest_risk is nested
        True
        """
        return self._last_honest_risk

