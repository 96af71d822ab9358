"""What every downstream family takes from the built-in family it wraps."""

from __future__ import annotations

from typing import Any

from ..families import EncodedResponse, Family

__all__ = ["WrappedFamily"]


class WrappedFamily(Family):
    """A family whose model is not a likelihood, with a built-in family's coding and losses.

    The network (:class:`~pearlstats.downstream.mlp.MLPFamily`) and the fit/predict estimator
    (:class:`~pearlstats.downstream.estimator.EstimatorFamily`) code and check the response,
    name themselves and choose their default and sensitivity losses exactly as the *base*
    family does; only how a candidate is fitted and predicted is their own.

    Parameters
    ----------
    base : Family
        The built-in family (gaussian, binomial, multinomial, poisson) being wrapped.
    """

    likelihood = False  # no log-likelihood with a parameter count: no AICc or BIC strategy

    def __init__(self, base: Family):
        self.base = base
        self.name = base.name
        self.default_loss = base.default_loss
        self.sensitivity_losses = base.sensitivity_losses

    def encode(self, values: Any) -> EncodedResponse:
        return self.base.encode(values)

    def check_fit_response(self, response: EncodedResponse) -> None:
        # The base family's checks (a constant gaussian response, magnitudes, offsets): a
        # downstream model has nothing more to predict from a constant response than OLS.
        self.base.check_fit_response(response)
