"""pearl.cite() and CITATION.cff name the same paper, authors and package version."""

from __future__ import annotations

import re
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
    assert _bibtex_field(pearl.cite("package"), "version") == pearl.__version__


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
