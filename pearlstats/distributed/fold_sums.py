"""A pass's loss and gradient sums split by fold, so that the fold fits need no starting pass.

The all-rows fit of a candidate ends at a point where every fold fit then
starts (:mod:`pearlstats.distributed.newton`). Fold k's training sums there are
the all-rows sums less fold k's rows, so a pass of the all-rows fit that also
returns its sums over each fold's rows gives every fold problem its loss and
gradient at the start: the first pass of the fold fits is then a step, not an
evaluation (the in-memory engine does the same: ``NewtonResult.fold_values``).

The partition's rows are put in fold order first (:func:`fold_order`), so each
fold's rows are one contiguous slice and the split costs the same products as
the unsplit gradient.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fold_order", "add_fold_sums", "training_sums"]


def fold_order(folds: np.ndarray, labels: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """The rows in fold order, and each label's slice ``bounds[k]:bounds[k + 1]`` of them.

    Parameters
    ----------
    folds : ndarray (n,)
        Each row's fold label (every one among *labels*).
    labels : sequence of int
        The fold labels, in the fits' order.

    Returns
    -------
    order : ndarray (n,)
        Row positions sorted by the position of their label in *labels* (stable).
    bounds : ndarray (K + 1,)
    """
    position = np.searchsorted(np.sort(labels), folds)
    slot = np.argsort(labels, kind="stable")[position]  # each row's position in *labels*
    order = np.argsort(slot, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(slot, minlength=len(labels)))])
    return order, bounds


def add_fold_sums(out: dict, cols: np.ndarray, loss: np.ndarray, residual: np.ndarray,
                  ZS: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Sums of *loss* (C, n) and gradients ``residual @ ZS`` over each fold's rows, into *out*.

    *residual* is (C, n) or (C, m, n) (multinomial, m = classes - 1, gradients class-major).
    ``out["f_by"]`` (all columns, K) and ``out["g_by"]`` (all columns, K, d) receive them at
    rows *cols*. Returns the gradients summed over the folds (C, width), the pass's own.
    """
    width = ZS.shape[1] * (residual.shape[1] if residual.ndim == 3 else 1)
    for k in range(bounds.size - 1):
        rows = slice(bounds[k], bounds[k + 1])
        out["f_by"][cols, k] = loss[..., rows].sum(axis=-1)
        out["g_by"][cols, k, :width] = (residual[..., rows] @ ZS[rows]).reshape(len(cols), width)
    return out["g_by"][cols, :, :width].sum(axis=1)


def training_sums(by_fold: np.ndarray) -> np.ndarray:
    """Each fold's training sums from the sums over each fold's rows: (Q, K, ...) -> (Q, K, ...).

    Fold k's training rows are the other folds' rows: sums of the others, not the total less
    fold k (no cancellation).
    """
    K = by_fold.shape[1]
    out = np.empty_like(by_fold)
    for k in range(K):
        out[:, k] = by_fold[:, [j for j in range(K) if j != k]].sum(axis=1)
    return out
