"""The weight stage's surrogate loss with observation weights: a weighted mean over rows.

With observation weights ``v`` (normalised to mean 1, so scaling them changes nothing) the
weights minimise ``sum_i v_i loss(y_i, P_i w) / n``. The solver forms are the unweighted
ones with per-row factors: the squared loss's rows (and so its Gram matrix) are scaled by
``sqrt(v_i)``; the log-barrier forms of cross-entropy and Poisson deviance get ``c_i v_i``
(and the Poisson linear term ``2 v'P``). Every risk computed through the loss (the CV risks,
the baselines' choices, the summary's tables) is the weighted mean.

Only the rows the fit was given are weighted: a loss of other rows (new rows to evaluate,
subsets re-solved by the honest re-runs or the stability table) is refused by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..exceptions import OptionError
from ..observation_weights import effective_nobs
from .gram import LeastSquaresForm
from .losses import (
    CrossEntropyLoss,
    LogBarrierForm,
    Loss,
    PoissonDevianceLoss,
    SquaredLoss,
    poisson_form,
)

__all__ = ["RowWeightedLoss", "WEIGHTED_LOSSES"]

# Losses the weight stage can weight by rows; the others (hinge, absolute) are refused by name.
WEIGHTED_LOSSES = ("squared", "cross_entropy", "poisson_deviance")


def _from_base(attribute: str) -> property:
    """A read-only attribute of the weighted loss that is its base loss's *attribute*."""
    return property(lambda self: getattr(self.base, attribute),
                    doc=f"The base loss's ``{attribute}``.")


@dataclass(frozen=True, eq=False)
class RowWeightedLoss(Loss):
    """*base* averaged with row weights *row_weights* (normalised here to mean 1).

    *weight_type* (``"frequency"`` or ``"variance"``) says how many observations the rows
    count as (:meth:`effective_rows`): the sum of the weights as given, or the rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pearlstats.weights.losses import get_loss
    >>> loss = RowWeightedLoss("gaussian", get_loss("squared", "gaussian"), np.array([1.0, 3.0]))
    >>> loss.risk(np.array([0.0, 0.0]), np.array([1.0, 2.0]))  # (1 * 1 + 3 * 4) / 4
    3.25
    """

    base: Loss = None
    row_weights: np.ndarray = None
    weight_type: str | None = None
    # the mean of the weights as given: row_weights * unit are those weights
    unit: float = field(init=False, default=1.0)

    def __post_init__(self):
        if self.base.name not in WEIGHTED_LOSSES:
            raise OptionError(
                f"loss={self.base.name!r} is not yet supported with observation weights; use one "
                f"of {list(WEIGHTED_LOSSES)}"
            )
        v = np.asarray(self.row_weights, dtype=float)
        object.__setattr__(self, "unit", float(v.mean()))
        object.__setattr__(self, "row_weights", v / v.mean())

    # What the loss is (its name, solver, families, and the loss it stands for) is the base's.
    name = _from_base("name")
    solver = _from_base("solver")
    families = _from_base("families")
    _originals = _from_base("_originals")

    def restricted(self, rows: np.ndarray) -> RowWeightedLoss:
        """The loss of the rows *rows* (positions) with their own weights."""
        return RowWeightedLoss(self.family, self.base, self.row_weights[rows] * self.unit,
                               self.weight_type)

    def effective_rows(self, n: int) -> float:
        """The observations the *n* rows count as: the sum of their frequency weights (as
        given, not normalised), else *n* (:func:`~pearlstats.observation_weights.effective_nobs`).
        """
        return effective_nobs(n, self._rows(n) * self.unit, self.weight_type)

    def _rows(self, n: int) -> np.ndarray:
        if n != self.row_weights.size:
            raise OptionError(
                f"a loss over {n} rows, but the observation weights are of the fit's "
                f"{self.row_weights.size} rows: re-solving or scoring other rows is not yet "
                "supported with weights/offsets"
            )
        return self.row_weights

    def _pointwise(self, y, pred):
        values = self.base._pointwise(y, pred)
        v = self._rows(values.shape[0])
        return values * v.reshape((-1,) + (1,) * (values.ndim - 1))

    def combine(self, P: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return self.base.combine(P, weights)

    def form(self, y: np.ndarray, P: np.ndarray) -> LeastSquaresForm | LogBarrierForm:
        v = self._rows(len(y))
        if isinstance(self.base, SquaredLoss) and not self.multiclass:
            plain = self.base.form(y, P)
            root = np.sqrt(v)
            return LeastSquaresForm(P * root[:, None], y * root, plain.n_obs, plain.scale)
        if isinstance(self.base, CrossEntropyLoss):
            plain = self.base.form(y, P)
            return LogBarrierForm(plain.A, v, plain.b, plain.const, plain.n_obs)
        if isinstance(self.base, PoissonDevianceLoss):
            return poisson_form(y, P, v)
        raise OptionError(f"loss={self.name!r} for family {self.family!r} is not yet supported "
                          "with observation weights")
