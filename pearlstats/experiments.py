"""Replication grids: settings x repetitions, reproducible in any order, in parallel.

:func:`run_grid` runs ``task(setting, seed)`` for every setting and repetition.
Each run gets its own child of one ``numpy.random.SeedSequence``, chosen by
its (setting, repetition) position, so a run's numbers do not depend on which
worker ran it, in which order, or how many jobs there were. Results come back
as one tidy DataFrame (one row per run and returned record). Work is spread
with joblib, so ``joblib.parallel_config(backend="dask")`` sends it to a
dask.distributed cluster.

The paper's full simulation grid (16 settings x 100 repetitions) runs from
the command line; it is long, so it needs ``--full`` (or explicit ``--n``,
``--sigma`` or ``--repetitions``)::

    python -m pearlstats.experiments simulation --full --n-jobs 2 \
        --out vignettes/results/simulation.csv

Examples
--------
>>> import numpy as np
>>> def task(setting, seed):
...     rng = np.random.default_rng(seed)
...     return {"mean": rng.normal(setting["mu"], 1, 50).mean()}
>>> table = run_grid(task, [{"mu": 0.0}, {"mu": 5.0}], repetitions=3, seed=1, progress=False)
>>> table.shape
(6, 4)
>>> bool(table.groupby("mu")["mean"].mean().diff().iloc[-1] > 3)
True
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from .exceptions import OptionError

if TYPE_CHECKING:
    from .representations import Representations

__all__ = [
    "SimulationSweep",
    "cell_seed",
    "grid",
    "main",
    "paper_representations",
    "run_grid",
]


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


def _axis_values(name: str, axis) -> list:
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


def _records(output) -> list[dict]:
    if isinstance(output, pd.DataFrame):
        return output.to_dict("records")
    if isinstance(output, Mapping):
        return [dict(output)]
    if isinstance(output, Sequence) and all(isinstance(item, Mapping) for item in output):
        return [dict(item) for item in output]
    raise OptionError(
        f"a task must return a dict, a list of dicts or a DataFrame, got {type(output).__name__}"
    )


# Columns the runner adds to every record; a task may not return them.
RUNNER_FIELDS = ("repetition", "seconds")


def _run_one(task, setting, seed, position):
    start = time.perf_counter()
    records = _records(task(dict(setting), seed))
    elapsed = time.perf_counter() - start
    for record in records:
        _check_no_clash(record, setting)
    return position, [
        {**setting, "repetition": position[1], **record, "seconds": elapsed} for record in records
    ]


def _check_no_clash(record: Mapping, setting: Mapping) -> None:
    """A task's field may not overwrite a setting or a runner column (hiding its run)."""
    reserved = sorted(str(key) for key in record if key in RUNNER_FIELDS)
    if reserved:
        raise OptionError(
            f"the task returned field(s) {reserved}, which run_grid adds itself "
            f"({', '.join(RUNNER_FIELDS)}); rename them in the task"
        )
    clashes = [key for key in record if key in setting and not _same(record[key], setting[key])]
    if clashes:
        shown = ", ".join(
            f"{key}: setting {setting[key]!r}, task {record[key]!r}" for key in clashes
        )
        raise OptionError(
            f"the task returned field(s) {clashes} with values that differ from the setting's "
            f"({shown}); a task must not overwrite its setting — rename those fields in the task"
        )


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and other values without a single truth value
        return a is b


def run_grid(
    task: Callable,
    settings: Sequence[Mapping],
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
        Parameter settings (see :func:`grid`).
    repetitions : int
        Runs per setting.
    seed : int
        Root of the seed tree.
    n_jobs : int, optional
        joblib workers (``-1`` for all cores); honours ``joblib.parallel_config``.
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
        Bad ``repetitions`` or ``settings``; a task that returns a field named
        like a setting but with another value, or a ``repetition`` or
        ``seconds`` field (the runner's own columns).
    """
    if (
        isinstance(repetitions, bool)
        or not isinstance(repetitions, (int, np.integer))
        or repetitions < 1
    ):
        raise OptionError(f"repetitions={repetitions!r}; use a positive integer")
    settings = [dict(setting) for setting in settings]
    if not settings:
        raise OptionError(
            "settings is empty; give at least one setting dict (see pearlstats.experiments.grid)"
        )
    children = np.random.SeedSequence(seed).spawn(len(settings) * repetitions)
    positions = [(i, r) for i in range(len(settings)) for r in range(repetitions)]
    jobs = (
        delayed(_run_one)(task, settings[i], children[i * repetitions + r], (i, r))
        for i, r in positions
    )
    runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    results = runner(jobs)
    if progress:
        from tqdm.auto import tqdm

        results = tqdm(results, total=len(positions), desc="runs")
    collected = dict(results)
    rows = [row for position in positions for row in collected[position]]
    return pd.DataFrame(rows)


def paper_representations(seed: int | None = None) -> Representations:
    """The simulation's five learners: PCA and kernel PCA with the paper's four kernels.

    Two components each, scikit-learn's default kernel parameters, reading
    columns ``x1`` and ``x2``; an unfitted :class:`~pearlstats.Representations`.

    Examples
    --------
    >>> paper_representations(seed=0).names
    ['pca', 'kpca_rbf', 'kpca_poly', 'kpca_sigmoid', 'kpca_cosine']
    """
    from .representations import PCA, KernelPCA, Representations

    learners = {"pca": PCA(n_components=2)}
    learners.update(
        {
            f"kpca_{kernel}": KernelPCA(kernel=kernel, n_components=2)
            for kernel in ("rbf", "poly", "sigmoid", "cosine")
        }
    )
    return Representations(learners, columns=["x1", "x2"], seed=seed)


class SimulationSweep:
    """One repetition of the paper's simulation over every labeled size and noise level.

    The representations are learned once per repetition and every (n, sigma)
    cell reuses them: the cells share the unlabeled rows, the inputs of the
    labeled and test rows (the first ``n`` of the largest ``n``) and the
    standardised noise, scaled by each ``sigma`` (common random numbers, see
    :mod:`pearlstats.datasets.simulation`). Repetitions are independent. This
    is what makes the paper's 16 settings x 100 repetitions cost 100 fits of
    the five learners rather than 1 600, and it pairs the comparisons across
    cells. Each cell gets its own fold seed, derived from the cell's ``(n,
    sigma)`` values (see :func:`cell_seed`), not from its place in the lists, so
    a cell gives the same numbers however the sizes and noise levels are ordered.

    Parameters
    ----------
    n : sequence of int
        Labeled sizes.
    sigma : sequence of float
        Noise standard deviations.
    fit_options : mapping, optional
        Further options of every :func:`pearlstats.fit` call, e.g.
        ``{"cv_repeats": 5}`` or ``{"weight_shrinkage": "cv"}`` (not ``cv``
        or ``seed``, which come from the setting and the cell).

    Notes
    -----
    Call as ``task(setting, seed)`` (the :func:`run_grid` protocol) with
    ``setting`` holding optional ``N`` (unlabeled rows, default 2000),
    ``n_test`` (default 1000) and ``cv`` (default 5). Returns one record per
    (n, sigma, method) with the test ``MSE`` and ``MAE``.

    Examples
    --------
    >>> sweep = SimulationSweep(n=[60, 120], sigma=[0.5])
    >>> records = sweep({"N": 300, "n_test": 200}, np.random.SeedSequence(0))
    >>> sorted({(r["n"], r["sigma"]) for r in records}), len(records)
    ([(60, 0.5), (120, 0.5)], 14)
    """

    def __init__(self, n: Sequence[int], sigma: Sequence[float],
                 fit_options: Mapping | None = None):
        n, sigma = list(n), list(sigma)
        self.fit_options = dict(fit_options or {})
        reserved = sorted({"cv", "seed", "blocks"} & set(self.fit_options))
        if reserved:
            raise OptionError(
                f"SimulationSweep fit_options {reserved} are set by the sweep (cv through the "
                "setting, seed per cell, blocks learned per repetition); remove them"
            )
        if not n or not sigma:
            raise OptionError(
                "SimulationSweep needs at least one labeled size n and one noise level sigma"
            )
        bad_n = [
            v for v in n if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1
        ]
        if bad_n:
            raise OptionError(f"SimulationSweep n={bad_n} must be integers >= 1 (labeled sizes)")
        bad_sigma = [
            v
            for v in sigma
            if isinstance(v, bool)
            or not isinstance(v, (int, float, np.number))
            or not (math.isfinite(v) and v >= 0)
        ]
        if bad_sigma:
            raise OptionError(
                f"SimulationSweep sigma={bad_sigma} must be finite numbers >= 0 (noise sds)"
            )
        self.n = [int(value) for value in n]
        self.sigma = [float(value) for value in sigma]

    def __repr__(self):
        options = f", fit_options={self.fit_options}" if self.fit_options else ""
        return f"SimulationSweep(n={self.n}, sigma={self.sigma}{options})"

    def __call__(self, setting: Mapping, seed: np.random.SeedSequence) -> list[dict]:
        from .datasets import simulate_paper
        from .fitting import fit

        data_seed, learner_seed, folds_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
        sizes = {"N": setting.get("N", 2000), "n_test": setting.get("n_test", 1000)}
        # Inputs and standardised noise do not depend on sigma; draw once to learn the blocks.
        inputs = simulate_paper(max(self.n), sigma=1.0, seed=data_seed, **sizes)
        reps = paper_representations(learner_seed).fit(inputs.unlabeled)
        labeled_blocks, test_blocks = reps.transform(inputs.labeled), reps.transform(inputs.test)
        formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
        records = []
        for sigma in self.sigma:
            data = simulate_paper(max(self.n), sigma=sigma, seed=data_seed, **sizes)
            for n in self.n:
                blocks = {name: block[:n] for name, block in labeled_blocks.items()}
                res = fit(
                    formula,
                    data.labeled.iloc[:n],
                    blocks=blocks,
                    cv=setting.get("cv", 5),
                    seed=cell_seed(folds_seed, n, sigma),
                    **self.fit_options,
                )
                table = res.evaluate(data.test, blocks=test_blocks)
                records += [
                    {"n": n, "sigma": sigma, "method": method, **row}
                    for method, row in table.to_dict("index").items()
                ]
        return records


def cell_seed(folds_seed: int, n: int, sigma: float) -> int:
    """The fold seed of the simulation cell ``(n, sigma)``: a function of its values, not positions.

    ``SeedSequence(folds_seed, spawn_key=(n, bits of sigma as float64))``, so a
    cell's folds do not change when sizes or noise levels are listed in another order.

    Examples
    --------
    >>> cell_seed(5, 100, 0.5) == cell_seed(5, 100, 0.5) != cell_seed(5, 100, 0.9)
    True
    """
    sigma_bits = int(np.float64(sigma).view(np.uint64))
    return int(
        np.random.SeedSequence(folds_seed, spawn_key=(int(n), sigma_bits)).generate_state(1)[0]
    )


PAPER_GRID = {"n": [100, 200, 400, 800], "sigma": [0.1, 0.5, 0.9, 1.5], "repetitions": 100}


def _bounded_int(minimum: int, maximum: int | None = None, *, zero: bool = True):
    """An argparse type: an integer in [minimum, maximum] (``zero=False`` also refuses 0)."""

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


def _noise_level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} is not a finite noise standard deviation >= 0")
    return value


class _HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each default, except ``None`` ones, whose help says what they mean."""

    def _get_help_string(self, action):
        return action.help if action.default is None else super()._get_help_string(action)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.experiments",
        description="Run the paper's grids and write the tidy table to CSV.",
        formatter_class=_HelpWithDefaults,
    )
    parser.add_argument(
        "experiment", choices=["simulation"], help="the paper's simulation study (Section 4.1)"
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="run the paper's whole grid (--n, --sigma, --repetitions default to it); "
        "needed when none of them is given",
    )
    parser.add_argument(
        "--n",
        type=_bounded_int(10),
        nargs="+",
        default=None,
        help=f"labeled sizes, each >= 10 (default: the paper's {PAPER_GRID['n']})",
    )
    parser.add_argument(
        "--sigma",
        type=_noise_level,
        nargs="+",
        default=None,
        help=f"noise standard deviations (default: the paper's {PAPER_GRID['sigma']})",
    )
    parser.add_argument("--N", type=_bounded_int(10), default=2000, help="unlabeled rows")
    parser.add_argument("--n-test", type=_bounded_int(1), default=1000, help="test rows per run")
    parser.add_argument(
        "--repetitions",
        type=_bounded_int(1),
        default=None,
        help=f"repetitions (default: the paper's {PAPER_GRID['repetitions']})",
    )
    parser.add_argument("--seed", type=_bounded_int(0, 2**32 - 1), default=2025, help="root seed")
    parser.add_argument(
        "--n-jobs",
        type=_bounded_int(-(2**31), zero=False),
        default=None,
        help="joblib workers, not 0 (-1: all cores; default: one process)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="CSV path for the tidy results, checked to be writable before running "
        "(default: not written)",
    )
    return parser


def _check_writable(parser: argparse.ArgumentParser, out: str) -> None:
    """Fail before hours of runs, not after: the CSV's folder must exist and be writable."""
    path = os.path.abspath(out)
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        parser.error(
            f"--out {out!r} is a directory; give a file path such as "
            f"{os.path.join(out, 'results.csv')!r}"
        )
    if not os.path.isdir(folder):
        parser.error(f"--out {out!r}: the folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        parser.error(f"--out {out!r} is not writable; choose another path")


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """Command line: run the paper's grids and write the tidy table to CSV.

    Every argument (including that ``--out`` is writable) is checked before
    anything runs; bad values are argparse errors (exit status 2), not tracebacks.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if not args.full and args.n is None and args.sigma is None and args.repetitions is None:
        cells = len(PAPER_GRID["n"]) * len(PAPER_GRID["sigma"])
        parser.error(
            f"this would run the paper's full grid: {cells} settings x {PAPER_GRID['repetitions']} "
            f"repetitions ({PAPER_GRID['repetitions']} fits of 5 learners on N={args.N} rows and "
            f"{cells * PAPER_GRID['repetitions']} PEARL fits); pass --full to run it, or choose "
            "--n / --sigma / --repetitions"
        )
    n = args.n or PAPER_GRID["n"]
    sigma = args.sigma or PAPER_GRID["sigma"]
    repetitions = args.repetitions or PAPER_GRID["repetitions"]
    if args.out:
        _check_writable(parser, args.out)
    sweep = SimulationSweep(n=n, sigma=sigma)
    start = time.perf_counter()
    table = run_grid(
        sweep,
        [{"N": args.N, "n_test": args.n_test}],
        repetitions,
        seed=args.seed,
        n_jobs=args.n_jobs,
    )
    elapsed = time.perf_counter() - start
    if args.out:
        table.to_csv(args.out, index=False)
    summary = table.pivot_table(
        index=["sigma", "n"], columns="method", values="MSE", aggfunc="mean"
    )
    print(summary.round(4).to_string())
    print(
        f"\n{len(n) * len(sigma)} settings x {repetitions} repetitions in {elapsed:.0f} s",
        file=sys.stderr,
    )
    return table


if __name__ == "__main__":
    main()
