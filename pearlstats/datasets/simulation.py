"""The paper's synthetic regression data (Section 4.1, eq. dgp1).

.. math::

    y = \\beta_0 + \\beta_1 x_1 + \\beta_2 x_2 + \\alpha_1 x_1^2 + \\alpha_2 x_2^2
        + \\gamma x_1 x_2 + \\sin^2(x_1) + \\varepsilon,

with ``x = (x1, x2) ~ N(0, I_2)``, ``eps ~ N(0, sigma^2)`` and the six
coefficients drawn independently from ``N(0, 0.09)`` (standard deviation 0.3).

Random draws
------------
``seed`` feeds one :class:`numpy.random.SeedSequence`, which is split with
``spawn(4)`` into four independent streams, each a PCG64 ``Generator``:

0. coefficients: ``normal(0, 0.3, size=6)`` in the order beta0, beta1, beta2,
   alpha1, alpha2, gamma (drawn, and ignored, when ``coefficients`` is given);
1. unlabeled rows: ``standard_normal((N, 2))``, columns x1, x2;
2. labeled rows: ``standard_normal((n, 3))``, columns x1, x2, z with
   ``eps = sigma * z``;
3. test rows: ``standard_normal((n_test, 3))``, as the labeled rows.

Separate streams mean that changing ``N``, ``n_test`` or ``coefficients``
leaves the other parts unchanged; drawing each row's ``(x1, x2, z)`` together
means the first ``n`` labeled rows are the same for every larger ``n``; and
drawing the standardised noise ``z`` means every ``sigma`` sees the same
inputs and the same noise pattern (common random numbers across a grid).

Examples
--------
>>> data = simulate_paper(100, N=500, n_test=50, seed=1)
>>> data.labeled.shape, data.unlabeled.shape, data.test.shape
((100, 3), (500, 2), (50, 3))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..exceptions import DataError, OptionError

__all__ = [
    "COEFFICIENT_NAMES",
    "COEFFICIENT_SD",
    "SimulatedData",
    "simulate_paper",
    "paper_features",
]

COEFFICIENT_NAMES = ("beta0", "beta1", "beta2", "alpha1", "alpha2", "gamma")
COEFFICIENT_SD = 0.3  # the paper's N(0, 0.09)
_INPUTS = ("x1", "x2")
_STREAMS = ("coefficients", "unlabeled", "labeled", "test")


def paper_features(frame: pd.DataFrame) -> pd.DataFrame:
    """The correctly specified feature map of the paper's data generating process.

    A linear model with an intercept on these six columns contains the true
    conditional mean, so it is the "correctly specified candidate" of the
    paper's Theorem 2.

    Parameters
    ----------
    frame : DataFrame
        Rows with columns ``x1`` and ``x2`` (other columns are ignored).

    Returns
    -------
    DataFrame
        Columns ``x1, x2, x1_sq, x2_sq, x1_x2, sin2_x1`` (``x1**2``,
        ``x2**2``, ``x1*x2``, ``sin(x1)**2``) with the index of *frame*.

    Raises
    ------
    DataError
        *frame* lacks ``x1`` or ``x2``.

    Examples
    --------
    >>> import pandas as pd
    >>> paper_features(pd.DataFrame({"x1": [0.0, 1.0], "x2": [2.0, 3.0]})).columns.tolist()
    ['x1', 'x2', 'x1_sq', 'x2_sq', 'x1_x2', 'sin2_x1']
    """
    x1, x2 = _inputs(frame)
    return pd.DataFrame(
        {
            "x1": x1,
            "x2": x2,
            "x1_sq": x1**2,
            "x2_sq": x2**2,
            "x1_x2": x1 * x2,
            "sin2_x1": np.sin(x1) ** 2,
        },
        index=frame.index,
    )


@dataclass(frozen=True)
class SimulatedData:
    """One draw of the paper's synthetic data.

    Attributes
    ----------
    labeled : DataFrame
        ``n`` rows with columns ``x1, x2, y``.
    unlabeled : DataFrame
        ``N`` rows with columns ``x1, x2`` (no response), for learning representations.
    test : DataFrame
        ``n_test`` rows with columns ``x1, x2, y``.
    coefficients : dict
        ``beta0, beta1, beta2, alpha1, alpha2, gamma``.
    sigma : float
        Noise standard deviation; ``sigma**2`` is the risk of the conditional mean.
    seed : int
        Entropy of the root ``SeedSequence``; ``simulate_paper(..., seed=seed)``
        with the same sizes reproduces this draw (useful when ``seed=None``).

    Examples
    --------
    >>> data = simulate_paper(5, N=0, seed=3)
    >>> bool(((data.labeled["y"] - data.conditional_mean(data.labeled)).abs() < 5).all())
    True
    """

    labeled: pd.DataFrame
    unlabeled: pd.DataFrame
    test: pd.DataFrame
    coefficients: dict
    sigma: float
    seed: int

    def conditional_mean(self, frame: pd.DataFrame) -> pd.Series:
        """``E[y | x1, x2]`` under this draw's coefficients.

        Parameters
        ----------
        frame : DataFrame
            Rows with columns ``x1`` and ``x2``.

        Returns
        -------
        Series
            Named ``"conditional_mean"``, with the index of *frame*.

        Examples
        --------
        >>> import pandas as pd
        >>> data = simulate_paper(1, N=0, seed=0, coefficients=[1, 0, 0, 0, 0, 0])
        >>> data.conditional_mean(pd.DataFrame({"x1": [0.0], "x2": [5.0]})).tolist()
        [1.0]
        """
        return pd.Series(
            _mean(frame, self.coefficients), index=frame.index, name="conditional_mean"
        )


def simulate_paper(
    n: int,
    *,
    N: int = 2000,
    n_test: int = 0,
    sigma: float = 0.5,
    seed: int | None = None,
    coefficients: Mapping[str, float] | Sequence[float] | None = None,
) -> SimulatedData:
    """Draw labeled, unlabeled and test rows from the paper's eq. (dgp1).

    Parameters
    ----------
    n : int
        Labeled rows (the paper uses 100, 200, 400, 800).
    N : int, default 2000
        Unlabeled rows (inputs only).
    n_test : int, default 0
        Held-out labeled rows.
    sigma : float, default 0.5
        Noise standard deviation (the paper uses 0.1, 0.5, 0.9, 1.5).
    seed : int, optional
        Root of the random streams (see the module notes for the exact draws).
        ``None`` draws fresh entropy, recorded in ``SimulatedData.seed``.
    coefficients : mapping or sequence of 6 floats, optional
        ``beta0, beta1, beta2, alpha1, alpha2, gamma`` (by name, or in that
        order). By default drawn from ``N(0, 0.3**2)``.

    Returns
    -------
    SimulatedData

    Raises
    ------
    OptionError
        A size that is not a non-negative integer (``n`` must be >= 1), a
        negative or non-finite ``sigma``, a bad seed, or malformed coefficients.

    Examples
    --------
    >>> a = simulate_paper(200, N=100, seed=7)
    >>> b = simulate_paper(100, N=100, seed=7)
    >>> a.labeled.iloc[:100].equals(b.labeled)  # labeled rows are nested in n
    True
    """
    _check_size("n", n, minimum=1)
    _check_size("N", N, minimum=0)
    _check_size("n_test", n_test, minimum=0)
    if (
        isinstance(sigma, bool)
        or not isinstance(sigma, (int, float, np.integer, np.floating))
        or not (np.isfinite(sigma) and sigma >= 0)
    ):
        raise OptionError(f"sigma={sigma!r}; use a finite noise standard deviation >= 0")
    root = _root_sequence(seed)
    streams = dict(
        zip(_STREAMS, (np.random.default_rng(child) for child in root.spawn(len(_STREAMS))))
    )

    drawn = streams["coefficients"].normal(0.0, COEFFICIENT_SD, size=len(COEFFICIENT_NAMES))
    coefs = (
        dict(zip(COEFFICIENT_NAMES, drawn.tolist()))
        if coefficients is None
        else _check_coefficients(coefficients)
    )

    unlabeled = pd.DataFrame(streams["unlabeled"].standard_normal((N, 2)), columns=list(_INPUTS))
    labeled = _labeled_rows(streams["labeled"], n, coefs, float(sigma))
    test = _labeled_rows(streams["test"], n_test, coefs, float(sigma))
    return SimulatedData(labeled, unlabeled, test, coefs, float(sigma), int(root.entropy))


def _mean(frame: pd.DataFrame, coefs: Mapping[str, float]) -> np.ndarray:
    slopes = np.array(
        [coefs["beta1"], coefs["beta2"], coefs["alpha1"], coefs["alpha2"], coefs["gamma"], 1.0]
    )
    return coefs["beta0"] + paper_features(frame).to_numpy() @ slopes


def _labeled_rows(
    rng: np.random.Generator, rows: int, coefs: Mapping[str, float], sigma: float
) -> pd.DataFrame:
    draws = rng.standard_normal((rows, 3))
    frame = pd.DataFrame(draws[:, :2], columns=list(_INPUTS))
    frame["y"] = _mean(frame, coefs) + sigma * draws[:, 2]
    return frame


def _inputs(frame) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(frame, pd.DataFrame):
        raise DataError(
            f"expected a DataFrame with columns 'x1' and 'x2', got {type(frame).__name__}"
        )
    missing = [name for name in _INPUTS if name not in frame.columns]
    if missing:
        raise DataError(
            f"the rows lack column(s) {missing}; the paper's inputs are 'x1' and 'x2' "
            f"(columns present: {list(frame.columns)[:10]})"
        )
    try:
        return tuple(frame[name].to_numpy(dtype=float) for name in _INPUTS)
    except (TypeError, ValueError) as err:
        raise DataError(f"columns 'x1' and 'x2' must be numeric: {err}") from None


def _check_size(name: str, value, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise OptionError(f"{name}={value!r}; use an integer >= {minimum}")


def _root_sequence(seed) -> np.random.SeedSequence:
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise OptionError(f"seed={seed!r}; use a non-negative integer or None")
    return np.random.SeedSequence(int(seed))


def _check_coefficients(coefficients) -> dict:
    if isinstance(coefficients, Mapping):
        names = set(coefficients)
        if names != set(COEFFICIENT_NAMES):
            raise OptionError(
                f"coefficients must have exactly the keys {list(COEFFICIENT_NAMES)}; "
                f"missing {sorted(set(COEFFICIENT_NAMES) - names)}, "
                f"unknown {sorted(names - set(COEFFICIENT_NAMES))}"
            )
        values = [coefficients[name] for name in COEFFICIENT_NAMES]
    else:
        values = list(np.ravel(np.asarray(coefficients, dtype=object)))
        if len(values) != len(COEFFICIENT_NAMES):
            raise OptionError(
                f"coefficients has {len(values)} values; give 6 in "
                f"the order {list(COEFFICIENT_NAMES)} or a mapping"
            )
    try:
        values = [float(v) for v in values]
    except (TypeError, ValueError):
        raise OptionError(f"coefficients must be numbers, got {values!r}") from None
    if not np.isfinite(values).all():
        raise OptionError(f"coefficients must be finite, got {values!r}")
    return dict(zip(COEFFICIENT_NAMES, values))
