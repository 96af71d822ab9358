"""Progress bars and stage timings for the long computations, and the package's options.

Two channels, both silent unless asked:

- **Logging.** Every module logs to ``logging.getLogger(__name__)`` under the
  ``"pearlstats"`` logger, which has only a ``NullHandler``: stage timings (the
  cross-validation, the weights, the refits, the honest re-runs) at ``INFO``,
  solver details at ``DEBUG``. ``logging.basicConfig(level=logging.INFO)`` shows them.
- **Progress bars** (tqdm) on the honest re-runs, the nested SE, the bootstrap and
  subsampling behind ``weight_uncertainty``, and on ``fit`` when it will run long. In a
  notebook with ipywidgets the bar is a widget; elsewhere (scripts, a notebook without
  ipywidgets) it is tqdm's text bar on stderr, so no ``TqdmWarning: IProgress not found``.
  A bar appears once its stage has run for ``progress_delay`` seconds (default 1), so
  fast work shows none. ``progress=False`` on a call, or ``set_option("progress", False)``
  for the session, turns them off.

Examples
--------
>>> import pearlstats as pearl
>>> pearl.get_option("progress")
True
>>> pearl.set_option("progress", False)
>>> pearl.get_option("progress")
False
>>> pearl.set_option("progress", True)
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .exceptions import OptionError

__all__ = ["get_option", "set_option", "options", "progress_bar", "timed", "enabled",
           "check_progress", "fit_bar_delay", "bar_class"]

# Nothing is printed unless the application configures logging (the library convention).
logging.getLogger("pearlstats").addHandler(logging.NullHandler())

options: dict[str, Any] = {"progress": True, "progress_delay": 1.0}
_CHECKS = {
    "progress": (lambda v: isinstance(v, bool), "True or False"),
    "progress_delay": (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
                       and v >= 0, "a number of seconds >= 0"),
}


def get_option(name: str) -> Any:
    """The value of a package option (``"progress"``, ``"progress_delay"``)."""
    _check_name(name)
    return options[name]


def set_option(name: str, value: Any) -> None:
    """Set a package option for the session.

    Parameters
    ----------
    name : {"progress", "progress_delay"}
        ``"progress"``: show progress bars on long computations (default True);
        ``"progress_delay"``: seconds a stage must run before its bar appears (default 1).
    value
        The new value.
    """
    _check_name(name)
    check, wanted = _CHECKS[name]
    if not check(value):
        raise OptionError(f"set_option({name!r}, {value!r}): the value must be {wanted}")
    options[name] = value


def _check_name(name: str) -> None:
    if name not in options:
        raise OptionError(f"no option {name!r}; the options are {sorted(options)}")


def check_progress(progress: Any) -> bool | None:
    """A call's ``progress=`` argument, checked: True, False or None (the package option)."""
    if progress is not None and not isinstance(progress, bool):
        raise OptionError(f"progress={progress!r} must be True, False or None (the option)")
    return progress


def enabled(progress: bool | None) -> bool:
    """Whether to show a bar: the call's ``progress`` if given, else the package option."""
    progress = check_progress(progress)
    return bool(options["progress"]) if progress is None else progress


# Seconds of work per (row x candidate x fold fit), measured on a 2-core machine with one BLAS
# thread: least squares from fold moments, and the Newton families (binomial 20 000 rows, 15
# candidates, 5 folds: 3.1 s; least squares 0.26 s). A fit expected to take this many
# seconds shows its bar at once; a shorter one only if it runs past the delay anyway.
_SECONDS_PER_UNIT = {"moments": 1e-7, "newton": 2e-6}
LONG_FIT_SECONDS = 2.0


def fit_bar_delay(n: int, candidates: int, fold_fits: int, newton: bool) -> float | None:
    """The delay of ``fit``'s bar: 0 when the fit is expected to run long, else the option's.

    The rule: expected seconds = rows x candidates x fold fits x a per-unit cost
    (``1e-7`` s for least squares, ``2e-6`` s for the Newton families); at
    ``LONG_FIT_SECONDS`` (2 s) or more the bar is shown from the start.

    Examples
    --------
    >>> fit_bar_delay(20_000, 15, 5, newton=True), fit_bar_delay(442, 3, 5, newton=False)
    (0.0, None)
    """
    cost = _SECONDS_PER_UNIT["newton" if newton else "moments"]
    return 0.0 if n * candidates * fold_fits * cost >= LONG_FIT_SECONDS else None


def bar_class() -> Any:
    """tqdm's widget bar in a notebook with ipywidgets, else its text bar (on stderr).

    Every bar of the package is of this class (the deep learners' epochs and batches too):
    ``tqdm.auto`` warns "IProgress not found" when it is imported in a notebook without
    ipywidgets, even for a bar that is disabled.
    """
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    in_notebook = type(shell).__name__ == "ZMQInteractiveShell"
    if in_notebook and importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm
    else:  # tqdm.auto would warn "IProgress not found" in a notebook without ipywidgets
        from tqdm.std import tqdm
    return tqdm


class _NoBar:
    """What a bar offers, doing nothing (progress off)."""

    def update(self, n: int = 1) -> None:
        pass

    def set_description(self, text: str, refresh: bool = True) -> None:
        pass

    def close(self) -> None:
        pass


@contextmanager
def progress_bar(total: int, description: str, progress: bool | None = None,
                 delay: float | None = None) -> Iterator[Any]:
    """A tqdm bar of *total* steps, or one that shows nothing when progress is off.

    Parameters
    ----------
    total : int
    description : str
        Shown before the bar, e.g. ``"honest: outer folds"``.
    progress : bool, optional
        The call's choice; None follows ``get_option("progress")``.
    delay : float, optional
        Seconds before the bar appears; default ``get_option("progress_delay")``.

    Examples
    --------
    >>> with progress_bar(3, "demo", progress=False) as bar:
    ...     for _ in range(3):
    ...         bar.update()
    """
    if not enabled(progress):
        yield _NoBar()
        return
    delay = options["progress_delay"] if delay is None else delay
    bar = bar_class()(total=total, desc=description, delay=delay, leave=False,
                       file=sys.stderr, dynamic_ncols=True)
    try:
        yield bar
    finally:
        bar.close()


@contextmanager
def timed(logger: logging.Logger, stage: str, **details: Any) -> Iterator[None]:
    """Log *stage*'s wall time at INFO when it ends (``"cross-validation: 0.21 s (J=7, K=5)"``)."""
    start = time.perf_counter()
    yield
    if logger.isEnabledFor(logging.INFO):
        extra = ", ".join(f"{key}={value}" for key, value in details.items())
        logger.info("%s: %.3f s%s", stage, time.perf_counter() - start,
                    f" ({extra})" if extra else "")
