"""Every number in ``PearlResults.summary()`` against an independent computation.

The summary's cells are read from its statsmodels tables and compared with
numbers recomputed here from ``cv_predictions``, the weights and the data
(numpy, scipy, quadprog), at the precision the summary shows.
"""

from __future__ import annotations

import re
import warnings
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
import quadprog
from scipy.stats import entropy, rankdata
from sklearn.metrics import log_loss

import pearlstats as pearl
from conftest import PAPER_FORMULA
from pearlstats.results.summary import format_number

NAMES = ["pca", "kpca_rbf", "kpca_poly", "kpca_sigmoid", "kpca_cosine"]


@pytest.fixture(scope="module")
def fitted(paper_data):
    return pearl.fit(PAPER_FORMULA, paper_data["frame"], blocks=paper_data["blocks"], seed=11)


@pytest.fixture(scope="module")
def y(paper_data):
    return paper_data["frame"]["y"].to_numpy()


def _table(summary, title_start):
    """Cells (list of rows of str) of the table whose title starts with *title_start*."""
    for table in summary.tables:
        if table.title and table.title.startswith(title_start):
            return [[str(cell.data) for cell in row] for row in table]
    raise AssertionError(f"no table titled {title_start!r}")


def _body(cells):
    """Rows below the header row, keyed by their stub."""
    return {row[0]: row[1:] for row in cells[1:]}


def _close(cell: str, expected: float) -> None:
    """The cell shows *expected* to its last printed digit."""
    value = float(cell)
    if "e" in cell:
        mantissa_digits = len(cell.split("e")[0].split(".")[1])
        assert value == pytest.approx(expected, rel=0.6 * 10.0**-mantissa_digits), (cell, expected)
    else:
        decimals = len(cell.split(".")[1]) if "." in cell else 0
        assert abs(value - expected) <= 0.51 * 10.0**-decimals + 1e-12, (cell, expected)


def _sq(y, p):
    return (y - p) ** 2


def test_header_states_the_fit(fitted, paper_data):
    cells = _table(fitted.summary(), "PEARL model averaging")
    pairs = {row[i].strip(): row[i + 1].strip() for row in cells for i in (0, 2)}
    assert pairs["Formula:"] == PAPER_FORMULA
    assert pairs["Family:"] == "gaussian"
    assert pairs["Surrogate loss:"] == pairs["Loss it stands for:"] == "squared error"
    assert pairs["No. observations:"] == str(len(paper_data["frame"]))
    assert pairs["Cross-validation:"] == "5-fold"
    assert pairs["Candidates (J):"] == str(2 ** len(NAMES) - 1)
    assert pairs["Seed:"] == "11"
    dims = ", ".join(f"{name} ({paper_data['blocks'][name].shape[1]})" for name in NAMES)
    assert pairs[f"Blocks (M = {len(NAMES)}):"] == dims


def test_weights_section_lists_every_nonzero_candidate_with_independent_risks(
    fitted, paper_data, y
):
    summary = fitted.summary()
    rows = _body(_table(summary, "Candidates with non-zero weight"))
    weights = fitted.weights
    assert set(rows) == set(weights.index[weights > 0])
    P = fitted.cv_predictions
    risks = {label: _sq(y, P[label].to_numpy()).mean() for label in P.columns}
    ranks = dict(zip(P.columns, rankdata([risks[label] for label in P.columns], method="min")))
    for label, (n_blocks, n_params, weight, risk, se, rank) in rows.items():
        blocks = label.split("+")
        assert int(n_blocks) == len(blocks)
        assert int(n_params) == 1 + sum(paper_data["blocks"][b].shape[1] for b in blocks)
        _close(weight, weights[label])
        _close(risk, risks[label])
        _close(se, _sq(y, P[label].to_numpy()).std(ddof=1) / np.sqrt(len(y)))
        assert int(rank) == ranks[label]
    zero = int((weights == 0).sum())
    assert f"{zero} of {len(weights)} candidates have zero weight" in str(summary)


def test_strategies_section_matches_definitions_and_paired_ratio_se(paper_data, y):
    # honest=False: the section then shows the in-sample CV risks checked here
    fitted = pearl.fit(
        PAPER_FORMULA, paper_data["frame"], blocks=paper_data["blocks"], seed=11, honest=False
    )
    rows = _body(_table(fitted.summary(), "Strategies (in-sample CV risk, optimistic)"))
    P = fitted.cv_predictions
    w = fitted.weights.to_numpy()
    risks = {label: _sq(y, P[label].to_numpy()).mean() for label in P.columns}
    best = min(NAMES, key=risks.get)
    predictions = {
        "PEARL": P.to_numpy() @ w,
        "MS": P[min(risks, key=risks.get)].to_numpy(),
        "SA-FRL": P[NAMES].mean(axis=1).to_numpy(),
        "SA-cand": P.mean(axis=1).to_numpy(),
        "Fusion": P["+".join(NAMES)].to_numpy(),
        "Best": P[best].to_numpy(),
    }
    a = _sq(y, predictions["PEARL"])
    n = len(y)
    for name, prediction in predictions.items():
        b = _sq(y, prediction)
        risk, ratio_se_cell = b.mean(), rows[name][3]
        ratio = a.mean() / risk
        # delta method for a ratio of paired means: Var = (Var a - 2 R Cov(a,b) + R^2 Var b) / (n
        # mean(b)^2)
        cov = np.cov(a, b, ddof=1)
        ratio_se = np.sqrt((cov[0, 0] - 2 * ratio * cov[0, 1] + ratio**2 * cov[1, 1]) / n) / risk
        _close(rows[name][0], risk)
        _close(rows[name][1], b.std(ddof=1) / np.sqrt(n))
        _close(rows[name][2], ratio)
        _close(ratio_se_cell, ratio_se)
    assert rows["Best"][4].strip() == best


def test_block_importance_section(fitted):
    rows = _body(_table(fitted.summary(), "Block importance"))
    assert list(rows) == NAMES
    for name, (importance, count) in rows.items():
        containing = [label for label in fitted.weights.index if name in label.split("+")]
        _close(importance, fitted.weights[containing].sum())
        assert int(count) == 2 ** (len(NAMES) - 1) == len(containing)


def test_block_importance_counts_only_candidates_that_did_not_fail():
    # 16 rows, K = 5: the three candidates with the 9-column block w have more coefficients
    # than training rows and fail; w is then in one candidate that fitted, not four.
    rng = np.random.default_rng(4)
    blocks = {"a": rng.normal(size=(16, 2)), "b": rng.normal(size=(16, 3)),
              "w": rng.normal(size=(16, 9))}
    y = blocks["a"][:, 0] + rng.normal(size=16)
    with pytest.warns(pearl.CandidateFailureWarning):
        res = pearl.fit("y ~ block(a) + block(b) + block(w)", {"y": y, **blocks}, seed=3,
                        honest=False)
    assert sorted(res.failed[res.failed].index) == ["a+b+w", "a+w", "b+w"]
    rows = _body(_table(res.summary(), "Block importance"))
    assert {name: int(count) for name, (_, count) in rows.items()} == {"a": 2, "b": 2, "w": 1}


def _frank_wolfe_gap(P, y, w):
    gradient = 2 * P.T @ (P @ w - y) / len(y)
    return gradient @ w - gradient.min()


def test_consistency_diagnostics_section(fitted, y):
    correct = ["pca+kpca_rbf", ("kpca_poly", "pca")]
    cells = _table(fitted.summary(correct=correct), "Consistency diagnostics")
    rows = {row[0].strip(): row[1].strip() for row in cells}
    w = fitted.weights.to_numpy()
    _close(rows["Effective no. of candidates (1/sum w^2)"], 1 / np.sum(w**2))
    _close(rows["Weight entropy (nats)"], entropy(w))
    _close(rows["Largest weight"], w.max())
    assert int(rows["Non-zero weights"]) == np.count_nonzero(w)
    gap = _frank_wolfe_gap(fitted.cv_predictions.to_numpy(), y, w)
    assert abs(float(rows["Solver KKT gap"]) - gap) < 1e-10
    tau = rows["tau-hat (weight on pca+kpca_rbf, pca+kpca_poly)"]
    _close(tau, fitted.weights["pca+kpca_rbf"] + fitted.weights["pca+kpca_poly"])


def _simplex_qp(P, y):
    J = P.shape[1]
    G = 2 * P.T @ P / len(y)
    a = 2 * P.T @ y / len(y)
    constraints = np.column_stack([np.ones(J), np.eye(J)])
    return quadprog.solve_qp(G, a, constraints, np.r_[1.0, np.zeros(J)], meq=1)[0]


def test_stability_section_re_solves_on_fold_complements(paper_data, y):
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:3]}
    res = pearl.fit(
        "y ~ block(pca) + block(kpca_rbf) + block(kpca_poly)",
        paper_data["frame"],
        blocks=blocks,
        seed=2,
    )
    P = res.cv_predictions.to_numpy()
    resolved = np.array(
        [_simplex_qp(P[res.folds != k], y[res.folds != k]) for k in range(res.n_folds)]
    )
    resolved = pd.DataFrame(np.clip(resolved, 0, None).T, index=res.candidate_labels)
    rows = _body(_table(res.summary(), "Weights re-solved on 5 fold complements"))
    assert rows
    for label, (weight, mean, sd) in rows.items():
        _close(weight, res.weights[label])
        _close(mean, resolved.loc[label].mean())
        _close(sd, resolved.loc[label].std(ddof=1))
    shown = set(resolved.index[(resolved > 1e-9).any(axis=1)]) | set(
        res.weights.index[res.weights > 0]
    )
    assert set(rows) == shown


def test_failure_ledger_section(paper_data):
    frame = paper_data["frame"].iloc[:40]
    blocks = {
        "small": paper_data["blocks"]["pca"][:40],
        "wide": np.random.default_rng(0).normal(size=(40, 35)),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.CandidateFailureWarning)
        res = pearl.fit(
            "y ~ block(small) + block(wide)", frame, blocks=blocks, cv=5, seed=0, honest=False
        )
    summary = res.summary()
    cells = _table(summary, "Failure ledger")
    rows = {row[0].strip(): [cell.strip() for cell in row[1:]] for row in cells[1:]}
    # 'wide' has 36 coefficients and 'small+wide' 38, but each training set has 32 rows.
    assert set(rows) == {"wide", "small+wide"}
    for folds, stage, kind, excluded, action in rows.values():
        assert (folds, stage, kind, excluded) == ("all", "cv", "infeasible", "yes")
        assert "weight 0" in action
    assert "2 of them failed" in str(summary)
    fusion = [cell.strip() for cell in _body(_table(summary, "Strategies"))["Fusion [1]"]]
    assert fusion == ["--", "--", "--", "--", "failed"]  # the all-block candidate small+wide failed
    assert "[1] Fusion: risk undefined: some rows have no prediction" in str(summary).replace(
        "\n", " ")
    no_failures = pearl.fit("y ~ block(small)", frame, blocks={"small": blocks["small"]}, seed=0)
    assert not any(t.title and t.title.startswith("Failure") for t in no_failures.summary().tables)


def _environments(latex: str) -> list:
    stack = []
    for kind, name in re.findall(r"\\(begin|end)\{(\w+)\}", latex):
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, name
    return stack


class _TagChecker(HTMLParser):
    VOID = {"br", "hr", "img", "meta", "input", "wbr"}

    def __init__(self):
        super().__init__()
        self.stack, self.text = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack.pop() == tag, tag

    def handle_data(self, data):
        self.text.append(data)


def _special_fit(paper_data):
    frame = paper_data["frame"]
    blocks = {"kpca_rbf": paper_data["blocks"]["kpca_rbf"], "pca_2": paper_data["blocks"]["pca"]}
    return pearl.fit("y ~ I(x1 < 0) + block(kpca_rbf) + block(pca_2)", frame, blocks=blocks, seed=0)


def test_latex_is_balanced_and_escapes_labels(paper_data):
    res = _special_fit(paper_data)
    latex = res.summary(correct=["kpca_rbf"]).as_latex("all")
    assert _environments(latex) == []
    assert (
        latex.count(r"\toprule") == latex.count(r"\bottomrule") == latex.count(r"\begin{tabular*}")
    )
    # no unescaped specials outside commands: underscores, tildes, bare < from the formula
    text = re.sub(r"\$[^$]*\$", "", latex)  # mathematics ($1/\sum_j w_j^2$) may use _ and ^
    assert not re.search(r"(?<!\\)_", text)
    # the labels' < and ~ escaped; what is left: a number below 0.0001, D's fallback definition
    body = "\n".join(line for line in latex.replace("{<}0.0001", "").splitlines()
                     if not line.startswith(r"\expandafter\ifx"))
    assert "~" not in latex and "<" not in body
    assert r"$1/\sum_j w_j^2$" in latex and r"$\hat\tau$" in latex
    assert r"kpca\_rbf" in latex and r"y \ensuremath{\sim} I(x1 \textless{} 0)" in latex
    assert r"\emph{Strategies" in latex and res.summary().as_latex().count(r"\begin{table}") == 1


def test_html_parses_and_keeps_the_labels(paper_data):
    res = _special_fit(paper_data)
    checker = _TagChecker()
    checker.feed(res._repr_html_())
    checker.close()
    assert checker.stack == []
    text = "".join(checker.text)
    assert "y ~ I(x1 < 0) + block(kpca_rbf) + block(pca_2)" in text
    assert "kpca_rbf+pca_2" in text or "kpca_rbf" in text
    assert res._repr_html_() == res.summary().as_html()


def test_strategies_show_the_honest_risk_and_warn_against_ms(fitted, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        text = str(fitted.summary())
    honest = fitted.honest_risk(outer=fitted.stages.honest)
    losses = honest.row_losses
    assert "Strategies (honest risk: 5-fold nested cross-validation)" in text
    assert format_number(losses["PEARL"].mean()) in text
    difference = losses["PEARL"] - losses["MS"]
    above = difference.mean() > difference.std(ddof=1) / np.sqrt(len(y))
    assert ("re-selected in each outer fold" in text) == above
    assert "optimistic for PEARL by construction" in " ".join(text.split())  # across lines


def test_classification_summary_risks_are_log_losses(paper_data):
    frame = paper_data["frame"].assign(hit=np.where(paper_data["frame"]["y"] > 0, "yes", "no"))
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:3]}
    res = pearl.fit("hit ~ block(pca) + block(kpca_rbf) + block(kpca_poly)", frame, blocks=blocks,
                    family="binomial", seed=5, honest=False)
    summary = res.summary()
    pairs = {
        row[i].strip(): row[i + 1].strip()
        for row in _table(summary, "PEARL model averaging")
        for i in (0, 2)
    }
    assert (pairs["Surrogate loss:"], pairs["Loss it stands for:"]) == ("cross-entropy", "log-loss")
    y = (frame["hit"] == "yes").to_numpy(float)
    for label, cells in _body(_table(summary, "Candidates with non-zero weight")).items():
        _close(cells[3], log_loss(y, res.cv_predictions[label].to_numpy()))
    pearl_p = res.cv_predictions.to_numpy() @ res.weights.to_numpy()
    _close(_body(_table(summary, "Strategies"))["PEARL"][0], log_loss(y, pearl_p))
    assert _environments(summary.as_latex()) == []


def test_coefficient_section_lists_covariates_first_and_matches_the_averaged_model(paper_data):
    frame = paper_data["frame"].assign(age=np.linspace(-1.0, 1.0, len(paper_data["frame"])))
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:2]}
    formula = f"y ~ age + block({NAMES[0]}) + block({NAMES[1]})"
    res = pearl.fit(formula, frame, blocks=blocks, seed=2, honest=False)
    summary = res.summary()
    rows = _body(_table(summary, "Model-averaged coefficients"))
    assert list(rows) == ["Intercept", "age"]  # the terms in every candidate only
    interval = res.conf_int()
    for term, cells in rows.items():
        _close(cells[0], res.params[term])
        _close(cells[1], res.bse[term])
        _close(cells[2], res.tvalues[term])  # statsmodels' layout: t and P>|t| after the SE
        _close(cells[3], res.pvalues[term])
        _close(cells[4], interval.loc[term, "lower"])
    text = " ".join(str(summary).split())  # notes wrap
    assert "Block columns are not shown" in text and "eq. 6.12" in text
    assert "weights and the candidate set taken as fixed" in text and "CV+" in text
    shown = res.summary(coefficients="conditional")
    rows = _body(_table(shown, "Model-averaged coefficients"))
    table = res.coef_table(terms="all", average="conditional")
    assert list(rows) == list(table.index) and len(rows) > 2
    block = list(rows)[2]
    _close(rows[block][0], table.loc[block, "coef"])
    _close(rows[block][1], table.loc[block, "std err"])
    assert rows[block][2:6] == ["", "", "", ""]  # no test or interval for a block column
    assert "conditional average" in " ".join(str(shown).split())


def test_weight_uncertainty_section_is_the_refitting_bootstraps_distribution(fitted):
    summary = fitted.summary(weight_uncertainty=12)
    title = ("Bootstrap distribution of the weights (refitting bootstrap of the procedure, "
             "12 resamples; not standard errors)")
    rows = _body(_table(summary, title))
    expected = fitted.weight_uncertainty(n_resamples=12)
    for label, cells in rows.items():
        _close(cells[1], expected.loc[label, "mean"])
        _close(cells[2], expected.loc[label, "spread"])
        _close(cells[4], expected.loc[label, "q_upper"])
    assert "Bootstrap distribution of the weights" not in str(fitted.summary())


@pytest.mark.parametrize(("option", "value", "message"), [
    ("weight_uncertainty", "yes", r"weight_uncertainty='yes'; use an int >= 2"),
    ("weight_uncertainty", 2.7, r"weight_uncertainty=2.7; use an int >= 2"),  # was 2 resamples
    ("weight_uncertainty", 1, r"weight_uncertainty=1; use an int >= 2"),
    ("coefficients", "no", r"coefficients='no'; use True or 'conditional'"),  # was True
])
def test_summary_options_of_the_wrong_kind_are_option_errors(fitted, option, value, message):
    with pytest.raises(pearl.OptionError, match=message):
        fitted.summary(**{option: value})


def test_header_says_how_many_fold_draws_the_weights_averaged(paper_data):
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:2]}
    res = pearl.fit("y ~ block(pca) + block(kpca_rbf)", paper_data["frame"], blocks=blocks,
                    seed=0, honest=False, cv_repeats=3)
    assert "Cross-validation:  5-fold x 3 draws" in str(res.summary())


def test_strategies_note_does_not_claim_shrunk_weights_are_the_optimum(paper_data):
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:2]}
    res = pearl.fit("y ~ block(pca) + block(kpca_rbf)", paper_data["frame"], blocks=blocks,
                    seed=0, honest=False, weight_shrinkage=1.0)
    assert res.baselines.loc["PEARL", "cv_risk"] > res.baselines.loc["MS", "cv_risk"]
    text = " ".join(str(res.summary()).split())  # the note wraps where its words fall
    assert "weights are shrunk, so they need not have the lowest CV risk" in text


def test_latex_escapes_greek_letters_as_mathematics():
    # pdflatex's text fonts have no Greek: "rbf_λ" stopped it ("Unicode character λ (U+03BB)
    # not set up for use with LaTeX"); every Greek letter, small or capital, is set in math
    from pearlstats.results.formatting import latex_escape

    assert latex_escape("rbf_λ") == r"rbf\_\ensuremath{\lambda}"
    assert latex_escape("ΣΛΩ") == r"\ensuremath{\Sigma}\ensuremath{\Lambda}\ensuremath{\Omega}"
    assert latex_escape("Α ο ς φ ϕ") == (r"\ensuremath{\mathrm{A}} \ensuremath{o} "
                                         r"\ensuremath{\varsigma} \ensuremath{\varphi} "
                                         r"\ensuremath{\phi}")
    greek = [chr(c) for c in (*range(0x391, 0x3AA), *range(0x3B1, 0x3CA)) if c != 0x3A2]
    assert not re.search(r"[^\x00-\x7f]", latex_escape("".join(greek)))  # none left as is
    assert latex_escape("Müller_ß") == r"Müller\_ß"  # Latin-1: pdflatex's utf8 sets it


class _Cells(HTMLParser):
    """The text of each ``th`` and ``td`` cell, table by table (``<wbr>`` adds none)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.cell = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag in ("th", "td"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self.tables[-1].append(self.cell.strip())
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_html_labels_may_break_after_plus_and_read_as_the_text():
    # candidate labels of long block names joined by "+" had no break opportunity: the
    # candidates' table pushed weight, CV risk, SE and rank out of a 1000-px notebook
    names = ["kernel_pca_rbf_on_lab_values", "kernel_pca_poly_on_lab_values",
             "autoencoder_bottleneck_lab"]
    rng = np.random.default_rng(4)
    blocks = {name: rng.normal(size=(80, 2)) for name in names}
    y = blocks[names[0]][:, 0] + blocks[names[2]][:, 1] + rng.normal(size=80)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        res = pearl.fit("y ~ " + " + ".join(f"block({n})" for n in names), {"y": y},
                        blocks=blocks, seed=0, honest=False)
        summary = res.summary()
    html = res._repr_html_()
    shown = [label for label in res.weights.index if "+" in label and res.weights[label] > 0]
    assert shown
    for label in shown:
        assert f"<th>{label.replace('+', '+<wbr>')}</th>" in html, label
    assert "<wbr> " not in html  # a "+" with a space after it breaks already
    # what a reader sees (and copies) in a cell is the text summary's cell
    parser = _Cells()
    parser.feed(html)
    tables = dict(zip([table.title for table in summary.tables], parser.tables))
    for name in ("candidates", "strategies"):
        table = summary.panels[name]
        assert tables[table.title] == [str(cell.data).strip() for row in table for cell in row]


def test_surrogate_loss_reads_the_same_in_text_latex_and_html(fitted):
    # the HTML said "squared", LaTeX "squared error"
    summary = fitted.summary()
    assert re.search(r"Surrogate loss:\s+squared error\s", summary.as_text())
    assert "Surrogate loss: & squared error &" in summary.as_latex()
    assert re.search(r"<td>Surrogate loss:</td>\s*<td>squared error</td>", summary.as_html())


def test_latex_sets_a_double_quote_straight():
    # cmr's character 34 is a closing quote: Q("sex") read Q(”sex”) outside typewriter text
    from pearlstats.results.formatting import latex_escape

    assert latex_escape('Q("sex")') == r"Q(\texttt{\char34}sex\texttt{\char34})"


def test_a_multinomial_candidates_parameters_are_said_to_be_per_class(paper_data):
    """n_params counts one class equation; the column said "parameters" beside AICc's
    (C - 1) times as many."""
    frame = paper_data["frame"].assign(
        level=pd.cut(paper_data["frame"]["y"], 3, labels=["low", "mid", "high"]).astype(str))
    blocks = {name: paper_data["blocks"][name] for name in NAMES[:2]}
    res = pearl.fit("level ~ block(pca) + block(kpca_rbf)", frame, blocks=blocks,
                    family="multinomial", seed=5, honest=False)
    table = _table(res.summary(), "Candidates with non-zero weight")
    assert "params/class" in str(table) and "parameters" not in str(table)
    label = res.weights.idxmax()
    assert int(_body(table)[label][1]) == res.n_params[label]


def test_the_zero_weight_note_says_none_in_words():
    # "0 of 1 candidates have zero weight" under a fit of one block (one candidate)
    rng = np.random.default_rng(16)
    data = pd.DataFrame({"x": rng.normal(size=80)})
    block = rng.normal(size=(80, 2))
    data["y"] = data["x"] + block[:, 0] + rng.normal(size=80)
    res = pearl.fit("y ~ x + block(a)", data, blocks={"a": block}, seed=0, honest=False)
    assert len(res.weights) == 1 and (res.weights > 0).all()
    text = str(res.summary())
    assert "No candidate has zero weight." in text and " of 1 candidates" not in text
