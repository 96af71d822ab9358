"""In-memory fits do not depend on how the rows are cut into chunks (issue 27).

The row-chunk size of the in-memory backend is not a user option; it is the module
attribute :data:`pearlstats.backends.chunks.CHUNK_ROWS` (read on every pass, so a test
can set it). Every pass of the engines over rows (per-fold moments, out-of-fold
predictions, the refits' Gram matrix) reads it. The fit with chunks of 7 rows, or of a
size that does not divide n, must give the numbers of the fit whose single chunk holds
every row: the per-fold moments are combined by Chan-Golub-LeVeque updates, so only
the last digits may differ (for gaussian they do, by about 1e-15). The binomial engine
sums its likelihood, gradients and Hessians over blocks of rows of a fixed size
(:data:`pearlstats.engines.glm._BLOCK_ROWS`), not the backend's chunks: a Newton fit
stops anywhere within its tolerance, and Hessians summed in another order moved
out-of-fold probabilities by 1.6e-11 (one step more or less). The weight stage's
squared-loss Gram (:mod:`pearlstats.weights.gram`) has its own cache-sized chunks,
fixed, and is not varied here either.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pearlstats as pearl
from pearlstats.backends import chunks

TOL = 1e-12


def _data(n: int, widths: tuple, family: str, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    blocks = {f"b{i}": rng.normal(loc=rng.uniform(-3, 3), scale=rng.uniform(0.5, 4),
                                  size=(n, w)) for i, w in enumerate(widths)}
    eta = sum(0.4 * block[:, 0] for block in blocks.values())
    noise = rng.normal(size=n)
    # binomial: centred on its median, so both classes occur (a block's location up to +-3
    # made every row class 1 at seed 9591, which the fit rightly refuses)
    y = eta + noise if family == "gaussian" else (eta - np.median(eta) + noise > 0).astype(float)
    return {"y": y, **blocks}


def _fit(data: dict, family: str, chunk_rows: int, monkeypatch) -> dict:
    """The fit's numbers, every one computed with chunks of *chunk_rows* rows."""
    formula = "y ~ " + " + ".join(f"block({b})" for b in data if b != "y")
    with monkeypatch.context() as patch:  # undone at once: hypothesis reuses the fixture
        patch.setattr(chunks, "CHUNK_ROWS", chunk_rows)
        res = pearl.fit(formula, data, family=family, cv=4, seed=3, honest=False)
        labels = res.weights.index[res.weights.to_numpy() > 0]
        return {
            "weights": res.weights.to_numpy(),
            "cv_risk": res.cv_risk.to_numpy(),
            "cv_predictions": res.cv_predictions.to_numpy(),
            "params": res.params.to_numpy(),  # the averaged model's coefficients
            "candidate_params": np.concatenate([res.candidates[label].params.to_numpy()
                                                for label in labels]),
        }


def _assert_same(got: dict, want: dict) -> None:
    for name in want:
        scale = max(1.0, float(np.nanmax(np.abs(want[name]))))
        np.testing.assert_allclose(got[name], want[name], rtol=0, atol=TOL * scale,
                                   err_msg=name)


# A separated binomial candidate refitted on the ridge ladder warns; that path must not
# depend on the chunks either.
SEPARATION = pytest.mark.filterwarnings("ignore::pearlstats.exceptions.SeparationWarning")


@SEPARATION
@pytest.mark.parametrize("family", ["gaussian", "binomial"])
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(40, 120), widths=st.lists(st.integers(1, 3), min_size=2, max_size=3),
       seed=st.integers(0, 2**16), chunk=st.one_of(st.just(7), st.integers(1, 130)))
def test_results_do_not_depend_on_the_chunk_size(family, n, widths, seed, chunk, monkeypatch):
    data = _data(n, tuple(widths), family, seed)
    whole = _fit(data, family, 1000, monkeypatch)  # one chunk holds every row
    _assert_same(_fit(data, family, chunk, monkeypatch), whole)


@SEPARATION
@pytest.mark.parametrize("family", ["gaussian", "binomial"])
def test_chunks_of_seven_rows_and_a_size_not_dividing_n(family, monkeypatch):
    data = _data(101, (2, 3, 1), family, 11)
    whole = _fit(data, family, 1000, monkeypatch)
    for chunk in (7, 10, 33):  # 101 = 14 * 7 + 3 = 10 * 10 + 1 = 3 * 33 + 2
        assert 101 % chunk
        _assert_same(_fit(data, family, chunk, monkeypatch), whole)
