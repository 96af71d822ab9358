"""The risks of PEARL and the paper's baselines: in-sample (cross-validated) and honest.

:class:`StrategyRisks` is the part of :class:`~pearlstats.PearlResults`
that scores the strategies of :mod:`pearlstats.weights.baselines`:
``strategy_weights`` (each strategy as a weight vector over the candidates),
``baselines`` (their CV risks, on the out-of-fold predictions the weights
were chosen from) and ``honest`` (their risks by nested cross-validation, the
whole procedure re-run inside each outer fold).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .._warnings import warn
from ..backends.lazy import computed
from ..design.splitters import Splits
from ..engines.intercept import response_intercept_predictions
from ..exceptions import AllCandidatesFailedError, FoldError, PearlWarning, ResponseError
from ..honest_se import NestedSEEstimate, nested_se
from ..nested import NestedCV, nested_cross_validation
from ..weights.baselines import NULL, STRATEGIES, combine, strategy_weights
from ..weights.information import CRITERIA, candidate_criteria
from ..weights.precision import exact_fit_notes, null_floor, risk_ratios
from . import evaluation
from .readonly import cached_table

__all__ = ["StrategyRisks", "honest_for_report", "honest_risk_for_report"]


@dataclass(frozen=True)
class _HonestOutcome:
    """What the honest re-runs gave: the table, or the reason there is none; a warning; the
    fit's own outer cross-validation (None on dask rows), whose warning the summary words."""

    table: pd.DataFrame | None
    failure: str | None
    warning: str | None
    nested_se: NestedSEEstimate | None = None
    risk: evaluation.HonestRisk | None = None


def honest_for_report(res: StrategyRisks) -> pd.DataFrame | None:
    """``res.honest`` without its warning, for a report whose notes say the same (the summary:
    its reader would otherwise get the message twice, once as a warning)."""
    table = res._honest_outcome.table
    return None if table is None else table.copy()


def honest_risk_for_report(res: StrategyRisks) -> evaluation.HonestRisk | None:
    """The outer cross-validation behind ``res.honest`` (``honest=K`` of the fit), whatever
    :meth:`honest_risk` ran since; None on dask rows or without an honest table."""
    return res._honest_outcome.risk


class StrategyRisks:
    """CV and honest risks of PEARL and every baseline (read through ``PearlResults``)."""

    @cached_table
    def honest(self) -> pd.DataFrame | None:
        """Honest risk of PEARL and every baseline, from nested cross-validation.

        Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best, AICc, BIC, Covariates and
        Null (the intercept-only model fitted on each outer training set); columns ``risk``,
        ``se``, ``ratio`` (PEARL's risk / the row's, on the same held-out
        rows) and ``ratio_se`` (paired delta-method SE). Inside each outer fold
        the whole procedure is re-run on the other rows — PEARL re-solves its
        weights, MS re-selects, Best re-chooses — so, unlike :attr:`baselines`,
        a ratio above 1 is possible. Computed on first use (about ``honest``
        times the cross-validation's cost); None when the fit was made with
        ``honest=False`` or the nested cross-validation could not run (then
        :attr:`honest_failure` says why). With ``honest_se="naive"`` (default)
        ``se`` is SD / sqrt(n) of the held-out row losses, which treats rows as
        independent and under-covers at small n; with ``honest_se="nested"``
        ``risk``, ``se``, ``ratio`` and ``ratio_se`` are Bates, Hastie &
        Tibshirani's nested-CV estimates (:mod:`pearlstats.honest_se`; columns
        ``bias``, ``mse``, ``se_bound`` and ``se_mc_error`` added; the splits are
        kept in :attr:`nested_se`); their interval ``risk +- 1.96 se`` targets the
        risk of the procedure fitted on all n rows (and covers the expected risk
        over data sets at least as well), and their ``ratio_se`` is a heuristic
        (:class:`~pearlstats.NestedSE`). Column ``note`` says why a number is NaN: a
        risk 0 to the response's precision (an exact fit) has no ratio
        (:mod:`pearlstats.weights.precision`), a nested-CV risk whose bias
        correction falls below 0 is undefined (a risk is never negative), a
        strategy whose candidates failed has no risk; else it is ``""``.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.honest[["risk", "ratio", "ratio_se"]].round(3)
                     risk  ratio  ratio_se
        PEARL       1.014  1.000     0.000
        MS          1.013  1.001     0.025
        SA-FRL      1.123  0.903     0.088
        SA-cand     1.063  0.954     0.063
        Fusion      1.052  0.964     0.044
        Best        1.013  1.001     0.025
        AICc        1.015  1.000     0.024
        BIC         1.014  1.001     0.024
        Covariates  1.600  0.634     0.119
        Null        1.785  0.568     0.115
        """
        outcome = self._honest_outcome
        if outcome.failure is not None:
            warn(f"the nested cross-validation for res.honest could not run: {outcome.failure}",
                 PearlWarning)
        elif outcome.warning:
            warn(f"{outcome.warning}; consider a simpler candidate set or more rows", PearlWarning)
        return outcome.table

    @cached_property
    def _honest_outcome(self) -> _HonestOutcome:
        """The honest table, or why it could not be computed; computed once, warning nothing
        (:attr:`honest` warns when read, :attr:`honest_failure` does not)."""
        if self._state.honest is False:
            return _HonestOutcome(None, None, None)
        try:
            table, warning, estimate = self._honest_table()
        except (FoldError, AllCandidatesFailedError, ResponseError) as err:
            # ResponseError: an outer training set's gaussian response is constant
            return _HonestOutcome(None, str(err), None)
        # the fit's own re-runs (honest=K), not whatever res.honest_risk(...) ran last
        risk = None if self._state.partitions is not None else self._last_honest_risk
        return _HonestOutcome(table, None, warning, estimate, risk)

    @property
    def nested_se(self) -> NestedSEEstimate | None:
        """Bates, Hastie & Tibshirani's nested-CV estimate behind :attr:`honest` (its splits).

        None with ``honest_se="naive"`` (the default) or when :attr:`honest` is None.
        Holds every split's outer and inner row losses, so ``res.nested_se.running()``
        shows the risk and SE after 1..R splits (has the estimate settled?) and
        ``res.nested_se.using(r)`` the table R = r splits would give; the table's
        ``se_bound`` says where the naive lower bound (or the sqrt(K) upper bound) set
        the SE, ``se_mc_error`` the SE's relative Monte Carlo error from R splits.
        Computed with :attr:`honest` (on first use of either).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> rng = np.random.default_rng(0)
        >>> blocks = {"a": rng.standard_normal((60, 2)), "b": rng.standard_normal((60, 2))}
        >>> data = pd.DataFrame({"y": blocks["a"][:, 0] + rng.standard_normal(60)})
        >>> res = pearl.fit("y ~ block(a) + block(b)", data, blocks=blocks, seed=0,
        ...                 honest_se=pearl.NestedSE(repeats=4))
        >>> res.nested_se.repeats
        4
        >>> bool(np.allclose(res.nested_se.table["se"], res.honest["se"]))
        True
        """
        return self._honest_outcome.nested_se

    def _honest_table(self) -> tuple[pd.DataFrame, str | None, NestedSEEstimate | None]:
        """The honest table, the warning against MS (None) and the nested-SE estimate
        (None with ``honest_se="naive"``), on either backend."""
        state = self._state
        if state.partitions is not None:  # dask rows: the re-runs are passes over them too
            table = state.partitions.honest(state.honest, state.seed, state.family,
                                            state.loss, state.ridge)
            excess, se = table.attrs["excess_over_ms"]
            return table, evaluation.ms_warning(excess, se, table), None
        result = evaluation.honest_risk(self, nested=self._nested)
        self._last_honest_risk = result
        if state.honest_se == "naive":
            return result.table, result.warning_against_ms(), None
        # Bates et al.'s nested CV (honest_se.py): the warning compares the risks shown
        estimate = nested_se(state, self._nested, state.honest_se)
        table = estimate.table.join(result.table[["kkt_gap", "certified"]])
        return table, evaluation.ms_warning(*estimate.excess_over("MS"), table), estimate

    @cached_property
    def _nested(self) -> NestedCV:
        """The nested cross-validation shared by :attr:`honest` and prediction intervals."""
        return nested_cross_validation(self._state, outer=self._state.honest or 5,
                                       option="honest")

    @property
    def honest_outer_folds(self) -> int | None:
        """The number of outer folds the fit's honest re-runs used (None without them).

        ``honest=K`` asks for K; with fold labels or groups the re-runs deal the given folds
        to ``min(K, folds)`` outer folds, so fewer when fewer are given. On dask rows, K.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> rng = np.random.default_rng(3)
        >>> data = {"y": rng.normal(size=30), "a": rng.normal(size=(30, 2)),
        ...         "b": rng.normal(size=(30, 2))}
        >>> res = pearl.fit("y ~ block(a) + block(b)", data, seed=1, honest=5,
        ...                 cv=np.arange(30) % 3)
        >>> res.honest_outer_folds
        3
        """
        outcome = self._honest_outcome
        if outcome.table is None:
            return None
        return self._state.honest if outcome.risk is None else outcome.risk.n_outer

    @property
    def honest_failure(self) -> str | None:
        """Why :attr:`honest` is None although the fit asked for it (else None).

        Runs the nested cross-validation if :attr:`honest` has not (once, shared with it),
        without its warning.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> print(res.honest_failure)  # the nested cross-validation ran
        None
        """
        return self._honest_outcome.failure

    @cached_table
    def strategy_weights(self) -> pd.DataFrame:
        """Weights each strategy (PEARL and the paper's baselines) puts on every candidate.

        Columns index pool candidates first, then the single-block / fusion
        candidates fitted only for the baselines.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.strategy_weights.round(2)
                       a     b   a+b  covariates only
        PEARL       0.91  0.09  0.00              0.0
        MS          1.00  0.00  0.00              0.0
        SA-FRL      0.50  0.50  0.00              0.0
        SA-cand     0.33  0.33  0.33              0.0
        Fusion      0.00  0.00  1.00              0.0
        Best        1.00  0.00  0.00              0.0
        AICc        0.85  0.00  0.15              0.0
        BIC         0.96  0.00  0.04              0.0
        Covariates  0.00  0.00  0.00              1.0
        """
        labels = [c.label for c in self._all_candidates]
        table = strategy_weights(
            self._solution.weights, self._all_candidates, len(self._pool),
            computed(self._candidate_losses.mean(axis=0))[0], self._failed,
            self.information_criteria,
        )
        return pd.DataFrame(table, index=labels).T.loc[list(STRATEGIES)]

    @cached_property
    def information_criteria(self) -> dict | None:
        """``llf``, AIC, AICc and BIC of every candidate fitted on all rows (arrays over the
        pool, then the baseline-only candidates, NaN there and where a candidate failed);
        None for a downstream network (:mod:`pearlstats.weights.information`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> sorted(res.information_criteria)
        ['AIC', 'AICc', 'BIC', 'llf']
        """
        state, pool = self._state, self._pool
        if not self._family.likelihood:
            return None
        fitted = [j for j in range(len(pool)) if not self._failed[j]]
        means = self.candidate_predictions_for(
            state.design.X, [pool[j].label for j in fitted], state.response.offset)
        return candidate_criteria(
            self._family.name, state.response,
            {j: means[pool[j].label] for j in fitted},
            [c.n_params for c in self._all_candidates])

    @cached_property
    def _strategy_losses(self) -> tuple[list, np.ndarray]:
        """The strategies' names (then Null) and their per-row losses (n, S), lazy on dask."""
        weights = self.strategy_weights.to_numpy()
        names = list(self.strategy_weights.index) + [NULL]
        columns = [self._pointwise(combine(self._predictions, w, self._loss)) for w in weights]
        # The reference row: the intercept-only model on the same folds (no strategy weights it)
        columns.append(self._pointwise(self._null_predictions()))
        return names, np.stack(columns, axis=1)

    def _null_predictions(self) -> np.ndarray:
        partitions = self._state.partitions
        if partitions is not None:  # dask rows: each fold's mean response, from the passes
            return partitions.null_predictions(self._folds)
        spec = self._cv_spec
        trains = spec.train if isinstance(spec, Splits) else None  # splits trained on some rows
        return response_intercept_predictions(self._response, self._family.name, self._folds,
                                              trains)

    @cached_table
    def baselines(self) -> pd.DataFrame:
        """CV risk of PEARL and each baseline, its SE, and the risk ratio PEARL / baseline.

        The last row, Null, is the family's intercept-only model (mean, class
        frequencies or mean rate, with the fit's offsets and observation
        weights) on the same folds: the risk of ignoring every input. It is a
        reference, not a candidate, so its ``risk_ratio`` may exceed 1.

        ``ratio_se`` is a paired (delta-method) standard error of the ratio,
        from per-row loss differences on the same rows. With observation weights the
        risks are weighted means and the SEs those of
        :func:`~pearlstats.observation_weights.mean_se`. ``note`` says why a number is
        NaN (``""`` otherwise): a risk 0 to the response's precision has no ratio
        (:mod:`pearlstats.weights.precision`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> res = pearl.datasets.example_fit()
        >>> res.baselines[["cv_risk", "risk_ratio", "candidate"]].round(3)
                    cv_risk  risk_ratio        candidate
        PEARL         1.008       1.000     2 candidates
        MS            1.013       0.994                a
        SA-FRL        1.123       0.897     2 candidates
        SA-cand       1.063       0.948     3 candidates
        Fusion        1.052       0.958              a+b
        Best          1.013       0.994                a
        AICc          1.013       0.994     3 candidates
        BIC           1.013       0.994     3 candidates
        Covariates    1.600       0.630  covariates only
        Null          1.785       0.564   intercept only
        """
        names, losses = self._strategy_losses
        risk, se = computed(losses.mean(axis=0), self._mean_se(losses))
        floor = null_floor(self._loss.name, names, risk)
        ratio = risk_ratios(risk, names.index("PEARL"), floor)
        # delta method for mean(a)/mean(b) with paired rows (NaN where the ratio is undefined)
        pearl = losses[:, names.index("PEARL")]
        divisor = np.where(np.isfinite(ratio), risk, np.nan)
        influence = (pearl[:, None] - np.nan_to_num(ratio)[None, :] * losses) / divisor[None, :]
        (ratio_se,) = computed(self._mean_se(influence))
        return pd.DataFrame({
            "cv_risk": risk, "se": se, "risk_ratio": ratio, "ratio_se": ratio_se,
            "candidate": [self._strategy_label(name) for name in names],
            "note": exact_fit_notes(risk, floor),
        }, index=names)

    def _strategy_label(self, name: str) -> str:
        if name == NULL:
            return "intercept only"
        weights = self.strategy_weights.loc[name]
        if weights.isna().any():
            if name == "Covariates" and all(c.blocks for c in self._all_candidates):
                return "no intercept or covariate"
            return "failed" if self._family.likelihood or name not in CRITERIA else "no likelihood"
        chosen = weights.index[weights.to_numpy() > 0]
        return chosen[0] if len(chosen) == 1 else f"{len(chosen)} candidates"

