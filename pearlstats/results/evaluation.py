"""Held-out evaluation of PEARL and the paper's baselines, honest (nested) risk, comparison tables.

:func:`evaluate` scores PEARL and every baseline on test rows with the
paper's metrics (:mod:`pearlstats.weights.metrics`: ``MSE`` and ``MAE`` for
regression; ``accuracy``, ``cross_entropy`` and the one-hot ``MSE`` for classes).

Every strategy, ``Best`` included (the single-block candidate with the lowest
CV risk), uses the weights found by cross-validation. The row ``Null`` is the
summary's reference: the family's intercept-only model fitted on the fit's rows.
The extra row ``Oracle block`` is the single-block candidate best on the test
rows themselves (by MSE for regression, cross-entropy for classification): a
reference in hindsight that no strategy could have picked.

:func:`compare_table` combines many evaluations (repetitions x settings)
into the paper's layout: ``mean (SD)`` per method and metric, the best in
bold and the second underlined.

:func:`honest_risk` estimates PEARL's own risk without test rows: an outer
cross-validation re-runs the inner cross-validation and the weight solve on
each outer training set, as R's ``CV.SuperLearner``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from ..checks import check_seed
from ..design.data import labelled_rows
from ..design.formula import response_values
from ..exceptions import DataError
from ..nested import nested_cross_validation, paired_ratio_table, strategy_row_losses
from ..observation_weights import mean_se
from ..weights.baselines import NULL, STRATEGIES, TABLE_ROWS
from ..weights.metrics import (
    CLASSIFICATION_METRICS,
    ORACLE,
    REGRESSION_METRICS,
    classification_metrics,
    metric_names,
    primary_metric,
    regression_metrics,
)
from ..weights.precision import EXACT_FIT_NOTE
from .formatting import format_mean_sd, html_escape, latex_escape

if TYPE_CHECKING:
    from ..nested import NestedCV
    from .core import PearlResults

__all__ = [
    "METHODS",
    "ms_warning",
    "HIGHER_IS_BETTER",
    "REGRESSION_METRICS",
    "CLASSIFICATION_METRICS",
    "regression_metrics",
    "classification_metrics",
    "evaluate",
    "HonestRisk",
    "honest_risk",
    "ComparisonTable",
    "compare_table",
]

METHODS = STRATEGIES  # one order everywhere
HIGHER_IS_BETTER = frozenset({"accuracy"})


def _metrics(res, y, prediction, weights=None) -> dict:
    if res.classes is None:
        return regression_metrics(y, prediction, weights, res.family)
    if prediction.ndim == 1:
        prediction = np.column_stack([1.0 - prediction, prediction])
    return classification_metrics(y, prediction, weights)


def _test_response(res, test_data) -> np.ndarray:
    frame = labelled_rows(test_data)  # a bad response is named by the test data's label
    namespace = res.design_spec.covariates.namespace or {}
    try:
        values = response_values(res.design_spec.formula, frame, EvalEnvironment([namespace]))
    except DataError as err:
        raise DataError(f"evaluate needs the response in the test data: {err}") from err
    return res.encode_response(values)


def _intercept_only(res: PearlResults, chosen: pd.Series) -> bool:
    """Whether a strategy's weights (*chosen*) are all on a candidate with the intercept alone
    (the Covariates strategy of a formula without covariates): the Null row's model."""
    active = chosen[chosen > 0]
    if len(active) != 1:
        return False
    candidate = next(c for c in res.stages.candidates.everything if c.label == active.index[0])
    names = res.design_spec.column_names
    return [names[int(c)] for c in candidate.columns] == ["Intercept"]


def evaluate(
    res: PearlResults,
    test_data: pd.DataFrame | Mapping[str, Any],
    blocks: Mapping[str, Any] | None = None,
    weights: np.ndarray | None = None,
    offset: np.ndarray | None = None,
) -> pd.DataFrame:
    """Scores of PEARL and the baselines on test rows (see :meth:`PearlResults.evaluate`).

    *weights* (checked, one per test row) make every score a weighted mean; *offset* is the
    test rows' offset of a fit with one.
    """
    X = res.design_matrix(test_data, blocks)
    y = _test_response(res, test_data)
    if len(y) != X.shape[0]:
        raise DataError(
            f"the test data has {len(y)} responses but its blocks have {X.shape[0]} rows"
        )
    strategies = res.strategy_weights
    everything = res.stages.candidates.everything
    failed = dict(zip(strategies.columns, res.stages.output.failed))
    singles = [c.label for c in everything
               if len(c.blocks) == 1 and c.label == c.blocks[0] and not failed[c.label]]
    used = strategies.columns[(strategies.fillna(0) > 0).any(axis=0).to_numpy()]
    predictions = res.candidate_predictions_for(X, list(dict.fromkeys([*used, *singles])),
                                                offset)
    single_scores = {label: _metrics(res, y, predictions[label], weights) for label in singles}
    primary = primary_metric(res.family if res.classes is None else "multinomial")
    best = min(singles, key=lambda label: single_scores[label][primary]) if singles else None
    rows = {}
    for method in METHODS:
        chosen = strategies.loc[method]
        if chosen.isna().any():
            rows[method] = {}
            continue
        active = chosen[chosen > 0]
        stacked = np.stack([predictions[label] for label in active.index], axis=1)
        rows[method] = _metrics(res, y, res.stages.loss.combine(stacked, active.to_numpy()),
                                weights)
    # The summary's reference: the intercept-only model fitted on the fit's rows
    rows[NULL] = _metrics(res, y, res.stages.null_predictions(len(y), offset), weights)
    if rows.get("Covariates") and _intercept_only(res, strategies.loc["Covariates"]):
        # the same model: its refit agrees with Null's closed form to the Newton tolerance
        # (1e-12), which decides the accuracy of classes tied in frequency either way
        rows["Covariates"] = rows[NULL]
    # The single block best on these very test rows: a hindsight reference no user could pick.
    rows[ORACLE] = single_scores[best] if best is not None else {}
    names = metric_names(res.family if res.classes is None else "multinomial")
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(
        index=[*METHODS, NULL, ORACLE], columns=list(names)
    )
    table = table.rename_axis(index="method", columns="metric")
    table.attrs["best_candidate"] = best
    table.attrs["n_test"] = len(y)
    return table


# ---- honest risk ---------------------------------------------------------------------------
@dataclass(frozen=True)
class HonestRisk:
    """Risks from an outer cross-validation that re-runs the whole procedure inside each outer fold.

    PEARL re-solves its weights, MS re-selects, Best re-chooses and SA-cand,
    SA-FRL and Fusion re-check their candidates on each outer training set;
    everything is scored on the held-out outer rows.

    Attributes
    ----------
    row_losses : DataFrame (n, 7 + J)
        Surrogate loss of each row when it was held out: the strategies
        (PEARL, MS, SA-FRL, SA-cand, Fusion, Best), the intercept-only model
        (Null) fitted on each outer training set, then every pool candidate.
    fold_weights : DataFrame (outer folds, J)
        The PEARL weights solved inside each outer training set.
    outer_folds : ndarray of int (n,)
    inner_folds : tuple of ndarray
    failures : DataFrame
        Ledger rows of the inner and outer fits, with ``where`` they happened.
    fold_gaps : DataFrame
        Per outer fold: ``kkt_gap`` (certified bound on the suboptimality of
        its PEARL weight solve), ``objective``, ``certified`` (gap at most
        ``1e-10 (1 + objective)``) and ``solver``.
    row_weights : ndarray or None
        The fit's observation weights: the row losses are then weighted (their
        mean is the weighted mean) and every SE is
        :func:`~pearlstats.observation_weights.mean_se`'s.
    weight_type : str or None
    loss_name : str or None
        The fit's loss, for the precision of its risks
        (:mod:`pearlstats.weights.precision`).
    """

    row_losses: pd.DataFrame
    fold_weights: pd.DataFrame
    outer_folds: np.ndarray
    inner_folds: tuple
    failures: pd.DataFrame
    fold_gaps: pd.DataFrame | None = None
    row_weights: np.ndarray | None = None
    weight_type: str | None = None
    loss_name: str | None = None

    def _se(self, values: np.ndarray) -> np.ndarray:
        return mean_se(values, self.row_weights, self.weight_type)

    @property
    def n_outer(self) -> int:
        """Number of outer folds of the nested cross-validation.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> nested.n_outer
        3
        """
        return int(self.outer_folds.max()) + 1

    @property
    def table(self) -> pd.DataFrame:
        """Rows PEARL, MS, SA-FRL, SA-cand, Fusion, Best, AICc, BIC, Covariates and Null;
        columns risk, se, ratio, ratio_se, kkt_gap and certified.

        Null is the intercept-only model (the risk of ignoring every input), a
        reference that no strategy weights.
        ``ratio`` is PEARL's risk over the row's. ``kkt_gap`` is, for PEARL, the
        largest certified gap of its weight solves over the outer folds (NaN for
        the baselines, which solve nothing); ``certified`` is False on the PEARL row
        when some outer fold's solve was not certified (see :attr:`fold_gaps`).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> nested.table[["risk", "ratio", "certified"]].round(3)
                     risk  ratio  certified
        PEARL       0.990  1.000       True
        MS          1.042  0.950       True
        SA-FRL      1.081  0.916       True
        SA-cand     1.041  0.951       True
        Fusion      1.136  0.872       True
        Best        1.042  0.950       True
        AICc        1.048  0.945       True
        BIC         1.044  0.948       True
        Covariates  1.575  0.629       True
        Null        1.779  0.557       True
        """
        table = paired_ratio_table(self.row_losses[list(TABLE_ROWS)],
                                   row_weights=self.row_weights, weight_type=self.weight_type,
                                   loss_name=self.loss_name)
        table["kkt_gap"] = np.nan
        table["certified"] = True
        if self.fold_gaps is not None and len(self.fold_gaps):
            table.loc["PEARL", "kkt_gap"] = float(self.fold_gaps["kkt_gap"].max())
            table.loc["PEARL", "certified"] = bool(self.fold_gaps["certified"].all())
        return table

    @property
    def risk(self) -> pd.DataFrame:
        """Mean held-out loss and its SE (SD of row losses / sqrt(n)) per strategy and candidate.

        A candidate with no prediction for some held-out rows (it failed in their
        outer fold, e.g. under ``separation="drop"``) has risk and SE NaN: its
        mean over the other rows would not be comparable with the others'.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> nested.risk.loc[["PEARL", "Null", "a", "b", "a+b"]].round(3)  # rows of both kinds
                risk     se
        PEARL  0.990  0.240
        Null   1.779  0.287
        a      1.042  0.242
        b      1.555  0.222
        a+b    1.136  0.260
        """
        losses = self.row_losses
        return pd.DataFrame({"risk": losses.mean(skipna=False),
                             "se": self._se(losses.to_numpy())}, index=losses.columns)

    @property
    def best_candidate(self) -> str:
        """The pool candidate with the lowest honest risk (in hindsight: no user could pick it).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> nested.best_candidate
        'a'
        """
        return str(self.risk["risk"].iloc[len(TABLE_ROWS):].idxmin())

    def excess_over(self, strategy: str = "MS") -> tuple[float, float]:
        """PEARL's honest risk minus a strategy's, and the paired SE of that difference.

        Parameters
        ----------
        strategy : str, default "MS"
            A row of :attr:`table` (``"MS"``, ``"Best"``, ``"Null"``, ...).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> excess, se = nested.excess_over("MS")
        >>> round(excess, 3), round(se, 3)
        (-0.052, 0.048)
        """
        difference = self.row_losses["PEARL"] - self.row_losses[strategy]
        if self.row_weights is None:
            return float(difference.mean()), float(difference.std(ddof=1)
                                                   / np.sqrt(len(difference)))
        return float(difference.mean()), float(self._se(difference.to_numpy()))

    def warning_against_ms(
        self, number: Callable[[float], str] = lambda value: f"{value:.4g}"
    ) -> str | None:
        """The warning when PEARL's honest risk is more than one paired SE above MS's, else None.

        *number* formats the numbers (the summary passes its own formatter).

        Parameters
        ----------
        number : callable, optional
            ``float -> str``, the format of the numbers in the message (default 4
            significant digits).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> print(nested.warning_against_ms())  # PEARL is not above MS here
        None
        """
        return ms_warning(*self.excess_over("MS"), self.table, number)

    @property
    def pearl_above_ms(self) -> bool:
        """Whether PEARL's honest risk is more than one paired SE above MS's.

        MS is re-selected in each outer fold.

        Examples
        --------
        >>> import pearlstats as pearl
        >>> nested = pearl.datasets.example_fit().honest_risk(outer=3)
        >>> nested.pearl_above_ms
        False
        """
        return self.warning_against_ms() is not None

    def __repr__(self) -> str:
        return f"HonestRisk({self.n_outer} outer folds)\n{self.table}"


def ms_warning(excess: float, se: float, table: pd.DataFrame,
               number: Callable[[float], str] = lambda value: f"{value:.4g}") -> str | None:
    """The warning when PEARL's honest risk is *excess* above MS's, more than its paired *se*.

    None otherwise, and None when PEARL's risk is 0 to the response's precision (its
    ``note``, :mod:`pearlstats.weights.precision`): an excess at the rounding level of the
    response is not a finding. *table* is the honest table (its ``risk`` column is quoted).
    """
    exact = "note" in table.columns and table.loc["PEARL", "note"] == EXACT_FIT_NOTE
    if not excess > se or exact:  # NaN: a nested-CV risk is undefined (its note says why)
        return None
    pearl, ms = number(table.loc["PEARL", "risk"]), number(table.loc["MS", "risk"])
    return (
        f"PEARL's honest risk {pearl} exceeds that of MS re-selected in each outer fold ({ms}) "
        f"by {number(excess)}, more than one paired SE ({number(se)})"
    )


def honest_risk(
    res: PearlResults,
    outer: int | str | np.ndarray = 5,
    seed: int | None = None,
    nested: NestedCV | None = None,
) -> HonestRisk:
    """Nested cross-validation of PEARL and its baselines (see :meth:`PearlResults.honest_risk`).

    *nested*, when given, is a :class:`~pearlstats.nested.NestedCV` of this fit to reuse.
    """
    state = res.stages
    if nested is None:
        seed = res.seed if seed is None else check_seed(seed)
        nested = nested_cross_validation(state, outer=outer, seed=seed)
    labels = res.candidate_labels
    y = state.response.y
    # One frame built at once: a column inserted per candidate fragments the frame, and pandas
    # warns (PerformanceWarning) once per candidate past 100.
    candidates = pd.DataFrame(
        {label: state.loss.pointwise(y, nested.outside.predictions[:, j])
         for j, label in enumerate(labels)}
    )
    losses = pd.concat([strategy_row_losses(nested, state), candidates], axis=1)
    row_weights = state.response.row_weights
    if nested.outer_train is not None:  # time-ordered outer folds: the first rows never held out
        tested = nested.outer_folds >= 0
        losses = losses[tested]
        row_weights = None if row_weights is None else row_weights[tested]
    return HonestRisk(
        row_losses=losses,
        fold_weights=pd.DataFrame(nested.fold_weights("PEARL")[:, : len(labels)], columns=labels)
        .rename_axis("outer fold"),
        outer_folds=nested.outer_folds,
        inner_folds=nested.inner_folds,
        failures=nested.failures,
        fold_gaps=nested.fold_gaps,
        row_weights=row_weights,
        weight_type=state.response.weight_type,
        loss_name=state.loss.name,
    )


# ---- comparison tables ---------------------------------------------------------------------
def _mean_and_sd(cell: str) -> tuple[str, str]:
    """``"1.000 (0.250)"`` -> ``("1.000", "0.250")``."""
    mean, _, sd = cell.partition(" (")
    return mean, sd.rstrip(")")


def _marked(mean: str, mark: int) -> str:
    r"""A mean for a ``D`` column: ``\mathbf`` when best, ``\underline`` when second."""
    if mean == "--":
        return r"\multicolumn{1}{c}{--}"
    if mark == 0:
        return mean
    wrap = r"\mathbf{%s}" if mark == 1 else r"\underline{%s}"
    whole, _, fraction = mean.partition(".")
    # dcolumn splits the cell at its "." (an active character there), so each side is wrapped alone
    return ".".join(wrap % part for part in (whole, fraction) if part) if fraction else wrap % whole


def _rank_marks(means: pd.DataFrame, digits: int, higher: frozenset) -> pd.DataFrame:
    """1 for the best shown value in each row, 2 for the second, 0 otherwise (ties share a mark)."""
    marks = pd.DataFrame(0, index=means.index, columns=means.columns)
    for key, row in means.round(digits).iterrows():
        metric = key[0] if isinstance(key, tuple) else key
        values = sorted(set(row.dropna()), reverse=metric in higher)
        for mark, value in enumerate(values[:2], start=1):
            marks.loc[key, row.index[row == value]] = mark
    return marks


@dataclass(frozen=True)
class ComparisonTable:
    """Mean and SD of each method's metrics over repetitions, per setting.

    Attributes
    ----------
    mean, sd : DataFrame
        Rows ``(metric, setting)``, columns methods in the paper's order (PEARL last).
    n_repetitions : Series
        Number of evaluations per setting.
    digits : int
        Decimals shown; best and second best are judged on the shown values.
    setting_name : str
        Header of the setting column (``"n"`` by default).
    higher_is_better : frozenset
        Metrics where larger is better (``accuracy``).
    """

    mean: pd.DataFrame
    sd: pd.DataFrame
    n_repetitions: pd.Series
    digits: int = 3
    setting_name: str = "n"
    higher_is_better: frozenset = HIGHER_IS_BETTER

    @property
    def marks(self) -> pd.DataFrame:
        """1 where a method is best in its row, 2 where second, else 0.

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
        ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
        >>> table = pearl.compare_table({100: runs})
        >>> table.marks  # doctest: +NORMALIZE_WHITESPACE
                    PEARL  MS  Best
        metric n
        MSE    100      1   0     2
        """
        return _rank_marks(self.mean, self.digits, self.higher_is_better)

    def to_frame(self) -> pd.DataFrame:
        """The cells as ``"mean (SD)"`` strings.

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
        ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
        >>> table = pearl.compare_table({100: runs})
        >>> table.to_frame()  # doctest: +NORMALIZE_WHITESPACE
                            PEARL             MS           Best
        metric n
        MSE    100  1.250 (0.354)  3.250 (0.354)  2.250 (0.354)
        """
        cells = [[format_mean_sd(m, s, self.digits) for m, s in zip(mr, sr)]
                 for mr, sr in zip(self.mean.to_numpy(), self.sd.to_numpy())]
        return pd.DataFrame(cells, index=self.mean.index, columns=self.mean.columns)

    def _rows(self):
        """(metric shown or "", setting, cells, marks) per row; the metric on its first row only."""
        single = self.mean.index.get_level_values(1).isna().all()
        previous = None
        for (key, cells), marks in zip(self.to_frame().iterrows(), self.marks.to_numpy()):
            metric, setting = key
            yield (
                ("" if metric == previous else metric),
                (None if single else setting),
                list(cells),
                marks,
            )
            previous = metric

    def as_text(self) -> str:
        """Plain text; ``*`` marks the best value in a row, ``+`` the second.

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
        ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
        >>> table = pearl.compare_table({100: runs})
        >>> print(table.as_text())
        metric  n             PEARL             MS            Best
        MSE     100  1.250 (0.354)*  3.250 (0.354)  2.250 (0.354)+
        * best, + second best
        """
        symbol = {1: "*", 2: "+", 0: ""}
        rows = list(self._rows())
        with_setting = rows[0][1] is not None
        lines = [
            ["metric"] + ([self.setting_name] if with_setting else []) + list(self.mean.columns)
        ]
        for metric, setting, cells, marks in rows:
            shown = [cell + symbol[mark] for cell, mark in zip(cells, marks)]
            lines.append([metric] + ([str(setting)] if with_setting else []) + shown)
        widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
        labels = len(lines[0]) - len(self.mean.columns)
        text = ["  ".join(cell.ljust(width) if i < labels else cell.rjust(width)
                          for i, (cell, width) in enumerate(zip(line, widths))) for line in lines]
        return "\n".join(text + ["* best, + second best"])

    def __str__(self) -> str:
        return self.as_text()

    def as_latex(self, caption: str | None = None) -> str:
        r"""One ``table`` float: means aligned on the decimal point, each SD in parentheses below.

        The best mean in a row is ``\mathbf``, the second ``\underline``; a
        note under the table says so and gives the number of repetitions. The
        preamble needs ``\usepackage{booktabs}`` and ``\usepackage{dcolumn}``
        (see :data:`pearlstats.results.summary.LATEX_PREAMBLE`).

        Parameters
        ----------
        caption : str, optional

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
        ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
        >>> table = pearl.compare_table({100: runs})
        >>> lines = table.as_latex(caption="Test MSE").splitlines()
        >>> print(*lines[7:12], sep="\n")
        \midrule
        MSE & 100 & \mathbf{1}.\mathbf{250} & 3.250 & \underline{2}.\underline{250} \\
         &  & (0.354) & (0.354) & (0.354) \\
        \bottomrule
        \end{tabular}
        """
        rows = list(self._rows())
        with_setting = rows[0][1] is not None
        n_labels = 1 + with_setting
        head = ["Metric"] + ([latex_escape(self.setting_name)] if with_setting else [])
        methods = self.mean.columns
        head += [rf"\multicolumn{{1}}{{c}}{{{latex_escape(method)}}}" for method in methods]
        # D columns align on the point; the decimal side holds the SD's closing parenthesis too
        number = rf"D{{.}}{{.}}{{{self.digits + 1}}}"
        spec = "@{}" + "l" * n_labels + rf"*{{{len(methods)}}}{{{number}}}@{{}}"
        lines = [rf"\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(head) + r" \\",
                 r"\midrule"]
        for position, (metric, setting, cells, marks) in enumerate(rows):
            if metric and position:
                lines.append(r"\midrule")
            means, sds = zip(*(_mean_and_sd(cell) for cell in cells))
            first = [latex_escape(metric)] + ([latex_escape(setting)] if with_setting else [])
            marked = [_marked(mean, mark) for mean, mark in zip(means, marks)]
            lines.append(" & ".join(first + marked) + r" \\")
            shown = [rf"({sd})" if sd != "--" else r"\multicolumn{1}{c}{}" for sd in sds]
            lines.append(" & ".join([""] * n_labels + shown) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        repetitions = ", ".join(str(int(n)) for n in self.n_repetitions.unique())
        note = (f"Mean over repetitions ({repetitions} per setting), standard deviation in "
                "parentheses; best in bold, second underlined.")
        body = "\n".join(lines)
        parts = [r"\begin{table}[htbp]", r"\centering", r"\small"]
        parts += [rf"\caption{{{latex_escape(caption)}}}"] if caption else []
        parts += [body, r"\par\smallskip",
                  rf"\parbox{{\linewidth}}{{\footnotesize\emph{{Note:}} {note}}}", r"\end{table}"]
        return "\n".join(parts)

    to_latex = as_latex

    def as_html(self) -> str:
        """An HTML table: best in ``<b>``, second in ``<u>``.

        Examples
        --------
        >>> import pandas as pd, pearlstats as pearl
        >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
        ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
        >>> table = pearl.compare_table({100: runs})
        >>> html = table.as_html()
        >>> html.count("<b>"), html.count("<u>")  # best and second best of the one row
        (1, 1)
        """
        wrap = {1: "<b>%s</b>", 2: "<u>%s</u>", 0: "%s"}
        rows = list(self._rows())
        with_setting = rows[0][1] is not None
        head = ["metric"] + ([self.setting_name] if with_setting else []) + list(self.mean.columns)
        header = "".join(f"<th>{html_escape(h)}</th>" for h in head)
        out = ['<table class="simpletable">', f"<tr>{header}</tr>"]
        for metric, setting, cells, marks in rows:
            first = [metric] + ([setting] if with_setting else [])
            body = "".join(f"<th>{html_escape(cell)}</th>" for cell in first)
            body += "".join(
                f"<td>{wrap[mark] % html_escape(cell)}</td>" for cell, mark in zip(cells, marks)
            )
            out.append(f"<tr>{body}</tr>")
        out.append("</table>")
        return "\n".join(out)

    def _repr_html_(self) -> str:
        return self.as_html()


def _check_same_shape(reference: pd.DataFrame, frames: list, setting) -> None:
    where = "" if setting is None else f" of setting {setting!r}"
    for position, frame in enumerate(frames):
        if list(frame.index) != list(reference.index) or list(frame.columns) != list(
            reference.columns
        ):
            raise DataError(
                f"evaluation {position}{where} has methods {list(frame.index)} and metrics "
                f"{list(frame.columns)}, but the first has {list(reference.index)} and "
                f"{list(reference.columns)}; combine evaluations of the same kind of fit"
            )


def compare_table(
    evaluations: Mapping[Any, Sequence[pd.DataFrame]],
    *,
    digits: int = 3,
    setting_name: str = "n",
    higher_is_better: Collection[str] = HIGHER_IS_BETTER,
) -> ComparisonTable:
    """Combine evaluations (repetitions x settings) into the paper's table.

    Parameters
    ----------
    evaluations : sequence of DataFrame, or mapping setting -> sequence of DataFrame
        Results of :meth:`PearlResults.evaluate`; a mapping gives one group of
        repetitions per setting (e.g. per labeled sample size n).
    digits : int, default 3
        Decimals shown.
    setting_name : str, default "n"
    higher_is_better : iterable of str
        Metrics where larger is better.

    Returns
    -------
    ComparisonTable
        ``.as_latex()`` (booktabs; best bold, second underlined), ``.as_html()``,
        ``.as_text()``, ``.mean``, ``.sd``.

    Examples
    --------
    >>> import pandas as pd
    >>> runs = [pd.DataFrame({"MSE": [1.0, 2.0, 3.0]}, index=["PEARL", "Best", "MS"]),
    ...         pd.DataFrame({"MSE": [1.5, 2.5, 3.5]}, index=["PEARL", "Best", "MS"])]
    >>> print(compare_table({100: runs}).as_text())
    metric  n             PEARL             MS            Best
    MSE     100  1.250 (0.354)*  3.250 (0.354)  2.250 (0.354)+
    * best, + second best
    """
    groups = evaluations if isinstance(evaluations, Mapping) else {None: evaluations}
    if not groups:
        raise DataError("compare_table needs at least one evaluation")
    means, sds, counts, reference = [], [], {}, None
    for setting, frames in groups.items():
        frames = list(frames) if isinstance(frames, Sequence) else [frames]
        if not frames or not all(isinstance(frame, pd.DataFrame) for frame in frames):
            raise DataError(f"setting {setting!r} needs a non-empty list of evaluate() DataFrames")
        reference = reference if reference is not None else frames[0]
        _check_same_shape(reference, frames, setting)
        stacked = np.stack([frame.to_numpy(dtype=float) for frame in frames])
        with np.errstate(invalid="ignore"):
            sd = (
                stacked.std(axis=0, ddof=1)
                if len(frames) > 1
                else np.full(stacked.shape[1:], np.nan)
            )
        for values, store in ((stacked.mean(axis=0), means), (sd, sds)):
            store.append(
                pd.DataFrame(
                    values.T,
                    index=pd.MultiIndex.from_product(
                        [reference.columns, [setting]], names=["metric", setting_name]
                    ),
                    columns=reference.index,
                )
            )
        counts[setting] = len(frames)
    known = [*METHODS, NULL, ORACLE]  # one order everywhere: strategies, Null, the oracle
    methods = sorted(reference.index, key=lambda m: known.index(m) if m in known else len(known))
    order = pd.MultiIndex.from_product(
        [reference.columns, list(groups)], names=["metric", setting_name]
    )
    mean = pd.concat(means).reindex(index=order, columns=methods)
    sd = pd.concat(sds).reindex(index=order, columns=methods)
    return ComparisonTable(mean, sd, pd.Series(counts, name="repetitions"), digits, setting_name,
                           frozenset(higher_is_better))
