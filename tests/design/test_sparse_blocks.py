"""Wide sparse blocks through pearlstats.fit: never densified, never a p x p matrix.

A TF-IDF block with more columns than rows stays a CSR matrix: without a ridge its candidates
are recorded as infeasible from their shape, with a ridge they are fitted in the row space;
either way the numbers equal those of the same block given dense (where the dense path can
still run), and nothing densifies the wide block.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from gensim.test.utils import datapath

import pearlstats as pearl
from pearlstats.design.sparse import SPARSE_MIN_COLUMNS
from pearlstats.representations import TfIdf

N, WIDE = 300, 20_000


class _NoDense(sp.csr_matrix):
    """A CSR block that refuses to be densified."""

    def toarray(self, *args, **kwargs):
        raise AssertionError("a wide sparse block was densified")

    todense = toarray


@pytest.fixture
def no_wide_densify(monkeypatch):
    """Densifying a sparse matrix wider than SPARSE_MIN_COLUMNS with more than one row fails the
    test (one row of column statistics, e.g. ``X.max(axis=0)``, is O(p) and allowed)."""
    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        for name in ("toarray", "todense"):
            original = getattr(cls, name)

            def guarded(self, *args, _original=original, **kwargs):
                if self.shape[0] > 1 and self.shape[1] > SPARSE_MIN_COLUMNS:
                    raise AssertionError(f"densified a {self.shape} sparse matrix")
                return _original(self, *args, **kwargs)

            monkeypatch.setattr(cls, name, guarded)


def _wide_rows(seed=0):
    rng = np.random.default_rng(seed)
    words = sp.random(N, WIDE, density=0.005, format="csr", random_state=seed,
                      data_rvs=rng.random)
    small = rng.normal(size=(N, 2))
    eta = small[:, 0] + 3 * np.asarray(words[:, :300].sum(axis=1)).ravel()
    data = pd.DataFrame({"y": eta + rng.normal(size=N), "c": (eta > np.median(eta)) * 1.0})
    data["k"] = np.digitize(eta, np.quantile(eta, [1 / 3, 2 / 3]))  # three classes
    return data, small, words


@pytest.mark.parametrize("family,ridge", [("gaussian", 0.0), ("gaussian", 0.1),
                                          ("binomial", 0.0), ("binomial", 0.1),
                                          ("multinomial", 0.1)])
def test_a_wide_sparse_block_is_never_densified(no_wide_densify, family, ridge):
    data, small, words = _wide_rows()
    response = {"gaussian": "y", "binomial": "c", "multinomial": "k"}[family]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the candidate failure / separation warnings
        res = pearl.fit(f"{response} ~ block(a) + block(w)", data,
                        blocks={"a": small, "w": _NoDense(words)}, family=family,
                        ridge=ridge, separation="drop", seed=0)
    wide = ["w", "a+w"]
    failures = res.failures.set_index("candidate")
    if ridge == 0:
        assert res.failed[wide].all() and not res.failed["a"]
        assert failures.loc[wide, "kind"].eq("infeasible").all()
        assert failures.loc["w", "reason"] == "20001 parameters but only 240 training rows in " \
            "the smallest fold"
    else:
        assert not res.failed.any()
        params = res.candidate_params("a+w")
        assert params.shape[0] == WIDE + 3 and np.isfinite(params.to_numpy()).all()
    predicted = res.predict(data.head(5), blocks={"a": small[:5], "w": words[:5]})
    assert np.isfinite(predicted.to_numpy()).all()
    if family == "multinomial":
        return  # its honest re-runs take the same route as the others', at 10x the time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PEARL vs MS honest-risk advice
        assert np.isfinite(res.honest.select_dtypes("number").to_numpy(dtype=float)).any()


def test_without_a_ridge_the_fit_equals_the_narrow_candidates_alone():
    """The screened candidates change nothing else: weights and predictions equal a fit
    without the wide block's candidates."""
    data, small, words = _wide_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wide = pearl.fit("y ~ block(a) + block(w)", data, blocks={"a": small, "w": words},
                         candidates=[("a",), ("w",), ("a", "w")], seed=3, honest=False)
    alone = pearl.fit("y ~ block(a)", data, blocks={"a": small}, seed=3, honest=False)
    assert wide.weights.to_dict() == {"a": 1.0, "w": 0.0, "a+w": 0.0}
    np.testing.assert_allclose(wide.cv_predictions["a"], alone.cv_predictions["a"], atol=1e-12)
    np.testing.assert_allclose(wide.fittedvalues, alone.fittedvalues, atol=1e-12)


@pytest.fixture(scope="module")
def polarity():
    """gensim's Pang & Lee sentences (latin-1) with a TF-IDF block wider than the rows."""
    lines = open(datapath("pang_lee_polarity.cor"), encoding="latin-1").read().splitlines()
    rng = np.random.default_rng(1)
    positive = np.array([line.startswith("__label__pos") for line in lines], dtype=float)
    text = [line.split(" ", 1)[1] for line in lines]
    x = rng.normal(size=len(lines))
    frame = pd.DataFrame({"x": x, "y": x + positive + rng.normal(size=len(lines)),
                          "c": positive})
    words = TfIdf().fit(text).transform(text)
    assert sp.issparse(words) and words.shape[1] > max(SPARSE_MIN_COLUMNS, len(lines))
    return frame, words


@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_text_block_sparse_equals_the_same_block_dense(polarity, family):
    """With a ridge: the row-space fits of the sparse block equal the dense engine's primal
    fits of the same block, out of fold, in the weights and on new rows."""
    frame, words = polarity
    response = "y" if family == "gaussian" else "c"
    fits = {
        kind: pearl.fit(f"{response} ~ x + block(words)", frame, blocks={"words": block},
                        family=family, ridge=0.5, seed=2, honest=False)
        for kind, block in (("sparse", words), ("dense", words.toarray()))
    }
    assert sp.issparse(fits["sparse"].stages.design.X)
    assert not sp.issparse(fits["dense"].stages.design.X)
    np.testing.assert_allclose(fits["sparse"].cv_predictions, fits["dense"].cv_predictions,
                               rtol=0, atol=1e-8)
    np.testing.assert_allclose(fits["sparse"].weights, fits["dense"].weights, rtol=0, atol=1e-6)
    new = frame.head(6)
    np.testing.assert_allclose(
        fits["sparse"].predict(new, blocks={"words": words[:6]}),
        fits["dense"].predict(new, blocks={"words": words[:6].toarray()}), rtol=0, atol=1e-8)


def test_a_dense_block_too_wide_for_a_gram_matrix_is_fitted_in_the_row_space_too():
    """A dense 9 000-column block (a 9 000 x 9 000 Gram matrix is over the memory limit): with
    a ridge its candidates are fitted, equal to the same block given sparse, not recorded as
    too wide."""
    data, small, words = _wide_rows()
    words = words[:, :9000]
    fits = [pearl.fit("y ~ block(a) + block(w)", data, blocks={"a": small, "w": block},
                      ridge=0.2, seed=0, honest=False)
            for block in (words, words.toarray())]
    assert sp.issparse(fits[0].stages.design.X) and not sp.issparse(fits[1].stages.design.X)
    assert not fits[1].failed.any()
    np.testing.assert_allclose(fits[1].cv_predictions, fits[0].cv_predictions, rtol=0,
                               atol=1e-8)


def test_mlp_candidates_of_a_wide_sparse_block_are_recorded_as_infeasible():
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.normal(size=(120, 2))
    words = sp.random(120, 1500, density=0.01, format="csr", random_state=1)
    data = pd.DataFrame({"y": a[:, 0] + rng.normal(size=120)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pearl.fit("y ~ block(a) + block(w)", data, blocks={"a": a, "w": words},
                        downstream=pearl.MLP(), ridge=0.1, seed=0, honest=False)
    failures = res.failures.set_index("candidate")
    assert res.failed.to_dict() == {"a": False, "w": True, "a+w": True}
    assert "MLP candidates are not fitted on wide sparse blocks" in failures.loc["w", "reason"]
    predicted = res.predict(data.head(3), blocks={"a": a[:3], "w": words[:3]})
    assert np.isfinite(predicted.to_numpy()).all()
