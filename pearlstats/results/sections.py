"""The summary's sections as statsmodels ``SimpleTable`` values, and the notes under them.

Each function reads a :class:`~pearlstats.PearlResults` and returns one
section (title, headers, stubs, cells); :mod:`~pearlstats.results.text_layout`
and :mod:`~pearlstats.results.latex` lay them out. Number cells are
:class:`~pearlstats.results.formatting.Number` values, so LaTeX can format a
whole column one way. :func:`summary_notes` builds every note in one place.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from statsmodels.iolib.table import SimpleTable

from ..design.splitters import Splits
from ..engines._common import separation_reason
from ..exceptions import OptionError, PearlWarning
from ..honest_se import honest_se_note
from ..observation_weights import few_observations_note
from ..weights.baselines import DEFINITIONS, NULL, NULL_DEFINITION
from .averaging import active_labels, candidate_ridge, unidentified
from .covariance import cov_spec_of
from .dispersion import overdispersion_note
from .formatting import (
    Label,
    Number,
    format_number,
    format_ridge,
    html_escape,
    latex_escape,
    number_cell,
    p_value_cell,
)

if TYPE_CHECKING:
    from .core import PearlResults

MAX_LEDGER_ROWS = 20
# Above this many block columns the coefficient section shows the covariates only.
# Loss names are options (loss="cross_entropy"); every form of the summary says them in words.
_LOSS_WORDS = {"squared": "squared error", "cross_entropy": "cross-entropy",
               "absolute": "absolute error"}


def _table(rows, headers, stubs, title) -> SimpleTable:
    table = SimpleTable(rows, headers=headers, stubs=stubs, title=title)
    # SimpleTable turns headers into plain str; keep Labels for their LaTeX / HTML forms
    for cell, header in zip(list(table[0])[1:] if stubs else list(table[0]), headers):
        cell.data = header
    return table


def _words(text: str) -> str:
    """A loss option's name in words (``cross_entropy``: cross-entropy), the same in the text,
    LaTeX and HTML (the HTML showed the option's name, LaTeX the words)."""
    return _LOSS_WORDS.get(text, text.replace("_", " "))


def separation_ridges(res: PearlResults) -> dict[str, float]:
    """Candidates refitted with a larger ridge than the fit's because their classes separate."""
    chosen = getattr(res.stages.family, "candidate_ridges", {})
    return {label: float(value) for label, value in chosen.items() if value > res.ridge}


def ridge_text(res: PearlResults) -> str:
    """The ridges actually used: the fit's, and the larger ones separation refits needed.

    Examples of the text: ``0``; ``0; 0.0001 for 2 candidates refitted after separation``.
    """
    counts = pd.Series(separation_ridges(res), dtype=float).value_counts().sort_index()
    parts = [format_ridge(res.ridge)]
    parts += [f"{format_ridge(value)} for {count} candidate{'s' * (count > 1)} refitted after "
              "separation" for value, count in counts.items()]
    return "; ".join(parts)


def header_table(res: PearlResults) -> SimpleTable:
    """The fit: formula, family, losses, blocks; observations, folds, J, seed, ridges."""
    blocks = ", ".join(f"{name} ({dim})" for name, dim in res.block_dims.items())
    cv = "LOO" if res.n_folds == res.nobs else f"{res.n_folds}-fold"
    if isinstance(res.stages.cv_spec, Splits):  # TimeSeriesSplit: splits, not folds
        cv = f"{res.n_folds} splits"
    repeats = res.stages.weight_options.cv_repeats
    if repeats > 1:  # the weights minimise the loss over every draw, not over the folds shown
        cv += f" x {repeats} draws"
    left = [
        ("Formula:", Label(res.formula, latex=rf"\texttt{{{latex_escape(res.formula)}}}")),
        ("Family:", res.family),
        ("Surrogate loss:", _words(res.loss)),
        ("Loss it stands for:", res.original_loss),
        (f"Blocks (M = {len(res.block_dims)}):", blocks),
    ]
    right = [
        ("No. observations:", str(res.nobs)),
        ("Cross-validation:", cv),
        ("Candidates (J):", str(len(res.weights))),
        ("Seed:", str(res.seed)),
        ("Ridge:", ridge_text(res)),
    ]
    rows = [[a, b, c, d] for (a, b), (c, d) in zip(left, right)]
    if res.cov_type != "nonrobust":  # the coefficient panel's note names the default
        rows.append(["Covariance type:", res.cov_type, "", ""])
    dispersion = cov_spec_of(res).describe_scale()
    if dispersion:  # the family's own (1, or a gaussian fit's estimate) goes unsaid
        rows.append(["Dispersion:", dispersion, "", ""])
    if len(res.dropped_rows):
        rows.append(["Dropped rows:", str(len(res.dropped_rows)), "", ""])
    response = res.stages.response
    if response.weighted:  # risks are weighted means, candidates fitted with the offset
        weights = "none" if response.weight_type is None else response.weight_type
        offset = "none" if response.offset is None else response.offset_source or "given"
        rows.append(["Row weights:", weights, "Offset:", offset])
    return SimpleTable(rows, title="PEARL model averaging")


def weights_table(res: PearlResults) -> SimpleTable:
    """Every candidate with non-zero weight, largest weight first."""
    weights = res.weights
    risk, se = res.cv_risk, res.cv_risk_se
    rank = risk.rank(method="min")
    n_blocks = res.candidate_blocks.map(len)
    order = weights[weights > 0].sort_values(ascending=False, kind="stable").index
    rows = [
        [str(n_blocks[label]), str(res.n_params[label]), number_cell(weights[label]),
         number_cell(risk[label]), number_cell(se[label]), str(int(rank[label]))]
        for label in order
    ]
    # a multinomial candidate's n_params counts one class equation (C - 1 of them are fitted)
    parameters = "params/class" if res.family == "multinomial" else "parameters"
    headers = ["blocks", parameters, "weight", "CV risk", "SE", "rank"]
    return _table(rows, headers, list(order), "Candidates with non-zero weight")


_LONG_LABEL = 40  # characters: a longer label of MS is not repeated in the LaTeX table


def _honest(res: PearlResults) -> pd.DataFrame | None:
    """``res.honest`` without its warning: the summary's notes say what it would."""
    from .risks import honest_for_report  # here: risks imports evaluation, which imports us

    return honest_for_report(res)


def strategy_footnotes(res: PearlResults) -> dict[str, str]:
    """Why a row of the strategies panel shows ``--``: strategy -> reason (rows without
    ``--`` are absent). The reasons are the tables' ``note`` column; a ratio missing because
    PEARL's risk is missing says so."""
    honest = _honest(res)
    shown = (honest[["risk", "se", "ratio", "ratio_se"]] if honest is not None
             else pd.DataFrame())
    baselines = res.baselines
    cv = baselines[["cv_risk", "se", "risk_ratio", "ratio_se"]]
    # the honest panel shows the CV risk beside the honest numbers; the CV panel all four
    table = shown.join(cv[["cv_risk"]]) if honest is not None else cv
    notes = honest["note"] if honest is not None else baselines["note"]
    footnotes = {}
    for name in table.index:
        if not table.loc[name].isna().any():
            continue
        own = notes.get(name, "") or baselines.loc[name, "note"]
        if not own and name != "PEARL" and notes.get("PEARL", ""):
            own = f"ratio undefined because PEARL's {notes['PEARL']}"
        footnotes[name] = own or "not computed (see the failure ledger, res.failures)"
    return footnotes


def _footnote_numbers(footnotes: dict[str, str]) -> dict[str, int]:
    """Strategy -> its footnote's number, one number per distinct reason (in row order)."""
    reasons = list(dict.fromkeys(footnotes.values()))
    return {name: reasons.index(reason) + 1 for name, reason in footnotes.items()}


def strategies_table(res: PearlResults) -> SimpleTable:
    """Honest (nested-CV) risks when available; else the in-sample CV risks, labelled optimistic.

    A row with a ``--`` cell gets a mark ``[k]`` and a note (:func:`strategy_footnotes`)."""
    honest = _honest(res)
    uses = dict(res.baselines["candidate"])
    every = "+".join(res.block_dims)
    # in a paper's table, "all M blocks" rather than M names (one block is named: "all 1 blocks")
    if uses.get("Fusion") == every and len(res.block_dims) > 1:
        uses["Fusion"] = Label(every, latex=f"all {len(res.block_dims)} blocks")
    if len(uses["MS"]) > _LONG_LABEL:  # MS is the rank-1 candidate, named in the panel above
        uses["MS"] = Label(uses["MS"], latex="the rank-1 candidate")
    ratio = Label("PEARL/this", latex="PEARL/this")  # the notes' words, in every form
    numbers = _footnote_numbers(strategy_footnotes(res))
    marks = {name: f"{name} [{k}]" for name, k in numbers.items()}
    shown = _shown_strategies(res)
    if honest is not None:
        rows = [
            [*(number_cell(honest.loc[name, column]) for column in ("risk", "se", "ratio",
                                                                    "ratio_se")),
             number_cell(res.baselines.loc[name, "cv_risk"]), uses[name]]
            for name in shown
        ]
        nested = res.stages.honest_se != "naive"
        headers = ["honest risk", "SE (nested CV)" if nested else "SE (naive)", ratio,
                   "ratio SE", "CV risk*", "uses"]
        title = f"Strategies (honest risk: {_honest_outer_words(res)} nested cross-validation)"
        return _table(rows, headers, [marks.get(name, name) for name in shown], title)
    table = res.baselines.loc[shown]
    rows = [
        [*(number_cell(value) for value in (r.cv_risk, r.se, r.risk_ratio, r.ratio_se)),
         r.candidate]
        for r in table.itertuples()
    ]
    headers = ["CV risk*", "SE", ratio, "ratio SE", "uses"]
    return _table(rows, headers, [marks.get(name, name) for name in table.index],
                  "Strategies (in-sample CV risk, optimistic)")


def _has_covariates(res: PearlResults) -> bool:
    """Whether the formula has terms besides the intercept in every candidate."""
    design = res.stages.design
    return any(name != "Intercept" for name in design.column_names[:design.n_covariates])


def _honest_outer_words(res: PearlResults) -> str:
    """"K-fold" of the fit's own outer re-runs; with fold labels or groups they deal the given
    folds, so fewer than honest= when there are fewer given folds: said so."""
    asked, used = res.stages.honest, res.honest_outer_folds
    if used == asked:
        return f"{used}-fold"
    return f"{used}-fold (of {asked} asked: the given folds)"


def _shown_strategies(res: PearlResults) -> list:
    """The strategies' rows of the summary: Covariates only when the formula has covariates
    (without, it is the intercept-only model, the Null row below it)."""
    return [name for name in res.baselines.index
            if name != "Covariates" or _has_covariates(res)]


def importance_table(res: PearlResults) -> SimpleTable:
    """Each block's total weight, and the number of candidates (that did not fail) holding it."""
    # Candidates that failed have weight 0 and no say: counted, they would overstate a block's
    # presence in the pool the weights were chosen from.
    counts = res.block_membership[~res.failed].sum(axis=0)
    rows = [[number_cell(value), str(int(counts[name]))]
            for name, value in res.block_importance.items()]
    return _table(rows, ["importance", "in candidates"], list(res.block_importance.index),
                  "Block importance (total weight of the candidates with the block; "
                  "candidates that failed not counted)")


def diagnostics_table(res: PearlResults, correct: object) -> SimpleTable:
    """How spread the weights are, whether the solver reached its optimum, and tau-hat."""
    diagnostics = res.diagnostics
    rows = [
        [Label("Effective no. of candidates (1/sum w^2)",
               latex=r"Effective number of candidates ($1/\sum_j w_j^2$)",
               html="Effective no. of candidates (1/&sum;<sub>j</sub> w<sub>j</sub><sup>2</sup>)"),
         number_cell(diagnostics["effective_candidates"])],
        ["Weight entropy (nats)", number_cell(diagnostics["weight_entropy"])],
        ["Largest weight", number_cell(diagnostics["max_weight"])],
        ["Non-zero weights", str(diagnostics["n_nonzero"])],
        ["Solver KKT gap", Number(f"{diagnostics['kkt_gap']:.3e}", diagnostics["kkt_gap"])],
        ["Weight solver", diagnostics["weight_solver"]],
    ]
    if correct is not None:
        labels = res.resolve_candidates(correct)
        listed = ", ".join(labels)
        tau = Label(f"tau-hat (weight on {listed})",
                    latex=rf"$\hat\tau$ (weight on {latex_escape(listed)})",
                    html=f"&tau;&#770; (weight on {html_escape(listed)})")
        rows.append([tau, number_cell(res.tau_hat(labels))])
    return SimpleTable(rows, headers=["", "value"], title="Consistency diagnostics")


def stability_table(res: PearlResults) -> SimpleTable:
    """The weights re-solved on each fold complement (or bootstrap resample): mean and spread."""
    stability = res.diagnostics["stability"]
    shown = stability[(stability["weight"] > 0) | (stability["mean"] > 0)]
    shown = shown.sort_values(["weight", "mean"], ascending=False, kind="stable")
    rows = [[number_cell(r.weight), number_cell(r.mean), number_cell(r.spread)]
            for r in shown.itertuples()]
    resamples = res.diagnostics["stability_resamples"]
    title = f"Weights re-solved on {resamples} (not a standard error)"
    spread = "fold-to-fold spread" if "fold" in resamples else "spread"
    return _table(rows, ["weight", "mean", spread], list(shown.index), title)


def _ridge_note(res: PearlResults) -> str | None:
    """The coefficients' ridge caveat in words (the ridges, which candidates, why)."""
    ridges = {label: candidate_ridge(res, label) for label in active_labels(res)}
    penalised = [label for label, value in ridges.items() if value > 0]
    if not penalised:
        return None
    values = ", ".join(sorted({format_ridge(ridges[label]) for label in penalised}))
    which = (f"Candidate {penalised[0]} was" if len(penalised) == 1
             else f"Candidates {', '.join(penalised)} were")
    note = (f"{which} fitted with a ridge penalty ({values}): "
            "their coefficients are shrunk towards 0, and the standard errors describe the "
            "spread of the penalised estimator, not its bias, so the intervals need not cover "
            "the true coefficients.")
    separated = [label for label in penalised if ridges[label] > res.ridge]
    if separated:
        return note + (f" The ridge was needed because {separation_reason(res.family)}: "
                       "unpenalised estimates do not exist.")
    return note + " A fit without a ridge gives valid intervals."


COEFFICIENT_NOTE = (
    "Coefficients: the terms in every candidate, averaged over the candidates with their "
    "weights; SE by Burnham and Anderson's revised formula (2002, eq. 6.12; MuMIn's default), "
    "the weights and the candidate set taken as fixed. The 95% intervals estimate that "
    "fixed-weight average, so they do not include the sampling variability of the weights. "
    "Intervals for new rows are another thing: prediction intervals (CV+) cover a new response "
    "with about the stated probability on average over new rows, not at each x.")
BLOCK_NOTE = (
    " Block columns ({average} average{which}): a block column's coefficient means different "
    "things in candidates with different other blocks, so this average is a summary, given "
    "without an interval; each candidate's own estimates and intervals are reported per "
    "candidate.")


def _block_rows(res: PearlResults, average: str) -> tuple[list, list, str]:
    """Stubs and cells of the block columns' averaged coefficients (no interval), and the note."""
    table = res.coef_table(terms="all", average=average)
    blocks = [name for name in table.index if name not in set(res.params.index)]
    rows = [[number_cell(table.loc[name, "coef"]), number_cell(table.loc[name, "std err"]),
             "", "", "", "", number_cell(table.loc[name, "weight"])] for name in blocks]
    which = (", over the candidates that have the column, weights renormalised"
             if average == "conditional" else ", 0 in a candidate without the column")
    return blocks, rows, BLOCK_NOTE.format(average=average, which=which) if blocks else ""


TEST_NOTE = (" Covariance type: {cov_type}. {statistic} and P>|{statistic}| test each "
             "coefficient against 0 by the candidates' joint covariance, weights fixed, "
             "without the spread between candidates that SE adds.")


def _tests(res: PearlResults, shown: list) -> tuple[dict, str, str]:
    """Each term's (t or z, p-value) cells, the statistic's name and the note on them."""
    statistic = "t" if res.family == "gaussian" else "z"
    try:
        t, p = res.tvalues, res.pvalues
    except OptionError:  # no joint covariance for this fit (e.g. a wide design)
        return {name: ["", ""] for name in shown}, statistic, ""
    cells = {name: [number_cell(t[name]), p_value_cell(p[name])] for name in shown}
    dispersion = cov_spec_of(res).describe_scale()
    cov_type = f"{res.cov_type}, dispersion {dispersion}" if dispersion else res.cov_type
    note = TEST_NOTE.format(statistic=statistic, cov_type=cov_type)
    return cells, statistic, note + overdispersion_note(res)


def coefficients_table(res: PearlResults, blocks: bool | str | None
                       ) -> tuple[SimpleTable | None, str]:
    """Averaged coefficients of the terms in every candidate; block columns on request.

    *blocks*: None or False for the common terms only; True or ``"conditional"``
    adds the block columns' conditional (subset) average, ``"full"`` their full
    average, each without an interval.
    """
    if res.family == "multinomial":
        return None, ("Model-averaged coefficients: a multinomial fit has one set per class, "
                      "not tabulated in this summary (the results' params hold them, by "
                      "class).")
    average = "conditional" if blocks is True else blocks or None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)  # the ridge caveat is the note below
        try:
            params, bse, interval = res.params, res.bse, res.conf_int()
            extra = _block_rows(res, average) if average else ([], [], "")
        except OptionError as err:  # e.g. a downstream without coefficients
            return None, f"Model-averaged coefficients are not available: {err}"
    shown = list(params.index)
    note = COEFFICIENT_NOTE + extra[2]
    if not average and len(res.stages.design.column_names) > len(shown):
        note += (" Block columns are not shown: each candidate's own coefficients are "
                 "reported per candidate, and the summary's coefficients option adds their "
                 "conditional average.")
    ridge = _ridge_note(res)
    if ridge:
        note += f" {ridge}"
    missing = unidentified(res)
    if missing:
        note += (" Not identified (shown as --): " + "; ".join(
            f"{term} in {', '.join(map(str, labels))}" for term, labels in missing.items())
            + ": those candidates' columns are linearly dependent on all rows, so the split of "
            "the effect between these terms is arbitrary.")
    if not shown and not extra[0]:
        return None, note
    tests, statistic, test_note = _tests(res, shown)
    rows = [[number_cell(params[name]), number_cell(bse[name]), *tests[name],
             number_cell(interval.loc[name, "lower"]), number_cell(interval.loc[name, "upper"]),
             number_cell(1.0)]
            for name in shown] + extra[1]
    headers = ["coef", "SE", statistic, f"P>|{statistic}|", "[0.025", "0.975]", "sum w"]
    note += test_note
    return _table(rows, headers, shown + extra[0], "Model-averaged coefficients"), note


def uncertainty_table(res: PearlResults, n_resamples: int) -> SimpleTable:
    """The refitting bootstrap's distribution of each non-zero weight: mean, spread, quantiles.

    Not standard errors or confidence intervals (see :meth:`PearlResults.weight_uncertainty`).
    """
    table = res.weight_uncertainty(n_resamples=n_resamples)
    shown = table[table["weight"] > 0].sort_values("weight", ascending=False, kind="stable")
    rows = [[number_cell(value) for value in (r.weight, r.mean, r.spread, r.q_lower, r.q_upper)]
            for r in shown.itertuples()]
    failed = table.attrs.get("n_failed", 0)
    counted = (f"{n_resamples - failed} of {n_resamples} resamples, {failed} could not be "
               "fitted" if failed else f"{n_resamples} resamples")
    title = (f"Bootstrap distribution of the weights (refitting bootstrap of the procedure, "
             f"{counted}; not standard errors)")
    return _table(rows, ["weight", "boot mean", "boot spread", "q0.025", "q0.975"],
                  list(shown.index), title)


def _is_refit(res: PearlResults, failures: pd.DataFrame) -> pd.Series:
    """Ledger rows of routine refits: a separated candidate kept with a larger ridge."""
    refitted = set(separation_ridges(res))
    return ((failures["kind"] == "separation") & ~failures["excluded"]
            & failures["candidate"].isin(refitted))


def _ledger_rows(failures: pd.DataFrame) -> pd.DataFrame:
    """One row per candidate, stage, kind and action, with the folds where it happened."""
    folds = failures["fold"].astype(object).where(failures["fold"].notna(), "all")
    grouped = failures.assign(fold=folds.astype(str)).groupby(
        ["candidate", "stage", "kind", "action", "excluded"], sort=False
    )["fold"].agg(", ".join)
    return grouped.reset_index()


def _capped(rows: pd.DataFrame, title: str) -> tuple[pd.DataFrame, str]:
    shown = rows.head(MAX_LEDGER_ROWS)
    if len(rows) > len(shown):
        title += f" (first {MAX_LEDGER_ROWS} of {len(rows)} rows)"
    return shown, title


def ledger_table(res: PearlResults) -> SimpleTable | None:
    """What failed (or was only noted) for which candidate, and what was done; None if nothing."""
    failures = res.failures
    failures = failures[~_is_refit(res, failures)]
    if not len(failures):
        return None
    shown, title = _capped(_ledger_rows(failures), "Failure ledger")
    body = [[r.fold, r.stage, r.kind, "yes" if r.excluded else "no", r.action]
            for r in shown.itertuples()]
    return _table(body, ["folds", "stage", "kind", "weight 0", "action"],
                  list(shown["candidate"]), title)


def refits_table(res: PearlResults) -> SimpleTable | None:
    """Candidates whose classes separate, kept by a refit with a larger ridge; None if none."""
    failures = res.failures
    failures = failures[_is_refit(res, failures)]
    if not len(failures):
        return None
    ridges = separation_ridges(res)
    shown, title = _capped(_ledger_rows(failures), "Refits")
    body = [[r.fold, r.stage, format_ridge(ridges[r.candidate]), r.action]
            for r in shown.itertuples()]
    return _table(body, ["folds", "stage", "ridge", "action"], list(shown["candidate"]), title)


def _ledger_notes(res: PearlResults) -> list[str]:
    failures = res.failures
    if not len(failures):
        return []
    refit = _is_refit(res, failures)
    notes = []
    if (~refit).any():
        excluded = sorted(set(failures.loc[failures["excluded"], "candidate"]))
        notes.append(f"Failure ledger: {int((~refit).sum())} event(s); excluded candidates "
                     f"(weight 0): {', '.join(excluded) or 'none'}.")
    if refit.any():
        count = len(set(failures.loc[refit, "candidate"]))
        notes.append(f"Refits: {count} candidate(s) without a maximum-likelihood estimate "
                     f"({separation_reason(res.family)}) refitted with a larger ridge (see Ridge "
                     "above); they take part in the weights as the others do.")
    return notes


def _tested_rows_note(res: PearlResults) -> list[str]:
    """The note of a splitter that tests some rows only (``TimeSeriesSplit``): which rows the
    cross-validated numbers are of."""
    spec = res.stages.cv_spec
    if not isinstance(spec, Splits):
        return []
    tested = len(spec.tested)
    which = (f"{spec.shortfall}: the candidates are refitted on all {res.nobs} rows."
             if tested == res.nobs else
             f"tested {tested} of {res.nobs} rows ({res.nobs - tested} never tested): the "
             "out-of-fold predictions, weights, CV risks and baselines are those of the tested "
             f"rows; the candidates are refitted on all {res.nobs}.")
    return [f"Cross-validation by {type(spec.splitter).__name__} {which}"
            + (" The honest risk's outer folds keep time order: each held-out block is scored by "
               "the procedure fitted on the rows before it"
               + (f" (less the splitter's gap of {spec.gap} rows)" if spec.gap else "")
               + ", and the first rows are never held out."
               if spec.time_ordered and res.stages.honest else "")]


def _honest_inner_note(res: PearlResults) -> str:
    """What the honest re-runs keep of the fit's folds, where they are not drawn afresh: given
    fold labels (a partition splitter, groups dealt into cv=K) stay as they are."""
    spec = res.stages.cv_spec
    # dask rows keep their hashed folds in the re-runs, as given labels are kept
    # (pearlstats.distributed.honest), so only in memory are cv=K folds drawn afresh
    if res.stages.partitions is None and isinstance(spec, (str, int, np.integer, Splits)):
        return ""  # K-fold or LOO drawn afresh; a splitter re-run on the outer training rows
    return (f" (its outer folds are whole folds of the fit's {res.n_folds}, at most "
            f"{res.n_folds}, and its inner folds the other folds of the fit, as given: a "
            "partition splitter or groups dealt into folds is not re-run)")


def zero_weight_note(zero: int, total: int, failed: int = 0) -> str:
    """The note on the candidates of zero weight, in words ("0 of 31 candidates have zero
    weight" read as a count of nothing; "0 of 1 candidates" as a plural of one).

    Examples
    --------
    >>> zero_weight_note(0, 31), zero_weight_note(0, 1)
    ('No candidate has zero weight.', 'No candidate has zero weight.')
    >>> zero_weight_note(1, 3), zero_weight_note(5, 31, failed=2)
    ('1 of 3 candidates has zero weight.', '5 of 31 candidates have zero weight (2 of them \
failed in cross-validation).')
    >>> zero_weight_note(1, 3, failed=1)
    '1 of 3 candidates has zero weight (it failed in cross-validation).'
    """
    if not zero:
        return "No candidate has zero weight."
    which = "candidate" if total == 1 else "candidates"
    note = f"{zero} of {total} {which} {'has' if zero == 1 else 'have'} zero weight"
    if not failed:
        return note + "."
    return note + (" (it failed in cross-validation)." if zero == 1 == failed
                   else f" ({failed} of them failed in cross-validation).")


def summary_notes(res: PearlResults) -> list[str]:
    """Every note under the tables, in words (the coefficients' own note comes with them)."""
    weights = res.weights
    failed = int(res.failed.sum())
    notes = [zero_weight_note(int((weights == 0).sum()), len(weights), failed)]
    notes += _ledger_notes(res)
    notes += _tested_rows_note(res)
    response = res.stages.response  # (dask fits refuse observation weights)
    few = response.row_weights is not None and few_observations_note(
        response.row_weights, response.weight_type, int(res.n_params.max()))
    if few:
        notes.append(f"Note: {few[0].upper()}{few[1:]}.")
    notes.append(
        "Strategies: "
        + "; ".join(f"{name} = {meaning}" for name, meaning in DEFINITIONS.items()
                    if name in _shown_strategies(res))
        + f"; {NULL} = {NULL_DEFINITION}"
        + ". *CV risk: on the predictions the weights were chosen from, optimistic for PEARL by "
        "construction (Covariates and Null aside)"
        # Shrunk weights are no longer that optimum: a baseline may show a lower CV risk.
        + ("; PEARL's weights are shrunk, so they need not have the lowest CV risk."
           if res.stages.weight_options.shrinkage is not None else ".")
    )
    table = _honest(res)
    if table is not None:
        notes.append(
            "Honest risk: the whole procedure re-run in each outer fold, scored on its held-out "
            f"rows{_honest_inner_note(res)}; PEARL/this: a paired ratio on those rows. "
            + honest_se_note(res.stages.honest_se, table)
        )
        from .evaluation import ms_warning  # here: evaluation imports summary, which imports us
        from .risks import honest_risk_for_report

        # the re-runs of the table shown (not a later res.honest_risk(outer=...)): the nested
        # estimate's difference, the fit's own outer CV, or on dask rows the table's PEARL - MS
        honest = honest_risk_for_report(res)
        if res.nested_se is not None:
            message = ms_warning(*res.nested_se.excess_over("MS"), table, format_number)
        elif honest is not None:
            message = honest.warning_against_ms(format_number)
        else:
            message = ms_warning(*table.attrs["excess_over_ms"], table, format_number)
        if message:
            notes.append(f"Warning: {message}.")
    elif res.honest_failure:
        notes.append(f"Honest risk could not be computed: {res.honest_failure}")
    # every -- in the strategies panel has its reason
    footnotes = strategy_footnotes(res)
    numbers = _footnote_numbers(footnotes)
    for k, reason in enumerate(dict.fromkeys(footnotes.values()), start=1):
        names = ", ".join(name for name in footnotes if numbers[name] == k)
        notes.append(f"[{k}] {names}: {reason}.")
    null_note = _null_note(res.baselines.rename(columns={"risk_ratio": "ratio", "cv_risk": "risk"})
                           if table is None else table, "CV" if table is None else "honest")
    return notes + ([null_note] if null_note else [])


def _null_note(table: pd.DataFrame, kind: str) -> str | None:
    """The note when PEARL does not beat the intercept-only model by more than one paired SE.

    *table* has the strategies' and Null's ``risk``, and ``ratio`` (PEARL / row) with its
    paired ``ratio_se``; *kind* names the risk (``"honest"`` or ``"CV"``).
    """
    ratio, se = table.loc[NULL, "ratio"], table.loc[NULL, "ratio_se"]
    if not np.isfinite(ratio) or 1.0 - ratio > se:
        return None
    strategies = table["risk"].drop(NULL)
    every = (" and no strategy's is below it" if (strategies >= table.loc[NULL, "risk"]).all()
             else "")
    return (
        f"Note: PEARL's {kind} risk {format_number(table.loc['PEARL', 'risk'])} is not below "
        f"the intercept-only model's ({format_number(table.loc[NULL, 'risk'])}) by more than one "
        f"paired SE (PEARL/Null {format_number(ratio)}, SE {format_number(se)}){every}: the "
        "inputs may say little about the response."
    )
