"""``PearlResults`` used the way a hostile but legitimate user would (pearlstats/results/core.py).

Numbers are checked against direct statsmodels fits of the same candidates.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

import pearlstats as pearl

N = 60


@pytest.fixture(scope="module")
def fit():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 2))
    y = a[:, 0] - b[:, 1] + rng.normal(scale=0.5, size=N)
    res = pearl.fit("y ~ block(a) + block(b)", {"y": y[:40]},
                    blocks={"a": a[:40], "b": b[:40]}, seed=0, honest=False)
    return res, y, a, b


def test_predict_candidates_takes_one_label_as_a_string(fit):
    res, y, a, b = fit
    table = res.predict_candidates({}, blocks={"a": a[40:], "b": b[40:]}, labels="a+b")
    assert list(table.columns) == ["a+b"]  # not the characters "a", "+", "b"
    weighted = res.weights.index[res.weights > 0]  # an Index, as a user would pass it
    assert list(res.predict_candidates({}, blocks={"a": a[40:], "b": b[40:]},
                                       labels=weighted).columns) == list(weighted)
    design = sm.add_constant(np.column_stack([a, b]))
    direct = sm.OLS(y[:40], design[:40]).fit().predict(design[40:])
    np.testing.assert_allclose(table["a+b"], direct, rtol=1e-10)


def test_an_unknown_candidate_label_is_a_candidate_error_and_a_key_error(fit):
    res, _, a, b = fit
    message = r"no candidate 'c'; candidates are \['a', 'b', 'a\+b'\]"
    with pytest.raises(pearl.CandidateError, match=message):
        res.candidate_params("c")
    with pytest.raises(pearl.CandidateError, match=message):
        res.predict_candidates({}, blocks={"a": a[40:], "b": b[40:]}, labels=["a", "c"])
    with pytest.raises(KeyError, match=message):  # results.candidates is a mapping
        res.candidates["c"]
    assert "c" not in res.candidates and "a+b" in res.candidates
    for labels in ([], 3):  # a bare ValueError (multinomial) or TypeError
        with pytest.raises(pearl.CandidateError, match=r"labels=.*; give candidate labels"):
            res.predict_candidates({}, blocks={"a": a[40:], "b": b[40:]}, labels=labels)


def test_editing_a_table_read_from_the_results_does_not_change_the_fit(fit):
    # The docstring says read-only; the cached Series itself was handed out, so thresholding
    # "your" weights changed every later prediction (weights then summed to 0.81).
    res, y, a, b = fit
    new = {"a": a[40:], "b": b[40:]}
    before = res.predict({}, blocks=new).to_numpy()
    design = sm.add_constant(np.column_stack([a, b]))
    columns = {"a": [0, 1, 2], "b": [0, 3, 4], "a+b": [0, 1, 2, 3, 4]}
    direct = sum(
        weight * sm.OLS(y[:40], design[:40, columns[label]]).fit().predict(
            design[40:, columns[label]])
        for label, weight in res.weights.items()
    )
    np.testing.assert_allclose(before, direct, rtol=1e-10)
    weights = res.weights
    weights[weights < weights.max()] = 0.0
    for table in (res.cv_predictions, res.cv_risk, res.cv_risk_se, res.baselines,
                  res.strategy_weights, res.candidate_table, res.block_importance,
                  res.block_membership, res.weight_stability, res.diagnostics["stability"]):
        if isinstance(table, pd.Series):
            table.iloc[0] = 0
        else:
            table.iloc[0, 0] = False if table.dtypes.iloc[0].kind == "b" else 0
    np.testing.assert_allclose(res.predict({}, blocks=new), direct, rtol=1e-10)
    assert res.weights.sum() == pytest.approx(1.0)
    assert (res.cv_risk > 0).all() and (res.cv_risk_se > 0).all()
    assert res.baselines["cv_risk"].iloc[0] > 0 and res.candidate_table["n_params"].iloc[0] > 0
    assert res.block_membership.iloc[0, 0] and res.diagnostics["stability"]["weight"].sum() > 0
    # on the simplex to the rounding of a sum of J weights (AICc and BIC are normalised exps)
    np.testing.assert_allclose(res.strategy_weights.sum(axis=1), 1.0, rtol=0,
                               atol=4 * res.strategy_weights.shape[1] * np.finfo(float).eps)


def test_the_frozen_state_refuses_writes_so_the_summary_cannot_drift(fit):
    """res.stages.solution.weights[:] = ... changed the summary's Strategies while res.weights
    kept the fitted weights; the state's arrays now refuse writes."""
    res = fit[0]
    for values in (res.stages.solution.weights, res.stages.output.predictions,
                   res.stages.folds, res.stages.response.y):
        with pytest.raises(ValueError, match="read-only"):
            values[0] = 0.0
    res.reweight(loss="absolute")  # re-solving from the frozen output still works
