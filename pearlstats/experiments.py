"""Replication grids: settings x repetitions, reproducible in any order, in parallel.

:func:`run_grid` runs ``task(setting, seed)`` for every setting and repetition.
Each run gets its own child of one ``numpy.random.SeedSequence``, chosen by
its (setting, repetition) position, so a run's numbers do not depend on which
worker ran it, in which order, or how many jobs there were. Results come back
as one tidy DataFrame (one row per run and returned record). Work is spread
with joblib, so ``joblib.parallel_config(backend="dask")`` sends it to a
dask.distributed cluster.

The paper's full simulation grid runs from the command line::

    python -m pearlstats.experiments simulation --repetitions 100 --n-jobs 2 \
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
import sys
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from .exceptions import OptionError

__all__ = ["run_grid", "grid", "simulation_task", "SimulationSweep", "paper_representations", "main"]


def grid(**axes: Sequence) -> list[dict]:
    """All combinations of the given axes, as a list of setting dicts.

    Examples
    --------
    >>> grid(n=[100, 200], sigma=[0.5])
    [{'n': 100, 'sigma': 0.5}, {'n': 200, 'sigma': 0.5}]
    """
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(axes[name] for name in names))]


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


def _run_one(task, setting, seed, position):
    start = time.perf_counter()
    records = _records(task(dict(setting), seed))
    elapsed = time.perf_counter() - start
    return position, [{**setting, "repetition": position[1], **record, "seconds": elapsed} for record in records]


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
    """
    if not isinstance(repetitions, (int, np.integer)) or repetitions < 1:
        raise OptionError(f"repetitions={repetitions!r}; use a positive integer")
    settings = [dict(setting) for setting in settings]
    if not settings:
        raise OptionError("settings is empty; give at least one setting dict (see pearlstats.experiments.grid)")
    children = np.random.SeedSequence(seed).spawn(len(settings) * repetitions)
    positions = [(i, r) for i in range(len(settings)) for r in range(repetitions)]
    jobs = (
        delayed(_run_one)(task, settings[i], children[i * repetitions + r], (i, r)) for i, r in positions
    )
    runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    results = runner(jobs)
    if progress:
        from tqdm.auto import tqdm

        results = tqdm(results, total=len(positions), desc="runs")
    collected = dict(results)
    rows = [row for position in positions for row in collected[position]]
    return pd.DataFrame(rows)


def paper_representations(seed: int | None = None):
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
    learners.update({f"kpca_{kernel}": KernelPCA(kernel=kernel, n_components=2)
                     for kernel in ("rbf", "poly", "sigmoid", "cosine")})
    return Representations(learners, columns=["x1", "x2"], seed=seed)


def simulation_task(setting: dict, seed: np.random.SeedSequence) -> list[dict]:
    """One run of the paper's simulation: learn 5 blocks, fit PEARL, evaluate on test rows.

    Parameters
    ----------
    setting : dict
        ``n`` (labeled rows), ``sigma`` (noise sd), optional ``N`` (unlabeled
        rows, default 2000), ``n_test`` (default 1000), ``cv`` (default 5).
    seed : SeedSequence

    Returns
    -------
    list of dict
        One record per method (PEARL and the paper's baselines) with test MSE.
    """
    sweep = SimulationSweep(n=[setting["n"]], sigma=[setting["sigma"]])
    return [{key: value for key, value in record.items() if key not in ("n", "sigma")}
            for record in sweep({key: value for key, value in setting.items() if key not in ("n", "sigma")}, seed)]


class SimulationSweep:
    """One repetition of the paper's simulation over every labeled size and noise level.

    The representations are learned once per repetition and every (n, sigma)
    cell reuses them: the cells share the unlabeled rows, the inputs of the
    labeled and test rows (the first ``n`` of the largest ``n``) and the
    standardised noise, scaled by each ``sigma`` (common random numbers, see
    :mod:`pearlstats.datasets.simulation`). Repetitions are independent. This
    is what makes the paper's 16 settings x 100 repetitions cost 100 fits of
    the five learners rather than 1 600, and it pairs the comparisons across
    cells. Each cell gets its own fold seed.

    Parameters
    ----------
    n : sequence of int
        Labeled sizes.
    sigma : sequence of float
        Noise standard deviations.

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
    ([(60, 0.5), (120, 0.5)], 12)
    """

    def __init__(self, n: Sequence[int], sigma: Sequence[float]):
        self.n = [int(value) for value in n]
        self.sigma = [float(value) for value in sigma]
        if not self.n or not self.sigma:
            raise OptionError("SimulationSweep needs at least one labeled size n and one noise level sigma")

    def __repr__(self):
        return f"SimulationSweep(n={self.n}, sigma={self.sigma})"

    def __call__(self, setting: Mapping, seed: np.random.SeedSequence) -> list[dict]:
        from .datasets import simulate_paper
        from .fitting import fit

        data_seed, learner_seed, folds_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
        cell_seeds = np.random.SeedSequence(folds_seed).generate_state(len(self.n) * len(self.sigma))
        sizes = {"N": setting.get("N", 2000), "n_test": setting.get("n_test", 1000)}
        # Inputs and standardised noise do not depend on sigma; draw once to learn the blocks.
        inputs = simulate_paper(max(self.n), sigma=1.0, seed=data_seed, **sizes)
        reps = paper_representations(learner_seed).fit(inputs.unlabeled)
        labeled_blocks, test_blocks = reps.transform(inputs.labeled), reps.transform(inputs.test)
        formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
        records, cell = [], 0
        for sigma in self.sigma:
            data = simulate_paper(max(self.n), sigma=sigma, seed=data_seed, **sizes)
            for n in self.n:
                blocks = {name: block[:n] for name, block in labeled_blocks.items()}
                res = fit(formula, data.labeled.iloc[:n], blocks=blocks, cv=setting.get("cv", 5),
                          seed=int(cell_seeds[cell]))
                cell += 1
                table = res.evaluate(data.test, blocks=test_blocks)
                records += [{"n": n, "sigma": sigma, "method": method, **row}
                            for method, row in table.to_dict("index").items()]
        return records


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """Command line: run the paper's grids and write the tidy table to CSV."""
    parser = argparse.ArgumentParser(prog="python -m pearlstats.experiments", description=main.__doc__)
    parser.add_argument("experiment", choices=["simulation"], help="the paper's simulation study (Section 4.1)")
    parser.add_argument("--n", type=int, nargs="+", default=[100, 200, 400, 800], help="labeled sizes")
    parser.add_argument("--sigma", type=float, nargs="+", default=[0.1, 0.5, 0.9, 1.5], help="noise levels")
    parser.add_argument("--N", type=int, default=2000, help="unlabeled rows")
    parser.add_argument("--n-test", type=int, default=1000, help="test rows per run")
    parser.add_argument("--repetitions", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--n-jobs", type=int, default=None)
    parser.add_argument("--out", default=None, help="CSV path for the tidy results")
    args = parser.parse_args(argv)
    sweep = SimulationSweep(n=args.n, sigma=args.sigma)
    start = time.perf_counter()
    table = run_grid(sweep, [{"N": args.N, "n_test": args.n_test}], args.repetitions, seed=args.seed, n_jobs=args.n_jobs)
    elapsed = time.perf_counter() - start
    if args.out:
        table.to_csv(args.out, index=False)
    summary = table.pivot_table(index=["sigma", "n"], columns="method", values="MSE", aggfunc="mean")
    print(summary.round(4).to_string())
    cells = len(args.n) * len(args.sigma)
    print(f"\n{cells} settings x {args.repetitions} repetitions in {elapsed:.0f} s", file=sys.stderr)
    return table


if __name__ == "__main__":
    main()
