"""Is the weights' bootstrap spread their sampling SD? A Monte Carlo check (issue 28).

Many data sets are drawn from one design and fitted by PEARL (K = 5, gaussian,
seed = data set number). The Monte Carlo SD of each candidate's weight across
data sets is the target. Against it, on each of the first ``n_boot_datasets``
data sets, every *scheme* resamples the procedure ``n_boot`` times and its
spread (SD, ddof = 1, of the resampled weights, rescaled where the scheme says
so) is averaged over those data sets:

``"refit"``
    The refitting bootstrap of :meth:`~pearlstats.PearlResults.weight_uncertainty`:
    rows drawn with replacement, folds re-drawn, every candidate refitted,
    weights re-solved (:func:`~pearlstats.results.bootstrap.refitting_bootstrap`).
``"subsample"``
    m-out-of-n subsampling, m = n // 2 rows without replacement, the same
    refit on each (:func:`~pearlstats.results.bootstrap.subsampling_weights`);
    the spread times ``sqrt(m / (n - m))``.
``"fixed-oof"``
    A bootstrap of the weight problem alone: rows of the out-of-fold
    prediction matrix drawn with replacement and the simplex problem re-solved,
    the candidates' fits held fixed (``res.resample_weights("bootstrap")``).

Weights on the boundary of the simplex make the plain bootstrap inconsistent
(Andrews 2000), so none of these is a standard error by construction: the
check says whether one behaves like one. Its target is a ratio of mean
spread to Monte Carlo SD within 0.7-1.3 for every candidate whose Monte
Carlo mean weight exceeds 0.05 (``in_target``), and percentile intervals that
contain the full-sample weight (``covers_estimate``: the fraction of data sets
whose ``[0.025, 0.975]`` quantiles of the resampled weights contain it).

Designs (:data:`WEIGHT_DESIGNS`): ``"paper"`` (the paper's simulation with a
covariate, 31 candidates, n = 200), ``"blocks-3"`` (the ``"blocks"`` design
with blocks a and b only: 3 candidates, n = 100) and ``"blocks"`` (7
candidates, n = 200), from :mod:`.designs`.

Examples
--------
>>> table = check_weight_uncertainty(designs=("blocks-3",), schemes=("fixed-oof",),
...                                  n_datasets=3, n_boot=5, seed=0)
>>> table.columns[:4].tolist()
['design', 'n', 'scheme', 'candidate']
>>> table["candidate"].tolist()
['a', 'b', 'a+b']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

import pearlstats as pearl

from ...checks import check_int
from ...exceptions import OptionError
from ...results import bootstrap
from ...results.core import PearlResults
from ..arguments import HelpWithDefaults, bounded_int, check_output
from .designs import get_design

__all__ = ["SCHEMES", "WEIGHT_DESIGNS", "WeightDesign", "check_weight_uncertainty",
           "scheme_draws"]

TARGET = (0.7, 1.3)
MIN_MEAN_WEIGHT = 0.05
ALPHA = 0.05
SCHEMES = ("refit", "subsample", "fixed-oof")


@dataclass(frozen=True)
class WeightDesign:
    """A design of :mod:`.designs` at a sample size, with the blocks its formula uses."""

    design: str
    n: int
    blocks: tuple[str, ...] | None = None  # None: all of the design's blocks

    def formula(self) -> str:
        formula = get_design(self.design).formula
        if self.blocks is None:
            return formula
        return "y ~ x + " + " + ".join(f"block({name})" for name in self.blocks)

    def fit(self, seed_sequence: np.random.SeedSequence, fit_seed: int) -> PearlResults:
        sample = get_design(self.design).sample(self.n, int(seed_sequence.generate_state(1)[0]))
        blocks = sample.blocks
        if self.blocks is not None:
            blocks = {name: blocks[name] for name in self.blocks}
        return pearl.fit(self.formula(), sample.data, blocks=blocks, cv=5, seed=fit_seed)


WEIGHT_DESIGNS = {
    "paper": WeightDesign("paper", 200),
    "blocks-3": WeightDesign("blocks", 100, ("a", "b")),
    "blocks": WeightDesign("blocks", 200),
}


def scheme_draws(res: PearlResults, scheme: str, n_boot: int,
                 seed: int) -> tuple[np.ndarray, float]:
    """Resampled weights of *res* under *scheme* (J x n_boot) and the factor for their spread."""
    if scheme == "refit":
        return res.resample_weights("bootstrap", n_boot, seed, refit=True).to_numpy(), 1.0
    if scheme == "fixed-oof":
        return res.resample_weights("bootstrap", n_boot, seed).to_numpy(), 1.0
    n = int(res.nobs)
    m = n // 2
    draws = bootstrap.subsampling_weights(res.stages, n_boot, m, seed)
    return draws.T, float(np.sqrt(m / (n - m)))


def _one_data_set(design: WeightDesign, key: tuple, r: int, schemes: Sequence[str],
                  n_boot: int, seed: int) -> dict:
    """Weights of data set *r*, and with *schemes* each scheme's spread, shift and coverage."""
    res = design.fit(np.random.SeedSequence(seed, spawn_key=key + (r,)), fit_seed=r)
    weights = res.weights.to_numpy()
    out = {"labels": list(res.candidate_labels), "weights": weights}
    for scheme in schemes:
        draws, factor = scheme_draws(res, scheme, n_boot, seed=r)
        lower, upper = np.quantile(draws, [ALPHA / 2, 1 - ALPHA / 2], axis=1)
        out[scheme] = {
            "spread": factor * draws.std(axis=1, ddof=1),
            "shift": draws.mean(axis=1) - weights,
            "covers": (lower <= weights) & (weights <= upper),
        }
    return out


def _check_names(values, known, what: str) -> tuple[str, ...]:
    values = (values,) if isinstance(values, str) else tuple(values)
    unknown = [value for value in values if value not in known]
    if unknown or not values:
        raise OptionError(f"{what}={list(values)!r}; choose from {list(known)}")
    return values


def check_weight_uncertainty(
    designs: Sequence[str] = tuple(WEIGHT_DESIGNS),
    schemes: Sequence[str] = SCHEMES,
    n_datasets: int = 400,
    n_boot: int = 50,
    seed: int = 0,
    n_jobs: int = 1,
    n_boot_datasets: int | None = None,
) -> pd.DataFrame:
    """Spread of each resampling scheme against the Monte Carlo SD of the weights.

    Parameters
    ----------
    designs : sequence of str
        Keys of :data:`WEIGHT_DESIGNS`.
    schemes : sequence of str
        Of :data:`SCHEMES`.
    n_datasets : int, default 400
        Data sets per design for the Monte Carlo mean and SD of the weights (at least 2).
    n_boot : int, default 50
        Resamples per data set and scheme.
    seed : int
        Root seed: data set r of design d is drawn from the SeedSequence child
        ``(d, r)`` of *seed* (d the design's position in :data:`WEIGHT_DESIGNS`)
        and fitted with ``seed=r``; its resamples use seed r.
    n_jobs : int, default 1
        Workers over data sets (joblib); the numbers do not depend on it.
    n_boot_datasets : int, optional
        The first this many data sets are resampled (default all).

    Returns
    -------
    DataFrame
        One row per design, n, scheme and candidate: ``mc_mean_weight``,
        ``mc_sd`` (over *n_datasets*), ``mean_spread``, ``ratio``
        (mean_spread / mc_sd), ``mean_shift`` (resampled mean minus the
        estimate, averaged), ``covers_estimate`` (fraction of data sets whose
        percentile interval contains the estimate), ``target``, ``in_target``
        (MC mean weight > 0.05), ``met`` (ratio within the target; NA outside
        it), ``n_datasets``, ``n_boot_datasets``, ``n_boot``.
    """
    designs = _check_names(designs, WEIGHT_DESIGNS, "designs")
    schemes = _check_names(schemes, SCHEMES, "schemes")
    n_datasets = check_int("n_datasets", n_datasets, minimum=2)  # 2 for the Monte Carlo SD
    n_boot_datasets = n_datasets if n_boot_datasets is None else min(n_boot_datasets, n_datasets)
    order = list(WEIGHT_DESIGNS)
    rows = []
    for name in designs:
        design, key = WEIGHT_DESIGNS[name], (order.index(name),)
        tasks = (delayed(_one_data_set)(design, key, r, schemes if r < n_boot_datasets else (),
                                        n_boot, seed) for r in range(n_datasets))
        results = Parallel(n_jobs=n_jobs)(tasks)
        rows.extend(_summarise(name, design.n, results, schemes, n_boot_datasets, n_boot))
    return pd.DataFrame(rows)


def _summarise(name, n, results, schemes, n_boot_datasets, n_boot) -> list[dict]:
    labels = results[0]["labels"]
    weights = np.vstack([result["weights"] for result in results])
    mc_mean, mc_sd = weights.mean(axis=0), weights.std(axis=0, ddof=1)
    rows = []
    for scheme in schemes:
        resampled = [result[scheme] for result in results[:n_boot_datasets]]
        spread = np.mean([value["spread"] for value in resampled], axis=0)
        shift = np.mean([value["shift"] for value in resampled], axis=0)
        covers = np.mean([value["covers"] for value in resampled], axis=0)
        for j, label in enumerate(labels):
            ratio = spread[j] / mc_sd[j] if mc_sd[j] > 0 else np.nan
            in_target = bool(mc_mean[j] > MIN_MEAN_WEIGHT)
            met = bool(TARGET[0] <= ratio <= TARGET[1]) if in_target else pd.NA
            rows.append({
                "design": name, "n": n, "scheme": scheme, "candidate": label,
                "mc_mean_weight": mc_mean[j], "mc_sd": mc_sd[j], "mean_spread": spread[j],
                "ratio": ratio, "mean_shift": shift[j], "covers_estimate": covers[j],
                "target": f"{TARGET[0]}-{TARGET[1]}", "in_target": in_target, "met": met,
                "n_datasets": len(results), "n_boot_datasets": n_boot_datasets,
                "n_boot": n_boot,
            })
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``python -m pearlstats.experiments.inference_checks.weights --help``.

    Every argument, and that ``--out`` can be written, is checked before anything is
    computed; a bad one is an argparse error (exit status 2), not a traceback.
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m pearlstats.experiments.inference_checks.weights",
        description=__doc__.splitlines()[0],
        formatter_class=HelpWithDefaults)
    parser.add_argument("--designs", nargs="+", choices=list(WEIGHT_DESIGNS),
                        default=list(WEIGHT_DESIGNS), help="designs to draw data sets from")
    parser.add_argument("--schemes", nargs="+", choices=list(SCHEMES), default=list(SCHEMES),
                        help="resampling schemes whose spread is checked")
    parser.add_argument("--n-datasets", type=bounded_int(2), default=400,
                        help="data sets per design for the Monte Carlo SD (at least 2)")
    parser.add_argument("--n-boot-datasets", type=bounded_int(1), default=None,
                        help="resample only the first this many data sets (default: all)")
    parser.add_argument("--n-boot", type=bounded_int(2), default=50,
                        help="resamples per data set and scheme (at least 2, for an SD)")
    parser.add_argument("--seed", type=bounded_int(0), default=0, help="root seed")
    parser.add_argument("--n-jobs", type=bounded_int(-(2**31), zero=False), default=1,
                        help="joblib workers over data sets, not 0 (-1: all cores)")
    parser.add_argument("--out", required=True, help="CSV file to write")
    args = parser.parse_args(argv)
    check_output(parser, "--out", args.out)
    table = check_weight_uncertainty(args.designs, args.schemes, args.n_datasets, args.n_boot,
                                     args.seed, args.n_jobs, args.n_boot_datasets)
    table.to_csv(args.out, index=False)
    print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
