"""Read a vignette (a jupytext percent script) as a notebook for myst-nb.

Vignettes whose quick run is too slow for the documentation build are not executed; their page
gets a note and the committed full-size figure from ``vignettes/results/`` instead.
"""

from __future__ import annotations

import jupytext
import nbformat

# name -> (why it is not executed, committed figure in vignettes/results/)
# (empty: every vignette's quick run takes 3-21 s, so every page is executed)
NOT_EXECUTED: dict[str, tuple[str, str]] = {}


def _note(name: str) -> str:
    why, figure = NOT_EXECUTED[name]
    return (
        ":::{note}\n"
        f"This page is not executed when the documentation is built ({why}); the code is shown "
        "as it is, and the figure below is the committed result of the full run "
        f"(`vignettes/results/{figure}`).\n:::\n\n"
        f"![The full run's figure](../../vignettes/results/{figure})\n"
    )


def read_vignette(text: str, name: str = "") -> nbformat.NotebookNode:
    """The vignette *text* as a notebook; a note and figure first if *name* is not executed.

    myst-nb passes the text only: conf.py registers each not-executed vignette's file name as a
    format of its own (``"05_digits.py"``, which wins over ``".py"``) with its *name*.
    """
    notebook = jupytext.reads(text, fmt="py:percent")
    # Highlighting for the cells of a vignette that is not executed (no kernel to ask).
    notebook.metadata.setdefault("language_info", {"name": "python", "pygments_lexer": "ipython3"})
    if name in NOT_EXECUTED:
        notebook.cells.insert(1, nbformat.v4.new_markdown_cell(_note(name)))
    return notebook
