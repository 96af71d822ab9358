"""Dask fold fits start from values the all-rows passes summed by fold (issue 35).

Each pass of a candidate's all-rows fit also returns its loss and gradient sums over
each fold's rows (:mod:`pearlstats.distributed.fold_sums`), so the fold fits, which start
at the all-rows optimum, know their values there without a pass; their chord steps
then correct the kept Hessian by BFGS updates. The all-rows fits take their first values
and Hessian from the moments (one linear predictor on every row at the start; for the
multinomial, every class at 1/C, from the design's sums by fold and class). Checked: the
values handed over equal an evaluation pass at that point (the pass each phase used to
begin with), no fold pass evaluates a starting point, and the sums by fold against direct
sums.
"""

from __future__ import annotations

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pandas as pd

import pearlstats as pearl
import pearlstats.distributed.newton as distributed_newton
from pearlstats.distributed.fold_sums import add_fold_sums, fold_order, training_sums

FORMULA = "y ~ x + block(a) + block(b)"
LENGTHS = (150, 0, 170, 80)  # unequal partitions, one empty


def _dask_data(family: str, seed: int = 0) -> tuple:
    n = sum(LENGTHS)
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 3)), rng.normal(size=(n, 2))
    x = rng.normal(size=n) + 5.0  # an offset: the moments are taken around a pilot centre
    signal = a[:, 0] - b[:, 1] + 0.5 * (x - 5.0)
    if family == "binomial":
        y = (signal + rng.logistic(size=n) > 0).astype(float)
    elif family == "poisson":
        y = rng.poisson(np.exp(0.4 * signal)).astype(float)
    else:
        y = np.digitize(signal + rng.logistic(size=n), [-1.0, 0.5]).astype(float)
    frame = pd.DataFrame({"y": y, "x": x})
    starts = np.concatenate([[0], np.cumsum(LENGTHS)]).tolist()
    lazy = dd.from_pandas(frame, npartitions=1).repartition(
        divisions=sorted(set(starts[:-1])) + [n - 1])
    blocks = {k: da.from_array(v, chunks=(LENGTHS, v.shape[1])) for k, v in (("a", a), ("b", b))}
    return lazy, blocks


@pytest.mark.parametrize("family", ["binomial", "poisson", "multinomial"])
def test_the_fold_fits_start_with_the_values_an_evaluation_pass_gives(family, monkeypatch):
    lazy, blocks = _dask_data(family)
    original = distributed_newton.pass_newton
    seen = {"known": 0, "starts": 0, "all_rows": 0}

    def checked(evaluate, theta0, ridge, weights, **options):
        known = options.get("known")
        if known is not None:
            which, f, g = known[:3]
            seen["known"] += which.size
            # The pass the fold fits began with before: every known problem at its start.
            request = {
                "problems": which, "theta": theta0[which], "step": np.zeros_like(theta0[which]),
                "columns": np.arange(which.size), "t": np.zeros(which.size),
                "first": np.arange(which.size), "hessian": np.ones(which.size, dtype=bool),
            }
            passes = evaluate.passes
            values = evaluate(request)
            evaluate.passes = passes  # (this check's pass is not the fit's)
            # Sums over the same rows in another order (by fold, then added; or from the
            # centred moments): rounding of a few hundred terms of size <= 10.
            np.testing.assert_allclose(f, values["f"], rtol=1e-13)
            np.testing.assert_allclose(g, values["g"], rtol=1e-11, atol=1e-13)
            if len(known) == 4:  # the all-rows fits (with their sums by fold): the Hessian too
                seen["all_rows"] += which.size
                np.testing.assert_allclose(options["warm"][1], values["H"], rtol=1e-11,
                                           atol=1e-13)

            def counting(request):
                seen["starts"] += int(np.sum(request["t"] == 0.0))
                return evaluate(request)

            return original(counting, theta0, ridge, weights, **options)
        return original(evaluate, theta0, ridge, weights, **options)

    monkeypatch.setattr(distributed_newton, "pass_newton", checked)
    with dask.config.set(scheduler="synchronous"):
        res = pearl.fit(FORMULA, lazy, blocks=blocks, family=family, cv=4, seed=1, honest=False)
    assert seen["known"] >= 4 * 3  # every fold of every fitted candidate (3 candidates)
    assert seen["starts"] == 0  # no fold pass evaluated a starting point
    # The all-rows fits start from the moments (four: the three candidates and the
    # covariates-only model).
    assert seen["all_rows"] == 4
    assert res.weights.sum() == pytest.approx(1.0)


def test_fold_order_puts_each_labels_rows_in_one_slice_in_the_labels_order():
    rng = np.random.default_rng(2)
    labels = [3, 0, 2]  # not sorted: slices follow this order
    folds = rng.choice(labels, size=50)
    order, bounds = fold_order(folds, labels)
    assert sorted(order.tolist()) == list(range(50))
    for k, label in enumerate(labels):
        rows = order[bounds[k]:bounds[k + 1]]
        assert set(rows.tolist()) == set(np.flatnonzero(folds == label).tolist())
        assert np.all(np.diff(rows) > 0)  # stable: the rows keep their order within a fold


@pytest.mark.parametrize("classes", [None, 3])
def test_the_sums_by_fold_add_up_to_direct_sums_over_each_folds_rows(classes):
    rng = np.random.default_rng(4)
    n, s, C, K = 40, 3, 2, 4
    folds = rng.integers(0, K, size=n)
    order, bounds = fold_order(folds, list(range(K)))
    ZS, loss = rng.normal(size=(n, s))[order], rng.normal(size=(C, n))[:, order]
    shape = (C, n) if classes is None else (C, classes - 1, n)
    residual = rng.normal(size=shape)[..., order]
    width = s if classes is None else s * (classes - 1)
    out = {"f_by": np.zeros((C, K)), "g_by": np.zeros((C, K, width + 2))}  # padded width
    total = add_fold_sums(out, np.arange(C), loss, residual, ZS, bounds)
    sorted_folds = folds[order]
    for k in range(K):
        rows = sorted_folds == k
        np.testing.assert_allclose(out["f_by"][:, k], loss[:, rows].sum(axis=1), rtol=1e-13)
        direct = (residual[..., rows] @ ZS[rows]).reshape(C, width)
        np.testing.assert_allclose(out["g_by"][:, k, :width], direct, rtol=1e-12, atol=1e-13)
    assert not out["g_by"][:, :, width:].any()
    np.testing.assert_allclose(total, (residual @ ZS).reshape(C, width), rtol=1e-12, atol=1e-13)
    train = training_sums(out["f_by"])
    np.testing.assert_allclose(train, out["f_by"].sum(axis=1, keepdims=True) - out["f_by"],
                               rtol=1e-12, atol=1e-13)
