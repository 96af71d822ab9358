"""The public methods and properties of the classes in ``pearlstats.__all__``: each gets a page.

A member is public when its name has no leading underscore and the class that defines it (the
class itself or a base such as the results' mixins) belongs to pearlstats: what a class inherits
from ``object`` or ``Exception`` is documented by Python. Data (a dataclass's fields, class
constants) is listed in the class docstring's Attributes section instead of pages of its own.
``conf.py`` hands these lists to the class template (``_templates/autosummary/class.rst``), and
the tests check the pages and the docstrings against the same lists.
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


def _public_names(cls: type) -> list[str]:
    return [name for name in sorted(dir(cls)) if not name.startswith("_")
            and _owner(cls, name).__module__.startswith("pearlstats")]


def public_members(cls: type) -> dict[str, str]:
    """Public name -> ``"method"`` or ``"property"`` of *cls*, defined in pearlstats, sorted."""
    members = {}
    for name in _public_names(cls):
        if is_property(cls, name):
            members[name] = "property"
        elif callable(inspect.getattr_static(cls, name)) or isinstance(
                inspect.getattr_static(cls, name), (classmethod, staticmethod)):
            members[name] = "method"
    return members


def data_attributes(cls: type) -> list[str]:
    """Public data of *cls* that is neither method nor property: dataclass fields with a
    default, class constants (``Loss.name``). The class docstring's Attributes section lists
    them; they get no page of their own."""
    members = public_members(cls)
    return [name for name in _public_names(cls) if name not in members]


def documented_classes() -> dict[str, type]:
    """``"pearlstats.Name"`` -> class, for every class in ``pearlstats.__all__`` with members."""
    classes = {}
    for name in pearlstats.__all__:
        obj = getattr(pearlstats, name)
        if inspect.isclass(obj) and (public_members(obj) or data_attributes(obj)):
            classes[f"pearlstats.{name}"] = obj
    return classes
