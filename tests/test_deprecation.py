"""Every deprecated alias warns once, at the user's line, and resolves to its replacement."""

from __future__ import annotations

import importlib
import warnings

import pytest

import pearlstats
from pearlstats.deprecation import _DEPRECATED, resolve


@pytest.mark.parametrize("old", sorted(_DEPRECATED))
def test_each_deprecated_name_warns_once_and_is_its_replacement(old):
    module_name, _, name = old.rpartition(".")
    module = importlib.import_module(module_name)
    entry = _DEPRECATED[old]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(module, name)
    assert [w.category for w in caught] == [FutureWarning]
    message = str(caught[0].message)
    assert old in message and entry.removed_in in message and entry.since in message
    assert caught[0].filename == __file__  # the warning names the user's line
    # the replacement, found independently of the alias machinery
    target_module, _, attribute = entry.target.partition(":")
    assert value is getattr(importlib.import_module(target_module), attribute)
    assert value is resolve(entry.target)


def test_aliases_live_one_minor_version_past_their_removal():
    for old, entry in _DEPRECATED.items():
        since = tuple(int(part) for part in entry.since.split(".")[:2])
        until = tuple(int(part) for part in entry.removed_in.split(".")[:2])
        assert until >= (since[0], since[1] + 2), old  # the next minor release still warns


def test_aliases_are_gone_by_the_version_that_removes_them():
    """An alias whose removal version has been reached must be deleted, not left to warn: this
    fails as soon as the version is bumped past an entry's ``removed_in``."""
    current = tuple(int(part) for part in pearlstats.__version__.split(".")[:3])
    for old, entry in _DEPRECATED.items():
        assert tuple(int(part) for part in entry.removed_in.split(".")) > current, old


@pytest.mark.parametrize("module_name, name", [
    ("pearlstats.distributed", "DaskPearlResults"),
    ("pearlstats.distributed.fit", "fit_distributed"),
    ("pearlstats.distributed.newton", "mean_of"),
])
def test_the_0_3_names_removed_in_0_8_raise_as_python_does(module_name, name):
    module = importlib.import_module(module_name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no deprecation warning is left on the way
        with pytest.raises(AttributeError, match=f"has no attribute '{name}'"):
            getattr(module, name)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pearlstats.distributed.supported")


def test_unknown_names_still_raise_attribute_error():
    import pearlstats.distributed as distributed

    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        distributed.nothing


def test_the_policy_page_lists_every_deprecated_name():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "deprecation.md").read_text()
    assert "FutureWarning" in page and "one minor version" in page
    for old in _DEPRECATED:
        assert f"`{old}`" in page, old
