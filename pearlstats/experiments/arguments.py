"""Checks the experiments' commands share, so that a bad argument is an argparse error.

An argparse error (a usage line, exit status 2) comes before any computation; these
checks make the commands refuse what would otherwise fail minutes later with a traceback.

Examples
--------
>>> import argparse
>>> bounded_int(1)("3")
3
>>> bounded_int(1)("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: 0 is out of range; use an integer >= 1
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

__all__ = ["HelpWithDefaults", "bounded_int", "check_output"]


class HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each default, except ``None`` ones, whose help says what they mean."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def bounded_int(minimum: int, maximum: int | None = None, *,
                zero: bool = True) -> Callable[[str], int]:
    """An argparse type: an integer in [minimum, maximum] (``zero=False`` also refuses 0).

    Parameters
    ----------
    minimum : int
        The smallest value accepted.
    maximum : int, optional
        The largest value accepted (default: no upper bound).
    zero : bool, default True
        Whether 0 is accepted inside the range (``--n-jobs``: any integer but 0).

    Returns
    -------
    callable
        ``str -> int``, raising :class:`argparse.ArgumentTypeError` with the range.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if (
            value < minimum
            or (maximum is not None and value > maximum)
            or (value == 0 and not zero)
        ):
            upper = f" and <= {maximum}" if maximum is not None else ""
            raise argparse.ArgumentTypeError(
                f"{value} is out of range; use an integer >= {minimum}{upper}"
                + ("" if zero else ", not 0")
            )
        return value

    return parse


def check_output(parser: argparse.ArgumentParser, option: str, path: str) -> None:
    """``parser.error`` unless *path* names a file that can be written in an existing folder.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The command's parser (its error exits with status 2).
    option : str
        The option that gave *path*, for the message (``"--out"``).
    path : str
        The output file; it may exist (it is then replaced, or appended to).
    """
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        parser.error(f"{option} {path} is a folder; give the path of a file in it")
    if not os.path.isdir(folder):
        parser.error(f"{option} {path}: the folder {folder} does not exist; create it first, "
                     "or give a path in an existing folder")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        parser.error(f"{option} {path} cannot be written; give a path in a folder you can write")
