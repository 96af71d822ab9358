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
import builtins
import difflib
import importlib
import pickle
import re
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import patsy
from patsy import EvalEnvironment, ModelDesc, PatsyError

from .._warnings import warn
from ..checks import check_magnitude
from ..exceptions import (
    DataError,
    FormulaError,
    MissingValueError,
    PearlWarning,
    ResponseError,
    format_positions,
)
from .data import check_no_dates

__all__ = [
    "FormulaSpec", "CovariateSpec", "parse_formula", "build_covariates", "covariate_row_variables",
    "response_values", "expression_missing_rows",
]


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
    response_variables : frozenset of str
        Names the response expression refers to (``y`` in ``np.log(y)``).
    offset_codes : tuple of str
        The expressions inside ``offset(...)`` terms (``np.log(t)``), added to every
        candidate's linear predictor (:mod:`pearlstats.design.offsets`).
    """

    formula: str
    response: str
    block_names: tuple[str, ...]
    covariate_desc: ModelDesc
    response_variables: frozenset[str]
    offset_codes: tuple[str, ...] = ()

    def __reduce__(self):
        # patsy objects do not pickle; the formula string rebuilds everything.
        return parse_formula, (self.formula,)


def _referenced_names(code: str) -> set[str]:
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError as err:  # patsy accepted it, so this is defensive only
        raise FormulaError(f"cannot parse the term {code!r}: {err}") from err
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    # Q("my y") reads the column named by its string: that column is what the code uses.
    quoted = {
        node.args[0].value for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Q"
        and len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    }
    return names | quoted


# patsy's formula functions (I, Q, C, center, ...), which patsy itself provides to every term.
_PATSY_BUILTINS = {name: getattr(patsy.builtins, name) for name in patsy.builtins.__all__}


# offset(EXPR): an offset term, pulled out of the covariates (pearlstats.design.offsets)
_OFFSET = re.compile(r"^\s*offset\s*\((.*)\)\s*$", re.DOTALL)

# block(NAME) with any identifier, Python keywords included: block(class) names a block "class".
_BARE_BLOCK = re.compile(r"^\s*block\s*\(\s*([A-Za-z_]\w*)\s*\)\s*$")


def _block_call_name(code: str) -> str | None:
    """Return NAME when *code* is exactly ``block(NAME)`` or ``block("NAME")``."""
    bare = _BARE_BLOCK.match(code)
    if bare:
        return bare.group(1)
    try:
        tree = ast.parse(code, mode="eval").body
    except SyntaxError:
        if _mentions_block(code):
            raise FormulaError(
                f"{code!r}: write a block term as block(name) or block('name')"
            ) from None
        return None
    if not (
        isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == "block"
    ):
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
    try:
        tree = ast.parse(code, mode="eval")
    except SyntaxError:
        return re.search(r"\bblock\s*\(", code) is not None
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
        raise FormulaError(
            "formula must be a string such as 'y ~ block(a) "
            f"+ block(b)', got {type(formula).__name__}"
        )
    try:
        desc = ModelDesc.from_formula(formula)
    except PatsyError as err:
        raise FormulaError(f"cannot parse formula {formula!r}: {err.message}") from err
    if len(desc.lhs_termlist) != 1 or len(desc.lhs_termlist[0].factors) != 1:
        raise FormulaError(
            f"formula {formula!r} needs exactly one response "
            "on the left of '~', e.g. 'y ~ block(a)'"
        )
    response = desc.lhs_termlist[0].factors[0].code

    block_names: list[str] = []
    covariate_terms = []
    offset_codes: list[str] = []
    for term in desc.rhs_termlist:
        codes = [factor.code for factor in term.factors]
        named = [_block_call_name(code) for code in codes]
        if len(codes) == 1 and named[0] is not None:
            if named[0] in block_names:
                raise FormulaError(
                    f"block({named[0]}) appears twice in {formula!r}; name each block once"
                )
            block_names.append(named[0])
            continue
        inner = _OFFSET.match(codes[0]) if len(codes) == 1 else None
        if inner is not None:
            offset_codes.append(inner.group(1))
            continue
        if any(_OFFSET.match(code) for code in codes):
            raise FormulaError(f"term {term.name()!r} in {formula!r} uses offset() inside an "
                               "interaction; an offset must stand alone as '+ offset(expr)'")
        if any(_mentions_block(code) for code in codes):
            raise FormulaError(
                f"term {term.name()!r} in {formula!r} uses block() inside an interaction or a "
                "function; a block must stand alone as 'block(name)' (interactions with blocks "
                "are not supported)"
            )
        covariate_terms.append(term)
    if not block_names:
        raise FormulaError(
            f"formula {formula!r} has no block(name) term; PEARL averages models over "
            "representation blocks, e.g. 'y ~ block(pca) + block(kpca_rbf)'"
        )
    return FormulaSpec(
        formula=formula,
        response=response,
        block_names=tuple(block_names),
        covariate_desc=ModelDesc([], covariate_terms),
        response_variables=frozenset(_referenced_names(response)),
        offset_codes=tuple(offset_codes),
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
                f"{what} {column!r} has missing or infinite values at "
                f"{format_positions(bad, labels=frame.index)}; "
                "remove or impute them (pearl.fit and res.evaluate drop such rows with "
                "missing='drop'; res.predict gives them NaN with missing='nan')"
            )


def _check_exact_integers(frame: pd.DataFrame, columns) -> None:
    """Refuse an integer covariate whose distinct values float64 cannot keep apart.

    The design is float64, which holds integers exactly only up to 2**53: ``2**60 + k`` for
    k in 0..999 becomes 5 distinct values (multiples of 256), and the fit's slope was 9 %
    off with no word. Large integers that float64 does hold (multiples of 2**10 near 2**60,
    say) pass.
    """
    for column in columns:
        values = frame[column]
        if not pd.api.types.is_integer_dtype(values.dtype) or values.dtype == bool:
            continue
        exact = values.dropna().to_numpy(dtype=values.dtype.numpy_dtype
                                         if hasattr(values.dtype, "numpy_dtype") else None)
        if exact.size == 0 or int(np.max(np.abs(exact.astype(float)))) <= 2**53:
            continue
        given, kept = np.unique(exact).size, np.unique(exact.astype(float)).size
        if kept < given:
            raise DataError(
                f"covariate {column!r} holds integers beyond 2**53 that float64 cannot tell "
                f"apart: its {given} distinct values become {kept} (e.g. {int(exact[0])} is "
                f"read as {int(exact[0].astype(float))}); subtract a reference value first, "
                f"e.g. data[{column!r}] - data[{column!r}].min()"
            )


def _without_value_warnings():
    """numpy's warnings of a term without a value (np.log(0)) off: the rows are named instead."""
    return np.errstate(divide="ignore", invalid="ignore")


def _check_finite_terms(matrix: np.ndarray, names: Sequence[str], labels: pd.Index) -> None:
    """Refuse covariate columns without a finite value from finite row variables.

    ``np.log(x)`` of a new row's ``x = 0`` is -inf (its prediction would be infinite, a
    probability of 0 or 1) and of ``x < 0`` NaN, where ``pearl.fit`` and
    ``predict(missing="nan")`` take the row as having no value.
    """
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(matrix)
    bad = np.flatnonzero(~finite.all(axis=1))
    if bad.size:
        terms = [name for name, column in zip(names, finite.T) if not column.all()]
        raise MissingValueError(
            f"covariate term(s) {terms} have no finite value at "
            f"{format_positions(bad, labels=labels)} (e.g. np.log(x) of x <= 0); remove those "
            "rows (res.predict gives them NaN with missing='nan'; res.evaluate drops them with "
            "missing='drop')"
        )


def _picklable_namespace(namespace: dict | None) -> dict:
    """Modules by name, other objects as they are (they must pickle)."""
    return {
        name: ("module", value.__name__)
        if isinstance(value, types.ModuleType)
        else ("object", value)
        for name, value in (namespace or {}).items()
    }


def _travels(value) -> bool:
    """Whether *value* survives a pickle of the namespace (modules travel by name)."""
    if isinstance(value, types.ModuleType):
        return True
    try:
        pickle.dumps(value)
    except Exception:  # any object's __reduce__ may raise anything
        return False
    return True


def _restore_namespace(namespace: dict) -> dict:
    return {
        name: importlib.import_module(value) if kind == "module" else value
        for name, (kind, value) in namespace.items()
    }


class _RecordingFrame(pd.DataFrame):
    """A DataFrame that remembers which columns were looked up by name.

    patsy evaluates every factor (``x``, ``np.log(x)``, ``Q("my x")``,
    ``center(x)``, ``C(g)``) by looking names up in the data first; recording
    those look-ups gives exactly the columns the formula reads, however they
    are spelled, without parsing the formula by hand.
    """

    _metadata = ["read_columns"]

    @property
    def _constructor(self):
        return pd.DataFrame

    def __getitem__(self, key):
        value = super().__getitem__(key)
        if isinstance(key, str) and key not in self.read_columns:
            self.read_columns.append(key)
        return value


def _is_row_variable(value, n_rows: int) -> bool:
    """Whether a name from the caller's namespace holds one value per data row."""
    if isinstance(value, (pd.Series, np.ndarray)):
        return value.ndim == 1 and len(value) == n_rows
    return isinstance(value, (list, tuple)) and len(value) == n_rows and n_rows > 1


def _unknown_names(spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment) -> list:
    """Names in the covariate terms that are not data columns, caller's variables or builtins."""
    names = [name for term in spec.covariate_desc.rhs_termlist for factor in term.factors
             for name in patsy.eval.ast_names(factor.code)]
    return list(dict.fromkeys(
        name for name in names if name not in frame.columns and name not in eval_env.namespace
        and not hasattr(builtins, name)
    ))


def columns_by_closeness(names: list, columns: Iterable, limit: int = 20) -> str:
    """The columns as a list, those closest to *names* (difflib) first; long lists truncated."""
    def closeness(column: str) -> float:
        return max(difflib.SequenceMatcher(None, str(name), column).ratio() for name in names)

    ordered = sorted(dict.fromkeys(str(column) for column in columns), key=closeness, reverse=True)
    more = f" and {len(ordered) - limit} more" if len(ordered) > limit else ""
    return f"{ordered[:limit]}{more}"


def covariate_row_variables(
    spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment
) -> tuple[pd.DataFrame, tuple[str, ...]]:
    """The per-row variables the covariate terms read, as data columns.

    Names the terms take from the data are found by letting patsy evaluate
    the terms on a frame that records its look-ups. One-value-per-row arrays
    the terms take from the caller's namespace (``y ~ z + block(a)`` with a
    local ``z``) are copied into the frame as columns: they are data, so
    missing-value handling, pickling and prediction (where new rows must
    bring their own ``z``) treat them like any other column.

    Returns
    -------
    frame : DataFrame
        *frame* with the namespace row variables added.
    row_variables : tuple of str
        Every column the covariate terms read, in first-read order.

    Raises
    ------
    DataError
        A term cannot be evaluated (e.g. it names a column that does not exist).
    """
    termlist = spec.covariate_desc.rhs_termlist
    if (any(not term.factors for term in termlist)
            and any(term.factors and term.name() == "Intercept" for term in termlist)):
        # patsy names the intercept's column "Intercept" too, and fails inside (a ValueError)
        raise FormulaError(
            f"the formula {spec.formula!r} uses a variable named 'Intercept', the name of the "
            "intercept's column; rename the variable (e.g. data.rename(columns={'Intercept': "
            "'intercept_'})) or drop the term (the formula has an intercept unless it says - 1)"
        )
    # columns patsy cannot evaluate (a time-zone aware date, a Period: numpy's TypeError
    # inside patsy) are named before it reads them
    check_no_dates(frame, sorted({name for term in termlist for factor in term.factors
                                  for name in patsy.eval.ast_names(factor.code)}))
    recorder = _RecordingFrame(frame)
    recorder.read_columns = []
    try:
        # this evaluation records the columns read; a term without a value in some row
        # (np.log(0)) is named where the matrix is built, not warned of here
        with _without_value_warnings():
            patsy.dmatrix(spec.covariate_desc, recorder, eval_env=eval_env, NA_action="drop",
                          return_type="matrix")
    except PatsyError as err:
        unknown = _unknown_names(spec, frame, eval_env)
        if unknown:
            raise DataError(
                f"the covariate terms of {spec.formula!r} read {unknown}, which the data has no "
                f"column for (and the caller has no such variable); the data's columns, closest "
                f"first: {columns_by_closeness(unknown, frame.columns)}"
            ) from err
        raise DataError(
            f"cannot build the covariate terms of {spec.formula!r}: {err.message}"
        ) from err
    read = list(recorder.read_columns)
    extra = {}
    for term in spec.covariate_desc.rhs_termlist:
        for factor in term.factors:
            for name in patsy.eval.ast_names(factor.code):
                if name in frame.columns or name in extra or name not in eval_env.namespace:
                    continue
                value = eval_env.namespace[name]
                if _is_row_variable(value, len(frame)):
                    extra[name] = np.asarray(value)
    if extra:
        frame = frame.assign(**extra)
    return frame, tuple(read + [name for name in extra if name not in read])


@dataclass(frozen=True)
class CovariateSpec:
    """What rebuilds the covariate columns (intercept and ordinary terms) for any rows.

    The columns come from patsy's ``DesignInfo`` of the fit, so ``Q()``,
    ``I()``, transforms, stateful transforms (``center``, ``standardize``),
    categorical levels and names from the caller's namespace behave as in
    statsmodels' ``results.predict``.

    Attributes
    ----------
    design_info : patsy.DesignInfo
    row_variables : tuple of str
        Data columns the terms read; rows to predict must have every one.
    numeric_variables : frozenset of str
        Row variables that were numeric at fit time (object columns of
        numbers in new rows are converted back).
    spec : FormulaSpec
    training_columns : DataFrame
        The row variables of the fit's rows: pickling rebuilds the same
        ``DesignInfo`` from them (patsy's own objects do not pickle).
    namespace : dict
        Other names the terms and the response took from the caller (functions,
        modules, constants).
    """

    design_info: patsy.DesignInfo
    row_variables: tuple[str, ...]
    numeric_variables: frozenset[str]
    spec: FormulaSpec
    training_columns: pd.DataFrame
    namespace: dict

    @property
    def names(self) -> list[str]:
        """patsy's column names (``Intercept``, ``x``, ``C(g)[T.b]``, ...)."""
        return list(self.design_info.column_names)

    def __reduce__(self):
        return _rebuild_covariates, (
            self.spec,
            self.training_columns,
            _picklable_namespace(self.namespace),
        )

    def matrix(self, frame: pd.DataFrame) -> np.ndarray:
        """The covariate columns of *frame*'s rows.

        Raises
        ------
        DataError
            A row variable is missing, a numeric one is not numeric, or a
            categorical has a level unseen at fit time.
        MissingValueError
            A row variable has NaN or inf.
        """
        missing = [name for name in self.row_variables if name not in frame.columns]
        if missing:
            raise DataError(
                f"the new rows lack the column(s) {missing} that the covariate terms of "
                f"{self.spec.formula!r} read; give every row its own value"
                + (f" (the new rows' columns, closest first: "
                   f"{columns_by_closeness(missing, frame.columns)})" if len(frame.columns) else "")
            )
        frame = _numeric_again(frame, self.numeric_variables, self.training_columns)
        _check_finite_columns(frame, self.row_variables, "covariate")
        if not self.names:
            return np.empty((len(frame), 0))
        rows = (
            _known_levels(frame[list(self.row_variables)], self.design_info, self.row_variables,
                          self.training_columns)
            if self.row_variables
            else pd.DataFrame(index=frame.index)
        )
        try:
            # the row variables have values (checked above): a NaN or inf now is an
            # expression's (np.log(x) of x <= 0), named by _check_finite_terms
            with _without_value_warnings():  # named below instead
                (matrix,) = patsy.build_design_matrices(
                    [self.design_info], rows, NA_action=patsy.NAAction(NA_types=[]))
        except PatsyError as err:
            term = f" {err.origin.relevant_code()!r}" if err.origin is not None else "s"
            raise DataError(
                f"cannot build the covariate term{term} for the new rows: {err.message}"
            ) from err
        matrix = np.asarray(matrix, dtype=float)
        _check_finite_terms(matrix, self.names, frame.index)
        return matrix


def _factor_variable(code: str, row_variables) -> str | None:
    """The row variable a categorical factor reads as it is (``g``, ``C(g)``, ``C(g, ...)``)."""
    match = re.fullmatch(r"\s*(?:C\(\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:[,)].*)?", code, re.S)
    name = match.group(1) if match else None
    return name if name in row_variables and (name == code.strip() or code.startswith("C(")) \
        else None


def _known_levels(rows: pd.DataFrame, design_info, row_variables,
                  training: pd.DataFrame) -> pd.DataFrame:
    """New rows' categorical columns as plain values, refused by name where a level is unknown.

    patsy compares a pandas Categorical's whole category list with the training levels
    ("mismatching levels"), so a subset or reordering of known levels failed though every
    value is known. As plain values they are matched to the training levels one by one, as
    strings are; a value outside those levels is named here, with the levels that are known.
    A category of a pandas Categorical that no row of the fit has (*training*, the fit's
    rows) is unknown too: its coefficient is not identified (NaN in ``params``), and a row
    of it was predicted as the reference level.
    """
    converted = {}
    for factor, info in design_info.factor_infos.items():
        name = _factor_variable(factor.code, row_variables)
        if info.type != "categorical" or name is None:
            continue
        column = rows[name]
        values = column.astype(object) if isinstance(column.dtype, pd.CategoricalDtype) else column
        levels = list(info.categories)
        fitted = training[name] if name in training else None
        if fitted is not None and isinstance(fitted.dtype, pd.CategoricalDtype):
            # only a Categorical has levels without rows (patsy takes strings' from the rows)
            codes = np.unique(fitted.cat.codes.to_numpy())
            seen = set(fitted.cat.categories[codes[codes >= 0]])
            levels = [level for level in levels if level in seen]
        unknown = [value for value in pd.unique(values.dropna()) if value not in levels]
        if unknown:
            empty = [value for value in unknown if value in set(info.categories)]
            why = (f" (categories of the fit's pandas Categorical without rows: {empty[:10]}, "
                   "whose coefficients are not identified)" if empty else "")
            raise DataError(
                f"cannot build the covariate term {factor.code!r} for the new rows: column "
                f"{name!r} has level(s) {unknown[:10]} that the fit never saw{why}; its known "
                f"levels are {levels}: map the new values to those levels, or refit with "
                "rows of the new levels"
            )
        if values is not column:
            converted[name] = values
    return rows.assign(**converted) if converted else rows


def _numeric_again(frame: pd.DataFrame, numeric: frozenset[str],
                   training: pd.DataFrame) -> pd.DataFrame:
    """Convert object or string columns of numbers back to numbers (numeric at fit time).

    A column of numbers at fit time that holds True/False in the new rows is read as 1/0:
    patsy, which treats booleans as categories, otherwise fails inside its own error
    message ("'DataFrame' object has no attribute 'dtype'").
    """
    converted = {}
    for name in numeric:
        if name not in frame.columns:
            continue
        column = frame[name]
        if column.dtype.kind not in "biuf":
            try:
                column = pd.to_numeric(column)
            except (TypeError, ValueError) as err:
                if pd.api.types.is_bool_dtype(training[name].dtype):
                    shown = list(pd.unique(column.dropna()))[:5]
                    raise DataError(
                        f"column {name!r} was boolean (True/False) at fit time but holds "
                        f"{shown} in the new rows; give True/False, e.g. "
                        f"data[{name!r}] == 'True' for strings"
                    ) from err
                raise DataError(
                    f"column {name!r} was numeric at fit time but holds non-numeric values in the "
                    f"new rows ({err}); convert it to numbers"
                ) from err
        if column.dtype.kind == "b" and training[name].dtype.kind != "b":
            column = column.astype(float)
        if column is not frame[name]:
            converted[name] = column
    return frame.assign(**converted) if converted else frame


def _rebuild_covariates(spec, training_columns, namespace) -> CovariateSpec:
    env = EvalEnvironment([_restore_namespace(namespace)])
    return build_covariates(spec, training_columns, env)[0]


def _warn_numbers_as_levels(design_info: patsy.DesignInfo, n: int) -> None:
    """Warn of a covariate read as categories whose many levels are numbers.

    A numeric column stored as strings or objects (a CSV column with a stray ``"?"``) is
    coded by patsy, as statsmodels codes it, with one dummy column per distinct value: every
    candidate then has about as many coefficients as rows and fails with a message about
    parameters, not about the column. ``C(x)`` says the levels are meant.
    """
    for factor, info in design_info.factor_infos.items():
        code = factor.code.replace(" ", "")
        if info.type != "categorical" or code.startswith("C("):
            continue
        levels = [str(level) for level in info.categories]
        if len(levels) <= max(10, n // 4):
            continue
        numbers = pd.to_numeric(pd.Series(levels), errors="coerce").notna().mean()
        if numbers >= 0.9:
            warn(f"covariate {factor.code!r} is read as categories ({len(levels)} levels in {n} "
                 f"rows, e.g. {levels[:3]}), which are numbers: each level becomes a dummy "
                 "column. If it holds numbers (a column with a non-number reads as strings), "
                 f"convert it, e.g. data[{factor.code!r}] = pd.to_numeric(data[{factor.code!r}], "
                 "errors='coerce'); write C(...) to keep the levels on purpose", PearlWarning)


def build_covariates(
    spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment
) -> tuple[CovariateSpec, np.ndarray]:
    """Build the covariate columns of the fit's rows and what rebuilds them.

    Parameters
    ----------
    spec : FormulaSpec
    frame : DataFrame
        The fit's rows, with every row variable as a column (see
        :func:`covariate_row_variables`).
    eval_env : patsy.EvalEnvironment
        Where functions such as ``np.log`` in the formula are looked up.

    Returns
    -------
    covariates : CovariateSpec
    matrix : ndarray of shape (n, q)
    """
    frame, row_variables = covariate_row_variables(spec, frame, eval_env)
    _check_finite_columns(frame, row_variables, "covariate")
    _check_exact_integers(frame, row_variables)
    # a term such as np.log(x) has no value where x <= 0: the check below names those rows
    try:
        with _without_value_warnings():
            matrix = patsy.dmatrix(spec.covariate_desc, frame, eval_env=eval_env,
                                   NA_action="raise", return_type="matrix")
    except PatsyError as err:
        # patsy refuses the NaN of np.log(x < 0): built again with the NaN kept
        try:
            with _without_value_warnings():
                matrix = patsy.dmatrix(spec.covariate_desc, frame, eval_env=eval_env,
                                       NA_action=patsy.NAAction(NA_types=[]),
                                       return_type="matrix")
        except PatsyError:
            raise DataError(
                f"cannot build the covariate terms of {spec.formula!r}: {err.message}"
            ) from err
    values = np.asarray(matrix, dtype=float)
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if bad.size:
        raise MissingValueError(
            f"covariate terms of {spec.formula!r} evaluate to NaN or inf at "
            f"{format_positions(bad, labels=frame.index)}; remove those rows, or pass "
            "missing='drop' to drop them"
        )
    for name, column in zip(matrix.design_info.column_names, values.T):
        check_magnitude(f"covariate column {name!r}", column)
    _warn_numbers_as_levels(matrix.design_info, len(frame))
    # Other names the terms took from the caller (functions, modules,
    # constants) travel with a pickle; row variables travel as columns.
    names = {name for term in spec.covariate_desc.rhs_termlist for factor in term.factors
             for name in patsy.eval.ast_names(factor.code)}
    names |= {name for code in spec.offset_codes for name in patsy.eval.ast_names(code)}
    namespace = {
        name: eval_env.namespace[name]
        for name in sorted(names - set(frame.columns))
        if name in eval_env.namespace
    }
    # The response's too (np in np.log(y)): evaluate() computes it for the test rows. Not a
    # one-value-per-row array (the fit's data, never the test rows'), and only what pickles, so
    # that a response using a lambda does not stop results from pickling (or the bootstrap's
    # workers from starting); evaluate() then names what it lacks.
    for name in sorted(set(spec.response_variables) - set(frame.columns) - set(namespace)):
        value = eval_env.namespace[name] if name in eval_env.namespace else None
        if value is not None and not _is_row_variable(value, len(frame)) and _travels(value):
            namespace[name] = value
    numeric = frozenset(name for name in row_variables if frame[name].dtype.kind in "biuf")
    covariates = CovariateSpec(
        matrix.design_info, row_variables, numeric, spec,
        frame[list(row_variables)].reset_index(drop=True).copy(), namespace,
    )
    return covariates, values


def _evaluate_response(spec: FormulaSpec, frame: pd.DataFrame,
                       eval_env: EvalEnvironment) -> pd.Series:
    """The response's values (a column, or an expression of columns), missing ones included."""
    if spec.response.isidentifier():
        if spec.response not in frame.columns:
            raise DataError(
                f"response {spec.response!r} is not a column of "
                f"the data (columns: {sorted(frame.columns)[:20]})"
            )
        values = frame[spec.response]
    else:
        # As in statsmodels, a response such as I(y > 0) or Q("my y") may use patsy's functions.
        env = eval_env.with_outer_namespace(_PATSY_BUILTINS)
        missing = [name for name in _referenced_names(spec.response) if name not in frame.columns]
        unknown = [name for name in missing if name not in env.namespace]
        if unknown:
            raise DataError(
                f"response {spec.response!r} refers to {unknown}, which is not a column of the data"
            )
        try:
            result = env.eval(spec.response, inner_namespace=frame)
        except Exception as err:
            raise DataError(f"cannot evaluate the response {spec.response!r}: {err}") from err
        if all(hasattr(result, name) for name in ("data", "contrast", "levels")):
            # C(g) or C(g, levels=[...]): the classes, in the order of its levels if it gives them
            data = np.asarray(result.data)
            result = data if result.levels is None else pd.Categorical(data, result.levels)
        # A single value (e.g. I(1)) would otherwise be repeated on every row.
        if np.ndim(result) != 1 or len(result) != len(frame):
            raise DataError(
                f"response {spec.response!r} must be one value per row of the data; it evaluates "
                f"to shape {np.shape(result)}"
            )
        values = pd.Series(result if isinstance(result, pd.Categorical) else np.asarray(result),
                           index=frame.index)
    if values.ndim != 1 or len(values) != len(frame):
        raise DataError(f"response {spec.response!r} must be one value per row of the data")
    return values


def expression_missing_rows(spec: FormulaSpec, frame: pd.DataFrame,
                            eval_env: EvalEnvironment, response: bool = True) -> np.ndarray:
    """Rows whose response (with *response*) or covariate terms evaluate to NaN or inf from
    finite columns.

    ``np.log(y) ~ np.log(x) + block(a)`` has no missing column where ``y`` or
    ``x`` is 0 or negative, yet those rows have no value; ``missing="drop"``
    drops them as statsmodels' ``missing="drop"`` does. Terms that cannot be
    evaluated are left for the design stage to report.

    Returns
    -------
    ndarray of bool (n,)
    """
    bad = np.zeros(len(frame), dtype=bool)
    if response and not spec.response.isidentifier():
        bad[_missing_positions(_evaluate_response(spec, frame, eval_env))] = True
    keep_nan = patsy.NAAction(NA_types=[])
    try:
        with _without_value_warnings():  # the rows found are the answer
            matrix = patsy.dmatrix(spec.covariate_desc, frame, eval_env=eval_env,
                                   NA_action=keep_nan, return_type="matrix")
    except PatsyError:
        return bad
    with np.errstate(invalid="ignore"):
        bad |= ~np.isfinite(np.asarray(matrix, dtype=float)).all(axis=1)
    return bad


def response_values(spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment) -> pd.Series:
    """Evaluate the response: a data column by name, or an expression such as ``np.log(y)``.

    The values keep the frame's row labels, so that a check of them (a family's) names a
    bad row as the user's data does.

    Raises
    ------
    DataError
        The response column is not in the data.
    MissingValueError
        The response has missing or infinite values (with their rows).
    ResponseError
        Values of types that cannot be ordered (e.g. ints and strings), or a
        numeric response so large that its squares overflow.
    """
    values = _evaluate_response(spec, frame, eval_env)
    bad = _missing_positions(values)
    if bad.size:
        raise MissingValueError(
            f"response {spec.response!r} has missing or infinite values at "
            f"{format_positions(bad, labels=values.index)}; remove them, or pass "
            "missing='drop' to drop those rows"
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
    return values
