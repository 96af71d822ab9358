"""Sandwich covariances of the candidates' all-rows refits, from one more pass of sums.

statsmodels' ``get_robustcov_results(cov_type)`` of a candidate's refit is
``bread meat bread``: the bread is the inverse information (the candidate's
``normalized_cov_params``; ``H^-1`` with a ridge), the meat a sum over rows of
the rows' score vectors ``s_i = a_i (y_i - mu_i) x_i`` (canonical links; ``a_i``
the observation weight). Stacking the scores of several candidates fitted on
the same rows (``z_i = (s_i1, ..., s_iJ)``) gives, in the same sums, the
cross-candidate blocks ``A_j^-1 (sum_i s_ij s_ik') A_k^-1`` of their joint
covariance (the stacked estimating equations), which the averaged coefficients'
``cov_params()`` needs. :func:`chunk_meat` runs :func:`row_meat` over row chunks
(in row order: HAC's lagged products cross chunk boundaries through each
chunk's first and last ``maxlags`` rows, so ``+`` pools exactly).

Conventions (statsmodels' where it has them, else R's ``sandwich``):

- ``HC0``: ``sum s s'``. ``HC1``: times ``n / df_resid``. ``HC2``/``HC3``: each
  row's score divided by ``(1 - h_i)^(1/2)`` / ``(1 - h_i)``, ``h_i = q_i x_i'
  bread x_i`` (``q_i`` the working weight of the GLM, times the variance weight):
  statsmodels' OLS/WLS; for Logit and GLM statsmodels returns HC0 for HC1-HC3,
  here they are R's ``sandwich::vcovHC`` (``n / (n - k)``, the GLM hat values).
- ``cluster``: ``sum_g u_g u_g'`` of the groups' score sums, times ``G / (G - 1)
  (n - 1) / (n - k)`` (``use_correction``), inference with ``G - 1`` degrees of
  freedom (``df_correction``), as statsmodels' CRV1.
- ``HAC``: Newey-West with Bartlett weights ``1 - l / (maxlags + 1)`` in row
  order, ``n / (n - k)`` only with ``use_correction=True``.
- frequency weights count rows: a weight of 2 is the row twice (``n`` their sum);
  variance weights multiply the score (statsmodels' ``var_weights``). HAC with
  frequency weights is refused (a weighted row is several rows at one time).

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> X = np.column_stack([np.ones(40), rng.normal(size=40)])
>>> y = X @ [1.0, 2.0] + rng.normal(size=40) * (1 + X[:, 1] ** 2)
>>> b = np.linalg.lstsq(X, y, rcond=None)[0]
>>> meat = chunk_meat("gaussian", X, y, [np.arange(2)], b[:, None], CovSpec("HC0"))
>>> e = y - X @ b
>>> bool(np.allclose(meat.gram, (X * e[:, None] ** 2).T @ X))
True
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..backends.chunks import sum_chunks
from ..backends.columns import ColumnStack
from ..design.splitters import group_codes
from ..engines.likelihood import mean_of, pearson_residuals, variance_of
from ..engines.moments import chunk_columns
from ..exceptions import DataError, OptionError

__all__ = ["COV_TYPES", "CovSpec", "MeatSums", "check_cov_names", "check_scale", "chunk_meat",
           "cov_spec", "cov_type_name", "corrections", "refuse_hac_frequency",
           "refuse_scale_family", "row_meat", "sandwich"]

COV_TYPES = ("nonrobust", "HC0", "HC1", "HC2", "HC3", "cluster", "HAC")
_KEYWORDS = {"nonrobust": (), "HC0": (), "HC1": (), "HC2": (), "HC3": (),
             "cluster": ("groups", "use_correction", "df_correction"),
             "HAC": ("maxlags", "use_correction")}


@dataclass(frozen=True)
class CovSpec:
    """A covariance type and its keywords, checked (see :func:`cov_spec`).

    Attributes
    ----------
    cov_type : str
        One of :data:`COV_TYPES`.
    groups : ndarray of int or None
        Cluster: each row's group code, 0..G-1, for the fit's rows.
    maxlags : int
        HAC: the highest lag.
    use_correction : bool
        The small-sample factor (cluster: default True; HAC: default False).
    df_correction : bool
        Cluster: inference with G - 1 degrees of freedom (default True).
    scale : None, "X2" or float
        Nonrobust binomial and Poisson: the dispersion the classical covariance is
        multiplied by (None: the family's, 1; ``"X2"``: Pearson's ``X^2 / df_resid``,
        statsmodels' ``fit(scale="X2")``; a float: that fixed dispersion, R's
        ``summary(dispersion=)``).
    """

    cov_type: str = "nonrobust"
    groups: np.ndarray | None = field(default=None, repr=False)
    maxlags: int = 0
    use_correction: bool = False
    df_correction: bool = True
    scale: str | float | None = None

    @property
    def robust(self) -> bool:
        return self.cov_type != "nonrobust"

    @property
    def n_groups(self) -> int:
        return 0 if self.groups is None else int(self.groups.max()) + 1

    def describe(self) -> str:
        """A short name for tables: ``"HC3"``, ``"cluster (24 groups)"``, ``"HAC (2 lags)"``."""
        if self.cov_type == "cluster":
            return f"cluster ({self.n_groups} groups)"
        if self.cov_type == "HAC":
            return f"HAC ({self.maxlags} lags)"
        return self.cov_type

    def describe_scale(self) -> str:
        """The dispersion for tables: ``""`` (the family's), ``"Pearson X2 / df"`` or the
        fixed number."""
        if self.scale is None:
            return ""
        return "Pearson X2 / df" if self.scale == "X2" else f"{self.scale:g} (fixed)"


def _group_codes(groups: object, nobs: int) -> np.ndarray:
    values = np.asarray(groups)
    if values.ndim != 1 or len(values) != nobs:
        raise DataError(f"groups has shape {values.shape}; give one group label per row the fit "
                        f"used ({nobs} rows), as an array or a Series (fit's cov_kwds also "
                        "takes a column name of the data)")
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise DataError("groups has NaN or infinite labels; give every row a group")
    codes = group_codes(values, DataError)  # missing or unorderable labels refused by name
    if codes.max(initial=0) < 1:
        raise DataError("groups has a single group: the cluster covariance needs at least 2")
    return codes.astype(np.intp)


def cov_type_name(cov_type: object) -> str:
    """*cov_type* as :data:`COV_TYPES` spells it, given in any case (statsmodels reads
    ``"hc3"`` and ``"hac"`` too).

    Raises
    ------
    OptionError
        A name that is none of :data:`COV_TYPES`.

    Examples
    --------
    >>> cov_type_name("hc3"), cov_type_name("Cluster")
    ('HC3', 'cluster')
    """
    if isinstance(cov_type, str):
        for name in COV_TYPES:
            if name.lower() == cov_type.lower():
                return name
    raise OptionError(f"cov_type={cov_type!r} is not known; use one of {list(COV_TYPES)}")


def check_cov_names(cov_type: str, cov_kwds: dict | None) -> dict:
    """*cov_kwds* as a dict, after checking the type's (any case) and the keywords' names."""
    cov_type = cov_type_name(cov_type)
    if cov_kwds is not None and not isinstance(cov_kwds, dict):
        raise OptionError(f"cov_kwds must be a dict of keywords, not {type(cov_kwds).__name__}")
    kwds = dict(cov_kwds or {})
    unknown = sorted(set(kwds) - set(_KEYWORDS[cov_type]))
    if unknown:
        raise OptionError(f"cov_type={cov_type!r} takes the keywords "
                          f"{list(_KEYWORDS[cov_type])}, not {unknown}")
    return kwds


def check_scale(scale: object, cov_type: str = "nonrobust") -> str | float | None:
    """*scale* checked: None, ``"X2"`` (any case, as statsmodels reads it) or a positive
    finite number, and only with ``cov_type="nonrobust"``.

    Raises
    ------
    OptionError
        Another string or value, or a scale with a robust *cov_type*.

    Examples
    --------
    >>> check_scale("x2"), check_scale(2), check_scale(None)
    ('X2', 2.0, None)
    >>> check_scale("X2", "HC1")
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.OptionError: scale='X2' is for cov_type='nonrobust': the sandwich \
of cov_type='HC1' estimates the scores' variance from the rows and uses no scale; drop scale= \
or use cov_type='nonrobust'
    """
    if scale is None:
        return None
    if isinstance(scale, str) and scale.upper() == "X2":
        checked: str | float = "X2"
    elif (isinstance(scale, numbers.Real) and not isinstance(scale, bool)
          and np.isfinite(scale) and scale > 0):
        checked = float(scale)
    elif isinstance(scale, str) and scale.lower() == "dev":
        raise OptionError("scale='dev' (deviance / df, statsmodels') is not available; use "
                          "scale='X2' (Pearson's X2 / df, R's quasipoisson and quasibinomial "
                          "dispersion) or a positive number")
    else:
        raise OptionError(f"scale={scale!r} is not known; use None (the family's dispersion, "
                          "1), 'X2' (Pearson's X2 / df, estimated) or a positive number (a "
                          "fixed dispersion)")
    if cov_type != "nonrobust":
        raise OptionError(f"scale={checked!r} is for cov_type='nonrobust': the sandwich of "
                          f"cov_type={cov_type!r} estimates the scores' variance from the rows "
                          "and uses no scale; drop scale= or use cov_type='nonrobust'")
    return checked


def refuse_scale_family(scale: object, family: str) -> None:
    """Refuse, naming why, a dispersion (``scale=``) for a family other than binomial and
    Poisson."""
    if scale is None or family in ("binomial", "poisson"):
        return
    why = ("a gaussian fit estimates its scale already (each candidate's residual variance, "
           "statsmodels' default)" if family == "gaussian"
           else f"a {family} fit has no dispersion to estimate here")
    raise OptionError(f"scale={scale!r} is for binomial and poisson fits (R's quasibinomial and "
                      f"quasipoisson); {why}: drop scale=")


def cov_spec(cov_type: str = "nonrobust", cov_kwds: dict | None = None, *,
             nobs: int, scale: object = None) -> CovSpec:
    """Check *cov_type* and its keywords (statsmodels' names) for a fit of *nobs* rows,
    and the *scale* of a nonrobust one (:func:`check_scale`).

    Raises
    ------
    OptionError
        An unknown type or keyword, a missing ``groups``/``maxlags``, a bad ``maxlags``,
        a bad *scale* or one with a robust type.
    DataError
        Groups not one per row, with missing labels or a single group.

    Examples
    --------
    >>> cov_spec("HAC", {"maxlags": 2}, nobs=10).describe()
    'HAC (2 lags)'
    >>> cov_spec("HC4", nobs=10)
    Traceback (most recent call last):
    ...
    pearlstats.exceptions.OptionError: cov_type='HC4' is not known; use one of ['nonrobust', \
'HC0', 'HC1', 'HC2', 'HC3', 'cluster', 'HAC']
    """
    kwds = check_cov_names(cov_type, cov_kwds)
    cov_type = cov_type_name(cov_type)
    scale = check_scale(scale, cov_type)
    if cov_type == "cluster":
        if "groups" not in kwds:
            raise OptionError("cov_type='cluster' needs groups= (one label per row)")
        return CovSpec("cluster", _group_codes(kwds["groups"], nobs),
                       use_correction=bool(kwds.get("use_correction", True)),
                       df_correction=bool(kwds.get("df_correction", True)))
    if cov_type == "HAC":
        maxlags = kwds.get("maxlags")
        if isinstance(maxlags, bool) or not isinstance(maxlags, int | np.integer) or not (
                0 <= maxlags < nobs):
            raise OptionError(f"cov_type='HAC' needs maxlags=, an int from 0 to {nobs - 1} "
                              f"(the highest lag), not {maxlags!r}")
        return CovSpec("HAC", maxlags=int(maxlags),
                       use_correction=bool(kwds.get("use_correction", False)))
    return CovSpec(cov_type, scale=scale)


# ---- the meat: sums over rows that pool exactly, in row order ------------------------------------
def _bartlett(maxlags: int) -> np.ndarray:
    """Weights of lags 1..maxlags (statsmodels' ``weights_bartlett`` without lag 0)."""
    return 1.0 - np.arange(1, maxlags + 1) / (maxlags + 1.0)


def _products(A: np.ndarray, B: np.ndarray, edges: np.ndarray | None) -> np.ndarray:
    """``A' B`` (rows of scores), or only its diagonal blocks between *edges* (the rest 0)."""
    if edges is None:
        return A.T @ B
    out = np.zeros((A.shape[1], A.shape[1]))
    for start, stop in zip(edges[:-1], edges[1:]):
        out[start:stop, start:stop] = A[:, start:stop].T @ B[:, start:stop]
    return out


def _lagged(Z: np.ndarray, kernel: np.ndarray, edges: np.ndarray | None) -> np.ndarray:
    """``sum_l k_l sum_i (z_i z_{i-l}' + z_{i-l} z_i')`` within the rows of Z."""
    out = np.zeros((Z.shape[1], Z.shape[1]))
    for lag, k in enumerate(kernel, start=1):
        if lag < len(Z):
            s = _products(Z[lag:], Z[:-lag], edges)
            out += k * (s + s.T)
    return out


def _boundary(tail: np.ndarray, head: np.ndarray, kernel: np.ndarray,
              edges: np.ndarray | None) -> np.ndarray:
    """The lagged products of rows *tail* (earlier) with rows *head* (right after them)."""
    out = np.zeros((tail.shape[1], tail.shape[1]))
    for u in range(len(tail)):  # u rows before the boundary, v after: lag u + v + 1
        for v in range(min(len(head), len(kernel) - u)):
            s = _products(head[[v]], tail[[len(tail) - 1 - u]], edges)
            out += kernel[u + v] * (s + s.T)
    return out


@dataclass(frozen=True)
class MeatSums:
    """Sums over some rows of the stacked scores ``z_i``; ``+`` pools rows that follow.

    Attributes
    ----------
    gram : ndarray (D, D)
        ``sum z z'``, with HAC's lagged products within the rows; with *edges*, only the
        diagonal blocks (one per candidate; 0 elsewhere).
    groups : ndarray (G, D) or None
        Cluster: each group's ``sum z``.
    head, tail : ndarray (<= maxlags, D)
        HAC: the rows' first and last ``maxlags`` scores.
    kernel : ndarray (maxlags,)
        HAC's lag weights (empty otherwise).
    cross : ndarray (J, J) or None
        Nonrobust, gaussian or with ``scale="X2"``: ``sum w r_j r_k`` of the candidates'
        Pearson residuals ``r = (y - mu) / sqrt(V(mu))`` (gaussian: the residuals).
    edges : ndarray (J + 1,) or None
        Where each candidate's block of z starts and ends.
    blocks_only : bool
        Whether the cross-candidate blocks of *gram* are left out.
    undefined : ndarray of bool (D,) or None
        HC2/HC3: the coordinates of z along which a row of leverage 1 moves its candidate's
        estimate (:func:`row_meat`): there the row's scaled residual is 0/0, and the
        sandwich's rows and columns are NaN (None: none).
    """

    gram: np.ndarray
    groups: np.ndarray | None
    head: np.ndarray
    tail: np.ndarray
    kernel: np.ndarray
    cross: np.ndarray | None
    edges: np.ndarray
    blocks_only: bool = False
    undefined: np.ndarray | None = None

    def __add__(self, other: MeatSums) -> MeatSums:
        gram = self.gram + other.gram
        L = len(self.kernel)
        head, tail = self.head, self.tail
        if L:
            gram = gram + _boundary(self.tail, other.head, self.kernel, self._only)
            head = np.vstack([self.head, other.head])[:L]
            tail = np.vstack([self.tail, other.tail])[-L:]
        undefined = (other.undefined if self.undefined is None else self.undefined
                     if other.undefined is None else self.undefined | other.undefined)
        return MeatSums(gram, None if self.groups is None else self.groups + other.groups,
                        head, tail, self.kernel,
                        None if self.cross is None else self.cross + other.cross,
                        self.edges, self.blocks_only, undefined)

    __iadd__ = __add__

    @property
    def _only(self) -> np.ndarray | None:
        return self.edges if self.blocks_only else None

    def block(self, j: int, k: int) -> np.ndarray:
        """The meat's block of candidates j and k (cluster: from the groups' sums)."""
        rj = slice(self.edges[j], self.edges[j + 1])
        rk = slice(self.edges[k], self.edges[k + 1])
        if self.groups is not None:
            return self.groups[:, rj].T @ self.groups[:, rk]
        return self.gram[rj, rk]


def _leverage(X: np.ndarray, columns: Sequence[np.ndarray], breads: Sequence[np.ndarray],
              q: np.ndarray) -> np.ndarray:
    """``h_ij = q_ij x_iS' bread_j x_iS`` for each row i and candidate j."""
    h = np.empty(q.shape)
    for j, (S, bread) in enumerate(zip(columns, breads)):
        XS = X[:, S]
        h[:, j] = np.einsum("ij,ij->i", XS @ bread, XS) * q[:, j]
    return h


# A leverage this close to 1 is 1 to rounding (h carries about cond * eps of error): the row
# alone determines a direction of its candidate's estimate, its residual is rounding, and
# HC2/HC3's residual / (1 - h)^a is 0/0. Beyond sqrt(eps) the ratio keeps about half its digits.
LEVERAGE_ONE = float(np.sqrt(np.finfo(float).eps))


def _row_factors(kind: str, spec: CovSpec, X: np.ndarray, y: np.ndarray, eta: np.ndarray,
                 weights: np.ndarray | None, weight_type: str | None,
                 columns: Sequence[np.ndarray], breads: Sequence[np.ndarray] | None):
    """``(r, e, alone)``: each row's factor of each candidate's score (``z = r x``), the
    residuals (nonrobust: Pearson residuals, the residuals for gaussian) and, HC2/HC3, the
    (row, candidate) pairs of leverage 1 (None otherwise), whose factor is 0 here."""
    mu = mean_of(kind, eta)
    w = np.ones(len(y)) if weights is None else weights
    if not spec.robust:  # the information: sqrt(w V(mu)) x (gaussian: scaled later)
        V = np.ones_like(mu) if kind == "gaussian" else variance_of(kind, mu)
        return np.sqrt(w[:, None] * V), pearson_residuals(kind, y[:, None], mu), None
    e = y[:, None] - mu
    frequency = weight_type == "frequency"
    # a frequency weight f is f rows: f e^2 in a row's own product, f e in a group's sum
    a = np.sqrt(w) if frequency and spec.cov_type != "cluster" else w
    r = a[:, None] * e
    alone = None
    if spec.cov_type in ("HC2", "HC3"):
        q = np.ones_like(mu) if kind == "gaussian" else variance_of(kind, mu)
        if weight_type == "variance":
            q = q * w[:, None]
        h = _leverage(X, columns, breads, q)
        # A leverage of 1 (a row that alone determines a direction of the estimate: a dummy
        # of one row, or frequency weights counting fewer observations than coefficients)
        # leaves no residual to scale. Its score only moves the estimate along
        # bread x_i (X'X e = x_i for such a dummy's e), so the row is left out here and
        # row_meat marks that direction undefined: the other coefficients keep their SEs
        # (deleting the row leaves them unchanged), that direction's are NaN, not the
        # arbitrary finite number rounding gives (statsmodels').
        alone = h >= 1.0 - LEVERAGE_ONE
        with np.errstate(invalid="ignore", divide="ignore"):
            scaled = r / (1.0 - h) ** (0.5 if spec.cov_type == "HC2" else 1.0)
        r = np.where(alone, 0.0, scaled)
    return r, e, alone


def _undefined_directions(X: np.ndarray, columns: Sequence[np.ndarray], alone: np.ndarray,
                          maps: Sequence[np.ndarray], edges: np.ndarray) -> np.ndarray | None:
    """The coordinates of the stacked z that rows of leverage 1 move: ``x_iS' M_j`` of each
    such (row i, candidate j), with *maps* the breads (or the projections, bread included),
    nonzero beyond rounding (1e-6 of its largest entry)."""
    if alone is None or not alone.any():
        return None
    undefined = np.zeros(int(edges[-1]), dtype=bool)
    for j, (S, M) in enumerate(zip(columns, maps)):
        for i in np.flatnonzero(alone[:, j]):
            direction = np.abs(X[i, S] @ M)
            undefined[edges[j]:edges[j + 1]] |= direction > 1e-6 * direction.max()
    return undefined


def row_meat(kind: str, X: np.ndarray, y: np.ndarray, columns: Sequence[np.ndarray],
             B: np.ndarray, spec: CovSpec, offset: np.ndarray | None = None,
             weights: np.ndarray | None = None, weight_type: str | None = None,
             breads: Sequence[np.ndarray] | None = None, groups: np.ndarray | None = None,
             project: Sequence[np.ndarray] | None = None,
             blocks_only: bool = False) -> MeatSums:
    """The meat sums of some consecutive rows (see the module's conventions).

    Parameters
    ----------
    kind : {"gaussian", "binomial", "poisson"}
    X : ndarray (m, p)
        The rows' design columns (those of the candidates, at least).
    y : ndarray (m,)
    columns : sequence of int arrays
        Each candidate's positions among X's columns; the stacked score is their
        concatenation, in this order.
    B : ndarray (p, J)
        Each candidate's coefficients in its columns (0 elsewhere).
    spec : CovSpec
        ``"nonrobust"`` gives the stacked information (``sqrt(w V) x``) and, gaussian or
        with ``scale="X2"``, the Pearson residuals' cross products.
    offset, weights : ndarray (m,), optional
    weight_type : {None, "frequency", "variance"}
    breads : sequence of ndarray
        HC2/HC3: each candidate's bread, for the leverages.
    groups : ndarray (m,) of int
        Cluster: the rows' group codes.
    project : sequence of ndarray (p_j, T), optional
        Each candidate's score is multiplied by its matrix (e.g. the bread's columns of
        the terms wanted, times the candidate's weight), so the sums are T x T blocks.
    blocks_only : bool
        Sum only each candidate's own block (what its covariance needs).
    """
    eta = X @ B
    if offset is not None:
        eta += offset[:, None]
    r, e, alone = _row_factors(kind, spec, X, y, eta, weights, weight_type, columns, breads)
    parts = [X[:, S] * r[:, [j]] for j, S in enumerate(columns)]
    if project is not None:
        parts = [part @ P for part, P in zip(parts, project)]
    Z = np.hstack(parts)
    edges = np.concatenate([[0], np.cumsum([part.shape[1] for part in parts])])
    only = edges if blocks_only else None
    kernel = _bartlett(spec.maxlags) if spec.cov_type == "HAC" else np.zeros(0)
    gram = _products(Z, Z, only) + (_lagged(Z, kernel, only) if len(kernel) else 0.0)
    sums = None
    if spec.cov_type == "cluster":
        sums = np.zeros((spec.n_groups, Z.shape[1]))
        np.add.at(sums, groups, Z)
    cross = None
    if not spec.robust and (kind == "gaussian" or spec.scale == "X2"):
        w = np.ones(len(y)) if weights is None else weights
        cross = (e * w[:, None]).T @ e
    L = len(kernel)
    undefined = _undefined_directions(X, columns, alone,
                                      breads if project is None else project, edges)
    return MeatSums(gram, sums, Z[:L], Z[max(len(Z) - L, 0):] if L else Z[:0], kernel, cross,
                    edges, blocks_only, undefined)


def refuse_hac_frequency(cov_type: str, weight_type: str | None) -> None:
    """Refuse ``cov_type="HAC"`` with frequency weights, naming why and what would do."""
    if cov_type == "HAC" and weight_type == "frequency":
        raise OptionError("cov_type='HAC' with frequency weights: a row with weight f stands "
                          "for f rows at one time point, which has no lag structure; use "
                          "variance weights or expand the rows")


def chunk_meat(kind: str, X: np.ndarray | ColumnStack, y: np.ndarray,
               columns: Sequence[np.ndarray], B: np.ndarray, spec: CovSpec,
               offset: np.ndarray | None = None, weights: np.ndarray | None = None,
               weight_type: str | None = None, breads: Sequence[np.ndarray] | None = None,
               used: np.ndarray | None = None, project: Sequence[np.ndarray] | None = None,
               blocks_only: bool = False) -> MeatSums:
    """:func:`row_meat` of all rows in memory, one chunk at a time, in row order.

    *used* are the design columns *columns* and *B*'s rows refer to (all when None).
    """
    refuse_hac_frequency(spec.cov_type, weight_type)
    width = int(sum(len(S) for S in columns)) + (0 if used is None else used.size)

    def one(rows: slice) -> MeatSums:
        return row_meat(kind, chunk_columns(X, rows, None, used), y[rows], columns, B, spec,
                        None if offset is None else offset[rows],
                        None if weights is None else weights[rows], weight_type, breads,
                        None if spec.groups is None else spec.groups[rows], project,
                        blocks_only)

    return sum_chunks(one, len(y), width=width)


# ---- the sandwich --------------------------------------------------------------------------------
def corrections(spec: CovSpec, counted: float, df_resid: Sequence[float],
                n_columns: Sequence[int]) -> np.ndarray:
    """Each candidate's small-sample factor (the joint blocks take the geometric mean).

    NaN for a candidate with no residual degrees of freedom (``df_resid`` or
    ``counted - k`` at most 0: frequency weights counting no more observations than its
    coefficients), as its classical SEs there; the fit warned of it
    (:func:`~pearlstats.observation_weights.few_observations_note`).
    """
    df_resid, k = np.asarray(df_resid, dtype=float), np.asarray(n_columns, dtype=float)
    if spec.cov_type == "HC1":
        return _ratio(counted, df_resid)
    if spec.cov_type == "cluster" and spec.use_correction:
        G = spec.n_groups
        return G / (G - 1.0) * _ratio(counted - 1.0, counted - k)
    if spec.cov_type == "HAC" and spec.use_correction:
        return _ratio(counted, counted - k)
    return np.ones(len(k))


def _ratio(top: float, left: np.ndarray) -> np.ndarray:
    """``top / left`` where *left* (residual degrees of freedom) is positive, else NaN: a
    zero would give numpy's divide-by-zero warning and infinite SEs, a negative one a
    negative factor whose square roots of products (:func:`sandwich`'s ``factors``) are
    finite, SEs where no residual is left to scale."""
    left = np.asarray(left, dtype=float)
    safe = np.where(left > 0, left, 1.0)
    return np.where(left > 0, top / safe, np.nan)


def sandwich(meat: MeatSums, factors: np.ndarray,
             breads: Sequence[np.ndarray] | None = None) -> list | np.ndarray:
    """With *breads*: each candidate's ``c_j bread_j M_jj bread_j`` (``factors[j, j]``);
    without (projected scores, the breads already in them): ``sum_jk factors[j, k] M_jk``."""
    J = len(meat.edges) - 1
    if breads is not None:
        covs = [factors[j, j] * (breads[j] @ meat.block(j, j) @ breads[j]) for j in range(J)]
        return [_nan_where_undefined(cov, meat, j) for j, cov in enumerate(covs)]
    joint = sum(factors[j, k] * meat.block(j, k) for j in range(J) for k in range(J))
    for j in range(J):
        joint = _nan_where_undefined(joint, meat, j)
    return joint


def _nan_where_undefined(cov: np.ndarray, meat: MeatSums, j: int) -> np.ndarray:
    """*cov* with NaN rows and columns along candidate j's undefined coordinates."""
    if meat.undefined is None:
        return cov
    undefined = meat.undefined[meat.edges[j]:meat.edges[j + 1]]
    if not undefined.any():
        return cov
    cov = np.array(cov, dtype=float)
    cov[undefined, :] = np.nan
    cov[:, undefined] = np.nan
    return cov
