r"""Where a name may break in a LaTeX table cell, and how many lines a cell then takes.

Block names, covariates and candidate labels are identifiers, not words: TeX hyphenates none of
them (and no word that starts a cell). :func:`breakable` gives a cell's LaTeX its break
points (after ``+`` and commas between block names; inside a name only where its column is too
narrow for it, at its seams first), and :func:`wrapped_lines` counts the lines TeX then sets,
so that :mod:`pearlstats.results.latex` can size columns and fit tables to their pages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = ["WRAP_EM", "breakable", "breaks_inside", "is_seamless", "is_short", "name_em",
           "text_em", "wrapped_lines"]

# a long cell's lines are counted at this width (em) where its column does not wrap; a wrapped
# column breaks the names wider than itself (beside many number columns it is about 4 em)
WRAP_EM = 12.0
# a name breaks inside when its estimate exceeds this share of its column: text_em is an average
# (mmmm is 1.7 times its estimate, illicit 0.7 times), and the break points a name that fits
# gets go unused (their penalties below), so this errs towards giving them
_BREAK_SHARE = 0.8
# penalties of the break points inside a name: TeX's line demerits are (10 + badness)^2 +
# penalty^2, the badness 0 in a ragged column. At its boundaries (5^2 < 10^2) a line is saved
# before a name is kept whole, so the fewest lines are those of packing its parts
# (wrapped_lines), and a break after "+" (0) wins where both take the lines; between other
# characters (50^2 = 25 lines) only where a part is wider than the column
_PART_BREAK = r"\penalty5 "
_CHARACTER_BREAK = r"\penalty50 "
# a name of at most this many characters never breaks inside ("Interc|ept" and "candi|dates"
# read worse than a column made wider for them, by the layout's spare em, or a name sticking
# out a little); one joined by underscores may still break after them where its column is
# narrower
_SHORT = 12

# a name joined by underscores as LaTeX (kpca\_cosine): not a command's tail (\foo\_)
_UNDERSCORED = re.compile(r"(?<![\\A-Za-z0-9])(?:[A-Za-z0-9]*\\_)+[A-Za-z0-9]*")
# a name's pieces as LaTeX or as text: an escaped character (\_), a command with its braced
# arguments (\texttt{\char34}, \ensuremath{\lambda}), or one character
_TOKEN = re.compile(r"\\(?:[A-Za-z]+(?:\{(?:[^{}]|\{[^{}]*\})*\})*|.)|.", re.DOTALL)
# a word of a name: letters, digits, latex_escape's escapes and the punctuation of formula terms
# (Q("x"), kpca_rbf[0], np.log(x)); never the tail of a command (\allowbreak)
_NAME_TOKEN = (r"(?:\\(?:[_%&#]|texttt\{\\char34\}|ensuremath\{(?:[^{}]|\{[^{}]*\})*\}"
               r"|text[a-z]+\{\})|[^\W_]|[_.'\"()\[\]:;/*=!?@^|<>-])")
_WORD = re.compile(rf"(?<![\\A-Za-z]){_NAME_TOKEN}+")
_MATH = re.compile(r"(\$[^$]*\$)")
# a name's parts end after these (kpca_|rbf, np.|log(|x))
_PART_ENDS = ("_", r"\_", "(", "[", ".", "/", "-", ":")

# estimated widths at \small, in em: generous, since \extracolsep{\fill} absorbs the excess
_EM = {"digit": 0.5, "upper": 0.75, "lower": 0.47, "space": 0.33}


def text_em(text: str) -> float:
    """Estimated width of *text* at ``\\small`` in em (upper-case and digits wider)."""
    width = 0.0
    for char in str(text):
        kind = ("digit" if char.isdigit() else "upper" if char.isupper()
                else "space" if char.isspace() else "lower")
        width += _EM[kind]
    return width


def _token_em(token: str) -> float:
    """Estimated width of one piece of a name (:data:`_TOKEN`) at ``\\small``, in em."""
    if len(token) > 2 and token.startswith("\\"):
        return 0.55  # a quote, a Greek letter or a symbol, not the letters of its command
    return text_em(token[-1])  # a character, escaped (\_) or not


def name_em(latex: str) -> float:
    """Estimated width of a name as LaTeX (``kpca\\_cosine``) or as text, at ``\\small``, in em.

    Examples
    --------
    >>> name_em(r"Q(\\texttt{\\char34}bmi\\texttt{\\char34})") == name_em('Q("bmi")') + 0.16
    True
    """
    return sum(_token_em(token) for token in _TOKEN.findall(latex))


def _parts(name: str) -> list[str]:
    """A name cut where a line may break inside it: after an underscore or ``(``, ``[``,
    ``.``, ``/``, ``-``, ``:``, at a change of case (``High|Density``, ``HDL|Level``) and
    between letters and digits (``pca|2020``).

    Examples
    --------
    >>> _parts(r"HDLCholesterol\\_level2")
    ['HDL', 'Cholesterol\\\\_', 'level', '2']
    """
    tokens = _TOKEN.findall(name)
    parts = tokens[:1]
    for before, token, after in zip(tokens, tokens[1:], tokens[2:] + [""]):
        single = len(before) == len(token) == 1
        cut = (before in _PART_ENDS
               or single and before.islower() and token.isupper()
               or single and before.isupper() and token.isupper() and after.islower()
               or single and before.isalnum() and token.isalnum()
               and before.isdigit() != token.isdigit())
        if cut:
            parts.append(token)
        else:
            parts[-1] += token
    return parts


def breaks_inside(name: str, width: float) -> bool:
    """Whether *name* gets break points inside it in a column *width* em wide."""
    return name_em(name) > _BREAK_SHARE * width


def is_short(name: str) -> bool:
    """Whether *name* (LaTeX or text) is short enough never to break (:data:`_SHORT`).

    Examples
    --------
    >>> is_short("Intercept"), is_short(r"kpca\\_sigmoid"), is_short("ageatbaselineinyears")
    (True, True, False)
    """
    return len(_TOKEN.findall(name)) <= _SHORT


def _broken(name: str, width: float) -> str:
    r"""*name* (LaTeX) with break points: between its parts (:func:`_parts`), and between the
    characters of a part that is itself too wide for the column.

    The break points are penalties, which print nothing: the name copies and
    searches whole on each line, and no hyphen suggests one the name lacks.
    """
    pieces = []
    for part in _parts(name):
        if not breaks_inside(part, width):
            pieces.append(part)
            continue
        tokens = _TOKEN.findall(part)
        # no line of one or two characters ("d" under "ecorde"): the first two and the last
        # three stay together, as TeX's \lefthyphenmin and \righthyphenmin keep a hyphen's
        pieces.append("".join(tokens[:2]) + "".join(
            (_CHARACTER_BREAK if 2 <= i <= len(tokens) - 3 else "") + token
            for i, token in enumerate(tokens[2:], start=2)))
    return _PART_BREAK.join(pieces)


def _word(name: str, width: float) -> str:
    """One word of a cell's LaTeX in a column *width* em wide: whole (a name joined by
    underscores boxed, so that it never breaks at them; a short one wider than the column
    free to break after them) or, too wide and not short (:func:`is_short`), :func:`_broken`."""
    if breaks_inside(name, width) and not is_short(name):
        return _broken(name, width)
    return _UNDERSCORED.sub(lambda match: _unbroken(match.group(0), width), name)


def _unbroken(name: str, width: float) -> str:
    """A name joined by underscores (LaTeX) boxed whole, or free to break after them where
    it is wider than its column, *width* em."""
    if name_em(name) <= width:
        return rf"\mbox{{{name}}}"
    return name.replace(r"\_", r"\_\allowbreak{}")  # kpca\_|sigmoid rather than past the margin


def is_seamless(name: str) -> bool:
    """Whether *name* never breaks in any column: short (:func:`_short`), no underscore.

    Examples
    --------
    >>> is_seamless("Intercept"), is_seamless("kpca_sigmoid"), is_seamless(r"kpca\\_rbf")
    (True, False, False)
    """
    return is_short(name) and "_" not in name


def breakable(latex: str, width: float = WRAP_EM) -> str:
    r"""Allow line breaks after ``+`` (between block names) and commas; names stay whole
    where their column, *width* em wide (by default ``WRAP_EM``), holds them.

    A name joined by underscores (``kpca_cosine``) is boxed, so it never breaks
    at them ("kpca\_" on one line, "cosine" on the next). A name wider than
    about *width* (a covariate beside eight number columns, whose column is
    about 4 em), unless it is short (:data:`_SHORT` characters: "Intercept"),
    may break inside instead of running past the margin: at its
    parts (:func:`_parts`), and a part wider than the column between its
    characters (TeX breaks no name of a cell itself: it hyphenates no word that
    starts a paragraph, and its patterns are for words, not identifiers).

    Examples
    --------
    >>> print(breakable(r"pca+kpca\_cosine"))
    pca+\allowbreak{}\mbox{kpca\_cosine}
    >>> print(breakable(r"age\_at\_baseline", width=6.0))
    age\_\penalty5 at\_\penalty5 baseline
    >>> print(breakable(r"bodymassindex", width=3.0).replace(r"\penalty50 ", "|"))
    bo|d|y|m|a|s|s|i|n|dex
    >>> print(breakable(r"Intercept", width=3.0))
    Intercept
    """
    latex = "".join(piece if _MATH.fullmatch(piece) else
                    _WORD.sub(lambda match: _word(match.group(0), width), piece)
                    for piece in _MATH.split(latex))
    return latex.replace("+", r"+\allowbreak{}").replace(",", r",\allowbreak{}")


def _units(piece: str, width: float) -> list[tuple[str, bool]]:
    """The text between a piece's break points, as :func:`breakable` allows them, and
    whether each breaks between its characters."""
    name = piece.rstrip("+, ")
    if not name or is_short(name) or not breaks_inside(name, width):
        return [(piece, False)]
    parts = _parts(name)
    parts[-1] += piece[len(name):]
    return [(part, breaks_inside(part.rstrip("+, "), width)) for part in parts]


def wrapped_lines(text: object, width: float, em: Callable[[str], float] = text_em) -> int:
    """Lines *text* takes in a column *width* em wide, broken as :func:`breakable` allows.

    Lines break after ``+`` and commas and at spaces; a name wider than about
    the column breaks at its parts (:func:`_parts`), the fewest lines TeX finds
    with them, and a part wider than the column fills the lines it needs,
    starting on the line before where that saves a line (as TeX's penalties
    choose). *em* estimates a piece's width (:func:`text_em`, or a typewriter
    font's).

    Examples
    --------
    >>> wrapped_lines("kpca_sigmoid+kpca_cosine", 8.0), wrapped_lines("pca+pca", 8.0)
    (2, 1)
    >>> wrapped_lines("HighDensityLipoproteinFactors", 6.0)  # HighDensity|Lipoprotein|Factors
    3
    >>> wrapped_lines("bodymassindexatbaseline", 4.0)  # 10.8 em
    3
    """
    lines, used = 1, 0.0
    for piece in re.split(r"(?<=[+, ])", str(text)):
        for unit, inside in _units(piece, width):
            size = em(unit)
            if inside:  # fills lines, from a line of its own unless the line before saves one
                alone = math.ceil(size / width)
                if used and math.ceil((used + size) / width) - 1 >= alone:
                    lines, used = lines + 1, 0.0
                extra = math.ceil((used + size) / width) - 1
                lines, used = lines + extra, used + size - extra * width
                continue
            if used and used + em(unit.rstrip()) > width:
                lines, used = lines + 1, 0.0
            used += size
            if used > width and not is_seamless(unit.rstrip("+, ")):
                # wider than the column: breaks after its underscores, or, kept whole, sticks
                # out (a short one without them widens the column instead: the layout's spare em)
                extra = math.ceil(used / width) - 1
                lines, used = lines + extra, used - extra * width
    return lines
