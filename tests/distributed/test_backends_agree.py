"""Both backends, one results object: a fit on dask partitions equals the in-memory fit.

Every feature the dask path offers is computed on both backends from the same fold
labels (the dask fit's hashed folds, given to the in-memory fit as ``cv=`` labels)
and compared to 1e-8: weights, CV risks and SEs, the baselines with the Null row,
the strategies' weights, coefficients, fitted values, residuals, out-of-fold
predictions, predictions and scores of new rows, and every summary panel the dask
summary shows. The partitions are of unequal sizes and one is empty; a property test
shows the numbers do not depend on how the rows are partitioned (1e-12), as
tests/backends/test_chunk_size_invariance.py shows for the in-memory chunk size.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402
from pearlstats.exceptions import OptionError  # noqa: E402
from pearlstats.results import PearlResults  # noqa: E402
from pearlstats.weights.certificate import GAP_RTOL  # noqa: E402

# A numpy function dask does not implement computes its dask arguments into memory (with a
# FutureWarning): the row-sized values would be gathered on the client, not reduced in place.
pytestmark = pytest.mark.filterwarnings("error:The `numpy.*is not implemented by Dask")

FORMULA = "y ~ x + block(a) + block(b) + block(c)"
LENGTHS = (170, 0, 260, 47, 123)  # unequal partitions, one of them empty
N = sum(LENGTHS)


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _problem(family: str, n: int = N, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a, b, c = rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.normal(size=(n, 4))
    x = rng.normal(size=n) + 5.0
    signal = a[:, 0] - b[:, 1] + 0.5 * c[:, 2] + 0.3 * (x - 5)
    if family == "gaussian":
        y = 100.0 + signal + rng.normal(size=n)
    elif family == "binomial":
        y = (signal + rng.logistic(size=n) > 0).astype(float)
    elif family == "multinomial":
        y = np.digitize(signal + rng.logistic(size=n), [-1.0, 0.5])  # integer classes
    else:
        y = rng.poisson(np.exp(0.4 * signal)).astype(float)
    return {"y": y, "x": x, "a": a, "b": b, "c": c}


def _partitioned(data: dict, lengths: tuple) -> tuple:
    """A dask DataFrame of y and x and dask array blocks, in partitions of *lengths* rows.

    Each partition is cut by divisions of a frame that also holds a dropped row per
    partition, and the rows to keep are selected with a filter, as a user's filtered
    data has them: a partition of 0 rows is one whose rows were all filtered out.
    """
    frame = pd.DataFrame({"y": data["y"], "x": data["x"], "keep": True})
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(int)
    pieces = []
    for s, e in zip(starts[:-1], starts[1:]):
        pieces += [frame.iloc[s:e], pd.DataFrame({"y": [0.0], "x": [0.0], "keep": [False]})]
    padded = pd.concat(pieces, ignore_index=True)
    divisions = [int(s + i) for i, s in enumerate(starts[:-1])] + [len(padded) - 1]
    ddf = dd.from_pandas(padded, npartitions=1).repartition(divisions=divisions)
    ddf = ddf[ddf["keep"]][["y", "x"]]
    blocks = {k: da.from_array(data[k], chunks=(tuple(lengths), data[k].shape[1]))
              for k in "abc"}
    return ddf, blocks


def _both(family: str, lengths: tuple = LENGTHS, seed: int = 3, **options):
    data = _problem(family)
    ddf, blocks = _partitioned(data, lengths)
    options.setdefault("honest", 3)
    on_dask = pearl.fit(FORMULA, ddf, blocks=blocks, family=family, cv=4, seed=seed, **options)
    labels = hash_folds(np.arange(N), 4, seed)
    in_memory = pearl.fit(FORMULA, data, family=family, cv=labels, seed=seed, **options)
    return data, on_dask, in_memory


def _close(left, right, rtol: float = 1e-8) -> None:
    np.testing.assert_allclose(np.asarray(left, dtype=float), np.asarray(right, dtype=float),
                               rtol=rtol, atol=rtol * 1e-2)


FAMILIES = ["gaussian", "binomial", "poisson", "multinomial"]


@pytest.fixture(scope="module", params=FAMILIES)
def fits(request):
    with dask.config.set(scheduler="synchronous"):
        return _both(request.param)


def test_the_same_results_class_and_folds(fits):
    _, on_dask, in_memory = fits
    assert type(on_dask) is PearlResults
    np.testing.assert_array_equal(on_dask.folds.compute(), in_memory.folds)
    assert on_dask.nobs == in_memory.nobs == N


def test_weights_risks_and_baselines_agree(fits):
    _, on_dask, in_memory = fits
    _close(on_dask.weights, in_memory.weights)
    _close(on_dask.cv_risk, in_memory.cv_risk)
    _close(on_dask.cv_risk_se, in_memory.cv_risk_se)
    assert on_dask.weight_objective == pytest.approx(in_memory.weight_objective, rel=1e-8)
    numbers = ["cv_risk", "se", "risk_ratio", "ratio_se"]
    _close(on_dask.baselines[numbers], in_memory.baselines[numbers])
    assert list(on_dask.baselines.index) == list(in_memory.baselines.index)
    assert on_dask.baselines.loc["Null", "candidate"] == "intercept only"
    pd.testing.assert_frame_equal(on_dask.strategy_weights, in_memory.strategy_weights,
                                  rtol=1e-8, atol=1e-10)


def test_row_sized_values_are_dask_collections_with_the_in_memory_values(fits):
    _, on_dask, in_memory = fits
    for name in ("cv_predictions", "fittedvalues", "resid"):
        lazy = getattr(on_dask, name)
        assert dask.is_dask_collection(lazy), name
        _close(lazy.compute(), getattr(in_memory, name))
    if in_memory.family in ("binomial", "poisson"):  # Pearson residuals of a GLM
        _close(on_dask.resid_pearson.compute(), in_memory.resid_pearson)


def test_coefficients_and_their_inference_agree(fits):
    _, on_dask, in_memory = fits
    for label in in_memory.candidate_labels:
        _close(on_dask.candidate_params(label), in_memory.candidate_params(label))
    _close(on_dask.params, in_memory.params)
    if in_memory.family == "multinomial":  # no covariance pass for MNLogit yet: refused
        with pytest.raises(OptionError, match="multinomial"):
            on_dask.bse  # noqa: B018
        return
    _close(on_dask.bse, in_memory.bse)
    _close(on_dask.conf_int(), in_memory.conf_int())
    _close(on_dask.coef_table()[["coef", "std err"]], in_memory.coef_table()[["coef", "std err"]])
    table = ["weight", "coef", "std err", "lower", "upper"]
    _close(on_dask.candidate_params()[table], in_memory.candidate_params()[table])
    pd.testing.assert_frame_equal(on_dask.candidate_table, in_memory.candidate_table,
                                  rtol=1e-8)


def test_honest_risks_computed_on_the_partitions_agree(fits):
    _, on_dask, in_memory = fits
    numbers = ["risk", "se", "ratio", "ratio_se"]
    _close(on_dask.honest[numbers], in_memory.honest[numbers])
    assert list(on_dask.honest.index) == list(in_memory.honest.index)


def test_new_rows_agree(fits):
    data, on_dask, in_memory = fits
    rows = {k: v[:40] for k, v in data.items() if k != "y"}
    _close(on_dask.predict(rows), in_memory.predict(rows))
    if in_memory.family == "gaussian":
        _close(on_dask.predict(rows, interval="confidence"),
               in_memory.predict(rows, interval="confidence"))
    # CV+ intervals and prediction sets: exact order statistics of the same held-out scores
    interval = "set" if in_memory.classes is not None else "prediction"
    on_dask_interval = on_dask.predict(rows, interval=interval, alpha=0.2)
    in_memory_interval = in_memory.predict(rows, interval=interval, alpha=0.2)
    if interval == "set":
        pd.testing.assert_frame_equal(on_dask_interval, in_memory_interval)
        assert on_dask_interval.to_numpy().sum(axis=1).min() >= 1
    else:
        _close(on_dask_interval, in_memory_interval)
    ddf, blocks = _partitioned(data, LENGTHS)
    _close(on_dask.predict(ddf, blocks=blocks).compute(), in_memory.predict(data))
    pd.testing.assert_frame_equal(on_dask.evaluate(ddf, blocks=blocks), in_memory.evaluate(data),
                                  rtol=1e-8, atol=1e-10)


def test_every_summary_panel_on_dask_equals_the_in_memory_one(fits):
    _, on_dask, in_memory = fits
    lazy, memory = on_dask.summary(), in_memory.summary()
    shown = list(lazy.panels)
    expected = {"candidates", "strategies", "importance", "diagnostics"}
    if in_memory.family != "multinomial":
        expected.add("coefficients")
    assert expected <= set(shown)

    def lines(table):
        """The table's cells row by row, without the solver's KKT gap: it is at the rounding
        level (0 on one backend, 4e-16 on the other), and its width sets the table's, so the
        rules and the padding are left out too."""
        return [" ".join(line.split()) for line in str(table).splitlines()
                if "KKT gap" not in line and set(line.strip()) - set("=-")]

    for name in shown:
        assert lines(lazy.panels[name]) == lines(memory.panels[name]), name
    assert "stability" in lazy.panels  # fold complements re-solved by passes
    notes = [text.as_text().split("Strategies: ")[1] for text in (lazy, memory)]
    assert "Honest risk: the whole procedure" in notes[0]  # was missing on dask rows
    assert notes[0] == notes[1]


def test_weights_re_solved_under_other_losses_agree(fits):
    _, on_dask, in_memory = fits
    other = "squared" if in_memory.loss != "squared" else (
        "cross_entropy" if in_memory.classes is not None else None)
    if other is not None:
        _close(on_dask.reweight(other).weights, in_memory.reweight(other).weights)
    _close(on_dask.reweight(in_memory.loss).weights, in_memory.weights)
    pd.testing.assert_frame_equal(on_dask.loss_sensitivity(), in_memory.loss_sensitivity(
        [name for name in in_memory.stages.family.sensitivity_losses
         if name in ("squared", "cross_entropy", "poisson_deviance")]), rtol=0, atol=1e-8)


def test_weights_re_solved_on_fold_complements_agree(fits):
    _, on_dask, in_memory = fits
    pd.testing.assert_frame_equal(on_dask.weight_stability, in_memory.weight_stability,
                                  rtol=0, atol=1e-8)
    pd.testing.assert_frame_equal(on_dask.diagnostics["stability"],
                                  in_memory.diagnostics["stability"], rtol=0, atol=1e-8)


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=300), min_size=2, max_size=6))
def test_results_do_not_depend_on_the_partitioning(cuts):
    """Any partitioning of the same rows (empty partitions included) gives the same numbers."""
    bounds = sorted({min(c, N) for c in cuts} | {0, N})
    lengths = tuple(int(e - s) for s, e in zip(bounds[:-1], bounds[1:])) + (0,)
    lengths = (lengths[-1],) + lengths[:-1]  # an empty first partition too
    data = _problem("binomial")
    frame, arrays = _partitioned(data, LENGTHS)
    reference = pearl.fit(FORMULA, frame, blocks=arrays, family="binomial", cv=4, seed=3,
                          honest=False)
    ddf, blocks = _partitioned(data, lengths)
    res = pearl.fit(FORMULA, ddf, blocks=blocks, family="binomial", cv=4, seed=3, honest=False)
    # The Newton fits stop at a decrement of 1e-24 (coefficients within about 1e-12), whatever
    # order the partitions sum their rows in: the out-of-fold predictions agree to rounding
    # (2e-16 seen), and so do the candidates' CV risks.
    _close(res.cv_predictions, reference.cv_predictions, rtol=1e-12)
    _close(res.cv_risk, reference.cv_risk, rtol=1e-12)
    # The weights are certified to a duality gap of GAP_RTOL (1 + |f|), not solved exactly: two
    # solves of the same QP summed in another order may stop at different points within that
    # gap. Their objectives then agree within two gaps; the weights (and PEARL's risk, a
    # function of them) to 2e-10 in the partitionings seen, 1e-8 here to leave room for flatter
    # directions of the QP (nearly collinear candidates).
    gap = GAP_RTOL * (1 + abs(reference.weight_objective))
    assert abs(res.weight_objective - reference.weight_objective) <= 2 * gap
    np.testing.assert_allclose(res.weights, reference.weights, rtol=0, atol=1e-8)
    _close(res.baselines[["cv_risk", "se"]], reference.baselines[["cv_risk", "se"]], rtol=1e-8)


def test_the_fits_warn_alike_about_separated_candidates():
    """Both backends refit separated candidates with the same ridges and say so alike."""
    data = _problem("binomial")
    data["a"][:, 0] = np.where(data["y"] == 1, 5.0, -5.0)  # block a separates the classes
    ddf, blocks = _partitioned(data, LENGTHS)
    with pytest.warns(pearl.exceptions.SeparationWarning) as on_dask:
        lazy = pearl.fit(FORMULA, ddf, blocks=blocks, family="binomial", cv=4, seed=3,
                         honest=False)
    with pytest.warns(pearl.exceptions.SeparationWarning) as in_memory:
        memory = pearl.fit(FORMULA, data, family="binomial", cv=hash_folds(np.arange(N), 4, 3),
                           seed=3, honest=False)
    assert [str(w.message) for w in on_dask] == [str(w.message) for w in in_memory]
    _close(lazy.weights, memory.weights)


def test_dropped_separated_candidates_leave_the_same_ledger():
    """``separation="drop"``: the same ledger rows, in the same order, on both backends.

    The dask ledger had one ``"refit"`` separation row more per dropped candidate (20 rows
    against 16 here, for a, a+b, a+c and a+b+c): the passes fit every candidate on all rows
    and their notes were recorded with the fit, where memory records a refit's notes when the
    refit is done (at fit time for the candidates with weight, else on first use of the
    candidate's coefficients).
    """
    data = _problem("binomial")
    data["a"][:, 0] = np.where(data["y"] == 1, 5.0, -5.0)  # block a separates the classes
    ddf, blocks = _partitioned(data, LENGTHS)
    options = {"family": "binomial", "seed": 3, "honest": False, "separation": "drop"}
    with pytest.warns(pearl.exceptions.CandidateFailureWarning):
        lazy = pearl.fit(FORMULA, ddf, blocks=blocks, cv=4, **options)
    with pytest.warns(pearl.exceptions.CandidateFailureWarning):
        memory = pearl.fit(FORMULA, data, cv=hash_folds(np.arange(N), 4, 3), **options)
    _close(lazy.weights, memory.weights)
    dropped = ["a", "a+b", "a+c", "a+b+c"]
    assert sorted(memory.weights.index[memory.failed]) == sorted(dropped)
    pd.testing.assert_frame_equal(lazy.failures, memory.failures)
    # A dropped candidate's coefficients asked for: its all-rows refit's separation joins
    # each ledger then, once (a second request reads the stored refit).
    asked = {}
    for name, res in (("dask", lazy), ("memory", memory)):
        for _ in range(2):
            with pytest.warns(pearl.exceptions.CandidateFailureWarning, match="weight 0"):
                asked[name] = res.candidate_params("a+b")
    pd.testing.assert_frame_equal(lazy.failures, memory.failures)
    # separated classes have no finite estimate: on dask, where the passes keep none, NaN
    # (it was zeros, which read as an estimate); in memory the stopped iterate, as statsmodels
    assert asked["dask"].isna().all() and asked["memory"].notna().all()
    refits = memory.failures[memory.failures["stage"] == "refit"]
    assert list(zip(refits["candidate"], refits["kind"])) == [("a+b", "separation")]


def test_a_frame_built_with_from_delayed_gives_the_same_results():
    """dd.from_delayed frames lost their partitions when dask fused the array graphs built on
    them ("Missing dependency ('fromdelayed-...')"); every value is computed here."""
    from dask import delayed

    data = _problem("gaussian")
    frame = pd.DataFrame({"y": data["y"], "x": data["x"]})
    starts = np.concatenate([[0], np.cumsum(LENGTHS)]).astype(int)
    ddf = dd.from_delayed([delayed(frame.iloc[s:e].copy()) for s, e in zip(starts, starts[1:])],
                          meta=frame.iloc[:0], verify_meta=False)
    _, blocks = _partitioned(data, LENGTHS)
    res = pearl.fit(FORMULA, ddf, blocks=blocks, cv=4, seed=3, honest=3)
    reference = pearl.fit(FORMULA, data, cv=hash_folds(np.arange(N), 4, 3), seed=3, honest=3)
    np.testing.assert_array_equal(res.folds.compute(), reference.folds)
    _close(res.cv_predictions.compute(), reference.cv_predictions)
    _close(res.resid.compute(), reference.resid)
    _close(res.baselines[["cv_risk", "se"]], reference.baselines[["cv_risk", "se"]])
    _close(res.honest[["risk", "se"]], reference.honest[["risk", "se"]])
    assert "Strategies" in res.summary().as_text()


def test_every_candidate_failing_raises_the_same_error_with_the_ledger():
    """Blocks wider than the training rows: no candidate can be fitted on either backend, and
    both raise the stages' error with the same message and failure ledger."""
    rng = np.random.default_rng(5)
    lengths = (5, 0, 9)
    n = sum(lengths)
    data = {"y": rng.normal(size=n), "x": rng.normal(size=n),
            "a": rng.normal(size=(n, 20)), "b": rng.normal(size=(n, 20)),
            "c": rng.normal(size=(n, 20))}
    ddf, blocks = _partitioned(data, lengths)
    errors = []
    with pytest.warns(pearl.exceptions.CandidateFailureWarning):  # the in-memory fit's
        for frame, extra in ((ddf, {"blocks": blocks}), (data, {})):
            cv = 4 if extra else hash_folds(np.arange(n), 4, 3)
            with pytest.raises(pearl.exceptions.AllCandidatesFailedError) as caught:
                pearl.fit(FORMULA, frame, cv=cv, seed=3, honest=False, **extra)
            errors.append(caught.value)
    assert str(errors[0]) == str(errors[1])
    assert "candidates failed in cross-validation (first:" in str(errors[0])
    pd.testing.assert_frame_equal(errors[0].failures, errors[1].failures)


@pytest.mark.parametrize("family, amount, target", [
    ("gaussian", 0.3, "candidates"),
    ("gaussian", "cv", "single-block"),
    ("binomial", "size", "candidates"),
    ("binomial", "cv", "candidates"),
    ("multinomial", "cv", "single-block"),
])
def test_shrunk_weights_agree_in_the_fit_the_re_solves_and_the_honest_risks(family, amount,
                                                                               target):
    """weight_shrinkage on dask data: the same amount (given, size rule, or chosen by
    cross-validation over the fold complements), weights, objective, KKT gap and ledger
    row as in memory; the honest re-runs, the fold-complement re-solves and reweight()
    shrink alike."""
    data, on_dask, in_memory = _both(family, weight_shrinkage=amount, shrinkage_target=target)
    _close(on_dask.weights, in_memory.weights)
    assert on_dask.weight_objective == pytest.approx(in_memory.weight_objective, rel=1e-8)
    # The gap of shrunk weights is the shrinkage's and agrees; the solver's own part is only
    # certified below tol (1 + |f|) (default tol 1e-10) on either path, each stopping at its
    # own point (the dask solve starts from a sequence of quadratic models).
    certified = 1e-10 * (1 + abs(in_memory.weight_objective))
    assert on_dask.kkt_gap == pytest.approx(in_memory.kkt_gap, rel=1e-6, abs=certified)
    notes = [f[f["kind"] == "shrinkage"].reset_index(drop=True)
             for f in (on_dask.failures, in_memory.failures)]
    pd.testing.assert_frame_equal(*notes)
    assert len(notes[0]) == 1
    numbers = ["risk", "se", "ratio", "ratio_se"]
    _close(on_dask.honest[numbers], in_memory.honest[numbers])
    pd.testing.assert_frame_equal(on_dask.weight_stability, in_memory.weight_stability,
                                  rtol=0, atol=1e-8)
    again = on_dask.reweight(in_memory.loss)
    _close(again.weights, in_memory.weights)
    pd.testing.assert_frame_equal(again.failures, on_dask.failures)


@settings(max_examples=3, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(min_value=0, max_value=N), min_size=1, max_size=4),
       chunk_rows=st.integers(min_value=5, max_value=N),
       family=st.sampled_from(["gaussian", "binomial", "poisson"]))
def test_dask_equals_memory_at_the_same_fold_labels_for_any_partitions_and_chunks(
        cuts, chunk_rows, family):
    """Any partitioning of the dask rows and any in-memory row-chunk size: the same weights,
    CV risks, baselines and coefficients to 1e-8 (the two backends add their sums in other
    orders; the fits stop at 1e-20 relative decrements)."""
    import pearlstats.backends.chunks as chunks

    bounds = sorted({int(c) for c in cuts} | {0, N})
    lengths = tuple(int(e - s) for s, e in zip(bounds[:-1], bounds[1:]))
    data = _problem(family, seed=2)
    ddf, blocks = _partitioned(data, lengths)
    on_dask = pearl.fit(FORMULA, ddf, blocks=blocks, family=family, cv=4, seed=5, honest=False)
    saved = chunks.CHUNK_ROWS
    chunks.CHUNK_ROWS = chunk_rows
    try:
        in_memory = pearl.fit(FORMULA, data, family=family, cv=hash_folds(np.arange(N), 4, 5),
                              seed=5, honest=False)
        _close(on_dask.weights, in_memory.weights)
        _close(on_dask.cv_risk, in_memory.cv_risk)
        _close(on_dask.baselines[["cv_risk", "se"]], in_memory.baselines[["cv_risk", "se"]])
        _close(on_dask.params, in_memory.params)
        _close(on_dask.bse, in_memory.bse)
    finally:
        chunks.CHUNK_ROWS = saved


def test_poisson_counts_without_an_mle_in_a_fold_are_caught_on_both_backends():
    """Two positive counts in 200 rows: on the dask fit's folds a candidate has no Poisson
    MLE in a fold (its means go to 0 below a hyperplane). Both backends flag it, take the
    ladder's ridge and give the same out-of-fold means (the dask passes solve the same
    penalised problems: to the Newton tolerance, 1e-8 on means below 1). The dask fit kept
    means of 1e63 there."""
    import warnings

    rng = np.random.default_rng(2)
    n = 200
    a, b = rng.normal(size=(n, 2)), rng.normal(size=(n, 2))
    y = np.zeros(n)
    y[[3, 50]] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on_dask = pearl.fit("y ~ block(a) + block(b)",
                            {"y": da.from_array(y, chunks=50), "a": da.from_array(a, (50, 2)),
                             "b": da.from_array(b, (50, 2))},
                            family="poisson", seed=0, honest=False)
        in_memory = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": a, "b": b},
                              family="poisson", seed=0, honest=False,
                              cv=np.asarray(on_dask.folds))
    flagged = dict(in_memory.stages.family.candidate_ridges)

    def ladder(res):
        rows = res.failures.query("kind == 'separation' and not excluded")
        return dict(zip(rows.candidate, rows.action))

    assert flagged and set(ladder(in_memory)) == set(flagged)
    assert ladder(on_dask) == ladder(in_memory)  # "refitted with ridge=..." alike
    np.testing.assert_allclose(np.asarray(on_dask.cv_predictions, dtype=float),
                               np.asarray(in_memory.cv_predictions, dtype=float), atol=1e-8)
