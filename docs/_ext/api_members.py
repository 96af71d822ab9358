"""The public methods and properties of the classes in ``pearlstats.__all__``: each gets a page.

A member is public when its name has no leading underscore and the class that defines it (the
class itself or a base such as the results' mixins) belongs to pearlstats: what a class inherits
from ``object`` or ``Exception`` is documented by Python. ``conf.py`` hands these lists to the
class template (``_templates/autosummary/class.rst``), and the tests check the pages and the
docstrings against the same lists.
"""

from __future__ import annotations

import inspect
from functools import cached_property

import pearlstats


def _owner(cls: type, name: str) -> type:
    return next(base for base in cls.__mro__ if name in base.__dict__)


def is_property(cls: type, name: str) -> bool:
    """Whether *name* is read as a value (property, cached table) rather than called."""
    attribute = inspect.getattr_static(cls, name)
    return isinstance(attribute, (property, cached_property))


def public_members(cls: type) -> dict[str, str]:
    """Public name -> ``"method"`` or ``"property"`` of *cls*, defined in pearlstats, sorted."""
    members = {}
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owner = _owner(cls, name)
        if not owner.__module__.startswith("pearlstats"):
            continue
        members[name] = "property" if is_property(cls, name) else "method"
    return members


def documented_classes() -> dict[str, type]:
    """``"pearlstats.Name"`` -> class, for every class in ``pearlstats.__all__`` with members."""
    classes = {}
    for name in pearlstats.__all__:
        obj = getattr(pearlstats, name)
        if inspect.isclass(obj) and public_members(obj):
            classes[f"pearlstats.{name}"] = obj
    return classes
