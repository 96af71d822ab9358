"""Multinomial (MNLogit) on dask partitions: the classes, the Newton sums, out-of-fold passes.

The classes are the response's distinct values, sorted as the in-memory
:class:`~pearlstats.families.EncodedResponse` codes them (one pass, which also
counts every class in every fold: the class-coverage check of the in-memory
folds and the intercept-only model need nothing more). Each partition codes its
response 0..C-1 against them.

The Newton passes are those of :mod:`pearlstats.distributed.newton`, with
:func:`candidate_sums` in place of the binomial sums: the parameters of one
problem are the flattened, class-major ``(C - 1, s)`` coefficients of
:mod:`pearlstats.engines.multinomial` (class 0 the reference, as statsmodels'
``MNLogit``), so the pass driver, its penalty, standardisation and separation
ladder are the binomial ones.

:class:`MultinomialOof` offers the interface of
:class:`~pearlstats.distributed.oof.OofPasses` for out-of-fold class
probabilities (rows, J, C): the squared loss's ``E'E`` (over rows and classes,
divided by C: the mean over classes of :class:`~pearlstats.weights.losses.SquaredLoss`),
the risks and the cross-entropy barrier of the averaged probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..backends.partitions import tree_sum
from ..design.folds import check_class_coverage
from ..engines.multinomial import log_softmax
from ..exceptions import ResponseError
from ..weights.losses import EPS
from .data import partition_folds, partition_inputs, partition_response
from .fold_sums import add_fold_sums
from .oof import fold_scores

__all__ = ["Classes", "MultinomialOof", "candidate_sums", "class_codes", "class_level",
           "class_pass", "oof_probabilities"]


# ---- the classes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Classes:
    """The response's classes and how many rows of each every fold holds.

    Attributes
    ----------
    levels : ndarray (C,)
        The distinct response values, sorted: class c is ``levels[c]``.
    counts : ndarray of int (K, C)
        Rows of each class in each fold (folds in label order 0..K-1).
    """

    levels: np.ndarray
    counts: np.ndarray

    @property
    def n_classes(self) -> int:
        return len(self.levels)

    def frequencies(self) -> np.ndarray:
        """(K, C) class frequencies of each fold's training rows: the intercept-only model."""
        training = self.counts.sum(axis=0) - self.counts
        return training / training.sum(axis=1, keepdims=True)


def _class_part(frame, blocks, offset, spec, fold_spec, env):
    y = partition_response(spec, "multinomial", frame, env)
    folds = partition_folds(frame, offset, len(y), fold_spec)
    y, folds = y[folds >= 0], folds[folds >= 0]  # fold -1: rows a nested re-run leaves out
    counts = {}
    for k in np.unique(folds):
        values, number = np.unique(y[folds == k], return_counts=True)
        counts[int(k)] = {float(v): int(c) for v, c in zip(values, number)}
    return {"counts": counts}


def class_pass(rows: Any, spec: Any, fold_spec: Any, env: Any) -> Classes:
    """One pass: the distinct response values and their counts per fold, checked.

    Raises
    ------
    ResponseError
        Fewer than 2 classes, or a class with a single row (as in memory).
    FoldError
        Some fold's training rows lack a class (as in memory).
    """
    total = tree_sum(rows.tasks(_class_part, spec, fold_spec, env))["counts"]
    labels = sorted(total)
    levels = np.array(sorted(set().union(*(total[k] for k in labels))), dtype=float)
    if levels.size < 2:
        raise ResponseError(
            f"the multinomial family needs at least 2 classes, got {levels.tolist()}"
        )
    counts = np.array([[total[k].get(v, 0) for v in levels] for k in labels], dtype=np.int64)
    # The in-memory check on two rows per (fold, class) at most: the same verdicts and messages.
    kept = np.minimum(counts, 2)
    codes = np.repeat(np.tile(np.arange(levels.size), len(labels)), kept.ravel())
    folds = np.repeat(np.repeat(np.asarray(labels), levels.size), kept.ravel())
    check_class_coverage(codes, folds, [class_level(v) for v in levels],
                         **({"advice": _HASHED_ADVICE} if _hashed(fold_spec) else {}))
    return Classes(levels, counts)


_HASHED_ADVICE = ("the folds of dask data are hashed from the rows' positions (an int cv does "
                  "not stratify them), so a rare class can miss a fold's training rows: merge "
                  "or drop rare classes, give a fold column, or fit the rows in memory, where "
                  "an int cv stratifies")


def _hashed(fold_spec: Any) -> bool:
    """Whether the folds are hashed from row positions (an int cv), not a given column."""
    while fold_spec[0] == "relabel":
        fold_spec = fold_spec[1]
    return fold_spec[0] == "hash"


def class_level(value: float) -> Any:
    """A class as the in-memory levels of an integer response show it (2, not 2.0)."""
    return int(value) if float(value).is_integer() else float(value)


def class_labels(levels: Any) -> list:
    """The classes as the in-memory fit shows them: integers where every class is a whole
    number (an integer response), else floats for all (a response with a fraction among its
    values, as numpy reads it: not [-3, 1.5, 2] but [-3.0, 1.5, 2.0])."""
    values = [float(v) for v in levels]
    if all(v.is_integer() for v in values):
        return [int(v) for v in values]
    return values


def class_codes(y: np.ndarray, levels: np.ndarray, new_rows: bool = False) -> np.ndarray:
    """Codes 0..C-1 of a partition's response values among the fit's sorted *levels*.

    A value outside them is a :class:`ResponseError`: in the fit's own passes the data changed
    between passes; in *new_rows* (evaluation) it is a class the fit never saw.
    """
    codes = np.minimum(np.searchsorted(levels, y), len(levels) - 1)
    unknown = levels[codes] != y
    if unknown.any():
        values = [class_level(v) if isinstance(v, (int, float, np.number)) else v
                  for v in np.unique(y[unknown])[:10]]
        if new_rows:
            raise ResponseError(f"response values {values} were not classes at fit time "
                                f"({levels[:20].tolist()}); evaluate rows of those classes only")
        raise ResponseError(
            f"response value(s) {values} are not among the classes "
            f"{levels[:20].tolist()} the class pass found; the data changed between passes"
        )
    return codes


# ---- Newton sums ---------------------------------------------------------------------------------
# (column, class, row) values one batch of trial columns may hold: 16M doubles, 128 MB, a few
# times over for the temporaries. A 10-class pass over a 10^5-row partition then takes about
# 16 trial columns at once; the binomial pass holds all of a candidate's (column, row) values.
BATCH_VALUES = 2**24

def _hessian(ZS: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """``sum_i (diag(p_i) - p_i p_i') (x) x_i x_i'`` over rows (classes 1..C-1), class-major.

    As :func:`pearlstats.engines.multinomial._make_loss` forms it: one symmetric product.
    """
    m, (n, s) = prob.shape[0], ZS.shape
    Q = (prob[:, None, :] * ZS.T[None]).reshape(m * s, n)
    H = -(Q @ Q.T)
    diagonal = np.matmul(Q.reshape(m, s, n), ZS)
    for a in range(m):
        H[a * s:(a + 1) * s, a * s:(a + 1) * s] += diagonal[a]
    return H


def candidate_sums(ZS: np.ndarray, codes: np.ndarray, train: np.ndarray, n_classes: int,
                   request: dict, mine: np.ndarray, out: dict) -> None:
    """:func:`pearlstats.distributed.newton._candidate_sums` for the multinomial likelihood.

    The trial columns are taken a batch at a time, so that their (column, class, row)
    values stay within :data:`BATCH_VALUES` (C times the binomial pass's would not fit
    a worker for 10 classes). ``emax`` is the largest ``-log(-log p_own)`` over training
    rows: above :data:`~pearlstats.engines.glm.SEPARATION_ETA` exactly where the
    in-memory check sees a row's own-class log-probability above ``-exp(-SEPARATION_ETA)``.
    """
    cols = np.flatnonzero(np.isin(request["columns"], mine))
    batch = max(1, BATCH_VALUES // (n_classes * max(len(codes), 1)))
    for start in range(0, cols.size, batch):
        _column_sums(ZS, codes, train, n_classes, request, mine, cols[start:start + batch], out)


def _column_sums(ZS, codes, train, n_classes, request, mine, cols, out) -> None:
    """The sums of :func:`candidate_sums` for the trial columns *cols* (global positions)."""
    s, m = ZS.shape[1], n_classes - 1
    local = np.searchsorted(mine, request["columns"][cols])
    t = request["t"][cols]
    eta = request["theta"][mine[local], : m * s].reshape(-1, m, s) @ ZS.T  # (cols, m, n)
    if t.any():
        eta -= t[:, None, None] * (request["step"][mine[local], : m * s].reshape(-1, m, s) @ ZS.T)
    w = train[request["fold"][mine][local]]
    logp = log_softmax(eta)
    del eta
    loss = -np.take_along_axis(logp, codes[None, None, :], axis=1)[:, 0]  # (cols, n)
    out["f"][cols] = np.sum(w * loss, axis=1)
    if "emax" in out:
        with np.errstate(divide="ignore"):
            extreme = np.where(w > 0, -np.log(loss), -np.inf)
        out["emax"][cols] = extreme.max(axis=1, initial=-np.inf)
    prob = np.exp(logp[:, 1:])  # (cols, m, n)
    del logp
    firsts = request["first"][mine]
    for a in np.flatnonzero(request["hessian"][mine] & np.isin(firsts, cols)):
        c = int(np.searchsorted(cols, firsts[a]))
        rows = w[c] > 0
        out["H"][out["slot"][mine[a]], : m * s, : m * s] = _hessian(ZS[rows], prob[c][:, rows])
    prob -= np.arange(1, n_classes)[:, None] == codes[None, :]  # p - 1[y = c], classes 1..C-1
    prob *= w[:, None, :]
    if "f_by" in out:  # the all-rows fit's passes: also by fold (rows in fold order)
        out["g"][cols, : m * s] = add_fold_sums(out, cols, w * loss, prob, ZS, out["bounds"])
    else:
        out["g"][cols, : m * s] = (prob @ ZS).reshape(len(cols), m * s)


# ---- out-of-fold class probabilities -------------------------------------------------------------
def oof_probabilities(X: np.ndarray, folds: np.ndarray, labels: list,
                      coefs: np.ndarray) -> np.ndarray:
    """Class probabilities (rows, J, C) of each row by its fold's coefficients (K, p, J, C - 1)."""
    J, m = coefs.shape[2], coefs.shape[3]
    P = np.empty((len(X), J, m + 1))
    for position, k in enumerate(labels):
        r = folds == k
        eta = (X[r] @ coefs[position].reshape(X.shape[1], J * m)).reshape(-1, J, m)
        P[r] = np.exp(log_softmax(eta.transpose(1, 2, 0))).transpose(2, 0, 1)
    return P


def _squared_rows(codes: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``mean_c (1[y = c] - p_c)^2`` per row: (rows, J) of (rows, J, C), (rows,) of (rows, C)."""
    onehot = np.eye(P.shape[-1])[codes]
    E = (onehot[:, None, :] if P.ndim == 3 else onehot) - P
    return np.mean(E * E, axis=-1)


def _row_losses(loss: Any, codes: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Per-row losses (rows, J) of class probabilities (rows, J, C), or (rows,) of (rows, C)."""
    if loss.name == "squared":
        return _squared_rows(codes, P)
    return loss.row_losses(codes, P)


def _oof_part(frame, blocks, offset, spec, fold_spec, labels, coefs, levels, env, rows_sums,
              *args):
    """``rows_sums(codes, P, folds, *args)`` added up over blocks of the partition's rows.

    The class probabilities (rows, J, C) are formed a block of rows at a time, within
    :data:`BATCH_VALUES` values (C times the binomial pass's (rows, J) would not fit a
    worker for 10 classes and a large pool).
    """
    X, y, folds = partition_inputs(frame, blocks, offset, spec, "multinomial", fold_spec, env)
    codes = class_codes(y, levels)
    step = max(1, BATCH_VALUES // (coefs.shape[2] * (coefs.shape[3] + 1)))
    total = None
    # At least one (possibly empty) block: a partition whose rows are all left out (fold -1,
    # e.g. a re-run's held-out fold) still returns zero sums, not None, to the tree sum.
    for start in range(0, max(len(codes), 1), step):
        block = slice(start, start + step)
        P = oof_probabilities(X[block], folds[block], labels, coefs)
        sums = rows_sums(codes[block], P, folds[block], *args)
        total = sums if total is None else {key: total[key] + sums[key] for key in total}
    return total


def _null_sums(losses: np.ndarray) -> dict:
    """The intercept-only model's summed row losses and their squares (for its risk and SE)."""
    return {"null": float(losses.sum()), "null2": float(losses @ losses)}


def _residual_sums(codes, P, folds, null) -> dict:
    C = P.shape[2]
    E = np.eye(C)[codes][:, None, :] - P
    L = np.mean(E * E, axis=2)
    EtE = np.einsum("ijc,ikc->jk", E, E) / C
    out = {"EtE": EtE, "n": len(codes), "E4": np.sum(L * L, axis=0)}
    return out | _null_sums(_squared_rows(codes, null[folds]))


def _observed(codes: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``A`` (rows, J): each candidate's probability of the row's class, floored at EPS."""
    return np.maximum(np.take_along_axis(P, codes[:, None, None], axis=2)[:, :, 0], EPS)


def _risk_sums(codes, P, folds, loss, null) -> dict:
    pointwise = _row_losses(loss, codes, P)
    out = {"n": len(codes), "risk": pointwise.sum(axis=0), "risk2": np.sum(pointwise**2, axis=0)}
    out |= _null_sums(_row_losses(loss, codes, null[folds]))
    if loss.solver == "convex":
        out["vertex"] = -np.sum(np.log(_observed(codes, P)), axis=0)
    return out


def _barrier_sums(codes, P, folds, loss, w) -> dict:
    A = _observed(codes, P)
    u = A @ w
    H = (A / u[:, None] ** 2).T @ A
    combined = np.tensordot(P, w, axes=([1], [0]))
    return {"f": -float(np.sum(np.log(u))), "g": -(A.T @ (1.0 / u)), "H": H,
            "objective": float(_row_losses(loss, codes, combined).sum())}


@dataclass(frozen=True)
class MultinomialOof:
    """:class:`~pearlstats.distributed.oof.OofPasses` for class probabilities.

    Attributes
    ----------
    rows, spec, fold_spec, labels, env
        As for OofPasses.
    coefs : ndarray (K, p, J, C - 1)
        Each fold's MNLogit coefficients of every candidate.
    levels : ndarray (C,)
        The classes (sorted response values).
    null : ndarray (K, C)
        The intercept-only model of each fold: the class frequencies of its training rows.
    """

    rows: Any
    spec: Any
    fold_spec: Any
    labels: list
    coefs: np.ndarray
    levels: np.ndarray
    null: np.ndarray
    env: Any = None

    def _sum(self, rows_sums, *extra) -> dict:
        return tree_sum(self.rows.tasks(
            _oof_part, self.spec, self.fold_spec, self.labels, self.coefs, self.levels, self.env,
            rows_sums, *extra,
        ))

    def only(self, candidates: np.ndarray) -> MultinomialOof:
        """The same passes for a subset of the candidates."""
        return replace(self, coefs=self.coefs[:, :, candidates])

    def residuals(self) -> dict:
        """``E'E / C`` over rows and classes, the row count, the sums of squared row losses,
        and the intercept-only model's ``null`` and ``null2`` sums (squared loss)."""
        return self._sum(_residual_sums, self.null)

    def risks(self, loss: Any) -> dict:
        """As :meth:`OofPasses.risks <pearlstats.distributed.oof.OofPasses.risks>`."""
        return self._sum(_risk_sums, loss, self.null)

    def fold_scores(self, loss: Any, W: np.ndarray) -> np.ndarray:
        """As :meth:`OofPasses.fold_scores <pearlstats.distributed.oof.OofPasses.fold_scores>`
        (the class codes scored by their averaged class probabilities)."""
        return self._sum(fold_scores, loss, W)["scores"]

    def barrier(self, loss: Any, w: np.ndarray, n: int) -> tuple:
        """The cross-entropy of the averaged probabilities at *w*: value, gradient, Hessian
        (row means) and the loss of the averaged probabilities."""
        total = self._sum(_barrier_sums, loss, w)
        return total["f"] / n, total["g"] / n, total["H"] / n, total["objective"] / n
