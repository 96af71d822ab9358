"""Sphinx configuration of the pearlstats documentation.

Build (from the repository root, after ``pip install ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The build needs no network: no intersphinx, and the theme fetches nothing. The vignettes
(``vignettes/*.py``, jupytext percent scripts, linked into ``docs/vignettes/``) are executed by
myst-nb in quick mode (``PEARLSTATS_QUICK=1``); the slow ones are shown with the committed
full-size figure instead (see ``_ext/vignette_source.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(ROOT))

# The vignettes' kernels inherit this environment: quick mode, this checkout's pearlstats on the
# path, no GUI; their results go next to the built site (``_set_results_folder``).
os.environ["PEARLSTATS_QUICK"] = "1"
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
)

from vignette_source import NOT_EXECUTED  # noqa: E402

import pearlstats  # noqa: E402  (after sys.path is set)

project = "pearlstats"
author = "The pearlstats developers"
copyright = "the pearlstats developers"
release = pearlstats.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",
]

# API reference: one page per name in pearlstats.__all__, generated from the docstrings.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# numpydoc's own validation is the linters' job; here only a broken docstring fails the build.
numpydoc_validation_checks: set[str] = set()

# The vignettes: jupytext percent scripts read as notebooks and executed (quick mode).
nb_custom_formats = {".py": ["vignette_source.read_vignette", {}]}
nb_custom_formats.update({f"{name}.py": ["vignette_source.read_vignette", {"name": name}]
                          for name in NOT_EXECUTED})
nb_execution_mode = "force"
nb_execution_timeout = 900
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_excludepatterns = [f"vignettes/{name}.py" for name in NOT_EXECUTED]
nb_merge_streams = True
# A warning printed by an executed page (Python writes warnings to stderr) is a build warning,
# so `-W` fails on a warning nobody expected; a cell that means to show one says so in its
# metadata (``# %% tags=["remove-stderr"]`` hides it, ``mystnb={"output_stderr": "show"}`` shows it).
nb_output_stderr = "warn"
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".py": "myst-nb"}
exclude_patterns = ["_build", "conf.py", "_ext", "**/.ipynb_checkpoints", "Thumbs.db",
                    ".DS_Store"]
templates_path = ["_templates"]

html_theme = "pydata_sphinx_theme"
html_title = f"pearlstats {release}"
html_theme_options = {
    # Nothing fetched at build or view time: no version switcher, no icons from the web,
    # no analytics.
    "navbar_end": ["theme-switcher", "navbar-icon-links"],
    "icon_links": [],
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
# Math without the network: MathJax 2 from the jupyter-server-mathjax package, copied into the
# site (Sphinx's default loads MathJax from a CDN).
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
# That package ships the STIX-Web fonts only (configured as Jupyter does); myst-nb marks notebook
# pages tex2jax_ignore and their math spans "math" (its settings are for MathJax 3).
mathjax2_config = {
    "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web",
                 "imageFont": None},
    "tex2jax": {"processClass": "math|output_area|tex2jax_process|mathjax_process",
                "ignoreClass": "tex2jax_ignore|mathjax_ignore"},
}
# The vignettes and the summary print 100-column tables: their pages use the whole width.
html_static_path = ["_static"]
html_css_files = ["pearlstats.css"]
html_theme_options["secondary_sidebar_items"] = {
    page: ["page-toc"] for page in ("index", "api", "api/*", "benchmarks", "citing")
}
html_show_sourcelink = False
html_copy_source = False


def _copy_mathjax(app, exception) -> None:
    import shutil

    import jupyter_server_mathjax

    if exception is None and app.builder.format == "html":
        source = Path(jupyter_server_mathjax.__file__).parent / "static"
        shutil.copytree(source, Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


def _set_results_folder(app) -> None:
    """The executed vignettes' quick results (CSV, PNG): beside the site, not in the repository."""
    os.environ.setdefault("PEARLSTATS_RESULTS", str(Path(app.outdir).parent / "quick-results"))


def setup(app):
    """Copy MathJax into the site; render matplotlib's own ``:mpltype:`` role, which the
    docstring of ``set`` (generated by matplotlib for every Artist subclass, such as the plots'
    figure class) uses."""
    from docutils import nodes
    from docutils.parsers.rst import roles

    roles.register_generic_role("mpltype", nodes.literal)
    app.connect("builder-inited", _set_results_folder)
    app.connect("build-finished", _copy_mathjax)
