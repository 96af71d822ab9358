"""The precision of a risk: below it a risk is 0 to rounding, and a ratio of risks is noise.

An exact fit (``y = 1 + 0.3 x``) has held-out risks of about 1e-32: rounding, not a
finding; PEARL / MS of two such numbers can read 3.9 and warn that PEARL is worse. The
rule, one for every table that divides risks (``res.baselines``, ``res.honest`` on both
backends and with nested SEs, the summary's notes):

    a risk is 0 to the response's precision when it is at most ``floor``,
    ``floor = eps**(q / 2) * R_null``,

where ``R_null`` is the intercept-only model's risk on the same rows (the response's
spread in the loss's units: its variance for the squared loss) and ``q`` the power of the
loss in the residual near a perfect fit (2 for the squared loss and the Poisson deviance,
1 for the absolute, hinge and cross-entropy losses). Why ``sqrt(eps)`` of the spread in
residual units: the least squares behind every candidate's predictions (fold Gram
matrices, normal equations) are accurate to ``eps * cond(X)**2`` of the response's
spread, so on designs with ``cond(X)`` up to ``eps**(-1/4)`` (about 8e3, beyond which a
standardised block is nearly collinear) predictions are good to ``sqrt(eps)`` of it and
no closer; a risk below ``floor`` is then R^2 = 1 within what the arithmetic resolves.
The floor scales with the response, so it holds in any units.

Examples
--------
>>> bool(risk_floor("squared", 4.0) == np.finfo(float).eps * 4.0)
True
>>> risk_ratios(np.array([1e-32, 3e-32, 0.5]), 0, risk_floor("squared", 0.5)).tolist()
[nan, nan, 0.0]
"""

from __future__ import annotations

import numpy as np

from .baselines import NULL

__all__ = ["EXACT_FIT_NOTE", "UNSCORED_NOTE", "exact_fit_notes", "null_floor", "risk_floor",
           "risk_ratios"]

# Losses growing like the square of the residual near a perfect fit (the rest: linearly).
_QUADRATIC = frozenset({"squared", "poisson_deviance"})

EXACT_FIT_NOTE = "risk 0 to the response's precision (exact fit): ratio undefined"
UNSCORED_NOTE = ("risk undefined: some rows have no prediction (its candidates failed in "
                 "the cross-validation; see res.failures)")


def risk_floor(loss_name: str, null_risk: float) -> float:
    """The largest risk that is 0 to the response's precision (see the module's text).

    *null_risk* is the intercept-only model's risk on the same rows; NaN or a negative
    value gives a floor of 0 (no risk is then called 0).
    """
    power = 2 if loss_name in _QUADRATIC else 1
    floor = np.finfo(float).eps ** (power / 2) * float(null_risk)
    return floor if np.isfinite(floor) and floor > 0 else 0.0


def risk_ratios(risks: np.ndarray, reference: int, floor: float) -> np.ndarray:
    """``risks[reference] / risks``, NaN where the divisor is 0 to the response's precision.

    A numerator within *floor* is 0 to that precision too, and so is the ratio: exactly 0
    when the divisor is a real risk (NaN when the divisor is within *floor* as well).

    Examples
    --------
    >>> risk_ratios(np.array([1e-20, 2.0, 0.0]), 0, 1e-12).tolist()
    [nan, 0.0, nan]
    >>> risk_ratios(np.array([1.0, 2.0, 0.0]), 0, 1e-12).tolist()
    [1.0, 0.5, nan]
    """
    risks = np.asarray(risks, dtype=float)
    exact = risks <= floor
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = risks[reference] / np.where(exact, np.nan, risks)
    if exact[reference]:
        ratios = np.where(exact, np.nan, 0.0 * ratios)  # 0 over a real risk: exactly 0
    return ratios


def null_floor(loss_name: str | None, names: list, risks: np.ndarray) -> float:
    """:func:`risk_floor` from a table's risks, whose row ``"Null"`` is the intercept-only
    model's (0 when there is no such row or no loss is named)."""
    if loss_name is None or NULL not in names:
        return 0.0
    return risk_floor(loss_name, risks[list(names).index(NULL)])


def exact_fit_notes(risks: np.ndarray, floor: float) -> list[str]:
    """Per risk, why it or its ratio is missing: :data:`EXACT_FIT_NOTE` where it is 0 to the
    response's precision, :data:`UNSCORED_NOTE` where it is NaN, else ``""``."""
    return [EXACT_FIT_NOTE if value <= floor else UNSCORED_NOTE if np.isnan(value) else ""
            for value in np.asarray(risks, dtype=float)]
