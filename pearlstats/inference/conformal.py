"""Conformal prediction for the averaged model: CV+ intervals and adaptive prediction sets.

Prediction intervals use CV+ (Barber, Candès, Ramdas & Tibshirani 2021,
"Predictive inference with the jackknife+", Ann. Statist. 49(1), 486-507),
which needs only the out-of-fold predictions and the K fold models; prediction
sets for classes use the same inputs with the adaptive conformity score of
Romano, Sesia & Candès (2020, "Classification with valid and adaptive
coverage", NeurIPS 33). Their coverage is marginal: over the training rows and
a new row drawn together, not conditional on the new row's x.

Observation weights of the training rows (``row_weights``, ``weight_type``): frequency
weights count rows, so a row of weight w is w rows in the quantile (an integer weight
gives exactly the bounds of the data with the row repeated in its fold); variance weights
(row variance ``sigma^2 / w``) scale the conformity scores to ``sqrt(w_i) |y_i - mu_i|``,
and a new row of variance weight ``w`` gets the scores divided by ``sqrt(w)``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..exceptions import DataError, FoldError, OptionError, format_positions
from ._checks import _check_alpha

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# Elements per block when a CV+ order statistic is taken over (n, m) values;
# 2**22 doubles is 32 MB, small enough next to the other engineers' jobs.
_BLOCK_ELEMENTS = 2**22


def _cv_plus_ranks(alpha: float, n: int) -> tuple[int, int]:
    """Ranks ``floor(alpha (n+1))`` and ``ceil((1-alpha)(n+1))`` of Barber et al. (2021)."""
    # Round away float noise first: (1 - 0.1) * 200 is 180.00000000000003 in binary.
    upper = math.ceil(round((1.0 - alpha) * (n + 1), 9))
    # n + 1 - ceil(x) = floor(n + 1 - x) exactly for integer n + 1.
    return n + 1 - upper, upper


def _weighted_ranks(alpha: float, total: float) -> tuple[float, float]:
    """The ranks of :func:`_cv_plus_ranks` for *total* rows counted with frequency weights."""
    if float(total).is_integer():  # integer weights: exactly the ranks of the repeated rows
        return _cv_plus_ranks(alpha, int(total))
    return (math.floor(round(alpha * (total + 1), 9)),
            math.ceil(round((1.0 - alpha) * (total + 1), 9)))


def _weighted_kth_smallest(fold_pred: np.ndarray, folds: np.ndarray, scores: np.ndarray,
                           weights: np.ndarray, rank: float) -> np.ndarray:
    """For each new row j, the *rank*-th smallest of ``fold_pred[folds[i], j] + scores[i]``
    with row i counted ``weights[i]`` times: the smallest value whose weight at or below it
    reaches *rank* (for integer weights, the order statistic of the repeated rows)."""
    n, m = scores.size, fold_pred.shape[1]
    out = np.empty(m)
    # Integer weights sum exactly; the relative slack only absorbs the rounding of others.
    target = rank * (1.0 - 1e-12)
    step = max(1, _BLOCK_ELEMENTS // n)
    for start in range(0, m, step):
        cols = slice(start, min(m, start + step))
        values = fold_pred[:, cols][folds] + scores[:, None]
        order = np.argsort(values, axis=0, kind="stable")
        first = (np.cumsum(weights[order], axis=0) >= target).argmax(axis=0)
        out[cols] = np.take_along_axis(values, order, axis=0)[first, np.arange(values.shape[1])]
    return out


def _lth_largest(fold_pred: np.ndarray, folds: np.ndarray, resid: np.ndarray,
                 count: int, scale: np.ndarray | None = None) -> np.ndarray:
    """For each new row j, the count-th largest of ``fold_pred[folds[i], j] + resid[i]``
    (``+ resid[i] * scale[j]`` with a positive *scale* per new row)."""
    # Within a fold the shift fold_pred[k, j] is common to all rows, so the count
    # largest values of the union come from each fold's count largest residuals:
    # selecting among those K * count values instead of all n gives the same number.
    keep = []
    for k in np.unique(folds):
        rows = np.flatnonzero(folds == k)
        if rows.size > count:
            rows = rows[np.argpartition(resid[rows], rows.size - count)[rows.size - count:]]
        keep.append(rows)
    rows = np.concatenate(keep)
    sub_folds, sub_resid = folds[rows], resid[rows]
    position = rows.size - count
    m = fold_pred.shape[1]
    out = np.empty(m)
    step = max(1, _BLOCK_ELEMENTS // rows.size)
    for start in range(0, m, step):
        cols = slice(start, min(m, start + step))
        shift = sub_resid[:, None] if scale is None else sub_resid[:, None] * scale[cols]
        values = fold_pred[:, cols][sub_folds] + shift
        # A positive scale per column keeps each fold's largest residuals the largest, so the
        # preselection above holds. Selection is O(n) per column where a sort would be O(n log n).
        out[cols] = np.partition(values, position, axis=0)[position]
    return out


def _check_cv_plus(y, oof_prediction, folds, new_fold_predictions):
    y_arr = np.asarray(y, dtype=float).ravel()
    oof = np.asarray(oof_prediction, dtype=float).ravel()
    fold_pred = np.asarray(new_fold_predictions, dtype=float)
    fold_arr = np.asarray(folds)
    n = y_arr.size
    if oof.size != n or fold_arr.size != n:
        raise DataError(f"y has {n} rows but oof_prediction has {oof.size} and folds "
                        f"{fold_arr.size}; give one of each per training row")
    if fold_pred.ndim == 1:
        fold_pred = fold_pred[:, None]
    if fold_pred.ndim != 2:
        raise DataError(f"new_fold_predictions has shape {fold_pred.shape}; give a (K, m) "
                        "array: row k is the fold-k model's prediction for each new row")
    for name, arr in (("y", y_arr), ("oof_prediction", oof)):
        bad = np.flatnonzero(~np.isfinite(arr))
        if bad.size:
            raise DataError(f"{name} is not finite at {format_positions(bad)}")
    if not np.all(np.isfinite(fold_pred)):
        raise DataError("new_fold_predictions has non-finite values")
    k = fold_pred.shape[0]
    if not np.issubdtype(fold_arr.dtype, np.integer) or fold_arr.min() < 0 or fold_arr.max() >= k:
        raise FoldError(f"folds must be integer fold indices 0..{k - 1} matching the {k} rows "
                        f"of new_fold_predictions; got values {np.unique(fold_arr)[:10].tolist()}")
    return y_arr, oof, fold_arr.ravel().astype(np.intp), fold_pred


def cv_plus_interval(
    y: ArrayLike,
    oof_prediction: ArrayLike,
    folds: ArrayLike,
    new_fold_predictions: ArrayLike,
    alpha: float = 0.1,
    *,
    family: str = "gaussian",
    integer: bool = False,
    row_weights: ArrayLike | None = None,
    weight_type: str | None = None,
    new_weights: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """CV+ prediction intervals (Barber, Candès, Ramdas & Tibshirani 2021).

    With ``R_i = |y_i - mu_{-k(i)}(x_i)|`` the out-of-fold residuals, the interval for
    a new row x is::

        lower = floor(alpha (n+1))-th smallest of  mu_{-k(i)}(x) - R_i,  i = 1..n
        upper = ceil((1-alpha)(n+1))-th smallest of mu_{-k(i)}(x) + R_i

    (-inf / +inf when the rank is below 1 / above n). Marginal coverage is at
    least ``1 - 2 alpha - sqrt(2/n)`` in general and close to ``1 - alpha`` in
    practice (Barber et al. 2021, Theorem 4 and section 5).

    Parameters
    ----------
    y : array-like, shape (n,)
        Training response.
    oof_prediction : array-like, shape (n,)
        ``mu_{-k(i)}(x_i)``: each training row's prediction by the procedure
        (here: the weighted average) fitted without its fold.
    folds : array-like of int, shape (n,)
        Fold index k(i) in 0..K-1 of each training row.
    new_fold_predictions : array-like, shape (K, m)
        Row k: the fold-k procedure's predictions ``mu_{-k}(x)`` for the new rows.
    alpha : float, default 0.1
        Miscoverage level.
    family : {"gaussian", "poisson"}
        ``"poisson"`` works on the count scale and clips the lower bound at 0
        (counts are never negative, so coverage is unchanged).
    integer : bool, default False
        For counts: report ``ceil(lower)`` and ``floor(upper)``, which contain
        exactly the same integers as the real interval (it may then be empty).
    row_weights : array-like, shape (n,), optional
        Positive observation weights of the training rows, of kind *weight_type*.
    weight_type : {"frequency", "variance"}, optional
        ``"frequency"``: row i counts ``w_i`` times, so the ranks are taken in the
        ``N = sum w`` repeated rows (``floor(alpha (N+1))`` and ``ceil((1-alpha)(N+1))``);
        an integer weight gives the bounds of the data with the row repeated in its fold.
        ``"variance"`` (``Var y_i = sigma^2 / w_i``): the scores are ``sqrt(w_i) R_i``,
        exchangeable when the weights are right, and ranked as n rows.
    new_weights : array-like, shape (m,), optional
        With variance weights: each new row's own variance weight (default 1); its
        interval is ``mu_{-k(i)}(x) -/+ sqrt(w_i / w_new) R_i``. Refused otherwise.

    Returns
    -------
    lower, upper : numpy.ndarray, shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> y = np.arange(10.0)
    >>> oof = y + np.array([1, -1] * 5) * np.arange(1, 11) / 10
    >>> folds = np.arange(10) % 2
    >>> lo, hi = cv_plus_interval(y, oof, folds, np.array([[0.0], [0.2]]), alpha=0.2)
    >>> lo.round(2).tolist(), hi.round(2).tolist()
    ([-0.8], [1.0])
    """
    _check_alpha(alpha)
    if family not in ("gaussian", "poisson"):
        raise OptionError(f"CV+ intervals are for family 'gaussian' or 'poisson', got "
                          f"{family!r}; classification needs prediction sets instead")
    y_arr, oof, fold_idx, fold_pred = _check_cv_plus(y, oof_prediction, folds,
                                                     new_fold_predictions)
    n, m = y_arr.size, fold_pred.shape[1]
    w, scale = _check_row_weights(row_weights, weight_type, new_weights, n, m)
    resid = np.abs(y_arr - oof)
    if weight_type == "frequency":
        lower, upper = _frequency_bounds(fold_pred, fold_idx, resid, w, alpha)
    else:
        if weight_type == "variance":
            resid = np.sqrt(w) * resid
        lo_rank, hi_rank = _cv_plus_ranks(alpha, n)
        # The lo-th smallest of mu - R is minus the lo-th largest of -mu + R (negation is
        # exact in floating point); the hi-th smallest of mu + R is its (n+1-hi)-th largest.
        lower = (-_lth_largest(-fold_pred, fold_idx, resid, lo_rank, scale) if lo_rank >= 1
                 else np.full(m, -np.inf))
        upper = (_lth_largest(fold_pred, fold_idx, resid, n + 1 - hi_rank, scale)
                 if hi_rank <= n else np.full(m, np.inf))
    if family == "poisson":
        lower = np.maximum(lower, 0.0)
        if integer:
            lower, upper = np.ceil(lower), np.floor(upper)
    elif integer:
        raise OptionError("integer=True is for counts; use it with family='poisson'")
    return lower, upper


def _check_row_weights(row_weights, weight_type, new_weights, n: int, m: int):
    """Checked training weights (or None) and the new rows' score scale ``1/sqrt(w_new)``."""
    if weight_type not in (None, "frequency", "variance"):
        raise OptionError(f"weight_type={weight_type!r}; use 'frequency', 'variance' or None")
    if (row_weights is None) != (weight_type is None):
        raise OptionError("give row_weights= and weight_type= together (or neither)")
    if new_weights is not None and weight_type != "variance":
        raise OptionError("new_weights= is a new row's variance weight, for weight_type="
                          "'variance'; a frequency weight does not change one row's interval")
    if row_weights is None:
        return None, None
    w = np.asarray(row_weights, dtype=float).ravel()
    if w.size != n or not np.all(np.isfinite(w) & (w > 0)):
        raise DataError(f"row_weights must be {n} positive finite numbers, one per training row")
    if weight_type == "frequency":
        return w, None
    new = np.ones(m) if new_weights is None else np.asarray(new_weights, dtype=float).ravel()
    if new.size != m or not np.all(np.isfinite(new) & (new > 0)):
        raise DataError(f"new_weights must be {m} positive finite numbers, one per new row")
    return w, 1.0 / np.sqrt(new)


def _frequency_bounds(fold_pred, fold_idx, resid, w, alpha):
    """CV+ bounds with row i counted ``w[i]`` times (-inf / +inf outside the ranks)."""
    m = fold_pred.shape[1]
    total = float(w.sum())
    lo_rank, hi_rank = _weighted_ranks(alpha, total)
    lower = (_weighted_kth_smallest(fold_pred, fold_idx, -resid, w, lo_rank) if lo_rank >= 1
             else np.full(m, -np.inf))
    upper = (_weighted_kth_smallest(fold_pred, fold_idx, resid, w, hi_rank)
             if hi_rank <= total else np.full(m, np.inf))
    return lower, upper


def aps_scores(proba: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Adaptive conformity scores of every class (Romano, Sesia & Candès 2020).

    ``E(x, y, u; pi) = sum of pi_c over the classes ranked above y + u * pi_y``,
    classes ranked by decreasing probability, ties broken by class order.

    Parameters
    ----------
    proba : array-like, shape (m, C)
        Class probabilities of each row.
    u : array-like, shape (m,)
        Uniform(0, 1) draws (1 for the non-randomised score).

    Returns
    -------
    numpy.ndarray, shape (m, C)
        Column c is the score the row would have if its class were c.

    Examples
    --------
    >>> aps_scores([[0.2, 0.5, 0.3]], [1.0]).round(2).tolist()
    [[1.0, 0.5, 0.8]]
    """
    proba = np.atleast_2d(np.asarray(proba, dtype=float))
    order = np.argsort(-proba, axis=1, kind="stable")
    ranked = np.take_along_axis(proba, order, axis=1)
    above = np.cumsum(ranked, axis=1) - ranked
    scores = np.empty_like(proba)
    np.put_along_axis(scores, order, above + np.asarray(u, dtype=float)[:, None] * ranked, axis=1)
    # With u = 1 the least likely class scores the full mass 1; float sums leave it an
    # ulp or so off, which would decide the tie between such scores at random.
    scores[np.abs(scores - 1.0) < 1e-12] = 1.0
    return scores


def _check_aps(y, oof_proba, folds, new_fold_proba):
    probs = np.asarray(oof_proba, dtype=float)
    fold_probs = np.asarray(new_fold_proba, dtype=float)
    if probs.ndim != 2 or fold_probs.ndim != 3 or fold_probs.shape[2] != probs.shape[1]:
        raise DataError(f"oof_proba has shape {probs.shape} and new_fold_proba "
                        f"{fold_probs.shape}; give (n, C) and (K, m, C) class probabilities")
    n, n_classes = probs.shape
    codes = np.asarray(y)
    if codes.shape != (n,) or not np.issubdtype(codes.dtype, np.integer):
        raise DataError(f"y must hold one integer class code per row of oof_proba ({n}), "
                        f"got shape {codes.shape} and dtype {codes.dtype}")
    bad = np.flatnonzero((codes < 0) | (codes >= n_classes))
    if bad.size:
        raise DataError(f"class codes at {format_positions(bad)} are outside 0..{n_classes - 1}")
    if not (np.all(np.isfinite(probs)) and np.all(np.isfinite(fold_probs))):
        raise DataError("class probabilities must be finite")
    fold_idx = np.asarray(folds)
    k = fold_probs.shape[0]
    if (fold_idx.shape != (n,) or not np.issubdtype(fold_idx.dtype, np.integer)
            or fold_idx.min() < 0 or fold_idx.max() >= k):
        raise FoldError(f"folds must be one integer fold index 0..{k - 1} per training row, "
                        f"matching the {k} fold models of new_fold_proba")
    return codes, probs, fold_idx.astype(np.intp), fold_probs


def aps_prediction_sets(
    y: ArrayLike,
    oof_proba: ArrayLike,
    folds: ArrayLike,
    new_fold_proba: ArrayLike,
    alpha: float = 0.1,
    *,
    randomize: bool = True,
    seed: int | np.random.SeedSequence | None = None,
    new_uniforms: ArrayLike | None = None,
    row_weights: ArrayLike | None = None,
) -> np.ndarray:
    """CV+ adaptive prediction sets for classes (Romano, Sesia & Candès 2020).

    With training scores ``E_i = E(x_i, y_i, U_i; pi_{-k(i)})`` from the
    out-of-fold probabilities (:func:`aps_scores`), class y is in the set of a
    new row x when::

        #{i : E_i < E(x, y, U; pi_{-k(i)})} < (1 - alpha)(n + 1)

    Marginal coverage is at least ``1 - 2 alpha`` less a small term (as for CV+)
    and near ``1 - alpha`` in practice.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Class codes 0..C-1 of the training rows.
    oof_proba : array-like, shape (n, C)
        Each training row's class probabilities from the fit without its fold.
    folds : array-like of int, shape (n,)
        Fold index of each training row.
    new_fold_proba : array-like, shape (K, m, C)
        The fold-k model's class probabilities for the new rows.
    alpha : float, default 0.1
    randomize : bool, default True
        Use uniform U (smaller sets, coverage near 1 - alpha); ``False`` sets
        U = 1 (larger, conservative sets).
    seed : int or numpy.random.Generator, optional
        Source of U: n draws for the training rows, then m for the new rows.
    new_uniforms : array-like of float in [0, 1], shape (m,), optional
        The new rows' U instead of the m draws from *seed* (with *randomize*):
        a caller can tie each row's U to the row itself, so that its set does
        not depend on the other rows predicted with it or their order.
    row_weights : array-like, shape (n,), optional
        Frequency weights of the training rows: row i counts ``w_i`` times, in the
        count of scores below and in ``N = sum w`` replacing n (with its one U; with
        ``randomize=False`` an integer weight is exactly the row repeated). Variance
        weights have no meaning for class scores and are not taken.

    Returns
    -------
    numpy.ndarray of bool, shape (m, C)
        Entry (j, c) says whether class c is in the set of new row j.

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([0, 1] * 10)
    >>> oof = np.where(y[:, None] == [0, 1], 0.9, 0.1)
    >>> new = np.array([[[0.95, 0.05]], [[0.9, 0.1]]])
    >>> aps_prediction_sets(y, oof, np.arange(20) % 2, new, 0.1, randomize=False)
    array([[ True, False]])
    """
    _check_alpha(alpha)
    codes, probs, fold_idx, fold_probs = _check_aps(y, oof_proba, folds, new_fold_proba)
    n, m = codes.size, fold_probs.shape[1]
    rng = np.random.default_rng(seed)
    u_train = rng.uniform(size=n) if randomize else np.ones(n)
    if not randomize:
        u_new = np.ones(m)
    elif new_uniforms is None:
        u_new = rng.uniform(size=m)
    else:
        u_new = np.asarray(new_uniforms, dtype=float)
        if u_new.shape != (m,):
            raise DataError(f"new_uniforms has shape {u_new.shape}; give one U per new row ({m},)")
    train = aps_scores(probs, u_train)[np.arange(n), codes]
    w = _check_row_weights(row_weights, None if row_weights is None else "frequency", None,
                           n, m)[0]
    beaten = np.zeros((m, probs.shape[1]), dtype=np.int64 if w is None else float)
    for k in range(fold_probs.shape[0]):
        # Training scores of fold k, sorted once, count how many lie strictly below.
        in_fold = np.flatnonzero(fold_idx == k)
        order = np.argsort(train[in_fold], kind="stable")
        below = np.searchsorted(train[in_fold][order], aps_scores(fold_probs[k], u_new),
                                side="left")
        if w is None:
            beaten += below
        else:  # the weight of the scores below: a prefix sum of the sorted rows' weights
            beaten += np.concatenate([[0.0], np.cumsum(w[in_fold][order])])[below]
    # count < (1 - alpha)(n + 1) for an integer count is count < ceil((1 - alpha)(n + 1)).
    total = n if w is None else float(w.sum())
    return beaten < _weighted_ranks(alpha, total)[1] * (1.0 if w is None else 1.0 - 1e-12)
