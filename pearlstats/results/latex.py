r"""LaTeX for papers: the summary's sections as booktabs floats that fit the text width.

The main table (the fit, the weights of the leading candidates, the strategies
and the notes) fits one page of a default ``article``; the other sections are
floats of their own. Panels are ``tabular*`` environments as wide as the line:
text columns wrap in ``p{}`` columns whose widths are the line less the
estimated widths of the number columns, so nothing is scaled, shrunk below
``\small`` or cut. Numbers sit in dcolumn ``D`` columns aligned on the point:
four decimals; a column whose largest magnitude is below 1e-4 or at least 1e4
in four decimals of a power of ten stated in the header, when every number of
it keeps four significant digits so; else each number below 1e-4 (or from 1e6)
as four significant digits times a power of ten, as the text summary prints it,
a p-value below 1e-4 as ``<0.0001`` (:func:`column_numbers`). A stub name that
never breaks ("Intercept") goes on a line of its own above its row's numbers
where such columns leave it no room.
Lines break between block names (after ``+`` or a comma), never at a name's
underscores; a name wider than its column (a long covariate beside eight number
columns) breaks inside it instead of running past the margin, at its underscores,
case changes and digits first (:func:`breakable`); a name of up to 12 characters
("Intercept") never breaks inside, and a stub name that would take more than two
lines goes on a line of its own above its row's numbers. Where whole names would leave
the page no room for one candidate, the main table's labels name the blocks by
letters, keyed in its Blocks row.

The preamble needs only :data:`LATEX_PREAMBLE` (booktabs, array, dcolumn); names
with characters pdflatex's fonts lack (CJK, emoji) need XeLaTeX or LuaLaTeX
(:func:`~pearlstats.results.formatting.latex_escape`).
nbconvert's LaTeX template loads booktabs and array but not dcolumn: each float
defines ``D`` as a right-aligned math column when dcolumn is absent (the
numbers of a column have the same decimals, so they still align on the point,
those times a power of ten aside),
which lets ``jupyter nbconvert --to pdf`` set a notebook's summaries.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..exceptions import OptionError
from .formatting import (
    Label,
    Number,
    PValue,
    block_letters,
    cell_latex,
    format_number,
    latex_escape,
)
from .latex_names import (
    WRAP_EM,
    breakable,
    breaks_inside,
    is_seamless,
    is_short,
    name_em,
    text_em,
    wrapped_lines,
)

__all__ = ["LATEX_PREAMBLE", "PANELS", "latex_float", "latex_number", "latex_pairs",
           "latex_panel", "summary_latex"]

LATEX_PREAMBLE = "\\usepackage{booktabs}\n\\usepackage{array}\n\\usepackage{dcolumn}"
PANELS = ("main", "candidates", "importance", "diagnostics", "stability", "uncertainty",
          "coefficients", "failures", "refits")
# lines a float beyond the main table may take (a page at \small holds about 48); rows past
# them are counted in one row
MAX_LINES = 36
# a name broken inside over more lines than this in its column (5 to 7 letters a line beside
# eight number columns) goes on a line of its own over its row's numbers (:func:`_own_lines`)
_NAME_LINES = 2
# a name that never breaks may be estimated this much wider than its column before it goes on
# a line of its own (:func:`_own_line`): "Intercept" (estimated 4.5 em, set 3.95) stands in
# the 3.7 em the line leaves beside seven number columns of four decimals
_OVER_EM = 1.0
_LABEL_EM = 20.0  # the main table's candidate labels wrap at about this width
# lines of \small text (11pt apart) a page of a default article gives the main table: its
# \textheight, 550pt on letter paper (the shorter of letter and A4), holds 50, less one for the
# estimate's error (at 50 the table with the nested SE's notes was 0.85pt too tall). At 48 the
# page kept 3 to 4 lines empty and the table folded candidates whose labels would have fitted.
_PAGE_LINES = 49
# the main table's caption, panel titles, rules and skips, in lines; the two panels' column
# headers are counted as set (:func:`_header_lines`: "SE (nested CV)" stacks on three lines).
# The estimate falls 1 to 3 lines short of what pdflatex leaves for the candidates' rows (five
# blocks, two long names, the nested SE's notes, the test fits with J = 31 and 255)
_FRAME_LINES = 3
_USES_EM = 20.0  # a strategy's candidate label longer than this goes on a line of its own
LEADING = 5  # candidates the main table lists by name
_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[+-]\d+)?$")
_DECIMALS = 4
_LINE_EM = 37.0  # a default article's text width (345pt) in em at \small
_TABCOLSEP_EM = 0.45  # the floats' \tabcolsep, 4pt, in em at \small (9pt)
# dcolumn's D where the preamble loaded it, else the same cells right-aligned in math mode
_D_FALLBACK = (r"\expandafter\ifx\csname NC@find@D\endcsname\relax"
               r"\newcolumntype{D}[3]{>{$}r<{$}}\fi")



def latex_number(text: str) -> str:
    r"""A number's text in math mode: exponents as powers of ten.

    Examples
    --------
    >>> latex_number("1.235e-05"), latex_number("-0.5")
    ('1.235\\times10^{-5}', '-0.5')
    """
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return rf"{mantissa}\times10^{{{int(exponent)}}}"


def _value(cell) -> float | None:
    if isinstance(cell, Number):
        return cell.value
    if not isinstance(cell, Label) and _NUMBER.match(str(cell).strip()):
        return float(str(cell))
    return None


def _cell_number(value: float, large: bool) -> str:
    """A value of a column that is not scaled, in math mode: four decimals, or four
    significant digits times a power of ten below 1e-4 (never ``0.0000`` for a value that
    is not zero), from 1e6, and with *large* from 1e4 (as the text summary prints it)."""
    if 1e4 <= abs(value) < 1e6 and not large:
        return f"{value:.{_DECIMALS}f}"
    return latex_number(format_number(value, _DECIMALS))


def _each_number(cells: list, values: list[float | None], power: int,
                 large: bool = False) -> list[str | None]:
    """The texts of :func:`column_numbers`, the column divided by ``10**power``; with *large*,
    values from 1e4 times a power of ten (:func:`_cell_number`)."""
    texts = []
    for cell, value in zip(cells, values):
        if value is None or not math.isfinite(value):
            texts.append(None)
        elif not isinstance(cell, Number) and float(value).is_integer() and "." not in str(cell):
            texts.append(str(int(value)))
        elif power:
            texts.append(f"{value / 10.0**power:.{_DECIMALS}f}")
        elif isinstance(cell, PValue) and 0 < value < 1e-4:
            texts.append("{<}0.0001")  # 1.890e-209 took a column 2 em wider
        else:
            texts.append(_cell_number(value, large))
    return texts


def _scalable(numbers: list[float], power: int) -> bool:
    """Whether every non-zero number divided by ``10**power`` keeps four significant digits
    in four decimals (at least 0.1): a column of 29990 and 2.7432 scaled by 1e4 showed the
    latter as 0.0003."""
    return all(abs(v) / 10.0**power >= 0.1 for v in numbers if v)


def column_numbers(cells: list) -> tuple[list[str | None], int]:
    r"""The numbers of a column as LaTeX, and the power of ten the column is shown in.

    Integers (counts, ranks) stay integers. When the column's largest magnitude
    is below 1e-4 or at least 1e4 and every non-zero number is at least a tenth
    of it, the numbers get four decimals after division by ``10**power``
    (stated in the header). Otherwise (``power`` 0) each number gets four
    decimals, or, below 1e-4 and from 1e6 (from 1e4 where that makes the
    column narrower), four significant digits times a power of ten
    (:func:`_cell_number`), so that a column spanning magnitudes (an intercept
    of 29990 above a slope of 2.7432) shows every number with its digits; a
    p-value (:class:`~pearlstats.results.formatting.PValue`) below 1e-4 is
    ``<0.0001``. Cells that are not numbers are None.

    Examples
    --------
    >>> column_numbers([Number("0.1235", 0.12345), Number("2.5e-14", 2.5e-14), "--"])
    (['0.1235', '2.500\\times10^{-14}', None], 0)
    >>> column_numbers([Number("3.2e-08", 3.2e-8), Number("1.1e-09", 1.1e-9)])
    (['3.2000', '0.1100'], -8)
    >>> column_numbers([Number("2.999e+04", 29990.06), Number("2.7432", 2.7432)])
    (['29990.0600', '2.7432'], 0)
    """
    values = [_value(cell) for cell in cells]
    numbers = [v for v in values if v is not None and math.isfinite(v)]
    largest = max((abs(v) for v in numbers), default=0.0)
    power = 0
    if largest and not 1e-4 <= largest < 1e4 and not any(isinstance(c, PValue) for c in cells):
        power = math.floor(math.log10(largest))
        if not _scalable(numbers, power):
            power = 0
    texts = _each_number(cells, values, power)
    if not power and any(1e4 <= abs(v) < 1e6 for v in numbers):
        # an intercept of 29990.0645 fixed takes five digits' width left of the point, fewer
        # than a power of ten takes right of it; beside values below 1e-4 (a power of ten
        # already to the right) it too is set as a power of ten, whichever is narrower
        powers = _each_number(cells, values, power, large=True)
        if reserved_em(powers) < reserved_em(texts):
            texts = powers
    return texts, power


# a power of ten after a number's decimals, in digits' widths (0.5 em at \small): the \times
# and its spaces 2.44, "10" 2, each character of the exponent 0.7 (script size), a minus 1.1
_TIMES = re.compile(r"\\times10\^\{(-?)(\d+)\}$")


def _right_digits(text: str) -> int:
    """Digits' widths a number's text takes right of its point (its power of ten included)."""
    right = text.split(".")[1]
    times = _TIMES.search(right)
    if not times:
        return len(right)
    sign, exponent = times.groups()
    return times.start() + math.ceil(4.44 + 0.7 * len(exponent) + 1.1 * bool(sign))


def _digits(texts: list[str | None]) -> tuple[int, int]:
    """Characters a ``D`` column reserves left and right of the point (its ``{left.right}``)."""
    left = max([len(t.split(".")[0]) for t in texts if t] + [1])
    right = max([_right_digits(t) for t in texts if t and "." in t] + [0])
    return left, right


def reserved_em(texts: list[str | None]) -> float:
    """Width of a ``D`` column at ``\\small``, in em: dcolumn reserves a digit's width (0.5
    em) for each place of its ``{left.right}`` and the point's, however narrow the numbers.

    Examples
    --------
    >>> reserved_em(["-152.1335", "0.0001", None]), reserved_em(["3", "12"])
    (4.28, 1.0)
    """
    left, right = _digits(texts)
    return 0.5 * (left + right) + (0.28 if right else 0.0)


def _entry_em(text: str) -> float:
    """Width of one number's text at ``\\small``, in em (as :func:`reserved_em` counts it)."""
    if "." not in text:
        return 0.5 * len(text)
    return 0.5 * (len(text.split(".")[0]) + _right_digits(text)) + 0.28


def decimal_aligned(texts: list[str | None]) -> bool:
    """Whether a number column aligns on the point (dcolumn's ``D``), or is right-aligned.

    A ``D`` column reserves the most digits any number has left of the point *and* the
    most any has right of it: a column of 5811.4470 above 6.070e4 set as a power of ten
    reserved four digits left and eight right, wider than either number (eight such
    columns of mixed magnitudes ran 34 pt past the margin). Such a column is right-aligned
    instead, as wide as its widest number; its fixed-point numbers, all with four
    decimals, still have their points one under the other.

    Examples
    --------
    >>> decimal_aligned(["-152.1335", "0.0001"])
    True
    >>> decimal_aligned(["5811.4470", "6.070\\times10^{4}"])
    False
    """
    shown = [t for t in texts if t]
    return not shown or reserved_em(shown) <= max(map(_entry_em, shown)) + 1e-9


def number_column_em(texts: list[str | None]) -> float:
    """Width of a number column at ``\\small``, in em: aligned on the point or to the right
    (:func:`decimal_aligned`)."""
    shown = [t for t in texts if t]
    return reserved_em(shown) if decimal_aligned(shown) else max(map(_entry_em, shown))


def header_em(header: object) -> float:
    """Estimated width of a column header: its widest word (words of number headers stack)."""
    if isinstance(header, Label):  # mathematics: commands and braces take no room
        return 0.85 * text_em(re.sub(r"\\[A-Za-z]+|[{}$_^]", "", header.latex))
    return max([text_em(word) for word in str(header).split()] + [0.0])


def _header_cell(header, kind: str, power: int, stack: bool) -> str:
    if kind != "D":
        return cell_latex(header)
    words = ([cell_latex(header)] if isinstance(header, Label) or not stack
             else [latex_escape(word) for word in str(header).split()])
    if power:
        words.append(rf"($\times10^{{{power}}}$)")
    stacked = r"\\".join(words)
    return rf"\multicolumn{{1}}{{c}}{{\begin{{tabular}}[b]{{@{{}}c@{{}}}}{stacked}\end{{tabular}}}}"


def _layout(columns: list[list], headers: list | None) -> tuple[list[str], list, list[float], bool]:
    """Per column: kind (``D`` numbers, else text), numbers, width in em; whether to stack.

    A number column's header is stacked word by word (so it is no wider than its
    numbers) only where the columns at their headers' width would crowd the line.
    """
    kinds, numbers, widths, flat = [], [], [], []
    for position, cells in enumerate(columns):
        texts, power = column_numbers(cells)
        shown = [t for t in texts if t is not None]
        header = headers[position] if headers else ""
        placeholders = sum(str(c).strip() in ("--", "") for c in cells)
        if headers and shown and len(shown) + placeholders >= 0.5 * len(cells):
            kinds.append("D")
            numbers.append((texts, power))
            words = [text_em(c) for c, t in zip(cells, texts) if t is None]  # e.g. a solver
            least = max([number_column_em(texts)] + words + [4.0 if power else 0.0])
            widths.append(max(least, header_em(header)))
            flat.append(max(least, text_em(cell_latex(header)) if not isinstance(header, Label)
                            else header_em(header)))
            continue
        kinds.append("l")
        numbers.append(([None] * len(cells), 0))
        widths.append(max([text_em(c) for c in cells] + [text_em(header) if header else 0]))
        flat.append(min(widths[-1], 12.0))
    stack = sum(flat) + 0.9 * (len(flat) - 1) > _LINE_EM
    if not stack:
        widths = [flat[i] if kind == "D" else widths[i] for i, kind in enumerate(kinds)]
    return kinds, numbers, widths, stack


def _wrapping(kinds: list[str], widths: list[float]) -> list[int]:
    """The text columns that wrap: those wider than ``10`` em, and the widest of the others
    until the columns that do not wrap, their gaps and 1 em to spare fit the line.

    A ``tabular*`` cannot shrink a column: short labels set whole beside eight number
    columns (the coefficients) ran past the margin.
    """
    text = sorted((i for i, kind in enumerate(kinds) if kind != "D"), key=lambda i: -widths[i])
    wrapping = [i for i in text if widths[i] > 10]
    room = _LINE_EM - 1 - 2 * (len(kinds) - 1) * _TABCOLSEP_EM
    for i in text:
        if sum(widths[j] for j in range(len(kinds)) if j not in wrapping) <= room:
            break
        if i not in wrapping:
            wrapping.append(i)
    return sorted(wrapping)


def _shares(kinds: list[str], widths: list[float]) -> tuple[float, int, dict[int, int]]:
    """Width of the columns that do not wrap (em), column gaps, and each wrapped column's share.

    Text wider than ``10`` em, or too wide for the line beside the other
    columns (:func:`_wrapping`), wraps in a ``p{}`` column, which gets a share
    (in percent) of what the line leaves; short text columns (labels such as
    "Family:") keep their natural width where the line has room.
    """
    wrapping = _wrapping(kinds, widths)
    fixed_em = sum(widths[i] for i in range(len(kinds)) if i not in wrapping)
    total = sum(widths[i] for i in wrapping) or 1.0
    return (fixed_em, 2 * (len(kinds) - 1),
            {i: max(1, round(100 * widths[i] / total)) for i in wrapping})


def _wrapped_em(kinds: list[str], widths: list[float], spare: float = 1.0
                ) -> dict[int, float]:
    """Estimated width in em of each wrapped text column, by position, *spare* em of the
    line left over (:func:`_spare`)."""
    fixed_em, seps, shares = _shares(kinds, widths)
    left = _LINE_EM - fixed_em - spare - seps * _TABCOLSEP_EM
    return {i: left * share / 100 for i, share in shares.items()}


def _spare(kinds: list[str], widths: list[float], columns: list[list]) -> float:
    """Em of the line the wrapped columns leave unused: 1 (the estimates are not exact), or 0
    where a name that never breaks (:func:`is_seamless`) is wider than its column.

    Beside seven number columns the coefficients' names are left about 3 em and
    "Intercept" needs 4: the em spared is what lets it stand whole in its column
    (the number columns' widths are exact, dcolumn's, so the line still holds them).
    """
    wrapped = _wrapped_em(kinds, widths)
    # a name alone in its cell: TeX may hyphenate the words of a sentence ("15 more rows")
    widest = {i: max([name_em(name) for cell in columns[i] for name in _names(cell)
                      if is_seamless(name) and " " not in _shown(cell).strip()] + [0.0])
              for i in wrapped}
    return 0.0 if any(widest[i] > wrapped[i] for i in wrapped) else 1.0


def _limits(kinds: list[str], widths: list[float], spare: float = 1.0) -> list[float]:
    """The width in em at which each column's names break (:func:`breakable`): a wrapped
    column's own (beside eight number columns about 4 em; names wider than it broke out
    past the margin), ``WRAP_EM`` for the others, which are narrower than that."""
    wrapped = _wrapped_em(kinds, widths, spare)
    return [wrapped.get(i, WRAP_EM) for i in range(len(kinds))]


def column_em(rows: list[list], headers: list | None, column: int) -> float | None:
    """Estimated width in em of a wrapped text *column* of a panel (None if it does not wrap)."""
    columns = [list(cells) for cells in zip(*rows)]
    kinds, _, widths, _ = _layout(columns, headers)
    return _wrapped_em(kinds, widths).get(column % len(kinds))


def _column_spec(kinds: list[str], widths: list[float], numbers: list, spare: float = 1.0
                 ) -> list[str]:
    """Column types: text wider than its share of the line becomes a ``p{}`` column, the
    line less the other columns and *spare* em (:func:`_spare`)."""
    fixed_em, seps, shares = _shares(kinds, widths)
    spec = []
    for i, kind in enumerate(kinds):
        if kind == "D" and not decimal_aligned(numbers[i][0]):
            spec.append(r">{$}r<{$}")
        elif kind == "D":
            left, right = _digits(numbers[i][0])
            spec.append(rf"D{{.}}{{.}}{{{left}.{right}}}")
        elif i in shares:
            share = shares[i]
            # 1em to spare: the estimates are not exact, and \extracolsep{\fill} takes up slack
            width = (rf"\dimexpr(\linewidth-{fixed_em + spare:.1f}em-{seps}\tabcolsep)*{share}"
                     r"/100\relax")
            spec.append(rf">{{\raggedright\arraybackslash}}p{{{width}}}")
        else:
            spec.append("l")
    return spec


def spanning_row(latex: str, columns: int, indent: str = "0pt") -> str:
    r"""*latex* over all *columns*, wrapped at the line less *indent*, taking no column width.

    A ``\multicolumn`` wider than the natural width of the columns it spans
    gives the excess to its last column (TeX's rule for spans): a title set as
    ``p{\linewidth}`` over the panel pushed the last column ("rank") to the
    right margin and its header to the middle of the line. A box of zero width
    holding the wrapped text leaves the columns their widths, and
    ``\extracolsep{\fill}`` spreads them over the line.
    """
    box = rf"\parbox[t]{{\dimexpr\linewidth-{indent}-1pt\relax}}{{\raggedright {latex}}}"
    return (rf"\multicolumn{{{columns}}}{{@{{\hspace{{{indent}}}}}l@{{}}}}"
            rf"{{\makebox[0pt][l]{{{box}}}}} \\")


def _title_row(title: str, columns: int) -> str:
    """A panel's title in italics over all its columns, wrapped if longer than the line."""
    return spanning_row(rf"\emph{{{cell_latex(title)}}}", columns)


def _names(cell: object) -> list[str]:
    """The names of a cell as LaTeX shows it: its text between ``+``, commas and spaces."""
    return [name for name in re.split(r"[+, ]", _shown(cell)) if name]


def _own_line(cell: object, width: float, narrowed: bool = False) -> bool:
    """Whether a stub cell in a column *width* em wide goes on a line of its own: a name that
    never breaks (:func:`is_seamless`) wider than the column (beside number columns spanning
    magnitudes, "Intercept" had 2 em), or more than ``_NAME_LINES`` lines in all, and a name
    broken inside it (:func:`breakable`) or, once such names have left the column
    (*narrowed*), any text ("15 more rows (in the text summary)" took 7 lines of the column
    they left).

    Examples
    --------
    >>> _own_line("ageatbaselineinyearsrecorded", 3.3), _own_line("bodymassindex", 3.3)
    (True, False)
    >>> _own_line("Intercept", 3.7), _own_line("pca+kpca_rbf+kpca_poly+kpca_sigmoid", 6.0)
    (False, False)
    >>> _own_line("Intercept", 2.0)
    True
    """
    if any(is_seamless(name) and name_em(name) > width + _OVER_EM for name in _names(cell)):
        return True  # a name that never breaks would run into the numbers
    return (wrapped_lines(_shown(cell), width) > _NAME_LINES
            and (narrowed or any(breaks_inside(name, width) and not is_short(name)
                                 for name in _names(cell))))


def _panel_layout(rows: list[list], headers: list | None
                  ) -> tuple[list[list], dict[int, object], list[str], list, list[float], bool,
                             float]:
    """How :func:`latex_panel` sets *rows*: the rows shown in the columns, the stubs set on a
    line of their own above their rows (:func:`_own_line`), by row number, and per column
    kind, numbers and width, whether to stack the headers, and the em spared (:func:`_spare`).

    A name in the stub column's own line leaves that column (its cell empty): the column
    is then sized by the names left in it, which may narrow it, so the names are weighed
    again until none moves.
    """
    above: dict[int, object] = {}
    while True:  # at most one pass per row
        shown = [["", *row[1:]] if r in above else row for r, row in enumerate(rows)]
        columns = [list(column) for column in zip(*shown)] if rows else [[] for _ in headers or []]
        kinds, numbers, widths, stack = _layout(columns, headers)
        spare = _spare(kinds, widths, columns)
        width = _wrapped_em(kinds, widths, spare).get(0)
        moved = {r: row[0] for r, row in enumerate(rows)
                 if r in above or width is not None and _own_line(row[0], width, bool(above))}
        if moved.keys() == above.keys():
            return shown, above, kinds, numbers, widths, stack, spare
        above = moved


def latex_panel(rows: list[list], headers: list | None, title: str | None = None,
                below: dict[int, str] | None = None) -> str:
    """One panel: a ``tabular*`` as wide as the line, its title above the rules.

    Parameters
    ----------
    rows : list of list
        Body cells, stubs included as the first cell of each row.
    headers : list, optional
        One header per column (the stub column's may be empty); None for a
        key-value panel, whose values are text.
    title : str, optional
        Shown in italics above the panel.
    below : dict, optional
        Row number -> text set on a line of its own under that row, the whole
        width (a label too long for its column).

    A stub name broken over more than two lines of a narrow column (a long
    covariate beside seven number columns) is set on a line of its own above
    its row instead, the whole width (:func:`_panel_layout`).
    """
    below = below or {}
    rows, above, kinds, numbers, widths, stack, spare = _panel_layout(rows, headers)
    spec = _column_spec(kinds, widths, numbers, spare)
    limits = _limits(kinds, widths, spare)
    lines = [r"\begin{tabular*}{\linewidth}{@{\extracolsep{\fill}}" + "".join(spec) + "@{}}"]
    numbers_em = sum(width for width, kind in zip(widths, kinds) if kind == "D")
    if numbers_em + 2 * (len(kinds) - 1) * _TABCOLSEP_EM > _LINE_EM - 1:
        # number columns that fill the line with the float's 4pt gaps (eight columns of
        # powers of ten) get 1pt ones: \extracolsep{\fill} still spreads what room is left
        lines = [r"\begingroup\setlength{\tabcolsep}{1pt}"] + lines
    if title:
        lines.append(_title_row(title, len(kinds)))
    lines.append(r"\toprule")
    if headers:
        cells = [_header_cell(h, kind, power, stack)
                 for h, kind, (_, power) in zip(headers, kinds, numbers)]
        lines += [" & ".join(cells) + r" \\", r"\midrule"]
    for r, row in enumerate(rows):
        if r in above:
            lines.append(spanning_row(breakable(cell_latex(above[r]), _LINE_EM - 1), len(kinds)))
            if not any(str(cell).strip() for cell in row):
                continue  # a text alone in its row ("15 more rows"): no empty row under it
        cells = []
        for cell, kind, (texts, _), limit in zip(row, kinds, numbers, limits):
            if kind != "D":
                cells.append(breakable(cell_latex(cell), limit))
            elif texts[r] is not None:
                cells.append(texts[r])
            else:
                cells.append(rf"\multicolumn{{1}}{{c}}{{{cell_latex(str(cell).strip())}}}")
        lines.append(" & ".join(cells) + r" \\")
        if r in below:
            lines.append(spanning_row(breakable(cell_latex(below[r]), _LINE_EM - 1), len(kinds),
                                      "1em"))
    lines += [r"\bottomrule", r"\end{tabular*}"]
    if lines[0].startswith(r"\begingroup"):
        lines.append(r"\endgroup")
    return "\n".join(lines)


def _tt_em(text: str) -> float:
    """Width of typewriter text in em: every character of cmtt is 0.525 em wide."""
    return 0.525 * len(text)


def _typewriter(value: object) -> bool:
    return isinstance(value, Label) and r"\texttt" in value.latex


def _value_em(value: object) -> float:
    """Estimated width of a header value; the formula is typewriter, wider than its text."""
    return 0.55 * len(value) if _typewriter(value) else text_em(value)


def _two_columns(short: list[tuple]) -> list[tuple]:
    """Pairs in two columns read down, as a flat list of (left, right) alternating pairs."""
    half = (len(short) + 1) // 2
    return [pair for row in zip(short[:half], short[half:] + [("", "")]) for pair in row]


def _pairs_em(short: list[tuple]) -> float:
    """Estimated width of the two columns of pairs: widest label and value of each, gaps."""
    if not short:
        return 0.0
    columns = [short[0::2], short[1::2]]
    return sum(max(text_em(label) for label, _ in column) + max(_value_em(v) for _, v in column)
               for column in columns if column) + 3 * 0.9


def _split_pairs(rows: list[list]) -> tuple[list[tuple], list[tuple], float]:
    """The pairs of :func:`latex_pairs` with values on rows of their own, the rest in two
    columns (alternating pairs), and the width of the labels before the long values (em)."""
    pairs = [(row[i], row[i + 1]) for i in (0, 2) for row in rows if str(row[i]).strip()]
    long = [pair for pair in pairs if _value_em(pair[1]) > 16]
    short = _two_columns([pair for pair in pairs if pair not in long])
    while _pairs_em(short) > _LINE_EM - 1:  # the widest value to a row of its own
        widest = max((pair for pair in short if pair[0]), key=lambda pair: _value_em(pair[1]))
        long = [pair for pair in pairs if pair in long or pair == widest]
        short = _two_columns([pair for pair in pairs if pair not in long])
    label_em = 1.0 + max(text_em(label) for label, _ in long + short[::2] or [("", "")])
    return long, short, label_em


def latex_pairs(rows: list[list], title: str | None = None) -> str:
    """A key-value panel: long values (the formula, the blocks) on rows of their own.

    *rows* hold two ``label, value`` pairs each (as the text summary's header);
    short values are set two pairs to a row, long ones span the line after
    their label, so a long formula wraps over the whole width.
    """
    long, short, label_em = _split_pairs(rows)
    span_em = _LINE_EM - label_em - 2 * _TABCOLSEP_EM
    span = (rf"\multicolumn{{3}}{{>{{\raggedright\arraybackslash}}p{{\dimexpr\linewidth"
            rf"-{label_em:.1f}em-2\tabcolsep\relax}}}}")
    lines = [r"\begin{tabular*}{\linewidth}{@{\extracolsep{\fill}}llll@{}}"]
    if title:
        lines.append(_title_row(title, 4))
    lines.append(r"\toprule")
    lines += [rf"{cell_latex(label)} & {span}{{{breakable(cell_latex(value), span_em)}}} \\"
              for label, value in long]
    for first in range(0, len(short), 2):
        cells = [cell_latex(cell) for pair in short[first:first + 2] for cell in pair]
        lines.append(" & ".join(cells + [""] * (4 - len(cells))) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular*}"]
    return "\n".join(lines)


def latex_float(panels: list[str], caption: str | None, notes: Sequence[str] = (),
                label: str | None = None, floating: bool = True) -> str:
    """Panels in one ``table`` float at ``\\small``, the notes below them inside the float.

    ``floating=False`` sets them in place, in a group of their own (a notebook's
    output, which must stay in its cell when exported to PDF).
    """
    begin, end = ((r"\begin{table}[htbp]", r"\end{table}") if floating
                  else (r"\par\medskip\begingroup", r"\par\endgroup\medskip"))
    lines = [begin, r"\centering", r"\small", r"\setlength{\tabcolsep}{4pt}", _D_FALLBACK]
    if caption:
        lines.append(rf"\caption{{{cell_latex(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines.append("\n\\par\\smallskip\n".join(panels))
    if notes:
        text = " ".join(breakable(cell_latex(note), _LINE_EM) for note in notes)
        lines += [r"\par\smallskip",
                  rf"\parbox{{\linewidth}}{{\raggedright\emph{{Notes:}} {text}}}"]
    lines.append(end)
    return "\n".join(lines)


def leading_rows(headers: list, rows: list[list], top: int, lines: float | None = None
                 ) -> tuple[list, list[list]]:
    """Weight, CV risk, SE and rank of the first *top* candidates; the rest counted in one row.

    The row of the rest gives their number and total weight. With *lines*, fewer
    candidates are named (at least one) where their wrapped labels would take more.
    """
    keep = [0] + [headers.index(name) for name in ("weight", "CV risk", "SE", "rank")]
    shown = [[row[i] for i in keep] for row in rows]
    if len(shown) > top or lines is not None:
        top = _rows_within(shown, top, lines)
    if len(shown) > top:
        rest = shown[top:]
        total = sum(_value(row[1]) or 0.0 for row in rest)
        summed = Number(f"{total:.4f}", total)
        which = "candidate" if len(rest) == 1 else "candidates"
        shown = shown[:top] + [[f"{len(rest)} other {which} with non-zero weight", summed,
                                "", "", ""]]
    return [headers[i] for i in keep], shown


def _rows_within(rows: list[list], top: int, lines: float | None) -> int:
    """How many of the first *top* rows fit *lines*, a label wrapping at ``_LABEL_EM``.

    The row counting the rest takes a line only where some rows are left out:
    five candidates whose labels took exactly the lines the page left were
    counted a line over, and the fifth folded into "1 other candidate".
    At least one row is named.
    """
    if lines is None:
        return top
    used = 0.0
    for count, row in enumerate(rows[:top]):
        used += wrapped_lines(_shown(row[0]), _LABEL_EM)
        rest = 1.0 if count + 1 < len(rows) else 0.0  # a row for those not named
        if used + rest > lines:
            return max(count, 1)
    return top


def main_table_lines(sections: dict, notes: Sequence[str]) -> float:
    """Lines of \\small text a page leaves for the main table's candidate rows (an estimate).

    The formula and the blocks wrap over the line less a label, "uses" in its
    column, the notes over the whole line, names broken only where wider than the line
    (:func:`wrapped_lines`);
    the other header pairs take a line per two; the panels' column headers as
    stacked (:func:`_header_lines`); caption, titles and rules ``_FRAME_LINES``.
    """
    long, short, label_em = _split_pairs(sections["header"][1])
    span = _LINE_EM - label_em - 2 * _TABCOLSEP_EM
    header = 2 + len(short) // 2 + sum(
        wrapped_lines(value, span, _tt_em) if _typewriter(value)
        else wrapped_lines(_shown(value), span) for _, value in long)
    shown, below, width = _strategies_rows(*sections["strategies"][:2])
    uses = sum(1 + wrapped_lines(below[p], _LINE_EM - 1) if p in below
               else wrapped_lines(_shown(row[-1]), width) if width else 1
               for p, row in enumerate(shown))
    words = sum(text_em(note) for note in notes)
    c_headers, c_rows = sections["candidates"][:2]
    c_headers, c_rows = leading_rows(c_headers, c_rows, top=max(len(c_rows), 1))
    columns = _header_lines(c_rows, c_headers) + _header_lines(shown, sections["strategies"][0])
    return (_PAGE_LINES - 2 - header - _FRAME_LINES - columns - uses
            - math.ceil(words / _LINE_EM))


def _header_lines(rows: list[list], headers: list) -> int:
    """Lines the column headers of a panel of *rows* take as :func:`latex_panel` sets them: a
    number column's header stacked a word to a line where the line is crowded, a power of ten
    on a line of its own under it."""
    _, _, kinds, numbers, _, stack, _ = _panel_layout(rows, headers)
    return max([(len(str(header).split()) if stack and not isinstance(header, Label) else 1)
                + (power != 0)
                for header, kind, (_, power) in zip(headers, kinds, numbers) if kind == "D"]
               + [1])


def _shown_em(cell: object) -> float:
    """Estimated width of a cell as LaTeX shows it (a :class:`Label` by its own form)."""
    return text_em(cell.latex) if isinstance(cell, Label) else text_em(cell)


def _shown(cell: object) -> str:
    """A cell's text as LaTeX shows it: a :class:`Label` by its own form (``\\_`` as ``_``)."""
    return cell.latex.replace(r"\_", "_") if isinstance(cell, Label) else str(cell)


def _names_em(cell: object) -> float:
    """Estimated width of the widest name of a cell as shown (names do not break), in em."""
    return max(text_em(piece) for piece in re.split(r"[+, ]", _shown(cell)))


def _strategies_rows(headers: list, rows: list[list]
                     ) -> tuple[list[list], dict[int, Label], float | None]:
    """The strategies' rows, a "uses" label that does not fit its column on a line of its own.

    A label longer than ``_USES_EM`` goes below its row, as does one holding a
    name wider than the column (a name does not break); the column's estimated
    width (None when it does not wrap) comes with them.
    """
    below: dict[int, Label] = {}
    while True:  # moving a label may narrow the column; at most one pass per row
        shown = [[*row[:-1], ""] if p in below else row for p, row in enumerate(rows)]
        width = column_em(shown, headers, -1)
        moved = {p: Label(f"uses: {row[-1]}") for p, row in enumerate(rows)
                 if p in below or _shown_em(row[-1]) > _USES_EM
                 or (width is not None and _names_em(row[-1]) > width)}
        if moved.keys() == below.keys():
            return shown, below, width
        below = moved


def _strategies_panel(headers: list, rows: list[list], title: str) -> str:
    """The strategies; a candidate label too long for the "uses" column on a line of its own."""
    shown, below, _ = _strategies_rows(headers, rows)
    return latex_panel(shown, headers, title, below)


def _capped(rows: list[list], headers: list | None) -> list[list]:
    """The rows that fit :data:`MAX_LINES` (long labels wrap in their columns' widths, or
    take a line of their own, as :func:`latex_panel` sets them), the rest counted in one row."""
    if not rows:
        return rows
    shown, above, kinds, _, widths, _, spare = _panel_layout(rows, headers)
    limits = _limits(kinds, widths, spare)
    # cells are counted at WRAP_EM, or at their column's width where it is narrower and its
    # long names left it (those columns are a few em wide; elsewhere the count is as before)
    widths = [min(limit, WRAP_EM) if above else WRAP_EM for limit in limits]
    used = 0
    for position, row in enumerate(shown):
        # a stub on a line of its own takes its lines over the row's
        used += wrapped_lines(_shown(above[position]), _LINE_EM - 1) if position in above else 0
        used += max(wrapped_lines(cell, width) for cell, width in zip(row, widths))
        if used > MAX_LINES - 1 and position < len(rows) - 1:
            rest = len(rows) - position
            return rows[:position] + [[f"{rest} more rows (in the text summary)"]
                                      + [""] * (len(row) - 1)]
    return rows


_BLOCKS_ROW = re.compile(r"Blocks \(M = \d+\):")
_BLOCK_DIM = re.compile(r"(\S+) \((\d+)\)")


def _lettered(sections: dict) -> dict:
    """The main table's sections with each block as a letter in the candidates' and the
    strategies' labels, the header's Blocks row the key (``A = pca_whitened (2), ...``).

    The text keeps the names (a :class:`Label`'s LaTeX form is the lettered one).
    """
    header_rows = sections["header"][1]
    listed = [str(row[i + 1]) for row in header_rows for i in (0, 2)
              if _BLOCKS_ROW.fullmatch(str(row[i]).strip())]
    blocks = [_BLOCK_DIM.fullmatch(part.strip()) for part in ", ".join(listed).split(", ")]
    if not listed or not all(blocks):
        return sections
    letters = block_letters([match.group(1) for match in blocks])
    # a letter stays with its name; the line may break before a dimension or after a comma
    key = ", ".join(rf"{letters[m.group(1)]}~=~{latex_escape(m.group(1))} ({m.group(2)})"
                    for m in blocks)

    def short(label: object) -> object:
        parts = str(label).split("+")
        if isinstance(label, Label) or not all(part in letters for part in parts):
            return label  # a sentence ("5 candidates"), or a form of its own
        return Label(str(label), latex="+".join(letters[part] for part in parts))

    header = [[Label(str(cell), latex=key) if i % 2 and _BLOCKS_ROW.fullmatch(
        str(row[i - 1]).strip()) else cell for i, cell in enumerate(row)] for row in header_rows]
    headers, rows, title = sections["candidates"]
    s_headers, s_rows, s_title = sections["strategies"]
    return {**sections, "header": (sections["header"][0], header, sections["header"][2]),
            "candidates": (headers, [[short(row[0]), *row[1:]] for row in rows], title),
            "strategies": (s_headers, [[*row[:-1], short(row[-1])] for row in s_rows], s_title)}


def check_panels(panels: str | Sequence[str], available: Sequence[str]) -> list[str]:
    """The panels asked for, in :data:`PANELS` order, of those this summary has."""
    asked = [panels] if isinstance(panels, str) else list(panels)
    if asked == ["all"]:
        asked = list(PANELS)
    unknown = [name for name in asked if name not in PANELS]
    if unknown or not asked:
        raise OptionError(f"panels={panels!r}: {unknown or 'none given'} not known; use 'main', "
                          f"'all' or a list of {list(PANELS)}")
    return [name for name in PANELS if name in asked and (name == "main" or name in available)]


def summary_latex(sections: dict, notes: dict, panels: str | Sequence[str], caption: str | None,
                  label: str | None, top: int, captions: bool = True) -> str:
    """The floats of a summary: *sections* maps a panel name to (headers, rows, title).

    ``captions=False`` is a notebook's form: each title above its panel instead
    of as a caption, and no floats, so that every section stays in its cell's
    output when the notebook is exported to PDF.
    """
    out = []
    for name in check_panels(panels, list(sections)):
        suffix = f"{label}:{name}" if label and name != "main" else label
        if name == "main":
            main = sections
            lines = main_table_lines(main, notes.get("main", ()))
            headers, rows = leading_rows(*main["candidates"][:2], top, lines)
            if rows and lines < wrapped_lines(_shown(rows[0][0]), _LABEL_EM) + 1:
                # whole names leave the page no room for one candidate's label (long names,
                # many blocks): the blocks as letters, the header's Blocks row their key
                main = _lettered(sections)
                lines = main_table_lines(main, notes.get("main", ()))
                headers, rows = leading_rows(*main["candidates"][:2], top, lines)
            title = caption or main["header"][2]
            parts = [latex_pairs(main["header"][1], None if captions else title),
                     latex_panel(rows, headers, "Weights of the leading candidates"),
                     _strategies_panel(*main["strategies"])]
        else:
            headers, rows, title = sections[name]
            parts = [latex_panel(_capped(rows, headers), headers, None if captions else title)]
        out.append(latex_float(parts, title if captions else None, notes.get(name, ()), suffix,
                               floating=captions))
    return "\n\n".join(out)
