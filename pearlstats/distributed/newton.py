"""Distributed Newton for binomial, Poisson and multinomial candidates, passes spent where needed.

Each candidate is fitted on all rows first, and its K fold problems then start
from that optimum with its Hessian, as in the in-memory engine
(:mod:`pearlstats.engines.newton_cv`): fold problems are near their optima
from the start and take a few gradient-only (chord) steps. Both stages are run
by :func:`~pearlstats.distributed.driver.pass_newton`, whose every evaluation
is one distributed pass: each partition returns, for the problems still moving
only, the sums over its training rows of the negative log-likelihood and its
gradient at several step lengths of each line search, the Hessian where one is
asked for (on the candidate's standardised columns, padded to the widest
candidate: padded coordinates have gradient 0 and an identity Hessian), and
the largest training ``|eta|`` (for the separation check). The likelihood,
standardisation, ridge weights, start and separation rule are the in-memory
engine's (:mod:`pearlstats.engines.glm`), so the optima agree to the Newton
tolerance. A candidate separated on all rows is separated in every fold, whose
problems are then not fitted. Multinomial problems (``plan["classes"]``) have
``C - 1`` coefficients per column, class-major, and their partition sums are
:func:`pearlstats.distributed.multinomial.candidate_sums`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..backends.partitions import tree_sum
from ..engines._common import SEPARATION_RIDGES
from ..engines.glm import (
    SEPARATION_ETA,
    SEPARATION_MIN_ITER,
    SEPARATION_STEP,
    notes_for,
    separation_cause,
)
from ..engines.likelihood import row_terms, variance_of
from ..engines.moments import standardised_systems
from ..engines.multinomial import _notes as multinomial_notes
from ..engines.newton import NewtonResult, NewtonSystems
from ..engines.newton_cv import _ladder_entry, ridge_ladder, trouble_from_entries
from ..exceptions import SeparationError
from .data import partition_inputs
from .driver import pass_newton
from .fold_sums import add_fold_sums, fold_order, training_sums
from .multinomial import candidate_sums, class_codes
from .ols import feasible_candidates, to_original

__all__ = ["newton_coefficients", "newton_with_separation"]

def _candidate_sums(ZS, y, train, kind, request, mine, out) -> None:
    """The trial columns and Hessians of one candidate's requested problems, into *out*.

    Row quantities are laid out (trial, row): each trial's sums run over contiguous memory
    (numpy sums those pairwise, so f keeps its digits over many rows).
    """
    s = ZS.shape[1]
    cols = np.flatnonzero(np.isin(request["columns"], mine))
    local = np.searchsorted(mine, request["columns"][cols])
    t = request["t"][cols]
    eta = (request["theta"][mine, :s] @ ZS.T)[local]
    if t.any():  # (all zero: evaluations of the starting points)
        eta -= t[:, None] * (request["step"][mine, :s] @ ZS.T)[local]
    w = train[request["fold"][mine][local]]
    if "emax" in out and kind == "poisson":  # before row_terms overwrites eta by |eta|
        # the separation check's largest training -eta: Poisson means going to 0
        out["emax"][cols] = np.max(w * -eta, axis=1, initial=0.0)  # held-out rows: 0
    loss, mu = row_terms(kind, eta, y)
    out["f"][cols] = np.sum(w * loss, axis=1)
    if "emax" in out and kind != "poisson":
        out["emax"][cols] = np.max(w * eta, axis=1, initial=0.0)  # |eta| >= 0; zero rows
    for a in np.flatnonzero(request["hessian"][mine]):
        c = np.searchsorted(cols, request["first"][mine[a]])
        v = w[c] * variance_of(kind, mu[c])
        B = ZS * np.sqrt(v)[:, None]
        out["H"][out["slot"][mine[a]], :s, :s] = B.T @ B  # a product with itself: half the work
    mu -= y
    mu *= w
    if "f_by" in out:  # the all-rows fit's passes: also by fold (rows in fold order)
        out["g"][cols, :s] = add_fold_sums(out, cols, w * loss, mu, ZS, out["bounds"])
    else:
        out["g"][cols, :s] = mu @ ZS


def _standardised(X, plan, candidates) -> dict:
    """The partition's standardised designs (those the candidates need), column-major.

    Column-major so that each candidate's columns are copied as contiguous runs.
    """
    Z = {}
    for centre in {plan["candidates"][jj][1] for jj in candidates}:
        center, scale = plan["designs"][centre]
        Z[centre] = np.subtract(X, center, order="F")
        Z[centre] /= scale
    return Z


def _newton_part(frame, blocks, offset, spec, kind, fold_spec, env, labels, plan, request):
    """Sums over one partition's rows for the requested problems and trial points."""
    X, y, folds = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    C, d = len(request["columns"]), request["theta"].shape[1]
    # Hessians only for the problems that ask for one (a chord pass asks for none): out["slot"]
    # is each problem's row of out["H"]
    hessian = np.asarray(request["hessian"], dtype=bool)
    out = {"f": np.zeros(C), "g": np.zeros((C, d)), "H": np.zeros((hessian.sum(), d, d)),
           "slot": np.cumsum(hessian) - 1}
    if request["by_fold"]:
        order, out["bounds"] = fold_order(folds, labels)
        X, y, folds = X[order], y[order], folds[order]
        out["f_by"], out["g_by"] = np.zeros((C, len(labels))), np.zeros((C, len(labels), d))
    if kind == "multinomial":  # class codes 0..C-1, and the multinomial sums
        y = class_codes(y, plan["classes"])
    train = np.ones((len(labels) + 1, len(y)))  # (fold slot, row): 1 for training rows
    train[:-1] = folds[None, :] != np.asarray(labels)[:, None]
    candidates = np.unique(request["candidate"])
    Z = _standardised(X, plan, candidates)
    del X
    if request["emax"]:
        out["emax"] = np.zeros(C)
    for jj in candidates:
        S, centre = plan["candidates"][jj]
        mine = np.flatnonzero(request["candidate"] == jj)
        if kind == "multinomial":
            candidate_sums(Z[centre][:, S], y, train, len(plan["classes"]), request, mine, out)
        else:
            _candidate_sums(Z[centre][:, S], y, train, kind, request, mine, out)
    if request["emax"]:
        out["emax"] = (-out["emax"], out["emax"])  # combined by maximum
    out.pop("bounds", None)
    out.pop("slot")
    return out


class _Passes:
    """The distributed evaluation of :func:`~pearlstats.distributed.driver.pass_newton`."""

    def __init__(self, rows, args, problems, n_train, sizes, separates, by_fold=False):
        self.rows, self.args, self.separates = rows, args, separates
        self.candidate, self.fold = problems  # per problem: candidate position, fold slot
        self.n_train, self.sizes = n_train, sizes
        self.by_fold = by_fold  # also the sums over each fold's rows (:mod:`.fold_sums`)
        self.passes = 0

    def __call__(self, request: dict) -> dict:
        spec, kind, fold_spec, env, labels, plan = self.args
        problems = request["problems"]
        request = dict(
            request,
            candidate=self.candidate[problems],
            fold=self.fold[problems],
            emax=self.separates,
            by_fold=self.by_fold,
        )
        self.passes += 1
        total = tree_sum(
            self.rows.tasks(_newton_part, spec, kind, fold_spec, env, labels, plan, request)
        )
        per_column = self.n_train[problems[request["columns"]]]
        hessian = problems[request["hessian"]]  # total["H"] holds theirs only, in order
        H = total["H"] / self.n_train[hessian][:, None, None]
        for a, s in enumerate(self.sizes[hessian]):
            H[a, s:, s:] = np.eye(H.shape[1] - s)  # padded coordinates never move
        values = {
            "f": total["f"] / per_column,
            "g": total["g"] / per_column[:, None],
            "H": H,
            "emax": total["emax"][1] if self.separates else None,
        }
        if self.by_fold:  # sums, not means: each fold's training rows are counted later
            values["f_by"], values["g_by"] = total["f_by"], total["g_by"]
        return values


def _starts(kind, moments, designs, plan_candidates, slots, per_column=1) -> tuple:
    """Start points and ridge weights of the problems (candidate position, fold slot).

    *per_column* coefficients per column (C - 1 for multinomial, class-major), each class's
    block with the column's ridge weight.
    """
    intercept = designs[True].intercept
    d = max(S.size for S, _ in plan_candidates) * per_column
    mean_y = moments.response_means()
    weights_of = {centre: moments.penalties(design) for centre, design in designs.items()}
    theta0, penalty = np.zeros((len(slots[0]), d)), np.zeros((len(slots[0]), d))
    for q, (jj, k) in enumerate(zip(*slots)):
        S, centre = plan_candidates[jj]
        design = designs[centre]
        weights = weights_of[centre][k, S]
        penalty[q, : S.size * per_column] = np.tile(weights, per_column)
        if kind == "poisson" and centre:
            where = int(np.flatnonzero(S == intercept)[0])
            theta0[q, where] = np.log(max(mean_y[k], 1e-8)) / (
                design.intercept_value / design.scale[intercept]
            )
    return theta0, penalty


def _moment_start(kind, moments, designs, plan_candidates, candidates, theta0):
    """What the all-rows fits' first pass would give at their start, from the moments.

    A binomial or Poisson start has one linear predictor ``c`` on every row (0, or the
    Poisson intercept's ``log(mean y)``), so the loss, gradient and Hessian there are
    functions of ``Z'1``, ``Z'y`` and ``Z'Z`` of each fold's rows, which the moment pass
    already summed: ``sum L(c) - c y``, ``mu(c) Z'1 - Z'y`` and ``v(c) Z'Z``. None where a
    design has no intercept column (``Z'1`` is then not among the moments). Multinomial
    fits: :func:`_multinomial_moment_start`.

    Returns
    -------
    (which, f, g, H, (f_by, g_by)) or None
        Means over all rows (f, g, and H in theta, padded coordinates with an identity
        Hessian), and the sums over each fold's rows as :mod:`.fold_sums` keeps them.
    """
    if kind == "multinomial":
        return _multinomial_moment_start(moments, designs, plan_candidates, candidates, theta0)
    if kind not in ("binomial", "poisson") or any(
            designs[centre].intercept is None for _, centre in plan_candidates):
        return None
    K, (F, d) = len(moments.labels), theta0.shape
    folds = moments.folds
    y_sums = (folds.pilot[-1] + folds.mean[:, -1] * folds.unit[-1]) * folds.count  # (K,)
    systems = {centre: standardised_systems(folds, design) for centre, design in designs.items()}
    f_by, g_by = np.zeros((F, K)), np.zeros((F, K, d))
    H = np.zeros((F, d, d))
    for q, jj in enumerate(candidates):
        S, centre = plan_candidates[jj]
        design, (gram, cross) = designs[centre], systems[centre]
        z0 = design.intercept_value / design.scale[design.intercept]
        ones = gram[:, S, design.intercept] / z0  # Z'1 of each fold's rows (K, |S|)
        where = int(np.flatnonzero(S == design.intercept)[0]) if design.intercept in S else None
        c = 0.0 if where is None else theta0[q, where] * z0
        if kind == "binomial":
            row_loss, mu = np.logaddexp(0.0, c), 1.0 / (1.0 + np.exp(-c))
            variance = mu * (1.0 - mu)
        else:
            row_loss, mu = np.exp(c), np.exp(c)
            variance = mu
        f_by[q] = folds.count * row_loss - c * y_sums
        g_by[q, :, : S.size] = mu * ones - cross[:, S]
        H[q, : S.size, : S.size] = variance * gram[:, S][:, :, S].sum(axis=0) / moments.n
        H[q, S.size:, S.size:] = np.eye(d - S.size)  # padded coordinates, as the passes give
    f, g = f_by.sum(axis=1) / moments.n, g_by.sum(axis=1) / moments.n
    return np.arange(F), f, g, H, (f_by, g_by)


def _multinomial_moment_start(moments, designs, plan_candidates, candidates, theta0):
    """:func:`_moment_start` of multinomial fits, which start at 0: every class has p = 1/C.

    There the loss is ``log C`` per row, class a's gradient ``Z'1 / C - Z'1[y = a]`` and the
    Hessian ``(I / C - 11' / C^2) (x) Z'Z`` (classes 1..C-1, class-major), from the sums of
    the design by fold and class (:attr:`~pearlstats.distributed.ols.Moments.class_sums`).
    """
    sums = moments.class_sums
    if sums is None or theta0.any():
        return None
    K, C, p = sums.shape[0], sums.shape[1], sums.shape[2] - 1
    m, (F, d) = C - 1, theta0.shape
    counts = sums[:, :, p]  # (K, C)
    pilot = moments.folds.pilot[:p]
    grams = {centre: standardised_systems(moments.total, design)[0][0]
             for centre, design in designs.items()}
    curvature = np.eye(m) / C - 1.0 / C**2
    f_by, g_by, H = np.zeros((F, K)), np.zeros((F, K, d)), np.zeros((F, d, d))
    for q, jj in enumerate(candidates):
        S, centre = plan_candidates[jj]
        design = designs[centre]
        # Z'1[y = c] of each fold's rows: sum of (x - pilot) less the count times (centre - pilot)
        by_class = (sums[:, :, S] - counts[:, :, None] * (design.center[S] - pilot[S]))
        by_class /= design.scale[S]  # (K, C, |S|)
        width = m * S.size
        f_by[q] = counts.sum(axis=1) * np.log(C)
        g_by[q, :, :width] = (by_class.sum(axis=1)[:, None, :] / C - by_class[:, 1:]).reshape(
            K, width)
        H[q, :width, :width] = np.kron(curvature, grams[centre][np.ix_(S, S)]) / moments.n
        H[q, width:, width:] = np.eye(d - width)
    f, g = f_by.sum(axis=1) / moments.n, g_by.sum(axis=1) / moments.n
    return np.arange(F), f, g, H, (f_by, g_by)


def _per_column(plan: dict) -> int:
    """Coefficients per design column: C - 1 for multinomial (``plan["classes"]``), else 1."""
    classes = plan.get("classes")
    return 1 if classes is None else len(classes) - 1


def _phase(rows, args, moments, designs, plan_candidates, slots, ridge, warm=None, start=None,
           reuse=0.01, secant=False, by_fold=False, known=None):
    """One :func:`pass_newton` run over the problems *slots* = (candidate positions, fold slots).

    *by_fold*: the passes also sum by fold (kept at each problem's last point); *known*:
    ``(which, f, g)``, loss means and gradients of problems at their start (no pass for it).
    The all-rows fits (*by_fold* and no *start*) take their first values and Hessian from
    the moments where :func:`_moment_start` can.
    """
    kind = args[1]
    per_column = _per_column(args[5])
    slots = (np.asarray(slots[0], dtype=int), np.asarray(slots[1], dtype=int))
    theta0, penalty = _starts(kind, moments, designs, plan_candidates, slots, per_column)
    if start is not None:
        given, values = start
        theta0[given] = values
    elif by_fold:  # the all-rows fits: their first pass, from the moments where it can be
        first = _moment_start(kind, moments, designs, plan_candidates, slots[0], theta0)
        if first is not None:
            which, f, g, H, sums = first
            warm, known = (which, H), (which, f, g, sums)
    sizes = np.array([plan_candidates[jj][0].size for jj in slots[0]]) * per_column
    # only then is the largest |eta| (multinomial: -log(-log p_own)) needed
    separates = kind in ("binomial", "multinomial", "poisson") and ridge == 0
    evaluate = _Passes(rows, args, slots, moments.n_train[slots[1]], sizes, separates, by_fold)

    def separated(problems, theta, step, iterations, values, columns):
        if not separates:
            return np.zeros(len(problems), dtype=bool)
        return (
            (iterations >= SEPARATION_MIN_ITER)
            & (values["emax"][columns] > SEPARATION_ETA)
            & (np.abs(step).max(axis=1) > SEPARATION_STEP)
        )

    result, state, passes = pass_newton(
        evaluate, theta0, ridge, penalty, warm=warm, stop=separated, reuse=reuse, secant=secant,
        known=known, sizes=sizes,
    )
    if separates and kind != "multinomial":
        result, extra = _quasi_separated(rows, args, moments, designs, plan_candidates, slots,
                                         result)
        passes += extra
    return result, state, passes


def _quasi_separated(rows, args, moments, designs, plan_candidates, slots,
                     result: NewtonResult) -> tuple[NewtonResult, int]:
    """The in-memory rule (:func:`pearlstats.engines.glm._quasi_separated`) on dask rows.

    A problem that converged with a singular Hessian is separated when its design's Gram over
    its training rows is regular (from the moments, no pass) and every training row beyond
    ``SEPARATION_ETA`` has the response of its limit (one pass for all such problems): a
    level of a categorical covariate whose rows are all 0, which Newton moves about a unit
    per step until its rows' variances vanish. Returns the result and the passes taken.
    """
    suspect = result.singular & result.converged & ~result.stopped
    if not suspect.any():
        return result, 0
    K = len(moments.labels)
    grams = {centre: standardised_systems(moments.folds, design)[0]
             for centre, design in designs.items()}
    for q in np.flatnonzero(suspect):
        S, centre = plan_candidates[slots[0][q]]
        by_fold = grams[centre][:, S][:, :, S]
        k = slots[1][q]
        training = by_fold.sum(axis=0) - (by_fold[k] if k < K else 0.0)
        suspect[q] = not NewtonSystems.from_hessians(training[None]).singular[0]
    which = np.flatnonzero(suspect)
    if which.size == 0:
        return result, 0
    spec, kind, fold_spec, env, labels, plan = args
    request = {"candidate": slots[0][which], "fold": slots[1][which],
               "theta": result.theta[which]}
    counts = tree_sum(rows.tasks(_limit_part, spec, kind, fold_spec, env, labels, plan,
                                 request))
    separated = np.zeros_like(suspect)
    separated[which] = (counts["far"] > 0) & (counts["off_limit"] == 0)
    return replace(result, converged=result.converged & ~separated,
                   stopped=result.stopped | separated), 1


def _limit_part(frame, blocks, offset, spec, kind, fold_spec, env, labels, plan,
                request) -> dict:
    """One partition's training rows beyond ``SEPARATION_ETA`` for each requested problem,
    and those of them whose response is not the limit's (0 below, binomial 1 above)."""
    X, y, folds = partition_inputs(frame, blocks, offset, spec, kind, fold_spec, env)
    problems = len(request["candidate"])
    out = {"far": np.zeros(problems), "off_limit": np.zeros(problems)}
    Z = _standardised(X, plan, np.unique(request["candidate"]))
    for q, (jj, k) in enumerate(zip(request["candidate"], request["fold"])):
        S, centre = plan["candidates"][jj]
        eta = Z[centre][:, S] @ request["theta"][q, : S.size]
        training = folds != labels[k] if k < len(labels) else np.ones(len(y), dtype=bool)
        if kind == "binomial":
            far, limit = training & (np.abs(eta) > SEPARATION_ETA), (eta > 0).astype(float)
        else:
            far, limit = training & (eta < -SEPARATION_ETA), np.zeros(len(y))
        out["far"][q] = far.sum()
        out["off_limit"][q] = (far & (y != limit)).sum()
    return out


def _fold_phase(rows, args, moments, designs, plan_candidates, ridge, everything, hessians,
                by_fold):
    """Fold problems of every candidate whose all-rows fit is not separated, from its optimum.

    *by_fold*: ``(f_by, g_by)``, the all-rows fit's sums over each fold's rows at its optimum
    (F, K) and (F, K, d): the fold problems' loss and gradient there, so they start stepping.
    """
    K = len(moments.labels)
    J = len(plan_candidates)
    fit = np.flatnonzero(~everything.stopped)
    slots = (np.repeat(fit, K), np.tile(np.arange(K), fit.size))
    theta = np.zeros((J * K, everything.theta.shape[1]))
    stopped = np.repeat(everything.stopped, K)  # separated on all rows: in every fold (not fitted)
    converged = np.zeros(J * K, dtype=bool)
    singular = np.zeros(J * K, dtype=bool)
    if fit.size == 0:
        return NewtonResult(theta, converged, stopped, singular, 0), 0
    good = everything.converged[slots[0]]  # the in-memory rule (engines.newton.fold_start)
    given = np.flatnonzero(good)
    n_train = moments.n_train[slots[1][given]]
    f_train, g_train = (training_sums(values) for values in by_fold)
    f_known = f_train[slots[0][given], slots[1][given]] / n_train
    g_known = g_train[slots[0][given], slots[1][given]] / n_train[:, None]
    result, _, passes = _phase(
        rows, args, moments, designs, plan_candidates, slots, ridge,
        warm=(given, hessians[slots[0][given]]),
        start=(given, everything.theta[slots[0][given]]),
        secant=True,  # the chords from the all-rows Hessian, corrected as they go
        known=(given, f_known, g_known),
    )
    where = slots[0] * K + slots[1]
    theta[where], converged[where] = result.theta, result.converged
    stopped[where], singular[where] = result.stopped, result.singular
    return NewtonResult(theta, converged, stopped, singular, result.iterations), passes


def _split(result: NewtonResult, rows: Any) -> NewtonResult:
    return NewtonResult(
        result.theta[rows], result.converged[rows], result.stopped[rows], result.singular[rows],
        result.iterations,
    )


def newton_coefficients(
    rows: Any,
    spec: Any,
    kind: str,
    fold_spec: Any,
    moments: Any,
    candidates: Any,
    ridge: float,
    env: Any,
    classes: np.ndarray | None = None,
) -> tuple:
    """Coefficients of every binomial / Poisson / multinomial candidate in every fold and on
    all rows.

    As the in-memory engine does, each candidate is fitted on all rows first;
    its fold fits then start from that optimum with its Hessian (and are not
    fitted when it is separated: so is every fold). Multinomial fits take the
    sorted *classes* (:func:`~pearlstats.distributed.multinomial.class_pass`).

    Returns
    -------
    coefs, failed, entries
        As :func:`~pearlstats.distributed.ols.solve_least_squares`; multinomial
        coefficients are (K + 1, p, J, C - 1), laid out like ``MNLogit.params``.
    passes : int
        Distributed passes the Newton iterations took.
    """
    labels = moments.labels
    K, J, p = len(labels), len(candidates), moments.p
    designs = {centre: moments.design(centre) for centre in (True, False)}
    plan = {"classes": classes}
    m = _per_column(plan)
    feasible, plan_candidates, failed, entries = feasible_candidates(
        candidates, int(moments.n_train[:-1].min()), ridge, K + 2, designs[True].intercept, m
    )
    coefs = np.zeros((K + 1, p, J) + ((m,) if classes is not None else ()))
    if not feasible:
        return coefs, failed, entries, 0
    plan |= {
        "designs": {c: (designs[c].center, designs[c].scale) for c in designs},
        "candidates": plan_candidates,
    }
    args = (spec, kind, fold_spec, env, labels, plan)
    F = len(feasible)
    # Binomial and Poisson: plain Newton on all rows (a Hessian at every step, for F problems
    # only): the folds then start with the Hessian at the all-rows optimum, close to theirs.
    # Multinomial: a Hessian pass costs about ten gradient passes per problem ((C-1)^2 blocks),
    # so once the steps contract the kept Hessian is reused with BFGS updates (n = 5e4, ten
    # classes: 82 -> 55 CPU-s in the same 21 passes; for the binomial the same rule took two
    # more passes and no less time).
    multinomial = classes is not None
    everything, state, passes = _phase(
        rows, args, moments, designs, plan_candidates, (np.arange(F), np.full(F, K)), ridge,
        reuse=0.01 if multinomial else 0.0, secant=multinomial, by_fold=True,
    )
    folds, fold_passes = _fold_phase(
        rows, args, moments, designs, plan_candidates, ridge, everything,
        state.kept_loss_hessians(),
        state.by_fold,
    )
    notes_of = multinomial_notes if classes is not None else notes_for(kind)
    for jj, j in enumerate(feasible):
        notes = notes_of(candidates[j].label, _split(folds, slice(jj * K, (jj + 1) * K)),
                       list(range(K)), "cv")
        notes += notes_of(candidates[j].label, _split(everything, slice(jj, jj + 1)), [None],
                          "refit")
        entries.extend(notes)
        if any(note.excluded for note in notes):
            failed[j] = True
            continue
        S, centre = plan_candidates[jj]
        for k in range(K):
            coefs[k, :, j] = _original(designs[centre], S, folds.theta[jj * K + k], p, classes)
        coefs[K, :, j] = _original(designs[centre], S, everything.theta[jj], p, classes)
    return coefs, failed, entries, passes + fold_passes


def _original(design, S: np.ndarray, theta: np.ndarray, p: int, classes) -> np.ndarray:
    """Original-scale coefficients (p,) of a problem's padded theta; (p, C - 1) for multinomial
    (theta class-major, as :func:`pearlstats.engines.multinomial._params` reads it)."""
    if classes is None:
        return to_original(design, S, theta[: S.size], p)
    m = len(classes) - 1
    return to_original(design, S, theta[: S.size * m].reshape(m, S.size).T, p)


def newton_with_separation(
    fit_rung: Callable[[list, float], tuple],
    candidates: list,
    ridge: float,
    kind: str,
    separation: str,
) -> tuple:
    """:func:`newton_coefficients` with the in-memory engine's separation policy.

    A binomial candidate without a finite optimum (separated classes, or no
    convergence) on all rows or in a fold is, as in
    :func:`~pearlstats.engines.newton_cv.newton_cv_predict`: refitted in every
    fold and on all rows with the smallest ridge of
    :func:`~pearlstats.engines.newton_cv.ridge_ladder` that reaches a finite
    optimum everywhere (``"ridge"``), reported by
    :class:`~pearlstats.exceptions.SeparationError` (``"raise"``), or given
    weight 0 (``"drop"``). Each rung is one more set of distributed passes,
    for the candidates still waiting only.

    Parameters
    ----------
    fit_rung : callable
        ``fit_rung(candidates, ridge)``: :func:`newton_coefficients` of some
        candidates at one ridge, the data, folds and moments bound.
    candidates : list of Candidate
    ridge : float
        The fit's ridge, the ladder's first rung.
    kind : str
        The family; only binomial and multinomial candidates separate.
    separation : {"ridge", "raise", "drop"}

    Returns
    -------
    coefs, failed, entries, passes
        As :func:`newton_coefficients`.
    moved : dict of str -> float
        The ridge of each candidate the ladder moved up (label -> ridge).
    """
    coefs, failed, entries, passes = fit_rung(candidates, ridge)
    moved: dict = {}
    if kind not in ("binomial", "multinomial", "poisson") or separation == "drop" \
            or not failed.any():
        return coefs, failed, entries, passes, moved
    labels = [c.label for c in candidates]
    cause = separation_cause(kind)
    if separation == "raise":
        for entry in entries:
            if entry.excluded and entry.kind == "separation":
                raise SeparationError(
                    f"candidate {entry.candidate!r}: {entry.reason}. Use separation='ridge' "
                    f"(refit it with the smallest ridge of {list(SEPARATION_RIDGES)} that has a "
                    "finite optimum) or separation='drop' (give it weight 0)"
                )
        return coefs, failed, entries, passes, moved
    waiting = [int(j) for j in np.flatnonzero(failed)]
    trouble = {j: [e for e in entries if e.candidate == labels[j]] for j in waiting}
    entries = [e for e in entries if e.candidate not in {labels[j] for j in waiting}]
    ladder = ridge_ladder(ridge)
    for value in ladder[1:]:
        if not waiting:
            break
        rung = fit_rung([candidates[j] for j in waiting], value)
        passes += rung[3]
        for jj, j in enumerate(waiting):
            if not rung[1][jj]:
                coefs[:, :, j] = rung[0][:, :, jj]
                failed[j] = False
                moved[labels[j]] = value
                entries.append(_ladder_entry(labels[j], "cv",
                                             trouble_from_entries(trouble[j], ridge, cause),
                                             ladder, value))
                entries.extend(e for e in rung[2] if e.candidate == labels[j])
        waiting = [j for jj, j in enumerate(waiting) if rung[1][jj]]
    for j in waiting:
        entries.append(_ladder_entry(labels[j], "cv",
                                     trouble_from_entries(trouble[j], ridge, cause), ladder, None))
        entries.extend(trouble[j])
    return coefs, failed, entries, passes, moved

