"""The small data set the documentation's examples fit.

Sixty rows: a response ``y``, a covariate ``x`` and two 2-column blocks ``a`` and ``b``
(every value standard normal), with ``y = a[:, 0] + 0.5 x + noise``: block ``a`` carries
signal, block ``b`` none. One call gives every example the same rows, so each shows its own
step, not four lines of set-up.
"""

from __future__ import annotations

import numpy as np

__all__ = ["example_data"]


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
