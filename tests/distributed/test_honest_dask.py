"""The honest risks of a fit on dask data, computed on the partitions, against the in-memory
``res.honest`` of the fit with ``cv=`` the same fold labels (the independent computation: the
in-memory nested cross-validation re-runs the procedure on row arrays)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

from patsy import EvalEnvironment  # noqa: E402

import pearlstats as pearl  # noqa: E402
from pearlstats.design.folds import FoldRule  # noqa: E402
from pearlstats.design.formula import parse_formula  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402
from pearlstats.distributed.data import dask_rows, head_design  # noqa: E402
from pearlstats.distributed.fit import fold_spec_for  # noqa: E402
from pearlstats.distributed.honest import honest_partitions, outer_fold_of_folds  # noqa: E402
from pearlstats.exceptions import FoldError, PearlWarning  # noqa: E402
from pearlstats.families import get_family  # noqa: E402
from pearlstats.stages import build_pool  # noqa: E402
from pearlstats.weights.losses import get_loss  # noqa: E402

FORMULA = "y ~ x + block(a) + block(b) + block(c)"
SEED = 3
# Rows kept of the four partitions of 150 rows: unequal sizes, the third empty.
KEPT = (120, 150, 0, 60)


@pytest.fixture(scope="module", autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _problem(family: str, seed: int = 0) -> tuple[dict, np.ndarray]:
    """Rows from six sites with their own effects, and which of them the dask data keeps.

    Sites s0-s4 are spread over the first partitions; s5 is the whole last partition, so the
    procedure re-run without it finds a partition with no row to fit.
    """
    n = 150 * len(KEPT)
    rng = np.random.default_rng(seed)
    codes = np.where(np.arange(n) >= 450, 5, rng.integers(0, 5, size=n))
    site = np.array([f"s{code}" for code in codes], dtype=object)
    blocks = {"a": rng.normal(size=(n, 3)), "b": rng.normal(size=(n, 2)),
              "c": rng.normal(size=(n, 4))}
    x = rng.normal(size=n) + 5.0  # a shifted covariate: the pilot centring must cope
    eta = (0.4 * blocks["a"][:, 0] - 0.4 * blocks["b"][:, 1] + 0.2 * blocks["c"][:, 2]
           + 0.1 * x + rng.normal(scale=0.3, size=6)[codes])
    y = {
        "gaussian": lambda: eta + rng.normal(size=n),
        "binomial": lambda: rng.binomial(1, 1.0 / (1.0 + np.exp(-(eta - eta.mean())))),
        "poisson": lambda: rng.poisson(np.exp(eta - eta.mean())),
    }[family]().astype(float)
    keep = np.concatenate([np.arange(150) < m for m in KEPT])
    rows = dict(y=y, x=x, site=site, **blocks)
    return {k: v[keep] for k, v in rows.items()}, keep


def _dask_fit_inputs(data: dict, keep: np.ndarray, kind: str, formula: str = FORMULA):
    """What pearl.fit computes on dask data before its passes (rows, spec, pool, folds), on a
    filtered dask DataFrame with blocks as dask arrays of the same (unequal, one empty) chunks."""
    n_all = len(keep)
    columns = {k: np.zeros(n_all, dtype=data[k].dtype) for k in ("y", "x", "site")}
    for k in columns:
        columns[k][keep] = data[k]
    frame = dd.from_pandas(pd.DataFrame({**columns, "keep": keep}), npartitions=len(KEPT))
    frame = frame[frame.keep]
    lengths = tuple(frame.map_partitions(len).compute().tolist())
    assert lengths == KEPT
    blocks = {k: da.from_array(data[k], chunks=(lengths, data[k].shape[1])) for k in "abc"}
    parsed = parse_formula(formula)
    rows = dask_rows(frame, blocks, parsed)
    design = head_design(rows, parsed, EvalEnvironment.capture(0))
    pool = build_pool(design, "all", 1000)
    rule = FoldRule("kfold", 5) if kind == "hash" else FoldRule("column", "site")
    fold_spec = fold_spec_for(rule, SEED, frame)
    labels = hash_folds(np.arange(len(data["y"])), 5, SEED) if kind == "hash" else data["site"]
    return rows, design, pool, fold_spec, labels


def _both(data, keep, family, kind, outer, formula=FORMULA, ridge=0.0, separation="ridge"):
    """The dask table (honest_partitions) and the in-memory fit with cv= the same labels."""
    rows, design, pool, fold_spec, labels = _dask_fit_inputs(data, keep, kind, formula)
    family_ = get_family(family).configured(separation=separation)
    table = honest_partitions(rows, design.spec, family_, get_loss(None, family), fold_spec,
                              pool.everything, len(pool.pool), ridge, design.X.mean(axis=0),
                              outer=outer, seed=SEED)
    memory = {k: v for k, v in data.items() if k != "site"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)  # PEARL above MS: not what is tested here
        res = pearl.fit(formula, memory, family=family, cv=labels, seed=SEED, honest=outer,
                        ridge=ridge, separation=separation)
        expected = res.honest
    return table, expected, res


def _check_equal(table, expected, rtol=1e-8):
    assert list(table.index) == list(expected.index)
    assert list(table.columns) == list(expected.columns)
    numbers = ["risk", "se", "ratio", "ratio_se"]
    np.testing.assert_allclose(table[numbers].to_numpy(dtype=float),
                               expected[numbers].to_numpy(dtype=float), rtol=rtol, atol=1e-12)
    assert table["certified"].tolist() == expected["certified"].tolist()
    gaps = table["kkt_gap"].to_numpy()
    np.testing.assert_array_equal(np.isnan(gaps), np.isnan(expected["kkt_gap"].to_numpy()))
    assert gaps[0] <= 1e-10 * (1 + table.loc["PEARL", "risk"])


@pytest.mark.parametrize("outer", [3, 5])
@pytest.mark.parametrize("kind", ["hash", "column"])
@pytest.mark.parametrize("family", ["gaussian", "binomial", "poisson"])
def test_honest_table_equals_the_in_memory_one(family, kind, outer):
    data, keep = _problem(family)
    table, expected, res = _both(data, keep, family, kind, outer)
    _check_equal(table, expected)
    # the in-memory warning's numbers: PEARL's risk minus MS's and its paired SE
    np.testing.assert_allclose(table.attrs["excess_over_ms"],
                               res._last_honest_risk.excess_over("MS"), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("family,ridge", [("gaussian", 0.1), ("poisson", 0.05)])
def test_honest_table_with_a_ridge(family, ridge):
    data, keep = _problem(family, seed=1)
    _check_equal(*_both(data, keep, family, "hash", 3, ridge=ridge)[:2])


@pytest.mark.parametrize("separation", ["ridge", "drop"])
def test_separated_candidates_follow_each_outer_folds_procedure(separation):
    """Block a separates the classes: each outer fold's procedure refits it up the ridge
    ladder (or drops it), and its held-out rows are scored with that fold's choice."""
    data, keep = _problem("binomial", seed=2)
    data["y"] = (data["a"][:, 0] > 0).astype(float)
    table, expected, res = _both(data, keep, "binomial", "hash", 3, formula="y ~ x + block(a) + "
                                 "block(b)", separation=separation)
    _check_equal(table, expected, rtol=1e-7)
    # the re-runs' ledger rows of the inner cross-validation: those of the in-memory re-runs
    def rows(frame):
        frame = frame[(frame["stage"] == "cv") & frame["where"].str.startswith("inside")]
        return sorted((r.candidate, r.kind, r.where, bool(r.excluded)) for r in frame.itertuples())

    found = rows(table.attrs["failures"])
    assert {row[0] for row in found} == {"a", "a+b"}
    assert found == rows(res._last_honest_risk.failures)


def test_outer_folds_deal_the_fits_folds_as_in_memory():
    """A fold column's labels dealt by the in-memory rule: the same outer folds row by row."""
    data, _ = _problem("gaussian")
    res = pearl.fit(FORMULA, {k: v for k, v in data.items() if k != "site"},
                    cv=data["site"], seed=SEED, honest=3)
    levels = np.unique(data["site"])
    dealt = outer_fold_of_folds(("column", "site", levels), 3, SEED, len(data["y"]))
    by_row = dealt[np.searchsorted(levels, data["site"])]
    assert res.honest is not None
    np.testing.assert_array_equal(by_row, res._last_honest_risk.outer_folds)


@pytest.mark.parametrize("outer", [1, 2.5, True, "five"])
def test_outer_folds_that_cannot_be_are_refused_by_name(outer):
    with pytest.raises(FoldError, match=f"honest={outer!r}"):
        outer_fold_of_folds(("hash", 5, 0), outer, 0, 100)


def test_leave_one_fold_out_as_in_memory():
    """``outer="loo"``: each of the fit's folds is an outer fold, as ``res.honest_risk("loo")``
    deals given fold labels in memory."""
    data, keep = _problem("poisson", seed=3)
    rows, design, pool, fold_spec, labels = _dask_fit_inputs(data, keep, "column")
    table = honest_partitions(rows, design.spec, get_family("poisson"), get_loss(None, "poisson"),
                              fold_spec, pool.everything, len(pool.pool), 0.0,
                              design.X.mean(axis=0), outer="loo", seed=SEED)
    memory = {k: v for k, v in data.items() if k != "site"}
    res = pearl.fit(FORMULA, memory, family="poisson", cv=labels, seed=SEED, honest=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PearlWarning)
        expected = res.honest_risk(outer="loo").table
    _check_equal(table, expected)


@pytest.mark.parametrize("K,outer,remedy", [(2, 2, "3 folds or more"), (3, 2, "honest=3")])
def test_outer_training_sets_with_one_fold_are_refused_before_any_pass(K, outer, remedy):
    """In memory the re-run fails on "cv fold labels have a single value"; here the outer
    folds that keep one fold are named with what would do, before the data is read."""
    data, keep = _problem("gaussian")
    rows, design, pool, _, _ = _dask_fit_inputs(data, keep, "hash")
    with pytest.raises(FoldError, match=f"only 1 fold.*{remedy}"):
        honest_partitions(rows, design.spec, get_family("gaussian"), get_loss(None, "gaussian"),
                          ("hash", K, SEED), pool.everything, len(pool.pool), 0.0,
                          design.X.mean(axis=0), outer=outer, seed=SEED)


def test_same_seed_same_table_with_the_outer_folds_run_concurrently():
    """The outer folds' re-runs run from client threads: the table does not depend on their
    order (bit for bit), and another seed deals the folds otherwise."""
    data, keep = _problem("binomial", seed=4)
    rows, design, pool, fold_spec, _ = _dask_fit_inputs(data, keep, "column")

    def table(seed):
        return honest_partitions(rows, design.spec, get_family("binomial"),
                                 get_loss(None, "binomial"), fold_spec, pool.everything,
                                 len(pool.pool), 0.0, design.X.mean(axis=0), outer=3, seed=seed)

    first = table(SEED)
    pd.testing.assert_frame_equal(first, table(SEED), check_exact=True)
    assert not np.allclose(first["risk"], table(SEED + 1)["risk"], rtol=1e-6)
