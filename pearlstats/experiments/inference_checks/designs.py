"""Data-generating designs on which the inference is checked (issue 28).

Each design draws a labelled data set of any size from a seed: a DataFrame
with the response ``y`` and a covariate ``x`` that enters every candidate,
and a dict of named blocks. The truth is known: ``true_params`` holds the
coefficients of the terms common to every candidate whose value is known
(``x``, and the intercept except in the paper's design), which is what
``res.params`` estimates by default. Drawing a large sample with another seed
gives test rows for the honest risks.

Designs
-------
``"blocks"``
    y = x + 0.6 a0 + 0.4 b0 + 0.3 c1 + 1.5 e, with x, e ~ N(0, 1) and three
    two-column blocks a, b, c ~ N(0, I2) (7 candidates): the design on which
    issue 28 measured the coverage of block-column coefficients.
``"heteroscedastic"``
    The same mean; the noise SD is 1.5 sqrt((1 + x^2 + a0^2) / 3), so its
    average variance equals the ``"blocks"`` design's but it grows with |x|.
``"t3"``
    The same mean; e is Student-t with 3 degrees of freedom scaled to unit
    variance (heavy tails).
``"paper"``
    The paper's Section 4.1 regression (:func:`~pearlstats.datasets.simulate_paper`,
    sigma = 0.9) plus ``x`` with coefficient 1, and the paper's five learned
    representations (PCA and kernel PCA with four kernels, 2 components
    each, 31 candidates) learned once on 2 000 unlabelled rows, so that data
    sets differ only in their labelled rows.

Two more, not in :data:`DESIGNS` (the coefficient checks run on those), for the
calibration of the nested-CV SE (:mod:`.nested_calibration`), after the two a
referee simulated (issue 36):

``"ar1"``
    Gaussian, misspecified: the six block columns (a, b, c, two each) are
    AR(1) in their order with correlation 0.7, and the mean has a covariate x
    block term the formula cannot express: y = x + 0.6 a0 + 0.4 b0 +
    0.5 x a1 + 1.5 e (n = 100 in the calibration).
``"logistic"``
    Binomial with three two-column N(0, I2) blocks: P(y = 1) = expit(0.3 + x
    + 0.8 a0 - 0.6 b0 + 0.4 c1) (n = 150 in the calibration).

Examples
--------
>>> design = get_design("blocks")
>>> sample = design.sample(50, seed=1)
>>> sample.data.shape, sorted(sample.blocks), design.true_params
((50, 2), ['a', 'b', 'c'], {'Intercept': 0.0, 'x': 1.0})
>>> design.formula
'y ~ x + block(a) + block(b) + block(c)'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...exceptions import OptionError

__all__ = ["ALL_DESIGNS", "DESIGNS", "EXTRA_DESIGNS", "Design", "Sample", "get_design"]

DESIGNS = ("paper", "blocks", "heteroscedastic", "t3")
EXTRA_DESIGNS = ("ar1", "logistic")
ALL_DESIGNS = DESIGNS + EXTRA_DESIGNS  # a design's seed key is its position here
_AR1_RHO = 0.7
_NOISE_SD = 1.5
_PAPER_SIGMA = 0.9
_PAPER_UNLABELED = 2000
_PAPER_SEED = 20261125


@dataclass(frozen=True)
class Sample:
    """One drawn data set: ``data`` (columns ``y``, ``x``, ...) and its ``blocks``."""

    data: pd.DataFrame
    blocks: dict[str, np.ndarray]


@dataclass(frozen=True)
class Design:
    """A named data-generating process; ``sample(n, seed)`` draws ``n`` labelled rows."""

    name: str
    formula: str
    true_params: dict[str, float] = field(default_factory=dict)
    family: str = "gaussian"

    def sample(self, n: int, seed: int) -> Sample:
        rng = np.random.default_rng(seed)
        if self.name == "paper":
            return _paper_sample(n, rng)
        return _block_sample(self.name, n, rng)


def get_design(name: str) -> Design:
    """The design called *name* (one of :data:`ALL_DESIGNS`)."""
    if name not in ALL_DESIGNS:
        raise OptionError(f"design={name!r} is not known; choose one of {list(ALL_DESIGNS)}")
    formula = "y ~ x + block(a) + block(b) + block(c)"
    if name == "logistic":
        return Design(name, formula, {"Intercept": 0.3, "x": 1.0}, family="binomial")
    if name == "ar1":  # x a1 is omitted, so no coefficient is known
        return Design(name, formula, {})
    if name == "paper":
        blocks = " + ".join(f"block({b})" for b in _paper_learners().names)
        formula = f"y ~ x + {blocks}"
        # The paper's mean has sin^2(x1) and squares, so the intercept of a linear
        # candidate is not a known number; x is independent of everything, so its
        # coefficient is 1 in every candidate.
        return Design(name, formula, {"x": 1.0})
    return Design(name, formula, {"Intercept": 0.0, "x": 1.0})


def _block_sample(name: str, n: int, rng: np.random.Generator) -> Sample:
    x = rng.standard_normal(n)
    a, b, c = (rng.standard_normal((n, 2)) for _ in range(3))
    if name == "ar1":
        return _ar1_sample(x, np.column_stack([a, b, c]), rng)
    if name == "logistic":
        eta = 0.3 + x + 0.8 * a[:, 0] - 0.6 * b[:, 0] + 0.4 * c[:, 1]
        y = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
        return Sample(pd.DataFrame({"y": y, "x": x}), {"a": a, "b": b, "c": c})
    if name == "t3":
        noise = rng.standard_t(3, size=n) / np.sqrt(3.0)  # Var(t3) = 3
    else:
        noise = rng.standard_normal(n)
    if name == "heteroscedastic":
        noise = noise * np.sqrt((1.0 + x**2 + a[:, 0] ** 2) / 3.0)
    y = x + 0.6 * a[:, 0] + 0.4 * b[:, 0] + 0.3 * c[:, 1] + _NOISE_SD * noise
    return Sample(pd.DataFrame({"y": y, "x": x}), {"a": a, "b": b, "c": c})


def _ar1_sample(x: np.ndarray, white: np.ndarray, rng: np.random.Generator) -> Sample:
    """Six unit-variance columns, AR(1) in their order, split into blocks a, b, c."""
    columns = [white[:, 0]]
    for j in range(1, white.shape[1]):
        columns.append(_AR1_RHO * columns[-1] + np.sqrt(1 - _AR1_RHO**2) * white[:, j])
    a, b, c = (np.column_stack(columns[j:j + 2]) for j in (0, 2, 4))
    y = x + 0.6 * a[:, 0] + 0.4 * b[:, 0] + 0.5 * x * a[:, 1] \
        + _NOISE_SD * rng.standard_normal(len(x))
    return Sample(pd.DataFrame({"y": y, "x": x}), {"a": a, "b": b, "c": c})


@functools.lru_cache(maxsize=1)
def _paper_learners():
    """The paper's five representations, learned once on a fixed unlabelled sample."""
    from ...datasets import simulate_paper
    from ..simulation import paper_representations

    fixed = simulate_paper(10, N=_PAPER_UNLABELED, n_test=1, sigma=_PAPER_SIGMA, seed=_PAPER_SEED)
    return paper_representations(_PAPER_SEED).fit(fixed.unlabeled)


@functools.lru_cache(maxsize=1)
def _paper_coefficients() -> dict:
    from ...datasets import simulate_paper

    return dict(simulate_paper(1, N=1, n_test=1, seed=_PAPER_SEED).coefficients)


def _paper_sample(n: int, rng: np.random.Generator) -> Sample:
    from ...datasets import simulate_paper

    seed = int(rng.integers(2**32))
    drawn = simulate_paper(
        n, N=1, n_test=1, sigma=_PAPER_SIGMA, seed=seed, coefficients=_paper_coefficients()
    )
    labeled = drawn.labeled.reset_index(drop=True)
    x = rng.standard_normal(n)
    data = pd.DataFrame({"y": labeled["y"].to_numpy() + x, "x": x, "x1": labeled["x1"],
                         "x2": labeled["x2"]})
    blocks = _paper_learners().transform(labeled)
    return Sample(data, {name: np.asarray(block) for name, block in blocks.items()})
