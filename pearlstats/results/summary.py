r"""The PEARL summary: statsmodels ``SimpleTable`` sections in a ``Summary``.

Sections (:mod:`~pearlstats.results.sections`): the fit, the candidates with
non-zero weight, the strategies (PEARL and the paper's baselines), block
importance, consistency diagnostics with the weights' stability, the
model-averaged coefficients, the failure ledger and the refits (only when
something happened). Notes under the tables count the zero-weight candidates
and explain the strategies and the honest risk.

The text (:mod:`~pearlstats.results.text_layout`) is at most 100 columns
wide, panels of one width. LaTeX (:mod:`~pearlstats.results.latex`) is a main
table that fits one page of a default article, the other sections as floats of
their own; it needs :data:`LATEX_PREAMBLE`::

    \usepackage{booktabs}   % rules
    \usepackage{array}      % column types
    \usepackage{dcolumn}    % D columns: numbers aligned on the decimal point

Number and label formatting lives in :mod:`~pearlstats.results.formatting`
(shared with the comparison tables of :mod:`pearlstats.results.evaluation`).
"""

from __future__ import annotations

import copy
import string
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from statsmodels.iolib.summary import Summary
from statsmodels.iolib.table import SimpleTable

from ..checks import check_int
from ..exceptions import OptionError
from . import sections
from .formatting import (
    Label,
    cell_html,
    cell_latex,
    format_fixed,
    format_mean_sd,
    format_number,
    html_escape,
    latex_escape,
)
from .latex import (
    LATEX_PREAMBLE,
    LEADING,
    PANELS,
    check_panels,
    latex_float,
    latex_number,
    latex_panel,
    summary_latex,
)
from .text_layout import WIDTH, layout_text, table_cells

if TYPE_CHECKING:
    from .core import PearlResults

__all__ = [
    "LATEX_PREAMBLE",
    "PANELS",
    "Label",
    "PearlSummary",
    "build_summary",
    "cell_html",
    "cell_latex",
    "format_fixed",
    "format_mean_sd",
    "format_number",
    "html_escape",
    "latex_escape",
    "latex_float",
    "latex_number",
    "latex_panel",
]

_DEFAULT_UNCERTAINTY_RESAMPLES = 200


def _map_cells(table: SimpleTable, function) -> SimpleTable:
    """A copy of *table* with *function* applied to every cell and the title."""
    mapped = copy.deepcopy(table)
    for row in mapped:
        for cell in row:
            cell.data = function(cell.data)
    mapped.title = function(mapped.title) if mapped.title else mapped.title
    return mapped


class PearlSummary(Summary):
    """A statsmodels ``Summary`` laid out as text, LaTeX and HTML section by section.

    A section is a ``SimpleTable`` (title, headers, stubs, cells) appended to
    :attr:`tables` under a panel name (:attr:`panels`); notes go under all of
    them. statsmodels would merge all tables into one LaTeX tabular, drop the
    titles, and escape neither ``~`` nor ``^`` in LaTeX nor ``<`` in HTML;
    here every label is escaped (or given its own form by a :class:`Label`).
    """

    def __init__(self):
        super().__init__()
        self.notes: list[str] = []
        self.panels: dict[str, SimpleTable] = {}
        self.panel_notes: dict[str, list[str]] = {}
        self.latex_panels: str | Sequence[str] = "main"  # as_latex()'s default

    def add_section(self, name: str, table: SimpleTable | None) -> None:
        """Append *table* as the section *name* (one of :data:`PANELS`, or ``"header"``)."""
        if table is not None:
            self.tables.append(table)
            self.panels[name] = table

    def add_notes(self, notes: Sequence[str], panel: str = "main") -> None:
        """Append lines to the text under the tables (in LaTeX, under *panel*'s float)."""
        self.notes.extend(notes)
        self.panel_notes.setdefault(panel, []).extend(notes)
        self.add_extra_txt(list(notes))

    def as_text(self, width: int = WIDTH) -> str:
        """The sections as panels of one width, at most *width* columns, and the notes."""
        return layout_text(self.tables, self.notes, width)

    def as_latex(
        self,
        panels: str | Sequence[str] | None = None,
        *,
        caption: str | None = None,
        label: str | None = None,
        top: int = LEADING,
    ) -> str:
        r"""``table`` floats for a paper: by default the main table, which fits one page.

        The main table holds the fit, the weights of the *top* leading
        candidates (the others with non-zero weight in one row with their
        count and total weight), the strategies and the notes. Every other
        section is a float of its own, with its section title as caption.
        Numbers sit in ``D`` columns aligned on the point, each with the
        digits the text summary prints (a column of large or small numbers
        may be shown times a power of ten stated in its header, when none
        loses digits so); labels wrap, nothing is scaled. The preamble needs
        :data:`LATEX_PREAMBLE`::

            \usepackage{booktabs}
            \usepackage{array}
            \usepackage{dcolumn}

        Names are set as given: LaTeX's specials are escaped, Greek letters
        set as mathematics (``rbf_λ`` as rbf\_$\lambda$), other characters left
        to pdflatex's utf8 input, which sets Latin letters (é, ß, ł) and common
        symbols. A name with a character its fonts lack (CJK, emoji) stops
        pdflatex ("Unicode character ... not set up for use with LaTeX"): set
        such a table with XeLaTeX or LuaLaTeX, with ``\usepackage{fontspec}``
        and a font that has the characters.

        Parameters
        ----------
        panels : str or sequence of str, optional
            Default: those given to ``summary(panels=...)``, ``"main"`` unless
            told. ``"main"``, ``"all"``, or names from :data:`PANELS` (``"main"``,
            ``"candidates"``, ``"importance"``, ``"diagnostics"``,
            ``"stability"``, ``"uncertainty"``, ``"coefficients"``,
            ``"failures"``, ``"refits"``); a section this summary does not have
            (no failures, say) is left out.
        caption : str, optional
            The main table's caption (default: "PEARL model averaging"), as text:
            LaTeX's specials are escaped, so ``$R^2$`` prints as typed. For
            LaTeX of your own give a
            :class:`~pearlstats.results.formatting.Label`, whose ``latex`` is
            used as it is: ``Label("R^2", latex=r"$R^2$")``.
        label : str, optional
            ``\label`` of the main table; the other floats get ``label:name``.
            Letters, digits and ``: _ - . + /`` only (a ``%`` or ``#`` stops
            pdflatex); other characters raise :class:`OptionError`.
        top : int, default 5
            Candidates the main table names.

        Returns
        -------
        str

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> a = np.random.default_rng(1).normal(size=(50, 4))
        >>> blocks = {"a": a[:, :2], "b": a[:, 2:3]}
        >>> res = pearl.fit("y ~ block(a) + block(b)", {"y": a[:, 0] + a[:, 3]}, blocks=blocks,
        ...                 seed=1, honest=False)
        >>> latex = res.summary().as_latex(caption="Weights", label="tab:pearl")
        >>> latex.count(r"\begin{table}"), r"\label{tab:pearl}" in latex
        (1, True)
        """
        panels = self.latex_panels if panels is None else panels
        return self._latex(panels, caption, _check_label(label),
                           check_int("top", top, minimum=1), True)

    def _latex(self, panels, caption, label, top: int, captions: bool) -> str:
        named = {name: table_cells(table) + (table.title,) for name, table in self.panels.items()}
        notes = dict(self.panel_notes)
        if "coefficients" not in named:  # then its note says why there is no table
            notes["main"] = notes.get("main", []) + notes.pop("coefficients", [])
        return summary_latex(named, notes, panels, caption, label, top, captions)

    def _repr_latex_(self) -> str:
        """Every section for a notebook exported to PDF, in place, titles above the panels.

        Nothing floats, so the tables stay in their cell's output (``as_latex``
        keeps floats for papers). nbconvert's LaTeX template hides captions and
        loads booktabs and array, not dcolumn (each group then defines its ``D``
        columns itself).
        """
        return self._latex("all", None, None, LEADING, captions=False)

    def as_html(self) -> str:
        parts = [_map_cells(table, cell_html).as_html() for table in self.tables]
        parts.extend(f"<p>{html_escape(note)}</p>" for note in self.notes)
        return "\n".join(parts)


def _uncertainty_resamples(weight_uncertainty: bool | int | None) -> int | None:
    """Bootstrap resamples asked for by ``summary(weight_uncertainty=...)`` (None: no section).

    ``int()`` would turn 2.7 into 2 resamples without a word, and "yes" into a bare ValueError.
    """
    if weight_uncertainty is None or isinstance(weight_uncertainty, (bool, np.bool_)):
        return _DEFAULT_UNCERTAINTY_RESAMPLES if weight_uncertainty else None
    if isinstance(weight_uncertainty, (int, np.integer)) and weight_uncertainty == 0:
        return None
    return check_int("weight_uncertainty", weight_uncertainty, minimum=2)


_LABEL_CHARACTERS = frozenset(string.ascii_letters + string.digits + ":_-.+/")


def _check_label(label: str | None) -> str | None:
    """*label* for ``\\label``, refused (:class:`OptionError`) with characters LaTeX's labels
    cannot hold unescaped (``%`` comments the rest of the line out, ``#``, ``\\``, braces,
    ``~``, spaces, letters beyond ASCII)."""
    if label is None:
        return None
    if not isinstance(label, str) or not label:
        raise OptionError(f"label={label!r}: give a non-empty string such as 'tab:pearl'")
    bad = sorted(set(label) - _LABEL_CHARACTERS)
    if bad:
        raise OptionError(f"label={label!r}: {', '.join(map(repr, bad))} cannot stand in a "
                          "LaTeX label; use letters, digits and : _ - . + /")
    return label


def build_summary(
    res: PearlResults,
    correct: str | Sequence[str | Sequence[str]] | None = None,
    *,
    coefficients: bool | str | None = None,
    weight_uncertainty: bool | int = False,
    panels: str | Sequence[str] = "main",
) -> PearlSummary:
    """Assemble the summary of a :class:`~pearlstats.PearlResults`.

    Parameters
    ----------
    res : PearlResults
    correct : sequence of str, optional
        Correctly specified candidates (labels or block tuples); adds tau-hat.
    coefficients : bool or {"conditional", "full"}, optional
        The coefficients panel shows the terms in every candidate (intercept,
        covariates) with intervals. ``True`` or ``"conditional"`` adds the block
        columns' conditional (subset) average, ``"full"`` their full average,
        without intervals; None or False: the common terms only.
    weight_uncertainty : bool or int, default False
        Add the bootstrap distribution of each weight (mean, spread and
        quantiles of the refitting bootstrap of the procedure; not standard
        errors) (``True``: 200 resamples; an int >= 2: that many; 0: none);
        it re-runs the whole procedure per resample, so it costs about that
        many fits.

    panels : str or sequence of str, default "main"
        The sections ``as_latex()`` sets when not told (checked here).

    Returns
    -------
    PearlSummary
    """
    check_panels(panels, PANELS)  # an unknown name fails at summary(), not later
    if not (coefficients is None or isinstance(coefficients, (bool, np.bool_))
            or coefficients in ("conditional", "full")):
        # a truthy string such as "no" would otherwise show every block column
        raise OptionError(
            f"coefficients={coefficients!r}; use True or 'conditional' (block columns' "
            "conditional average too), 'full' (their full average), False or None (the terms "
            "in every candidate only)"
        )
    n_resamples = _uncertainty_resamples(weight_uncertainty)
    summary = PearlSummary()
    summary.add_section("header", sections.header_table(res))
    summary.add_section("candidates", sections.weights_table(res))
    summary.add_section("strategies", sections.strategies_table(res))
    summary.add_section("importance", sections.importance_table(res))
    summary.add_section("diagnostics", sections.diagnostics_table(res, correct))
    summary.add_section("stability", sections.stability_table(res))
    if n_resamples:
        summary.add_section("uncertainty", sections.uncertainty_table(res, n_resamples))
    table, coefficient_note = sections.coefficients_table(res, coefficients)
    summary.add_section("coefficients", table)
    summary.add_section("failures", sections.ledger_table(res))
    summary.add_section("refits", sections.refits_table(res))
    summary.add_notes(sections.summary_notes(res))
    summary.add_notes([coefficient_note], panel="coefficients")
    summary.latex_panels = panels
    return summary
