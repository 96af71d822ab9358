"""Agreement with R's glm(weights=, offset=) and lm(weights=, offset=) (issue 26 item 2).

The reference files ``tests/results/reference/weighted_*.csv`` were written by
``tests/results/reference/make_r_weighted_references.R`` (R 4.2.2) from the stored poisson
and gaussian data; R is not needed to run these tests. R's ``weights`` here are prior
weights (statsmodels' ``var_weights``; ``weight_type="variance"``), non-integer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pearlstats as pearl

RESULTS = Path(__file__).parent / "results" / "reference"
BLOCKS = {"a": ["a1", "a2"], "b": ["b1", "b2", "b3"], "c": ["c1"]}
LABELS = ["a", "b", "c", "a+b", "a+c", "b+c", "a+b+c"]
FORMULA = "y ~ x + block(a) + block(b) + block(c)"


def _fit(family: str):
    data = pd.read_csv(RESULTS / f"{family}_data.csv")
    inputs = pd.read_csv(RESULTS / f"weighted_{family}_inputs.csv")
    blocks = {name: data[columns].to_numpy() for name, columns in BLOCKS.items()}
    extra = ({"exposure": inputs["t"].to_numpy()} if family == "poisson"
             else {"offset": inputs["o"].to_numpy()})
    res = pearl.fit(FORMULA, data[["x", "y"]], blocks=blocks, family=family,
                    weights=inputs["w"].to_numpy(), weight_type="variance",
                    cv=data["fold"].to_numpy(), honest=False, seed=0, **extra)
    return res


@pytest.mark.parametrize("family", ["poisson", "gaussian"])
def test_weighted_offset_fits_equal_r(family):
    res = _fit(family)
    assert res.candidate_labels == LABELS
    table = pd.read_csv(RESULTS / f"weighted_{family}_coefficients.csv")
    for label in LABELS:
        ours = res.candidates[label]
        names = ["(Intercept)", "x"] + [c for block in label.split("+") for c in BLOCKS[block]]
        expected = table[table["candidate"] == label].set_index("term").loc[names]
        np.testing.assert_allclose(res.candidate_params(label).to_numpy(),
                                   expected["estimate"], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(ours.bse, expected["std_error"], rtol=1e-7)
    oof = pd.read_csv(RESULTS / f"weighted_{family}_cv_predictions.csv")
    np.testing.assert_allclose(res.cv_predictions[LABELS].to_numpy(), oof[LABELS].to_numpy(),
                               rtol=1e-8, atol=1e-10)
