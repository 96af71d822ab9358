"""The README's demo (``python -m pearlstats.demo``): what its summary shows a first-time user."""

from __future__ import annotations

import numpy as np
import pytest

from pearlstats import demo


@pytest.fixture(scope="module")
def demo_run():
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        res = demo.main()
    return res, printed.getvalue()


def _column(summary, title_start: str, header: str) -> list[str]:
    """Cells under *header* in the summary table whose title starts with *title_start*."""
    table = next(t for t in summary.tables if t.title and t.title.startswith(title_start))
    rows = [[str(cell.data).strip() for cell in row] for row in table]
    position = rows[0].index(header)
    return [row[position] for row in rows[1:]]


def test_summary_shows_no_solver_residue_as_a_weight(demo_run):
    # quadprog left 3.0e-13 on an inactive candidate here; the summary printed it as a weight
    # while also counting 28 zero weights of 31
    res, printed = demo_run
    summary = res.summary()
    shown = (
        _column(summary, "Candidates with non-zero weight", "weight")
        + _column(summary, "Block importance", "importance")
        + _column(summary, "Weights re-solved", "weight")
    )
    assert shown and not [cell for cell in shown if "e-" in cell]
    weights = res.weights.to_numpy()
    assert not ((weights > 0) & (weights < 1e-6)).any()
    assert weights.sum() == 1.0
    zero = int((weights == 0).sum())
    assert f"{zero} of {weights.size} candidates have zero weight" in printed
    assert len(_column(summary, "Candidates with non-zero weight", "weight")) == weights.size - zero


def test_weights_strategies_and_predictions_agree(demo_run):
    res, _ = demo_run
    pearl = res.strategy_weights.loc["PEARL", res.weights.index]
    np.testing.assert_array_equal(pearl.to_numpy(), res.weights.to_numpy())
    used = res.weights[res.weights > 0]
    P = res.cv_predictions[used.index].to_numpy()
    assert res.weight_objective == pytest.approx(
        np.mean((res.stages.response.y - P @ used.to_numpy()) ** 2), rel=1e-12
    )
