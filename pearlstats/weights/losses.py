"""Surrogate losses for the PEARL weights: values, checks and solver forms.

Each loss stands for an original loss (the one a user cares about) and names
the simplex solver in :mod:`pearlstats.weights` that minimises its mean over
the rows for a convex combination ``P @ w`` of candidate predictions.

=================  =====================  ======  =============================================
name               families               solver  per-row value
=================  =====================  ======  =============================================
squared            all                    qp      ``(y - mu)^2``; binomial ``(y - p)^2``;
                                                  multinomial ``mean_c (1[y=c] - p_c)^2``
cross_entropy      binomial, multinomial  convex  ``-log max(p_y, EPS)``
poisson_deviance   poisson                convex  ``2 (y log(y / mu) - (y - mu))``
hinge              binomial, multinomial  lp      binomial ``max(0, 1 - s f)``, ``s = 2y - 1``,
                                                  ``f = logit(p)``; multinomial
                                                  ``max(0, 1 + max_{c != y} f_c - f_y)``,
                                                  ``f_c = log p_c - mean_k log p_k``
hinge_probability  binomial, multinomial  lp      binomial ``max(0, 1 - s (2p - 1))``;
                                                  multinomial ``1 + max_{c != y} p_c - p_y``
absolute           gaussian, poisson      lp      ``|y - mu|``
=================  =====================  ======  =============================================

Conventions:

* Binomial predictions are ``p = P(y = 1)``; the binomial Brier score is the
  one-class ``(y - p)^2`` (half the two-class sum), as in scikit-learn's
  ``brier_score_loss``. The multinomial squared loss is the mean over the C
  classes, so its risk is the paper's MSE (mean over rows and classes);
  :func:`mean_squared_error` is that number for every family.
* Probabilities and Poisson means inside a logarithm are floored at
  ``EPS = 1e-15``, so a candidate that gives the observed class probability 0
  costs ``-log(1e-15) = 34.5`` instead of infinity. ``0 log 0 = 0``.
* ``hinge`` reads the decision function recovered from the stored
  probabilities (:func:`linear_predictor`; logits clipped at
  ``+-LOGIT_LIMIT = 36.74``, the largest a float64 probability resolves)
  and its weights average decision functions (:meth:`Loss.combine`).
  ``hinge_probability`` is the hinge on ``2p - 1`` / on probabilities: it
  never reaches its flat part, is linear in the weights and so picks a
  single candidate; it equals ``2 |y - p|`` for binomial.
* The squared and absolute losses are solved on centred and scaled data,
  so their weights do not change under ``y -> a y + c`` (gaussian).
* NaN predictions (failed candidates) give NaN losses; every other invalid
  value raises a :class:`~pearlstats.exceptions.PearlError`.

Examples
--------
>>> import numpy as np
>>> loss = get_loss(None, "binomial")
>>> loss.name, loss.solver, loss.original
('cross_entropy', 'convex', 'log-loss')
>>> loss.pointwise(np.array([1.0, 0.0]), np.array([0.5, 0.5])).round(4)
array([0.6931, 0.6931])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from scipy.special import expit

from ..backends.lazy import is_dask_collection
from ..exceptions import DataError, MissingValueError, OptionError, ResponseError, format_positions
from .gram import LeastSquaresForm
from .log_barrier import LogBarrierForm, relative_excess

__all__ = [
    "DEFAULT_LOSSES",
    "EPS",
    "LOGIT_LIMIT",
    "LOSSES",
    "LeastSquaresForm",
    "LogBarrierForm",
    "poisson_form",
    "Loss",
    "PiecewiseLinearForm",
    "check_response_variation",
    "get_loss",
    "linear_predictor",
    "mean_squared_error",
    "observed_probability",
]

EPS = 1e-15
LOGIT_LIMIT = 53 * np.log(2.0)  # logit(1 - 2**-53): float64 probabilities resolve no larger logit
FAMILIES = ("gaussian", "binomial", "multinomial", "poisson")
_SUM_TOLERANCE = 1e-6  # how far multinomial probability rows may stray from summing to 1
CONSTANT_RESPONSE_ULPS = 16  # a gaussian response spreading over fewer ulps of its size is constant


# ---- solver forms --------------------------------------------------------------------------
@dataclass(frozen=True)
class PiecewiseLinearForm:
    """Objective ``f(w) = (1/n_obs) sum_i max_{k: rows[k] = i} (intercepts[k] + slopes[k] @ w)``.

    Every row of the data owns at least one affine piece; the maximum over a
    row's pieces is its loss, so the mean is a linear programme in ``(w, t)``.
    ``unit`` converts back to the loss: ``mean loss = unit * f(w)``.
    """

    rows: np.ndarray
    intercepts: np.ndarray
    slopes: np.ndarray
    n_obs: int
    unit: float = 1.0

    @property
    def size(self) -> int:
        return self.slopes.shape[1]

    def row_values(self, w: np.ndarray) -> np.ndarray:
        out = np.full(self.n_obs, -np.inf)
        np.maximum.at(out, self.rows, self.intercepts + self.slopes @ w)
        return out

    def value(self, w: np.ndarray) -> float:
        return float(self.row_values(w).mean())

    def row_indicator(self) -> sparse.csr_matrix:
        """Sparse (pieces, n_obs) matrix with a 1 where piece k belongs to row i."""
        K = len(self.rows)
        return sparse.csr_matrix((np.ones(K), (np.arange(K), self.rows)), shape=(K, self.n_obs))


# ---- validation ----------------------------------------------------------------------------
def _check_response(family: str, y, n_classes: int | None) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1:
        raise DataError(f"y must be one-dimensional (one value per row), got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.number) and y.dtype != bool:
        raise ResponseError(f"y must be numeric ({family} codes), got dtype {y.dtype}")
    y = y.astype(float)
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        raise MissingValueError(f"y has NaN or infinite values at {format_positions(bad)}")
    if family == "binomial":
        bad = np.flatnonzero((y != 0) & (y != 1))
        if bad.size:
            raise ResponseError(
                f"binomial y must be 0 or 1; {format_positions(bad)} hold {y[bad[:3]].tolist()}"
            )
    elif family == "multinomial":
        bad = np.flatnonzero((y != np.round(y)) | (y < 0) | (y >= n_classes))
        if bad.size:
            raise ResponseError(
                f"multinomial y must be integer class codes 0..{n_classes - 1} (one per "
                f"probability column); {format_positions(bad)} hold {y[bad[:3]].tolist()}"
            )
        return y.astype(np.intp)
    elif family == "poisson":
        bad = np.flatnonzero(y < 0)
        if bad.size:
            raise ResponseError(
                f"poisson y must be non-negative counts; {format_positions(bad)} are negative"
            )
    return y


def check_response_variation(y: np.ndarray, where: str = "") -> None:
    """Refuse a gaussian response without variance: nothing for the weights to fit.

    ``y`` is constant when ``max(y) - min(y) <= CONSTANT_RESPONSE_ULPS * eps *
    max|y|`` (16 units of rounding at its largest magnitude; all zeros
    included): such differences are rounding, and weights fitted to them
    would be arbitrary. A response that varies by more, however little
    (``1 + 1e-12 * noise``), is fitted.

    Raises
    ------
    ResponseError

    Examples
    --------
    >>> check_response_variation(np.array([1.0, 1.0 + 1e-12]))
    >>> check_response_variation(np.array([2.5, 2.5]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.ResponseError: the gaussian response is constant (every value is 2.5 ...
    """
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        return
    top = float(np.abs(y).max())
    if float(y.max() - y.min()) <= CONSTANT_RESPONSE_ULPS * np.finfo(float).eps * top:
        raise ResponseError(
            f"the gaussian response{where} is constant (every value is {float(y[0]):.17g} to "
            f"within {CONSTANT_RESPONSE_ULPS} ulps); there is nothing for the candidates to predict"
        )


def _where(bad: np.ndarray, labels) -> str:
    """Name the rows (and candidate columns, given ``labels``) where ``bad`` (n, J, ...) holds."""
    if labels is None:
        return format_positions(np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1)))
    per_column = bad.reshape(bad.shape[0], bad.shape[1], -1).any(axis=2)
    columns = np.flatnonzero(per_column.any(axis=0))
    names = ", ".join(str(labels[j]) for j in columns[:10])
    names += f" and {columns.size - 10} more" if columns.size > 10 else ""
    first = format_positions(np.flatnonzero(per_column[:, columns[0]]))
    return (
        f"candidate column{'s' if columns.size > 1 else ''} {names} "
        f"(column {labels[columns[0]]}: {first})"
    )


# Rows of the predictions the range checks test at a time (no (n, J) masks at once).
_CHECK_ROWS = 8192


def _anywhere(values: np.ndarray, test) -> bool:
    """Whether the elementwise *test* holds anywhere, taken a block of rows at a time."""
    if is_dask_collection(values) or np.ndim(values) == 0 or len(values) <= _CHECK_ROWS:
        return bool(test(values).any())
    return any(bool(test(values[start:start + _CHECK_ROWS]).any())
               for start in range(0, len(values), _CHECK_ROWS))


def _out_of_range(v):
    return (v < 0) | (v > 1)


def _negative(v):
    return v < 0


def _check_values(family: str, values: np.ndarray, labels, allow_nan: bool) -> None:
    """Range checks; ``labels`` names the candidate axis (None for one prediction)."""
    # one pass; the messages below look closer if not
    finite = not _anywhere(values, lambda v: ~np.isfinite(v))
    if not finite and not allow_nan and _anywhere(values, np.isnan):
        raise MissingValueError(
            f"predictions have NaN values at {_where(np.isnan(values), labels)}; "
            "a failed candidate must be left out (active=False)"
        )
    if not finite and _anywhere(values, np.isinf):
        raise DataError(f"predictions have infinite values at {_where(np.isinf(values), labels)}")
    if family == "poisson":
        test, kind = _negative, "Poisson means must be >= 0"
    elif family in ("binomial", "multinomial"):
        test, kind = _out_of_range, "probabilities must lie in [0, 1]"
    else:
        return
    if _anywhere(values, test):
        raise DataError(f"{kind}; violated at {_where(test(values), labels)}")
    if family == "multinomial":
        off = np.abs(values.sum(axis=-1) - 1.0) > _SUM_TOLERANCE
        if off.any():
            raise DataError(
                "class probabilities must sum to 1 over "
                f"the last axis; not at {_where(off, labels)}"
            )


# ---- losses --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Loss:
    """A surrogate loss bound to a family.

    Attributes
    ----------
    family : str
        The family whose data layout the loss reads.
    name, solver : str
        Registry name and the simplex solver kind (``"qp"``, ``"convex"`` or ``"lp"``).
    families : tuple of str
        Families the loss applies to.
    original : str
        The loss it stands for, as text for the summary.
    """

    family: str
    name: ClassVar[str] = ""
    solver: ClassVar[str] = ""
    families: ClassVar[tuple] = ()
    _originals: ClassVar[dict] = {}

    @property
    def original(self) -> str:
        """The loss the surrogate stands for, as text for the summary (``"log-loss"``).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("cross_entropy", "binomial")
        >>> loss.name, loss.original
        ('cross_entropy', 'log-loss')
        """
        return self._originals[self.family]

    @property
    def multiclass(self) -> bool:
        """Whether predictions carry one probability per class (multinomial).

        Examples
        --------
        >>> import pearlstats as pearl
        >>> pearl.get_loss("cross_entropy", "multinomial").multiclass
        True
        """
        return self.family == "multinomial"

    def effective_rows(self, n: int) -> float:
        """How many observations *n* rows of this loss count as: *n* (a loss with frequency
        weights counts their sum, :class:`~pearlstats.weights.row_weighted.RowWeightedLoss`).

        Parameters
        ----------
        n : int
            Number of rows.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> loss.effective_rows(3)
        3.0
        """
        return float(n)

    def layout(self, candidates: bool) -> str:
        """Expected shape of the predictions, as text.

        (n, J) / (n, J, C) for candidates, (n,) / (n, C) otherwise.

        Parameters
        ----------
        candidates : bool
            The layout of candidates' predictions (True) or of one prediction (False).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> loss.layout(candidates=True), loss.layout(candidates=False)
        ('(n, J)', '(n,)')
        """
        if self.multiclass:
            return "(n, J, C)" if candidates else "(n, C)"
        return "(n, J)" if candidates else "(n,)"

    def check_shape(self, y: np.ndarray, predictions: ArrayLike, *, candidates: bool) -> np.ndarray:
        """Predictions as a float array shaped to match ``y`` and the family; raises DataError.

        Parameters
        ----------
        y : array_like (n,)
            The response.
        predictions : array_like
            The predictions to check.
        candidates : bool
            Whether *predictions* hold one column per candidate (see :meth:`layout`).

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> loss.check_shape(y, P[:, 0], candidates=False)
        array([1., 2., 3.])
        """
        try:
            P = np.asarray(predictions, dtype=float)
        except (TypeError, ValueError) as err:
            raise DataError(
                f"predictions must be numeric, got {type(predictions).__name__} ({err})"
            ) from None
        layout = self.layout(candidates)
        y_shape = np.shape(y)
        if (
            P.ndim != (2 if self.multiclass else 1) + candidates
            or len(y_shape) != 1
            or P.shape[0] != y_shape[0]
        ):
            raise DataError(
                f"{self.family} predictions must have shape {layout} with n = len(y); "
                f"got predictions of shape {P.shape} and y of shape {y_shape}"
            )
        return P

    def check(
        self,
        y: ArrayLike,
        predictions: ArrayLike,
        *,
        candidates: bool,
        labels: Sequence[str] | None = None,
        allow_nan: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Validate ``y`` and predictions; return them as arrays ``(y, P)``.

        ``candidates=True`` expects the (n, J) / (n, J, C) matrix, else one
        combined prediction (n,) / (n, C). NaN predictions (failed candidates)
        pass unless ``allow_nan=False`` (then MissingValueError); infinite or
        out-of-range values raise :class:`~pearlstats.exceptions.DataError`, a
        response that does not suit the family
        :class:`~pearlstats.exceptions.ResponseError`. ``labels`` (candidates
        only) are the column numbers used in messages; default ``0..J-1``.

        Parameters
        ----------
        y : array_like (n,)
            The response.
        predictions : array_like
            (n, J) / (n, J, C) candidates' predictions with ``candidates=True``, else one
            prediction (n,) / (n, C).
        candidates : bool
            Whether *predictions* hold one column per candidate.
        labels : sequence of str, optional
            Names of the candidates' columns in messages (default ``0..J-1``).
        allow_nan : bool, default True
            Whether NaN predictions (failed candidates) pass.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> y_checked, P_checked = loss.check(y, P, candidates=True)
        >>> P_checked.shape
        (3, 2)
        """
        P = self.check_shape(y, predictions, candidates=candidates)
        y = _check_response(self.family, y, P.shape[-1] if self.multiclass else None)
        if candidates and labels is None:
            labels = np.arange(P.shape[1])
        _check_values(self.family, P, labels if candidates else None, allow_nan)
        return y, P

    def pointwise(self, y: ArrayLike, pred: ArrayLike) -> np.ndarray:
        """Per-row loss (n,) of a prediction: (n,) means/probabilities or (n, C) probabilities.

        Parameters
        ----------
        y : array_like (n,)
            The response.
        pred : array_like
            One prediction: (n,) means/probabilities or (n, C) class probabilities.

        Examples
        --------
        >>> import numpy as np
        >>> get_loss("absolute", "gaussian").pointwise(np.array([1.0, 2.0]), np.array([1.5, 1.0]))
        array([0.5, 1. ])
        """
        y, pred = self.check(y, pred, candidates=False)
        return self._pointwise(y, pred)

    def row_losses(self, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
        """Per-row losses of predictions already checked (e.g. a partition of checked data).

        Skips :meth:`pointwise`'s checks, and broadcasts: ``y[:, None]`` against an
        (n, J) matrix of candidates' predictions gives (n, J) losses.

        Parameters
        ----------
        y : ndarray
            The checked response, (n,) or broadcast as ``y[:, None]``.
        pred : ndarray
            Predictions of the matching shape.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> loss.row_losses(y[:, None], P)  # (n, J): every candidate's losses
        array([[0., 1.],
               [0., 0.],
               [1., 1.]])
        """
        return self._pointwise(y, pred)

    def risk(self, y: ArrayLike, pred: ArrayLike) -> float:
        """Mean of :meth:`pointwise`.

        Parameters
        ----------
        y : array_like (n,)
            The response.
        pred : array_like
            One prediction: (n,) means/probabilities or (n, C) probabilities.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> round(loss.risk(y, P[:, 1]), 4)
        0.6667
        """
        return float(np.mean(self.pointwise(y, pred)))

    def combine(self, P: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The prediction the weights stand for: ``sum_j w_j P[:, j]`` (checked candidates ``P``).

        Every loss averages predictions except ``hinge``, which averages
        decision functions.

        Parameters
        ----------
        P : ndarray (n, J) or (n, J, C)
            Checked candidates' predictions.
        weights : ndarray (J,)
            Simplex weights.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> loss.combine(P, np.array([0.25, 0.75]))
        array([1.75, 2.  , 4.5 ])
        """
        return weighted_columns(P, weights)

    def objective(self, y: np.ndarray, P: np.ndarray, weights: np.ndarray) -> float:
        """Mean loss of ``combine(P, weights)``: the quantity the weights minimise.

        Parameters
        ----------
        y : ndarray (n,)
            The checked response.
        P : ndarray (n, J) or (n, J, C)
            Checked candidates' predictions.
        weights : ndarray (J,)
            Simplex weights.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> round(loss.objective(y, P, np.array([0.5, 0.5])), 4)
        0.0833
        """
        return float(np.mean(self._pointwise(y, self.combine(P, weights))))

    def _pointwise(self, y: np.ndarray, pred: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def form(
        self, y: np.ndarray, P: np.ndarray
    ) -> LeastSquaresForm | LogBarrierForm | PiecewiseLinearForm:
        """Solver's view of ``mean pointwise(y, P @ w)`` for checked, NaN-free candidates ``P``.

        Parameters
        ----------
        y : ndarray (n,)
            The checked response.
        P : ndarray (n, J) or (n, J, C)
            Checked, NaN-free candidates' predictions.

        Examples
        --------
        >>> import numpy as np, pearlstats as pearl
        >>> loss = pearl.get_loss("squared", "gaussian")
        >>> y = np.array([1.0, 2.0, 4.0])
        >>> P = np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 5.0]])  # two candidates' predictions
        >>> type(loss.form(y, P)).__name__
        'LeastSquaresForm'
        """
        raise NotImplementedError


# Rows per block of :func:`weighted_columns`: the used columns of 8 192 rows are copied at
# a time (16 MiB at 31 candidates of ten classes), not of all n rows.
_COMBINE_ROWS = 8192


def weighted_columns(P: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_j weights[j] P[:, j]`` over the columns of positive weight, a block of rows at a time.

    Columns of weight 0 (failed candidates' NaN among them) are skipped. The used columns are
    copied (``np.take``: about twice as fast as fancy indexing) a block of rows at a time, so
    the working memory is a block's, not a copy of *P*, which for multinomial candidates
    (n, J, C) is the largest array of a fit.

    Examples
    --------
    >>> P = np.array([[1.0, 9.0, np.nan], [3.0, 5.0, np.nan]])
    >>> weighted_columns(P, np.array([0.25, 0.75, 0.0]))
    array([7. , 4.5])
    """
    used = np.flatnonzero(weights > 0)
    if not isinstance(P, np.ndarray):  # a dask array stays lazy: its chunks bound the memory
        return np.tensordot(np.take(P, used, axis=1), weights[used], axes=([1], [0]))
    out = np.empty(P.shape[:1] + P.shape[2:])
    for start in range(0, len(P), _COMBINE_ROWS):
        rows = slice(start, start + _COMBINE_ROWS)
        out[rows] = np.tensordot(np.take(P[rows], used, axis=1), weights[used],
                                 axes=([1], [0]))
    return out


def observed_probability(y: np.ndarray, P: np.ndarray, multiclass: bool) -> np.ndarray:
    """Probability each prediction gives the observed class.

    Parameters
    ----------
    y : ndarray (n,)
        0/1 values (binomial) or integer class codes (multinomial).
    P : ndarray
        Binomial P(y = 1) of shape (n,) or (n, J); multinomial class
        probabilities of shape (n, C) or (n, J, C).
    multiclass : bool

    Returns
    -------
    ndarray (n,) or (n, J)

    Examples
    --------
    >>> import numpy as np
    >>> observed_probability(np.array([1, 0]), np.array([0.8, 0.3]), False)
    array([0.8, 0.7])
    >>> observed_probability(np.array([2, 0]), np.array([[0.1, 0.2, 0.7], [0.5, 0.4, 0.1]]), True)
    array([0.7, 0.5])
    """
    if multiclass:
        if is_dask_collection(P):  # dask has no take_along_axis: a one-hot mask, exact too
            onehot = y.reshape((-1,) + (1,) * (P.ndim - 1)) == np.arange(P.shape[-1])
            return np.where(onehot, P, 0.0).sum(axis=-1)
        return np.take_along_axis(P, y.reshape((-1,) + (1,) * (P.ndim - 1)), axis=-1)[..., 0]
    y = y.reshape((-1,) + (1,) * (P.ndim - 1))
    if is_dask_collection(P):
        return np.where(y == 1, P, 1.0 - P)
    # np.where's values without its second (n, J) temporary
    observed = 1.0 - P
    np.copyto(observed, P, where=y == 1)
    return observed


def _one_hot(y: np.ndarray, n_classes: int) -> np.ndarray:
    return (y[:, None] == np.arange(n_classes)).astype(float)


def _spread(y: np.ndarray, P: np.ndarray) -> tuple[float, float]:
    """``(c, s)``: the median ``c`` of ``y`` and ``s = max |y - c|`` (the candidates' spread
    around ``c`` if ``y`` is constant, 1 if everything is)."""
    centre = float(np.median(y))
    spread = float(np.max(np.abs(y - centre)))
    if not spread > 0:
        spread = float(np.max(np.abs(P - centre)))
    return centre, spread if 0 < spread < np.inf else 1.0


def _power_of_two(value: float) -> float:
    """The power of two nearest ``value`` (> 0): dividing by it is exact."""
    return float(2.0 ** np.round(np.log2(value)))


def _standardise(y: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``((y - c) / s, (P - c) / s, s)`` for a centre ``c`` and spread ``s > 0`` of ``y``.

    On the simplex ``y - P w = (y - c) - (P - c 1') w`` for any ``c``, and a
    factor ``s`` scales ``|y - P w|`` without moving the argmin, so the weights
    of the squared and absolute losses cannot depend on either; solving on
    standardised values keeps the solvers' absolute tolerances, quadprog's
    positive-definiteness test and the Gram matrix's range (1e-155^2
    underflows, 1e155^2 overflows) away from the data's units. ``c`` is the
    median and ``s`` the largest ``|y - c|`` (the candidates' spread if ``y``
    is constant, 1 if everything is).
    """
    centre, spread = _spread(y, P)
    return (y - centre) / spread, (P - centre) / spread, spread


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """Squared error; for classes the mean over classes of ``(1[y = c] - p_c)^2`` (the Brier score
    divided by C, the paper's MSE), which for binomial is ``(y - p)^2``."""

    name: ClassVar[str] = "squared"
    solver: ClassVar[str] = "qp"
    families: ClassVar[tuple] = FAMILIES
    _originals: ClassVar[dict] = {
        "gaussian": "squared error",
        "poisson": "squared error",
        "binomial": "0-1 loss (Brier score)",
        "multinomial": "0-1 loss (Brier score)",
    }

    def _pointwise(self, y, pred):
        if self.multiclass:
            return ((_one_hot(y, pred.shape[1]) - pred) ** 2).mean(axis=1)
        return (y - pred) ** 2

    def form(self, y: np.ndarray, P: np.ndarray) -> LeastSquaresForm:
        n = len(y)
        if self.multiclass:
            # probabilities are already on a unit scale; the n * C squared errors are averaged
            C = P.shape[2]
            X = P.transpose(0, 2, 1).reshape(n * C, -1)
            return LeastSquaresForm(X, _one_hot(y, C).ravel(), n * C)
        # no copy of P: the form forms y - P chunk by chunk, divided by a power of two
        return LeastSquaresForm(P, y, n, _power_of_two(_spread(y, P)[1]))


@dataclass(frozen=True)
class CrossEntropyLoss(Loss):
    name: ClassVar[str] = "cross_entropy"
    solver: ClassVar[str] = "convex"
    families: ClassVar[tuple] = ("binomial", "multinomial")
    _originals: ClassVar[dict] = {"binomial": "log-loss", "multinomial": "log-loss"}

    def _pointwise(self, y, pred):
        return -np.log(np.maximum(observed_probability(y, pred, self.multiclass), EPS))

    def form(self, y: np.ndarray, P: np.ndarray) -> LogBarrierForm:
        A = observed_probability(y, P, self.multiclass)
        A = np.maximum(A, EPS, out=A if isinstance(A, np.ndarray) else None)  # no second copy
        return LogBarrierForm(A, np.ones(len(y)), np.zeros(A.shape[1]), 0.0, len(y))


def poisson_deviance_rows(y: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """Each row's Poisson deviance ``2 (y log(y / mu) - (y - mu))``, the means floored at EPS,
    to its last digits also where y and mu agree to many (counts of 1e12 fitted to 6 digits:
    ``y log y - y log mu`` lost 1e-4 of the deviance there): ``2 y phi(mu / y - 1)``
    (:func:`~pearlstats.weights.log_barrier.relative_excess`) for a count, ``2 mu`` for 0.

    *mean* is (n,) or (n, M); a (n,) *y* is then a column against each of its columns (a
    caller's (n, 1) *y* already is); ``0 log 0`` is 0.

    Examples
    --------
    >>> poisson_deviance_rows(np.array([0.0, 2.0]), np.array([1.0, 2.0]))
    array([2., 0.])
    """
    y = y[:, None] if np.ndim(mean) == 2 and np.ndim(y) == 1 else y
    mean = np.asarray(mean, dtype=float)
    y = np.asarray(y, dtype=float)
    out = np.empty(np.broadcast_shapes(y.shape, mean.shape))
    # a block of rows at a time: the terms' temporaries are a few copies of the block's means
    step = max(1, _DEVIANCE_BLOCK // max(1, out[:1].size))
    for start in range(0, len(out), step):
        rows = slice(start, start + step)
        y_rows = y[rows] if np.ndim(y) == out.ndim and len(y) == len(out) else y
        mean_rows = mean[rows] if np.ndim(mean) == out.ndim and len(mean) > 1 else mean
        count = np.where(y_rows > 0, y_rows, 1.0)  # rows of count 0 are set below
        part = relative_excess(np.maximum(mean_rows, EPS), count)
        part *= 2.0 * count
        zero = np.broadcast_to(y_rows == 0, part.shape)
        part[zero] = 2.0 * np.broadcast_to(mean_rows, part.shape)[zero]  # count 0: 2 mu
        out[rows] = part
    return out


# Entries of poisson_deviance_rows' output formed at a time (8 MiB of each temporary).
_DEVIANCE_BLOCK = 2**20


@dataclass(frozen=True)
class PoissonDevianceLoss(Loss):
    name: ClassVar[str] = "poisson_deviance"
    solver: ClassVar[str] = "convex"
    families: ClassVar[tuple] = ("poisson",)
    _originals: ClassVar[dict] = {"poisson": "Poisson deviance"}

    def _pointwise(self, y, pred):
        return poisson_deviance_rows(y, pred)

    def form(self, y: np.ndarray, P: np.ndarray) -> LogBarrierForm:
        return poisson_form(y, P)


def poisson_form(y: np.ndarray, P: np.ndarray, row_weights: np.ndarray | None = None
                 ) -> LogBarrierForm:
    """The Poisson deviance's weight objective (times *row_weights*) as a
    :class:`LogBarrierForm` written as deviations from each counted row's count
    (``shift``), so that it keeps its digits at large counts."""
    counted = y > 0
    v = np.ones(len(y)) if row_weights is None else row_weights
    zero = ~counted
    return LogBarrierForm(floored_rows(P, counted), 2.0 * (v * y)[counted],
                          2.0 * (v[zero] @ P[zero]), 0.0, len(y), shift=y[counted])


def floored_rows(P: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``np.maximum(P[rows], EPS)``, floored in place: one copy of the rows, not two."""
    A = P[rows]
    return np.maximum(A, EPS, out=A if isinstance(A, np.ndarray) else None)


def linear_predictor(pred: np.ndarray, multiclass: bool) -> np.ndarray:
    """Decision function recovered from stored probabilities, as the margin hinge reads it.

    Binomial: ``logit(p)`` (any shape). Multinomial: centred log
    probabilities ``log p_c - mean_k log p_k`` over the last axis; the
    Crammer-Singer loss only sees differences ``f_c - f_y`` within a row, so
    this equals ``log p_c - log p_0`` or any other per-row shift, and a convex
    combination of shifted rows is again shifted by a per-row constant.

    A float64 probability cannot be closer to 1 than ``2**-53``, so logits
    beyond ``LOGIT_LIMIT = 53 log 2 = 36.74`` (the logit of ``1 - 2**-53``)
    are not recoverable; both tails are clipped there (log probabilities are
    floored at ``-LOGIT_LIMIT``) so that relabelling the classes changes
    nothing. Within the limit the recovery is exact up to the rounding of
    the stored probabilities.

    Examples
    --------
    >>> import numpy as np
    >>> linear_predictor(np.array([0.5, 0.8, 0.0, 1.0]), False).round(4)
    array([  0.    ,   1.3863, -36.7368,  36.7368])
    """
    with np.errstate(divide="ignore"):
        if multiclass:
            logp = np.maximum(np.log(pred), -LOGIT_LIMIT)
            return logp - logp.mean(axis=-1, keepdims=True)
        return np.clip(np.log(pred) - np.log1p(-pred), -LOGIT_LIMIT, LOGIT_LIMIT)


def _probabilities(f: np.ndarray, multiclass: bool) -> np.ndarray:
    """Inverse of :func:`linear_predictor`: the logistic / softmax of decision values."""
    if multiclass:
        e = np.exp(f - f.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    return expit(f)


@dataclass(frozen=True)
class HingeLoss(Loss):
    """Hinge loss on the decision function (margins), solved as a linear programme.

    Binomial: ``max(0, 1 - s f)`` with ``s = 2y - 1`` and ``f = logit(p)``;
    multinomial: Crammer and Singer's ``max(0, 1 + max_{c != y} f_c - f_y)``
    on centred log probabilities (see :func:`linear_predictor`). The weights
    average the decision functions, ``f(w) = sum_j w_j f_j``, so the
    combined prediction is ``sigmoid(f(w))`` / ``softmax(f(w))``
    (:meth:`combine`), not the average of probabilities. The loss is flat
    beyond margin 1, so interior weights are possible (unlike
    ``hinge_probability``).
    """

    name: ClassVar[str] = "hinge"
    solver: ClassVar[str] = "lp"
    families: ClassVar[tuple] = ("binomial", "multinomial")
    _originals: ClassVar[dict] = {"binomial": "0-1 loss", "multinomial": "0-1 loss"}

    def _pointwise(self, y, pred):
        return self._margin_loss(y, linear_predictor(pred, self.multiclass))

    def _margin_loss(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        if self.multiclass:
            observed = np.take_along_axis(f, y[:, None], axis=1)[:, 0]
            rivals = np.where(_one_hot(y, f.shape[1]) == 1, -np.inf, f).max(axis=1)
            return np.maximum(0.0, 1.0 + rivals - observed)
        return np.maximum(0.0, 1.0 - (2.0 * y - 1.0) * f)

    def _decision(self, P: np.ndarray, weights: np.ndarray) -> np.ndarray:
        used = np.flatnonzero(weights > 0)  # failed candidates (NaN, weight 0) stay out
        F = linear_predictor(P[:, used], self.multiclass)
        return np.tensordot(F, weights[used], axes=([1], [0]))

    def combine(self, P: np.ndarray, weights: np.ndarray) -> np.ndarray:
        return _probabilities(self._decision(P, weights), self.multiclass)

    def objective(self, y: np.ndarray, P: np.ndarray, weights: np.ndarray) -> float:
        return float(np.mean(self._margin_loss(y, self._decision(P, weights))))

    def form(self, y: np.ndarray, P: np.ndarray) -> PiecewiseLinearForm:
        return _hinge_form(y, linear_predictor(P, self.multiclass), self.multiclass, scale=1.0)


@dataclass(frozen=True)
class ProbabilityHingeLoss(Loss):
    """Hinge loss on the score ``2p - 1`` (binomial) or on the probabilities (multinomial).

    The score never passes margin 1, so the binomial loss is ``2 |y - p|``
    and the multinomial one ``1 + max_{c != y} p_c - p_y``: both are linear
    in ``w`` on the simplex, so the optimum is a vertex and the weights
    select a single candidate (ties aside). Kept for comparison; use
    ``hinge`` for a margin hinge.
    """

    name: ClassVar[str] = "hinge_probability"
    solver: ClassVar[str] = "lp"
    families: ClassVar[tuple] = ("binomial", "multinomial")
    _originals: ClassVar[dict] = {"binomial": "0-1 loss", "multinomial": "0-1 loss"}

    def _pointwise(self, y, pred):
        if self.multiclass:
            observed = observed_probability(y, pred, True)
            rivals = np.where(_one_hot(y, pred.shape[1]) == 1, -np.inf, pred).max(axis=1)
            return np.maximum(0.0, 1.0 + rivals - observed)
        sign = 2.0 * y - 1.0
        return np.maximum(0.0, 1.0 - sign * (2.0 * pred - 1.0))

    def form(self, y: np.ndarray, P: np.ndarray) -> PiecewiseLinearForm:
        return _hinge_form(y, P, self.multiclass, scale=2.0)


def _hinge_form(y: np.ndarray, F: np.ndarray, multiclass: bool, scale: float):
    """Pieces 0 and ``1 + (F_c - F_y) w`` (multinomial) or 0 and ``1 - s (scale F - scale + 1) w``.

    ``scale = 2`` turns probabilities into the score ``2p - 1``; ``scale = 1``
    reads ``F`` as the decision function itself.
    """
    n, J = F.shape[:2]
    rows = np.arange(n)
    zero = (rows, np.zeros(n), np.zeros((n, J)))
    if multiclass:
        observed = np.take_along_axis(F, y.reshape(-1, 1, 1), axis=2)[..., 0]  # (n, J)
        row_of, class_of = np.nonzero(_one_hot(y, F.shape[2]) == 0)
        margin = (row_of, np.ones(len(row_of)), F[row_of, :, class_of] - observed[row_of])
    else:
        sign = 2.0 * y - 1.0
        # 1 - s (scale F w - (scale - 1)) with sum(w) = 1
        margin = (rows, 1.0 + (scale - 1.0) * sign, -scale * sign[:, None] * F)
    return PiecewiseLinearForm(*(np.concatenate(parts) for parts in zip(zero, margin)), n_obs=n)


@dataclass(frozen=True)
class AbsoluteLoss(Loss):
    name: ClassVar[str] = "absolute"
    solver: ClassVar[str] = "lp"
    families: ClassVar[tuple] = ("gaussian", "poisson")
    _originals: ClassVar[dict] = {"gaussian": "absolute error", "poisson": "absolute error"}

    def _pointwise(self, y, pred):
        return np.abs(y - pred)

    def form(self, y: np.ndarray, P: np.ndarray) -> PiecewiseLinearForm:
        n = len(y)
        t, X, spread = _standardise(y, P)  # HiGHS' tolerances are absolute (1e-7)
        rows = np.concatenate([np.arange(n), np.arange(n)])
        pieces = np.concatenate([t, -t]), np.concatenate([-X, X])
        return PiecewiseLinearForm(rows, *pieces, n, spread)


LOSSES = {
    cls.name: cls
    for cls in (SquaredLoss, CrossEntropyLoss, PoissonDevianceLoss, HingeLoss, ProbabilityHingeLoss,
                AbsoluteLoss)
}
# Each family's default loss (the weights' objective when ``loss=None``). Held here, not read
# from the families, so that the losses do not import the families that import them.
DEFAULT_LOSSES = MappingProxyType({"gaussian": "squared", "binomial": "cross_entropy",
                                   "multinomial": "cross_entropy",
                                   "poisson": "poisson_deviance"})


def get_loss(name: str | None, family: str) -> Loss:
    """Look up a surrogate loss for a family.

    Parameters
    ----------
    name : str or None
        One of ``LOSSES``; None picks the family's default (gaussian: squared,
        binomial/multinomial: cross_entropy, poisson: poisson_deviance).
    family : str
        ``"gaussian"``, ``"binomial"``, ``"multinomial"`` or ``"poisson"``.

    Returns
    -------
    Loss

    Raises
    ------
    OptionError
        Unknown family, unknown loss, or a loss that does not apply to the family.

    Examples
    --------
    >>> get_loss(None, "poisson").name
    'poisson_deviance'
    >>> get_loss("hinge", "multinomial").solver
    'lp'
    """
    if family not in FAMILIES:
        raise OptionError(f"unknown family={family!r}; use one of {list(FAMILIES)}")
    valid = [key for key, cls in LOSSES.items() if family in cls.families]
    if name is None:
        name = DEFAULT_LOSSES[family]
    if not isinstance(name, str) or name not in LOSSES:
        raise OptionError(f"unknown loss={name!r}; for family {family!r} use one of {valid}")
    if name not in valid:
        raise OptionError(f"loss={name!r} does not apply to family {family!r}; use one of {valid}")
    return LOSSES[name](family)


def mean_squared_error(y: ArrayLike, predictions: ArrayLike, family: str) -> float:
    """The paper's MSE: the mean over rows (and, for classes, over classes) of squared errors.

    Gaussian / Poisson ``mean (y - mu)^2``; binomial ``mean (y - p)^2``;
    multinomial ``mean_i mean_c (1[y_i = c] - p_ic)^2`` (the multi-class
    Brier score divided by the number of classes C). This is the risk of the
    ``squared`` loss, so the MSE in evaluations and in the summary agree.

    Parameters
    ----------
    y : array_like (n,)
        Response in the family's coding (0/1, class codes 0..C-1, values).
    predictions : array_like (n,) or (n, C)
        Means, P(y = 1), or class probabilities.
    family : str

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> mean_squared_error(np.array([0, 2]), np.array([[1.0, 0, 0], [0, 0.5, 0.5]]), "multinomial")
    0.08333333333333333
    """
    return get_loss("squared", family).risk(y, predictions)
