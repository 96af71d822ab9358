"""What a fit on dask data refuses says what was wrong and what works instead.

Each refusal is a pearlstats exception whose message names the cause and a remedy; where
part of a feature works on dask data its numbers are those of the in-memory fit at the
same fold labels (the reference).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="dask is not installed")
da = pytest.importorskip("dask.array", reason="dask is not installed")
dd = pytest.importorskip("dask.dataframe", reason="dask.dataframe (pyarrow) is not installed")

import pearlstats as pearl  # noqa: E402
from pearlstats.distributed import hash_folds  # noqa: E402
from pearlstats.exceptions import DataError, InMemoryOnlyError, OptionError  # noqa: E402

pytestmark = pytest.mark.usefixtures("synchronous_dask")

FORMULA = "y ~ x + block(a) + block(b)"
BLOCKS = {"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]}
N = 300
K = 4
SEED = 3
README = Path(__file__).resolve().parents[2] / "README.md"


def _frame(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(N, 6)), columns=["x", "a0", "a1", "a2", "b0", "b1"])
    signal = frame["a0"] - frame["b1"] + 0.3 * frame["x"]
    frame["y"] = np.digitize(signal + rng.logistic(size=N), [-1.0, 0.5])
    return frame


@pytest.fixture(scope="module")
def multinomial_fits():
    with dask.config.set(scheduler="synchronous"):
        frame = _frame()
        on_dask = pearl.fit(FORMULA, dd.from_pandas(frame, npartitions=3), blocks=BLOCKS,
                            family="multinomial", cv=K, seed=SEED, honest=False)
        in_memory = pearl.fit(FORMULA, frame, blocks=BLOCKS, family="multinomial",
                              cv=hash_folds(np.arange(N), K, SEED), seed=SEED, honest=False)
    return on_dask, in_memory


REFUSED = {
    "bse": lambda res: res.bse,
    "conf_int()": lambda res: res.conf_int(),
    "candidate_params()": lambda res: res.candidate_params(),
    "candidate_table": lambda res: res.candidate_table,
    "coef_table(terms='all')": lambda res: res.coef_table(terms="all"),
    "candidates[label]": lambda res: res.candidates["a+b"].params,
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_multinomial_refits_on_dask_are_refused_naming_what_works(multinomial_fits, name):
    on_dask, in_memory = multinomial_fits
    REFUSED[name](in_memory)  # in memory it works
    with pytest.raises(InMemoryOnlyError) as caught:
        REFUSED[name](on_dask)
    said = str(caught.value)
    for words in (name, "'multinomial'", "MNLogit", "params (the averaged coefficients)",
                  "candidate_params(label)", "ddf.sample(frac=0.1).compute()"):
        assert words in said, words


def test_multinomial_params_on_dask_are_the_in_memory_ones(multinomial_fits):
    on_dask, in_memory = multinomial_fits
    # The same rows and folds; the Newton fits stop at 1e-10 relative and the partitions' sums
    # add in another order: 1e-8, as tests/distributed/test_multinomial_dask.py.
    np.testing.assert_allclose(on_dask.params.to_numpy(float),
                               in_memory.params.to_numpy(float), rtol=0, atol=1e-8)
    np.testing.assert_allclose(np.asarray(on_dask.candidate_params("a+b"), dtype=float),
                               np.asarray(in_memory.candidate_params("a+b"), dtype=float),
                               rtol=0, atol=1e-8)


def _dask_section() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Data in dask partitions"):]
    return re.sub(r"\s+", " ", section[:section.index("\n## ", 3)])


def test_readme_says_which_multinomial_results_dask_data_lack():
    section = _dask_section()
    assert "a multinomial fit on dask data has `params` and `candidate_params(label)`" in section
    for name in ("`bse`", "`conf_int()`", "`candidate_table`", "`candidates[label]`"):
        assert name in section.split("a multinomial fit on dask data")[1], name


@pytest.mark.filterwarnings("error:The `numpy.*is not implemented by Dask")  # no compute
@pytest.mark.parametrize("form, shown, remedy", [
    ("series", "cv=<dask Series 'fold'>", "a dask column of fold labels is given by its name: "
                                          "cv='fold'"),
    ("array", "cv=<dask Array>", "given as a column of the data, by its name, e.g. cv='fold'"),
])
def test_dask_fold_labels_given_as_values_are_refused_naming_the_column_form(form, shown,
                                                                              remedy):
    ddf = dd.from_pandas(_frame().assign(fold=np.arange(N) % K), npartitions=3)
    cv = ddf["fold"] if form == "series" else ddf["fold"].to_dask_array()
    with pytest.raises(OptionError) as caught:
        pearl.fit(FORMULA, ddf, blocks=BLOCKS, family="multinomial", cv=cv, seed=SEED,
                  honest=False)
    said = str(caught.value)
    assert shown in said and remedy in said
    assert "in-memory fold labels" not in said and "Scalar" not in said


def test_new_rows_in_memory_with_dask_blocks_are_refused_saying_what_to_pass(
        multinomial_fits):
    on_dask, in_memory = multinomial_fits
    new = _frame(seed=4).iloc[:30]
    arrays = {name: new[columns].to_numpy() for name, columns in BLOCKS.items()}
    lazy = {name: da.from_array(values, chunks=(15, values.shape[1]))
            for name, values in arrays.items()}
    with pytest.raises(DataError) as caught:
        on_dask.predict(new[["x"]], blocks=lazy)
    said = str(caught.value)
    assert "in memory (DataFrame) but their blocks are dask arrays" in said
    assert "dd.from_pandas(frame" in said and "block.compute()" in said
    assert "for the distributed fit" not in said
    # both remedies give the in-memory fit's predictions (the same coefficients: 1e-8, as
    # test_multinomial_params_on_dask_are_the_in_memory_ones)
    expected = in_memory.predict(new[["x"]], blocks=arrays).to_numpy(float)
    as_arrays = on_dask.predict(new[["x"]], blocks=arrays)
    as_dask = on_dask.predict(dd.from_pandas(new[["x"]], npartitions=2), blocks=lazy).compute()
    for got in (as_arrays, as_dask):
        np.testing.assert_allclose(np.asarray(got, dtype=float), expected, rtol=0, atol=1e-8)


def test_more_candidates_than_the_dask_weight_solver_takes_are_refused_with_remedies():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(120, 10)), columns=["y"] + [f"z{i}" for i in range(9)])
    blocks = {f"k{i}": [f"z{i}"] for i in range(9)}  # candidates="all": 2**9 - 1 = 511
    formula = "y ~ " + " + ".join(f"block(k{i})" for i in range(9))
    with pytest.raises(OptionError) as caught:
        pearl.fit(formula, dd.from_pandas(frame, npartitions=2), blocks=blocks, cv=K, seed=SEED,
                  honest=False, progress=False)
    said = str(caught.value)
    for words in ("at most 500 candidates, got 511", "candidates='single' or 'nested'",
                  "explicit list", "fit in memory", "ddf.compute()"):
        assert words in said, words
    assert "at most 500 candidates" in _dask_section()


def test_dask_rows_of_a_class_the_fit_never_saw_are_refused_as_in_memory(multinomial_fits):
    """evaluate() of rows whose response is not a class of the fit: the in-memory message (it
    said "the data changed between passes", which is about the fit's own passes)."""
    on_dask, in_memory = multinomial_fits
    new = _frame(seed=1)
    new["y"] = new["y"].replace({2: 7})
    with pytest.raises(pearl.exceptions.ResponseError, match="were not classes at fit time"):
        in_memory.evaluate(new, blocks=BLOCKS)
    with pytest.raises(pearl.exceptions.ResponseError,
                       match=r"response values \[7\] were not classes at fit time"):
        on_dask.evaluate(dd.from_pandas(new, npartitions=2), blocks=BLOCKS)
