"""Warnings at the user's line: every warning pearlstats emits goes through :func:`warn`.

A warning names the file and line it is attributed to. Attributed to the package's
internals (``results/readonly.py:54``, ``fitting.py:483``) it tells a reader nothing and
escapes filters such as ``warnings.filterwarnings(..., module="my_analysis")``. :func:`warn`
attributes it to the first frame outside pearlstats: the user's ``pearl.fit(...)``,
``res.honest`` or ``res.summary()``, however deep the code that found the problem.

Python 3.12's ``warnings.warn(..., skip_file_prefixes=...)`` skips the package's frames, but
pearlstats supports 3.11, and the standard library's frames between two of the package's
(``functools.cached_property`` calling a property) must be skipped too; so the level is
counted here, the same way on every version.

Examples
--------
>>> import warnings
>>> from pearlstats.exceptions import PearlWarning
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     warn("something to know", PearlWarning)
>>> caught[0].filename.endswith("_warnings.py")  # the caller's file (here a doctest's)
False
"""

from __future__ import annotations

import inspect
import os
import warnings

__all__ = ["PACKAGE_DIR", "user_stacklevel", "warn"]

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep


def _inside(filename: str) -> bool:
    return os.path.abspath(filename).startswith(PACKAGE_DIR) if filename[:1] != "<" else False


def _standard_library(filename: str) -> bool:
    return filename.startswith(_STDLIB) and "site-packages" not in filename


def user_stacklevel() -> int:
    """``stacklevel`` that makes a warning raised by this function's caller name the user's line.

    Counts the caller's frame and those above it that belong to pearlstats, and any run of
    standard-library frames between them and the code that called them (``functools``'
    ``cached_property`` computing a property the user reads); the first other frame is the
    user's. A run of the standard library with nothing above it (a thread's bootstrap) is
    where the count stops, so the warning still names a real file.
    """
    frames = []
    here = inspect.currentframe()  # inspect.stack() would read every frame's source
    frame = here.f_back if here is not None else None
    while frame is not None:
        frames.append(frame.f_code.co_filename)
        frame = frame.f_back
    level = 0
    while level < len(frames):
        if _inside(frames[level]):
            level += 1
            continue
        above = level
        while above < len(frames) and _standard_library(frames[above]):
            above += 1
        if above in (level, len(frames)):
            break
        level = above
    return level + 1


def warn(message: str, category: type[Warning]) -> None:
    """``warnings.warn(message, category)`` attributed to the user's line (:func:`user_stacklevel`).

    Parameters
    ----------
    message : str
        What happened and what to do about it.
    category : type of Warning
        A class of :mod:`pearlstats.exceptions` (``PearlWarning`` and its subclasses).
    """
    # counted from this function's own frame, which is inside the package like its caller's
    warnings.warn(message, category, stacklevel=user_stacklevel())
