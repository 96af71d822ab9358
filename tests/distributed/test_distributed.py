"""PEARL on dask data against the in-memory fit with the same folds, on a LocalCluster."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl
import pearlstats.representations as frl
from pearlstats.distributed import hash_folds
from pearlstats.exceptions import (
    BlockError,
    CandidateFailureWarning,
    DataError,
    FoldError,
    InMemoryOnlyError,
    MissingValueError,
    OptionError,
    SeparationError,
    SeparationWarning,
)
from pearlstats.results import PearlResults

FORMULA = "y ~ x + block(a) + block(b) + block(c)"


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _problem(family: str, n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    a, b, c = rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.normal(size=(n, 4))
    x = rng.normal(size=n) + 5.0  # a shifted covariate: the pilot centring must cope
    signal = a[:, 0] - b[:, 1] + 0.5 * c[:, 2] + 0.3 * x
    if family == "gaussian":
        y = signal + rng.normal(size=n)
    elif family == "binomial":
        y = (signal + rng.logistic(size=n) > np.median(signal)).astype(float)
    else:
        y = rng.poisson(np.exp(0.3 * (a[:, 0] - b[:, 1]) + 0.1 * x)).astype(float)
    return {"y": y, "x": x, "a": a, "b": b, "c": c}


def _dask(data, npartitions=4):
    frame = dd.from_pandas(pd.DataFrame({"y": data["y"], "x": data["x"]}), npartitions=npartitions)
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    blocks = {k: da.from_array(data[k], chunks=(lengths, data[k].shape[1])) for k in "abc"}
    return frame, blocks


@pytest.mark.parametrize(
    "family,ridge",
    [
        ("gaussian", 0.0),
        ("gaussian", 0.1),
        ("binomial", 0.0),
        ("poisson", 0.0),
        ("binomial", 0.1),  # folds start from the all-rows optimum under their own penalties
        ("poisson", 0.05),
    ],
)
def test_same_numbers_as_in_memory(client, family, ridge):
    data = _problem(family)
    frame, blocks = _dask(data)
    folds = hash_folds(np.arange(len(data["y"])), 5, seed=3)
    res_d = pearl.fit(FORMULA, frame, blocks=blocks, family=family, cv=5, seed=3, ridge=ridge)
    res_m = pearl.fit(FORMULA, data, family=family, cv=folds, seed=3, ridge=ridge, honest=False)
    assert isinstance(res_d, PearlResults)
    np.testing.assert_array_equal(res_d.folds.compute(), res_m.folds)
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res_d.cv_risk_se, res_m.cv_risk_se, rtol=1e-7, atol=1e-10)
    assert res_d.weight_objective == pytest.approx(res_m.weight_objective, rel=1e-8, abs=1e-10)
    # the intercept-only reference (in memory: the Null row, checked against statsmodels)
    pd.testing.assert_frame_equal(res_d.baselines, res_m.baselines, rtol=1e-8, atol=1e-10)
    for label in res_m.candidate_labels:
        np.testing.assert_allclose(
            res_d.candidate_params(label), res_m.candidate_params(label), rtol=1e-7, atol=1e-8
        )
    expected = res_m.predict({k: v for k, v in data.items() if k != "y"}).to_numpy()
    np.testing.assert_allclose(
        res_d.predict(frame, blocks=blocks).compute().to_numpy(), expected, rtol=1e-8, atol=1e-10
    )
    pd.testing.assert_frame_equal(
        res_d.evaluate(frame, blocks=blocks), res_m.evaluate(data), atol=1e-8
    )


def test_predict_of_a_dask_dataframe_is_lazy(client):
    data = _problem("gaussian")
    res = pearl.fit(FORMULA, data, cv=5, seed=1, honest=False)
    frame, blocks = _dask(data, npartitions=3)
    prediction = res.predict(frame, blocks=blocks)
    assert isinstance(prediction, dd.Series)  # nothing computed yet
    values = prediction.compute()
    assert len(values) == len(data["y"]) and values.dtype == np.float64
    np.testing.assert_allclose(
        values.to_numpy(), res.predict(data).to_numpy(), rtol=1e-10, atol=1e-12
    )
    array_prediction = res.predict(
        {
            "x": da.from_array(data["x"], chunks=500),
            **{k: da.from_array(data[k], chunks=(500, -1)) for k in "abc"},
        }
    )
    assert isinstance(array_prediction, da.Array) and array_prediction.shape == (len(data["y"]),)


def test_column_groups_and_fold_column(client):
    data = _problem("gaussian", n=800)
    columns = {f"{k}{i}": data[k][:, i] for k in "abc" for i in range(data[k].shape[1])}
    folds = np.arange(800) % 4
    frame = pd.DataFrame({"y": data["y"], "x": data["x"], "fold": folds, **columns})
    groups = {k: [f"{k}{i}" for i in range(data[k].shape[1])] for k in "abc"}
    res_d = pearl.fit(
        FORMULA, dd.from_pandas(frame, npartitions=3), blocks=groups, cv="fold", seed=0
    )
    res_m = pearl.fit(FORMULA, data, cv=folds, seed=0, honest=False)
    np.testing.assert_allclose(res_d.weights, res_m.weights, atol=1e-8)


def test_representations_applied_per_partition(client):
    rng = np.random.default_rng(5)
    raw = pd.DataFrame(rng.normal(size=(600, 4)), columns=["u1", "u2", "u3", "u4"])
    raw["y"] = raw["u1"] - raw["u3"] + rng.normal(size=600)
    reps = frl.Representations(
        {"p": frl.PCA(n_components=2), "q": frl.PCA(n_components=3)},
        columns=["u1", "u2", "u3", "u4"],
        seed=0,
    ).fit(raw.drop(columns="y"))
    folds = hash_folds(np.arange(600), 4, seed=2)
    res_d = pearl.fit(
        "y ~ block(p) + block(q)", dd.from_pandas(raw, npartitions=3), blocks=reps, cv=4, seed=2
    )
    res_m = pearl.fit("y ~ block(p) + block(q)", raw, blocks=reps, cv=folds, seed=2, honest=False)
    np.testing.assert_allclose(res_d.weights, res_m.weights, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)


def test_unsupported_inputs_are_named(client):
    data = _problem("gaussian", n=300)
    frame, blocks = _dask(data, npartitions=2)
    with pytest.raises(OptionError, match="center"):
        pearl.fit("y ~ center(x) + block(a) + block(b) + block(c)", frame, blocks=blocks, seed=0)
    wide = dict(blocks, a=da.from_array(data["a"], chunks=(150, 1)))
    with pytest.raises(BlockError, match="chunked along its columns"):
        pearl.fit(FORMULA, frame, blocks=wide, seed=0)
    with pytest.raises(OptionError, match="hinge"):
        pearl.fit(
            FORMULA,
            frame.assign(y=frame.y > 5),
            blocks=blocks,
            family="binomial",
            loss="hinge",
            seed=0,
        )


def test_data_larger_than_worker_memory():
    """30 chunks of 20 MB (0.6 GB of design, 1.2 GB generated), workers limited to 500 MB.

    A worker process holds about 230 MB of imports, so the limit leaves room for a few chunks; the
    data are generated lazily from a seed in every pass and never persisted.
    """
    n, chunk = 3_000_000, 100_000
    rng = da.random.default_rng(11)
    a = rng.normal(size=(n, 12), chunks=(chunk, 12))
    b = rng.normal(size=(n, 12), chunks=(chunk, 12))
    y = a[:, 0] - 0.5 * b[:, 3] + rng.normal(size=n, chunks=chunk)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            memory_limit="500MB",
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster),
    ):
        res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, cv=5, seed=0)
    assert res.nobs == n
    assert res.weights["a+b"] > 0.9
    assert res.cv_risk["a+b"] == pytest.approx(1.0, abs=0.01)  # the noise variance
    assert res.cv_risk["a"] == pytest.approx(1.25, abs=0.01)  # noise plus the missing 0.5 * b3


# ---- the pass-wise Newton driver (distributed/driver.py), with in-memory evaluations -----------
def _logistic_problems(n: int = 3000, seed: int = 4):
    """Logistic rows and three training-row masks: two random folds and all rows."""
    rng = np.random.default_rng(seed)
    Z = np.column_stack([np.ones(n), rng.normal(size=(n, 4))])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(Z @ np.array([0.3, 1.0, -0.5, 0.0, 0.8]))))).astype(
        float
    )
    masks = np.vstack([rng.random(n) < 0.8, rng.random(n) < 0.8, np.ones(n, dtype=bool)])
    return Z, y, masks.astype(float)


def _recording_evaluate(Z, y, masks, family: str = "binomial"):
    """An evaluate function for pass_newton on in-memory rows that records every request."""
    requests = []

    def evaluate(request):
        requests.append(request)
        q = request["problems"][request["columns"]]
        theta = request["theta"][request["columns"]] - request["t"][:, None] * request["step"][
            request["columns"]
        ]
        eta, w, n_train = theta @ Z.T, masks[q], masks[q].sum(axis=1)
        mu = 1.0 / (1.0 + np.exp(-eta)) if family == "binomial" else np.exp(np.minimum(eta, 700))
        loss = np.logaddexp(0.0, eta) - y * eta if family == "binomial" else mu - y * eta
        first = theta[request["first"]] @ Z.T
        mu_first = (
            1.0 / (1.0 + np.exp(-first)) if family == "binomial" else np.exp(np.minimum(first, 700))
        )
        var = mu_first * (1.0 - mu_first) if family == "binomial" else mu_first
        wp = masks[request["problems"]]
        H = np.einsum("ki,ij,il->kjl", wp * var, Z, Z) / wp.sum(axis=1)[:, None, None]
        return {
            "f": np.sum(w * loss, axis=1) / n_train,
            "g": (w * (mu - y)) @ Z / n_train[:, None],
            "H": H[request["hessian"]],  # those of the problems that asked, in order
        }

    return evaluate, requests


def _statsmodels_fit(Z, y, mask, family: str = "binomial"):
    import statsmodels.api as sm

    rows = mask > 0
    fam = sm.families.Binomial() if family == "binomial" else sm.families.Poisson()
    return sm.GLM(y[rows], Z[rows], family=fam).fit(tol=1e-13, maxiter=200).params


def test_pass_newton_skips_converged_problems_and_equals_statsmodels():
    """A problem at its optimum from the start is evaluated once, never again; others move on."""
    from pearlstats.distributed.driver import pass_newton

    Z, y, masks = _logistic_problems()
    expected = np.array([_statsmodels_fit(Z, y, m) for m in masks])
    theta0 = np.zeros_like(expected)
    theta0[1] = expected[1]  # problem 1 starts at its optimum
    evaluate, requests = _recording_evaluate(Z, y, masks)
    result, state, passes = pass_newton(evaluate, theta0, 0.0, np.zeros_like(theta0))
    assert result.converged.all() and not result.stopped.any()
    np.testing.assert_allclose(result.theta, expected, rtol=0, atol=1e-8)
    asked = [set(r["problems"].tolist()) for r in requests]
    assert passes == len(requests) > 2
    assert sum(1 in a for a in asked) == 1  # only the first pass evaluated problem 1
    assert all(a == {0, 2} for a in asked[1:-1])
    assert state.evaluations[1] == 1 and state.iterations[1] == 0


def test_pass_newton_warm_start_reuses_the_given_hessian():
    """Folds started from the all-rows optimum with its Hessian form no Hessian of their own."""
    from pearlstats.distributed.driver import pass_newton

    Z, y, masks = _logistic_problems(seed=6)
    expected = np.array([_statsmodels_fit(Z, y, m) for m in masks[:2]])
    everything = _statsmodels_fit(Z, y, masks[2])
    mu = 1.0 / (1.0 + np.exp(-(Z @ everything)))
    H_all = (Z * (mu * (1.0 - mu))[:, None]).T @ Z / len(y)
    evaluate, requests = _recording_evaluate(Z, y, masks[:2])
    theta0 = np.tile(everything, (2, 1))
    result, _, _ = pass_newton(
        evaluate, theta0, 0.0, np.zeros_like(theta0), warm=(np.arange(2), np.stack([H_all] * 2))
    )
    np.testing.assert_allclose(result.theta, expected, rtol=0, atol=1e-8)
    assert result.converged.all()
    assert not any(r["hessian"].any() for r in requests)  # chord steps only


def _padded_evaluate(Z, y, widths):
    """pass_newton's evaluate for logistic problems on the first widths[q] columns of Z, padded
    to all of them as the distributed passes pad (gradient 0, identity Hessian)."""

    def evaluate(request):
        q = request["problems"][request["columns"]]
        own = np.arange(Z.shape[1])[None, :] < np.asarray(widths)[q][:, None]
        theta = request["theta"][request["columns"]] - request["t"][:, None] * request["step"][
            request["columns"]]
        eta = (theta * own) @ Z.T
        mu = 1.0 / (1.0 + np.exp(-eta))
        H = []
        for a in np.flatnonzero(request["hessian"]):
            c, w = request["first"][a], widths[request["problems"][a]]
            one = np.eye(Z.shape[1])
            one[:w, :w] = (Z[:, :w] * (mu[c] * (1 - mu[c]))[:, None]).T @ Z[:, :w] / len(y)
            H.append(one)
        return {"f": np.mean(np.logaddexp(0.0, eta) - y * eta, axis=1),
                "g": own * ((mu - y) @ Z) / len(y), "H": np.array(H).reshape(-1, *Z.shape[1:2] * 2)}

    return evaluate


def test_pass_newton_solves_each_problem_at_its_own_width():
    """Problems padded to the widest are solved at their own widths, to the same optima."""
    from pearlstats.distributed.driver import pass_newton

    Z, y, masks = _logistic_problems(seed=9)
    widths = [3, 5]
    expected = [_statsmodels_fit(Z[:, :w], y, masks[2]) for w in widths]
    theta0 = np.zeros((2, Z.shape[1]))
    evaluate = _padded_evaluate(Z, y, widths)
    own, state, _ = pass_newton(evaluate, theta0, 0.0, np.zeros_like(theta0),
                                sizes=np.array(widths))
    padded, _, _ = pass_newton(evaluate, theta0, 0.0, np.zeros_like(theta0))
    assert own.converged.all() and not state.singular.any()
    # statsmodels' IRLS stops at tol 1e-13 on the deviance: its params to about 1e-8
    np.testing.assert_allclose(own.theta[0, :3], expected[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(own.theta[1], expected[1], rtol=0, atol=1e-8)
    assert (own.theta[0, 3:] == 0).all()  # the padding never moves
    # the same arithmetic as the padded systems (a block-diagonal factor): rounding apart
    np.testing.assert_allclose(own.theta, padded.theta, rtol=0, atol=1e-12)


def test_pass_newton_tries_several_step_lengths_in_one_pass():
    """A Poisson fit from a far start rejects full steps; the shorter ones come in one pass."""
    from pearlstats.distributed.driver import pass_newton

    Z, _, masks = _logistic_problems(seed=8)
    rng = np.random.default_rng(8)
    y = rng.poisson(np.exp(Z @ np.array([0.5, 0.3, 0.0, -0.2, 0.1]))).astype(float)
    expected = _statsmodels_fit(Z, y, masks[2], "poisson")
    evaluate, requests = _recording_evaluate(Z, y, masks[2:], "poisson")
    theta0 = np.array([[-6.0, 0.0, 0.0, 0.0, 0.0]])  # means near 0: Newton overshoots by far
    result, state, passes = pass_newton(evaluate, theta0, 0.0, np.zeros_like(theta0))
    np.testing.assert_allclose(result.theta[0], expected, rtol=1e-9, atol=1e-9)
    ladders = [r["t"].tolist() for r in requests]
    assert any(len(t) > 1 for t in ladders)  # several lengths of one line search in a pass
    assert passes < state.iterations[0] + sum(len(t) - 1 for t in ladders)


def test_empty_partitions_of_a_filtered_dataframe(client):
    """A filtered dask DataFrame has empty partitions; they hold nothing to sum (was ValueError)."""
    data = _problem("gaussian", n=600)
    columns = {f"{k}{i}": data[k][:, i] for k in "abc" for i in range(data[k].shape[1])}
    keep = np.r_[np.zeros(150), np.ones(300), np.zeros(150)].astype(bool)  # 1st, 4th empty
    frame = pd.DataFrame({"y": data["y"], "x": data["x"], "keep": keep, **columns})
    filtered = dd.from_pandas(frame, npartitions=4)
    filtered = filtered[filtered.keep]
    groups = {k: [f"{k}{i}" for i in range(data[k].shape[1])] for k in "abc"}
    res_d = pearl.fit(FORMULA, filtered, blocks=groups, cv=4, seed=2)
    kept = {k: v[keep] for k, v in data.items()}
    res_m = pearl.fit(
        FORMULA, kept, cv=hash_folds(np.arange(300), 4, seed=2), seed=2, honest=False
    )
    assert res_d.nobs == 300
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)
    prediction = res_d.predict(filtered, blocks=groups)
    assert prediction.npartitions == filtered.npartitions
    np.testing.assert_allclose(
        prediction.compute().to_numpy(), res_m.predict(kept).to_numpy(), rtol=1e-8, atol=1e-10
    )
    pd.testing.assert_frame_equal(
        res_d.evaluate(filtered, blocks=groups), res_m.evaluate(kept), atol=1e-8
    )
    with pytest.raises(DataError, match="every partition is empty"):
        pearl.fit(FORMULA, filtered[filtered.x > 100], blocks=groups, cv=4, seed=2)


def test_blocks_with_unknown_chunk_sizes_and_one_dimensional_blocks(client):
    """``to_dask_array()`` without lengths (NaN chunks) and a 1-D block: both fitted as in memory.

    Unknown chunk sizes failed with "cannot convert float NaN to integer" (or, chunked unlike the
    data, claimed the block had ``nan`` rows); a 1-D dask block failed with an IndexError.
    """
    data = _problem("gaussian", n=600)
    frame = dd.from_pandas(pd.DataFrame({"y": data["y"], "x": data["x"]}), npartitions=3)
    unknown = {
        k: dd.from_pandas(pd.DataFrame(data[k]), npartitions=m).to_dask_array()
        for k, m in zip("abc", (3, 3, 5))
    }
    assert np.isnan(unknown["a"].chunks[0]).all()
    folds = hash_folds(np.arange(600), 4, seed=1)
    res_m = pearl.fit(FORMULA, data, cv=folds, seed=1, honest=False)
    for dask_data, blocks in [
        (frame, unknown),
        ({"y": frame.y.to_dask_array(), "x": frame.x.to_dask_array(), **unknown}, None),
    ]:
        res_d = pearl.fit(FORMULA, dask_data, blocks=blocks, cv=4, seed=1)
        np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
        np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)
    one = {"a": data["a"], "b": data["b"][:, 1]}
    rows = {"y": data["y"], "x": data["x"]}
    res_m = pearl.fit(
        "y ~ x + block(a) + block(b)", rows, blocks=one, cv=folds, seed=1, honest=False
    )
    blocks = {"a": da.from_array(one["a"], chunks=(200, 3)), "b": da.from_array(one["b"], 150)}
    res_d = pearl.fit("y ~ x + block(a) + block(b)", frame, blocks=blocks, cv=4, seed=1)
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-8)


def test_mismatched_columns_and_missing_fold_column_are_named(client):
    """Both failed with bare dask / pandas errors (ValueError on chunks, KeyError 'fold')."""
    data = _problem("gaussian", n=300)
    arrays = {k: da.from_array(v, chunks=100) for k, v in data.items() if k in ("y", "x")}
    arrays.update({k: da.from_array(data[k], chunks=(100, -1)) for k in "abc"})
    with pytest.raises(DataError, match=r"different lengths: \{'x': 299\} where 'y' has 300"):
        pearl.fit(FORMULA, dict(arrays, x=arrays["x"][:299]), cv=3, seed=0)
    frame, blocks = _dask(data, npartitions=2)
    with pytest.raises(FoldError, match=r"cv='fold' names no column of the data"):
        pearl.fit(FORMULA, frame, blocks=blocks, cv="fold", seed=0)


def test_missing_values_are_reported_at_their_row_of_the_data(client):
    """Partition checks counted rows within the partition: a NaN in row 400 was "at row 0"."""
    data = _problem("gaussian", n=600)

    def chunked(values):
        return {k: da.from_array(v, chunks=(200,) + v.shape[1:]) for k, v in values.items()}

    a = data["a"].copy()
    a[[400, 455], 1] = np.nan
    with pytest.raises(MissingValueError, match=r"block 'a' has NaN .* at rows 400, 455; .*dropna"):
        pearl.fit(FORMULA, chunked(dict(data, a=a)), cv=3, seed=0)
    x = data["x"].copy()
    x[520] = np.inf
    with pytest.raises(MissingValueError, match=r"'x' has missing or infinite values at row 520;"):
        pearl.fit(FORMULA, chunked(dict(data, x=x)), cv=3, seed=0)


@pytest.mark.parametrize("separation", ["ridge", "drop"])
def test_separated_binomial_candidates_follow_the_separation_policy(client, separation):
    """The dask fit ignored ``separation``: with the default "ridge" a separated candidate got
    weight 0 (in memory it is refitted up the ridge ladder and here takes all the weight), and
    "raise" did not raise."""
    rng = np.random.default_rng(0)
    n = 400
    data = {"y": None, "x": rng.normal(size=n), "a": rng.normal(size=(n, 2)),
            "b": rng.normal(size=(n, 2)), "c": rng.normal(size=(n, 1))}
    data["y"] = (data["a"][:, 0] > 0).astype(float)  # block a separates the classes
    frame, blocks = _dask(data, npartitions=4)
    folds = hash_folds(np.arange(n), 4, seed=1)
    formula = "y ~ x + block(a) + block(b)"
    # both fits warn alike: refitted with a ridge ("ridge") or failed, weight 0 ("drop")
    expected = SeparationWarning if separation == "ridge" else CandidateFailureWarning
    with pytest.warns(expected) as on_dask:
        res_d = pearl.fit(formula, frame, blocks=blocks, family="binomial", cv=4, seed=1,
                          separation=separation)
    with pytest.warns(expected) as in_memory:
        res_m = pearl.fit(formula, data, family="binomial", cv=folds, seed=1,
                          separation=separation, honest=False)
    assert [str(w.message) for w in on_dask] == [str(w.message) for w in in_memory]
    np.testing.assert_allclose(res_d.weights, res_m.weights, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res_d.cv_risk, res_m.cv_risk, rtol=1e-7, atol=1e-10)

    # one reason for a separated candidate on both backends (dask once said "still diverging
    # after 15 Newton steps" where memory said "(quasi-)separated on all rows")
    def reasons(res):
        return set(map(tuple, res.failures[["candidate", "kind", "reason"]].to_numpy()))

    assert reasons(res_d) == reasons(res_m)
    if separation == "ridge":
        assert res_d.weights["a"] == pytest.approx(1.0)
        for label in res_m.candidate_labels:
            np.testing.assert_allclose(
                res_d.candidate_params(label), res_m.candidate_params(label), rtol=1e-6, atol=1e-7
            )
        with pytest.raises(SeparationError, match="candidate 'a'"):
            pearl.fit(formula, frame, blocks=blocks, family="binomial", cv=4, seed=1,
                      separation="raise")


@pytest.mark.parametrize("family", ["binomial", "poisson"])
def test_a_level_whose_rows_are_all_zero_is_separation_on_dask_as_in_memory(client, family):
    """Quasi-complete separation by a level (its 6 rows all 0): in memory it is separation
    (refitted on the ridge ladder); the dask fit recorded "rank deficient" in every fold and
    kept the fit wherever Newton stopped (CV risk 0.608043 against memory's 0.608052)."""
    rng = np.random.default_rng(5)
    n = 300
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    level = np.zeros(n)
    level[:6] = 1.0
    if family == "binomial":
        y = (rng.random(n) < 1 / (1 + np.exp(-(0.3 * x + a[:, 0])))).astype(float)
    else:
        y = rng.poisson(np.exp(0.3 * x + 0.4 * a[:, 0])).astype(float)
    y[:6] = 0.0
    frame = dd.from_pandas(pd.DataFrame({"y": y, "x": x, "z": level}), npartitions=2)
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    blocks = {"a": da.from_array(a, chunks=(lengths, 2))}
    formula = "y ~ x + z + block(a)"
    with pytest.warns(SeparationWarning):
        on_dask = pearl.fit(formula, frame, blocks=blocks, family=family, cv=5, seed=3)
    with pytest.warns(SeparationWarning):
        in_memory = pearl.fit(formula, {"y": y, "x": x, "z": level, "a": a}, family=family,
                              cv=hash_folds(np.arange(n), 5, seed=3), seed=3, honest=False)
    assert set(on_dask.failures.kind) == set(in_memory.failures.kind) == {"separation"}
    # the same ridge fits on both backends, to the Newton tolerance
    np.testing.assert_allclose(on_dask.cv_risk, in_memory.cv_risk, rtol=1e-9)


def test_a_poisson_fold_whose_training_rows_count_nothing_is_refused_on_dask(client):
    """In memory such a fold is a FoldError; on dask it was fitted, with a SeparationWarning
    claiming a ridge "with a finite optimum" (the intercept is not penalised) and out-of-fold
    means of 9.5e-20 that made most of the CV risk."""
    data = _problem("poisson", n=600, seed=5)
    data["y"] = np.zeros(600)
    data["y"][[3, 7, 11]] = 1.0
    folds = np.arange(600) % 4
    folds[[3, 7, 11]] = 1  # every count is in fold 1: its training rows count nothing
    frame = dd.from_pandas(pd.DataFrame({"y": data["y"], "x": data["x"], "f": folds}),
                           npartitions=2)
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    blocks = {k: da.from_array(data[k], chunks=(lengths, data[k].shape[1])) for k in "ab"}
    message = r"the training rows of fold 1 have no positive count"
    with pytest.raises(FoldError, match=message):
        pearl.fit("y ~ x + block(a) + block(b)", {k: data[k] for k in ("y", "x", "a", "b")},
                  family="poisson", cv=folds, seed=3, honest=False)
    with pytest.raises(FoldError, match=message):
        pearl.fit("y ~ x + block(a) + block(b)", frame, blocks=blocks, family="poisson",
                  cv="f", seed=3, honest=False)


@pytest.mark.parametrize("values, expected", [([-3.0, 1.5, 2.0], [-3.0, 1.5, 2.0]),
                                             ([0, 1, 7], [0, 1, 7])])
def test_dask_multinomial_classes_are_of_one_type_as_in_memory(client, values, expected):
    """A response of -3, 1.5 and 2 gave the classes [-3, 1.5, 2] on dask (an int beside
    floats) where the in-memory fit gives floats."""
    data = _problem("binomial", n=300, seed=2)
    codes = np.digitize(data["a"][:, 0] + np.random.default_rng(2).logistic(size=300),
                        [-1.0, 1.0])
    data["y"] = np.asarray(values)[codes]
    frame, blocks = _dask(data, npartitions=3)
    on_dask = pearl.fit("y ~ x + block(a) + block(b)", frame, blocks=blocks,
                        family="multinomial", cv=3, seed=0, honest=False)
    in_memory = pearl.fit("y ~ x + block(a) + block(b)", data, family="multinomial",
                          cv=hash_folds(np.arange(300), 3, seed=0), seed=0, honest=False)
    assert list(on_dask.classes) == list(in_memory.classes) == expected
    assert {type(c) for c in on_dask.classes} == {type(c) for c in in_memory.classes}


def test_a_binomial_fold_whose_training_rows_hold_one_class_names_the_missing_one(client):
    # the dask message said only "hold a single class; use fewer folds"
    data = _problem("binomial", n=600, seed=5)
    data["y"] = np.zeros(600)
    data["y"][[3, 7, 11]] = 1.0
    folds = np.arange(600) % 4
    folds[[3, 7, 11]] = 1  # every 1 is in fold 1
    frame = dd.from_pandas(pd.DataFrame({"y": data["y"], "x": data["x"], "f": folds}),
                           npartitions=2)
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    blocks = {k: da.from_array(data[k], chunks=(lengths, data[k].shape[1])) for k in "ab"}
    with pytest.raises(FoldError, match=r"the training rows of fold 1 contain no row of "
                       r"class\(es\) \[1.0\] \(only 0.0\); choose folds"):
        pearl.fit("y ~ x + block(a) + block(b)", frame, blocks=blocks, family="binomial",
                  cv="f", seed=3, honest=False)


def test_features_needing_rows_in_memory_are_refused_by_name(client):
    """A fit on dask data returns the in-memory results class; what needs the rows in one
    process is refused with the reason (pearlstats.in_memory_only), and in-memory rows are
    predicted from the all-rows coefficients as for an in-memory fit."""
    data = _problem("gaussian", n=300)
    frame, blocks = _dask(data, npartitions=2)
    res = pearl.fit(FORMULA, frame, blocks=blocks, cv=3, seed=0, honest=False)
    for name in ("weight_uncertainty", "honest_risk"):
        with pytest.raises(InMemoryOnlyError, match=f"res.{name} is not available for a fit on "
                                                    "dask data: .+ Fit an in-memory sample"):
            getattr(res, name)
    with pytest.raises(InMemoryOnlyError, match=r"resample_weights\(method='bootstrap'"):
        res.resample_weights("bootstrap")
    with pytest.raises(OptionError, match="loss='absolute' is not available for dask data"):
        res.reweight("absolute")
    rows = {k: v for k, v in data.items() if k != "y"}
    with pytest.raises(OptionError, match="does not pickle"):
        pickle.dumps(res)
    in_memory = pearl.fit(FORMULA, data, cv=res.folds.compute(), seed=0, honest=False)
    np.testing.assert_allclose(res.predict(rows), in_memory.predict(rows), rtol=1e-8)


def test_a_block_given_in_data_and_in_blocks_is_refused_as_in_memory(client):
    """The dask fit silently used the ``blocks=`` copy; the in-memory fit refuses the pair."""
    data = _problem("gaussian", n=300)
    other = np.random.default_rng(9).normal(size=(300, 3))
    message = r"block\(s\) \['a'\] are given both in data and in blocks="
    with pytest.raises(BlockError, match=message):
        pearl.fit(FORMULA, data, blocks={"a": other}, cv=3, seed=0, honest=False)
    arrays = {k: da.from_array(v, chunks=(100,) + v.shape[1:]) for k, v in data.items()}
    with pytest.raises(BlockError, match=message):
        pearl.fit(FORMULA, arrays, blocks={"a": da.from_array(other, chunks=(100, 3))}, cv=3)


@pytest.mark.parametrize("family", ["binomial", "multinomial"])
def test_a_collinear_candidate_narrower_than_the_widest_is_singular_as_in_memory(client, family):
    """The dask Newton solves each problem at its own width (not padded to the widest): a
    candidate with collinear columns is still found singular in every fold, as in memory."""
    rng = np.random.default_rng(1)
    n = 2000
    a = rng.normal(size=(n, 3))
    b = rng.normal(size=(n, 2))
    b = np.column_stack([b, 2.0 * b[:, 0]])  # its third column twice its first
    if family == "binomial":
        y = (rng.random(n) < 1 / (1 + np.exp(-(a[:, 0] - b[:, 1])))).astype(float)
    else:
        y = rng.integers(0, 3, n).astype(float)
    formula = "y ~ block(a) + block(b)"
    res_m = pearl.fit(formula, {"y": y, "a": a, "b": b}, family=family,
                      cv=hash_folds(np.arange(n), 5, seed=0), seed=0, honest=False)
    lazy = {"y": da.from_array(y, chunks=500), "a": da.from_array(a, chunks=(500, 3)),
            "b": da.from_array(b, chunks=(500, 3))}
    res_d = pearl.fit(formula, lazy, family=family, cv=5, seed=0)

    def singular(res):  # the fold fits' notes (in memory only candidates with weight are
        failures = res.failures  # refitted on all rows: a+b has none in the multinomial)
        rows = failures[(failures["kind"] == "rank deficient") & (failures["stage"] == "cv")]
        return sorted((str(c), str(k), str(s)) for c, k, s in
                      zip(rows["candidate"], rows["fold"], rows["stage"]))

    assert singular(res_d) == singular(res_m)
    assert {c for c, _, _ in singular(res_m)} == {"b", "a+b"}
    oof_d = np.asarray(res_d.cv_predictions.compute())
    # the package's dask / in-memory agreement (both at the Newton tolerance; min-norm steps)
    np.testing.assert_allclose(oof_d, np.asarray(res_m.cv_predictions), rtol=0, atol=1e-8)
