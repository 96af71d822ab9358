"""The nested-SE calibration command: what its draws keep and what its summary counts."""

import numpy as np
import pandas as pd
import pytest

from pearlstats.exceptions import OptionError
from pearlstats.experiments.inference_checks.nested_calibration import (
    DRAW_COLUMNS,
    calibration_draws,
    summarise,
)

OUTER = 3


@pytest.fixture(scope="module")
def draws():
    return calibration_draws(["blocks"], outer=OUTER, repeats=3, n_datasets=2, n_test=200,
                             seed=0, prefixes=(1, 3))


def test_the_draws_keep_the_naive_se_the_estimate_is_bounded_by(draws):
    assert tuple(draws.columns) == DRAW_COLUMNS
    se, naive, raw = draws["se"], draws["naive_se"], np.sqrt(
        (OUTER - 1) / OUTER * draws["mse"].clip(lower=0))
    bound = draws["se_bound"].fillna("")
    # Equalities of the same floating-point numbers: a relative 1e-12 is rounding only.
    lower, upper, inside = bound == "lower", bound == "upper", bound == ""
    assert lower.any() and upper.any() and inside.any()
    np.testing.assert_allclose(se[lower], naive[lower], rtol=1e-12)
    np.testing.assert_allclose(se[upper], np.sqrt(OUTER) * naive[upper], rtol=1e-12)
    np.testing.assert_allclose(se[inside], raw[inside], rtol=1e-12)
    assert (raw[lower] < naive[lower]).all() and (raw[upper] > se[upper]).all()
    assert (se >= naive * (1 - 1e-12)).all() and (se <= np.sqrt(OUTER) * naive * (1 + 1e-12)).all()


def test_summary_counts_misses_on_each_side_of_the_interval():
    rng = np.random.default_rng(3)
    n = 200
    risk, se = rng.uniform(1, 2, n), rng.uniform(0.05, 0.2, n)
    test = risk + rng.standard_t(3, n) * 0.15
    frame = pd.DataFrame({
        "design": "blocks", "outer": 5, "data_set": np.arange(n), "n": 100, "repeats": 5,
        "strategy": "PEARL", "risk": risk, "se": se, "mse": se**2, "bias": 0.0,
        "err_cv": risk, "naive_se": se, "se_bound": "", "se_mc_error": 0.1,
        "ratio": 1.0, "ratio_se": 0.0, "test_risk": test, "test_ratio": 1.0,
        "cpu_seconds": 1.0,
    })
    row = summarise(frame).iloc[0]
    z = (test - risk) / se
    below, above = np.mean(z < -1.959963984540054), np.mean(z > 1.959963984540054)
    assert 0 < above < 1 - row["coverage"]  # both sides miss in this draw
    assert row["miss_above"] == pytest.approx(above, abs=1e-15)
    assert row["coverage"] == pytest.approx(1 - above - below, abs=1e-15)


def test_resuming_draws_of_another_version_is_refused(tmp_path):
    old = tmp_path / "draws.csv"
    pd.DataFrame({"design": ["blocks"], "outer": [3], "data_set": [0]}).to_csv(old, index=False)
    with pytest.raises(OptionError, match="naive_se"):
        calibration_draws(["blocks"], outer=OUTER, repeats=1, n_datasets=1, n_test=50,
                          prefixes=(1,), out=old)
    assert pd.read_csv(old).shape == (1, 3)  # nothing appended
