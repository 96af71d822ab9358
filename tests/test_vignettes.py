"""Every vignette runs as a plain script in its quick version (PEARLSTATS_QUICK=1)."""

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
    saved = re.findall(r"^[^#\n]*\.savefig\(", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert done.stdout.count("FIGURE CHECKED") == len(saved)


def test_quick_mode_writes_outside_the_committed_results():
    vignettes = VIGNETTES[0].parent
    env = {key: value for key, value in os.environ.items() if key != "PEARLSTATS_RESULTS"}
    env["PEARLSTATS_QUICK"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", "import _common; print(_common.RESULTS)"],
        cwd=vignettes,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(done.stdout.strip()) == vignettes / "_build" / "quick-results"
    for path in VIGNETTES:
        assert 'matplotlib.use("Agg")' not in path.read_text(encoding="utf-8"), path.name
