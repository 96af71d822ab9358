"""The suite leaves every tracked file unchanged (checked by a session fixture in conftest.py).

``tracked_state`` is what that fixture compares before and after the session;
the test here checks that it notices an edit to a tracked file.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest


def tracked_state(root: Path) -> str | None:
    """Modified tracked files with a hash of their diff; None outside a git checkout."""
    if shutil.which("git") is None:
        return None
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                            capture_output=True, text=True)
    if status.returncode != 0:
        return None
    diff = subprocess.run(["git", "diff", "HEAD"], cwd=root, capture_output=True).stdout
    return status.stdout + hashlib.sha256(diff).hexdigest()


def test_tracked_state_notices_an_edit(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    run = {"cwd": tmp_path, "check": True, "capture_output": True}
    subprocess.run(["git", "init", "-q"], **run)
    (tmp_path / "results.csv").write_text("a\n1\n")
    subprocess.run(["git", "add", "results.csv"], **run)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *identity, "commit", "-qm", "x"], **run)
    clean = tracked_state(tmp_path)
    (tmp_path / "untracked.txt").write_text("fine")
    assert tracked_state(tmp_path) == clean
    (tmp_path / "results.csv").write_text("a\n2\n")
    edited = tracked_state(tmp_path)
    assert edited != clean
    (tmp_path / "results.csv").write_text("a\n3\n")
    assert tracked_state(tmp_path) not in (clean, edited)
