"""The text summary: every section laid out at one width, at most 100 columns.

Each section (a statsmodels ``SimpleTable``) becomes a panel as wide as the
widest panel needs, capped at :data:`WIDTH`: text columns (a formula, a
candidate label, the strategies' "uses") wrap after a space, a ``+`` or a
comma, numbers stay whole and right-aligned, and a panel narrower than the
others widens its widest text column, so every panel's rules line up. Column
headers are underlined one column at a time, which shows where each column
starts. Notes wrap at the same width.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from statsmodels.iolib.table import SimpleTable

from .formatting import Number

__all__ = ["WIDTH", "layout_text", "table_cells", "wrap_text"]

WIDTH = 100
_GAP = "  "
_MIN_WRAPPED = 12  # a wrapping column is never made narrower than this
_NUMBER = re.compile(r"^-?\d+(\.\d+)?(e[+-]\d+)?$")
_BREAK = re.compile(r"[^ +,]*[ +,]?")


def table_cells(table: SimpleTable) -> tuple[list | None, list[list]]:
    """(header row or None, body rows) of a SimpleTable, cells as given (Labels kept)."""
    rows = [[cell.data for cell in row] for row in table]
    if rows and table[0].datatype == "header":
        return rows[0], rows[1:]
    return None, rows


def wrap_text(text: str, width: int) -> list[str]:
    """Lines of at most *width* characters, broken after a space, ``+`` or comma.

    A word longer than *width* is split; nothing is dropped. A ``+`` that
    would stand on a line of its own starts the next line, with its term.

    Examples
    --------
    >>> wrap_text("y ~ block(a) + block(b)", 14)
    ['y ~ block(a) +', 'block(b)']
    >>> wrap_text("pca+kpca_rbf+kpca_poly", 10)
    ['pca+', 'kpca_rbf+', 'kpca_poly']
    >>> wrap_text("y ~ block(a) + block(bbbbbbbb) + c", 12)
    ['y ~ block(a)', '+ block(bbbb', 'bbbb) + c']
    """
    text = str(text)
    if len(text) <= width:
        return [text]
    lines, line = [], ""
    for piece in _BREAK.findall(text):
        if len((line + piece).rstrip()) <= width:
            line += piece
            continue
        if line.strip() == "+":  # a line holding only "+" reads as a lost term
            line += piece
        else:
            if line.strip():
                lines.append(line.rstrip())
            line = piece.lstrip()
        while len(line.rstrip()) > width:
            lines.append(line[:width])
            line = line[width:]
    if line.strip():
        lines.append(line.rstrip())
    return lines


class _Panel:
    """One section's cells, column kinds and widths, laid out at a given total width."""

    def __init__(self, table: SimpleTable):
        self.title = table.title or ""
        self.headers, self.rows = table_cells(table)
        columns = [list(column) for column in zip(*self.rows)] if self.rows else []
        self.numeric = [self._is_numeric(cells) for cells in columns]
        if self.headers is None and len(columns) == 4:  # label: value pairs, labels right
            self.numeric = [True, False, True, False]
        heads = self.headers or [""] * len(columns)
        self.natural = [max([len(str(c)) for c in cells] + [len(str(h))])
                        for cells, h in zip(columns, heads)]

    def _is_numeric(self, cells: list) -> bool:
        numbers = sum(isinstance(c, Number) or bool(_NUMBER.match(str(c).strip()))
                      for c in cells)
        # placeholders ("--", and blanks: the t of a block column) do not make a column text
        return self.headers is not None and numbers > 0 and 2 * numbers >= len(cells) - sum(
            str(c).strip() in ("--", "") for c in cells)

    def natural_width(self) -> int:
        return sum(self.natural) + len(_GAP) * (len(self.natural) - 1)

    def widths(self, total: int) -> list[int]:
        """Column widths summing (with the gaps) to *total*: wide text wraps, slack widens."""
        widths = list(self.natural)
        wrapping = [i for i, numeric in enumerate(self.numeric) if not numeric]
        gaps = len(_GAP) * (len(widths) - 1)
        while wrapping and sum(widths) + gaps > total:
            widest = max(wrapping, key=lambda i: widths[i])
            if widths[widest] <= _MIN_WRAPPED:
                break
            widths[widest] -= 1
        # label: value pairs widen the first value (the formula); tables their stub, so the
        # numbers stay together at the right edge
        widths[1 if self.headers is None and len(widths) > 1 else 0] += max(
            0, total - sum(widths) - gaps)
        return widths

    def _line(self, cells: Sequence, widths: list[int]) -> list[str]:
        wrapped = [wrap_text(str(cell), width) for cell, width in zip(cells, widths)]
        height = max(len(lines) for lines in wrapped)
        out = []
        for k in range(height):
            parts = []
            for lines, width, numeric in zip(wrapped, widths, self.numeric):
                text = lines[k] if k < len(lines) else ""
                parts.append(text.rjust(width) if numeric else text.ljust(width))
            out.append(_GAP.join(parts).rstrip())
        return out

    def render(self, total: int) -> list[str]:
        widths = self.widths(total)
        lines = [line.center(total).rstrip() for line in wrap_text(self.title, total)]
        lines.append("=" * total)
        if self.headers is not None:
            lines += self._line(self.headers, widths)
            lines.append(_GAP.join("-" * width for width in widths))
        for row in self.rows:
            lines += self._line(row, widths)
        return lines


def layout_text(tables: Sequence[SimpleTable], notes: Sequence[str], width: int = WIDTH) -> str:
    """The sections as panels of one width (at most *width*), then the notes wrapped to it."""
    panels = [_Panel(table) for table in tables]
    total = min(width, max([panel.natural_width() for panel in panels] + [40]))
    lines = []
    for panel in panels:
        lines += panel.render(total)
    lines.append("=" * total)
    text = "\n".join(lines)
    if notes:
        text += "\n\n" + "\n".join("\n".join(wrap_text(note, total)) for note in notes)
    return text
