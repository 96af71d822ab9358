"""The small data set the documentation's examples fit.

Sixty rows: a response ``y``, a covariate ``x`` and two 2-column blocks ``a`` and ``b``
(every value standard normal), with ``y = a[:, 0] + 0.5 x + noise``: block ``a`` carries
signal, block ``b`` none. One call gives every example the same rows (:func:`example_data`)
or the same fit of them (:func:`example_fit`), so each shows its own step, not four lines of
set-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..fitting import fit

if TYPE_CHECKING:
    from ..results import PearlResults

__all__ = ["example_data", "example_fit"]

# example_fit's formula: an intercept and x in every candidate, the blocks a and b alone and
# together (candidates a, b and a+b)
_FORMULA = "y ~ x + block(a) + block(b)"


def example_data(seed: int = 0, n: int = 60) -> dict:
    """The examples' data: ``y``, ``x`` and the blocks ``a`` and ``b``, as a dict of arrays.

    Drawn from ``numpy.random.default_rng(seed)`` in this order: ``a`` (n x 2), ``b`` (n x 2),
    ``x`` (n), then the noise of ``y = a[:, 0] + 0.5 x + noise`` (n).

    Parameters
    ----------
    seed : int, default 0
        Seed of the generator.
    n : int, default 60
        Number of rows.

    Returns
    -------
    dict
        ``{"y": (n,), "x": (n,), "a": (n, 2), "b": (n, 2)}``, for
        ``pearl.fit("y ~ x + block(a) + block(b)", data)``.

    Examples
    --------
    >>> import pearlstats as pearl
    >>> data = pearl.datasets.example_data()
    >>> sorted(data), data["a"].shape
    (['a', 'b', 'x', 'y'], (60, 2))
    >>> res = pearl.fit("y ~ x + block(a) + block(b)", data, seed=0)
    >>> res.weights.index.tolist()
    ['a', 'b', 'a+b']
    """
    rng = np.random.default_rng(seed)
    a, b, x = rng.normal(size=(n, 2)), rng.normal(size=(n, 2)), rng.normal(size=n)
    return {"y": a[:, 0] + 0.5 * x + rng.normal(size=n), "x": x, "a": a, "b": b}


def example_fit(**options: Any) -> PearlResults:
    """The examples' fit: ``pearl.fit("y ~ x + block(a) + block(b)", example_data(), seed=0)``.

    The 60 rows of :func:`example_data` (its default seed), the formula
    ``"y ~ x + block(a) + block(b)"`` (candidates ``a``, ``b`` and ``a+b``) and
    :func:`~pearlstats.fit`'s defaults but ``seed=0``, so the folds, the weights and every
    printed number are the same on each call.

    Parameters
    ----------
    **options
        Keywords of :func:`~pearlstats.fit`: ``seed`` replaces 0 (``seed=None`` draws one),
        the others (``ridge``, ``cov_type``, ``honest_se``, ...) are passed on.

    Returns
    -------
    PearlResults
        The fit.

    Examples
    --------
    >>> import pearlstats as pearl
    >>> res = pearl.datasets.example_fit()
    >>> res.formula, res.weights.index.tolist()
    ('y ~ x + block(a) + block(b)', ['a', 'b', 'a+b'])
    >>> same = pearl.fit("y ~ x + block(a) + block(b)", pearl.datasets.example_data(), seed=0)
    >>> bool(same.weights.equals(res.weights))
    True
    >>> pearl.datasets.example_fit(ridge=0.1).ridge  # other options of fit
    0.1
    """
    options.setdefault("seed", 0)
    return fit(_FORMULA, example_data(), **options)
