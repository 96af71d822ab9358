"""Execute every vignette and render it to HTML with its figures.

Usage (from the repository root, after ``pip install ".[vignettes]"``)::

    python vignettes/render.py                    # full versions -> vignettes/_build/*.html
    PEARLSTATS_QUICK=1 python vignettes/render.py # the reduced versions the tests run
    python vignettes/render.py 01_quickstart.py   # chosen vignettes only

Each vignette is a jupytext percent-format script: it runs as a plain script
(``python vignettes/02_simulation.py``) and, converted here, as a notebook.

Rendering never writes a tracked file: the HTML and notebooks go to the git-ignored
``vignettes/_build/``, and the vignettes' own tables and figures to
``vignettes/_build/results/`` (``PEARLSTATS_RESULTS``; the committed
``vignettes/results/`` are made by running the scripts themselves, with the command
each results file names).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD = HERE / "_build"  # git-ignored


def vignettes() -> list[Path]:
    return sorted(path for path in HERE.glob("[0-9][0-9]_*.py"))


def render(path: Path, out_dir: Path) -> Path:
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    notebook = jupytext.read(path)
    NotebookClient(
        notebook, timeout=None, kernel_name="python3", resources={"metadata": {"path": str(HERE)}}
    ).execute()
    html, _ = HTMLExporter().from_notebook_node(notebook)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / (path.stem + ".html")
    target.write_text(html, encoding="utf-8")
    nbformat.write(notebook, out_dir / (path.stem + ".ipynb"))
    return target


def main(argv: list[str]) -> None:
    # The kernels inherit the environment: the vignettes' tables and figures go to _build/ too.
    os.environ.setdefault("PEARLSTATS_RESULTS", str(BUILD / "results"))
    chosen = [HERE / name for name in argv] if argv else vignettes()
    for path in chosen:
        print(f"rendering {path.name} ...", flush=True)
        print(f"  -> {render(path, BUILD)}")


if __name__ == "__main__":
    main(sys.argv[1:])
