"""Progress bars and stage logging: shown when asked or when the work is long, silent otherwise."""

from __future__ import annotations

import logging
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest

import pearlstats as pearl
from pearlstats import progress
from pearlstats.exceptions import OptionError

SMALL_FIT = """
import numpy as np, pearlstats as pearl
rng = np.random.default_rng(0)
a, b = rng.normal(size=(120, 2)), rng.normal(size=(120, 3))
data = {"y": a[:, 0] + rng.normal(size=120), "a": a, "b": b}
"""


def _run(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SMALL_FIT + script], capture_output=True,
                          text=True, timeout=300, check=True)


@pytest.fixture
def small_fit():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(120, 2)), rng.normal(size=(120, 3))
    return {"y": a[:, 0] + rng.normal(size=120), "a": a, "b": b}


def test_stage_timings_are_logged_at_info_under_pearlstats(small_fit, caplog):
    with caplog.at_level(logging.INFO, logger="pearlstats"):
        res = pearl.fit("y ~ block(a) + block(b)", small_fit, seed=0, progress=False)
        res.honest
    stages = {(r.name, r.getMessage().split(":")[0]) for r in caplog.records}
    assert ("pearlstats.fitting", "cross-validation") in stages
    assert ("pearlstats.fitting", "weights") in stages
    assert ("pearlstats.nested", "honest re-runs") in stages
    assert all(r.levelno == logging.INFO for r in caplog.records if r.name.startswith("pearl"))
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="pearlstats"):
        pearl.fit("y ~ block(a) + block(b)", small_fit, seed=0, progress=False)
    debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG]
    assert any(m.startswith("weight solve: solver") and "KKT gap" in m for m in debug)
    # the cross-validation record names its size: 3 candidates and the covariates-only
    # (here intercept-only) baseline candidate over 5 folds of 120 rows
    cv = next(r.getMessage() for r in caplog.records if "cross-validation" in r.getMessage())
    assert "n=120, candidates=4, fold_fits=5" in cv


def test_nothing_is_printed_unless_asked():
    run = _run("res = pearl.fit('y ~ block(a) + block(b)', data, seed=0)\n"
               "res.honest\nimport logging\n"
               "print(any(isinstance(h, logging.NullHandler) "
               "for h in logging.getLogger('pearlstats').handlers))\n")
    assert run.stdout == "True\n" and run.stderr == ""


def test_progress_false_shows_no_bar_even_with_no_delay():
    run = _run("pearl.set_option('progress_delay', 0)\n"
               "import pearlstats.progress as p; p.LONG_FIT_SECONDS = 0\n"
               "res = pearl.fit('y ~ block(a) + block(b)', data, seed=0, progress=False,\n"
               "                honest_se=pearl.NestedSE(2))\n"
               "res.honest\nres.weight_uncertainty(4, progress=False)\n")
    assert run.stderr == ""
    run = _run("pearl.set_option('progress', False); pearl.set_option('progress_delay', 0)\n"
               "res = pearl.fit('y ~ block(a) + block(b)', data, seed=0)\n"
               "res.honest\nres.weight_uncertainty(4)\n")
    assert run.stderr == ""


def test_long_stages_show_one_bar_each_on_stderr_in_a_script():
    # LONG_FIT_SECONDS = 0 makes this small fit count as long; the delay 0 shows the others
    run = _run("import pearlstats.progress as p; p.LONG_FIT_SECONDS = 0\n"
               "pearl.set_option('progress_delay', 0)\n"
               "res = pearl.fit('y ~ block(a) + block(b)', data, seed=0,\n"
               "                honest_se=pearl.NestedSE(2))\n"
               "res.honest\nres.weight_uncertainty(4)\n")
    assert run.stdout == ""
    for stage in ("pearl.fit: cross-validation", "honest: outer folds", "nested SE: splits",
                  "bootstrap: resamples"):
        assert stage in run.stderr, stage
    # one bar, started once: its inner re-runs have no bar of their own (the bar's last
    # refresh need not show 100 %: its two splits can end within tqdm's refresh interval)
    assert run.stderr.count("nested SE: splits:   0%") == 1
    assert run.stderr.count("honest: outer folds:   0%") == 1


def test_a_fast_fit_shows_no_bar_with_the_default_delay():
    run = _run("import pearlstats.progress as p\n"
               "assert p.fit_bar_delay(120, 3, 5, newton=False) is None\n"
               "res = pearl.fit('y ~ block(a) + block(b)', data, seed=0)\n")
    assert run.stderr == ""


def test_the_long_fit_rule():
    # 20 000 rows, 15 candidates, 5 folds: 1.5e6 units; Newton 3 s expected, least squares 0.15 s
    assert progress.fit_bar_delay(20_000, 15, 5, newton=True) == 0.0
    assert progress.fit_bar_delay(20_000, 15, 5, newton=False) is None


def test_a_notebook_without_ipywidgets_gets_the_text_bar_without_a_warning(monkeypatch):
    from tqdm.std import tqdm as text_bar

    shell = type("ZMQInteractiveShell", (), {})()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    monkeypatch.setattr(progress.importlib.util, "find_spec",
                        lambda name: None if name == "ipywidgets" else object())
    assert progress.bar_class() is text_bar
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with progress.progress_bar(2, "quiet", progress=True) as bar:
            bar.update(2)


def test_options_and_progress_values_are_checked():
    with pytest.raises(OptionError, match="no option 'progres'"):
        pearl.set_option("progres", False)
    with pytest.raises(OptionError, match="True or False"):
        pearl.set_option("progress", "no")
    with pytest.raises(OptionError, match="progress='no' must be True, False or None"):
        pearl.fit("y ~ block(a)", {"y": np.arange(10.0), "a": np.ones((10, 1))}, progress="no")


def test_a_notebook_shows_one_bar_per_long_stage_and_none_for_a_fast_fit(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cells = [
        SMALL_FIT + "fast = pearl.fit('y ~ block(a) + block(b)', data, seed=0)",
        # the rule's threshold at 0 makes this fit "long"; delay 0 shows the honest re-runs
        "import pearlstats.progress as p; p.LONG_FIT_SECONDS = 0\n"
        "pearl.set_option('progress_delay', 0)\n"
        "res = pearl.fit('y ~ block(a) + block(b)', data, seed=0)",
        "res.honest",
        "quiet = pearl.fit('y ~ block(a) + block(b)', data, seed=0, progress=False)",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [
        str(root), os.environ.get("PYTHONPATH")])))
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()

    def stderr(cell) -> str:
        return "".join(out.get("text", "") for out in cell.outputs
                       if out.get("name") == "stderr")

    fast, long_fit, honest, quiet = notebook.cells
    assert stderr(fast) == "" and stderr(quiet) == ""
    assert "pearl.fit: cross-validation" in stderr(long_fit)
    assert "honest: outer folds" in stderr(honest)
    # no ipywidgets here: the text bar, without tqdm's "IProgress not found" warning
    assert all("IProgress" not in stderr(cell) and "TqdmWarning" not in stderr(cell)
               for cell in notebook.cells)
