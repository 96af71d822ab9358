"""The PEARL summary: statsmodels ``SimpleTable`` sections in a ``Summary``.

All number and label formatting lives here (the summary, the comparison
tables of :mod:`pearlstats.results.evaluation`), so text, LaTeX and HTML agree.

Sections: the fit, the candidates with non-zero weight, the strategies
(PEARL and the paper's baselines), block importance, consistency diagnostics
with the weights' stability, and the failure ledger (only when something
failed). Notes under the tables count the zero-weight candidates and report
PEARL's honest risk once :meth:`~pearlstats.PearlResults.honest_risk` ran.
"""

from __future__ import annotations

import copy
import html
import re

import numpy as np
import pandas as pd
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable, default_txt_fmt

__all__ = [
    "PearlSummary",
    "build_summary",
    "format_number",
    "format_fixed",
    "format_mean_sd",
    "latex_escape",
    "html_escape",
]

_MAX_LEDGER_ROWS = 20

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_LATEX_PATTERN = re.compile("|".join(re.escape(char) for char in _LATEX_SPECIALS))


# ---- formatting ---------------------------------------------------------------------------
def format_number(value, digits: int = 4) -> str:
    """Format a number for a summary cell (NaN shown as ``--``).

    Examples
    --------
    >>> format_number(0.123456), format_number(float("nan")), format_number(12345.6)
    ('0.1235', '--', '1.235e+04')
    """
    if value is None or pd.isna(value):
        return "--"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-4):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}f}"


def format_fixed(value, digits: int = 3) -> str:
    """Fixed-point text with *digits* decimals, as in the paper's tables (NaN as ``--``).

    Examples
    --------
    >>> format_fixed(0.12345), format_fixed(float("nan"))
    ('0.123', '--')
    """
    if value is None or pd.isna(value):
        return "--"
    return f"{float(value):.{digits}f}"


def format_mean_sd(mean, sd, digits: int = 3) -> str:
    """``"mean (SD)"`` as in the paper's tables.

    Examples
    --------
    >>> format_mean_sd(95.3901, 0.3851)
    '95.390 (0.385)'
    """
    return f"{format_fixed(mean, digits)} ({format_fixed(sd, digits)})"


def latex_escape(text) -> str:
    r"""Escape LaTeX's special characters in one pass (so escapes are never re-escaped).

    Examples
    --------
    >>> print(latex_escape("y ~ block(kpca_rbf) & 50%"))
    y \textasciitilde{} block(kpca\_rbf) \& 50\%
    """
    return _LATEX_PATTERN.sub(lambda match: _LATEX_SPECIALS[match.group(0)], str(text))


def html_escape(text) -> str:
    """Escape ``<``, ``>``, ``&`` and quotes for HTML.

    Examples
    --------
    >>> html_escape("I(x < 3)")
    'I(x &lt; 3)'
    """
    return html.escape(str(text))


# ---- the Summary ------------------------------------------------------------------------------
def _map_cells(table: SimpleTable, function) -> SimpleTable:
    """A copy of *table* with *function* applied to every cell and the title."""
    mapped = copy.deepcopy(table)
    for row in mapped:
        for cell in row:
            cell.data = function(cell.data)
    mapped.title = function(mapped.title) if mapped.title else mapped.title
    return mapped


class PearlSummary(Summary):
    """A statsmodels ``Summary`` whose LaTeX and HTML escape every label.

    statsmodels merges all tables into one LaTeX tabular (dropping the titles)
    and escapes neither ``~`` nor ``^`` in LaTeX nor ``<`` in HTML; formulas
    contain ``~`` and block names underscores, so each output is rendered
    here: one booktabs ``table`` environment per section in LaTeX, one
    ``<table>`` per section in HTML, and the notes as escaped paragraphs.
    """

    def __init__(self):
        super().__init__()
        self.notes: list[str] = []

    def add_notes(self, notes) -> None:
        """Append lines to the text under the tables."""
        self.notes.extend(notes)
        self.add_extra_txt(list(notes))

    def as_latex(self) -> str:
        parts = []
        for table in self.tables:
            escaped = _map_cells(table, latex_escape)
            caption = escaped.title
            escaped.title = None
            tabular = escaped.as_latex_tabular(center=False, replacements={})
            parts.append("\n".join([
                r"\begin{table}[htbp]",
                r"\centering",
                rf"\caption{{{caption}}}" if caption else "",
                tabular,
                r"\end{table}",
            ]))
        if self.notes:
            parts.append("\n".join(latex_escape(note) + r" \\" for note in self.notes))
        return "\n\n".join(parts)

    def as_html(self) -> str:
        parts = [_map_cells(table, html_escape).as_html() for table in self.tables]
        parts.extend(f"<p>{html_escape(note)}</p>" for note in self.notes)
        return "\n".join(parts)


# ---- sections -------------------------------------------------------------------------------------
def _table(rows, headers, stubs, title) -> SimpleTable:
    return SimpleTable(rows, headers=headers, stubs=stubs, title=title)


def _header(res) -> SimpleTable:
    blocks = ", ".join(f"{name} ({dim})" for name, dim in res.block_dims.items())
    cv = "LOO" if res.n_folds == res.nobs else f"{res.n_folds}-fold"
    left = [
        ("Formula:", res.formula),
        ("Family:", res.family),
        ("Surrogate loss:", res.loss),
        ("Stands for:", res.original_loss),
        (f"Blocks (M = {len(res.block_dims)}):", blocks),
    ]
    right = [
        ("No. observations:", str(res.nobs)),
        ("Cross-validation:", cv),
        ("Candidates (J):", str(len(res.weights))),
        ("Seed:", str(res.seed)),
        ("Ridge:", format_number(res.ridge)),
    ]
    rows = [[a, b, c, d] for (a, b), (c, d) in zip(left, right)]
    if len(res.dropped_rows):
        rows.append(["Dropped rows:", str(len(res.dropped_rows)), "", ""])
    # labels right-aligned against their values, values left-aligned (a long formula
    # otherwise pushes the short values far to the right)
    text_format = {**default_txt_fmt, "data_aligns": "rlrl", "colsep": "  "}
    return SimpleTable(rows, title="PEARL model averaging", txt_fmt=text_format)


def _weights_table(res) -> SimpleTable:
    weights = res.weights
    risk, se = res.cv_risk, res.cv_risk_se
    rank = risk.rank(method="min")
    n_blocks = res.candidate_blocks.map(len)
    order = weights[weights > 0].sort_values(ascending=False, kind="stable").index
    rows = [
        [str(n_blocks[label]), str(res.n_params[label]), format_number(weights[label]),
         format_number(risk[label]), format_number(se[label]), str(int(rank[label]))]
        for label in order
    ]
    headers = ["blocks", "n_params", "weight", "CV risk", "SE", "rank"]
    return _table(rows, headers, list(order), "Candidates with non-zero weight")


def _strategies_table(res) -> SimpleTable:
    table = res.baselines
    rows = [
        [*(format_number(value) for value in (r.cv_risk, r.se, r.risk_ratio, r.ratio_se)), r.candidate]
        for r in table.itertuples()
    ]
    return _table(rows, ["CV risk", "SE", "PEARL/this", "ratio SE", "uses"], list(table.index), "Strategies")


def _importance_table(res) -> SimpleTable:
    counts = res.block_membership.sum(axis=0)
    rows = [[format_number(value), str(int(counts[name]))] for name, value in res.block_importance.items()]
    return _table(rows, ["importance", "in candidates"], list(res.block_importance.index),
                  "Block importance (total weight of the candidates with the block)")


def _diagnostics_table(res, correct) -> SimpleTable:
    diagnostics = res.diagnostics
    rows = [
        ["Effective no. of candidates (1/sum w^2)", format_number(diagnostics["effective_candidates"])],
        ["Weight entropy (nats)", format_number(diagnostics["weight_entropy"])],
        ["Largest weight", format_number(diagnostics["max_weight"])],
        ["Non-zero weights", str(diagnostics["n_nonzero"])],
        ["Solver KKT gap", format_number(diagnostics["kkt_gap"])],
        ["Weight solver", diagnostics["weight_solver"]],
    ]
    if correct is not None:
        labels = res.resolve_candidates(correct)
        rows.append([f"tau-hat (weight on {', '.join(labels)})", format_number(res.tau_hat(labels))])
    return SimpleTable(rows, title="Consistency diagnostics")


def _stability_table(res) -> SimpleTable:
    stability = res.diagnostics["stability"]
    shown = stability[(stability["weight"] > 0) | (stability["mean"] > 0)]
    shown = shown.sort_values(["weight", "mean"], ascending=False, kind="stable")
    rows = [[format_number(r.weight), format_number(r.mean), format_number(r.sd)] for r in shown.itertuples()]
    title = f"Weight stability over {res.diagnostics['stability_resamples']}"
    return _table(rows, ["weight", "mean", "SD"], list(shown.index), title)


def _ledger_rows(failures: pd.DataFrame) -> pd.DataFrame:
    """One row per candidate, stage, kind and action, with the folds where it happened."""
    folds = failures["fold"].astype(object).where(failures["fold"].notna(), "all")
    grouped = failures.assign(fold=folds.astype(str)).groupby(
        ["candidate", "stage", "kind", "action", "excluded"], sort=False
    )["fold"].agg(", ".join)
    return grouped.reset_index()


def _ledger_table(res) -> SimpleTable:
    rows = _ledger_rows(res.failures)
    shown = rows.head(_MAX_LEDGER_ROWS)
    body = [
        [r.fold, r.stage, r.kind, "yes" if r.excluded else "no", r.action]
        for r in shown.itertuples()
    ]
    title = "Failure ledger"
    if len(rows) > len(shown):
        title += f" (first {_MAX_LEDGER_ROWS} of {len(rows)} rows)"
    return _table(body, ["folds", "stage", "kind", "weight 0", "action"], list(shown["candidate"]), title)


def _notes(res) -> list[str]:
    weights = res.weights
    failed = int(res.failed.sum())
    notes = [
        f"{int((weights == 0).sum())} of {len(weights)} candidates have zero weight"
        + (f" ({failed} of them failed in cross-validation)." if failed else ".")
    ]
    failures = res.failures
    if len(failures):
        excluded = sorted(set(failures.loc[failures.excluded, "candidate"]))
        notes.append(
            f"Failure ledger: {len(failures)} event(s); excluded candidates: {excluded or 'none'} "
            "(reasons in .failures)."
        )
    honest = res.last_honest_risk
    if honest is not None:
        table = honest.risk
        best = honest.best_candidate
        notes.append(
            f"Honest risk ({honest.n_outer}-fold outer cross-validation, weights re-solved in each outer fold): "
            f"PEARL {format_number(table.loc['PEARL', 'risk'])} (SE {format_number(table.loc['PEARL', 'se'])}); "
            f"best single candidate {best} {format_number(table.loc[best, 'risk'])} "
            f"(SE {format_number(table.loc[best, 'se'])})."
        )
        if honest.pearl_above_best:
            notes.append(
                "Warning: PEARL's honest risk exceeds the best single candidate's by "
                f"{format_number(honest.excess)}, more than one paired SE ({format_number(honest.excess_se)})."
            )
    return notes


def build_summary(res, correct=None) -> PearlSummary:
    """Assemble the summary of a :class:`~pearlstats.results.PearlResults`.

    Parameters
    ----------
    res : PearlResults
    correct : sequence of str, optional
        Correctly specified candidates (labels or block tuples); adds tau-hat.

    Returns
    -------
    PearlSummary
    """
    summary = PearlSummary()
    summary.tables.append(_header(res))
    summary.tables.append(_weights_table(res))
    summary.tables.append(_strategies_table(res))
    summary.tables.append(_importance_table(res))
    summary.tables.append(_diagnostics_table(res, correct))
    summary.tables.append(_stability_table(res))
    if len(res.failures):
        summary.tables.append(_ledger_table(res))
    summary.add_notes(_notes(res))
    return summary
