"""The PEARL summary: statsmodels ``SimpleTable`` sections in a ``Summary``.

All number and label formatting lives here (the summary, the comparison
tables of :mod:`pearlstats.results.evaluation`), so text, LaTeX and HTML agree.

Sections: the fit, the candidates with non-zero weight, the strategies
(PEARL and the paper's baselines), block importance, consistency diagnostics
with the weights' stability, and the failure ledger (only when something
failed). Notes under the tables count the zero-weight candidates and report
PEARL's honest risk once :meth:`~pearlstats.PearlResults.honest_risk` ran.

LaTeX output (:meth:`PearlSummary.as_latex`, and
:meth:`~pearlstats.evaluation.ComparisonTable.as_latex`) is one ``table``
float: the sections as panels of equal width, numbers aligned on the decimal
point, the notes inside the float. The preamble needs :data:`LATEX_PREAMBLE`::

    \\usepackage{booktabs}   % rules
    \\usepackage{dcolumn}    % D columns: numbers aligned on the decimal point
    \\usepackage{tabularx}   % panels as wide as the text, long labels wrapped
"""

from __future__ import annotations

import copy
import html
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable, default_txt_fmt

from ..checks import check_int
from ..exceptions import OptionError, PearlWarning
from .averaging import unidentified
from .strategies import DEFINITIONS

if TYPE_CHECKING:
    from .core import PearlResults

__all__ = [
    "LATEX_PREAMBLE",
    "Label",
    "PearlSummary",
    "build_summary",
    "format_fixed",
    "format_mean_sd",
    "format_number",
    "html_escape",
    "latex_escape",
]

_MAX_LEDGER_ROWS = 20
_DEFAULT_UNCERTAINTY_RESAMPLES = 200
LATEX_PREAMBLE = "\\usepackage{booktabs}\n\\usepackage{dcolumn}\n\\usepackage{tabularx}"
_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[+-]\d+)?$")
_WRAPPED_TEXT = 24  # characters; text columns this wide become wrapping (X) columns in LaTeX

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
def format_number(value: float | None, digits: int = 4) -> str:
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


def format_fixed(value: float | None, digits: int = 3) -> str:
    """Fixed-point text with *digits* decimals, as in the paper's tables (NaN as ``--``).

    Examples
    --------
    >>> format_fixed(0.12345), format_fixed(float("nan"))
    ('0.123', '--')
    """
    if value is None or pd.isna(value):
        return "--"
    return f"{float(value):.{digits}f}"


def format_mean_sd(mean: float, sd: float, digits: int = 3) -> str:
    """``"mean (SD)"`` as in the paper's tables.

    Examples
    --------
    >>> format_mean_sd(95.3901, 0.3851)
    '95.390 (0.385)'
    """
    return f"{format_fixed(mean, digits)} ({format_fixed(sd, digits)})"


def latex_escape(text: object) -> str:
    r"""Escape LaTeX's special characters in one pass (so escapes are never re-escaped).

    Examples
    --------
    >>> print(latex_escape("y ~ block(kpca_rbf) & 50%"))
    y \textasciitilde{} block(kpca\_rbf) \& 50\%
    """
    return _LATEX_PATTERN.sub(lambda match: _LATEX_SPECIALS[match.group(0)], str(text))


def html_escape(text: object) -> str:
    """Escape ``<``, ``>``, ``&`` and quotes for HTML.

    Examples
    --------
    >>> html_escape("I(x < 3)")
    'I(x &lt; 3)'
    """
    return html.escape(str(text))


# ---- LaTeX tables -------------------------------------------------------------------------
class Label(str):
    r"""Text for a summary cell with its own LaTeX and HTML forms (mathematics, say).

    Behaves as the plain text everywhere (``as_text``, comparisons); the LaTeX
    and HTML renderers use :attr:`latex` and :attr:`html` unescaped.

    Examples
    --------
    >>> label = Label("1/sum w^2", latex=r"$1/\sum_j w_j^2$")
    >>> label == "1/sum w^2", cell_latex(label)
    (True, '$1/\\sum_j w_j^2$')
    """

    latex: str
    html: str

    def __new__(cls, text: str, *, latex: str | None = None, html: str | None = None) -> Label:
        label = super().__new__(cls, text)
        label.latex = latex_escape(text) if latex is None else latex
        label.html = html_escape(text) if html is None else html
        return label

    def __reduce__(self):
        return Label, (str(self),), {"latex": self.latex, "html": self.html}


def cell_latex(cell: object) -> str:
    """A cell's LaTeX: a :class:`Label`'s own form, else the escaped text."""
    return cell.latex if isinstance(cell, Label) else latex_escape(cell)


def cell_html(cell: object) -> str:
    """A cell's HTML: a :class:`Label`'s own form, else the escaped text."""
    return cell.html if isinstance(cell, Label) else html_escape(cell)


def latex_number(text: str) -> str:
    r"""A formatted number in math mode for a ``D`` column: exponents as powers of ten.

    Examples
    --------
    >>> latex_number("1.235e-05"), latex_number("-0.5")
    ('1.235\\times10^{-5}', '-0.5')
    """
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return rf"{mantissa}\times10^{{{int(exponent)}}}"


def _is_number(cell) -> bool:
    return not isinstance(cell, Label) and bool(_NUMBER.match(str(cell).strip()))


def latex_columns(columns: list[list], numeric: bool = True) -> list[str]:
    """Column types for LaTeX: ``D`` where most cells are numbers, ``X`` for long text, else ``l``.

    Parameters
    ----------
    columns : list of list
        The body cells of each column (headers excluded).
    numeric : bool, default True
        False for key-value layouts (no header row), whose values are text.

    Returns
    -------
    list of str
        One of ``"D"``, ``"X"``, ``"l"`` per column; at least one ``"X"``
        (the widest text column), so every panel is as wide as the text.
    """
    kinds, widths = [], []
    for cells in columns:
        numbers = sum(_is_number(cell) for cell in cells)
        placeholders = sum(str(cell).strip() == "--" for cell in cells)
        aligned = numeric and numbers > 0 and numbers + placeholders >= 0.5 * len(cells)
        width = max((len(str(cell)) for cell in cells), default=0)
        kinds.append("D" if aligned else ("X" if width > _WRAPPED_TEXT else "l"))
        widths.append(-1 if aligned else width)
    if "X" not in kinds and max(widths, default=-1) >= 0:
        kinds[int(np.argmax(widths))] = "X"
    return kinds


def _digits(cells: list) -> str:
    """dcolumn's ``left.right`` widths, in digits, of the numbers among *cells*."""
    left = right = 1
    for cell in cells:
        if _is_number(cell):
            whole, _, fraction = str(cell).strip().partition(".")
            mantissa, _, exponent = fraction.partition("e")
            left = max(left, len(whole))
            # "\times10^{-5}" is about as wide as four digits
            right = max(right, len(mantissa) + (7 if exponent else 0))
    return f"{left}.{right}"


def _column_spec(kinds: list[str], columns: list[list]) -> str:
    spec = {"X": r">{\raggedright\arraybackslash}X", "l": "l"}
    return "@{}" + "".join(rf"D{{.}}{{.}}{{{_digits(cells)}}}" if kind == "D" else spec[kind]
                           for kind, cells in zip(kinds, columns)) + "@{}"


def latex_cell(cell: object, kind: str) -> str:
    """One cell for a column of *kind*: numbers in math, other content centred in D columns."""
    if kind == "D":
        if _is_number(cell):
            return latex_number(str(cell).strip())
        shown = cell if isinstance(cell, Label) else str(cell).strip()
        return rf"\multicolumn{{1}}{{c}}{{{cell_latex(shown)}}}"
    text = cell_latex(cell)
    # candidate labels ("a+b+c") may break after each "+" in wrapping columns
    return text.replace("+", r"+\allowbreak{}") if kind == "X" else text


def latex_panel(rows: list[list], headers: list | None, title: str | None) -> str:
    """One panel: a ``tabularx`` as wide as the text, with its title above the rules.

    Parameters
    ----------
    rows : list of list
        Body cells, stubs included as the first cell of each row.
    headers : list, optional
        One header per column (the stub column's may be empty).
    title : str, optional
        Shown in italics above the panel.
    """
    columns = [list(column) for column in zip(*rows)] if rows else [[] for _ in headers or []]
    kinds = latex_columns(columns, numeric=bool(headers))
    lines = [rf"\begin{{tabularx}}{{\linewidth}}{{{_column_spec(kinds, columns)}}}"]
    if title:
        lines.append(rf"\multicolumn{{{len(kinds)}}}{{@{{}}l}}{{\emph{{{cell_latex(title)}}}}} \\")
    lines.append(r"\toprule")
    if headers:
        shown = [cell_latex(h) if kind != "D" else rf"\multicolumn{{1}}{{c}}{{{cell_latex(h)}}}"
                 for h, kind in zip(headers, kinds)]
        lines += [" & ".join(shown) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_cell(cell, kind) for cell, kind in zip(row, kinds)) + r" \\"
              for row in rows]
    lines += [r"\bottomrule", r"\end{tabularx}"]
    return "\n".join(lines)


def latex_float(panels: list[str], caption: str | None, notes: list) -> str:
    """Panels in one ``table`` float, the notes set small below them inside the float."""
    lines = [r"\begin{table}[htbp]", r"\centering", r"\footnotesize"]
    if caption:
        lines.append(rf"\caption{{{cell_latex(caption)}}}")
    lines.append("\n\n\\smallskip\n".join(panels))
    if notes:
        text = " ".join(cell_latex(note) for note in notes)
        lines += [r"\par\smallskip", rf"\parbox{{\linewidth}}{{\emph{{Notes:}} {text}}}"]
    lines.append(r"\end{table}")
    return "\n".join(lines)


# ---- the Summary ------------------------------------------------------------------------------
def _cells(table: SimpleTable) -> tuple[list | None, list[list]]:
    """(header row or None, body rows) of a SimpleTable, cells as given (Labels kept)."""
    rows = [[cell.data for cell in row] for row in table]
    if rows and table[0].datatype == "header":
        return rows[0], rows[1:]
    return None, rows


def _map_cells(table: SimpleTable, function) -> SimpleTable:
    """A copy of *table* with *function* applied to every cell and the title."""
    mapped = copy.deepcopy(table)
    for row in mapped:
        for cell in row:
            cell.data = function(cell.data)
    mapped.title = function(mapped.title) if mapped.title else mapped.title
    return mapped


class PearlSummary(Summary):
    """A statsmodels ``Summary`` rendered to LaTeX and HTML section by section.

    A section is a ``SimpleTable`` (title, headers, stubs, cells) appended to
    :attr:`tables`; notes go under all of them. statsmodels would merge all
    tables into one LaTeX tabular, drop the titles, and escape neither ``~``
    nor ``^`` in LaTeX nor ``<`` in HTML; here every label is escaped (or
    given its own form by a :class:`Label`), and :meth:`as_latex` builds one
    float with a panel per section.
    """

    def __init__(self):
        super().__init__()
        self.notes: list[str] = []

    def add_notes(self, notes: Sequence[str]) -> None:
        """Append lines to the text under the tables."""
        self.notes.extend(notes)
        self.add_extra_txt(list(notes))

    def as_latex(self) -> str:
        r"""One ``table`` float: the first section's title as caption, each section a panel.

        Numbers sit in ``D`` columns aligned on the decimal point, long labels
        wrap, and the notes are set inside the float so they stay with it.
        The preamble needs (see :data:`LATEX_PREAMBLE`)::

            \usepackage{booktabs}
            \usepackage{dcolumn}
            \usepackage{tabularx}

        Returns
        -------
        str
        """
        panels = []
        for position, table in enumerate(self.tables):
            headers, rows = _cells(table)
            title = None if position == 0 else table.title
            panels.append(latex_panel(rows, headers, title))
        caption = self.tables[0].title if self.tables else None
        return latex_float(panels, caption, self.notes)

    def as_html(self) -> str:
        parts = [_map_cells(table, cell_html).as_html() for table in self.tables]
        parts.extend(f"<p>{html_escape(note)}</p>" for note in self.notes)
        return "\n".join(parts)


# ---- sections ------------------------------------------------------------------------------
def _table(rows, headers, stubs, title) -> SimpleTable:
    table = SimpleTable(rows, headers=headers, stubs=stubs, title=title)
    # SimpleTable turns headers into plain str; keep Labels for their LaTeX / HTML forms
    for cell, header in zip(list(table[0])[1:] if stubs else list(table[0]), headers):
        cell.data = header
    return table


def _header(res) -> SimpleTable:
    blocks = ", ".join(f"{name} ({dim})" for name, dim in res.block_dims.items())
    cv = "LOO" if res.n_folds == res.nobs else f"{res.n_folds}-fold"
    repeats = res.stages.weight_options.cv_repeats
    if repeats > 1:  # the weights minimise the loss over every draw, not over the folds shown
        cv += f" x {repeats} draws"
    left = [
        ("Formula:", Label(res.formula, latex=rf"\texttt{{{latex_escape(res.formula)}}}")),
        ("Family:", res.family),
        ("Surrogate loss:", res.loss),
        ("Loss it stands for:", res.original_loss),
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
    headers = ["blocks", "parameters", "weight", "CV risk", "SE", "rank"]
    return _table(rows, headers, list(order), "Candidates with non-zero weight")




def _strategies_table(res) -> SimpleTable:
    """Honest (nested-CV) risks when available; else the in-sample CV risks, labelled optimistic."""
    honest = res.honest
    uses = res.baselines["candidate"]
    ratio = Label("PEARL/this", latex=r"$R_{\mathrm{PEARL}}/R$")
    if honest is not None:
        rows = [
            [
                *(
                    format_number(honest.loc[name, column])
                    for column in ("risk", "se", "ratio", "ratio_se")
                ),
                format_number(res.baselines.loc[name, "cv_risk"]),
                uses[name],
            ]
            for name in honest.index
        ]
        headers = ["honest risk", "SE", ratio, "ratio SE", "CV risk*", "uses"]
        outer = res.stages.honest
        title = f"Strategies (honest risk: {outer}-fold nested cross-validation)"
        return _table(rows, headers, list(honest.index), title)
    table = res.baselines
    rows = [
        [
            *(format_number(value) for value in (r.cv_risk, r.se, r.risk_ratio, r.ratio_se)),
            r.candidate,
        ]
        for r in table.itertuples()
    ]
    headers = ["CV risk*", "SE", ratio, "ratio SE", "uses"]
    return _table(rows, headers, list(table.index), "Strategies (in-sample CV risk, optimistic)")


def _importance_table(res) -> SimpleTable:
    # Candidates that failed have weight 0 and no say: counted, they would overstate a block's
    # presence in the pool the weights were chosen from.
    counts = res.block_membership[~res.failed].sum(axis=0)
    rows = [
        [format_number(value), str(int(counts[name]))]
        for name, value in res.block_importance.items()
    ]
    return _table(rows, ["importance", "in candidates"], list(res.block_importance.index),
                  "Block importance (total weight of the candidates with the block; "
                  "candidates that failed not counted)")


def _diagnostics_table(res, correct) -> SimpleTable:
    diagnostics = res.diagnostics
    rows = [
        [Label("Effective no. of candidates (1/sum w^2)",
               latex=r"Effective number of candidates ($1/\sum_j w_j^2$)",
               html="Effective no. of candidates (1/&sum;<sub>j</sub> w<sub>j</sub><sup>2</sup>)"),
         format_number(diagnostics["effective_candidates"])],
        ["Weight entropy (nats)", format_number(diagnostics["weight_entropy"])],
        ["Largest weight", format_number(diagnostics["max_weight"])],
        ["Non-zero weights", str(diagnostics["n_nonzero"])],
        ["Solver KKT gap", format_number(diagnostics["kkt_gap"])],
        ["Weight solver", diagnostics["weight_solver"]],
    ]
    if correct is not None:
        labels = res.resolve_candidates(correct)
        listed = ", ".join(labels)
        tau = Label(f"tau-hat (weight on {listed})",
                    latex=rf"$\hat\tau$ (weight on {latex_escape(listed)})",
                    html=f"&tau;&#770; (weight on {html_escape(listed)})")
        rows.append([tau, format_number(res.tau_hat(labels))])
    return SimpleTable(rows, headers=["", "value"], title="Consistency diagnostics")


def _stability_table(res) -> SimpleTable:
    stability = res.diagnostics["stability"]
    shown = stability[(stability["weight"] > 0) | (stability["mean"] > 0)]
    shown = shown.sort_values(["weight", "mean"], ascending=False, kind="stable")
    rows = [
        [format_number(r.weight), format_number(r.mean), format_number(r.spread)]
        for r in shown.itertuples()
    ]
    title = f"Weights re-solved on {res.diagnostics['stability_resamples']} (not a standard error)"
    return _table(rows, ["weight", "mean", "fold-to-fold spread"], list(shown.index), title)


# Above this many block columns the coefficient section shows the covariates only.
MAX_BLOCK_COEFFICIENTS = 12


def _coefficients_table(
    res: PearlResults, show_blocks: bool | None
) -> tuple[SimpleTable | None, str]:
    """Model-averaged coefficients: the formula's covariates first, then (if few) block columns."""
    if res.family == "multinomial":
        return None, "Model-averaged coefficients by class: res.params, res.bse, res.conf_int()."
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)  # the ridge caveat is the note below
        try:
            params, bse, interval = res.params, res.bse, res.conf_int()
        except OptionError as err:  # e.g. a downstream without coefficients
            return None, f"Model-averaged coefficients are not available: {err}"
    covariates = [name for name in res.design_spec.covariates.names if name in params.index]
    blocks = [name for name in params.index if name not in covariates]
    show = len(blocks) <= MAX_BLOCK_COEFFICIENTS if show_blocks is None else show_blocks
    shown = covariates + (blocks if show else [])
    note = "Coefficients: the full model average (0 in a candidate without the term), with "
    note += "Buckland et al.'s unconditional SE, the weights taken as fixed."
    if not show and blocks:
        note += f" {len(blocks)} block columns not shown (summary(coefficients=True); res.params)."
    if res.ridge_note:
        note += f" {res.ridge_note}"
    missing = unidentified(res)
    if missing:
        note += (" Not identified (shown as --, NaN in res.params): " + "; ".join(
            f"{term} in {labels}" for term, labels in missing.items())
            + ": those candidates' columns are linearly dependent on all rows, so the split of "
            "the effect between these terms is arbitrary (UnidentifiedCoefficientWarning).")
    if not shown:
        return None, note
    rows = [
        [format_number(params[name]), format_number(bse[name]),
         format_number(interval.loc[name, "lower"]), format_number(interval.loc[name, "upper"])]
        for name in shown
    ]
    headers = ["coef", "SE", "[0.025", "0.975]"]
    return _table(rows, headers, shown, "Model-averaged coefficients"), note


def _uncertainty_table(res: PearlResults, n_resamples: int) -> SimpleTable:
    """The refitting bootstrap's SD and 95% percentile interval of each non-zero weight."""
    table = res.weight_uncertainty(n_resamples=n_resamples)
    shown = table[table["weight"] > 0].sort_values("weight", ascending=False, kind="stable")
    rows = [
        [format_number(value) for value in (r.weight, r.sd, r.lower, r.upper)]
        for r in shown.itertuples()
    ]
    title = f"Weight uncertainty (refitting bootstrap, {n_resamples} resamples)"
    return _table(rows, ["weight", "SD", "[0.025", "0.975]"], list(shown.index), title)


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
    return _table(
        body, ["folds", "stage", "kind", "weight 0", "action"], list(shown["candidate"]), title
    )


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
    notes.append(
        "Strategies: "
        + "; ".join(f"{name} = {meaning}" for name, meaning in DEFINITIONS.items())
        + ". *CV risk: each strategy's risk on the out-of-fold predictions its own weights were "
        "chosen from, optimistic for PEARL by construction (every baseline is a point of the "
        "simplex PEARL optimises over)"
        # Shrunk weights are no longer that optimum: a baseline may show a lower CV risk.
        + ("; PEARL's weights are shrunk, so they need not have the lowest CV risk."
           if res.stages.weight_options.shrinkage is not None else ".")
    )
    honest = res.last_honest_risk if res.honest is not None else None
    if honest is not None:
        notes.append(
            "Honest risk: the whole procedure (inner folds, candidates, weights, each baseline's "
            "choice) re-run inside each outer fold and scored on the held-out rows; PEARL/this is "
            "a paired ratio on the same rows."
        )
        message = honest.warning_against_ms(format_number)
        if message:
            notes.append(f"Warning: {message}.")
    elif res.honest_failure:
        notes.append(f"Honest risk could not be computed: {res.honest_failure}")
    return notes


def _uncertainty_resamples(weight_uncertainty: bool | int | None) -> int | None:
    """Bootstrap resamples asked for by ``summary(weight_uncertainty=...)`` (None: no section).

    ``int()`` would turn 2.7 into 2 resamples without a word, and "yes" into a bare ValueError.
    """
    if weight_uncertainty is None or isinstance(weight_uncertainty, (bool, np.bool_)):
        return _DEFAULT_UNCERTAINTY_RESAMPLES if weight_uncertainty else None
    if isinstance(weight_uncertainty, (int, np.integer)) and weight_uncertainty == 0:
        return None
    return check_int("weight_uncertainty", weight_uncertainty, minimum=2)


def build_summary(
    res: PearlResults,
    correct: str | Sequence[str | Sequence[str]] | None = None,
    *,
    coefficients: bool | None = None,
    weight_uncertainty: bool | int = False,
) -> PearlSummary:
    """Assemble the summary of a :class:`~pearlstats.results.PearlResults`.

    Parameters
    ----------
    res : PearlResults
    correct : sequence of str, optional
        Correctly specified candidates (labels or block tuples); adds tau-hat.
    coefficients : bool, optional
        Show the block columns' averaged coefficients too (default: only when
        there are at most ``MAX_BLOCK_COEFFICIENTS``); the formula's
        covariates are always shown first.
    weight_uncertainty : bool or int, default False
        Add each weight's SD and percentile interval from the refitting
        bootstrap (``True``: 200 resamples; an int >= 2: that many; 0: none);
        it re-runs the whole procedure per resample, so it costs about that
        many fits.

    Returns
    -------
    PearlSummary
    """
    if coefficients is not None and not isinstance(coefficients, (bool, np.bool_)):
        # a truthy string such as "no" would otherwise show every block column
        raise OptionError(
            f"coefficients={coefficients!r}; use True (every block column), False (the "
            f"covariates only) or None (block columns when at most {MAX_BLOCK_COEFFICIENTS})"
        )
    n_resamples = _uncertainty_resamples(weight_uncertainty)
    summary = PearlSummary()
    summary.tables.append(_header(res))
    summary.tables.append(_weights_table(res))
    summary.tables.append(_strategies_table(res))
    summary.tables.append(_importance_table(res))
    summary.tables.append(_diagnostics_table(res, correct))
    summary.tables.append(_stability_table(res))
    if n_resamples:
        summary.tables.append(_uncertainty_table(res, n_resamples))
    table, coefficient_note = _coefficients_table(res, coefficients)
    if table is not None:
        summary.tables.append(table)
    if len(res.failures):
        summary.tables.append(_ledger_table(res))
    summary.add_notes([*_notes(res), coefficient_note])
    return summary
