"""The PEARL summary: statsmodels ``SimpleTable`` sections in a ``Summary``.

All number formatting lives here, so text, LaTeX and HTML agree.
"""

from __future__ import annotations

import numpy as np
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

__all__ = ["build_summary", "format_number"]

_ORIGINAL_LOSS = {
    "gaussian": "squared error",
    "poisson": "Poisson deviance",
    "binomial": "0-1 loss / log-loss",
    "multinomial": "0-1 loss / log-loss",
}


def format_number(value, digits: int = 4) -> str:
    """Format a number for a summary cell (NaN shown as ``--``).

    Examples
    --------
    >>> format_number(0.123456), format_number(float("nan")), format_number(12345.6)
    ('0.1235', '--', '1.235e+04')
    """
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "--"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if value != 0 and (abs(value) >= 1e4 or abs(value) < 1e-4):
        return f"{value:.{digits - 1}e}"
    return f"{value:.{digits}f}"


def _table(rows, headers, stubs, title) -> SimpleTable:
    return SimpleTable(rows, headers=headers, stubs=stubs, title=title)


def _header(res) -> SimpleTable:
    blocks = ", ".join(f"{name} ({dim})" for name, dim in res.block_dims.items())
    cv = "LOO" if res.n_folds == res.nobs else f"{res.n_folds}-fold"
    left = [
        ("Formula:", res.formula),
        ("Family:", res.family),
        ("Surrogate loss:", f"{res.loss} (for {_ORIGINAL_LOSS[res.family]})"),
        ("Blocks (dim):", blocks),
    ]
    right = [
        ("No. observations:", str(res.nobs)),
        ("Cross-validation:", cv),
        ("Candidates (J):", str(len(res.weights))),
        ("Seed:", str(res.seed)),
    ]
    rows = [[a, b, c, d] for (a, b), (c, d) in zip(left, right)]
    if res.ridge > 0:
        rows.append(["Ridge:", format_number(res.ridge), "", ""])
    return SimpleTable(rows, title="PEARL model averaging")


def _weights_table(res) -> SimpleTable:
    weights = res.weights
    risk, se = res.cv_risk, res.cv_risk_se
    rank = risk.rank(method="min").astype("Int64")
    order = weights[weights > 0].sort_values(ascending=False).index
    rows = [
        [format_number(weights[label]), str(res.n_params[label]), format_number(risk[label]),
         format_number(se[label]), str(rank[label])]
        for label in order
    ]
    return _table(rows, ["weight", "n_params", "CV risk", "SE", "rank"], list(order), "Candidates with non-zero weight")


def _strategies_table(res) -> SimpleTable:
    table = res.baselines
    rows = [
        [format_number(r.cv_risk), format_number(r.se), format_number(r.risk_ratio), format_number(r.ratio_se), r.candidate]
        for r in table.itertuples()
    ]
    return _table(rows, ["CV risk", "SE", "PEARL/this", "ratio SE", "uses"], list(table.index), "Strategies")


def build_summary(res) -> Summary:
    """Assemble the summary of a :class:`~pearlstats.results.PearlResults`."""
    summary = Summary()
    summary.tables.append(_header(res))
    summary.tables.append(_weights_table(res))
    summary.tables.append(_strategies_table(res))
    zero = int((res.weights == 0).sum())
    notes = [f"{zero} of {len(res.weights)} candidates have zero weight."]
    notes.append(f"Weight solver: {res.weight_solver}; optimality (KKT) gap {format_number(res.kkt_gap)}.")
    failures = res.failures
    if len(failures):
        excluded = sorted(set(failures.loc[failures.excluded, "candidate"]))
        notes.append(
            f"Failure ledger: {len(failures)} event(s); excluded candidates: {excluded or 'none'} (see .failures)."
        )
    summary.add_extra_txt(notes)
    return summary
