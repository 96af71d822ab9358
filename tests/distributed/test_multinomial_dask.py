"""Multinomial (MNLogit) fits on dask partitions against the in-memory fit at the same folds.

The data sit in partitions of unequal sizes, one of them empty; the dask fit's
weights, CV risks and SEs, Null row and all-rows coefficients must equal those
of ``pearl.fit(..., family="multinomial", cv=<the same labels>)`` to 1e-8, and
one candidate's all-rows coefficients those of a direct ``sm.MNLogit`` fit.
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

import pearlstats as pearl
from pearlstats.distributed import hash_folds
from pearlstats.exceptions import FoldError, ResponseError, SeparationWarning

da = pytest.importorskip("dask.array")

CHUNKS = (230, 0, 95, 175)  # unequal, one empty
N = sum(CHUNKS)
FORMULA = "y ~ block(a) + block(b)"


def _classes(n_classes: int, seed: int):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 3))
    eta = np.column_stack([np.zeros(N)] + [
        0.8 * a[:, c % 2] - 0.6 * b[:, c % 3] + 0.2 * c for c in range(1, n_classes)
    ])
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.uniform(size=(N, 1))).sum(axis=1)
    return y, a, b


def _dask(columns: dict, blocks: dict):
    rows = (CHUNKS,)
    data = {name: da.from_array(v, chunks=rows) for name, v in columns.items()}
    return data, {name: da.from_array(v, chunks=rows + ((v.shape[1],),))
                  for name, v in blocks.items()}


def _agree(dask_fit, memory_fit, tol=1e-8):
    np.testing.assert_allclose(dask_fit.weights, memory_fit.weights, rtol=0, atol=tol)
    np.testing.assert_allclose(dask_fit.cv_risk, memory_fit.cv_risk, rtol=0, atol=tol)
    np.testing.assert_allclose(dask_fit.cv_risk_se, memory_fit.cv_risk_se, rtol=0, atol=tol)
    null = ["cv_risk", "se"]
    np.testing.assert_allclose(dask_fit.baselines.loc["Null", null].to_numpy(float),
                               memory_fit.baselines.loc["Null", null].to_numpy(float),
                               rtol=0, atol=tol)
    for label in memory_fit.weights.index:
        expected = np.asarray(memory_fit.candidate_params(label), dtype=float)
        np.testing.assert_allclose(np.asarray(dask_fit.candidate_params(label), dtype=float),
                                   expected, rtol=0, atol=tol)


@pytest.mark.parametrize("loss, ridge", [("cross_entropy", 0.0), ("squared", 0.5)])
def test_three_classes_hashed_folds_match_in_memory(loss, ridge):
    y, a, b = _classes(3, seed=1)
    data, blocks = _dask({"y": y.astype(float)}, {"a": a, "b": b})
    K, seed = 4, 11
    fitted = pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv=K, seed=seed,
                       loss=loss, ridge=ridge)
    memory = pearl.fit(FORMULA, {"y": y, "a": a, "b": b}, family="multinomial",
                       cv=hash_folds(np.arange(N), K, seed), seed=seed, loss=loss, ridge=ridge)
    assert list(fitted.classes) == [0, 1, 2]
    _agree(fitted, memory)


def test_four_classes_fold_column_match_in_memory_and_mnlogit():
    y, a, b = _classes(4, seed=2)
    # labels that are not 0..K-1: fold k is the k-th in sorted order, as in memory
    folds = np.random.default_rng(3).permutation(np.arange(N) % 3) * 10 + 5
    data, blocks = _dask({"y": y.astype(float), "fold": folds}, {"a": a, "b": b})
    fitted = pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv="fold")
    memory = pearl.fit(FORMULA, {"y": y, "a": a, "b": b}, family="multinomial", cv=folds)
    _agree(fitted, memory)
    # an independent check of the all-rows fit: statsmodels' MNLogit on the same columns
    params = fitted.candidate_params("a+b")
    exog = np.column_stack([np.ones(N), a, b])
    direct = sm.MNLogit(y, exog).fit(method="newton", maxiter=100, disp=False, tol=1e-12)
    np.testing.assert_allclose(np.asarray(params, dtype=float), direct.params, rtol=0, atol=1e-6)


def test_separated_candidate_climbs_the_same_ridge_ladder():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    y = np.digitize(a[:, 0], [-0.4, 0.4])  # block a separates the three classes
    b[:, 0] += 0.8 * y
    data, blocks = _dask({"y": y.astype(float)}, {"a": a, "b": b})
    fitted = pearl.fit("y ~ block(a) + block(b)", data, blocks=blocks, family="multinomial",
                       cv=4, seed=2)
    with pytest.warns(SeparationWarning, match="'a' \\(ridge=0.0001\\), 'a\\+b'"):
        memory = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
                           family="multinomial", cv=hash_folds(np.arange(N), 4, 2))
    laddered = fitted.failures.query("kind == 'separation'")
    assert sorted(laddered.candidate) == ["a", "a+b"]
    assert laddered.action.str.contains("refitted with ridge=0.0001").all()
    _agree(fitted, memory)


def test_class_checks_as_in_memory():
    y, a, b = _classes(3, seed=4)
    # fold 1 holds every row of class 2: its training rows lack that class
    folds = np.where(y == 2, 1, np.arange(N) % 2 * 2)
    data, blocks = _dask({"y": y.astype(float), "fold": folds}, {"a": a, "b": b})
    with pytest.raises(FoldError, match=r"fold 1 contain no row of class\(es\) \[2\]"):
        pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv="fold")
    lonely = y.astype(float)
    lonely[7] = 9.0
    data, blocks = _dask({"y": lonely}, {"a": a, "b": b})
    with pytest.raises(ResponseError, match=r"class\(es\) \[9\] occur in only one row"):
        pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv=3)


def test_non_numeric_classes_are_refused_with_the_reason():
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    rng = np.random.default_rng(6)
    frame = pd.DataFrame({"y": rng.choice(["cat", "dog", "eel"], 120), "x": rng.normal(size=120),
                          "z": rng.normal(size=120)})
    data = dd.from_pandas(frame, npartitions=3)
    with pytest.raises(ResponseError, match="needs a numeric response.*recode it with dask"):
        pearl.fit("y ~ block(a) + block(b)", data, blocks={"a": ["x"], "b": ["z"]},
                  family="multinomial", cv=3)


def test_partition_fit_holds_the_null_row_and_mnlogit_shaped_coefficients():
    """What the honest re-runs and the results read from fit_partitions directly."""
    from pearlstats.design.formula import parse_formula
    from pearlstats.distributed.data import dask_rows, head_design
    from pearlstats.distributed.fit import fit_partitions
    from pearlstats.families import get_family
    from pearlstats.stages import build_pool
    from pearlstats.weights.losses import get_loss

    y, a, b = _classes(3, seed=7)
    data, blocks = _dask({"y": y.astype(float)}, {"a": a, "b": b})
    formula = parse_formula(FORMULA)
    rows = dask_rows(data, blocks, formula)
    head = head_design(rows, formula, 0)
    pool = build_pool(head, "all", 100)
    family = get_family("multinomial").configured(separation="ridge")
    K, seed = 3, 4
    fitted = fit_partitions(rows, head.spec, family, get_loss(None, "multinomial"),
                            ("hash", K, seed), pool.everything, len(pool.pool), 0.0,
                            head.X.mean(axis=0))
    folds = hash_folds(np.arange(N), K, seed)
    # the Null row: each fold predicted by the class frequencies of the other folds' rows
    frequencies = np.array([np.bincount(y[folds != k], minlength=3) / np.sum(folds != k)
                            for k in range(K)])
    np.testing.assert_allclose(fitted.null_means, frequencies, rtol=0, atol=1e-15)
    losses = -np.log(frequencies[folds, y])
    np.testing.assert_allclose(fitted.null, (losses.mean(), losses.std(ddof=1) / np.sqrt(N)),
                               rtol=1e-12)
    assert fitted.classes.tolist() == [0.0, 1.0, 2.0]
    assert fitted.coefs.shape == (K + 1, head.X.shape[1], len(pool.everything), 2)
    j = [c.label for c in pool.everything].index("a")
    direct = sm.MNLogit(y, np.column_stack([np.ones(N), a])).fit(method="newton", disp=False,
                                                                  tol=1e-12)
    np.testing.assert_allclose(fitted.coefs[-1][pool.everything[j].columns, j], direct.params,
                               rtol=0, atol=1e-6)


def test_trial_columns_in_batches_give_the_same_fit(monkeypatch):
    """Passes that take one trial column, or 76 rows of class probabilities, at a time
    (bounded memory) give the same fit."""
    from pearlstats.distributed import multinomial

    y, a, b = _classes(3, seed=8)
    data, blocks = _dask({"y": y.astype(float)}, {"a": a, "b": b})

    def fit():
        return pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv=3, seed=1)

    whole = fit()
    # one trial column per batch; 690 // (J C = 9) = 76 rows of probabilities per block
    monkeypatch.setattr(multinomial, "BATCH_VALUES", 3 * max(CHUNKS))
    batched = fit()
    np.testing.assert_allclose(batched.weights, whole.weights, rtol=0, atol=1e-12)
    for label in whole.weights.index:
        np.testing.assert_allclose(np.asarray(batched.candidate_params(label), dtype=float),
                                   np.asarray(whole.candidate_params(label), dtype=float),
                                   rtol=0, atol=1e-12)


def test_a_rare_class_in_one_hashed_fold_is_not_told_to_use_an_int_cv():
    """Hashed folds do not stratify: a class whose two rows hash into one fold is refused with
    advice that works on dask (was "e.g. an int cv, which stratifies", the cv it had)."""
    y, a, b = _classes(3, seed=4)
    folds = hash_folds(np.arange(N), 5, 0)
    two = np.flatnonzero(folds == folds[5])[:2]
    rare = y.astype(float)
    rare[two] = 7.0
    data, blocks = _dask({"y": rare}, {"a": a, "b": b})
    with pytest.raises(FoldError, match=r"class\(es\) \[7\]; the folds of dask data are hashed"):
        pearl.fit(FORMULA, data, blocks=blocks, family="multinomial", cv=5, seed=0,
                  honest=False)
