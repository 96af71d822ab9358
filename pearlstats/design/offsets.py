"""``offset(expr)`` terms of a formula: evaluated on the fit's rows and rebuilt for new rows.

``y ~ offset(np.log(t)) + block(a)`` adds ``np.log(t)`` to every candidate's linear
predictor, as R's and statsmodels' formula offsets do. The expression is evaluated with the
data's columns first, then the caller's names (as the covariate terms; the names it takes
from the caller travel with the design's covariate namespace, so prediction rebuilds it
from the new rows' columns).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from patsy import EvalEnvironment

from ..exceptions import DataError, format_positions
from .formula import _PATSY_BUILTINS, FormulaSpec

__all__ = ["formula_offset"]


def formula_offset(spec: FormulaSpec, frame: pd.DataFrame, eval_env: EvalEnvironment | dict,
                   missing: str | None = None) -> np.ndarray | None:
    """The sum of the formula's ``offset()`` expressions on *frame*'s rows (None without one).

    Parameters
    ----------
    spec : FormulaSpec
    frame : DataFrame
        The rows' columns.
    eval_env : patsy.EvalEnvironment or dict
        Where other names are looked up (a dict: a namespace, e.g. the design's covariate one).
    missing : {None, "raise", "drop"}
        The fit's option: with ``"drop"`` NaN/inf values are returned (the fit drops their
        rows, as statsmodels does); otherwise they are refused.

    Raises
    ------
    DataError
        An expression that cannot be evaluated, is not one number per row, or is not finite.
    """
    if not spec.offset_codes:
        return None
    if isinstance(eval_env, dict):
        eval_env = EvalEnvironment([eval_env])
    env = eval_env.with_outer_namespace(_PATSY_BUILTINS)
    total = np.zeros(len(frame))
    for code in spec.offset_codes:
        try:
            values = np.asarray(env.eval(code, inner_namespace=frame), dtype=float)
        except Exception as err:  # patsy evaluates arbitrary user code
            raise DataError(f"cannot evaluate offset({code}) on the rows: {err} (columns: "
                            f"{sorted(map(str, frame.columns))[:20]})") from err
        if values.shape != (len(frame),):
            raise DataError(f"offset({code}) must be one number per row ({len(frame)}), got "
                            f"shape {values.shape}")
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size and missing != "drop":
            hint = "" if missing is None else "; pass missing='drop' to drop those rows"
            raise DataError(f"offset({code}) is NaN or infinite at "
                            f"{format_positions(bad, labels=frame.index)}{hint}")
        total += values
    return total
