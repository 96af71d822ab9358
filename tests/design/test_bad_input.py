"""Every kind of bad input gets a pearlstats exception whose message names the culprit.

One table row per kind: the call, the exact exception class, and a regular
expression the message must match (it names the block, column, rows, class or
option value that is wrong). Then the inputs that still end in a foreign
exception through a path the validation did not reach, and ``missing="drop"``, the
one explicit way of not raising on missing values, compared with a fit on
rows removed by hand.
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import statsmodels.api as sm

import pearlstats as pearl

N = 40


@dataclass(frozen=True)
class Inputs:
    """Clean rows and blocks; each case perturbs one thing."""

    frame: pd.DataFrame
    a: np.ndarray
    b: np.ndarray

    @property
    def blocks(self) -> dict:
        return {"a": self.a, "b": self.b}

    def with_column(self, **columns) -> pd.DataFrame:
        return self.frame.assign(**columns)


def _inputs() -> Inputs:
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=(N, 2)), rng.normal(size=(N, 3))
    frame = pd.DataFrame({
        "y": a[:, 0] - b[:, 1] + rng.normal(scale=0.5, size=N),
        "x": rng.normal(size=N),
        "g": np.array(list("uvw"))[np.arange(N) % 3],
    })
    return Inputs(frame, a, b)


DATA = _inputs()


def _fit(formula="y ~ x + block(a) + block(b)", data=None, *, blocks=None, seed=0, **options):
    data = DATA.frame if data is None else data
    return pearl.fit(
        formula, data, blocks=DATA.blocks if blocks is None else blocks, seed=seed, **options
    )


def _with_rows(values: np.ndarray, rows, value) -> np.ndarray:
    out = np.array(values, dtype=float)
    out[rows] = value
    return out


def _separated() -> dict:
    """A block whose first column splits the two classes perfectly."""
    x = np.linspace(-1, 1, N)
    return {"y": (x > 0).astype(int), "s": np.column_stack([x, np.cos(7 * x)])}


@functools.cache
def _fitted():
    """One fit for the predict cases, made on first use (not at collection)."""
    return pearl.fit("y ~ C(g) + x + block(a) + block(b)", DATA.frame, blocks=DATA.blocks, seed=0)


NEW = DATA.frame.iloc[:5].reset_index(drop=True)
NEW_BLOCKS = {"a": DATA.a[:5], "b": DATA.b[:5]}


@dataclass(frozen=True)
class Case:
    """One kind of bad input: the exception class, a regex its message matches, and the call."""

    kind: str
    error: type
    pattern: str
    call: Callable[[], object]


CASES = [
    # ---- formula ------------------------------------------------------------------------------
    Case(
        "blocks= keyed by integers (difflib's bare TypeError)",
        pearl.BlockError,
        r"blocks= keys must be the formula's block names \(strings\), got \[0, 1\]",
        lambda: _fit("y ~ block('0') + block('1')", blocks={0: DATA.a, 1: DATA.b}),
    ),
    Case(
        "a variable named Intercept beside the intercept (patsy's bare ValueError)",
        pearl.FormulaError,
        r"uses a variable named 'Intercept'.*rename the variable",
        lambda: _fit("y ~ Intercept + block(a)", data=DATA.with_column(Intercept=DATA.frame.x)),
    ),
    Case(
        "pd.NA in an object column of numbers (pandas' bare TypeError in patsy)",
        pearl.MissingValueError,
        r"covariate 'x' has missing or infinite values at row 5",
        lambda: _fit("y ~ x + block(a)",
                     data=DATA.with_column(x=DATA.frame.x.astype(object).where(
                         np.arange(N) != 5, pd.NA))),
    ),
    Case(
        "unknown block name",
        pearl.BlockError,
        r"block 'bb' in the formula is not among the blocks given .*Did you mean 'b'\?",
        lambda: _fit("y ~ block(a) + block(bb)"),
    ),
    Case(
        "no block term",
        pearl.FormulaError,
        r"'y ~ x' has no block\(name\) term",
        lambda: _fit("y ~ x"),
    ),
    Case(
        "same block twice in the formula",
        pearl.FormulaError,
        r"block\(a\) appears twice",
        lambda: _fit("y ~ block(a) + block('a')"),
    ),
    Case(
        "block inside an interaction",
        pearl.FormulaError,
        r"term 'block\(a\):x'.*must stand alone",
        lambda: _fit("y ~ block(a):x"),
    ),
    Case(
        "formula that does not parse",
        pearl.FormulaError,
        r"cannot parse formula 'y ~ block\(a\) \+'",
        lambda: _fit("y ~ block(a) +"),
    ),
    Case(
        "formula not a string",
        pearl.FormulaError,
        r"formula must be a string.*got NoneType",
        lambda: pearl.fit(None, DATA.frame, blocks=DATA.blocks),
    ),
    Case(
        "block() naming a 1-D data column",
        pearl.BlockError,
        r"block\(x\) names a 1-D column of the data",
        lambda: _fit("y ~ block(x)"),
    ),
    Case(
        "block name containing '+'",
        pearl.FormulaError,
        r"block\('a\+b'\).*must not contain '\+'",
        lambda: _fit("y ~ block('a+b')", blocks={"a+b": DATA.a}),
    ),
    # ---- blocks -------------------------------------------------------------------------------
    Case(
        "block row count differs from the data",
        pearl.BlockError,
        r"block 'a' has 30 rows but the data has 40",
        lambda: _fit(blocks={"a": DATA.a[:30], "b": DATA.b}),
    ),
    Case(
        "NaN in a block",
        pearl.MissingValueError,
        r"block 'a' has NaN or infinite values at rows 3, 17;.*missing='drop'",
        lambda: _fit(blocks={"a": _with_rows(DATA.a, [3, 17], np.nan), "b": DATA.b}),
    ),
    Case(
        "inf in a block",
        pearl.MissingValueError,
        r"block 'b' has NaN or infinite values at row 5;",
        lambda: _fit(blocks={"a": DATA.a, "b": _with_rows(DATA.b, 5, -np.inf)}),
    ),
    Case(
        "3-D block",
        pearl.BlockError,
        r"block 'b' has 3 dimensions \(shape \(40, 3, 1\)\)",
        lambda: _fit(blocks={"a": DATA.a, "b": DATA.b.reshape(N, 3, 1)}),
    ),
    Case(
        "block without columns",
        pearl.BlockError,
        r"block 'a' has no columns",
        lambda: _fit(blocks={"a": np.empty((N, 0)), "b": DATA.b}),
    ),
    Case(
        "constant block",
        pearl.BlockError,
        r"block 'b' is constant in every column",
        lambda: _fit(blocks={"a": DATA.a, "b": np.full((N, 3), 2.5)}),
    ),
    Case(
        "block identical to another",
        pearl.BlockError,
        r"block 'b' is identical to block 'a'",
        lambda: _fit(blocks={"a": DATA.a, "b": DATA.a.copy()}),
    ),
    Case(
        "block given both in data and in blocks=",
        pearl.BlockError,
        r"block\(s\) \['a'\] are given both in data and in blocks=",
        lambda: _fit(data={**DATA.frame.to_dict("list"), "a": DATA.a}),
    ),
    Case(
        "non-numeric block",
        pearl.BlockError,
        r"block 'a' must be numeric, got dtype <U",
        lambda: _fit(blocks={"a": DATA.a.astype(str), "b": DATA.b}),
    ),
    Case(
        "block DataFrame with a text column",
        pearl.BlockError,
        r"block 'a' has non-numeric columns \['q'\]",
        lambda: _fit(blocks={"a": pd.DataFrame({"p": DATA.a[:, 0], "q": ["t"] * N}), "b": DATA.b}),
    ),
    Case(
        "ragged block",
        pearl.BlockError,
        r"block 'a' cannot be read as a 2-D array",
        lambda: _fit(blocks={"a": [[1.0, 2.0], [3.0]] * (N // 2), "b": DATA.b}),
    ),
    Case(
        "block values whose squares overflow",
        pearl.BlockError,
        r"block 'b' has values too large for float64 .*column\(s\) \[0, 1, 2\]",
        lambda: _fit(blocks={"a": DATA.a, "b": DATA.b * 1e160}),
    ),
    Case(
        "blocks= not a mapping",
        pearl.BlockError,
        r"blocks must be a dict .*got list",
        lambda: _fit(blocks=[DATA.a, DATA.b]),
    ),
    # ---- data, response and covariates --------------------------------------------------------
    Case(
        "data not a table",
        pearl.DataError,
        r"data must be a pandas DataFrame .*got list",
        lambda: _fit(data=[1.0, 2.0]),
    ),
    Case(
        "data columns of different lengths",
        pearl.DataError,
        r"different lengths: \{'y': 40, 'x': 2\}",
        lambda: _fit(data={"y": DATA.frame["y"], "x": [1.0, 2.0]}),
    ),
    Case(
        "data with two columns of one name",
        pearl.DataError,
        r"more than one column named \['x'\]",
        lambda: _fit(data=pd.concat([DATA.frame, DATA.frame[["x"]]], axis=1)),
    ),
    Case(
        "no rows left",
        pearl.DataError,
        r"no rows to fit .*missing='drop' removed every row",
        lambda: _fit("y ~ block(a)", data=DATA.with_column(y=np.nan), missing="drop"),
    ),
    Case(
        "response missing from the data",
        pearl.DataError,
        r"response 'z' is not a column of the data",
        lambda: _fit("z ~ block(a)"),
    ),
    Case(
        "NaN in the response",
        pearl.MissingValueError,
        r"response 'y' has missing or infinite values at rows 2, 7;.*missing='drop'",
        lambda: _fit(data=DATA.with_column(y=_with_rows(DATA.frame["y"], [2, 7], np.nan))),
    ),
    Case(
        "inf in the response",
        pearl.MissingValueError,
        r"response 'y' has missing or infinite values at row 0;",
        lambda: _fit(data=DATA.with_column(y=_with_rows(DATA.frame["y"], 0, np.inf))),
    ),
    Case(
        "NaN in a covariate",
        pearl.MissingValueError,
        r"covariate 'x' has missing or infinite values at row 4;.*missing='drop'",
        lambda: _fit(data=DATA.with_column(x=_with_rows(DATA.frame["x"], 4, np.nan))),
    ),
    Case(
        "inf in a covariate",
        pearl.MissingValueError,
        r"covariate 'x' has missing or infinite values at rows 1, 9;",
        lambda: _fit(data=DATA.with_column(x=_with_rows(DATA.frame["x"], [1, 9], np.inf))),
    ),
    Case(
        "None in a categorical covariate",
        pearl.MissingValueError,
        r"covariate 'g' has missing or infinite values at row 0;",
        lambda: _fit(
            "y ~ C(g) + block(a)", data=DATA.with_column(g=[None] + list(DATA.frame["g"][1:]))
        ),
    ),
    Case(
        "response values whose squares overflow",
        pearl.ResponseError,
        r"response 'y' has values too large for float64",
        lambda: _fit(data=DATA.with_column(y=DATA.frame["y"] * 1e160)),
    ),
    Case(
        "non-numeric response for gaussian",
        pearl.ResponseError,
        r"gaussian family needs a numeric response.*'u'.*family='binomial'",
        lambda: _fit("g ~ block(a)"),
    ),
    Case(
        "class labels of mixed types",
        pearl.ResponseError,
        r"response 'c' mixes values of types \['int', 'str'\]",
        lambda: _fit(
            "c ~ block(a)", data=DATA.with_column(c=[1, "b"] * (N // 2)), family="multinomial"
        ),
    ),
    Case(
        "binomial response with 3 values",
        pearl.ResponseError,
        r"binomial family needs .*exactly 2 distinct values, got 3: \['u', 'v', 'w'\]",
        lambda: _fit("g ~ block(a)", family="binomial"),
    ),
    Case(
        "binomial response with 1 value",
        pearl.ResponseError,
        r"exactly 2 distinct values, got 1: \['yes'\]",
        lambda: _fit("c ~ block(a)", data=DATA.with_column(c="yes"), family="binomial"),
    ),
    Case(
        "multinomial class present once",
        pearl.ResponseError,
        r"class\(es\) \['r'\] occur in only one row",
        lambda: _fit(
            "c ~ block(a)",
            data=DATA.with_column(c=np.repeat(["p", "q", "r"], [20, 19, 1])),
            family="multinomial",
        ),
    ),
    Case(
        "multinomial class absent from a fold's training rows",
        pearl.FoldError,
        r"training rows for fold 0 contain no row of class\(es\) \['r'\]",
        lambda: _fit(
            "c ~ block(a)",
            data=DATA.with_column(c=np.repeat(["p", "q", "r"], [19, 19, 2])),
            family="multinomial",
            cv=np.repeat([1, 0], [38, 2]),
        ),
    ),
    Case(
        "poisson response with negative counts",
        pearl.ResponseError,
        r"non-negative counts; the response is negative at row 0$",
        lambda: _fit(data=DATA.with_column(y=np.r_[-1.0, np.ones(N - 1)]), family="poisson"),
    ),
    Case(
        # no maximum-likelihood estimate: the intercept was -46 without a word
        "poisson response of zeros only",
        pearl.ResponseError,
        r"at least one positive count; the response is 0 in all 40 rows",
        lambda: _fit(data=DATA.with_column(y=np.zeros(N)), family="poisson"),
    ),
    # ---- cross-validation ---------------------------------------------------------------------
    Case(
        "cv larger than n", pearl.FoldError, r"cv=41 folds but only 40 rows", lambda: _fit(cv=N + 1)
    ),
    Case(
        "cv smaller than 2",
        pearl.FoldError,
        r"cv=1: cross-validation needs at least 2 folds",
        lambda: _fit(cv=1),
    ),
    Case("cv a float", pearl.FoldError, r"cv=2.5 is not understood", lambda: _fit(cv=2.5)),
    Case(
        "cv an unknown string",
        pearl.FoldError,
        r"cv='kfold' names no column of the data",
        lambda: _fit(cv="kfold"),
    ),
    Case(
        "fold labels of the wrong length",
        pearl.FoldError,
        r"cv has 39 fold labels .*one label per row \(40\)",
        lambda: _fit(cv=np.arange(N - 1) % 3),
    ),
    Case(
        "fold labels with one value",
        pearl.FoldError,
        r"single value 0\.0",
        lambda: _fit(cv=np.zeros(N)),
    ),
    Case(
        "fold labels with a missing value",
        pearl.FoldError,
        r"fold labels are missing at row 0",
        lambda: _fit(cv=np.array([None] + ["p", "q"] * 19 + ["p"], dtype=object)),
    ),
    Case(
        "fold labels of mixed types",
        pearl.FoldError,
        r"fold labels mix types \['int', 'str'\]",
        lambda: _fit(cv=np.array([1] + ["p", "q"] * 19 + ["p"], dtype=object)),
    ),
    Case(
        "fold labels with NaN",
        pearl.FoldError,
        r"fold labels contain NaN",
        lambda: _fit(cv=np.r_[np.nan, np.arange(N - 1) % 3]),
    ),
    Case(
        "p_j >= training rows for the only candidate",
        pearl.AllCandidatesFailedError,
        r"all 1 candidates failed .*36 parameters but only 32 training rows",
        lambda: _fit("y ~ block(w)", blocks={"w": np.random.default_rng(1).normal(size=(N, 35))}),
    ),
    Case(
        "perfect separation in every candidate",
        pearl.AllCandidatesFailedError,
        r"all 1 candidates failed .*separated.*ridge > 0",
        lambda: pearl.fit(
            "y ~ block(s)", _separated(), family="binomial", seed=0, separation="drop"
        ),
    ),
    # ---- options ------------------------------------------------------------------------------
    Case(
        "unknown family",
        pearl.OptionError,
        r"unknown family='gamma'; use one of",
        lambda: _fit(family="gamma"),
    ),
    Case(
        "unknown loss", pearl.OptionError, r"unknown loss='l3'.*'squared'", lambda: _fit(loss="l3")
    ),
    Case(
        "loss of another family",
        pearl.OptionError,
        r"loss='hinge' does not apply to family 'gaussian'",
        lambda: _fit(loss="hinge"),
    ),
    Case(
        "unknown missing= option",
        pearl.OptionError,
        r"missing='ignore'; use 'raise'",
        lambda: _fit(missing="ignore"),
    ),
    Case(
        "negative ridge",
        pearl.OptionError,
        r"ridge=-1\.0; use a non-negative number",
        lambda: _fit(ridge=-1.0),
    ),
    Case(
        "seed not an int",
        pearl.OptionError,
        r"seed='x'; use an int in \[0, 2\*\*63\)",
        lambda: _fit(seed="x"),
    ),
    Case(
        "negative seed",
        pearl.OptionError,
        r"seed=-3; use an int in \[0, 2\*\*63\)",
        lambda: _fit(seed=-3),
    ),
    Case(
        "a seed of 2**63 (a non-negative int, beyond numpy's range)",
        pearl.OptionError,
        r"seed=9223372036854775808; use an int in \[0, 2\*\*63\)",
        lambda: _fit(seed=2**63),
    ),
    # ---- candidates ---------------------------------------------------------------------------
    Case(
        "unknown candidate spec",
        pearl.CandidateError,
        r"unknown candidates='every'",
        lambda: _fit(candidates="every"),
    ),
    Case(
        "candidate spec of the wrong type",
        pearl.CandidateError,
        r"candidates must be one of .* got 3",
        lambda: _fit(candidates=3),
    ),
    Case(
        "candidate that is not a set of names",
        pearl.CandidateError,
        r"candidate 1 is not a set of block names",
        lambda: _fit(candidates=[("a",), 1]),
    ),
    Case(
        "candidate naming a missing block",
        pearl.CandidateError,
        r"candidate \('a', 'c'\) names block\(s\) \['c'\] that are not in the formula",
        lambda: _fit(candidates=[("a",), ("a", "c")]),
    ),
    Case(
        "candidate listed twice",
        pearl.CandidateError,
        r"candidate 'a\+b' is listed twice",
        lambda: _fit(candidates=["a+b", ("b", "a")]),
    ),
    Case(
        "empty candidate",
        pearl.CandidateError,
        r"explicit candidate is empty",
        lambda: _fit(candidates=[()]),
    ),
    Case(
        "more candidates than max_candidates",
        pearl.CandidateError,
        r"candidates='all' with 2 blocks gives 3 candidates, more than max_candidates=2",
        lambda: _fit(max_candidates=2),
    ),
    Case(
        "single candidates more than max_candidates",
        pearl.CandidateError,
        r"candidates='single' with 2 blocks gives 2 candidates, more than max_candidates=1",
        lambda: _fit(candidates="single", max_candidates=1),
    ),
    Case(
        "max_candidates not a positive int",
        pearl.OptionError,
        r"max_candidates='many'; use a positive int",
        lambda: _fit(max_candidates="many"),
    ),
    # ---- new data for predict -----------------------------------------------------------------
    Case(
        "predict: new data missing a block",
        pearl.BlockError,
        r"block 'b' in the formula is not among the blocks given \(available: \['a'\]\)",
        lambda: _fitted().predict(NEW, blocks={"a": NEW_BLOCKS["a"]}),
    ),
    Case(
        "predict: different block width",
        pearl.BlockError,
        r"block 'b' has 2 columns in the new rows but 3 at fit time",
        lambda: _fitted().predict(NEW, blocks={**NEW_BLOCKS, "b": NEW_BLOCKS["b"][:, :2]}),
    ),
    Case(
        "predict: unseen category level",
        pearl.DataError,
        r"covariate term 'C\(g\)'.*'z'",
        lambda: _fitted().predict(NEW.assign(g="z"), blocks=NEW_BLOCKS),
    ),
    Case(
        "predict: new data missing a covariate",
        pearl.DataError,
        r"new rows lack the column\(s\) \['x'\]",
        lambda: _fitted().predict(NEW.drop(columns="x"), blocks=NEW_BLOCKS),
    ),
    Case(
        "predict: block row count differs",
        pearl.BlockError,
        r"block 'a' has 4 rows but the data has 5",
        lambda: _fitted().predict(NEW, blocks={**NEW_BLOCKS, "a": DATA.a[:4]}),
    ),
    Case(
        "predict: NaN in a block",
        pearl.MissingValueError,
        r"block 'a' has NaN or infinite values at row 2",
        lambda: _fitted().predict(
            NEW, blocks={**NEW_BLOCKS, "a": _with_rows(NEW_BLOCKS["a"], 2, np.nan)}
        ),
    ),
    Case(
        "predict: NaN in a covariate",
        pearl.MissingValueError,
        r"covariate 'x' has missing or infinite values at row 3",
        lambda: _fitted().predict(NEW.assign(x=_with_rows(NEW["x"], 3, np.nan)), blocks=NEW_BLOCKS),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.kind for case in CASES])
def test_bad_input_raises_the_pearl_exception_naming_the_culprit(case: Case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pearl.CandidateFailureWarning)
        with pytest.raises(case.error) as info:
            case.call()
    assert type(info.value) is case.error, f"{type(info.value).__name__}: {info.value}"
    assert isinstance(info.value, pearl.PearlError)
    message = str(info.value)
    assert re.search(case.pattern, message), f"message {message!r} does not match {case.pattern!r}"


def test_the_table_covers_at_least_thirty_kinds_each_once():
    kinds = [case.kind for case in CASES]
    assert len(kinds) == len(set(kinds)) >= 30



@pytest.mark.parametrize("n_jobs", ["two", 0])
def test_invalid_n_jobs_is_an_option_error(n_jobs):
    with pytest.raises(pearl.OptionError, match=rf"n_jobs={n_jobs!r}"):
        _fit(n_jobs=n_jobs)



def test_invalid_eval_env_is_an_option_error():
    with pytest.raises(pearl.OptionError, match=r"eval_env='here'"):
        _fit(eval_env="here")
    # deeper than the stack: a bare "ValueError: call-stack is not that deep!" from patsy
    with pytest.raises(pearl.OptionError, match=r"eval_env=10000 looks further up than the call"):
        _fit(eval_env=10_000)


@pytest.mark.parametrize(
    "block, pattern",
    [(DATA.a[:30], r"block 'a' has 30 rows but the data has 40"),
     ([[1.0, 2.0], [3.0]] * (N // 2), r"block 'a' cannot be read as a 2-D array")],
    ids=["wrong row count", "ragged"],
)
def test_missing_drop_reports_bad_blocks_like_missing_raise(block, pattern):
    with pytest.raises(pearl.BlockError, match=pattern):
        _fit("y ~ block(a)", blocks={"a": block}, missing="drop")


def test_missing_drop_accepts_a_sparse_block():
    y = _with_rows(DATA.frame["y"], 4, np.nan)
    frame = DATA.with_column(y=y)
    sparse = _fit("y ~ block(a)", data=frame, blocks={"a": sp.csr_matrix(DATA.a)}, missing="drop")
    dense = _fit("y ~ block(a)", data=frame, blocks={"a": DATA.a}, missing="drop")
    np.testing.assert_array_equal(sparse.dropped_rows, [4])
    np.testing.assert_allclose(sparse.weights, dense.weights, atol=1e-12)


def test_missing_drop_removes_exactly_the_reported_rows_and_records_them():
    y = _with_rows(DATA.frame["y"], [2, 7], np.nan)
    a = _with_rows(DATA.a, 11, np.inf)
    frame = DATA.with_column(y=y)
    with pytest.raises(pearl.MissingValueError, match=r"block 'a' .* row 11"):
        pearl.fit("y ~ x + block(a) + block(b)", frame, blocks={"a": a, "b": DATA.b}, seed=3)
    dropped = pearl.fit("y ~ x + block(a) + block(b)", frame, blocks={"a": a, "b": DATA.b}, seed=3,
                        missing="drop")
    np.testing.assert_array_equal(dropped.dropped_rows, [2, 7, 11])
    assert dropped.nobs == N - 3
    keep = np.setdiff1d(np.arange(N), [2, 7, 11])
    blocks = {"a": a[keep], "b": DATA.b[keep]}
    by_hand = pearl.fit("y ~ x + block(a) + block(b)", frame.iloc[keep], blocks=blocks, seed=3)
    np.testing.assert_array_equal(dropped.folds, by_hand.folds)
    np.testing.assert_allclose(dropped.weights, by_hand.weights, rtol=0, atol=1e-12)
    assert len(by_hand.dropped_rows) == 0


def test_missing_drop_with_blocks_inside_dict_data():
    data = {
        "y": _with_rows(DATA.frame["y"], 0, np.nan),
        "a": _with_rows(DATA.a, 5, np.nan),
        "b": DATA.b,
    }
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=0, missing="drop")
    np.testing.assert_array_equal(res.dropped_rows, [0, 5])
    assert res.nobs == N - 2 and np.isfinite(res.weights).all()


@pytest.mark.parametrize("dtype", ["Float64", "Int64"])
def test_a_nullable_covariate_with_pd_na_is_reported_or_dropped(dtype):
    # patsy's np.isnan raised a bare "TypeError: boolean value of NA is ambiguous" in both modes.
    x = np.round(DATA.frame["x"].to_numpy() * 10)
    with_na = pd.array(np.where(np.arange(N) == 4, None, x), dtype=dtype)
    frame = DATA.with_column(x=with_na)
    with pytest.raises(pearl.MissingValueError, match=r"covariate 'x' .* at row 4"):
        _fit("y ~ x + block(a)", data=frame, blocks={"a": DATA.a})
    res = _fit("y ~ x + block(a)", data=frame, blocks={"a": DATA.a}, missing="drop")
    np.testing.assert_array_equal(res.dropped_rows, [4])
    keep = np.arange(N) != 4
    direct = sm.OLS(DATA.frame["y"].to_numpy()[keep],
                    sm.add_constant(np.column_stack([x, DATA.a])[keep])).fit()
    np.testing.assert_allclose(res.candidate_params("a"), direct.params, rtol=0, atol=1e-10)
    np.testing.assert_allclose(res.predict(frame.iloc[5:], blocks={"a": DATA.a[5:]}),
                               direct.predict(sm.add_constant(np.column_stack([x, DATA.a]))[5:]),
                               rtol=0, atol=1e-10)


def test_a_nullable_boolean_covariate_with_pd_na_is_dropped_like_a_plain_one():
    positive = DATA.frame["x"].to_numpy() > 0
    frame = DATA.with_column(x=pd.array(np.where(np.arange(N) == 4, None, positive),
                                        dtype="boolean"))
    res = _fit("y ~ x + block(a)", data=frame, blocks={"a": DATA.a}, missing="drop")
    keep = np.arange(N) != 4
    plain = _fit("y ~ x + block(a)", data=DATA.with_column(x=positive)[keep],
                 blocks={"a": DATA.a[keep]})
    np.testing.assert_array_equal(res.dropped_rows, [4])
    np.testing.assert_allclose(res.candidate_params("a"), plain.candidate_params("a"), rtol=0,
                               atol=1e-12)


def test_missing_drop_drops_rows_whose_response_or_covariate_expression_has_no_value():
    # np.log of a column <= 0: no column is missing, so these rows were not dropped and the
    # fit raised anyway, advising missing='drop' (which had been passed).
    y = np.exp(DATA.frame["y"].to_numpy())
    y[[3, 8]] = [-1.0, 0.0]
    x = np.abs(DATA.frame["x"].to_numpy())
    x[[5, 8, 12]] = [0.0, -2.0, np.exp(1.0)]
    frame = DATA.with_column(y=y, x=x)
    res = _fit("np.log(y) ~ np.log(x) + block(a)", data=frame, blocks={"a": DATA.a},
               missing="drop")
    np.testing.assert_array_equal(res.dropped_rows, [3, 5, 8])
    keep = np.setdiff1d(np.arange(N), [3, 5, 8])
    direct = sm.OLS(np.log(y[keep]), sm.add_constant(np.column_stack([np.log(x[keep]),
                                                                      DATA.a[keep]]))).fit()
    np.testing.assert_allclose(res.candidate_params("a"), direct.params, rtol=0, atol=1e-10)


def test_a_nullable_string_covariate_with_pd_na_is_reported_or_dropped():
    # The same bare TypeError from patsy, for C(g) of a pandas "string" column holding pd.NA.
    levels = DATA.frame["g"].to_numpy()
    frame = DATA.with_column(g=pd.array(np.where(np.arange(N) == 4, None, levels),
                                        dtype="string"))
    with pytest.raises(pearl.MissingValueError, match=r"covariate 'g' .* at row 4"):
        _fit("y ~ C(g) + block(a)", data=frame, blocks={"a": DATA.a})
    res = _fit("y ~ C(g) + block(a)", data=frame, blocks={"a": DATA.a}, missing="drop")
    keep = np.arange(N) != 4
    plain = _fit("y ~ C(g) + block(a)", data=DATA.frame[keep], blocks={"a": DATA.a[keep]})
    np.testing.assert_array_equal(res.dropped_rows, [4])
    np.testing.assert_allclose(res.candidate_params("a"), plain.candidate_params("a"), rtol=0,
                               atol=1e-12)


@pytest.mark.parametrize("as_given", [lambda v: v.tolist(), sp.coo_matrix],
                         ids=["nested lists", "coo matrix"])
def test_missing_drop_with_dict_data_holding_lists_or_coo_blocks(as_given):
    # Rows were dropped with value[mask], a bare TypeError for nested lists and coo matrices.
    y = _with_rows(DATA.frame["y"], 3, np.nan)
    res = pearl.fit("y ~ block(a) + block(b)", {"y": y, "a": as_given(DATA.a), "b": DATA.b},
                    seed=0, missing="drop", honest=False)
    keep = np.arange(N) != 3
    by_hand = pearl.fit("y ~ block(a) + block(b)",
                        {"y": y[keep], "a": DATA.a[keep], "b": DATA.b[keep]}, seed=0,
                        honest=False)
    np.testing.assert_array_equal(res.dropped_rows, [3])
    np.testing.assert_allclose(res.cv_predictions, by_hand.cv_predictions, rtol=0, atol=1e-12)


def test_missing_drop_with_representations_and_a_list_block_in_dict_data():
    raw = np.random.default_rng(2).normal(size=(N, 3))
    raw[6, 1] = np.nan
    data = {"y": DATA.frame["y"].to_numpy(), "r0": raw[:, 0], "r1": raw[:, 1],
            "r2": raw[:, 2], "b": DATA.b.tolist()}
    clean = {name: value for name, value in data.items() if name != "b"}
    reps = pearl.Representations({"p": pearl.PCA(n_components=2)},
                                 columns=["r0", "r1", "r2"]).fit(pd.DataFrame(clean).dropna())
    res = pearl.fit("y ~ block(p) + block(b)", data, blocks=reps, seed=0, missing="drop",
                    honest=False)
    np.testing.assert_array_equal(res.dropped_rows, [6])
    keep = np.arange(N) != 6
    by_hand = pearl.fit("y ~ block(p) + block(b)",
                        {name: np.asarray(value)[keep] for name, value in data.items()},
                        blocks=reps, seed=0, honest=False)
    np.testing.assert_allclose(res.cv_predictions, by_hand.cv_predictions, rtol=0, atol=1e-12)


def test_a_masked_block_entry_is_missing_not_its_raw_value():
    # np.asarray kept the masked entry's raw value (1e6 here) and dropped the mask: a fit
    # with missing="drop" dropped nothing and weighed a block with a 1e6 outlier
    masked = np.ma.masked_array(DATA.a.copy(), mask=np.zeros_like(DATA.a, dtype=bool))
    masked[3, 0] = np.ma.masked
    masked.data[3, 0] = 1e6
    with pytest.raises(pearl.MissingValueError, match=r"block 'a'.*row 3"):
        _fit("y ~ block(a) + block(b)", blocks={"a": masked, "b": DATA.b})
    res = _fit("y ~ block(a) + block(b)", blocks={"a": masked, "b": DATA.b}, missing="drop")
    keep = np.arange(N) != 3
    by_hand = _fit("y ~ block(a) + block(b)", data=DATA.frame[keep],
                   blocks={"a": DATA.a[keep], "b": DATA.b[keep]})
    np.testing.assert_array_equal(res.dropped_rows, [3])
    np.testing.assert_allclose(res.candidate_params("a"), by_hand.candidate_params("a"),
                               rtol=0, atol=1e-12)


def test_a_covariate_of_numbers_read_as_strings_is_warned_of_by_name():
    # one "?" makes a CSV column of numbers strings: patsy codes one dummy per value and every
    # candidate failed with a message about parameters, not about the column
    x = DATA.frame["x"].round(3).astype(str).where(np.arange(N) != 5, "?")
    with pytest.warns(pearl.PearlWarning, match=r"covariate 'x' is read as categories .*"
                                                r"pd\.to_numeric"):
        with pytest.raises(pearl.AllCandidatesFailedError):
            _fit("y ~ x + block(a)", data=DATA.with_column(x=x), blocks={"a": DATA.a})
    with warnings.catch_warnings():  # levels on purpose (C()), or few levels: no warning
        warnings.simplefilter("error", pearl.PearlWarning)
        _fit("y ~ C(g) + block(a)", blocks={"a": DATA.a})
        _fit("y ~ x + block(a)", data=DATA.with_column(x=np.sign(DATA.frame.x).astype(str)),
             blocks={"a": DATA.a})


@pytest.mark.parametrize("family", ["multinomial", "binomial"])
def test_a_nullable_integer_response_with_na_keeps_integer_classes(family):
    """An Int64 response with NA dropped gave classes 1.0, 2.0, 3.0 (its rows read as floats
    so that NA could be dropped) where the same response without NA gives 1, 2, 3."""
    rng = np.random.default_rng(5)
    a = rng.normal(size=(N, 2))
    labels = rng.integers(1, 4 if family == "multinomial" else 3, N)
    with_na = pd.array(labels, dtype="Int64")
    with_na[[3, 8]] = pd.NA
    data = {"k": with_na, "a": a}
    res = pearl.fit("k ~ block(a)", data, family=family, seed=0, honest=False, missing="drop")
    keep = np.ones(N, dtype=bool)
    keep[[3, 8]] = False
    plain = pearl.fit("k ~ block(a)", {"k": labels[keep], "a": a[keep]}, family=family, seed=0,
                      honest=False)
    assert list(res.classes) == list(plain.classes)
    assert all(isinstance(c, (int, np.integer)) for c in res.classes)
