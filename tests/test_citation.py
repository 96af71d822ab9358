"""pearl.cite() and CITATION.cff name the same paper, authors and package version."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import pearlstats as pearl
from pearlstats.exceptions import OptionError

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[1]


def _bibtex_field(entry: str, field: str) -> str:
    match = re.search(rf"^\s*{field}\s*=\s*\{{(.*)\}},?\s*$", entry, flags=re.MULTILINE)
    assert match, f"no {field} in {entry}"
    return match.group(1).replace("{", "").replace("}", "")


def test_citation_file_and_cite_agree_on_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    paper = cff["preferred-citation"]
    bib = pearl.cite("paper")
    assert bib.startswith("@misc{")
    assert _bibtex_field(bib, "title") == paper["title"]
    names = [f"{a['family-names']}, {a['given-names']}" for a in paper["authors"]]
    assert _bibtex_field(bib, "author").split(" and ") == names
    assert names == ["Li, Wenhui", "Gong, Shijing", "Zhang, Xinyu"]


def test_citation_file_and_cite_carry_the_installed_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(cff["version"]) == pearl.__version__
    assert f"version {pearl.__version__}," in _bibtex_field(pearl.cite("package"), "note")


def test_cite_all_is_the_paper_then_the_package():
    both = pearl.cite()
    assert both == pearl.cite("paper") + "\n\n" + pearl.cite("package")
    assert both.count("\n@") == 1 and both.count("@") == 2


def test_cite_refuses_an_unknown_choice():
    with pytest.raises(OptionError, match="'paper', 'package'"):
        pearl.cite("bibtex")


def test_readme_names_the_paper_and_its_authors():
    readme = (ROOT / "README.md").read_text()
    assert "PEARL: Performance-Enhanced Aggregated Representation Learning" in readme
    assert "Wenhui Li, Shijing Gong and Xinyu Zhang" in readme
    assert "pearl.cite()" in readme


def test_readme_says_cite_returns_the_string():
    readme = (ROOT / "README.md").read_text()
    assert "`pearl.cite()` returns both as one BibTeX string" in readme


STYLES = ["plain", "plainnat", "apalike"]


@pytest.mark.skipif(not (shutil.which("pdflatex") and shutil.which("bibtex")),
                    reason="pdflatex and bibtex are not installed")
@pytest.mark.parametrize("style", STYLES)
def test_the_package_version_reaches_a_classic_bibtex_bibliography(style, tmp_path):
    # a tiny article citing both entries, compiled as a user would: pdflatex, bibtex
    (tmp_path / "refs.bib").write_text(pearl.cite())
    natbib = "\\usepackage{natbib}\n" if style != "plain" else ""
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n" + natbib + "\\begin{document}\n"
        "\\nocite{li_pearl,pearlstats}\n"
        f"\\bibliographystyle{{{style}}}\n\\bibliography{{refs}}\n\\end{{document}}\n")
    for command in (["pdflatex", "-interaction=nonstopmode", "doc.tex"], ["bibtex", "doc"]):
        run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 or command[0] == "bibtex", run.stdout[-2000:]
    bbl = " ".join((tmp_path / "doc.bbl").read_text().split())  # BibTeX wraps lines
    assert f"version {pearl.__version__}" in bbl
    # (the styles may lower-case a title's words)
    assert "performance-enhanced aggregated representation learning" in bbl.lower()
    blg = (tmp_path / "doc.blg").read_text()
    assert "error message" not in blg, blg
