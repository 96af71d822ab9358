"""``PearlResults`` used the way a hostile but legitimate user would (pearlstats/results/core.py).

Numbers are checked against direct statsmodels fits of the same candidates.
"""

from __future__ import annotations

import numpy as np
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
