"""Formulas over named blocks: parsing, covariate designs and response extraction.

This is the only module that imports patsy. A formula such as
``"y ~ x + C(g) + block(pca) + block(kpca_rbf)"`` is split into

* the response (``y``),
* ordinary covariate terms (intercept, ``x``, ``C(g)``), which patsy builds and
  which enter every candidate, and
* ``block(name)`` terms, which are *not* evaluated by patsy: each names a
  foundation representation block supplied through ``blocks=`` (or stored in a
  dict ``data``). Keeping blocks out of patsy avoids three known traps: patsy
  renames one-column blocks, evaluates every factor twice, and silently falls
  back to variables in the caller's namespace when new data lacks a column.

Examples
--------
>>> spec = parse_formula("y ~ x + block(pca) + block(kpca_rbf)")
>>> spec.response, spec.block_names
('y', ('pca', 'kpca_rbf'))
"""

from __future__ import annotations

import ast
import importlib
import types
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy
from patsy import EvalEnvironment, ModelDesc, PatsyError

from ..exceptions import DataError, FormulaError, MissingValueError, ResponseError, format_positions

__all__ = ["FormulaSpec", "CovariateDesign", "parse_formula", "build_covariates", "response_values"]


@dataclass(frozen=True)
class FormulaSpec:
    """A parsed PEARL formula.

    Attributes
    ----------
    formula : str
        The formula as given.
    response : str
        Source code of the left-hand side (usually a column name).
    block_names : tuple of str
        Names inside ``block()`` terms, in formula order.
    covariate_desc : patsy.ModelDesc
        Right-hand side without the block terms (keeps the intercept).
    variables : frozenset of str
        Every name referenced by the response and covariate terms; the ones
        found among the data's columns are checked again in new data.
    """

    formula: str
    response: str
    block_names: tuple[str, ...]
    covariate_desc: ModelDesc
    variables: frozenset[str]

    def __reduce__(self):
        # patsy objects do not pickle; the formula string rebuilds everything.
        return parse_formula, (self.formula,)


@dataclass(frozen=True)
class CovariateDesign:
    """Covariate columns shared by every candidate, with what rebuilds them.

    Attributes
    ----------
    matrix : ndarray of shape (n, q)
    names : list of str
        patsy's column names (``Intercept``, ``x``, ``C(g)[T.b]``, ...).
    design_info : patsy.DesignInfo
        Used to build the same columns for new rows.
    data_columns : tuple of str
        Data columns the covariate terms read; new data must contain them.
    """

    matrix: np.ndarray
    names: list[str]
    design_info: patsy.DesignInfo
    data_columns: tuple[str, ...]
    spec: FormulaSpec | None = None
    training_columns: pd.DataFrame | None = None
    namespace: dict | None = None

    def __reduce__(self):
        # patsy's DesignInfo cannot be pickled (patsy issue #26). Rebuilding it
        # from the same training columns reproduces every stateful transform
        # (levels of C(), means of center(), ...).
        return _rebuild_covariates, (self.spec, self.training_columns, _picklable_namespace(self.namespace))


def _referenced_names(code: str) -> set[str]:
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError as err:  # patsy accepted it, so this is defensive only
        raise FormulaError(f"cannot parse the term {code!r}: {err}") from err
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _block_call_name(code: str) -> str | None:
    """Return NAME when *code* is exactly ``block(NAME)`` or ``block("NAME")``."""
    tree = ast.parse(code, mode="eval").body
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "block"):
        return None
    if len(tree.args) != 1 or tree.keywords:
        raise FormulaError(f"{code!r}: block() takes exactly one block name, e.g. block(pca)")
    arg = tree.args[0]
    if isinstance(arg, ast.Name):
        return arg.id
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        # '+' joins block names in candidate labels and explicit candidate strings.
        if not arg.value.strip() or "+" in arg.value:
            raise FormulaError(f"{code!r}: a block name must be non-empty and must not contain '+'")
        return arg.value
    raise FormulaError(f"{code!r}: the argument of block() must be a bare name or a string")


def _mentions_block(code: str) -> bool:
    tree = ast.parse(code, mode="eval")
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "block"
        for node in ast.walk(tree)
    )


def parse_formula(formula: str) -> FormulaSpec:
    """Split a formula into response, covariate terms and block terms.

    Parameters
    ----------
    formula : str
        A patsy formula with one response and at least one ``block(name)`` term.

    Returns
    -------
    FormulaSpec

    Raises
    ------
    FormulaError
        If the formula does not parse, has no response, no block term, a block
        used inside an interaction or another function, or the same block twice.

    Examples
    --------
    >>> parse_formula("y ~ block(a) + block(b) - 1").block_names
    ('a', 'b')
    """
    if not isinstance(formula, str):
        raise FormulaError(f"formula must be a string such as 'y ~ block(a) + block(b)', got {type(formula).__name__}")
    try:
        desc = ModelDesc.from_formula(formula)
    except PatsyError as err:
        raise FormulaError(f"cannot parse formula {formula!r}: {err.message}") from err
    if len(desc.lhs_termlist) != 1 or len(desc.lhs_termlist[0].factors) != 1:
        raise FormulaError(f"formula {formula!r} needs exactly one response on the left of '~', e.g. 'y ~ block(a)'")
    response = desc.lhs_termlist[0].factors[0].code

    block_names: list[str] = []
    covariate_terms = []
    variables = _referenced_names(response)
    for term in desc.rhs_termlist:
        codes = [factor.code for factor in term.factors]
        named = [_block_call_name(code) for code in codes]
        if len(codes) == 1 and named[0] is not None:
            if named[0] in block_names:
                raise FormulaError(f"block({named[0]}) appears twice in {formula!r}; name each block once")
            block_names.append(named[0])
            continue
        if any(_mentions_block(code) for code in codes):
            raise FormulaError(
                f"term {term.name()!r} in {formula!r} uses block() inside an interaction or a function; "
                "a block must stand alone as 'block(name)' (interactions with blocks are not supported)"
            )
        covariate_terms.append(term)
        for code in codes:
            variables |= _referenced_names(code)
    if not block_names:
        raise FormulaError(
            f"formula {formula!r} has no block(name) term; PEARL averages models over representation blocks, "
            "e.g. 'y ~ block(pca) + block(kpca_rbf)'"
        )
    return FormulaSpec(
        formula=formula,
        response=response,
        block_names=tuple(block_names),
        covariate_desc=ModelDesc([], covariate_terms),
        variables=frozenset(variables),
    )


def _missing_positions(values: pd.Series) -> np.ndarray:
    """Positions of NaN/None (any dtype) and of inf (float columns)."""
    if values.dtype.kind in "fc":
        return np.flatnonzero(~np.isfinite(values.to_numpy()))
    return np.flatnonzero(pd.isna(values).to_numpy())


def _check_finite_columns(frame: pd.DataFrame, columns, what: str) -> None:
    for column in columns:
        bad = _missing_positions(frame[column])
        if bad.size:
            raise MissingValueError(
                f"{what} {column!r} has missing or infinite values at {format_positions(bad)}; "
                "remove or impute them (or, when fitting, pass missing='drop' to drop those rows)"
            )


def _picklable_namespace(namespace: dict | None) -> dict:
    """Modules by name, other objects as they are (they must pickle)."""
    return {
        name: ("module", value.__name__) if isinstance(value, types.ModuleType) else ("object", value)
        for name, value in (namespace or {}).items()
    }


def _rebuild_covariates(spec, training_columns, namespace) -> CovariateDesign:
    restored = {
        name: importlib.import_module(value) if kind == "module" else value
        for name, (kind, value) in namespace.items()
    }
    return build_covariates(spec, training_columns, EvalEnvironment([restored]))


def build_covariates(spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment) -> CovariateDesign:
    """Build the covariate columns (intercept and ordinary terms) for the fit.

    Parameters
    ----------
    spec : FormulaSpec
    frame : DataFrame
        One-dimensional data columns.
    eval_env : patsy.EvalEnvironment
        Where functions such as ``np.log`` in the formula are looked up.

    Returns
    -------
    CovariateDesign
    """
    data_columns = tuple(sorted(name for name in spec.variables if name in frame.columns and name != spec.response))
    _check_finite_columns(frame, data_columns, "covariate")
    try:
        matrix = patsy.dmatrix(spec.covariate_desc, frame, eval_env=eval_env, NA_action="raise", return_type="matrix")
    except PatsyError as err:
        raise DataError(f"cannot build the covariate terms of {spec.formula!r}: {err.message}") from err
    values = np.asarray(matrix, dtype=float)
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        raise MissingValueError(f"covariate terms of {spec.formula!r} evaluate to NaN or inf at {format_positions(bad)}")
    # Keep what rebuilds this design after unpickling: the columns it read and
    # the non-data names (functions, modules) it took from the caller.
    used_names = {
        name: eval_env.namespace[name]
        for name in spec.variables - set(frame.columns)
        if name in eval_env.namespace
    }
    return CovariateDesign(
        values, list(matrix.design_info.column_names), matrix.design_info, data_columns,
        spec, frame[list(data_columns)].copy(), used_names,
    )


def covariates_for_new_rows(design: CovariateDesign, frame: pd.DataFrame) -> np.ndarray:
    """Rebuild the fit's covariate columns for new rows.

    Every data column the covariate terms read must be present in *frame*:
    otherwise patsy would silently take a variable of that name from the
    namespace captured at fit time.

    Raises
    ------
    DataError
        A column is missing, or a categorical has a level unseen at fit time.
    """
    missing = [column for column in design.data_columns if column not in frame.columns]
    if missing:
        raise DataError(f"new data lacks the column(s) {missing} used by the formula's covariate terms")
    _check_finite_columns(frame, design.data_columns, "covariate")
    if not design.names:
        return np.empty((len(frame), 0))
    try:
        (matrix,) = patsy.build_design_matrices([design.design_info], frame, NA_action="raise")
    except PatsyError as err:
        term = f" {err.origin.relevant_code()!r}" if err.origin is not None else "s"
        raise DataError(f"cannot build the covariate term{term} for new data: {err.message}") from err
    return np.asarray(matrix, dtype=float)


def response_values(spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment) -> pd.Series:
    """Evaluate the response: a data column by name, or an expression such as ``np.log(y)``.

    Raises
    ------
    DataError
        The response column is not in the data.
    MissingValueError
        The response has missing or infinite values (with their row positions).
    ResponseError
        Values of types that cannot be ordered (e.g. ints and strings), or a
        numeric response so large that its squares overflow.
    """
    if spec.response.isidentifier():
        if spec.response not in frame.columns:
            raise DataError(
                f"response {spec.response!r} is not a column of the data (columns: {sorted(frame.columns)[:20]})"
            )
        values = frame[spec.response]
    else:
        missing = [name for name in _referenced_names(spec.response) if name not in frame.columns]
        unknown = [name for name in missing if name not in eval_env.namespace]
        if unknown:
            raise DataError(f"response {spec.response!r} refers to {unknown}, which is not a column of the data")
        try:
            values = pd.Series(np.asarray(eval_env.eval(spec.response, inner_namespace=frame)), index=frame.index)
        except Exception as err:
            raise DataError(f"cannot evaluate the response {spec.response!r}: {err}") from err
    if values.ndim != 1 or len(values) != len(frame):
        raise DataError(f"response {spec.response!r} must be one value per row of the data")
    bad = _missing_positions(values)
    if bad.size:
        raise MissingValueError(
            f"response {spec.response!r} has missing or infinite values at {format_positions(bad)}; "
            "remove them, or pass missing='drop' to drop those rows"
        )
    if values.dtype == object:
        try:
            sorted(pd.unique(values))
        except TypeError as err:  # e.g. 1 and "b": classes need an order
            kinds = sorted({type(value).__name__ for value in values})
            raise ResponseError(
                f"response {spec.response!r} mixes values of types {kinds} that cannot be ordered; "
                "convert them to one type, e.g. with .astype(str)"
            ) from err
    if values.dtype.kind in "iuf":
        # Squared errors and Gram matrices of the response overflow to inf past ~1e154.
        numbers = values.to_numpy(dtype=float)
        with np.errstate(over="ignore"):
            energy = numbers @ numbers
        if not np.isfinite(energy):
            raise ResponseError(
                f"response {spec.response!r} has values too large for float64 arithmetic "
                f"(largest |value| {np.abs(numbers).max():.3g}); rescale it"
            )
    return values.reset_index(drop=True)
