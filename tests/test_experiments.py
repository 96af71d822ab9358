"""The replication-grid runner."""

from __future__ import annotations

import numpy as np
import pytest
from joblib import parallel_config

from pearlstats.exceptions import OptionError
from pearlstats.experiments import grid, run_grid


def draw_task(setting, seed):
    """Module-level so process workers can import it."""
    rng = np.random.default_rng(seed)
    return [{"draw": float(rng.normal(setting["mu"])), "k": k} for k in range(2)]


def test_grid_is_the_cartesian_product():
    assert grid(a=[1, 2], b=["x", "y"]) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]


def test_results_reproduce_whatever_the_job_count_or_backend():
    settings = grid(mu=[0.0, 10.0])
    serial = run_grid(draw_task, settings, 4, seed=3, progress=False)
    parallel = run_grid(draw_task, settings, 4, seed=3, n_jobs=2, progress=False)
    with parallel_config(backend="threading"):
        threaded = run_grid(draw_task, settings, 4, seed=3, n_jobs=2, progress=False)
    for other in (parallel, threaded):
        np.testing.assert_array_equal(serial["draw"], other["draw"])
    assert list(serial.columns) == ["mu", "repetition", "draw", "k", "seconds"]
    assert serial[["mu", "repetition"]].drop_duplicates().shape[0] == 8


def test_each_run_gets_the_seedsequence_child_of_its_position():
    table = run_grid(draw_task, grid(mu=[0.0, 1.0]), 3, seed=9, progress=False)
    children = np.random.SeedSequence(9).spawn(6)
    expected = [np.random.default_rng(children[i * 3 + r]).normal(mu) for i, mu in enumerate([0.0, 1.0]) for r in range(3)]
    np.testing.assert_allclose(table.loc[table.k == 0, "draw"].to_numpy(), expected)
    assert table[table.k == 0].groupby("mu")["draw"].nunique().min() == 3  # repetitions differ


def test_bad_arguments():
    with pytest.raises(OptionError, match="repetitions=0"):
        run_grid(draw_task, grid(mu=[0.0]), 0)
    with pytest.raises(OptionError, match="settings is empty"):
        run_grid(draw_task, [], 2)
    with pytest.raises(OptionError, match="must return a dict"):
        run_grid(lambda s, seed: 3.0, grid(mu=[0.0]), 1, progress=False)


def test_a_simulation_sweep_cell_equals_the_same_fit_done_by_hand():
    """Shared blocks across cells change nothing: one cell redone from the public API gives the same scores."""
    import pearlstats as pearl
    from pearlstats.datasets import simulate_paper
    from pearlstats.experiments import SimulationSweep, paper_representations

    records = SimulationSweep(n=[80, 160], sigma=[0.1, 0.9])({"N": 300, "n_test": 200}, np.random.SeedSequence(4))
    cell = {r["method"]: r["MSE"] for r in records if r["n"] == 80 and r["sigma"] == 0.9}

    # a fresh SeedSequence: spawn() on the one the sweep used would give its next children
    seed = np.random.SeedSequence(4)
    data_seed, learner_seed, folds_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
    fold_seed = int(np.random.SeedSequence(folds_seed).generate_state(4)[2])  # cells run sigma-major: (0.9, 80) is third
    data = simulate_paper(80, N=300, n_test=200, sigma=0.9, seed=data_seed)
    reps = paper_representations(learner_seed).fit(data.unlabeled)
    formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
    by_hand = pearl.fit(formula, data.labeled, blocks=reps, cv=5, seed=fold_seed).evaluate(data.test)
    assert set(cell) == set(by_hand.index)
    for method, mse in cell.items():
        assert mse == pytest.approx(by_hand.loc[method, "MSE"], rel=1e-10)


def test_simulation_command_writes_the_tidy_table(tmp_path, capsys):
    import pandas as pd

    from pearlstats.experiments import main

    out = tmp_path / "sim.csv"
    main(["simulation", "--repetitions", "2", "--n", "60", "120", "--sigma", "0.5", "--N", "300",
          "--n-test", "100", "--n-jobs", "1", "--out", str(out)])
    table = pd.read_csv(out)
    assert {"N", "n_test", "repetition", "n", "sigma", "method", "MSE", "MAE"} <= set(table.columns)
    assert len(table) == 2 * 2 * 6 and table["MSE"].gt(0).all()
    assert "PEARL" in capsys.readouterr().out
