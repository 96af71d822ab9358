"""Downstream model families: response encoding, fast CV fits, statsmodels refits.

=============  ==================  ===========================  ==========================
family         statsmodels model   cross-validation engine      prediction
=============  ==================  ===========================  ==========================
gaussian       ``OLS``             fold Gram matrices           mean
binomial       ``Logit``           batched Newton               P(y = second class)
multinomial    ``MNLogit``         batched Newton               class probabilities (n, C)
poisson        ``GLM(Poisson())``  batched Newton               mean
=============  ==================  ===========================  ==========================

The fast engines give the same numbers as the statsmodels fits (checked in the
tests); statsmodels remains the object users inspect for each candidate.

Examples
--------
>>> import pandas as pd
>>> fam = get_family("binomial")
>>> enc = fam.encode(pd.Series(["no", "yes", "yes"]))
>>> enc.classes, enc.y.tolist()
(['no', 'yes'], [0.0, 1.0, 1.0])
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.special import expit

from ._lazy import lazy_module
from ._warnings import warn
from .checks import check_magnitude
from .engines.glm import glm_cv_predict, glm_fit
from .engines.likelihood import mean_of
from .engines.multinomial import class_probabilities, multinomial_cv_predict, multinomial_fit
from .engines.ols import ols_cv_predict, ols_fit, ols_loo_predict
from .engines.weighted import weighted_cv_predict, weighted_fit
from .engines.weighted_ridge import weighted_penalty_weights
from .engines.wide import is_wide_design, wide_cv_predict, wide_fit_params
from .exceptions import DataError, OptionError, PearlWarning, ResponseError, format_positions
from .weights.losses import DEFAULT_LOSSES, check_response_variation

if TYPE_CHECKING:
    from statsmodels.base.model import LikelihoodModel

    from .design.candidates import Candidate
    from .engines._common import EngineOutput
    from .ledger import LedgerEntry

sm = lazy_module("statsmodels.api")  # the candidates' statsmodels models, on request

__all__ = ["EncodedResponse", "Family", "get_family", "FAMILIES", "LINK_OFFSET_LIMIT",
           "SEPARATION_CHOICES", "check_link_offset"]


@dataclass(frozen=True)
class EncodedResponse:
    """The response as the engines use it.

    Attributes
    ----------
    y : ndarray
        float values (gaussian, poisson), 0/1 floats (binomial) or int codes (multinomial).
    classes : list or None
        Original class labels for classification, in code order.
    """

    y: np.ndarray
    classes: list | None = None
    row_weights: np.ndarray | None = None
    offset: np.ndarray | None = None
    weight_type: str | None = None
    #: Where the offset came from (:attr:`ObservationWeights.offset_source`), for the summary.
    offset_source: str | None = None

    @property
    def n_classes(self) -> int:
        return 0 if self.classes is None else len(self.classes)

    @property
    def weighted(self) -> bool:
        """Whether observation weights or an offset (exposure) come with the rows."""
        return self.row_weights is not None or self.offset is not None

    def with_observation_weights(self, row_weights: np.ndarray | None, offset: np.ndarray | None,
                                 weight_type: str | None,
                                 offset_source: str | None = None) -> EncodedResponse:
        """The same response carrying observation weights and an offset (either may be None);
        *offset_source* says where the offset came from (the response's own by default)."""
        source = None if offset is None else offset_source or self.offset_source
        return EncodedResponse(self.y, self.classes, row_weights, offset, weight_type, source)

    def subset(self, rows: np.ndarray) -> EncodedResponse:
        """The response of *rows*, with their weights and offsets."""
        def pick(values):
            return None if values is None else values[rows]

        return EncodedResponse(self.y[rows], self.classes, pick(self.row_weights),
                               pick(self.offset), self.weight_type, self.offset_source)

    def weights_or_ones(self) -> np.ndarray:
        return np.ones(len(self.y)) if self.row_weights is None else self.row_weights

    def offset_or_zeros(self) -> np.ndarray:
        return np.zeros(len(self.y)) if self.offset is None else self.offset


def _class_levels(values: pd.Series) -> list:
    """The response's classes: a categorical's categories in their order, else sorted values.

    A category without rows is not a class (a fit cannot estimate its probability, and R's
    ``nnet::multinom`` drops such a group too); a :class:`PearlWarning` names it.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.dropna().unique())
        levels = [level for level in values.cat.categories if level in present]
        unused = [level for level in values.cat.categories if level not in present]
        if unused:
            warn(f"the response's categories {unused[:10]} have no rows: they are not classes "
                 f"of this fit, whose classes are {levels[:10]}", PearlWarning)
        return levels
    return sorted(pd.unique(values).tolist())


def _class_codes(values: pd.Series, levels: list) -> np.ndarray:
    """Each value's position in *levels* (every value is one of them)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        # Recoded by the categories, not rebuilt from the values: pandas deprecates building
        # a Categorical from one whose dtype has categories the new one lacks.
        return values.cat.set_categories(levels).cat.codes.to_numpy().astype(np.intp)
    return pd.Categorical(values, categories=levels).codes.astype(np.intp)


# Families whose candidates take observation weights and offsets (multinomial does not yet).
WEIGHTED_FAMILIES = ("gaussian", "binomial", "poisson")

SEPARATION_CHOICES = {
    "ridge": "refit a separated candidate with the smallest ladder ridge with a finite optimum",
    "drop": "give a separated candidate weight 0",
    "raise": "raise SeparationError naming the candidate",
}


# An offset o on the link scale enters the linear predictor X b + o, whose intercept absorbs
# o's level; after that cancellation the predictor keeps the digits eps |o| leaves, fewer than
# half float64's (sqrt(eps)) past |o| = 1 / sqrt(eps) = 6.7e7. Log-exposures and logits of
# real data are a few tens at most.
LINK_OFFSET_LIMIT = 1e7


def check_link_offset(offset: np.ndarray) -> None:
    """Refuse a link-scale offset beyond :data:`LINK_OFFSET_LIMIT` in magnitude.

    Raises
    ------
    DataError
        Naming its largest magnitude and the limit.
    """
    top = float(np.abs(offset).max(initial=0.0))
    if top > LINK_OFFSET_LIMIT:
        raise DataError(
            f"the offset has magnitude {top:.3g} on the link scale (log or logit), beyond "
            f"{LINK_OFFSET_LIMIT:g}: once the intercept absorbs its level the linear predictor "
            "keeps fewer than half float64's digits (a Poisson offset is log(exposure), a few "
            "tens at most); check its units, or give exposure= for a log offset"
        )


class Family:
    """Base class: one kind of downstream model.

    Attributes
    ----------
    separation : {"drop", "ridge", "raise"}
        What the logistic engines do with a candidate whose classes separate
        (``"drop"`` on the shared instances of :data:`FAMILIES`;
        :func:`pearlstats.fit` uses a configured copy, see :meth:`configured`).
    candidate_ridges : mapping
        Label -> ridge a fit chose for a candidate it moved up the ridge
        ladder. The later fits of that candidate on the same rows by this
        family object (the all-rows refit, the statsmodels refit) start from
        it. Re-runs of the procedure on other rows (nested cross-validation,
        the refitting bootstrap) set it aside and choose their own
        (:func:`~pearlstats.weight_stage.cross_validate_draws`): a ridge that
        only rows held out of a re-run made necessary must not inform it.
    likelihood : bool
        Whether a candidate is a likelihood model whose parameters are its design columns'
        coefficients (the information criteria's ``k``); False for a downstream network.
    engine_weighs_rows : bool
        Whether the family's own engine fits observation weights and offsets; otherwise
        :mod:`pearlstats.engines.weighted` fits them.
    """

    name: str = ""
    likelihood: bool = True
    engine_weighs_rows: bool = False
    default_loss: str = ""
    # the losses res.loss_sensitivity() compares by default
    sensitivity_losses: tuple[str, ...] = ()
    separation: str = "drop"
    candidate_ridges: Mapping = MappingProxyType({})

    def configured(self, *, separation: str | None = None,
                   candidate_ridges: Mapping | None = None) -> Family:
        """A copy with another separation policy and/or per-candidate ridges (self is unchanged)."""
        other = copy.copy(self)
        if separation is not None:
            other.separation = separation
        if candidate_ridges is not None:
            # a plain copy: a mappingproxy would not pickle
            other.candidate_ridges = dict(candidate_ridges)
        return other

    def candidate_ridge(self, label: str, ridge: float) -> float:
        """The ridge candidate *label* is fitted with: *ridge*, or the larger one chosen for it."""
        return max(float(ridge), float(self.candidate_ridges.get(label, 0.0)))

    def encode(self, values: pd.Series) -> EncodedResponse:
        raise NotImplementedError

    def check_fit_response(self, response: EncodedResponse) -> None:
        """Raise ResponseError if the rows a fit is given leave nothing to fit (new rows to
        evaluate or predict are not checked); the classification families check their classes
        in :meth:`encode` already. An offset on the link scale (logit, log) is refused past
        :data:`LINK_OFFSET_LIMIT`."""
        if response.offset is not None:
            check_link_offset(response.offset)

    def check_response_range(self, low: float, high: float, n: int) -> None:
        """The checks of :meth:`check_fit_response` and :meth:`encode` that the response's
        smallest and largest values (*low*, *high*, in the family's coding) over the fit's
        *n* rows decide: for rows that are not at hand (dask partitions), the same
        ResponseError from reductions taken where the rows live. None here (multinomial:
        its class pass checks the classes)."""

    # The public methods below state the contract (types, meaning) once; each family supplies
    # the underscore hook of the same name.

    def cv_predict(
        self,
        X: np.ndarray,
        response: EncodedResponse,
        candidates: Sequence[Candidate],
        folds: np.ndarray,
        ridge: float,
    ) -> EngineOutput:
        """Out-of-fold predictions of every candidate: fold k's rows from fits without them."""
        if response.weighted and not self.engine_weighs_rows:
            self._check_weighted(X)
            return weighted_cv_predict(self.name, X, response.y, response.weights_or_ones(),
                                       response.offset_or_zeros(), candidates, folds, ridge,
                                       self.separation, self.candidate_ridges)
        if response.weighted:
            self._check_weighted(X)
            return self._cv_predict(X, response, candidates, folds, ridge)
        if is_wide_design(X):  # sparse or very wide: wide candidates screened or fitted dual
            return wide_cv_predict(self, X, response, candidates, folds, ridge,
                                   lambda Xd, cs: self._cv_predict(Xd, response, cs, folds, ridge))
        return self._cv_predict(X, response, candidates, folds, ridge)

    def loo_predict(
        self,
        X: np.ndarray,
        response: EncodedResponse,
        candidates: Sequence[Candidate],
        ridge: float,
    ) -> EngineOutput:
        """Leave-one-out predictions; families without a closed form use n folds."""
        if response.weighted:  # the closed form has no row weights: n weighted folds
            return self.cv_predict(X, response, candidates, np.arange(len(response.y)), ridge)
        if is_wide_design(X):
            return wide_cv_predict(self, X, response, candidates, np.arange(X.shape[0]), ridge,
                                   lambda Xd, cs: self._loo_predict(Xd, response, cs, ridge))
        return self._loo_predict(X, response, candidates, ridge)

    def fit_params(
        self,
        X: np.ndarray,
        response: EncodedResponse,
        columns: np.ndarray,
        ridge: float,
        label: str,
    ) -> tuple[Any, list[LedgerEntry]]:
        """Coefficients on all rows and ledger notes for the refit."""
        if response.weighted and not self.engine_weighs_rows:
            self._check_weighted(X)
            return weighted_fit(self.name, X, response.y, response.weights_or_ones(),
                                response.offset_or_zeros(), columns, label,
                                self.candidate_ridge(label, ridge), self.separation)
        if response.weighted:
            self._check_weighted(X)
            return self._fit_params(X, response, columns, ridge, label)
        if is_wide_design(X):
            return wide_fit_params(self, X, response, columns, ridge, label,
                                   lambda Xd, cs: self._fit_params(Xd, response, cs, ridge, label))
        return self._fit_params(X, response, columns, ridge, label)

    def predict(self, params: Any, X_candidate: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict_with_offset(self, params: np.ndarray, X_candidate: np.ndarray,
                            offset: np.ndarray) -> np.ndarray:
        """Means of rows whose linear predictors get *offset* added (not multinomial)."""
        self._check_weighted(X_candidate)
        return mean_of(self.name, X_candidate @ params + offset)

    def _check_weighted(self, X) -> None:
        """Refuse, by name, what observation weights and offsets do not support yet."""
        if self.name not in WEIGHTED_FAMILIES:
            raise OptionError(
                f"observation weights/offsets are not yet supported with family={self.name!r}; "
                f"use one of {list(WEIGHTED_FAMILIES)}"
            )
        if is_wide_design(X):
            raise OptionError(
                "observation weights/offsets are not yet supported with sparse or wide blocks "
                "(more than 1 000 sparse columns); reduce the block, e.g. with a PCA"
            )

    def statsmodels_model(self, response: EncodedResponse, exog: pd.DataFrame) -> LikelihoodModel:
        raise NotImplementedError

    def statsmodels_results(
        self,
        response: EncodedResponse,
        exog: pd.DataFrame,
        params: Any,
        ridge: float,
        scale_penalty: np.ndarray,
    ) -> Any:
        """The statsmodels results of one candidate refitted on all rows.

        With ``ridge > 0`` the penalised fit is returned where statsmodels has
        an L2 fit (``fit_regularized`` with ``L1_wt=0``), started at our optimum;
        it states its penalty in the attributes ``penalty`` (in words),
        ``penalty_ridge`` and ``penalty_alpha`` (statsmodels' ``alpha``).
        """
        if response.weighted:
            return self._weighted_results(response, exog, params, ridge)
        return self._statsmodels_results(response, exog, params, ridge, scale_penalty)

    def _weighted_results(self, response, exog, params, ridge=0.0):
        """``GLM(y, exog, family, freq_weights= or var_weights=, offset=)`` fitted from *params*.

        With ``ridge > 0``: its ``fit_regularized(L1_wt=0)`` with the engines' weighted
        penalty (gaussian: ``WLS`` of ``y - offset``, whose penalised objective is the
        weighted mean loss's; statsmodels' GLM divides the log-likelihood by the number of
        rows, so its ``alpha`` carries ``sum(w) / n``).
        """
        w = response.weights_or_ones()
        start = np.asarray(params, dtype=float)
        if ridge > 0:
            alpha = ridge * weighted_penalty_weights(np.asarray(exog, dtype=float), w)
            if self.name == "gaussian":
                model = sm.WLS(response.y - response.offset_or_zeros(), exog, weights=w)
                return _state_penalty(model.fit_regularized(alpha=alpha, L1_wt=0.0), ridge,
                                      alpha)
            alpha = alpha * w.sum() / len(w)
        kwargs = {"offset": response.offset}
        if response.row_weights is not None:
            key = "freq_weights" if response.weight_type == "frequency" else "var_weights"
            kwargs[key] = response.row_weights
        glm_family = {"gaussian": sm.families.Gaussian, "binomial": sm.families.Binomial,
                      "poisson": sm.families.Poisson}[self.name]()
        model = sm.GLM(response.y, exog, family=glm_family, **kwargs)
        if ridge > 0:
            fitted = model.fit_regularized(alpha=alpha, L1_wt=0.0, start_params=start)
            return _state_penalty(fitted, ridge, alpha)
        return model.fit(start_params=start)

    def _cv_predict(self, X, response, candidates, folds, ridge):
        raise NotImplementedError

    def _loo_predict(self, X, response, candidates, ridge):
        return self.cv_predict(X, response, candidates, np.arange(len(response.y)), ridge)

    def _fit_params(self, X, response, columns, ridge, label):
        raise NotImplementedError

    def _statsmodels_results(self, response, exog, params, ridge, scale_penalty):
        if ridge > 0:
            alpha = ridge * scale_penalty
            model = self._penalized_model(response, exog, ridge)
            start = np.ravel(params, order="F")
            fitted = model.fit_regularized(alpha=alpha, L1_wt=0.0, start_params=start)
            return _state_penalty(fitted, ridge, alpha)
        return self._fit_unpenalized(self.statsmodels_model(response, exog), params)

    def _penalized_model(self, response, exog, ridge):
        """The model whose ``fit_regularized`` is the L2 fit (the family's own by default)."""
        return self.statsmodels_model(response, exog)

    def _fit_unpenalized(self, model, params):
        return model.fit(start_params=np.ravel(params, order="F"), disp=0)


def _state_penalty(fitted, ridge: float, alpha: np.ndarray):
    """Attach the penalty a statsmodels ``fit_regularized`` result was fitted with."""
    fitted.penalty_ridge = float(ridge)
    fitted.penalty_alpha = np.asarray(alpha, dtype=float)
    fitted.penalty = (
        f"L2 penalty, ridge={ridge:g}: fit_regularized(alpha=ridge * column variance, "
        "L1_wt=0), i.e. ridge / 2 * sum_j (sd_j * b_j)**2 over the non-intercept "
        "coefficients (sd_j: column j's SD) added to the mean loss"
    )
    return fitted


def _check_two_levels(levels: list) -> None:
    """Refuse a binomial response whose distinct values (sorted) are not exactly two."""
    if len(levels) != 2:
        numbers = [level for level in levels if isinstance(level, (int, float, np.number))
                   and not isinstance(level, (bool, np.bool_))]
        # values in [0, 1] of which some lie strictly between (a single 0 is no proportion)
        proportions = (len(numbers) == len(levels) and all(0 <= level <= 1 for level in numbers)
                       and any(0 < level < 1 for level in numbers))
        advice = ("; these look like proportions (successes / trials), which the binomial "
                  "family here does not take (R's cbind(successes, failures) is not offered); "
                  "the same likelihood: each row as a y = 1 row weighted by its successes and "
                  "a y = 0 row weighted by its failures (weights=, weight_type='frequency'), "
                  "with groups= the original row so that folds keep the pair together"
                  if proportions else "; use family='multinomial' for more classes")
        raise ResponseError(
            "the binomial family needs a response with exactly 2 distinct values, got "
            f"{len(levels)}: {levels[:10]}{advice}"
        )


def _check_some_count(high: float, n: int) -> None:
    """Refuse non-negative counts whose largest, *high*, over *n* rows is 0."""
    if high <= 0:
        # log(mean) -> -inf: no maximum-likelihood estimate (statsmodels' GLM raises), and
        # every candidate predicts 0, so there is nothing to weigh.
        raise ResponseError(
            f"the poisson family needs at least one positive count; the response is 0 in all {n} "
            "rows"
        )


def _require_numeric(values: pd.Series, family: str) -> np.ndarray:
    if values.dtype.kind == "b":
        return values.to_numpy(dtype=float)
    if values.dtype.kind not in "iuf":
        raise ResponseError(
            f"the {family} family needs a numeric response, got dtype {values.dtype} "
            f"(e.g. {values.iloc[0]!r}); use family='binomial' or 'multinomial' for class labels"
        )
    return values.to_numpy(dtype=float)


class Gaussian(Family):
    name = "gaussian"
    default_loss = DEFAULT_LOSSES["gaussian"]
    sensitivity_losses = ("squared", "absolute")

    def encode(self, values: pd.Series) -> EncodedResponse:
        return EncodedResponse(_require_numeric(values, self.name))

    def check_fit_response(self, response: EncodedResponse) -> None:
        """A response without variance leaves nothing to fit (``check_response_variation``).

        With an offset the candidates model ``y - offset`` (the mean is ``X b + offset``), so
        that is what must vary: ``y = 3`` with ``offset = 3 - y_real`` models ``y_real``.
        """
        where = "" if response.offset is None else " net of the offset"
        net = response.y if response.offset is None else response.y - response.offset
        check_response_variation(net, where)
        check_magnitude(f"the gaussian response{where}", net, power=4)  # risk SEs: r^4

    def check_response_range(self, low: float, high: float, n: int) -> None:
        # the largest |y| is at an extreme, so the test on the two extremes is the same
        check_response_variation(np.array([low, high]))

    def _cv_predict(self, X, response, candidates, folds, ridge):
        return ols_cv_predict(X, response.y, candidates, folds, ridge)

    def _loo_predict(self, X, response, candidates, ridge):
        return ols_loo_predict(X, response.y, candidates, ridge)

    def _fit_params(self, X, response, columns, ridge, label):
        return ols_fit(X, response.y, columns, ridge), []

    def predict(self, params: np.ndarray, X_candidate: np.ndarray) -> np.ndarray:
        return X_candidate @ params

    def statsmodels_model(self, response: EncodedResponse, exog: pd.DataFrame) -> LikelihoodModel:
        return sm.OLS(response.y, exog)

    def _fit_unpenalized(self, model, params):
        return model.fit()


class _GLMFamily(Family):
    """Binomial and Poisson: the batched Newton engine of :mod:`pearlstats.engines.glm`.

    Its ``separation`` option applies to logistic fits and to Poisson fits whose counts are
    0 on one side of a direction (no maximum-likelihood estimate either).
    """

    # Observation weights and offsets are fitted by the same engine (issue 35).
    engine_weighs_rows = True

    def _cv_predict(self, X, response, candidates, folds, ridge):
        return glm_cv_predict(self.name, X, response.y, candidates, folds, ridge, self.separation,
                              self.candidate_ridges, response.row_weights, response.offset)

    def _fit_params(self, X, response, columns, ridge, label):
        ridge = self.candidate_ridge(label, ridge)
        return glm_fit(self.name, X, response.y, columns, ridge, label, self.separation,
                       response.row_weights, response.offset)


class _Classification(Family):
    """Binomial and multinomial: class labels, compared by their predicted probabilities."""

    default_loss = DEFAULT_LOSSES["binomial"]  # and multinomial: the same
    sensitivity_losses = ("cross_entropy", "squared", "hinge")


class Binomial(_GLMFamily, _Classification):
    name = "binomial"

    def encode(self, values: pd.Series) -> EncodedResponse:
        levels = _class_levels(values)
        _check_two_levels(levels)
        return EncodedResponse((values == levels[1]).to_numpy(dtype=float), levels)

    def check_response_range(self, low: float, high: float, n: int) -> None:
        _check_two_levels(sorted({low, high}))  # 0/1 coded: both classes or one

    def predict(self, params: np.ndarray, X_candidate: np.ndarray) -> np.ndarray:
        return expit(X_candidate @ params)

    def statsmodels_model(self, response: EncodedResponse, exog: pd.DataFrame) -> LikelihoodModel:
        return sm.Logit(response.y, exog)

    def _penalized_model(self, response, exog, ridge):
        # Logit has no L2 fit_regularized; the binomial GLM is the same likelihood.
        return sm.GLM(response.y, exog, family=sm.families.Binomial())


class Multinomial(_Classification):
    name = "multinomial"

    def encode(self, values: pd.Series) -> EncodedResponse:
        levels = _class_levels(values)
        if len(levels) < 2:
            raise ResponseError(f"the multinomial family needs at least 2 classes, got {levels}")
        codes = _class_codes(values, levels)
        return EncodedResponse(codes, levels)

    def _cv_predict(self, X, response, candidates, folds, ridge):
        return multinomial_cv_predict(X, response.y, response.n_classes, candidates, folds, ridge,
                                      self.separation, self.candidate_ridges)

    def _fit_params(self, X, response, columns, ridge, label):
        ridge = self.candidate_ridge(label, ridge)
        return multinomial_fit(X, response.y, response.n_classes, columns, ridge, label,
                               self.separation)

    def predict(self, params: np.ndarray, X_candidate: np.ndarray) -> np.ndarray:
        return class_probabilities(params, X_candidate)

    def statsmodels_model(self, response: EncodedResponse, exog: pd.DataFrame) -> LikelihoodModel:
        return sm.MNLogit(response.y, exog)

    def _penalized_model(self, response, exog, ridge):
        raise OptionError(
            "statsmodels has no L2-penalised MNLogit; this candidate was fitted with "
            f"ridge={ridge:g} (the fit's ridge, or one chosen because its classes separate: "
            "see results.failures); its coefficients "
            "are in PearlResults.candidate_params(label)"
        )


class Poisson(_GLMFamily):
    name = "poisson"
    default_loss = DEFAULT_LOSSES["poisson"]
    sensitivity_losses = ("poisson_deviance", "squared", "absolute")

    def encode(self, values: pd.Series) -> EncodedResponse:
        y = _require_numeric(values, self.name)
        negative = np.flatnonzero(y < 0)
        if negative.size:
            raise ResponseError(
                "the poisson family needs non-negative counts; the response is negative at "
                f"{format_positions(negative, labels=getattr(values, 'index', None))}"
            )
        _check_some_count(float(y.max(initial=0.0)), len(y))
        return EncodedResponse(y)

    def check_response_range(self, low: float, high: float, n: int) -> None:
        _check_some_count(high, n)

    def predict(self, params: np.ndarray, X_candidate: np.ndarray) -> np.ndarray:
        return np.exp(X_candidate @ params)

    def statsmodels_model(self, response: EncodedResponse, exog: pd.DataFrame) -> LikelihoodModel:
        return sm.GLM(response.y, exog, family=sm.families.Poisson())

    def _fit_unpenalized(self, model, params):
        return model.fit(start_params=params)


FAMILIES = {family.name: family for family in (Gaussian(), Binomial(), Multinomial(), Poisson())}


def get_family(name: str | Family) -> Family:
    """Look up a family by name.

    Raises
    ------
    OptionError
        For an unknown name, listing the valid ones.
    """
    if isinstance(name, Family):
        return name
    if not isinstance(name, str) or name.lower() not in FAMILIES:
        raise OptionError(f"unknown family={name!r}; use one of {sorted(FAMILIES)}")
    return FAMILIES[name.lower()]
