"""Messages and warnings a user meets (issue 26, item 6): each names what is wrong, in the
user's terms (their argument, their rows, their columns), and what would be right."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl

FORMULA = "y ~ block(a) + block(b)"


def _data(n: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    return {"y": a[:, 0] - b[:, 1] + rng.normal(size=n), "a": a, "b": b}


def test_honest_true_is_the_default_number_of_outer_folds():
    data = _data(60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.PearlWarning)
        as_true = pearl.fit(FORMULA, data, seed=1, honest=True)
        as_five = pearl.fit(FORMULA, data, seed=1, honest=5)
        assert as_true.stages.honest == 5
        pd.testing.assert_frame_equal(as_true.honest, as_five.honest)
    assert pearl.fit(FORMULA, data, seed=1, honest=np.False_).honest is None


def test_more_outer_folds_than_rows_names_honest_not_cv():
    res = pearl.fit(FORMULA, _data(150), seed=1, honest=200)
    with pytest.warns(pearl.PearlWarning,
                      match="honest=200 outer folds but only 150 rows; use honest <= 150$"):
        assert res.honest is None
    assert "cv=" not in res.honest_failure


def test_honest_with_127_candidates_builds_its_table_without_performance_warnings():
    import statsmodels.api as sm

    rng = np.random.default_rng(3)
    n = 60
    data = {f"b{i}": rng.normal(size=(n, 1)) for i in range(7)}
    data["y"] = data["b0"][:, 0] + rng.normal(size=n)
    formula = "y ~ " + " + ".join(f"block(b{i})" for i in range(7))
    res = pearl.fit(formula, data, seed=2)
    assert len(res.candidate_labels) == 127
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a PerformanceWarning per candidate past 100 before
        warnings.simplefilter("ignore", pearl.PearlWarning)
        nested = res.honest_risk()
    # a candidate's held-out losses: OLS refitted without each outer fold (statsmodels)
    X = sm.add_constant(np.column_stack([data["b0"], data["b3"]]))
    expected = np.empty(n)
    for k in range(nested.n_outer):
        test = nested.outer_folds == k
        fitted = sm.OLS(data["y"][~test], X[~test]).fit()
        expected[test] = (data["y"][test] - fitted.predict(X[test])) ** 2
    np.testing.assert_allclose(nested.row_losses["b0+b3"], expected, rtol=1e-9)


def test_a_poisson_row_that_overflows_is_named_with_its_candidate():
    import statsmodels.api as sm

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(100, 2)), rng.normal(size=(100, 2))
    y = rng.poisson(np.exp(0.5 * a[:, 0])).astype(float)
    res = pearl.fit(FORMULA, {"y": y, "a": a, "b": b}, family="poisson", seed=0)
    new_a = a[:4].copy()
    new_a[2, 0] = 3000.0
    # statsmodels: candidate a's linear predictor for that row is past exp's overflow at 709
    glm = sm.GLM(y, sm.add_constant(a), family=sm.families.Poisson()).fit()
    assert glm.params @ [1.0, *new_a[2]] > 709
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow in exp
        with pytest.raises(pearl.DataError, match=r"candidate\(s\) \['a'\] fitted without outer "
                           r"fold \d predict a non-finite value for new row 2 \(by position\)"):
            res.predict({"a": new_a, "b": b[:4]}, interval="prediction")
        kept = res.predict({"a": new_a[[0, 1, 3]], "b": b[[0, 1, 3]]}, interval="prediction")
    assert np.isfinite(kept.to_numpy()).all()


def test_blocks_longer_than_the_new_rows_are_refused_naming_both_lengths():
    data = _data(80)
    res = pearl.fit("y ~ x + block(a) + block(b)", dict(data, x=data["b"][:, 0] ** 2), seed=0)
    for blocks in ({"a": data["a"][:12], "b": data["b"][:12]},):
        with pytest.raises(pearl.PearlError, match="block 'a' has 12 rows but the data has 10"):
            res.predict({"x": np.ones(10)}, blocks=blocks)
        with pytest.raises(pearl.PearlError, match="block 'a' has 12 rows but the data has 10"):
            res.predict(pd.DataFrame({"x": np.ones(10)}), blocks=blocks)


def test_forgetting_blocks_says_to_pass_blocks():
    frame = pd.DataFrame({"y": _data(40)["y"]})
    with pytest.raises(pearl.BlockError, match=r"block 'a' in the formula has no values: no blocks "
                       r"were given; pass them with blocks=\{'a': array"):
        pearl.fit(FORMULA, frame)


def test_a_missing_covariate_lists_the_data_columns_closest_first():
    data = dict(_data(40), x=np.ones(40), x1=np.arange(40.0))
    with pytest.raises(pearl.DataError, match=r"read \['x2'\], which the data has no column for.*"
                       r"closest first: \['x', 'x1', 'y'\]$"):
        pearl.fit("y ~ x2 + block(a)", data)
    # a name the caller defines is a row variable, not a missing column
    x2 = np.linspace(0, 1, 40)  # noqa: F841 (read by the formula)
    res = pearl.fit("y ~ x2 + block(a)", data, seed=0)
    assert "x2" in res.params.index.get_level_values(-1)


def test_a_negative_weight_is_named_as_such_not_as_a_zero_to_drop():
    rng = np.random.default_rng(0)
    n = 30
    data = {"y": rng.normal(size=n), "a": rng.normal(size=(n, 2))}
    weights = np.ones(n)
    weights[[3, 7]] = [0.0, -1.0]
    with pytest.raises(pearl.DataError, match=r"it is -1 at .*7.*negative value has no"):
        pearl.fit("y ~ block(a)", data, weights=weights, weight_type="variance", seed=0)
    weights[7] = 1.0
    with pytest.raises(pearl.DataError, match=r"it is 0 at .*3.*drop the rows of weight 0"):
        pearl.fit("y ~ block(a)", data, weights=weights, weight_type="variance", seed=0)
