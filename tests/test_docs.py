"""The documentation site (docs/): it builds with warnings as errors (a vignette's stderr
included), every public name has a page, so has every public method and property of the
classes among them (with Parameters and Examples), every vignette page shows a figure, no local
link is broken, nothing is fetched from the network, the index and a vignette page render in
headless Chromium, and its search finds ``predict`` with excerpts.

The build (Sphinx, myst-nb executing the vignettes in quick mode) takes about two minutes on two
cores; it goes to tmp_path, so the repository stays clean (autosummary's stubs go to the
git-ignored docs/api/).
"""

from __future__ import annotations

import inspect
import json
import os
import pydoc
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pytest

import pearlstats as pearl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from api_members import (  # noqa: E402  (docs/_ext is not a package)
    data_attributes,
    documented_classes,
    public_members,
)

VIGNETTES = sorted(path.stem for path in (ROOT / "vignettes").glob("[0-9][0-9]_*.py"))
BUILD_COMMAND = "python -m sphinx -W --keep-going -b html docs docs/_build/html"


class _Text(HTMLParser):
    """The text of a page's ``role="main"`` block, without scripts and styles."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 inside the main block
        self.skip = 0  # > 0 inside a script or style
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if self.depth:
            self.depth += tag not in _VOID
        elif dict(attrs).get("role") == "main":
            self.depth = 1
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        if self.depth and tag not in _VOID:
            self.depth -= 1
        self.skip -= tag in ("script", "style") and self.skip > 0

    def handle_data(self, data):
        if self.depth and not self.skip:
            self.parts.append(data)


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
         "track", "wbr"}


def _main_text(page: Path) -> str:
    parser = _Text()
    parser.feed(page.read_text(encoding="utf-8"))
    return " ".join(" ".join(parser.parts).split())


def _sections(doc: str | None) -> set[str]:
    """numpydoc section headers (a title underlined with dashes) of a docstring."""
    return set(re.findall(r"^(\w[\w ]*)\n-{3,}$", inspect.cleandoc(doc or ""), flags=re.M))


def _member_doc(cls: type, name: str, kind: str) -> str | None:
    attribute = inspect.getattr_static(cls, name)
    return attribute.__doc__ if kind == "property" else inspect.getdoc(getattr(cls, name))


def _takes_parameters(cls: type, name: str) -> bool:
    function = inspect.getattr_static(cls, name)
    function = getattr(function, "__func__", function)  # classmethod, staticmethod
    return any(p not in ("self", "cls") for p in inspect.signature(function).parameters)


def _members():
    """(class name, class, member, "method" or "property") of every page the API must have."""
    return [(full, cls, name, kind) for full, cls in documented_classes().items()
            for name, kind in public_members(cls).items()]


class _Links(HTMLParser):
    """Every href and src of a page, with the tag and (for <link>) its rel."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append((tag, attrs.get("rel") or "", attrs[name]))


def _links(page: Path) -> list[tuple[str, str, str]]:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def _local_target(page: Path, url: str) -> Path | None:
    """The file a relative URL of *page* points to; None for external or in-page links."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return (page.parent / unquote(parts.path)).resolve()


def _images(page: Path) -> list[Path]:
    return [_local_target(page, url) for tag, _, url in _links(page)
            if tag == "img" and _local_target(page, url) is not None]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for module in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme", "jupytext"):
        pytest.importorskip(module, reason='the docs build needs pip install ".[docs]"')
    out = tmp_path_factory.mktemp("docs")
    env = dict(os.environ, PEARLSTATS_RESULTS=str(out / "quick-results"))
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
               "docs", str(out / "html")]
    before = _git_status()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-6000:]
    assert _git_status() == before, "the docs build changed files git sees"
    return out / "html"


def _git_status() -> str | None:
    """``git status --porcelain`` of the repository (None outside a git checkout)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT,
                          capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None


def test_help_of_fit_points_to_the_docs_not_to_an_unshipped_file():
    text = pydoc.render_doc(pearl.fit)
    assert "benchmarks/RESULTS.md" not in text
    assert '"Benchmark results" page' in text
    # the section it names exists on that page (docs/benchmarks.md includes RESULTS.md)
    assert "Small samples" in (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8")


def test_readme_gives_the_build_command_and_ci_installs_the_docs_extra():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "## Documentation" in readme and BUILD_COMMAND in readme
    test_command = 'python3 -m pip install ".[test,deep,docs]" && python3 -m pytest'
    assert test_command in readme and test_command in ci
    assert "chromium" in ci.split("PACKAGES=", 1)[1].split('"', 2)[1]


def test_every_public_member_documents_its_parameters_and_has_an_example():
    # the docstrings themselves (no build): what the API pages are generated from
    members = _members()
    assert {name for full, _, name, _ in members if full == "pearlstats.PearlResults"} >= {
        "predict", "evaluate", "honest", "candidates", "weight_uncertainty", "candidate_params",
        "reweight", "get_prediction", "get_robustcov", "t_test", "wald_test", "f_test",
        "pvalues", "tvalues", "cov_params", "conf_int", "summary", "plot"}
    missing = []
    for full, cls, name, kind in members:
        sections = _sections(_member_doc(cls, name, kind))
        if "Examples" not in sections:
            missing.append(f"{full}.{name}: Examples")
        if kind == "method" and _takes_parameters(cls, name) and "Parameters" not in sections:
            missing.append(f"{full}.{name}: Parameters")
    assert not missing, missing


def test_every_data_attribute_is_listed_in_its_class_attributes():
    # class constants and dataclass fields get no page: their class's Attributes section says
    # what they are
    missing = []
    for full, cls in documented_classes().items():
        doc = inspect.cleandoc(cls.__doc__ or "")
        section = re.search(r"^Attributes\n-+\n(.*?)(?=^\w[\w ]*\n-{3,}$|\Z)", doc,
                            flags=re.M | re.S)
        for name in data_attributes(cls):
            if not section or not re.search(rf"^(\w+, )*{name}\b", section.group(1), re.M):
                missing.append(f"{full}.{name}")
    assert not missing, missing


@pytest.mark.slow
def test_every_public_name_has_a_page(site):
    api = (site / "api.html").read_text(encoding="utf-8")
    for name in pearl.__all__:
        page = site / "api" / f"pearlstats.{name}.html"
        assert page.exists(), name
        assert f"api/pearlstats.{name}.html" in api, name
        text = page.read_text(encoding="utf-8")
        if inspect.ismodule(getattr(pearl, name)):
            assert f"<h1>pearlstats.{name}<" in text, name
        else:  # the object's own description, generated from its docstring
            assert f'id="pearlstats.{name}"' in text, name


@pytest.mark.slow
def test_every_vignette_page_shows_a_figure_that_exists(site):
    for name in VIGNETTES:
        page = site / "vignettes" / f"{name}.html"
        images = _images(page)
        assert images, f"{name}: no figure"
        missing = [str(path) for path in images if not path.is_file()]
        assert not missing, (name, missing)


@pytest.mark.slow
def test_summary_page_defines_every_heading_of_a_real_summary(site):
    text = (site / "summary.html").read_text(encoding="utf-8")
    for term in ("rank", "in candidates", "Loss it stands for", "PEARL/this", "honest risk",
                 "ratio SE", "CV risk*", "uses", "Consistency diagnostics", "fold complements",
                 "Refits", "Failure ledger", "Model-averaged coefficients", "fold-to-fold spread",
                 "Solver KKT gap", "Block importance"):
        assert term in text, term
    assert "PEARL model averaging" in text and "Strategies (honest risk" in text  # its output


@pytest.mark.slow
def test_no_broken_local_link_and_nothing_from_the_network(site):
    broken, remote = [], []
    # the site's pages (_static holds the theme's own Jinja templates, not pages)
    pages = [page for page in site.rglob("*.html") if "_static" not in page.parts]
    for page in pages:
        for tag, rel, url in _links(page):
            target = _local_target(page, url)
            if target is not None and not target.exists():
                broken.append(f"{page.relative_to(site)} -> {url}")
            loads = tag in ("img", "script", "iframe") or (tag == "link" and rel != "")
            if loads and urlsplit(url).netloc:  # http(s):// or protocol-relative //host/...
                remote.append(f"{page.relative_to(site)} loads {url}")
    assert not broken, broken[:20]
    assert not remote, remote[:20]


def _chromium(page: Path, profile: Path, *options: str) -> subprocess.CompletedProcess:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("needs Debian's chromium package (apt-get install chromium; .ci/run does)")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
               "--virtual-time-budget=10000",  # let the scripts (MathJax) finish first
               *options, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _screenshot(page: Path, png: Path, profile: Path) -> np.ndarray:
    _chromium(page, profile, f"--screenshot={png}", "--window-size=1280,2000")
    assert png.is_file(), f"chromium wrote no screenshot of {page}"
    from matplotlib.image import imread

    return imread(png)[..., :3]


@pytest.mark.slow
@pytest.mark.parametrize("page", ["index.html", "vignettes/01_quickstart.html"])
def test_page_renders_in_headless_chromium(site, page, tmp_path):
    pixels = _screenshot(site / page, tmp_path / "page.png", tmp_path / "profile")
    assert pixels.shape[:2] == (2000, 1280)
    background = np.median(pixels.reshape(-1, 3), axis=0)
    drawn = np.abs(pixels - background).max(axis=2) > 0.1
    assert pixels.std() > 0.05 and drawn.mean() > 0.02, (pixels.std(), drawn.mean())
    images = _images(site / page)
    assert all(path.is_file() for path in images)
    if page.startswith("vignettes/"):
        assert images


@pytest.mark.slow
def test_math_is_typeset_from_the_site_itself(site, tmp_path):
    # vignette 09 writes $1 - 2\alpha$ and more; MathJax (copied into _static) typesets it
    page = site / "vignettes" / "09_prediction_intervals.html"
    assert "\\alpha" in page.read_text(encoding="utf-8")
    dom = _chromium(page, tmp_path / "profile", "--dump-dom").stdout
    assert 'class="MathJax' in dom, "no typeset math in the rendered page"


@pytest.mark.slow
def test_every_public_member_has_a_page_with_parameters_and_an_example(site):
    problems = []
    for full, cls, name, kind in _members():
        page = site / "api" / f"{full}.{name}.html"
        if not page.exists():
            problems.append(f"{full}.{name}: no page")
            continue
        if f"{full}.{name}.html" not in (site / "api" / f"{full}.html").read_text(
                encoding="utf-8"):
            problems.append(f"{full}.{name}: not linked from the class page")
        html = page.read_text(encoding="utf-8")
        text = _main_text(page)
        if f'id="{full}.{name}"' not in html:
            problems.append(f"{full}.{name}: no description of the member")
        # numpydoc's Examples rubric and a rendered doctest (prompt and output)
        if "Examples" not in text or ">>>" not in text:
            problems.append(f"{full}.{name}: no example")
        if kind == "method" and _takes_parameters(cls, name) and "Parameters :" not in text:
            problems.append(f"{full}.{name}: no Parameters")
    assert not problems, problems


@pytest.mark.slow
def test_no_page_shows_the_internal_constructor(site):
    pages = [page for page in (site / "api").glob("*.html")]
    shown = [page.name for page in pages
             if re.search(r"state\s*:\s*FitState", _main_text(page))]
    assert not shown, shown
    text = _main_text(site / "api" / "pearlstats.PearlResults.html")
    assert "class pearlstats. PearlResults #" in text or "class pearlstats.PearlResults #" in text
    for member in ("predict", "evaluate", "honest", "weight_uncertainty", "reweight"):
        assert f"pearlstats.PearlResults.{member}.html" in (
            site / "api" / "pearlstats.PearlResults.html").read_text(encoding="utf-8"), member


def _search_index(site: Path) -> dict:
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("(") + 1: text.rindex(")")])


@pytest.mark.slow
def test_the_search_index_maps_predict_to_the_predict_page(site):
    index = _search_index(site)
    page = index["docnames"].index("api/pearlstats.PearlResults.predict")
    # the word (the page's title is pearlstats.PearlResults.predict) and the object
    assert page in index["titleterms"]["predict"], index["titleterms"]["predict"]
    assert [page, "predict"] in [[entry[0], entry[4]]
                                 for entry in index["objects"]["pearlstats.PearlResults"]]
    # the excerpts of a site read from disk (file://, where the search cannot fetch pages)
    excerpts = (site / "_static" / "search_excerpts.js").read_text(encoding="utf-8")
    table = json.loads(excerpts[excerpts.index("{"): excerpts.rindex("}") + 1])
    assert "PEARL prediction for new rows" in table["api/pearlstats.PearlResults.predict.html"]


@pytest.mark.slow
def test_search_results_show_excerpts_in_headless_chromium(site, tmp_path):
    page = site / "search.html"
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("needs Debian's chromium package (apt-get install chromium; .ci/run does)")
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
               "--virtual-time-budget=15000", "--dump-dom", page.as_uri() + "?q=predict"]
    dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    assert "api/pearlstats.PearlResults.predict.html" in dom
    # Sphinx puts a result's excerpt in <p class="context">; a text result shows one
    excerpts = re.findall(r'<p class="context">(.*?)</p>', dom, flags=re.S)
    assert excerpts and any("predict" in excerpt.lower() for excerpt in excerpts), dom[-3000:]


def _prose(tokens) -> list[str]:
    """The text runs of parsed Markdown (not code, not math)."""
    runs = []
    for token in tokens:
        if token.children:
            runs += _prose(token.children)
        elif token.type == "text":
            runs.append(token.content)
    return runs


def test_no_dollar_sign_is_left_as_text_by_the_math_parser():
    # a "$$" in the middle of a paragraph is not display math to MyST: it and every "$" after
    # it pair up wrongly, so prose is typeset as math and formulas show as TeX source
    jupytext = pytest.importorskip("jupytext")
    pytest.importorskip("myst_parser", reason='needs pip install ".[docs]"')
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    parser = create_md_parser(MdParserConfig(enable_extensions={"dollarmath", "colon_fence"}),
                              RendererHTML)
    sources = [(path.name, cell.source) for path in sorted((ROOT / "vignettes").glob("[0-9]*.py"))
               for cell in jupytext.read(path).cells if cell.cell_type == "markdown"]
    sources += [(path.name, path.read_text(encoding="utf-8"))
                for path in sorted((ROOT / "docs").glob("*.md"))]
    stray = [(name, text[:60]) for name, source in sources
             for text in _prose(parser.parse(source)) if "$" in text]
    assert not stray, stray


@pytest.mark.slow
def test_the_sklearn_page_links_to_the_estimators(site):
    # the estimators are described on the module page only; {class} references to them
    # resolve there (a module page without index entries left them as unlinked code)
    html = (site / "sklearn.html").read_text(encoding="utf-8")
    for name in ("PearlRegressor", "PearlClassifier"):
        assert f'href="api/pearlstats.sklearn.html#pearlstats.sklearn.{name}"' in html, name
        assert f'id="pearlstats.sklearn.{name}"' in (
            site / "api" / "pearlstats.sklearn.html").read_text(encoding="utf-8"), name
