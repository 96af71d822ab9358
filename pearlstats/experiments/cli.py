"""``python -m pearlstats.experiments``: run the paper's grids, keeping every finished run.

The paper's full simulation grid (16 settings x 100 repetitions) is long, so it
needs ``--full`` (or explicit ``--n``, ``--sigma`` or ``--repetitions``)::

    python -m pearlstats.experiments simulation --full --n-jobs 2 \\
        --out vignettes/results/simulation.csv

With ``--out``, each run's rows go to ``OUT.partial`` as the run finishes; the
sorted table is renamed onto ``OUT`` at the end. Ctrl-C (or a crash) keeps the
finished runs there; the same command with ``--resume`` runs only the others,
and its CSV equals an uninterrupted run's (except the ``seconds`` timings).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time
from collections.abc import Sequence

import pandas as pd

from ..exceptions import OptionError
from .arguments import HelpWithDefaults, bounded_int
from .partial import PartialResults
from .runner import iter_runs
from .simulation import PAPER_GRID, SimulationSweep

__all__ = ["main"]


def _noise_level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"{text} is not a finite noise standard deviation >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.experiments",
        description="Run the paper's grids and write the tidy table to CSV.",
        formatter_class=HelpWithDefaults,
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
        type=bounded_int(10),
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
    parser.add_argument("--N", type=bounded_int(10), default=2000, help="unlabeled rows")
    parser.add_argument("--n-test", type=bounded_int(1), default=1000, help="test rows per run")
    parser.add_argument(
        "--repetitions",
        type=bounded_int(1),
        default=None,
        help=f"repetitions (default: the paper's {PAPER_GRID['repetitions']})",
    )
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1), default=2025, help="root seed")
    parser.add_argument(
        "--n-jobs",
        type=bounded_int(-(2**31), zero=False),
        default=None,
        help="joblib workers, not 0 (-1: all cores; default: one process)",
    )
    parser.add_argument(
        "--out",
        default=None,
        help="CSV path for the tidy results: OUT.partial is created beside it before any run, "
        "gets each run's rows as the run finishes, keeps them if the run is interrupted, and "
        "is renamed to OUT (rows sorted by repetition) at the end (default: not written)",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run: keep the finished runs in OUT.partial and run only "
        "the others (same options as that run; a partial file of another grid is refused)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> pd.DataFrame:
    """Command line: run the paper's grids and write the tidy table to CSV.

    Every argument (including that ``--out``'s folder can hold a file, by
    creating ``OUT.partial`` there) is checked before anything runs; bad values
    are argparse errors (exit status 2), not tracebacks. Ctrl-C exits with
    status 130 and one line naming the file that keeps the finished runs.

    Examples
    --------
    >>> argv = ["simulation", "--n", "20", "--sigma", "0.5", "--N", "40", "--n-test", "10",
    ...         "--repetitions", "4", "--out", "sim.csv"]
    >>> table = main(argv)  # doctest: +SKIP
    >>> table = main([*argv, "--resume"])  # after Ctrl-C: runs only the unfinished repetitions
    ... # doctest: +SKIP
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
    for name, values in (("--n", n), ("--sigma", sigma)):
        if len(set(values)) < len(values):
            parser.error(f"{name} {' '.join(map(str, values))} repeats a value; give each once")
    if args.resume and not args.out:
        parser.error("--resume needs --out (the results file whose finished runs it keeps)")
    settings = [{"N": args.N, "n_test": args.n_test}]
    store = None
    finished = args.out and os.path.isfile(args.out) and not os.path.exists(args.out + ".partial")
    if finished and args.resume:  # nothing was interrupted: its runs are all in OUT
        print(f"--resume: {args.out} is complete (no {args.out}.partial), nothing to run; "
              "remove it (or drop --resume) to run the grid again", file=sys.stderr)
        return pd.read_csv(args.out)
    if finished:
        print(f"replacing the finished results in {args.out}", file=sys.stderr)
    if args.out:
        grid = {"experiment": args.experiment, "seed": args.seed, "N": args.N,
                "n_test": args.n_test, "n": n, "sigma": sigma, "repetitions": repetitions}
        try:
            store = PartialResults(args.out, grid, settings, repetitions, resume=args.resume)
        except OptionError as error:
            parser.error(str(error))
    resumed = len(store.done) if store else 0
    if args.resume and not store.resumed:
        print(f"--resume: no {store.path} to continue; running every repetition", file=sys.stderr)
    start = time.perf_counter()
    table = _run(SimulationSweep(n=n, sigma=sigma), settings, repetitions, args, store)
    elapsed = time.perf_counter() - start
    summary = table.pivot_table(
        index=["sigma", "n"], columns="method", values="MSE", aggfunc="mean"
    )
    print(summary.round(4).to_string())
    kept = f" ({resumed} kept from the interrupted run)" if resumed else ""
    print(
        f"\n{len(n) * len(sigma)} settings x {repetitions} repetitions{kept} in {elapsed:.0f} s",
        file=sys.stderr,
    )
    return table


def _run(
    task: SimulationSweep,
    settings: list[dict],
    repetitions: int,
    args: argparse.Namespace,
    store: PartialResults | None,
) -> pd.DataFrame:
    """Run the grid, appending each finished run to the store; Ctrl-C ends with status 130."""
    total = len(settings) * repetitions
    runs = iter_runs(task, settings, repetitions, seed=args.seed, n_jobs=args.n_jobs,
                     progress=True, skip=store.done if store else ())
    try:
        with contextlib.closing(runs):  # closing stops the workers whatever ends the loop
            collected = {}
            for position, records in runs:
                if store is not None:
                    store.append(position, records)
                else:
                    collected[position] = records
        if store is not None:
            return store.finish()
    except KeyboardInterrupt:
        _stop(store, total, "interrupted")
        raise SystemExit(130) from None
    except BaseException:
        _stop(store, total, "failed")
        raise
    return pd.DataFrame([row for position in sorted(collected) for row in collected[position]])


def _stop(store: PartialResults | None, total: int, how: str) -> None:
    """One line saying what was kept (the finished runs) and how to go on."""
    if store is None:
        message = "nothing was saved (no --out given)"
    elif store.close():
        message = (
            f"the {len(store.done)} of {total} runs that finished are kept in {store.path}; "
            f"run the same command with --resume to do the other {total - len(store.done)}"
        )
    else:
        message = "no run had finished, nothing was kept"
    print(f"{how}: {message}", file=sys.stderr)


if __name__ == "__main__":
    main()
