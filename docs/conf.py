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
# IPython kernels run $PYTHONSTARTUP first: no progress bars on the pages (_ext/kernel_startup.py).
os.environ["PYTHONSTARTUP"] = str(HERE / "_ext" / "kernel_startup.py")

from api_members import documented_classes, public_members  # noqa: E402
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

# API reference: one page per name in pearlstats.__all__, generated from the docstrings, and
# one page per public method and property of its classes (mixins' included), linked from the
# class page's tables (_templates/autosummary/class.rst, lists from _ext/api_members.py).
autosummary_generate = True
autosummary_context = {
    "pearlstats_members": {name: public_members(cls) for name, cls in documented_classes().items()}
}
# Classes pearlstats returns and users never build: their pages show no constructor signature
# (PearlResults(state: FitState, ...) is the fit's internal hand-over).
RETURNED_NOT_BUILT = ("pearlstats.PearlResults", "pearlstats.HonestRisk")
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
# A vignette's stderr (a warning, tqdm's complaint) is a build warning, so it fails the build
# under -W: the vignettes show the warnings they demonstrate by catching them in their cells,
# and progress bars are off in their kernels (_ext/kernel_startup.py).
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


def _skip_sklearn_request_methods(app, what, name, obj, skip, options):
    """scikit-learn generates ``set_fit_request`` / ``set_score_request`` on every estimator
    (metadata routing); their docstrings link into scikit-learn's own glossary, which this
    site does not have. The estimators' pages leave them out (scikit-learn documents them)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _hide_constructor(app, what, name, obj, options, signature, return_annotation):
    if what == "class" and name in RETURNED_NOT_BUILT:
        return "", None
    return None


def _main_text(page: Path) -> str:
    """The text of a page's main block, as Sphinx's search reads it for a result's excerpt."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    main = soup.find(attrs={"role": "main"})
    if main is None:
        return ""
    for element in main.select(".headerlink, script, style"):
        element.decompose()
    return " ".join(main.get_text(" ").split())


def _write_search_excerpts(app, exception) -> None:
    """Excerpts under search results when the site is read from disk (``file://``).

    Sphinx's search fetches each result's page to show an excerpt; browsers refuse ``fetch``
    of ``file://`` URLs, so the results of a site opened from disk had titles only. The pages'
    text is written to ``_static/search_excerpts.js`` (a script, which ``file://`` pages may
    load), and ``search_fetch.js`` answers the search's fetches from it.
    """
    import json

    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    texts = {}
    for page in sorted(out.rglob("*.html")):
        relative = page.relative_to(out)
        if relative.parts[0] in ("_static", "_sources") or relative.name in ("search.html",
                                                                            "genindex.html"):
            continue
        texts[relative.as_posix()] = _main_text(page)
    payload = json.dumps(texts, ensure_ascii=False, separators=(",", ":"))
    (out / "_static" / "search_excerpts.js").write_text(
        f"window.PEARLSTATS_PAGE_TEXT = {payload};\n", encoding="utf-8"
    )


def _search_page_scripts(app, pagename, templatename, context, doctree) -> None:
    if pagename == "search":
        app.add_js_file("search_excerpts.js")
        app.add_js_file("search_fetch.js")


def setup(app):
    """Copy MathJax into the site; render matplotlib's own ``:mpltype:`` role, which the
    docstring of ``set`` (generated by matplotlib for every Artist subclass, such as the plots'
    figure class) uses."""
    from docutils import nodes
    from docutils.parsers.rst import roles

    roles.register_generic_role("mpltype", nodes.literal)
    app.connect("builder-inited", _set_results_folder)
    app.connect("autodoc-skip-member", _skip_sklearn_request_methods)
    app.connect("autodoc-process-signature", _hide_constructor)
    app.connect("html-page-context", _search_page_scripts)
    app.connect("build-finished", _copy_mathjax)
    app.connect("build-finished", _write_search_excerpts)
