"""Run ``task(setting, seed)`` over settings x repetitions: validated, seeded by position, parallel.

Each run gets its own child of one ``numpy.random.SeedSequence``, chosen by its
(setting, repetition) position, so a run's numbers do not depend on which
worker ran it, in which order, or how many jobs there were. :func:`iter_runs`
hands back each run's records as the run finishes (what the command line
writes incrementally); :func:`run_grid` collects them into one tidy DataFrame
ordered by setting, then repetition.
"""

from __future__ import annotations

import importlib.util
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from ..exceptions import OptionError, TaskError

__all__ = ["RUNNER_FIELDS", "grid", "iter_runs", "run_grid"]

# Columns the runner adds to every record; neither a setting nor a task may use these names.
RUNNER_FIELDS = ("repetition", "seconds")


def grid(**axes: Any) -> list[dict]:
    """All combinations of the given axes, as a list of setting dicts.

    An axis is a sequence of values, or one value: a string (``kernel="rbf"``),
    a number or any other non-iterable is a single value, not a sequence of
    characters or items.

    Examples
    --------
    >>> grid(n=[100, 200], sigma=[0.5])
    [{'n': 100, 'sigma': 0.5}, {'n': 200, 'sigma': 0.5}]
    >>> grid(kernel="rbf", n=[1, 2])
    [{'kernel': 'rbf', 'n': 1}, {'kernel': 'rbf', 'n': 2}]
    """
    names = list(axes)
    values = [_axis_values(name, axes[name]) for name in names]
    return [dict(zip(names, combination)) for combination in itertools.product(*values)]


def _axis_values(name: str, axis: Any) -> list:
    if (
        isinstance(axis, (str, bytes))
        or not isinstance(axis, Iterable)
        or isinstance(axis, Mapping)
    ):
        return [axis]
    values = list(axis)
    if not values:
        raise OptionError(f"grid axis {name}= is empty; give at least one value")
    return values


def _check_settings(settings: Iterable[Mapping]) -> list[dict]:
    """The settings as a list of dicts, or an OptionError saying what is wrong with them.

    Refused: one dict instead of a list of them, an item that is not a dict, no
    settings, and setting names the runner uses for its own columns
    (:data:`RUNNER_FIELDS`), which would otherwise be overwritten silently.

    Examples
    --------
    >>> _check_settings([{"n": 1}])
    [{'n': 1}]
    >>> _check_settings([{"repetition": 7}])
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.OptionError: setting name(s) ['repetition'] are reserved: ...
    """
    example = "such as [{'n': 100}, {'n': 200}] (see pearlstats.experiments.grid)"
    if isinstance(settings, Mapping):
        raise OptionError(
            f"settings is one dict ({dict(settings)!r}); give a list of setting dicts, "
            f"e.g. [settings], {example}"
        )
    if isinstance(settings, (str, bytes)) or not isinstance(settings, Iterable):
        raise OptionError(
            f"settings={settings!r} is not a list of setting dicts; give one {example}"
        )
    settings = list(settings)
    if not settings:
        raise OptionError(f"settings is empty; give at least one setting dict, {example}")
    for i, setting in enumerate(settings):
        if not isinstance(setting, Mapping):
            raise OptionError(
                f"settings[{i}] is {setting!r} ({type(setting).__name__}); each setting must be "
                f"a dict of parameter values, {example}"
            )
    reserved = sorted({str(name) for setting in settings for name in setting} & set(RUNNER_FIELDS))
    if reserved:
        raise OptionError(
            f"setting name(s) {reserved} are reserved: the runner adds the columns "
            f"{list(RUNNER_FIELDS)} to every row itself and would overwrite them; rename them "
            f"in the settings (e.g. {reserved[0]!r} -> {'setting_' + reserved[0]!r})"
        )
    return [dict(setting) for setting in settings]


def _check_arguments(task: Any, repetitions: Any, seed: Any, n_jobs: Any, progress: Any) -> None:
    """Every scalar argument, checked before any run (pearlstats errors, not numpy's)."""
    if not callable(task):
        raise OptionError(
            f"task={task!r} is not callable; give a function task(setting, seed) returning a "
            "dict, a list of dicts or a DataFrame"
        )
    if not _is_int(repetitions) or repetitions < 1:
        raise OptionError(f"repetitions={repetitions!r}; use a positive integer")
    if not _is_int(seed) or seed < 0:
        raise OptionError(f"seed={seed!r}; use an integer >= 0 (the root of the seed tree)")
    if n_jobs is not None and (not _is_int(n_jobs) or n_jobs == 0):
        raise OptionError(
            f"n_jobs={n_jobs!r}; use None (one process), a positive number of workers, or -1 for "
            "all cores (negative -k: all but k - 1), not 0"
        )
    if not isinstance(progress, (bool, np.bool_)):
        raise OptionError(f"progress={progress!r}; use True or False")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_skip(skip: Iterable, n_settings: int, repetitions: int) -> set[tuple[int, int]]:
    done = {tuple(position) for position in skip}
    outside = sorted(
        position
        for position in done
        if len(position) != 2
        or not all(_is_int(k) for k in position)
        or not (0 <= position[0] < n_settings and 0 <= position[1] < repetitions)
    )
    if outside:
        raise OptionError(
            f"skip has position(s) {outside[:5]} outside the grid; each must be "
            f"(setting index < {n_settings}, repetition < {repetitions})"
        )
    return done


def _records(output: Any, where: str) -> list[dict]:
    if isinstance(output, pd.DataFrame):
        return output.to_dict("records")
    if isinstance(output, Mapping):
        return [dict(output)]
    if isinstance(output, Sequence) and all(isinstance(item, Mapping) for item in output):
        return [dict(item) for item in output]
    raise OptionError(
        f"a task must return a dict, a list of dicts or a DataFrame, got "
        f"{type(output).__name__} ({where})"
    )


def _run_one(
    task: Callable, setting: dict, seed: np.random.SeedSequence, position: tuple[int, int]
) -> tuple[tuple[int, int], list[dict]]:
    index, repetition = position
    where = f"setting {setting!r} (settings[{index}]), repetition {repetition}"
    start = time.perf_counter()
    try:
        output = task(dict(setting), seed)
    except Exception as error:  # named and chained; KeyboardInterrupt passes through untouched
        raise TaskError(
            f"the task failed at {where}: {type(error).__name__}: {error}",
            setting=dict(setting),
            repetition=repetition,
        ) from error
    elapsed = time.perf_counter() - start
    records = _records(output, where)
    for record in records:
        _check_no_clash(record, setting, where)
    return position, [
        {**setting, "repetition": repetition, **record, "seconds": elapsed} for record in records
    ]


def _check_no_clash(record: Mapping, setting: Mapping, where: str) -> None:
    """A task's field may not overwrite a setting or a runner column (hiding its run)."""
    reserved = sorted(str(key) for key in record if key in RUNNER_FIELDS)
    if reserved:
        raise OptionError(
            f"the task returned field(s) {reserved}, which run_grid adds itself "
            f"({', '.join(RUNNER_FIELDS)}); rename them in the task ({where})"
        )
    clashes = [key for key in record if key in setting and not _same(record[key], setting[key])]
    if clashes:
        shown = ", ".join(
            f"{key}: setting {setting[key]!r}, task {record[key]!r}" for key in clashes
        )
        raise OptionError(
            f"the task returned field(s) {clashes} with values that differ from the setting's "
            f"({shown}); a task must not overwrite its setting — rename those fields in the task "
            f"({where})"
        )


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and other values without a single truth value
        return a is b


def iter_runs(
    task: Callable,
    settings: Iterable[Mapping],
    repetitions: int,
    *,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool = False,
    skip: Iterable[tuple[int, int]] = (),
) -> Iterator[tuple[tuple[int, int], list[dict]]]:
    """Run the grid and yield each run's records as soon as the run finishes.

    Arguments as in :func:`run_grid`, all checked before the first run. Yields
    ``((setting_index, repetition), records)`` in order of completion, which
    with parallel workers is not the grid's order; each record already holds
    the setting's values, ``repetition`` and ``seconds``.

    Parameters
    ----------
    skip : iterable of (int, int)
        Positions ``(setting_index, repetition)`` already done (e.g. read back
        from a partial file); they are not run. Every other run gets the same
        seed as in a full run.

    Examples
    --------
    >>> def task(setting, seed):
    ...     return {"x": setting["a"]}
    >>> [position for position, records in iter_runs(task, [{"a": 1}], 3, skip=[(0, 1)])]
    [(0, 0), (0, 2)]
    """
    settings = _check_settings(settings)
    _check_arguments(task, repetitions, seed, n_jobs, progress)
    done = _check_skip(skip, len(settings), repetitions)
    children = np.random.SeedSequence(int(seed)).spawn(len(settings) * repetitions)
    positions = [
        (i, r) for i in range(len(settings)) for r in range(repetitions) if (i, r) not in done
    ]
    jobs = (
        delayed(_run_one)(task, settings[i], children[i * repetitions + r], (i, r))
        for i, r in positions
    )
    return _finished_runs(Parallel(n_jobs=n_jobs, return_as="generator_unordered"), jobs,
                          len(positions), progress)


def _finished_runs(
    runner: Parallel, jobs: Iterable, total: int, progress: bool
) -> Iterator[tuple[tuple[int, int], list[dict]]]:
    """The runs as they finish; closing this generator stops the workers (e.g. after Ctrl-C)."""
    results = runner(jobs)
    try:
        yield from (_progress_bar(results, total) if progress else results)
    finally:
        results.close()


def _progress_bar(results: Iterable, total: int) -> Iterable:
    """*results* behind a tqdm bar where one can be drawn, else as they are.

    Jupyter's widget bar needs ipywidgets; without it tqdm's notebook bar warns
    "IProgress not found" and its text fallback prints every redraw into the cell's
    output (about 200 lines in an executed vignette). So tqdm.auto is asked only
    with ipywidgets, and a text bar is drawn only on a terminal (``disable=None``):
    an executed notebook without widgets, or a log file, gets no bar.
    """
    if importlib.util.find_spec("ipywidgets") is not None:
        # tqdm.auto picks the widget bar in Jupyter, the text bar elsewhere (importing it
        # without ipywidgets in a kernel is what warns "IProgress not found")
        from tqdm.auto import tqdm as bar
    else:
        from tqdm import tqdm as bar
    return bar(results, total=total, desc="runs", disable=None)


def run_grid(
    task: Callable,
    settings: Iterable[Mapping],
    repetitions: int,
    *,
    seed: int = 0,
    n_jobs: int | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Run ``task`` over settings x repetitions and collect a tidy table.

    Parameters
    ----------
    task : callable
        ``task(setting: dict, seed: numpy.random.SeedSequence)`` returning a
        dict, a list of dicts or a DataFrame of results for that run. It must
        draw all its randomness from *seed*. Defined at module level so that
        process workers can import it.
    settings : sequence of dict
        Parameter settings (see :func:`grid`). The names ``repetition`` and
        ``seconds`` are reserved for the runner's own columns.
    repetitions : int
        Runs per setting (>= 1).
    seed : int
        Root of the seed tree (>= 0).
    n_jobs : int, optional
        joblib workers (``-1`` for all cores, not 0); honours ``joblib.parallel_config``.
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    DataFrame
        Setting columns, ``repetition``, the task's fields and ``seconds``,
        ordered by setting then repetition whatever the execution order.

    Raises
    ------
    OptionError
        A bad argument (named, with what would be right); a setting named
        ``repetition`` or ``seconds``; a task that returns a field named like a
        setting but with another value, or a ``repetition`` or ``seconds`` field.
    TaskError
        The task raised; the message names the setting's values and the
        repetition, and the task's exception is chained.

    Examples
    --------
    >>> def task(setting, seed):
    ...     rng = np.random.default_rng(seed)
    ...     return {"mean": rng.normal(setting["mu"], 1, 50).mean()}
    >>> table = run_grid(task, [{"mu": 0.0}, {"mu": 5.0}], repetitions=3, seed=1, progress=False)
    >>> table.shape
    (6, 4)
    >>> bool(table.groupby("mu")["mean"].mean().diff().iloc[-1] > 3)
    True
    """
    runs = iter_runs(task, settings, repetitions, seed=seed, n_jobs=n_jobs, progress=progress)
    collected = dict(runs)
    return pd.DataFrame([row for position in sorted(collected) for row in collected[position]])
