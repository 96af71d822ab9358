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


def _run_module(*arguments: str):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root),
                                                                  os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", *arguments], env=env, capture_output=True,
                          text=True, timeout=120)


def test_demo_help_and_a_bogus_option_exit_without_running_the_demo():
    shown = _run_module("pearlstats.demo", "--help")
    assert shown.returncode == 0 and "--seed" in shown.stdout
    refused = _run_module("pearlstats.demo", "--bogus")
    assert refused.returncode == 2 and "unrecognized arguments: --bogus" in refused.stderr
    for done in (shown, refused):  # the demo prints its test MSE when it runs
        assert "test MSE on" not in done.stdout + done.stderr


def test_python_m_pearlstats_prints_the_version_and_how_to_start():
    import pearlstats as pearl

    done = _run_module("pearlstats")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"pearlstats {pearl.__version__}:")
    assert "python -m pearlstats.demo" in done.stdout
    assert "python -m pearlstats.experiments" in done.stdout  # was not listed
    version = _run_module("pearlstats", "--version").stdout.strip()
    assert version == f"pearlstats {pearl.__version__}"


@pytest.mark.parametrize("seed", ["-1", "4294967296"])
def test_demo_seed_out_of_range_is_an_argparse_error_before_the_demo_runs(seed):
    # both were tracebacks (exit 1); 4294967296 even ran the simulation before failing
    refused = _run_module("pearlstats.demo", "--seed", seed)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.startswith("usage: python -m pearlstats.demo")
    assert f"argument --seed: {seed} is out of range" in refused.stderr
    assert "Traceback" not in refused.stderr and "test MSE on" not in refused.stdout
