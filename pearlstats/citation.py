"""How to cite PEARL and pearlstats: :func:`cite` returns BibTeX.

The method is that of Li, Gong and Zhang's paper (the two first authors contributed
equally); the package is this implementation of it. Cite both when the numbers in a
paper come from pearlstats: the paper for the method and its theorems, the package
(with its version) for the computations. ``CITATION.cff`` at the repository root
holds the same information for GitHub's "Cite this repository" and reference managers.
"""

from __future__ import annotations

from ._version import __version__
from .exceptions import OptionError

__all__ = ["cite"]

PAPER_BIBTEX = """@misc{li_pearl,
  title  = {{PEARL}: Performance-Enhanced Aggregated Representation Learning},
  author = {Li, Wenhui and Gong, Shijing and Zhang, Xinyu},
  note   = {Preprint. Wenhui Li and Shijing Gong contributed equally},
}"""

# @misc with the version in `note`: classic BibTeX styles (plain, plainnat, apalike) print a
# misc entry's note, while @software and a `version` field are biblatex's and never reach
# their bibliographies.
_PACKAGE_TEMPLATE = """@misc{{pearlstats,
  title  = {{pearlstats: {{PEARL}} model averaging over learned representations in {{Python}}}},
  author = {{{{The pearlstats developers}}}},
  note   = {{Python package, version {version}, implementing the method of Li, Gong and Zhang}},
}}"""

_WHAT = ("all", "paper", "package")


def cite(what: str = "all") -> str:
    """BibTeX entries for the PEARL method's paper and for this package.

    Parameters
    ----------
    what : {"all", "paper", "package"}, default "all"
        Which entries: both (the paper first), the method's paper, or the
        package at the installed version.

    Returns
    -------
    str
        BibTeX, one entry per ``@`` block, separated by a blank line (``print`` it, or
        write it to a ``.bib`` file). Both are ``@misc`` entries whose ``note`` carries
        what classic styles (plain, plainnat, apalike) would otherwise drop: the package's
        version.

    Raises
    ------
    OptionError
        An unknown *what*.

    Examples
    --------
    >>> import pearlstats as pearl
    >>> print(pearl.cite("paper"))  # doctest: +NORMALIZE_WHITESPACE
    @misc{li_pearl,
      title  = {{PEARL}: Performance-Enhanced Aggregated Representation Learning},
      author = {Li, Wenhui and Gong, Shijing and Zhang, Xinyu},
      note   = {Preprint. Wenhui Li and Shijing Gong contributed equally},
    }
    """
    if what not in _WHAT:
        raise OptionError(f"cite(what={what!r}); use one of {list(_WHAT)}")
    package = _PACKAGE_TEMPLATE.format(version=__version__)
    entries = {"paper": [PAPER_BIBTEX], "package": [package], "all": [PAPER_BIBTEX, package]}
    return "\n\n".join(entries[what])
