"""Every Python block of README.md runs as written, in order, in one namespace."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pearlstats as pearl  # noqa: E402  (after the backend is chosen)

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_readme_python_blocks_run_as_written():
    blocks = _python_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) >= 2
    namespace: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # every weight solve of the examples is certified, the honest re-runs' too (issue 25)
        warnings.simplefilter("error", pearl.ConvergenceWarning)
        for number, block in enumerate(blocks, start=1):
            exec(compile(block, f"README.md python block {number}", "exec"), namespace)  # noqa: S102
        assert namespace["text_res"].honest["certified"].loc["PEARL"]
    # a warning a reader meets names the README's line that caused it, never pearlstats' code
    elsewhere = [f"{w.filename}:{w.lineno}: {w.category.__name__}: {w.message}" for w in caught
                 if not w.filename.startswith("README.md python block")]
    assert not elsewhere, elsewhere
    assert abs(float(namespace["res"].weights.sum()) - 1) < 1e-9
    assert set(namespace["text_res"].weights.index) == {"lsi", "w2v", "lsi+w2v"}


def test_readme_keeps_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    setup = text[text.index("## Set up"):text.index("## What `fit` does")]
    assert re.findall(r"^```bash\n(.*?)\n```", setup, flags=re.MULTILINE) == [
        "python3 -m pip install . && python3 -m pearlstats.demo",
        'python3 -m pip install ".[test,deep,docs]" && python3 -m pytest',
    ]
