"""honest_se="nested": Bates, Hastie & Tibshirani's nested CV against a hand-written one."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl
from pearlstats.exceptions import OptionError
from pearlstats.experiments.inference_checks.designs import DESIGNS, get_design
from pearlstats.experiments.inference_checks.honest import check_honest_se
from pearlstats.honest_se import check_honest_se as check_option
from pearlstats.honest_se import nested_se
from pearlstats.weights.baselines import STRATEGIES, TABLE_ROWS


def _one_block_data(n: int = 40, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    x, a = rng.normal(size=n), rng.normal(size=(n, 2))
    return {"y": x + a[:, 0] + rng.standard_t(4, size=n), "x": x, "a": a}


def _ols_losses(X, y, train, test) -> np.ndarray:
    beta = np.linalg.lstsq(X[train], y[train], rcond=None)[0]
    return (y[test] - X[test] @ beta) ** 2


def _hand_ncv(X, y, splits) -> tuple[float, float]:
    """Algorithm 1 of Bates et al. with OLS as the fitting algorithm, bias-corrected, + its SE."""
    n, K = len(y), int(splits[0].max()) + 1
    outer, inner = [], []
    for folds in splits:
        out, inn = np.full(n, np.nan), np.full((K, n), np.nan)
        for k in range(K):
            out[folds == k] = _ols_losses(X, y, folds != k, folds == k)
            for j in range(K):
                if j != k:
                    inn[k, folds == j] = _ols_losses(X, y, (folds != k) & (folds != j),
                                                     folds == j)
        outer.append(out)
        inner.append(inn)
    return _hand_algorithm_1(splits, outer, inner)


def test_nested_se_equals_hand_written_ncv_with_one_ols_candidate():
    # One candidate: every strategy is OLS on y ~ 1 + x + a, whatever the inner folds, so the
    # procedure is a plain least-squares fit that numpy can redo on each training set.
    data = _one_block_data()
    options = pearl.NestedSE(repeats=3)
    res = pearl.fit("y ~ x + block(a)", data, seed=4, honest_se=options, honest=4)
    estimate = nested_se(res.stages, res._nested, options)
    X = np.column_stack([np.ones(40), data["x"], data["a"]])
    risk, se = _hand_ncv(X, data["y"], estimate.folds)
    table = res.honest
    assert table.loc["PEARL", "risk"] == pytest.approx(risk, rel=1e-10)
    assert table.loc["PEARL", "se"] == pytest.approx(se, rel=1e-10)
    # the Null row is the same estimator with the intercept-only model as the procedure
    null_risk, null_se = _hand_ncv(np.ones((40, 1)), data["y"], estimate.folds)
    assert table.loc["Null", "risk"] == pytest.approx(null_risk, rel=1e-10)
    assert table.loc["Null", "se"] == pytest.approx(null_se, rel=1e-10)
    assert len(estimate.folds) == 3 and all(int(f.max()) == 3 for f in estimate.folds)
    # split 0 is res.honest's own outer folds; the others are new splits
    np.testing.assert_array_equal(estimate.folds[0], res.last_honest_risk.outer_folds)
    assert not np.array_equal(estimate.folds[1], estimate.folds[0])


@pytest.mark.parametrize("family", ["binomial", "poisson", "multinomial"])
def test_nested_se_runs_for_every_family_and_is_deterministic(family):
    rng = np.random.default_rng(1)
    n = 60
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    eta = 0.8 * a[:, 0] - 0.5 * b[:, 1]
    y = {"binomial": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float),
         "poisson": rng.poisson(np.exp(0.3 * eta)).astype(float),
         "multinomial": np.array(["u", "v", "w"])[(eta > -0.4).astype(int) + (eta > 0.4)]}[family]
    data = {"y": y, "a": a, "b": b}

    def table():
        return pearl.fit("y ~ block(a) + block(b)", data, family=family, seed=2,
                         honest_se=pearl.NestedSE(repeats=1)).honest

    first = table()
    assert list(first.index) == list(TABLE_ROWS)  # the strategies, then the Null row
    assert np.isfinite(first[["risk", "se", "ratio", "ratio_se"]].to_numpy()).all()
    assert (first["se"] > 0).all()
    pd.testing.assert_frame_equal(first, table())


@pytest.mark.parametrize("family, options", [
    ("gaussian", {"ridge": 0.5}),
    ("binomial", {"ridge": 0.3}),
    ("poisson", {"offset": np.linspace(-0.3, 0.3, 72)}),
    ("multinomial", {}),
])
def test_pair_reruns_refit_their_held_out_fold_as_the_cross_validation_would(
        family, options, monkeypatch):
    """Each pair of folds' re-run scores one held-out fold, from the candidates refitted on
    its training rows; the cross-validation over all merged folds (the path it replaced, and
    the one res.honest takes) fits the same problems, so the nested table agrees to the
    engines' convergence (Newton decrements below 1e-20, relative changes of about 1e-10 here;
    1e-8 leaves room for the multinomial's Newton-CG)."""
    import pearlstats.honest_se as honest_se

    rng = np.random.default_rng(4)
    n = 72
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    eta = 0.8 * a[:, 0] - 0.5 * b[:, 1]
    y = {"gaussian": eta + rng.normal(size=n),
         "binomial": (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(float),
         "poisson": rng.poisson(np.exp(0.3 * eta)).astype(float),
         "multinomial": np.array(["u", "v", "w"])[(eta > -0.4).astype(int) + (eta > 0.4)]}[family]

    def table():
        return pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b}, family=family,
                         seed=3, honest=4, honest_se=pearl.NestedSE(repeats=2), **options).honest

    refitted = table()
    monkeypatch.setattr(honest_se, "_pair_outside", lambda state, merged: honest_se.cross_validate(
        state.family.configured(candidate_ridges={}), state.design.X, state.response,
        state.candidates.everything, merged, ridge=state.ridge))
    cross_validated = table()
    columns = ["risk", "se", "ratio", "ratio_se"]
    np.testing.assert_allclose(refitted[columns].to_numpy(float),
                               cross_validated[columns].to_numpy(float), rtol=1e-8)


def test_honest_se_refuses_what_it_cannot_do():
    data = _one_block_data()
    with pytest.raises(OptionError, match="honest_se='bogus'; use 'naive'"):
        pearl.fit("y ~ x + block(a)", data, honest_se="bogus")
    with pytest.raises(OptionError, match="honest=False"):
        pearl.fit("y ~ x + block(a)", data, honest_se="nested", honest=False)
    with pytest.raises(OptionError, match="fold labels"):
        pearl.fit("y ~ x + block(a)", data, honest_se="nested", cv=np.arange(40) % 4)
    with pytest.raises(OptionError, match="fold column"):
        pearl.fit("y ~ x + block(a)", {**data, "fold": np.arange(40) % 4}, honest_se="nested",
                  cv="fold")
    with pytest.raises(OptionError, match="observation weights"):
        pearl.fit("y ~ x + block(a)", data, honest_se="nested", weights=np.ones(40))
    with pytest.raises(OptionError, match="dask data"):
        check_option("nested", 5, False, weighted=False, dask=True)
    with pytest.raises(OptionError, match="repeats"):
        pearl.NestedSE(repeats=0)


def test_summary_names_the_se():
    data = _one_block_data()
    naive = " ".join(pearl.fit("y ~ x + block(a)", data, seed=0).summary().as_text().split())
    assert "SE (naive)" in naive and "treats the held-out rows as independent" in naive
    assert "under-covers at small n" in naive
    nested = " ".join(pearl.fit("y ~ x + block(a)", data, seed=0,
                                honest_se=pearl.NestedSE(repeats=2)).summary().as_text().split())
    assert "SE (nested CV)" in nested and "over 2 splits of the rows" in nested
    assert "treats rows as independent" not in nested
    assert "ratio SE applies the same estimator" in nested and "a heuristic" in nested


def test_summary_counts_the_rows_whose_se_is_the_lower_bound():
    data = _one_block_data()
    res = pearl.fit("y ~ x + block(a)", data, seed=0, honest_se=pearl.NestedSE(repeats=2))
    text = " ".join(res.summary().as_text().split())
    lower = int((res.honest["se_bound"] == "lower").sum())
    if lower:
        assert f"lower bound (the naive SE) for {lower} of {len(res.honest)} rows" in text
    else:
        assert "lower bound (the naive SE)" not in text
    noisy = res.honest["se_mc_error"].max()
    assert ("Monte Carlo error" in text) == bool(np.isfinite(noisy) and noisy > 0.20)


def test_summary_counts_the_rows_whose_se_is_the_upper_bound():
    # 60 rows, K = 3, R = 2: the MSE estimate of 7 of the 10 rows exceeds sqrt(K) naive SEs
    # here (two splits of three folds: six noisy a-terms), so the upper bound sets their SE.
    # The note must count those rows as it counts the lower bound's; the count is read from
    # the table itself, so the comparison is exact.
    rng = np.random.default_rng(0)
    n = 60
    blocks = {"a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 2)),
              "c": rng.normal(size=(n, 6))}
    y = blocks["a"][:, 0] + blocks["b"][:, 1] + rng.normal(size=n)
    res = pearl.fit("y ~ block(a) + block(b) + block(c)", {"y": y, **blocks}, seed=7, honest=3,
                    honest_se=pearl.NestedSE(repeats=2))
    upper = int((res.honest["se_bound"] == "upper").sum())
    assert upper > 0
    text = " ".join(res.summary().as_text().split())
    assert (f"upper bound (sqrt(K) times the naive SE, K outer folds) for {upper} of "
            f"{len(res.honest)} rows") in text


def test_check_honest_se_quick_mode():
    table = check_honest_se(designs=("blocks",), n=60, n_datasets=2, n_test=300, seed=5,
                            repeats=1)
    assert len(table) == 2 * len(STRATEGIES)
    assert set(table["se_method"]) == {"naive", "nested"}
    assert table["coverage"].between(0, 1).all() and (table["n_datasets"] == 2).all()
    assert table.loc[table["strategy"] == "PEARL", "ratio_coverage"].isna().all()
    # data set 0's PEARL test risk, recomputed by hand from a refit and its predictions
    draws = table.attrs["draws"]
    design = get_design("blocks")
    key = [5, DESIGNS.index("blocks"), 0]
    sample, test = design.sample(60, seed=key), design.sample(300, seed=key + [1])
    res = pearl.fit(design.formula, sample.data, blocks=sample.blocks, seed=0)
    predicted = res.predict(test.data, blocks=test.blocks)
    expected = np.mean((test.data["y"].to_numpy() - np.asarray(predicted)) ** 2)
    row = draws[(draws["data_set"] == 0) & (draws["strategy"] == "PEARL")]
    assert row["test_risk"].to_numpy() == pytest.approx(expected, rel=1e-10)


def test_nested_se_keeps_its_splits_and_each_prefix_is_that_many_repeats():
    # Split r is drawn from [seed, 2, r] whatever R is, so the first r splits of an R-split
    # estimate are exactly what NestedSE(repeats=r) computes: using(r) must equal that fit's
    # table (same arithmetic on the same losses, so equal to rounding).
    data = _one_block_data()
    res = pearl.fit("y ~ x + block(a)", data, seed=3, honest_se=pearl.NestedSE(repeats=4))
    estimate = res.nested_se
    assert estimate.repeats == 4 and len(estimate.inner_losses) == 4
    smaller = pearl.fit("y ~ x + block(a)", data, seed=3, honest_se=pearl.NestedSE(repeats=2))
    columns = ["risk", "se", "ratio", "ratio_se", "bias", "mse", "se_mc_error"]
    np.testing.assert_allclose(estimate.using(2)[columns].to_numpy(dtype=float),
                               smaller.honest[columns].to_numpy(dtype=float),
                               rtol=1e-12, equal_nan=True)
    running = estimate.running()
    assert list(running.index.get_level_values("splits").unique()) == [1, 2, 3, 4]
    pd.testing.assert_frame_equal(running.loc[4], res.honest[["risk", "se", "se_bound"]],
                                  check_names=False)
    with pytest.raises(OptionError, match="splits=5, but the estimate has 4 splits"):
        estimate.using(5)
    assert pearl.fit("y ~ x + block(a)", data, seed=3).nested_se is None  # naive SEs


def test_se_bound_and_monte_carlo_error_from_the_per_split_terms():
    # Recompute from the stored losses by hand: which bound set the SE, and the SE's relative
    # Monte Carlo error 0.5 SD(mse_r) / sqrt(R) / mean(mse_r) (delta method on sqrt).
    data = _one_block_data(n=50, seed=7)
    res = pearl.fit("y ~ x + block(a)", data, seed=1, honest_se=pearl.NestedSE(repeats=5),
                    honest=5)
    est, table = res.nested_se, res.honest
    K, n = 5, 50
    per_split = []
    for split, outer, inner in zip(est.folds, est.outer_losses, est.inner_losses):
        terms = [(inner[k][split != k, 0].mean() - outer[split == k, 0].mean()) ** 2
                 - outer[split == k, 0].var(ddof=1) / (split == k).sum() for k in range(K)]
        per_split.append(np.mean(terms))
    mse = np.mean(per_split)
    pooled = np.concatenate([inner[k][split != k, 0] for split, inner in
                             zip(est.folds, est.inner_losses) for k in range(K)])
    naive = pooled.std(ddof=1) / np.sqrt(n)
    raw = np.sqrt((K - 1) / K * max(mse, 0.0))
    expected_bound = "lower" if raw < naive else ("upper" if raw > np.sqrt(K) * naive else "")
    assert table.loc["PEARL", "mse"] == pytest.approx(mse, rel=1e-12)
    assert table.loc["PEARL", "se_bound"] == expected_bound
    if expected_bound == "":
        expected = 0.5 * np.std(per_split, ddof=1) / np.sqrt(5) / mse
        assert table.loc["PEARL", "se_mc_error"] == pytest.approx(expected, rel=1e-10)
    else:
        assert np.isnan(table.loc["PEARL", "se_mc_error"])
    assert set(table["se_bound"]) <= {"lower", "upper", ""}


def _hand_algorithm_1(folds, outer, inner) -> tuple[float, float]:
    """Bates et al.'s Algorithm 1 on one column of stored losses, written out with loops."""
    n, K = len(folds[0]), inner[0].shape[0]
    a_terms, b_terms, inner_all, outer_means = [], [], [], []
    for split, out, inn in zip(folds, outer, inner):
        for k in range(K):
            held = split == k
            a_terms.append((inn[k][~held].mean() - out[held].mean()) ** 2)
            b_terms.append(out[held].var(ddof=1) / held.sum())
            inner_all.append(inn[k][~held])
        outer_means.append(out.mean())
    every = np.concatenate(inner_all)
    err_ncv, err_cv = every.mean(), np.mean(outer_means)
    mse = np.mean(a_terms) - np.mean(b_terms)
    naive = every.std(ddof=1) / np.sqrt(n)
    se = min(max(np.sqrt((K - 1) / K * max(mse, 0.0)), naive), np.sqrt(K) * naive)
    return err_ncv - (1 + (K - 2) / K) * (err_ncv - err_cv), se


def test_the_warning_against_ms_compares_the_nested_risks_the_table_shows():
    # With honest_se="nested" the table shows the nested estimates, but the warning "PEARL's
    # honest risk exceeds MS's" came from split 0's naive re-run: on this data it read
    # 0.094 above MS (paired SE 0.045) beside a table where PEARL is 0.007 *below* MS.
    rng = np.random.default_rng(8)
    n = 50
    blocks = {"a": rng.standard_normal((n, 2)), "b": rng.standard_normal((n, 3)),
              "c": rng.standard_normal((n, 3))}
    data = pd.DataFrame({"y": 1.5 * blocks["a"][:, 0] + rng.standard_normal(n)})
    res = pearl.fit("y ~ block(a) + block(b) + block(c)", data, blocks=blocks, seed=8,
                    honest=5, honest_se=pearl.NestedSE(repeats=3))
    estimate = res.nested_se
    excess, se = estimate.excess_over("MS")
    ms = list(TABLE_ROWS).index("MS")
    difference = (
        [o[:, 0] - o[:, ms] for o in estimate.outer_losses],
        [i[..., 0] - i[..., ms] for i in estimate.inner_losses],
    )
    hand_excess, hand_se = _hand_algorithm_1(estimate.folds, *difference)
    # the same sums in another order: agreement to rounding (losses are O(1), n = 50)
    assert excess == pytest.approx(hand_excess, rel=1e-10)
    assert se == pytest.approx(hand_se, rel=1e-10)
    table = res.honest
    assert excess == pytest.approx(table.loc["PEARL", "risk"] - table.loc["MS", "risk"],
                                   rel=1e-10)
    assert excess < se  # here PEARL is not above MS by the table's own numbers
    naive_excess, naive_se = res.last_honest_risk.excess_over("MS")
    assert naive_excess > naive_se  # ... while split 0 alone would have warned
    assert "exceeds that of MS" not in str(res.summary())
    with pytest.raises(OptionError, match="not a row"):
        estimate.excess_over("MSE")


def test_outer_folds_of_one_row_are_refused_by_name_not_given_nan_ses():
    """The SE uses each outer fold's variance of its held-out losses: with 10 rows and
    honest=6 two folds hold 1 row, and every SE, MSE and ratio SE was NaN with nothing said
    but numpy's ddof warning. The reason is now res.honest_failure (res.honest None)."""
    rng = np.random.default_rng(0)
    n = 10
    data = {"y": rng.normal(size=n), "a": rng.normal(size=(n, 1)), "b": rng.normal(size=(n, 1))}
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=0, honest=6, honest_se="nested")
    assert res.honest is None
    assert "needs at least 2 rows in every outer fold" in res.honest_failure
    assert "use honest <= 5" in res.honest_failure
    five = pearl.fit("y ~ block(a) + block(b)", data, seed=0, honest=5,
                     honest_se=pearl.NestedSE(repeats=2))
    assert np.isfinite(five.honest["risk"]).all()


def test_the_summary_names_the_outer_folds_the_re_runs_used():
    """With 3 given folds honest=5 deals them to 3 outer folds; the title said 5-fold."""
    rng = np.random.default_rng(3)
    n = 30
    data = {"y": rng.normal(size=n), "a": rng.normal(size=(n, 2)), "b": rng.normal(size=(n, 2))}
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=1, honest=5, cv=np.arange(n) % 3)
    res.honest
    text = res.summary().as_text()
    assert "3-fold (of 5 asked: the given folds)" in " ".join(text.split())
    plain = pearl.fit("y ~ block(a) + block(b)", data, seed=1, honest=5)
    assert "honest risk: 5-fold nested" in " ".join(plain.summary().as_text().split())
