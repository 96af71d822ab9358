"""What any SE from n rows can cover: the fixed-model oracle (issue 36, item 5).

The nested-CV SE is judged by how often risk +- 1.96 SE covers the test risk
(:mod:`.nested_calibration`). Where it falls short, this asks what the best interval of
that kind does on the same design: fix the predictor that PEARL fitted on one data set,
draw n fresh rows again and again, and cover its risk (its mean loss over very many rows)
by the mean loss of the n rows +- 1.96 times their SD / sqrt(n). Nothing is selected or
cross-validated and the rows are independent, so only the distribution of the per-row
losses is left. When that distribution has a long right tail (rare rows with huge
squared errors), the mean of n rows is usually below the risk and its own SD is then
small too: the oracle misses, and always above. An honest SE computed from the same n
rows cannot be expected to cover better than this oracle.

Run it as a command::

    python -m pearlstats.experiments.inference_checks.loss_tails \\
        --designs paper blocks t3 --out loss_tails.csv

Examples
--------
>>> losses = np.r_[np.ones(990), np.full(10, 101.0)]  # 1 % of rows 101: risk 2
>>> row = mean_interval_coverage(losses, 100)
>>> float(row["risk"]), bool(row["miss_above"] > 0.3)
(2.0, True)
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ...checks import check_int
from ...exceptions import OptionError
from ...fitting import fit
from ..arguments import HelpWithDefaults, bounded_int, check_output
from .designs import ALL_DESIGNS, get_design
from .nested_calibration import DEFAULT_N

__all__ = ["loss_tail_table", "main", "mean_interval_coverage"]

_Z = 1.959963984540054


def mean_interval_coverage(losses: np.ndarray, n: int) -> dict:
    """Coverage of the mean of *losses* by mean +- 1.96 SD / sqrt(n) of consecutive n rows.

    Parameters
    ----------
    losses : ndarray (N,)
        Per-row losses of one fixed predictor on N independent rows (N a multiple of n;
        their mean is taken as the risk).
    n : int
        Rows per sample.

    Returns
    -------
    dict
        ``risk`` (mean of all losses), ``samples`` (N / n), ``coverage``, ``miss_above``
        (share of samples whose interval lies below the risk), ``median_ratio`` (median
        of the samples' means / risk), ``skewness`` and ``kurtosis`` (excess) of the losses.
    """
    losses = np.asarray(losses, dtype=float)
    if losses.size % n:
        raise OptionError(f"{losses.size} losses do not split into samples of n = {n}; "
                          "give a multiple of n")
    risk = losses.mean()
    samples = losses.reshape(-1, n)
    mean, sd = samples.mean(axis=1), samples.std(axis=1, ddof=1)
    half = _Z * sd / np.sqrt(n)
    return {
        "risk": risk, "samples": len(samples),
        "coverage": np.mean(np.abs(mean - risk) <= half),
        "miss_above": np.mean(mean + half < risk),
        "median_ratio": np.median(mean) / risk,
        "skewness": stats.skew(losses), "kurtosis": stats.kurtosis(losses),
    }


def loss_tail_table(designs: Sequence[str], n_datasets: int = 8, samples: int = 2000,
                    seed: int = 20261125) -> pd.DataFrame:
    """:func:`mean_interval_coverage` of PEARL's predictor on data sets of each design.

    Data set i of design d is :mod:`.nested_calibration`'s (drawn from ``[seed, d, i]``,
    fitted with ``seed=i``, n rows as there); the fresh rows come from ``[seed, d, i, 7]``
    (``samples`` times n of them). Gaussian designs only (squared error).
    """
    n_datasets = check_int("n_datasets", n_datasets, minimum=1)
    rows = []
    for name in designs:
        design = get_design(name)
        if design.family != "gaussian":
            raise OptionError(f"design {name!r} is {design.family}; the check is for squared "
                              "error: choose a gaussian design")
        n = DEFAULT_N.get(name, 100)
        for i in range(n_datasets):
            key = [seed, ALL_DESIGNS.index(name), i]
            sample, fresh = design.sample(n, seed=key), design.sample(samples * n, seed=key + [7])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # PEARL-above-MS notes: not what is checked
                res = fit(design.formula, sample.data, blocks=sample.blocks, seed=i, honest=False)
            predicted = np.asarray(res.predict(fresh.data, blocks=fresh.blocks), dtype=float)
            losses = (fresh.data["y"].to_numpy() - predicted.ravel()) ** 2
            rows.append({"design": name, "data_set": i, "n": n}
                        | mean_interval_coverage(losses, n))
    return pd.DataFrame(rows)


def main(argv: Sequence[str] | None = None) -> int:
    """The command: the table, written as CSV.

    The arguments, and that ``--out`` can be written, are checked before anything is
    computed (an argparse error, exit status 2), so a refused run writes nothing.
    """
    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.experiments.inference_checks.loss_tails",
        description="Coverage of a fixed predictor's risk by the mean of n fresh rows.",
        formatter_class=HelpWithDefaults)
    parser.add_argument("--designs", nargs="+", default=["paper", "blocks", "t3"],
                        choices=[d for d in ALL_DESIGNS if get_design(d).family == "gaussian"],
                        help="gaussian designs to draw data sets from")
    parser.add_argument("--n-datasets", type=bounded_int(1), default=8,
                        help="data sets (fitted predictors) per design")
    parser.add_argument("--samples", type=bounded_int(1), default=2000,
                        help="samples of n fresh rows per predictor")
    parser.add_argument("--out", required=True, help="CSV file to write")
    args = parser.parse_args(argv)
    check_output(parser, "--out", args.out)
    table = loss_tail_table(args.designs, args.n_datasets, args.samples)
    table.to_csv(args.out, index=False, float_format="%.6g")
    print(table.groupby("design")[["skewness", "coverage", "miss_above", "median_ratio"]]
          .mean().round(3).to_string())
    return 0


if __name__ == "__main__":  # pragma: no cover - the command
    raise SystemExit(main())
