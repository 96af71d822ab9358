"""The LaTeX of summaries and comparison tables, set by pdflatex in a default article.

Gaussian, binomial and multinomial summaries at J = 31 and J = 255 are set in
``\\documentclass{article}`` with the default margins and only
:data:`pearlstats.results.summary.LATEX_PREAMBLE`: the main table must be one
page with no overfull box and no float too large for the page; every panel
(``panels="all"``) must set without an overfull box. The notes must say things
in words, the header's ridge must be the ridges the refits used, and a
notebook showing a summary must export to PDF with nbconvert, each table in
its own cell's output (``_repr_latex_`` does not float). Skipped when
pdflatex is not installed.
"""

from __future__ import annotations

import copy
import re
import shutil
import string
import subprocess
import unicodedata
import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from conftest import separated_binomial
from pearlstats.results.evaluation import compare_table
from pearlstats.results.formatting import latex_escape
from pearlstats.results.latex_names import breakable
from pearlstats.results.summary import LATEX_PREAMBLE

pytestmark = pytest.mark.skipif(shutil.which("pdflatex") is None,
                                reason="pdflatex is not installed")

NAMES = ["pca", "kpca_rbf", "kpca_poly", "kpca_sigmoid", "kpca_cosine"]
# eight blocks with long names: 255 candidates, a formula of 200 characters
LONG_NAMES = ["pca_whitened", "kpca_rbf_wide", "kpca_polynomial", "kpca_sigmoid_kernel",
              "kpca_cosine_sim", "tfidf_bigrams", "word2vec_mean", "doc2vec_dbow"]
FAMILIES = {"gaussian": "y", "binomial": "hit", "multinomial": "level"}
PYTHON = re.compile(r"\bres\.|\(\)|[A-Za-z0-9]_[A-Za-z0-9]|\.failures|\bsummary\(")


def _responses(frame: pd.DataFrame, signal: np.ndarray) -> pd.DataFrame:
    levels = pd.cut(signal, [-np.inf, -0.3, 0.6, np.inf], labels=["low", "mid", "high"])
    return frame.assign(hit=np.where(signal > 0, "yes", "no"), level=levels)


def _fit(family: str, frame, blocks, **options):
    formula = f"{FAMILIES[family]} ~ " + " + ".join(f"block({name})" for name in blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        return pearl.fit(formula, frame, blocks=blocks, family=family, seed=1, **options)


@pytest.fixture(scope="module")
def fits_31(paper_data):
    frame = paper_data["frame"]
    frame = _responses(frame, frame["y"].to_numpy())
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    return {family: _fit(family, frame, blocks) for family in FAMILIES}


@pytest.fixture(scope="module")
def fits_255():
    rng = np.random.default_rng(7)
    n = 200
    blocks = {name: rng.normal(size=(n, 2)) for name in LONG_NAMES}
    signal = blocks[LONG_NAMES[0]][:, 0] + 0.5 * blocks[LONG_NAMES[1]][:, 1]
    frame = _responses(pd.DataFrame({"y": signal + rng.normal(size=n)}),
                       signal + rng.normal(scale=0.5, size=n))
    return {family: _fit(family, frame, blocks, honest=3) for family in FAMILIES}


def _named_fit(formula: str, covariate: str, names: tuple[str, str], n: int, seed: int):
    """A gaussian fit of two 2-column blocks and one covariate under awkward names, for
    LaTeX that must set them: y is the covariate plus the first block's first column."""
    rng = np.random.default_rng(seed)
    blocks = {name: rng.normal(size=(n, 2)) for name in names}
    frame = pd.DataFrame({covariate: rng.normal(size=n)})
    frame["y"] = frame[covariate] + blocks[names[0]][:, 0] + rng.normal(size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        return pearl.fit(formula, frame, blocks=blocks, seed=0, honest=False)


def _set(tmp_path, body: str, name: str = "tables") -> tuple[str, list[str]]:
    """pdflatex's log of *body* in a default article, and its errors and bad boxes."""
    document = "\n".join([r"\documentclass{article}", LATEX_PREAMBLE, r"\begin{document}", body,
                          r"\end{document}", ""])
    (tmp_path / f"{name}.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                           f"{name}.tex"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    log = (tmp_path / f"{name}.log").read_text(encoding="latin-1")
    problems = [line for line in log.splitlines()
                if line.startswith("!") or re.search(r"Overfull|Float too large|Undefined", line)]
    if done.returncode:
        problems.append(done.stdout[-2000:])
    return log, problems


SHRUNK = re.compile(r"\\resizebox|\\scalebox|\\(footnotesize|scriptsize|tiny)\b")


def _check_summary(res, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)  # e.g. PEARL's honest risk above MS's
        summary = res.summary()
    main = summary.as_latex(caption="PEARL on the simulation", label="tab:pearl")
    assert main.count(r"\begin{table}") == 1 and r"\label{tab:pearl}" in main
    log, problems = _set(tmp_path, main, "main")
    assert not problems, problems
    assert re.search(r"Output written on main\.pdf \(1 page,", log), log[-500:]
    everything = summary.as_latex("all")
    assert not SHRUNK.search(everything)  # fits by layout: nothing scaled, nothing below \small
    assert everything.count(r"\begin{table}") == len(summary.tables) - 1  # header and strategies
    _, problems = _set(tmp_path, everything, "all")        # are in the main table
    assert not problems, problems
    notes = " ".join(summary.notes)
    for name in res.block_dims:  # block names may hold underscores; the rest may not
        notes = notes.replace(name, "block")
    assert not PYTHON.findall(notes), notes


@pytest.mark.parametrize("family", list(FAMILIES))
def test_main_table_is_one_page_at_31_candidates(fits_31, family, tmp_path):
    _check_summary(fits_31[family], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("family", list(FAMILIES))
def test_main_table_is_one_page_at_255_candidates(fits_255, family, tmp_path):
    res = fits_255[family]
    assert len(res.weights) == 255
    _check_summary(res, tmp_path)


def test_block_names_do_not_break_at_underscores(fits_31, tmp_path):
    # the issue: "kpca\_" at the end of one line, "cosine" on the next (the Blocks row, MS's
    # candidate); lines break between block names (after "+" or a comma), never inside one
    summary = fits_31["gaussian"].summary()
    underscored = [name for name in NAMES if "_" in name]
    for kind, latex in (("main", summary.as_latex()), ("notebook", summary._repr_latex_())):
        assert r"\_\allowbreak" not in latex
        for name in underscored:
            assert "\\mbox{" + name.replace("_", r"\_") + "}" in latex, name
        _, problems = _set(tmp_path, latex, kind)
        assert not problems, problems
        if shutil.which("pdftotext") is None:  # poppler-utils, which .ci/run installs
            continue
        text = subprocess.run(["pdftotext", f"{kind}.pdf", "-"], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout
        # pdftotext reads an underscore (a rule in OT1) as a space: "kpca cosine"
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for name in underscored:
            parts = name.split("_")
            assert any(" ".join(parts) in line for line in lines), (kind, name)
            for cut in range(1, len(parts)):
                head, tail = " ".join(parts[:cut]), " ".join(parts[cut:])
                broken = [(line, after) for line, after in zip(lines, lines[1:])
                          if line.endswith(head) and after.startswith(tail)]
                assert not broken, (kind, name, broken)


_SCIENTIFIC = re.compile(r"^(-?\d\.\d+)\\times10\^\{(-?\d+)\}$")


def _read_back(text: str, power: int) -> tuple[float, float]:
    """A number as LaTeX prints it (a column shown times ``10**power``): its value and half a
    unit of its last digit."""
    scientific = _SCIENTIFIC.match(text)
    if scientific:
        mantissa, exponent = scientific.group(1), int(scientific.group(2))
        decimals = len(mantissa.split(".")[1])
        return float(mantissa) * 10.0**exponent, 0.5 * 10.0**(exponent - decimals)
    assert re.fullmatch(r"-?\d+\.\d+", text), text  # no bound such as {<}0.0001
    decimals = len(text.split(".")[1])
    return float(text) * 10.0**power, 0.5 * 10.0**(power - decimals)


def _text_precision(value: float) -> float:
    """Half a unit of the last digit the text summary prints of *value*."""
    from pearlstats.results.formatting import format_number

    mantissa, _, exponent = format_number(value).partition("e")
    return 0.5 * 10.0**(int(exponent or 0) - len(mantissa.split(".")[1]))


@pytest.mark.parametrize("values", [
    [29990.0645, 2.7432, -6.1727, 800.9658],  # an income's intercept over its slopes
    [1e5 + 0.37, 0.4163, 6.611e-5],  # intercept, slope and a coefficient of 1e-5
    [1.235e6, 5.0627, 0.8135],  # t
    [0.0, 1.919e-7, 0.6013],  # P>|t|
    [29945.9, 30034.2],  # all large: shown times 10^4
    [3.2e-8, 1.1e-9], [3.2e-8, 1.1e-12], [0.5, 2.5e-14], [-2.5e7, 3.0e3, 12.0],
])
def test_every_number_of_a_column_reads_back_with_its_digits(values):
    # one power of ten per column, chosen by the largest: 2.7432 beside 29990 printed as
    # 0.0003 under x10^4, a coefficient of 0.4163 beside 1e5 as {<}0.0001
    from pearlstats.results.formatting import number_cell
    from pearlstats.results.latex import column_numbers

    texts, power = column_numbers([number_cell(v) for v in values])
    for value, text in zip(values, texts):
        read, half_unit = _read_back(text, power)
        assert abs(read - value) <= half_unit * (1 + 1e-9), (value, text, power)
        # never coarser than the text summary prints it
        assert half_unit <= _text_precision(value) * (1 + 1e-9), (value, text, power)


def test_coefficients_from_1e_minus_7_to_1e6_fit_the_line(tmp_path):
    # covariates in units that give coefficients of 1e5, 1e6, 1e-7 and 7e-5: each column
    # aligned on its point reserved the most digits left of it (5811.4470) and right of it
    # (6.070 x 10^4) at once, and eight such columns with 4pt gaps ran 34pt past the margin
    rng = np.random.default_rng(3)
    n = 300
    data = pd.DataFrame({"big": rng.normal(size=n) * 1e-5, "huge": rng.normal(size=n) * 1e-6,
                         "tiny": rng.normal(size=n) * 1e7, "small": rng.normal(size=n) * 1e4})
    blocks = {"a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 2))}
    data["y"] = (1 + 1e5 * data["big"] + 1e6 * data["huge"] + 1e-7 * data["tiny"]
                 + 6.6e-5 * data["small"] + blocks["a"][:, 0] + rng.normal(size=n))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit("y ~ big + huge + tiny + small + block(a) + block(b)", data,
                        blocks=blocks, seed=0, honest=False)
    latex = res.summary().as_latex("coefficients")
    assert r"\begingroup\setlength{\tabcolsep}{1pt}" in latex and r">{$}r<{$}" in latex
    _, problems = _set(tmp_path, latex, "magnitudes")
    assert not problems, problems


def test_the_coefficients_panel_reads_back_to_the_fit(tmp_path):
    # gaussian fit of an income (intercept 29990) on age and female: as_latex scaled the
    # coefficients and the intervals by 10^4 and printed age 2.7432 as 0.0003, female as
    # -0.0006, while the SE column stayed unscaled
    rng = np.random.default_rng(16)
    n = 300
    data = pd.DataFrame({"age": rng.uniform(20, 60, n), "female": rng.integers(0, 2, n)})
    spending = rng.normal(size=(n, 2))
    data["income"] = (30000 + 2.5 * data["age"] + 800 * spending[:, 0]
                      + rng.normal(scale=100, size=n))
    res = pearl.fit("income ~ age + female + block(a)", data, blocks={"a": spending}, seed=0,
                    honest=False)
    latex = res.summary().as_latex("coefficients")
    lines = latex.splitlines()
    header = next(line for line in lines if "coef" in line and "multicolumn" in line)
    powers = [int(match) if match else 0 for match in re.findall(
        r"\\multicolumn\{1\}\{c\}\{\\begin\{tabular\}\[b\]\{@\{\}c@\{\}\}[^$]*?"
        r"(?:\(\$\\times10\^\{(-?\d+)\}\$\))?\\end\{tabular\}\}", header)]
    table = res.coef_table()
    expected = {"coef": table["coef"], "SE": res.bse, "lower": table["lower"],
                "upper": table["upper"]}
    for term in ("Intercept", "age", "female"):
        row = next(line for line in lines if line.startswith(f"{term} & ")
                   or f"raggedright {term}}}" in line)
        if not row.startswith(term):  # the name on a line of its own, the numbers under it
            row = lines[lines.index(row) + 1]
        cells = [cell.strip() for cell in row.rstrip(" \\").split(" & ")][1:]
        shown = dict(zip(["coef", "SE", "t", "P", "lower", "upper"], zip(cells, powers)))
        for column, values in expected.items():
            read, half_unit = _read_back(*shown[column])
            value = float(values[term])
            assert abs(read - value) <= half_unit * (1 + 1e-9), (term, column, shown[column])
            assert half_unit <= _text_precision(value) * (1 + 1e-9), (term, column)
    _, problems = _set(tmp_path, latex, "coefficients")
    assert not problems, problems


def test_quotes_of_code_are_upright_and_the_tilde_sits_on_the_line(tmp_path):
    # block('pca_é') read block(’pca_é’) in the formula (char 39 of cmtt is a closing quote)
    # and "y ~ x" a raised accent tilde; the notes' apostrophes stay typeset (MuMIn’s)
    res = _named_fit("y ~ x + block('pca_é') + block('w2v')", "x", ("pca_é", "w2v"), 120, 11)
    latex = res.summary().as_latex()
    assert r"block(\textquotesingle{}w2v\textquotesingle{})" in latex
    _, problems = _set(tmp_path, latex, "quotes")
    assert not problems, problems
    if shutil.which("pdftotext") is None:
        return
    text = subprocess.run(["pdftotext", "quotes.pdf", "-"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout
    assert "block('pca" in text and "block('w2v')" in text and "’" not in text.split("Blocks")[0]
    assert "y \u223c x" in text  # the tilde as a relation (U+223C), not an accent
    assert "MuMIn’s" in text


def test_every_quoted_token_is_upright_and_apostrophes_of_prose_are_not():
    from pearlstats.results.formatting import latex_escape

    up = r"\textquotesingle{}"
    # the second quote of 'c' (before a space) and both of 'd' (after one) were typeset quotes
    assert latex_escape("h='c' and 'd'") == f"h={up}c{up} and {up}d{up}"
    assert latex_escape("C(g, Treatment('a_b'))") == f"C(g, Treatment({up}a\\_b{up}))"
    assert latex_escape("formula='y ~ a' here") == \
        f"formula={up}y \\ensuremath{{\\sim}} a{up} here"
    assert latex_escape("MuMIn's and the candidates' joint") == \
        "MuMIn's and the candidates' joint"


def test_a_tiny_value_shows_its_digits_as_in_the_text(fits_31):
    latex = fits_31["gaussian"].summary().as_latex("all")
    # the KKT gap (about 1e-14) beside weights: as the text prints it, a power of ten (it
    # read "{<}0.0001", as did a coefficient of 6.6e-5 beside one of 0.4)
    diagnostics = latex.split("Consistency diagnostics")[1].split(r"\end{table}")[0]
    assert re.search(r"KKT gap & \d\.\d{3}\\times10\^\{-\d+\}", diagnostics), diagnostics
    # "<0.0001" only for a p-value, the fourth number of a coefficient's row
    for line in latex.splitlines():
        if "{<}" in line:
            assert [cell.strip() for cell in line.split("&")].index("{<}0.0001") == 4, line
    tiny = fits_31["gaussian"].summary()
    assert "e-" in str(tiny.panels["diagnostics"][5][1].data)  # the text shows it as it is
    # in one form whatever its size: 0 as 0.000e+00 beside another fit's 2.387e-14
    gap = str(tiny.panels["diagnostics"][5][1].data).strip()
    assert re.fullmatch(r"\d\.\d{3}e[+-]\d{2}", gap), gap


def test_header_ridge_is_the_ridge_the_refits_used(tmp_path):
    y, blocks = separated_binomial(60)
    blocks["c"] = np.random.default_rng(2).normal(size=(60, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit("y ~ block(a) + block(s) + block(c)", {"y": y}, blocks=blocks,
                        family="binomial", seed=1, honest=False, separation="ridge")
    chosen = res.stages.family.candidate_ridges
    assert chosen and res.ridge == 0
    summary = res.summary()
    pairs = {str(row[i].data).strip(): str(row[i + 1].data).strip()
             for row in summary.panels["header"] for i in (0, 2)}
    refit_ridges = {float(ridge) for ridge in re.findall(r"ridge=([0-9.e-]+)",
                                                         " ".join(res.failures["action"]))}
    shown = {float(value) for value in re.findall(r"(?:^|; )([0-9.e-]+)", pairs["Ridge:"])}
    assert shown == {0.0} | refit_ridges == {0.0} | set(chosen.values())
    assert f"for {len(chosen)} candidate" in pairs["Ridge:"]
    # routine refits have their own heading; the failure ledger is for failures
    assert "refits" in summary.panels and "failures" not in summary.panels
    latex = summary.as_latex("all")
    assert "Refits" in latex and "Failure ledger" not in latex
    assert f"{pairs['Ridge:']}" in latex
    # the long ridge text and the typewriter formula do not push the header's pairs too wide
    _, problems = _set(tmp_path, latex)
    assert not problems, problems


def test_comparison_table_compiles_without_overfull_boxes(tmp_path):
    rng = np.random.default_rng(0)
    methods = ["PEARL", "Best", "Fusion", "SA-FRL", "SA-cand", "MS"]

    def run():
        return pd.DataFrame({"MSE": rng.uniform(1, 20, 6), "MAE": rng.uniform(0, 1, 6)},
                            index=methods)

    runs = {n: [run() for _ in range(3)] for n in (100, 200)}
    log, problems = _set(tmp_path, compare_table(runs).to_latex(caption="Test error"))
    assert not problems, problems
    assert "(1 page" in log


def test_unknown_panels_are_option_errors(fits_31):
    summary = fits_31["gaussian"].summary()
    with pytest.raises(pearl.OptionError, match=r"panels=\['weights'\]: \['weights'\] not known"):
        summary.as_latex(["weights"])
    with pytest.raises(pearl.OptionError, match="top"):
        summary.as_latex(top=0)
    assert summary.as_latex(["importance"]).count(r"\begin{table}") == 1
    assert summary.as_latex(["failures"]) == ""  # nothing failed: nothing to set


# a notebook as a reader writes one: prose, a fit, its summary, a statsmodels summary, a figure
NOTEBOOK = [
    ("markdown", "# A PEARL fit\n\nProse before the fit, with *emphasis*."),
    ("code", """\
import numpy as np, pearlstats as pearl
rng = np.random.default_rng(0)
data = {"y": rng.normal(size=80), "a_1": rng.normal(size=(80, 2)),
        "b": rng.normal(size=(80, 2)), "kpca_cosine": rng.normal(size=(80, 2))}
res = pearl.fit("y ~ block(a_1) + block(b) + block(kpca_cosine)", data, seed=0)"""),
    ("code", "res.summary()"),
    ("markdown", "Prose between the summaries."),
    ("code", """\
import statsmodels.api as sm
sm.OLS(data["y"], sm.add_constant(data["b"])).fit().summary()"""),
    ("code", "res.plot.block_importance()"),
    ("markdown", "Prose after the figure."),
]
# what each cell shows, in order, in the PDF's text: a table that floats away from its cell
# lands after the prose that follows it
SHOWN_IN_ORDER = ["Prose before the fit", "PEARL model averaging", "Strategies",
                  "Consistency diagnostics", "Model-averaged coefficients",
                  "Prose between the summaries", "Dep. Variable", "Omnibus",
                  "Prose after the figure"]


def _template_packages_missing() -> list[str]:
    """Style files nbconvert's LaTeX template loads that this TeX installation lacks."""
    kpsewhich = shutil.which("kpsewhich")
    wanted = ["eurosym.sty", "soul.sty", "ucs.sty", "adjustbox.sty"]
    if kpsewhich is None:
        return wanted
    return [name for name in wanted
            if subprocess.run([kpsewhich, name], capture_output=True).returncode]


def _executed_notebook(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", str(root))  # the kernel imports this checkout
    new = {"markdown": nbformat.v4.new_markdown_cell, "code": nbformat.v4.new_code_cell}
    notebook = nbformat.v4.new_notebook(cells=[new[kind](text) for kind, text in NOTEBOOK])
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    return notebook


def _cell_outputs(latex: str) -> dict[int, str]:
    """The LaTeX nbconvert writes for each code cell's output, by execution count.

    An output runs from its ``\\prompt{Out}`` to the next cell's input prompt or
    markdown text (the document's end for the last).
    """
    marks = [(m.start(), m.group(1), int(m.group(2)))
             for m in re.finditer(r"\\prompt\{(In|Out)\}\{\w+\}\{(\d+)\}", latex)]
    prose = [latex.index(text) for kind, text in NOTEBOOK if kind == "markdown"
             for text in [text.splitlines()[-1].split(",")[0]]]
    outputs = {}
    for start, kind, count in marks:
        if kind == "Out":
            after = [p for p, *_ in marks if p > start] + [p for p in prose if p > start]
            outputs[count] = latex[start:min(after, default=len(latex))]
    return outputs


def _word_boxes(pdf: str, cwd) -> list[tuple[str, float, float, float, float]]:
    """(word, xmin, ymin, xmax, ymax) of the first page's words, from ``pdftotext -bbox``."""
    html = subprocess.run(["pdftotext", "-bbox", "-f", "1", "-l", "1", pdf, "-"], cwd=cwd,
                          capture_output=True, text=True, check=True).stdout
    pattern = (r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">'
               r"([^<]*)</word>")
    return [(word, float(x0), float(y0), float(x1), float(y1))
            for x0, y0, x1, y1, word in re.findall(pattern, html)]


def _check_rank_column(boxes) -> None:
    """The "rank" header stands over the ranks (it sat mid-line, the ranks at the margin)."""
    header = next(box for box in boxes if box[0] == "rank")
    below = next(box for box in boxes if box[0] == "Strategies")
    ranks = [box for box in boxes if box[0] in ("1", "2") and header[4] < box[2] < below[2]]
    assert len(ranks) == 2, ranks  # the two candidates with non-zero weight
    for rank in ranks:  # each rank's box overlaps the header's horizontally
        assert rank[1] < header[3] and header[1] < rank[3], (header, rank)


def _ink_right(png) -> tuple[int, int]:
    """The rightmost column with ink on a rendered page, and the page's width."""
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("L"))
    inked = np.flatnonzero((pixels < 128).any(axis=0))
    return int(inked.max()), pixels.shape[1]


@pytest.mark.slow
def test_a_notebook_exported_to_pdf_shows_each_table_in_its_own_cell(tmp_path, monkeypatch):
    nbconvert = pytest.importorskip("nbconvert", reason="nbconvert is in the test extra")
    if not all(shutil.which(tool) for tool in ("xelatex", "pandoc", "pdftotext", "pdftoppm")):
        pytest.skip("needs xelatex, pandoc (markdown cells) and poppler-utils; .ci/run "
                    "installs them")
    missing = _template_packages_missing()
    if missing:
        pytest.skip(f"nbconvert's template needs {missing} (Debian: texlive-fonts-recommended, "
                    "texlive-plain-generic)")
    notebook = _executed_notebook(tmp_path, monkeypatch)
    shown = notebook.cells[2].outputs[-1]["data"]["text/latex"]
    assert not re.search(r"\\begin\{(table|figure)\*?\}", shown)  # nothing floats
    # the LaTeX `jupyter nbconvert --to pdf` sets: each table inside its own cell's output
    resources = {"metadata": {"path": str(tmp_path)}}
    latex, _ = nbconvert.LatexExporter().from_notebook_node(copy.deepcopy(notebook), resources)
    outputs = _cell_outputs(latex)
    assert "PEARL model averaging" in outputs[2] and "Dep. Variable" not in outputs[2]
    assert all(title in outputs[2] for title in SHOWN_IN_ORDER[1:5])
    assert "Dep. Variable" in outputs[3] and "Omnibus" in outputs[3]
    assert "PEARL" not in outputs[3] and "PEARL" not in outputs[4]
    pdf, _ = nbconvert.PDFExporter().from_notebook_node(notebook, resources)
    (tmp_path / "notebook.pdf").write_bytes(pdf)
    text = subprocess.run(["pdftotext", "notebook.pdf", "-"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout
    text = unicodedata.normalize("NFKC", text)  # the ligatures of "coefficients" as letters
    places = [text.find(words) for words in SHOWN_IN_ORDER]
    assert -1 not in places and places == sorted(places), dict(zip(SHOWN_IN_ORDER, places))
    _check_rank_column(_word_boxes("notebook.pdf", tmp_path))
    # the pages as a reader sees them (kept in tmp_path to look at): nothing reaches into the
    # right margin, nbconvert's 1 inch (72 px at 72 dpi; the prompts sit in the left one)
    subprocess.run(["pdftoppm", "-r", "72", "-png", "notebook.pdf", "page"], cwd=tmp_path,
                   check=True)
    pages = sorted(tmp_path.glob("page-*.png"))
    assert len(pages) >= 2
    for page in pages:
        right, width = _ink_right(page)
        assert right <= width - 72 + 2, (page.name, right, width)


def test_a_long_section_is_cut_to_a_page_with_the_rest_counted(fits_31, tmp_path):
    from statsmodels.iolib.table import SimpleTable

    from pearlstats.results.formatting import number_cell

    summary = fits_31["gaussian"].summary()
    labels = ["+".join(LONG_NAMES[: 2 + k % 7]) + f"_{k}" for k in range(200)]
    rows = [[number_cell(0.001 * k), number_cell(0.5), number_cell(0.25)] for k in range(200)]
    summary.panels["stability"] = SimpleTable(rows, headers=["weight", "mean", "spread"],
                                              stubs=labels, title="Weights re-solved")
    latex = summary.as_latex(["stability"])
    shown = re.search(r"(\d+) more rows \(in the text summary\)", latex)
    assert shown and 0 < int(shown.group(1)) < 200
    # the header row, the rows shown and the row counting the rest
    assert latex.count(r"\\") == 1 + (200 - int(shown.group(1))) + 1
    log, problems = _set(tmp_path, latex)
    assert not problems, problems
    assert "(1 page" in log


def test_numbers_in_small_units_keep_their_digits_under_a_power_of_ten(paper_data, tmp_path):
    # y in units 1000 times larger: squared-error risks are 1e-6 times theirs. Each column is
    # shown as the same digits times a power of ten in its header, never as 0.0000.
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:3]}
    y = paper_data["frame"]["y"].to_numpy()
    tables = []
    for scale in (1.0, 1e-3):
        res = pearl.fit("y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)", {"y": y * scale},
                        blocks=blocks, seed=4, honest=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pearl.PearlWarning)
            full = res.summary().as_latex()
        tables.append(full.split(r"\emph{Notes:}")[0])
    powers = re.findall(r"\(\$\\times10\^\{(-?\d+)\}\$\)", tables[1])
    assert powers and all(int(power) <= -4 for power in powers)
    assert not re.findall(r"\\times10", tables[0])
    numbers = [re.findall(r"-?\d+\.\d{4}", table) for table in tables]
    assert len(numbers[0]) == len(numbers[1])
    # a number is 0.0000 in small units only where it is 0.0000 in large ones (PEARL's own
    # ratio SE, zero weights), and weights are the same
    assert [a == "0.0000" for a in numbers[0]] == [b == "0.0000" for b in numbers[1]]
    weights = [re.findall(r"^[^&\n]+& (\d\.\d{4}) &", table.split("leading candidates")[1]
                          .split("Strategies")[0], flags=re.MULTILINE) for table in tables]
    assert weights[0] and weights[0] == weights[1]
    _, problems = _set(tmp_path, full)
    assert not problems, problems


def test_the_main_table_names_fewer_candidates_when_their_labels_are_long():
    from pearlstats.results.formatting import number_cell
    from pearlstats.results.latex import leading_rows
    from pearlstats.results.latex_names import wrapped_lines

    headers = ["", "blocks", "parameters", "weight", "CV risk", "SE", "rank"]
    # 8 long names, 119 characters: 4 lines each of about 20 em, broken only between names
    # (pca_whitened+kpca_rbf_wide+ | kpca_polynomial+kpca_sigmoid_kernel+ |
    # kpca_cosine_sim+tfidf_bigrams+ | word2vec_mean+doc2vec_dbow)
    labels = ["+".join(LONG_NAMES)] * 4 + ["pca"] * 2
    rows = [[label, "8", "17", number_cell(w), number_cell(1.0), number_cell(0.1), str(k)]
            for k, (label, w) in enumerate(zip(labels, [0.4, 0.3, 0.1, 0.1, 0.06, 0.04]))]
    assert wrapped_lines(labels[0], 20.0) == 4
    _, short = leading_rows(headers, rows, top=5)
    assert len(short) == 6 and short[-1][0] == "1 other candidate with non-zero weight"
    _, cut = leading_rows(headers, rows, top=5, lines=13)  # 3 x 4 lines and the rest's row
    assert len(cut) == 4 and cut[-1][0] == "3 other candidates with non-zero weight"
    assert float(cut[-1][1]) == pytest.approx(0.2)  # their total weight
    _, one = leading_rows(headers, rows, top=5, lines=2)
    assert len(one) == 2  # always at least one named


@pytest.mark.slow
def test_main_table_fits_with_long_labels_everywhere(tmp_path):
    # every block matters, so the leading candidates and MS hold all eight blocks, whose names
    # are 19 to 23 characters long: a 260-character formula and 190-character labels
    names = ["pca_whitened_components", "kpca_rbf_wide_bandwidth", "kpca_polynomial_degree2",
             "kpca_sigmoid_kernel", "kpca_cosine_similarity", "tfidf_bigrams_sublinear",
             "word2vec_mean_pooled", "doc2vec_distributed_bow"]
    rng = np.random.default_rng(5)
    blocks = {name: rng.normal(size=(300, 2)) for name in names}
    y = sum(0.3 * block[:, 0] for block in blocks.values()) + rng.normal(size=300)
    res = _fit("gaussian", pd.DataFrame({"y": y}), blocks, honest=3)
    assert len(res.baselines.loc["MS", "candidate"]) > 150
    _check_summary(res, tmp_path)
    # whole names leave no room for one 8-name label: the main table names the blocks by
    # letters, keyed in the Blocks row in formula order, and still breaks no name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        main = res.summary().as_latex()
    assert r"A~=~\mbox{pca\_whitened\_components} (2)" in main
    assert r"H~=~\mbox{doc2vec\_distributed\_bow} (2)" in main
    assert r"\_\allowbreak" not in main
    first = main.split("leading candidates")[1].split(r"\midrule")[1].split("&")[0]
    assert first.strip() == r"A+\allowbreak{}B+\allowbreak{}C+\allowbreak{}D+\allowbreak{}E+" \
        r"\allowbreak{}F+\allowbreak{}G+\allowbreak{}H"
    assert "pca_whitened_components+kpca_rbf_wide_bandwidth" in str(res.summary())  # text: names


@pytest.mark.slow
def test_main_table_fits_with_the_nested_se_notes(paper_data, tmp_path):
    # the nested SE's notes are the longest (splits, the ratio SE heuristic, the rows at the
    # lower bound, the Monte Carlo error) and a covariate adds the Covariates row
    frame = paper_data["frame"].assign(z=np.linspace(-1.0, 1.0, len(paper_data["frame"])))
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    formula = "y ~ z + " + " + ".join(f"block({name})" for name in blocks)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(formula, frame, blocks=blocks, seed=1, honest=3,
                        honest_se=pearl.NestedSE(repeats=2))
    assert "nested cross-validation over 2 splits" in " ".join(res.summary().notes)
    _check_summary(res, tmp_path)


def test_summary_takes_the_panels_its_latex_sets(fits_31):
    # res.summary(panels="all"), as the README's wording suggests: as_latex() then sets them all
    res = fits_31["gaussian"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        assert res.summary(panels="all").as_latex() == res.summary().as_latex("all")
        assert res.summary(panels=["importance"]).as_latex() == res.summary().as_latex(
            ["importance"])
        with pytest.raises(pearl.OptionError, match=r"panels='everything'"):
            res.summary(panels="everything")


def test_greek_block_and_covariate_names_compile_with_pdflatex(tmp_path):
    # a kernel's bandwidth in a block name (rbf_λ) and a Greek covariate: as_latex() set with
    # LATEX_PREAMBLE alone stopped at "Unicode character λ (U+03BB) not set up for use"
    res = _named_fit('y ~ θ_dose + block("rbf_λ") + block("Σ_pca")', "θ_dose",
                     ("rbf_λ", "Σ_pca"), 80, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        latex = res.summary().as_latex("all")
    _, problems = _set(tmp_path, latex)
    assert not problems, problems
    assert r"rbf\_\ensuremath{\lambda}" in latex and r"\ensuremath{\Sigma}" in latex


@pytest.mark.parametrize("name", ["age_at_baseline", "age_at_baseline_years",
                                  "age_at_baseline_in_years_x"])
def test_coefficients_panel_fits_the_line_with_a_long_covariate_name(name, tmp_path):
    # eight columns of four-decimal numbers leave the names about 4 em: a 15 to 26 character
    # covariate set whole ran 11 to 35 pt past the margin, "sum w" right of the rules
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(as_frame=True).frame.rename(columns={"age": name})
    data = frame.drop(columns="target").to_numpy()
    blocks = {"a": data[:, 2:4], "b": data[:, 4:7]}
    res = pearl.fit(f"target ~ {name} + sex + block(a) + block(b)", frame, blocks=blocks,
                    honest=False, seed=0)
    summary = res.summary()
    for panels in (["coefficients"], "all"):
        log, problems = _set(tmp_path, summary.as_latex(panels))
        assert "Overfull \\hbox" not in log and not problems, (panels, problems)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs poppler-utils")
def test_quoted_covariate_prints_straight_quotes(tmp_path):
    # pdflatex set Q("sex") as Q(”sex”): the OT1 font's character 34 is a closing quote
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"sex": rng.normal(size=80), "y": rng.normal(size=80)})
    blocks = {"a": rng.normal(size=(80, 2))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit('y ~ Q("sex") + block(a)', frame, blocks=blocks, seed=0, honest=False)
    latex = res.summary().as_latex(["main", "coefficients"])
    _, problems = _set(tmp_path, latex)
    assert not problems, problems
    text = subprocess.run(["pdftotext", "tables.pdf", "-"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout
    assert 'Q("sex")' in text and "\u201d" not in text, text


def _principal_components(columns: np.ndarray, k: int = 2) -> np.ndarray:
    centred = columns - columns.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    return u[:, :k] * s[:k]


@pytest.fixture(scope="module")
def long_names_summary():
    """Diabetes data, five covariates renamed to 23-34 character words and five blocks of
    27-31 character names (J = 31): the coefficients' names beside seven number columns."""
    from sklearn.datasets import load_diabetes

    covariates = {"age": "ageatbaselineinyearsrecorded", "sex": "biologicalsexcodedindicator",
                  "bmi": "bodymassindexatbaseline", "bp": "Systolicbloodpressuremeasurement",
                  "s1": "totalserumcholesterolconcentration"}
    frame = load_diabetes(as_frame=True).frame.rename(columns=covariates)
    serum = frame[["s2", "s3", "s4", "s5", "s6"]].to_numpy()
    subsets = {"kernelpcaradialbasisfunction": [0, 1, 2], "lipidprofileprincipalcomponents":
               [0, 1, 3], "glucosetriglyceridescomponents": [3, 4],
               "HighDensityLipoproteinFactors": [1, 2, 4], "anthropometricsummaryscores": [0, 4]}
    blocks = {name: _principal_components(serum[:, columns]) for name, columns in subsets.items()}
    terms = [f'Q("{name}")' if name[0].isupper() else name for name in covariates.values()]
    formula = "target ~ " + " + ".join(terms + [f"block({name})" for name in blocks])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(formula, frame, blocks=blocks, seed=0, honest=3)
        summary = res.summary()
    assert len(res.weights) == 31
    return summary


def test_long_one_word_names_break_inside_their_column(long_names_summary, tmp_path):
    # beside seven number columns the coefficients' names are left about 3 em; a name of one
    # word (no underscore to break at) ran up to 134 pt past the margin, block names 21 to 34 pt
    # in the candidates' column, since TeX breaks no name by itself
    everything = long_names_summary.as_latex("all")
    log, problems = _set(tmp_path, everything, "all")
    # the main table is 100 pt too tall for its page, as before names broke (the formula, the
    # Blocks key and the notes are long); every other float fits its page
    tall = [line for line in problems if "Float too large" in line]
    assert len(tall) == 1 and "input line 52." in tall[0], tall
    assert "Overfull \\hbox" not in log and not set(problems) - set(tall), problems
    # broken by penalties, which print nothing: the name reads whole on each of its lines
    assert r"gl\penalty50 u\penalty50 c" in everything
    assert r"High\penalty5 Density" in everything  # at its case changes first


def test_long_names_take_a_line_of_their_own_over_their_numbers(long_names_summary, tmp_path):
    # broken in their 30 pt column, the covariates took 4 to 7 lines of 5 to 7 letters each
    # ("ageatb", "aselinei", "nyearsr", ...), and the float was 8.3 pt too tall for its page
    latex = long_names_summary.as_latex("coefficients")
    lines = latex.splitlines()
    for name in ("ageatbaselineinyearsrecorded", "bodymassindexatbaseline",
                 "totalserumcholesterolconcentration", r"Q(\texttt{\char34}Systolic"):
        [at] = [i for i, line in enumerate(lines) if name in line]
        # whole, over all eight columns, the row of its numbers under it with no name
        assert lines[at].startswith(r"\multicolumn{8}") and r"\penalty" not in lines[at]
        assert lines[at + 1].startswith(" & ") and lines[at + 1].count("&") == 7, lines[at + 1]
    assert "\nIntercept & 152.1335 &" in latex  # short: whole, in its column
    log, problems = _set(tmp_path, latex, "coefficients")
    assert "Overfull" not in log and not problems, problems
    assert re.search(r"Output written on coefficients\.pdf \(1 page,", log), log[-500:]


@pytest.mark.parametrize("name", ["Intercept", "candidates", "bodymass", "Q(\"weight\")",
                                  "kpca_sigmoid"])
def test_short_names_never_break_inside(name):
    # "Interc|ept" in the coefficients' 3 em column read worse than the column 1 em wider
    latex = breakable(latex_escape(name), 2.5)
    assert r"\penalty" not in latex, latex


def test_a_short_name_gets_the_spare_em_of_its_column(long_names_summary):
    # the line less seven number columns left "Intercept" (36.5 pt) a 30 pt column
    latex = long_names_summary.as_latex("coefficients")
    assert r"p{\dimexpr(\linewidth-27.0em-14\tabcolsep)*100/100\relax}" in latex


def test_a_one_block_fusion_row_names_its_block():
    # "all M blocks" stands for M names in a paper's table; with one block it read "all 1
    # blocks" where the text summary names the block
    rng = np.random.default_rng(4)
    data = {"y": rng.normal(size=80), "x": rng.normal(size=80), "health": rng.normal(size=(80, 2))}
    res = pearl.fit("y ~ x + block(health)", data, seed=0, honest=3)
    latex = res.summary().as_latex()
    assert "all 1 blocks" not in latex
    fusion = next(line for line in latex.splitlines() if line.lstrip().startswith("Fusion"))
    assert "health" in fusion


def test_the_main_table_counts_a_row_for_the_rest_only_when_some_are_left_out():
    # five labels taking the 8 lines the page left were charged a ninth for the row of "the
    # rest", which was not there: the fifth folded into "1 other candidate with non-zero weight"
    from pearlstats.results.formatting import number_cell
    from pearlstats.results.latex import leading_rows

    headers = ["", "blocks", "parameters", "weight", "CV risk", "SE", "rank"]
    labels = ["+".join(LONG_NAMES[:4]), "pca", "+".join(LONG_NAMES[4:]), "pca", "pca+kpca_rbf"]
    rows = [[label, "2", "5", number_cell(0.2), number_cell(1.0), number_cell(0.1), str(k)]
            for k, label in enumerate(labels, start=1)]  # 2 + 1 + 2 + 1 + 1 lines
    _, every = leading_rows(headers, rows, top=5, lines=7)
    assert [row[0] for row in every] == labels
    # a line short: four labels and the row of the rest would take 7, so three are named
    _, three = leading_rows(headers, rows, top=5, lines=6)
    assert [row[0] for row in three[:-1]] == labels[:3]
    assert three[-1][0] == "2 other candidates with non-zero weight"
    _, four = leading_rows(headers, rows, top=4, lines=7)  # top leaves one out: its row counts
    assert [row[0] for row in four[:-1]] == labels[:4] and four[-1][0].startswith("1 other")


def _names_on_the_page(res, tmp_path, name):
    """The candidates the main table names, and its rows' count of the rest, after checking
    it sets on one page with no overfull box and no float too large."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        main = res.summary().as_latex()
    log, problems = _set(tmp_path, main, name)
    assert not problems, problems
    assert re.search(rf"Output written on {name}\.pdf \(1 page,", log), log[-500:]
    panel = main.split("leading candidates")[1].split(r"\midrule")[1].split(r"\bottomrule")[0]
    return [line.split("&")[0].strip() for line in panel.strip().splitlines()]


def test_the_main_table_names_every_leading_candidate_the_page_has_room_for(tmp_path):
    # five candidates of non-zero weight, two of their labels over two lines: the table named
    # four and folded the fifth into "1 other candidate", a third of the page left empty
    rng = np.random.default_rng(1)
    n = 200
    names = ["pca", "kernel_pca_rbf_with_a_long_name", "tfidf_50", "naive_bayes_embedding",
             "w2v"]
    blocks = {name: rng.normal(size=(n, 2)) for name in names}
    frame = pd.DataFrame({"x": rng.normal(size=n)})
    frame["y"] = frame["x"] + sum(0.4 * b[:, 0] for b in blocks.values()) + rng.normal(size=n)
    formula = "y ~ x + " + " + ".join(f"block({name})" for name in names)
    res = pearl.fit(formula, frame, blocks=blocks, seed=0, honest=False)
    assert (res.weights > 0).sum() == 5
    shown = _names_on_the_page(res, tmp_path, "five")
    assert not any("other candidate" in label for label in shown), shown
    assert len(shown) == 5


def test_the_main_table_names_both_lettered_candidates(tmp_path):
    # a 155-character block name and a 117-character covariate: the blocks go by letters, and
    # with two candidates of non-zero weight the table named "A" and "1 other candidate"
    rng = np.random.default_rng(0)
    n = 100
    long = "representation_" + "x" * 140
    blocks = {long: rng.normal(size=(n, 2)), "short": rng.normal(size=(n, 2))}
    covariate = "a_very_long_covariate_name_" + "z" * 90
    frame = pd.DataFrame({"y": rng.normal(size=n), covariate: rng.normal(size=n)})
    res = pearl.fit(f"y ~ {covariate} + block({long}) + block(short)", frame, blocks=blocks,
                    seed=0, honest=False)
    assert (res.weights > 0).sum() == 2
    assert _names_on_the_page(res, tmp_path, "long") == ["A", "B"]


@pytest.mark.parametrize("label", ["tab:pearl_50%", "tab:a b", "tab#1", "fig:{x}", "tab:é", ""])
def test_a_label_latex_cannot_hold_is_refused_naming_its_characters(label):
    # label="tab:pearl_50%" went into \label{} as it was: the % commented the rest of the
    # line out and pdflatex stopped ("File ended while scanning use of \label")
    summary = pearl.datasets.example_fit().summary()
    with pytest.raises(pearl.OptionError, match="label=") as raised:
        summary.as_latex(label=label)
    for character in set(label) - set(string.ascii_letters + string.digits + ":_-.+/"):
        assert repr(character) in str(raised.value)


def test_a_label_and_a_caption_of_latex_set(tmp_path):
    from pearlstats.results.formatting import Label

    summary = pearl.datasets.example_fit().summary()
    latex = summary.as_latex("all", label="tab:pearl_50-pct.v2",
                             caption=Label("R^2 & 50%", latex=r"$R^2$ \& 50\%"))
    assert r"\label{tab:pearl_50-pct.v2}" in latex and r"\caption{$R^2$ \& 50\%}" in latex
    assert r"\label{tab:pearl_50-pct.v2:diagnostics}" in latex
    plain = summary.as_latex(caption="$R^2$ & 50%")  # text: escaped, printed as typed
    assert r"\caption{\$R\textasciicircum{}2\$ \& 50\%}" in plain
    _, problems = _set(tmp_path, latex + "\n\n" + plain, "labels")
    assert not problems, problems
