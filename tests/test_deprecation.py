"""Every deprecated alias warns once, at the user's line, and resolves to its replacement."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

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


def test_0_3_imports_still_run_with_a_warning():
    script = (
        "import warnings; warnings.simplefilter('error', FutureWarning)\n"
        "try:\n    from pearlstats.distributed.supported import refuse_in_memory_only\n"
        "except FutureWarning as w:\n    print('warned:', w)\n"
        "warnings.simplefilter('ignore', FutureWarning)\n"
        "from pearlstats.distributed.supported import refuse_in_memory_only\n"
        "from pearlstats.distributed import DaskPearlResults\n"
        "import pearlstats as pearl\n"
        "print(refuse_in_memory_only.__module__, DaskPearlResults is pearl.PearlResults)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True)
    assert "warned: pearlstats.distributed.supported.refuse_in_memory_only" in run.stdout
    assert run.stdout.endswith("pearlstats.in_memory_only True\n")


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
