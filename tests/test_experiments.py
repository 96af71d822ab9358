"""The replication-grid runner."""

from __future__ import annotations

import re

import numpy as np
import pytest
from joblib import parallel_config

from pearlstats.exceptions import OptionError
from pearlstats.experiments import grid, run_grid
from pearlstats.weights.baselines import STRATEGIES


def draw_task(setting, seed):
    """Module-level so process workers can import it."""
    rng = np.random.default_rng(seed)
    return [{"draw": float(rng.normal(setting["mu"])), "k": k} for k in range(2)]


def test_grid_is_the_cartesian_product():
    assert grid(a=[1, 2], b=["x", "y"]) == [
        {"a": 1, "b": "x"},
        {"a": 1, "b": "y"},
        {"a": 2, "b": "x"},
        {"a": 2, "b": "y"},
    ]


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
    expected = [
        np.random.default_rng(children[i * 3 + r]).normal(mu)
        for i, mu in enumerate([0.0, 1.0])
        for r in range(3)
    ]
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
    """Shared blocks across cells change nothing: one cell redone from the public API gives the same
    scores."""
    import pearlstats as pearl
    from pearlstats.datasets import simulate_paper
    from pearlstats.experiments import SimulationSweep, paper_representations

    records = SimulationSweep(n=[80, 160], sigma=[0.1, 0.9])(
        {"N": 300, "n_test": 200}, np.random.SeedSequence(4)
    )
    cell = {r["method"]: r["MSE"] for r in records if r["n"] == 80 and r["sigma"] == 0.9}

    # a fresh SeedSequence: spawn() on the one the sweep used would give its next children
    seed = np.random.SeedSequence(4)
    data_seed, learner_seed, folds_seed = (int(s.generate_state(1)[0]) for s in seed.spawn(3))
    # the cell's fold seed comes from its values (80, 0.9), whatever its place in the lists
    sigma_bits = int(np.float64(0.9).view(np.uint64))
    cell_sequence = np.random.SeedSequence(folds_seed, spawn_key=(80, sigma_bits))
    fold_seed = int(cell_sequence.generate_state(1)[0])
    data = simulate_paper(80, N=300, n_test=200, sigma=0.9, seed=data_seed)
    reps = paper_representations(learner_seed).fit(data.unlabeled)
    formula = "y ~ " + " + ".join(f"block({name})" for name in reps.names)
    by_hand = pearl.fit(formula, data.labeled, blocks=reps, cv=5, seed=fold_seed).evaluate(
        data.test
    )
    assert set(cell) == set(by_hand.index) - {"Null"}  # the sweep keeps its rows
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
    # every strategy (pearlstats.weights.baselines.STRATEGIES) and the oracle block, per cell
    assert len(table) == 2 * 2 * (len(STRATEGIES) + 1) and table["MSE"].gt(0).all()
    assert "PEARL" in capsys.readouterr().out


# ------------------------------------------------------------------ issue 19, item 5: cell seeds
def test_a_cell_gives_the_same_numbers_whatever_the_order_of_the_lists():
    from pearlstats.experiments import SimulationSweep

    setting = {"N": 200, "n_test": 100}
    forward = SimulationSweep(n=[60, 90], sigma=[0.2, 0.8])(setting, np.random.SeedSequence(11))
    backward = SimulationSweep(n=[90, 60], sigma=[0.8, 0.2])(setting, np.random.SeedSequence(11))

    def by_cell(records):
        return {(r["n"], r["sigma"], r["method"]): (r["MSE"], r["MAE"]) for r in records}

    assert by_cell(forward) == by_cell(backward)  # bit-identical, cell by cell
    assert len(by_cell(forward)) == 4 * (len(STRATEGIES) + 1)


# ------------------------------------------------------------------ issue 19, item 6: the runner
def echo_task(setting, seed):
    return {"n": 7, "value": 1.0}


def polite_task(setting, seed):
    return {"n": setting["n"], "value": float(setting["n"])}


def timing_task(setting, seed):
    return {"seconds": 1.0}


def test_a_task_field_cannot_overwrite_a_setting_or_a_runner_column():
    with pytest.raises(OptionError, match=r"\['n'\].*setting 100, task 7"):
        run_grid(echo_task, grid(n=[100, 200]), 1, progress=False)
    with pytest.raises(OptionError, match=r"\['seconds'\].*run_grid adds itself"):
        run_grid(timing_task, grid(n=[100]), 1, progress=False)
    # echoing a setting's own value is harmless
    table = run_grid(polite_task, grid(n=[100, 200]), 1, progress=False)
    assert table["n"].tolist() == [100, 200] and table["value"].tolist() == [100.0, 200.0]


def test_grid_treats_strings_and_other_scalars_as_single_values():
    assert grid(kernel="rbf", n=[1, 2]) == [{"kernel": "rbf", "n": 1}, {"kernel": "rbf", "n": 2}]
    assert grid(sigma=0.5) == [{"sigma": 0.5}]
    assert grid(kernels=("rbf", "poly")) == [{"kernels": "rbf"}, {"kernels": "poly"}]
    with pytest.raises(OptionError, match="axis n= is empty"):
        grid(n=[])


@pytest.mark.parametrize("argv, message", [
    (["simulation"], "--full"),
    (["simulation", "--n", "60", "--n-jobs", "0"], "--n-jobs: 0 is out of range"),
    (["simulation", "--n", "60", "--seed", "-1"], "--seed: -1 is out of range"),
    (["simulation", "--n", "60", "--sigma", "nan"], "--sigma: nan is not a finite"),
    (["simulation", "--n", "5"], "--n: 5 is out of range"),
    (["simulation", "--n", "60", "--repetitions", "0"], "--repetitions: 0 is out of range"),
    (["simulation", "--n", "60", "60"], "--n 60 60 repeats a value; give each once"),
    (["simulation", "--n", "60", "--sigma", "0.5", "0.5"], "--sigma 0.5 0.5 repeats a value"),
])
def test_the_command_line_rejects_bad_arguments_before_running(argv, message, capsys):
    from pearlstats.experiments import main

    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_an_unwritable_out_path_fails_before_any_run(tmp_path, capsys, monkeypatch):
    from pearlstats.experiments import cli

    def never(*args, **kwargs):
        raise AssertionError("the grid ran although --out is unusable")

    monkeypatch.setattr(cli, "iter_runs", never)
    cases = [
        (tmp_path / "no" / "such" / "x.csv", "does not exist"),
        (tmp_path, "is a directory"),
        # /proc passes os.access(W_OK) but no file can be created there: found before any run
        ("/proc/x.csv", "cannot create the results file '/proc/x.csv.partial'"),
    ]
    for out, message in cases:
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["simulation", "--n", "60", "--repetitions", "1", "--out", str(out)])
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_help_shows_the_defaults(capsys):
    from pearlstats.experiments import main

    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "root seed (default: 2025)" in out and "unlabeled rows (default: 2000)" in out
    assert "default: the paper's [100, 200, 400, 800]" in out


# ------------------------------------------------------------------ issue 26, item 3: the runner
def constant_task(setting, seed):
    return {"value": 1.0}


@pytest.mark.parametrize("settings, reserved", [
    ([{"repetition": 7}, {"repetition": 8}], "['repetition']"),
    ([{"seconds": 60, "n": 1}], "['seconds']"),
    ([{"n": 1}, {"seconds": 60, "repetition": 1}], "['repetition', 'seconds']"),
])
def test_settings_named_like_the_runner_columns_are_refused_by_name(settings, reserved):
    # before: both repetition settings became 0 and seconds=60 became the run time
    with pytest.raises(OptionError, match=r"setting name\(s\) " + re.escape(reserved)) as info:
        run_grid(constant_task, settings, 1, progress=False)
    assert "are reserved" in str(info.value) and "rename them" in str(info.value)


@pytest.mark.parametrize("change, message", [
    ({"settings": [1, 2]}, r"settings\[0\] is 1 \(int\); each setting must be a dict"),
    ({"settings": [{"n": 1}, "n=2"]}, r"settings\[1\] is 'n=2' \(str\)"),
    ({"settings": {"n": 1}}, r"settings is one dict \(\{'n': 1\}\); give a list"),
    ({"settings": 5}, r"settings=5 is not a list of setting dicts"),
    ({"settings": iter([])}, "settings is empty"),
    ({"seed": -1}, r"seed=-1; use an integer >= 0"),
    ({"seed": 1.5}, r"seed=1.5; use an integer >= 0"),
    ({"seed": None}, r"seed=None; use an integer >= 0"),
    ({"seed": True}, r"seed=True; use an integer >= 0"),
    ({"repetitions": 2.0}, r"repetitions=2.0; use a positive integer"),
    ({"repetitions": -3}, r"repetitions=-3; use a positive integer"),
    ({"n_jobs": 0}, r"n_jobs=0; use None .* not 0"),
    ({"n_jobs": "2"}, r"n_jobs='2'; use None"),
    ({"progress": "no"}, r"progress='no'; use True or False"),
    ({"task": "constant_task"}, r"task='constant_task' is not callable"),
])
def test_every_bad_argument_is_an_option_error_naming_it(change, message):
    arguments = {"task": constant_task, "settings": [{"n": 1}], "repetitions": 2, "seed": 0,
                 "n_jobs": None, "progress": False, **change}
    task, settings, repetitions = (arguments.pop(k) for k in ("task", "settings", "repetitions"))
    with pytest.raises(OptionError, match=message):
        run_grid(task, settings, repetitions, **arguments)


def failing_task(setting, seed):
    """Fails on the second repetition of the setting mu=2 only."""
    if setting["mu"] == 2 and seed.spawn_key == (1 * 3 + 1,):
        raise ZeroDivisionError("the third run divided by zero")
    return {"value": setting["mu"]}


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_a_failing_task_names_its_setting_and_repetition(n_jobs):
    from pearlstats.exceptions import TaskError

    with pytest.raises(TaskError) as info:
        run_grid(failing_task, grid(mu=[1, 2], k="a"), 3, n_jobs=n_jobs, progress=False)
    message = str(info.value)
    assert "setting {'mu': 2, 'k': 'a'} (settings[1]), repetition 1" in message
    assert "ZeroDivisionError: the third run divided by zero" in message
    assert info.value.setting == {"mu": 2, "k": "a"} and info.value.repetition == 1
    if n_jobs is None:  # in-process, the task's own exception is chained
        assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_iter_runs_skips_the_given_positions_and_keeps_the_others_seeds():
    from pearlstats.experiments import iter_runs

    full = run_grid(draw_task, grid(mu=[0.0, 1.0]), 3, seed=5, progress=False)
    rest = dict(iter_runs(draw_task, grid(mu=[0.0, 1.0]), 3, seed=5, skip={(0, 1), (1, 0)}))
    assert sorted(rest) == [(0, 0), (0, 2), (1, 1), (1, 2)]
    for (i, r), records in rest.items():
        expected = full[(full["mu"] == [0.0, 1.0][i]) & (full["repetition"] == r)]
        assert [record["draw"] for record in records] == expected["draw"].tolist()
    with pytest.raises(OptionError, match=r"skip has position\(s\) \[\(0, 3\)\] outside"):
        iter_runs(draw_task, grid(mu=[0.0]), 3, skip=[(0, 3)])
