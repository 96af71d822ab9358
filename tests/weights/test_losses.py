"""Surrogate losses: values against scikit-learn's metrics, solver forms against finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import logit
from sklearn import metrics

from pearlstats.exceptions import DataError, MissingValueError, OptionError, ResponseError
from pearlstats.weights.losses import EPS, LOSSES, get_loss, observed_probability

RNG = np.random.default_rng(20240611)
N, C = 60, 3


def _probabilities(shape, rng=RNG):
    raw = rng.uniform(0.05, 1.0, size=shape)
    return raw / raw.sum(axis=-1, keepdims=True)


Y_GAUSS = RNG.normal(3.0, 1.0, size=N)
Y_COUNT = RNG.poisson(2.0, size=N).astype(float)
Y_BIN = (RNG.random(N) < 0.4).astype(float)
Y_MULTI = RNG.integers(0, C, size=N)
MU = RNG.uniform(0.2, 5.0, size=N)
P_BIN = RNG.uniform(0.02, 0.98, size=N)
P_MULTI = _probabilities((N, C))


# ---- values against scikit-learn ---------------------------------------------------------------
@pytest.mark.parametrize(
    "name, family, y, pred, reference",
    [
        ("squared", "gaussian", Y_GAUSS, MU, lambda: metrics.mean_squared_error(Y_GAUSS, MU)),
        ("squared", "poisson", Y_COUNT, MU, lambda: metrics.mean_squared_error(Y_COUNT, MU)),
        ("squared", "binomial", Y_BIN, P_BIN, lambda: metrics.brier_score_loss(Y_BIN, P_BIN)),
        (
            "squared",
            "multinomial",
            Y_MULTI,
            P_MULTI,  # the mean over classes: Brier / C
            lambda: (
                metrics.brier_score_loss(Y_MULTI, P_MULTI, labels=[0, 1, 2], scale_by_half=False)
                / C
            ),
        ),
        ("cross_entropy", "binomial", Y_BIN, P_BIN, lambda: metrics.log_loss(Y_BIN, P_BIN)),
        (
            "cross_entropy",
            "multinomial",
            Y_MULTI,
            P_MULTI,
            lambda: metrics.log_loss(Y_MULTI, P_MULTI, labels=[0, 1, 2]),
        ),
        (
            "poisson_deviance",
            "poisson",
            Y_COUNT,
            MU,
            lambda: metrics.mean_poisson_deviance(Y_COUNT, MU),
        ),
        (
            "hinge",
            "binomial",
            Y_BIN,
            P_BIN,
            lambda: metrics.hinge_loss(2 * Y_BIN - 1, logit(P_BIN)),
        ),
        (
            "hinge",
            "multinomial",
            Y_MULTI,
            P_MULTI,  # Crammer-Singer on log p (any per-row shift)
            lambda: metrics.hinge_loss(Y_MULTI, np.log(P_MULTI), labels=[0, 1, 2]),
        ),
        (
            "hinge_probability",
            "binomial",
            Y_BIN,
            P_BIN,
            lambda: metrics.hinge_loss(2 * Y_BIN - 1, 2 * P_BIN - 1),
        ),
        (
            "hinge_probability",
            "multinomial",
            Y_MULTI,
            P_MULTI,
            lambda: metrics.hinge_loss(Y_MULTI, P_MULTI, labels=[0, 1, 2]),
        ),
        ("absolute", "gaussian", Y_GAUSS, MU, lambda: metrics.mean_absolute_error(Y_GAUSS, MU)),
        ("absolute", "poisson", Y_COUNT, MU, lambda: metrics.mean_absolute_error(Y_COUNT, MU)),
    ],
)
def test_mean_loss_matches_sklearn(name, family, y, pred, reference):
    loss = get_loss(name, family)
    values = loss.pointwise(y, pred)
    assert values.shape == (N,)
    assert loss.risk(y, pred) == pytest.approx(reference(), rel=1e-12)


def test_binomial_probability_hinge_is_twice_the_absolute_error():
    # score 2p - 1 lies in [-1, 1], so the margin never exceeds 1
    hinge = get_loss("hinge_probability", "binomial").pointwise(Y_BIN, P_BIN)
    np.testing.assert_allclose(hinge, 2 * np.abs(Y_BIN - P_BIN), rtol=1e-14)


def test_cross_entropy_floors_probability_at_eps():
    y = np.array([1.0, 0.0, 1.0])
    values = get_loss("cross_entropy", "binomial").pointwise(y, np.array([0.0, 1.0, 1.0]))
    np.testing.assert_allclose(values, [-np.log(1e-15), -np.log(1e-15), 0.0])
    assert EPS == 1e-15


def test_poisson_deviance_zero_counts_and_exact_fit():
    y = np.array([0.0, 0.0, 3.0])
    mu = np.array([0.0, 2.0, 3.0])
    # y log(y/mu) is 0 at y = 0, leaving 2 mu
    np.testing.assert_allclose(
        get_loss(None, "poisson").pointwise(y, mu), [0.0, 4.0, 0.0], atol=1e-15
    )


def test_nan_prediction_gives_nan_loss():
    cases = [
        ("squared", "gaussian", Y_GAUSS, MU),
        ("cross_entropy", "multinomial", Y_MULTI, P_MULTI),
    ]
    for name, family, y, pred in cases:
        pred = pred.copy()
        pred[4] = np.nan
        values = get_loss(name, family).pointwise(y, pred)
        assert np.isnan(values[4]) and np.isfinite(np.delete(values, 4)).all()


def test_observed_probability_picks_the_observed_class():
    P = _probabilities((N, 4, C))
    picked = observed_probability(Y_MULTI, P, True)
    assert picked.shape == (N, 4)
    for i in range(0, N, 7):
        np.testing.assert_array_equal(picked[i], P[i, :, Y_MULTI[i]])


# ---- registry --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "family, default, original",
    [
        ("gaussian", "squared", "squared error"),
        ("binomial", "cross_entropy", "log-loss"),
        ("multinomial", "cross_entropy", "log-loss"),
        ("poisson", "poisson_deviance", "Poisson deviance"),
    ],
)
def test_defaults(family, default, original):
    loss = get_loss(None, family)
    assert (loss.name, loss.family, loss.original) == (default, family, original)
    assert loss == get_loss(default, family)


def test_solvers_and_families():
    assert {name: cls.solver for name, cls in LOSSES.items()} == {
        "squared": "qp",
        "cross_entropy": "convex",
        "poisson_deviance": "convex",
        "hinge": "lp",
        "absolute": "lp",
        "hinge_probability": "lp",
    }
    assert get_loss("hinge", "binomial").original == "0-1 loss"
    assert get_loss("absolute", "poisson").original == "absolute error"


def test_unknown_and_inapplicable_losses():
    with pytest.raises(OptionError, match=r"unknown loss='huber'.*\['squared', 'absolute'\]"):
        get_loss("huber", "gaussian")
    with pytest.raises(OptionError, match=r"loss='hinge' does not apply to family 'gaussian'"):
        get_loss("hinge", "gaussian")
    with pytest.raises(OptionError, match=r"\['squared', 'poisson_deviance', 'absolute'\]"):
        get_loss("cross_entropy", "poisson")
    with pytest.raises(OptionError, match="unknown family='gamma'"):
        get_loss(None, "gamma")


# ---- input checks ----------------------------------------------------------------------------
def test_shape_mismatch_names_both_shapes():
    with pytest.raises(DataError, match=r"\(n,\).*shape \(59,\).*shape \(60,\)"):
        get_loss(None, "gaussian").pointwise(Y_GAUSS, MU[:-1])
    with pytest.raises(DataError, match=r"\(n, C\).*shape \(60,\)"):
        get_loss(None, "multinomial").pointwise(Y_MULTI, P_BIN)


@pytest.mark.parametrize(
    "family, y, pred, error, fragment",
    [
        (
            "poisson",
            Y_COUNT,
            np.r_[-1.0, MU[1:]],
            DataError,
            r"Poisson means must be >= 0; violated at row 0",
        ),
        ("poisson", Y_COUNT, np.r_[np.inf, MU[1:]], DataError, r"infinite values at row 0"),
        (
            "binomial",
            Y_BIN,
            np.r_[P_BIN[:5], 1.2, P_BIN[6:]],
            DataError,
            r"\[0, 1\]; violated at row 5",
        ),
        ("multinomial", Y_MULTI, P_MULTI * 1.1, DataError, r"sum to 1"),
        ("binomial", np.r_[2.0, Y_BIN[1:]], P_BIN, ResponseError, r"0 or 1; row 0 hold \[2.0\]"),
        ("multinomial", np.r_[3, Y_MULTI[1:]], P_MULTI, ResponseError, r"codes 0..2"),
        ("poisson", np.r_[-2.0, Y_COUNT[1:]], MU, ResponseError, r"non-negative counts; row 0"),
        (
            "gaussian",
            np.r_[np.nan, Y_GAUSS[1:]],
            MU,
            MissingValueError,
            r"y has NaN or infinite values at row 0",
        ),
    ],
)
def test_bad_values(family, y, pred, error, fragment):
    with pytest.raises(error, match=fragment):
        get_loss(None, family).pointwise(y, pred)


def test_candidate_checks_name_the_column():
    P = np.column_stack([MU, MU, MU])
    P[7, 2] = -0.5
    with pytest.raises(DataError, match=r"candidate column 2 \(column 2: row 7\)"):
        get_loss(None, "poisson").check(Y_COUNT, P, candidates=True)
    with pytest.raises(DataError, match=r"candidate column 9 \(column 9: row 7\)"):
        get_loss(None, "poisson").check(Y_COUNT, P, candidates=True, labels=np.array([3, 5, 9]))


# ---- solver forms ----------------------------------------------------------------------------
J = 4
CANDIDATES = {
    "gaussian": (Y_GAUSS, Y_GAUSS[:, None] + RNG.normal(scale=[0.5, 1.0, 1.5, 2.0], size=(N, J))),
    "poisson": (Y_COUNT, RNG.uniform(0.3, 4.0, size=(N, J))),
    "binomial": (Y_BIN, RNG.uniform(0.05, 0.95, size=(N, J))),
    "multinomial": (Y_MULTI, _probabilities((N, J, C))),
}
PAIRS = [(name, family) for name, cls in LOSSES.items() for family in cls.families]


@pytest.mark.parametrize("name, family", PAIRS)
def test_form_value_is_mean_pointwise_loss_of_the_average(name, family):
    y, P = CANDIDATES[family]
    loss = get_loss(name, family)
    form = loss.form(*loss.check(y, P, candidates=True))
    for w in [np.full(J, 1 / J), RNG.dirichlet(np.ones(J)), np.eye(J)[2]]:
        # the squared and absolute forms are standardised; unit converts back to the loss
        assert form.value(w) * form.unit == pytest.approx(loss.objective(y, P, w), rel=1e-12)
        if name != "hinge":  # the others average the predictions themselves
            average = np.tensordot(P, w, axes=([1], [0]))
            assert loss.objective(y, P, w) == pytest.approx(loss.risk(y, average), rel=1e-12)


@pytest.mark.parametrize("name, family", [p for p in PAIRS if LOSSES[p[0]].solver != "lp"])
def test_form_gradient_hessian_and_vertices(name, family):
    y, P = CANDIDATES[family]
    loss = get_loss(name, family)
    form = loss.form(*loss.check(y, P, candidates=True))
    w = RNG.dirichlet(np.ones(J))
    np.testing.assert_allclose(
        form.gradient(w), approx_fprime(w, form.value, 1e-7), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(form.vertex_values(), [form.value(e) for e in np.eye(J)], rtol=1e-10)
    if hasattr(form, "hessian"):
        numeric = np.array(
            [approx_fprime(w, lambda v: form.gradient(v)[k], 1e-7) for k in range(J)]
        )
        np.testing.assert_allclose(form.hessian(w), numeric, rtol=1e-4, atol=1e-5)


def test_mean_squared_error_is_the_mean_over_rows_and_classes():
    from pearlstats.weights.losses import mean_squared_error

    onehot = np.eye(C)[Y_MULTI]
    assert mean_squared_error(Y_MULTI, P_MULTI, "multinomial") == pytest.approx(
        np.mean((onehot - P_MULTI) ** 2)
    )
    assert mean_squared_error(Y_BIN, P_BIN, "binomial") == pytest.approx(
        metrics.brier_score_loss(Y_BIN, P_BIN)
    )
    # binomial = the mean over its two classes of the squared error
    two = np.column_stack([1 - P_BIN, P_BIN])
    assert mean_squared_error(Y_BIN, P_BIN, "binomial") == pytest.approx(
        mean_squared_error(Y_BIN.astype(int), two, "multinomial"), rel=1e-12)
    assert mean_squared_error(Y_GAUSS, MU, "gaussian") == pytest.approx(
        metrics.mean_squared_error(Y_GAUSS, MU)
    )
    with pytest.raises(OptionError, match="unknown family"):
        mean_squared_error(Y_GAUSS, MU, "gamma")
