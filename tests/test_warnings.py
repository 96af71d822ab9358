"""Every warning pearlstats emits names the user's line, not the package's internals.

:mod:`pearlstats._warnings` counts the frames of the package (and the standard library's
between two of them) above the code that warns; every warning of the package goes through it.
The README's examples (tests/test_readme.py) and the vignettes (tests/test_vignettes.py)
check the same on what a reader runs.
"""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pearlstats as pearl
from conftest import separated_binomial
from pearlstats import _warnings

PACKAGE = Path(pearl.__file__).resolve().parent


def _caught(action) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    return caught


def _line_of(marker: str) -> int:
    """The line of this file that holds *marker* (a comment beside the call that warns)."""
    lines = Path(__file__).read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, start=1)
                if line.rstrip().endswith(f"# {marker}") and "_line_of" not in line)


def test_a_warning_of_fit_names_the_line_that_called_fit():
    y, blocks = separated_binomial(60)
    caught = _caught(lambda: pearl.fit("y ~ block(a) + block(s)", {"y": y}, blocks=blocks,  # fit
                                       family="binomial", seed=1, honest=False))
    separation = [w for w in caught if issubclass(w.category, pearl.SeparationWarning)]
    assert separation, [str(w.message) for w in caught]
    for w in caught:
        assert (w.filename, w.lineno) == (__file__, _line_of("fit")), (w.filename, w.message)


def test_a_warning_of_a_cached_table_names_the_line_that_read_it():
    # res.honest is computed by a descriptor of the package (results/readonly.py), which is
    # where the warning pointed before
    rng = np.random.default_rng(0)
    y = np.zeros(60)
    y[7] = 1.0  # every outer training set but one has a constant response: honest cannot run
    data = {"y": y, "a": rng.normal(size=(60, 2)), "b": rng.normal(size=(60, 2))}
    res = pearl.fit("y ~ block(a) + block(b)", data, seed=0)
    caught = _caught(lambda: res.honest)  # honest
    assert [w.category for w in caught] == [pearl.PearlWarning], caught
    assert (caught[0].filename, caught[0].lineno) == (__file__, _line_of("honest"))


def test_the_summary_says_pearl_is_above_ms_in_its_notes_and_res_honest_warns_it():
    # PEARL's honest risk exceeds MS's by more than a paired SE on this draw (seed 5): the
    # summary's notes say so, so building it warns nothing (the reader would get the message
    # twice, as vignette 01 printed it); reading res.honest itself still warns
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(60, 2)), rng.normal(size=(60, 2))
    res = pearl.fit("y ~ block(a) + block(b)",
                    {"y": a[:, 0] + rng.normal(size=60), "a": a, "b": b}, seed=0)
    caught = _caught(lambda: res.summary().as_text())
    assert not caught, [str(w.message) for w in caught]
    assert "exceeds that of MS" in res.summary().as_text()
    caught = _caught(lambda: res.honest)  # honest read after the summary
    assert [w.category for w in caught] == [pearl.PearlWarning]
    assert "exceeds that of MS" in str(caught[0].message)
    here = (__file__, _line_of("honest read after the summary"))
    assert (caught[0].filename, caught[0].lineno) == here


def test_a_deep_learner_draws_the_package_bars_not_tqdm_auto(monkeypatch):
    # tqdm.auto, imported in a notebook without ipywidgets, warns "IProgress not found" even
    # for a disabled bar (vignettes 05-08 printed it): the learners use progress.bar_class.
    # With tqdm.auto unimportable, training still works.
    pytest.importorskip("torch")
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # "import tqdm.auto" raises
    X = np.random.default_rng(0).normal(size=(32, 4))
    codes = pearl.Autoencoder(latent_dim=2, epochs=1, progress=False).fit_transform(X)
    assert codes.shape == (32, 2)


FAKE_PACKAGE = '''
import functools, warnings
from pearlstats._warnings import user_stacklevel

def deep():
    warnings.warn("found deep inside", UserWarning, stacklevel=user_stacklevel())

def middle():
    deep()
    return 1

class Thing:
    @functools.cached_property
    def value(self):
        return middle()

def read(thing):
    return thing.value
'''


def test_standard_library_frames_between_package_frames_are_skipped(tmp_path, monkeypatch):
    # a package whose property is a functools.cached_property: above the warning are the
    # package's frames, functools' (a standard-library file), then the user's, or the
    # package's again and then the user's
    package = tmp_path / "fake_package"
    package.mkdir()
    (package / "module.py").write_text(FAKE_PACKAGE, encoding="utf-8")
    monkeypatch.setattr(_warnings, "PACKAGE_DIR", str(package) + "/")
    monkeypatch.syspath_prepend(str(package))
    monkeypatch.delitem(sys.modules, "module", raising=False)
    import module

    caught = _caught(lambda: module.Thing().value)  # property
    assert [str(w.message) for w in caught] == ["found deep inside"]
    assert (caught[0].filename, caught[0].lineno) == (__file__, _line_of("property"))
    caught = _caught(lambda: module.read(module.Thing()))  # read
    assert (caught[0].filename, caught[0].lineno) == (__file__, _line_of("read"))
    caught = _caught(module.deep)  # a direct call from the user's side (here, _caught)
    assert caught[0].filename == __file__


def _warn_calls(source: str, name: str) -> list[str]:
    """``warnings.warn(...)`` calls and ``from warnings import ...`` in one module's *source*."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "warnings":
            found.append(f"{name}:{node.lineno}: from warnings import ...")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "warn" and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "warnings"):
            found.append(f"{name}:{node.lineno}: warnings.warn")
    return found


def test_every_warning_of_the_package_goes_through_one_function():
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) if path.name != "_warnings.py"
             for hit in _warn_calls(path.read_text(encoding="utf-8"),
                                    str(path.relative_to(PACKAGE)))]
    assert not found, "warn with pearlstats._warnings.warn instead:\n" + "\n".join(found)


@pytest.mark.parametrize("source, expected", [
    ("import warnings\nwarnings.warn('x')\n", 1),
    ("from warnings import warn\nwarn('x')\n", 1),
    ("from ._warnings import warn\nwarn('x', UserWarning)\n", 0),
    ("import warnings\nwith warnings.catch_warnings():\n    pass\n", 0),
])
def test_the_check_finds_a_direct_warning(source, expected):
    assert len(_warn_calls(source, "probe.py")) == expected
