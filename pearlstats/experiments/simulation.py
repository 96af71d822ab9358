"""The paper's simulation study (Section 4.1) as a :func:`~pearlstats.experiments.run_grid` task.

:class:`SimulationSweep` runs one repetition over every labeled size and noise
level, learning the five representations once per repetition;
:func:`cell_seed` gives each (n, sigma) cell its fold seed from its values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import OptionError

if TYPE_CHECKING:
    from ..representations import Representations

__all__ = ["PAPER_GRID", "SimulationSweep", "cell_seed", "paper_representations"]


def paper_representations(seed: int | None = None) -> Representations:
    """The simulation's five learners: PCA and kernel PCA with the paper's four kernels.

    Two components each, scikit-learn's default kernel parameters, reading
    columns ``x1`` and ``x2``; an unfitted :class:`~pearlstats.Representations`.

    Examples
    --------
    >>> paper_representations(seed=0).names
    ['pca', 'kpca_rbf', 'kpca_poly', 'kpca_sigmoid', 'kpca_cosine']
    """
    from ..representations import PCA, KernelPCA, Representations

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
    ([(60, 0.5), (120, 0.5)], 20)
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
        from ..datasets import simulate_paper
        from ..fitting import fit

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
                # the sweep's rows stay the strategies and the oracle (its CSVs' layout)
                table = res.evaluate(data.test, blocks=test_blocks).drop(index="Null")
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
