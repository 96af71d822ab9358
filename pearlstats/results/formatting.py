"""Number and label formatting for the summary and the comparison tables, in one place.

Text, LaTeX and HTML read the same cells: a number cell is a :class:`Number`
(its text as the summary prints it, and the value, which LaTeX formats per
column); a :class:`Label` carries its own LaTeX and HTML forms.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

__all__ = [
    "Label",
    "Number",
    "PValue",
    "block_letters",
    "cell_html",
    "cell_latex",
    "format_fixed",
    "format_mean_sd",
    "format_number",
    "format_ridge",
    "html_escape",
    "latex_escape",
    "number_cell",
    "p_value_cell",
]

_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    # OT1's \textasciitilde is an accent over nothing, raised, as is cmtt's ASCII tilde
    # (char 126): a formula's "y ~ x" read "y ˜ x"; \sim sits on the middle of the line
    "~": r"\ensuremath{\sim}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # OT1, LATEX_PREAMBLE's encoding, has no straight " (char 34 of cmr is a closing quote,
    # Q("sex") read Q(”sex”)) and \textquotedbl needs T1; typewriter's char 34 is straight
    '"': r"\texttt{\char34}",
}
# char 39 of cmr and cmtt is a closing quote (block('pca') read block(’pca’)): a quote of
# code, after "(", "[", "," or "=" (a space between) or before ")", "]" or ",", is
# textcomp's upright quote (TS1, in every encoding and engine); an apostrophe of prose
# ("MuMIn's", "candidates' joint") stays the typeset one
_CODE_QUOTE = r"(?<=[(\[,=])'|(?<=[,=] )'|'(?=[)\],])"
# a quoted string, not inside a word ("h='c' and 'd'", "formula='y ~ a + b'"): both its
# quotes are code, wherever it stands (the rule above saw the first quote of 'c' only)
_QUOTED_TOKEN = r"(?<![\w'])'[^'\n]+?'(?![\w'])"
_UPRIGHT_QUOTE = r"\textquotesingle{}"


def _greek_math() -> dict[str, str]:
    r"""Greek letter -> math mode (``\ensuremath{\lambda}``): pdflatex's text fonts have no Greek.

    Capitals that look like Latin ones have no command of their own: they are
    the Latin letter, upright as math sets Greek capitals (omicron an italic
    o). The variant glyphs (U+03D1 and after) follow unicode-math's names.
    """
    lower = ("alpha beta gamma delta varepsilon zeta eta theta iota kappa lambda mu nu xi o "
             "pi rho varsigma sigma tau upsilon varphi chi psi omega").split()
    upper = ("A B Gamma Delta E Z H Theta I K Lambda M N Xi O Pi P Sigma T Upsilon Phi X Psi "
             "Omega").split()
    names = dict(zip(map(chr, range(0x3B1, 0x3CA)), lower))
    names |= dict(zip([chr(c) for c in range(0x391, 0x3AA) if c != 0x3A2], upper))  # no U+03A2
    names |= {"\u03d1": "vartheta", "\u03d5": "phi", "\u03d6": "varpi", "\u03f1": "varrho",
              "\u03f5": "epsilon"}

    def math(name: str) -> str:
        if len(name) > 1:
            return "\\" + name
        return name if name == "o" else rf"\mathrm{{{name}}}"

    return {char: rf"\ensuremath{{{math(name)}}}" for char, name in names.items()}


_LATEX_SPECIALS |= _greek_math()
# a "+" with a character after it (not a space, not a tag), outside any tag
_JOINING_PLUS = re.compile(r"\+(?=[^\s<])(?![^<]*>)")
_LATEX_PATTERN = re.compile("|".join([re.escape(char) for char in _LATEX_SPECIALS]
                                     + [_QUOTED_TOKEN, _CODE_QUOTE]))


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

    Greek letters become mathematics (``\ensuremath{\lambda}``), which every
    engine sets. Other characters stay as they are: pdflatex's utf8 input sets
    Latin letters (é, ß, ł) and common symbols; those its fonts lack (CJK,
    emoji) need XeLaTeX or LuaLaTeX with a font that has them. Replacing them
    would change the names a reader matches against the data.

    Examples
    --------
    >>> print(latex_escape("y ~ block('kpca_rbf') & 50% (MuMIn's)"))
    y \ensuremath{\sim} block(\textquotesingle{}kpca\_rbf\textquotesingle{}) \& 50\% (MuMIn's)
    >>> print(latex_escape("rbf_λ"))
    rbf\_\ensuremath{\lambda}
    """
    return _LATEX_PATTERN.sub(_latex_replacement, str(text))


def _latex_replacement(match: re.Match) -> str:
    found = match.group(0)
    if found in _LATEX_SPECIALS:
        return _LATEX_SPECIALS[found]
    if len(found) > 1:  # a quoted token: its inside escaped, its quotes upright
        return _UPRIGHT_QUOTE + latex_escape(found[1:-1]) + _UPRIGHT_QUOTE
    return _UPRIGHT_QUOTE


def html_escape(text: object) -> str:
    """Escape ``<``, ``>``, ``&`` and quotes for HTML.

    Examples
    --------
    >>> html_escape("I(x < 3)")
    'I(x &lt; 3)'
    """
    return html.escape(str(text))


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
    """A cell's HTML: a :class:`Label`'s own form, else the escaped text; a line may break
    after a ``+`` that joins two names.

    A candidate label (blocks joined by ``+``) has no space to break at: a long one
    made its table wider than the notebook (the columns right of it out of view).
    ``<wbr>`` adds no text, so a copied label is the label.

    Examples
    --------
    >>> cell_html("pca+kpca_rbf"), cell_html("y ~ a + b")
    ('pca+<wbr>kpca_rbf', 'y ~ a + b')
    >>> cell_html(number_cell(7.481e-05))
    '<span style="white-space:nowrap">7.481e-05</span>'
    >>> cell_html(number_cell(1.5e5))
    '<span style="white-space:nowrap">1.500e+05</span>'
    """
    html = cell.html if isinstance(cell, Label) else html_escape(cell)
    if isinstance(cell, Number):
        # a browser breaks "7.481e-05" after its minus sign in a narrow column (and a number's
        # "+" is not a "+" that joins two names)
        return f'<span style="white-space:nowrap">{html}</span>' if "-" in html or "+" in html \
            else html
    return _JOINING_PLUS.sub("+<wbr>", html)


class Number(str):
    """A number cell: the text the summary prints, with the value kept for LaTeX.

    Examples
    --------
    >>> cell = number_cell(2.5e-14)
    >>> cell, cell.value
    ('2.500e-14', 2.5e-14)
    """

    value: float

    def __new__(cls, text: str, value: float) -> Number:
        cell = super().__new__(cls, text)
        cell.value = float(value)
        return cell

    def __reduce__(self):
        return Number, (str(self), self.value)


def number_cell(value: float | None, digits: int = 4) -> str:
    """:func:`format_number`'s text as a :class:`Number` (NaN stays the text ``--``)."""
    text = format_number(value, digits)
    if text == "--" or isinstance(value, (int, np.integer)):
        return text
    return Number(text, float(value))


class PValue(Number):
    """A p-value cell: LaTeX shows one below 1e-4 as ``<0.0001`` (the text summary prints it
    as it is), so that a p-value of 1e-209 does not widen its column past the line.

    Examples
    --------
    >>> cell = p_value_cell(1.068e-29)
    >>> cell, type(cell).__name__
    ('1.068e-29', 'PValue')
    """

    def __reduce__(self):
        return PValue, (str(self), self.value)


def p_value_cell(value: float | None) -> str:
    """:func:`number_cell` of a p-value, as a :class:`PValue` (NaN stays the text ``--``)."""
    text = format_number(value)
    return text if text == "--" else PValue(text, float(value))


def format_ridge(value: float) -> str:
    """A ridge as the fit was given it: ``0`` or ``0.0001``, never ``0.0000``.

    Examples
    --------
    >>> format_ridge(0.0), format_ridge(1e-4), format_ridge(2.5e-7)
    ('0', '0.0001', '2.5e-07')
    """
    return f"{float(value):g}"


def block_letters(names: Iterable[str]) -> dict[str, str]:
    """Block name -> letter (A, B, ...; A1, B1, ... past 26 blocks), in the given order: the
    short names of the figures' key and of a LaTeX table whose labels would not fit.

    Examples
    --------
    >>> block_letters(["pca", "kpca_rbf"])
    {'pca': 'A', 'kpca_rbf': 'B'}
    """
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return {name: letters[i % 26] + (str(i // 26) if i >= 26 else "")
            for i, name in enumerate(names)}
