"""The linear program that decides whether a logistic or Poisson MLE exists, against the
closed forms of one covariate and an intercept."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats.engines.recession import has_recession_direction


def _binomial_separated(x: np.ndarray, y: np.ndarray) -> bool:
    """With an intercept and one covariate the classes are (quasi-)separated exactly when
    their ranges of x at most touch (or a class is absent)."""
    zeros, ones = x[y == 0], x[y == 1]
    if len(zeros) == 0 or len(ones) == 0:
        return True
    return zeros.max() <= ones.min() or ones.max() <= zeros.min()


def _poisson_separated(x: np.ndarray, y: np.ndarray) -> bool:
    """Intercept and x: no MLE when no count is positive, or when the positive counts all
    share one x and the zero counts lie on one side of it (not all at it)."""
    positive = np.unique(x[y > 0])
    if len(positive) == 0:
        return True
    if len(positive) > 1:
        return False
    side = np.sign(x[y == 0] - positive[0])
    return bool(np.any(side != 0)) and not (np.any(side > 0) and np.any(side < 0))


@pytest.mark.parametrize("seed", range(60))
def test_the_program_agrees_with_the_closed_form_of_one_covariate(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    x = rng.integers(-3, 4, size=n).astype(float)  # ties, as on real covariates
    shift = rng.normal() * 100  # the answer does not depend on where x is centred
    Z = np.column_stack([np.ones(n), x + shift])
    labels = (rng.random(n) < 1 / (1 + np.exp(-2 * x))).astype(float)
    assert has_recession_direction(Z, labels, "binomial") == _binomial_separated(x, labels)
    counts = np.where(rng.random(n) < 0.4, 0.0, rng.integers(1, 4, size=n)).astype(float)
    if seed % 3 == 0:
        counts[x != x[0]] = 0.0  # the positive counts at one value of x
    assert has_recession_direction(Z, counts, "poisson") == _poisson_separated(x, counts)


def test_proportions_strictly_between_must_stay_on_the_hyperplane():
    x = np.array([-2.0, -1.0, 1.0, 2.0])
    Z = np.column_stack([np.ones(4), x])
    assert has_recession_direction(Z, np.array([0.0, 0.0, 1.0, 1.0]), "binomial")
    # a proportion can sit on the separating line (x = 1: d = (-1, 1)), the others move away
    assert has_recession_direction(Z, np.array([0.0, 0.0, 0.5, 1.0]), "binomial")
    # a line through x = -1 cannot keep the 0 at x = 1 on the side of the 0 at x = -2
    assert not has_recession_direction(Z, np.array([0.0, 0.5, 0.0, 1.0]), "binomial")


def test_a_level_whose_counts_are_all_zero_has_a_direction_and_collinear_columns_do_not():
    rng = np.random.default_rng(1)
    n = 40
    level = np.zeros(n)
    level[:5] = 1.0
    x = rng.normal(size=n)
    counts = rng.poisson(2.0, size=n).astype(float)
    counts[:5] = 0.0
    Z = np.column_stack([np.ones(n), x, level])
    assert has_recession_direction(Z, counts, "poisson")
    counts[0] = 1.0  # one count in the level: the MLE exists
    assert not has_recession_direction(Z, counts, "poisson")
    # a duplicated column is a direction with X d = 0 (no change of the loss), not recession
    assert not has_recession_direction(np.column_stack([Z, x]), counts, "poisson")
