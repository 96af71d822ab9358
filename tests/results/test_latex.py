"""The LaTeX of summaries and comparison tables compiles cleanly with pdflatex.

A gaussian, a binomial and a multinomial summary and a comparison table are
set in one article (the preamble of :data:`pearlstats.results.summary.LATEX_PREAMBLE`,
2.5 cm margins as in a typical paper); the log must show no error, no
overfull box and no float too large for the page. Skipped when pdflatex is
not installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats.results.evaluation import compare_table
from pearlstats.results.summary import LATEX_PREAMBLE

pytestmark = pytest.mark.skipif(shutil.which("pdflatex") is None,
                                reason="pdflatex is not installed")

NAMES = ["pca", "kpca_rbf", "kpca_poly"]


def _summaries(paper_data) -> list[str]:
    frame = paper_data["frame"]
    blocks = {name: paper_data["blocks"][name] for name in NAMES}
    formula = " + ".join(f"block({name})" for name in NAMES)
    y = frame["y"].to_numpy()
    levels = pd.cut(y, [-np.inf, -0.3, 0.6, np.inf], labels=["low", "mid", "high"])
    frame = frame.assign(hit=np.where(y > 0, "yes", "no"), level=levels)
    gaussian = pearl.fit("y ~ " + formula, frame, blocks=blocks, seed=1)
    binomial = pearl.fit("hit ~ " + formula, frame, blocks=blocks, family="binomial", seed=1)
    multinomial = pearl.fit("level ~ " + formula, frame, blocks=blocks, family="multinomial",
                            seed=1)
    return [gaussian.summary(correct=["pca"]).as_latex(), binomial.summary().as_latex(),
            multinomial.summary().as_latex()]


def _comparison() -> str:
    rng = np.random.default_rng(0)
    methods = ["PEARL", "Best", "Fusion", "SA-FRL", "SA-cand", "MS"]
    def run():
        return pd.DataFrame({"MSE": rng.uniform(1, 20, 6), "MAE": rng.uniform(0, 1, 6)},
                            index=methods)

    runs = {n: [run() for _ in range(3)] for n in (100, 200)}
    return compare_table(runs).to_latex(caption="Test error of the simulation")


def test_summaries_and_comparison_compile_without_overfull_boxes(paper_data, tmp_path):
    body = "\n\\clearpage\n".join(_summaries(paper_data) + [_comparison()])
    document = "\n".join([r"\documentclass{article}",
                          r"\usepackage[a4paper,margin=2.5cm]{geometry}", LATEX_PREAMBLE,
                          r"\begin{document}", body, r"\end{document}", ""])
    (tmp_path / "tables.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "tables.tex"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    log = (tmp_path / "tables.log").read_text(encoding="latin-1")
    problems = [line for line in log.splitlines()
                if line.startswith("!") or re.search(r"Overfull|Float too large|Undefined", line)]
    assert done.returncode == 0 and not problems, problems or done.stdout[-2000:]
    assert (tmp_path / "tables.pdf").stat().st_size > 1000
    assert log.count(r"Output written") == 1 and "(4 pages" in log
