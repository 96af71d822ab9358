"""Every vignette runs as a plain script in its quick version (PEARLSTATS_QUICK=1), its
warnings at its own lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

VIGNETTES = sorted((Path(__file__).resolve().parents[1] / "vignettes").glob("[0-9][0-9]_*.py"))
# Runs a vignette with each figure it saves checked first (a title, no text outside the canvas).
CHECKING_RUNNER = Path(__file__).resolve().parent / "results" / "run_checking_figures.py"


def _missing_data(path: Path) -> str | None:
    """Why the vignette cannot run here (its data package is absent), or None."""
    if path.stem != "08_fashion_mnist":
        return None
    from pearlstats.datasets import real

    try:
        real._debian_fashion_folder()
    except real.MissingDependencyError as err:
        return f"Fashion-MNIST is not installed: {err}"
    return None


@pytest.mark.parametrize("path", VIGNETTES, ids=[p.stem for p in VIGNETTES])
def test_vignette_runs_quickly(path, tmp_path):
    reason = _missing_data(path)
    if reason:
        pytest.skip(reason)
    env = {
        **os.environ,
        "PEARLSTATS_QUICK": "1",
        "MPLBACKEND": "Agg",
        "PEARLSTATS_RESULTS": str(tmp_path),
    }
    root = path.parents[1]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(CHECKING_RUNNER), str(path)],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "VIGNETTE OK" in done.stdout
    assert "ConvergenceWarning" not in done.stderr, done.stderr[-3000:]  # every solve certified
    # every warning a reader meets names the vignette's line that caused it (Python prints
    # "file:line: Category: message"), never pearlstats' code or a library's
    shown = re.findall(r"^(.+?):\d+: (\w+Warning): ", done.stderr, re.MULTILINE)
    assert all(Path(file) == path for file, _ in shown), shown
    saved = re.findall(r"^[^#\n]*\.savefig\(", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert done.stdout.count("FIGURE CHECKED") == len(saved)


def test_quick_mode_writes_outside_the_committed_results(tmp_path):
    # A quick run without PEARLSTATS_RESULTS (a reader's) goes to the system's temporary folder,
    # never into the repository; a full run's folder is results/ beside the script.
    vignettes = VIGNETTES[0].parent
    env = {key: value for key, value in os.environ.items() if key != "PEARLSTATS_RESULTS"}
    env["TMPDIR"] = str(tmp_path)
    root = vignettes.parent
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    script = tmp_path / "where.py"
    script.write_text("from pearlstats.experiments import results_folder\n"
                      "print(results_folder())\n", encoding="utf-8")

    def folder(quick: str) -> Path:
        done = subprocess.run([sys.executable, str(script)], cwd=vignettes,
                              env={**env, "PEARLSTATS_QUICK": quick}, capture_output=True,
                              text=True, timeout=60, check=True)
        return Path(done.stdout.strip())

    assert folder("1") == tmp_path / "pearlstats-quick-results"
    assert folder("0") == tmp_path / "results"


def test_vignettes_are_self_contained_and_say_how_long_they_take():
    # The rendered page is code a reader runs as shown: no private helper of the folder; and
    # the first markdown cells say how long the full run takes.
    for path in VIGNETTES:
        text = path.read_text(encoding="utf-8")
        assert "_common" not in text, path.name
        assert 'matplotlib.use("Agg")' not in text, path.name
        assert re.search(r"^# \*\*Full run:\*\* ", text, re.MULTILINE), path.name
