"""Whether a logistic or Poisson likelihood has a maximum, decided by a linear program.

The Newton engines flag a fit as separated by how it behaves: after
:data:`~pearlstats.engines.newton_cv.SEPARATION_MIN_ITER` steps a training row's linear
predictor is beyond the threshold and the steps are still large. A fit that converges slowly
from far away behaves the same for a while (a Poisson row whose covariate puts its mean at
4e-18, beside a row with a mean of 7e10: Newton moves the log-means about one unit per step),
so the flag is confirmed here before the fit is stopped.

The maximum-likelihood estimate fails to exist exactly when the loss has a direction of
recession ``d`` along which it decreases for ever (Albert & Anderson, 1984; the linear program
is Konis's, 2007, as in R's ``detectseparation``):

- logistic: ``x_i'd >= 0`` on every row with y = 1, ``<= 0`` on every row with y = 0, ``= 0``
  on rows with a proportion strictly between, and not ``X d = 0``;
- Poisson: ``x_i'd = 0`` on every row with a positive count, ``<= 0`` on the rows counting 0,
  and not ``X d = 0``.

The program maximises the rows' total move along such a ``d`` in the box ``|d_j| <= 1``
(HiGHS, through scipy): its optimum is 0 when none exists.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog

__all__ = ["has_recession_direction"]

# The direction found counts only if some row moves by this much more than any row
# breaks a constraint: HiGHS meets constraints to about 1e-9, a separating direction in the
# unit box moves the separated rows by a standardised amount of order one.
_MARGIN = 1e4


def has_recession_direction(Z: np.ndarray, y: np.ndarray, kind: str) -> bool:
    """Whether the *kind* (``"binomial"`` or ``"poisson"``) loss of rows *Z*, *y* has no
    maximum-likelihood estimate: a direction of recession exists.

    Parameters
    ----------
    Z : ndarray (n, p)
        The training rows of the design (standardised columns are fine: the answer does
        not depend on the columns' location and scale where an intercept is among them).
    y : ndarray (n,)
        The response: 0/1 or proportions (binomial), counts (Poisson).
    kind : str

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([-2.0, -1.0, 1.0, 2.0])
    >>> Z = np.column_stack([np.ones(4), x])
    >>> has_recession_direction(Z, np.array([0.0, 0.0, 1.0, 1.0]), "binomial")
    True
    >>> has_recession_direction(Z, np.array([0.0, 1.0, 0.0, 1.0]), "binomial")
    False
    """
    Z = np.asarray(Z, dtype=float)
    y = np.asarray(y, dtype=float)
    if kind == "binomial":
        # s_i z_i'd >= 0 where y is 0 or 1 (s = +1 / -1); z_i'd = 0 where 0 < y < 1
        sign = np.where(y >= 1, 1.0, np.where(y <= 0, -1.0, 0.0))
        one_sided, level = sign != 0, sign == 0
        oriented = sign[one_sided, None] * Z[one_sided]
    else:
        # z_i'd <= 0 where the count is 0 (so -z_i'd >= 0); z_i'd = 0 where it is positive
        one_sided, level = y <= 0, y > 0
        oriented = -Z[one_sided]
    if not one_sided.any():
        return False
    program = linprog(
        -oriented.sum(axis=0),  # maximise the rows' total move
        A_ub=-oriented, b_ub=np.zeros(len(oriented)),
        A_eq=Z[level] if level.any() else None,
        b_eq=np.zeros(int(level.sum())) if level.any() else None,
        bounds=[(-1.0, 1.0)] * Z.shape[1], method="highs",
    )
    if program.status != 0:
        return False  # no certificate: the fit goes on (and says if it does not converge)
    moves = oriented @ program.x
    broken = max(float(np.max(-moves, initial=0.0)),
                 float(np.max(np.abs(Z[level] @ program.x), initial=0.0)))
    gain = float(np.max(moves, initial=0.0))
    return gain > 1e-8 and gain > _MARGIN * broken
