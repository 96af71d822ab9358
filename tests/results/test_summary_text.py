"""The text summary fits 100 columns: wrapped formula, "uses" column and notes; aligned panels.

The demo's fit (``python -m pearlstats.demo``, 142 columns wide before) and a
formula of eight blocks with long names and two covariates are printed; every
line must be at most 100 characters, every panel's rules the same width, and
nothing wrapped may be lost (the formula, the candidate labels and the notes
read back whole once the line breaks are undone).
"""

from __future__ import annotations

import contextlib
import io
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats import demo
from pearlstats.results.text_layout import wrap_text

LONG_NAMES = ["pca_whitened_components", "kpca_rbf_wide_bandwidth", "kpca_polynomial_degree2",
              "kpca_sigmoid_kernel", "kpca_cosine_similarity", "tfidf_bigrams_sublinear",
              "word2vec_mean_pooled", "doc2vec_distributed_bow"]


@pytest.fixture(scope="module")
def demo_text():
    with contextlib.redirect_stdout(io.StringIO()):
        res = demo.main()
    return res, str(res.summary())


@pytest.fixture(scope="module")
def long_fit():
    rng = np.random.default_rng(3)
    n = 120
    blocks = {name: rng.normal(size=(n, 2)) for name in LONG_NAMES}
    frame = pd.DataFrame({"age_in_years": rng.normal(size=n),
                          "income_thousands": rng.normal(size=n)})
    frame["y"] = blocks[LONG_NAMES[0]][:, 0] + frame["age_in_years"] + rng.normal(size=n)
    formula = "y ~ age_in_years + income_thousands + " + " + ".join(
        f"block({name})" for name in LONG_NAMES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit(formula, frame, blocks=blocks, cv=3, seed=0, honest=False)
    return res, str(res.summary())


def _unwrapped(text: str) -> str:
    """The text with line breaks and runs of spaces undone (wrapping may break after + or ,)."""
    return re.sub(r"\s+", " ", text.replace("+\n", "+").replace(",\n", ", "))


def _formula_cell(text: str) -> str:
    """The header's Formula value, its wrapped lines joined (the right-hand pairs left out)."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if "Formula:  " in line)
    start = lines[first].index("Formula:  ") + len("Formula:  ")
    parts = []
    for line in lines[first:]:
        if parts and line[:start].strip():  # the next label: the formula has ended
            break
        parts.append(re.split(r"\s{2,}", line[start:].strip())[0])
    return " ".join(parts)


def _check_layout(text: str) -> None:
    lines = text.splitlines()
    too_long = [line for line in lines if len(line) > 100]
    assert not too_long, too_long
    rules = {len(line) for line in lines if line and set(line) == {"="}}
    assert len(rules) == 1, rules  # every panel as wide as the others


def test_demo_summary_fits_100_columns(demo_text):
    res, text = demo_text
    _check_layout(text)
    # wrapped, not cut: the formula and the Fusion candidate read back whole
    assert _formula_cell(text) == res.formula
    fusion = res.baselines.loc["Fusion", "candidate"]
    assert fusion in re.sub(r"\+\s+", "+", text.replace("\n", " "))


def test_long_formula_summary_fits_100_columns(long_fit):
    res, text = long_fit
    assert len(res.formula) > 250 and len(res.weights) == 255
    _check_layout(text)
    assert _formula_cell(text) == res.formula
    # the notes are wrapped to the panels' width, word for word
    summary = res.summary()
    notes_text = text.split("\n\n", 1)[1]
    assert _unwrapped(notes_text).split() == " ".join(summary.notes).split()


def test_strategies_header_shows_where_each_column_starts(demo_text):
    _, text = demo_text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("Strategies"))
    header, rule = lines[start + 2], lines[start + 3]
    groups = [(m.start(), m.end()) for m in re.finditer(r"-+", rule)]
    names = ["honest risk", "SE", "PEARL/this", "ratio SE", "CV risk*", "uses"]
    assert len(groups) == 1 + len(names)  # the stub column and one per header
    for name, (begin, end) in zip(names, groups[1:]):
        position = header.index(name, begin - 1)
        assert begin <= position and position + len(name) <= end, (name, header, rule)


@pytest.mark.parametrize(("text", "width", "expected"), [
    ("y ~ block(a) + block(b)", 14, ["y ~ block(a) +", "block(b)"]),
    ("pca+kpca_rbf+kpca_poly", 10, ["pca+", "kpca_rbf+", "kpca_poly"]),
    ("abcdefghij", 4, ["abcd", "efgh", "ij"]),  # too long for any line: split, never cut
    # a "+" that would stand alone starts the next line with its term
    ("y ~ block(a) + block(bbbbbbbb) + c", 12, ["y ~ block(a)", "+ block(bbbb", "bbbb) + c"]),
])
def test_wrap_text_breaks_after_spaces_and_plus_signs(text, width, expected):
    assert wrap_text(text, width) == expected


@pytest.mark.parametrize("text", ["y ~ block(a) + block(bbbbbbbb) + c",
                                  "y ~ x + block(kpca_polynomial_degree2) + block(pca)"])
def test_wrap_text_leaves_no_line_holding_only_a_plus(text):
    # "y ~ block(a)" / "+" / "block(bbbbbb" at 12 columns: the "+" goes with its term
    for width in range(6, len(text)):
        lines = wrap_text(text, width)
        assert "+" not in [line.strip() for line in lines], (width, lines)
        assert all(len(line) <= width for line in lines), (width, lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")  # nothing lost


def test_number_columns_stay_right_aligned_beside_blank_block_rows():
    # summary(coefficients=True) with more block-column rows (no t, P or interval: blank)
    # than common terms: the t, P>|t| and interval columns were taken for text, left-aligned
    rng = np.random.default_rng(18)
    n = 200
    data = pd.DataFrame({"x": rng.normal(size=n)})
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 1))
    data["y"] = data["x"] + a[:, 0] + 0.3 * b[:, 0] + rng.normal(size=n)
    res = pearl.fit("y ~ x + block(a) + block(b)", data, blocks={"a": a, "b": b}, seed=0,
                    honest=False)
    text = str(res.summary(coefficients=True))
    lines = text[text.index("Model-averaged coefficients"):].splitlines()
    header = next(line for line in lines if line.split()[:2] == ["coef", "SE"])
    rows = [next(line for line in lines if line.startswith(term + " ")) for term in
            ("Intercept", "x")]
    assert sum(line.startswith(("a[", "b[")) for line in lines) == 3
    for column, title in enumerate(header.split()[:6]):  # coef to 0.975] ("sum w": 2 words)
        end = header.index(title) + len(title)
        for row in rows:
            cell = row.split()[column + 1]
            # right-aligned under its header: the number ends where the header ends
            assert row.index(cell, end - len(cell) - 1) + len(cell) == end, (title, row)
