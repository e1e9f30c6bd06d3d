"""The generic plug-in registry and lazy class import (``dlbench.plugins``), on known
input: the registries of launchers and report types are tested through their own
functions in ``test_launch_registry.py`` and ``test_report_registry.py``."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Mapping

import pytest

from dlbench.plugins import PluginRegistry, load_class


def test_entries_come_back_in_registration_order() -> None:
    shapes: PluginRegistry[int] = PluginRegistry("shape")
    assert shapes.add("triangle", 3) == 3
    assert shapes.add("square", 4) == 4
    assert shapes.add("pentagon", 5) == 5
    assert shapes.entries() == [3, 4, 5]
    assert shapes.names() == ["triangle", "square", "pentagon"] == list(shapes)
    assert shapes.get("square") == 4
    assert len(shapes) == 3 and "square" in shapes and "circle" not in shapes


def test_entries_is_a_copy() -> None:
    shapes: PluginRegistry[int] = PluginRegistry("shape")
    shapes.add("triangle", 3)
    shapes.entries().append(99)
    assert shapes.entries() == [3]


def test_a_taken_name_is_refused_and_the_first_entry_kept() -> None:
    shapes: PluginRegistry[int] = PluginRegistry("shape")
    shapes.add("square", 4)
    with pytest.raises(ValueError) as raised:
        shapes.add("square", 40)
    assert str(raised.value) == "shape 'square' is already registered"
    assert shapes.get("square") == 4 and len(shapes) == 1


def test_an_unknown_name_is_refused_with_the_accepted_names_in_order() -> None:
    shapes: PluginRegistry[int] = PluginRegistry("polygon shape")
    shapes.add("square", 4)
    shapes.add("hexagon", 6)
    with pytest.raises(ValueError) as raised:
        shapes.get("circle")
    assert str(raised.value) == "unknown polygon shape 'circle'; accepted: square, hexagon"
    assert "\n" not in str(raised.value)


def test_an_empty_registry_says_so() -> None:
    with pytest.raises(ValueError, match=r"^unknown shape 'x'; accepted: $"):
        PluginRegistry[int]("shape").get("x")


def test_remove_forgets_a_name_which_may_then_be_registered_again() -> None:
    shapes: PluginRegistry[int] = PluginRegistry("shape")
    shapes.add("square", 4)
    shapes.add("triangle", 3)
    shapes.remove("square")
    assert shapes.names() == ["triangle"]
    with pytest.raises(ValueError, match=r"accepted: triangle$"):
        shapes.get("square")
    shapes.add("square", 44)  # now at the end: registration order, not first sight
    assert shapes.entries() == [3, 44]
    with pytest.raises(KeyError):
        shapes.remove("circle")


def test_two_registries_do_not_share_entries() -> None:
    first: PluginRegistry[str] = PluginRegistry("colour")
    second: PluginRegistry[str] = PluginRegistry("colour")
    first.add("red", "#f00")
    assert second.entries() == [] and "red" not in second


def test_load_class_imports_a_module_colon_class_string() -> None:
    # collections is imported already; the point is the lookup by "module:Class".
    assert load_class("collections:OrderedDict", Mapping) is OrderedDict
    assert load_class("collections:OrderedDict", dict) is OrderedDict


def test_load_class_imports_lazily() -> None:
    # A standard-library module that nothing here has imported: only the call does.
    name = "xml.dom.pulldom"
    sys.modules.pop(name, None)
    assert load_class(f"{name}:PullDOM", object).__name__ == "PullDOM"
    assert name in sys.modules


def test_load_class_passes_a_class_through() -> None:
    assert load_class(OrderedDict, dict) is OrderedDict


@pytest.mark.parametrize("implementation", ["collections", "collections:", ":OrderedDict",
                                            ""])
def test_load_class_refuses_a_string_of_another_shape(implementation: str) -> None:
    with pytest.raises(ValueError, match=r"is not 'package\.module:Class'"):
        load_class(implementation, object)


def test_load_class_refuses_a_class_of_another_kind() -> None:
    with pytest.raises(TypeError, match=r"'collections:OrderedDict' is not a subclass of list"):
        load_class("collections:OrderedDict", list)
    with pytest.raises(TypeError, match="is not a subclass of list"):
        load_class(dict, list)
    with pytest.raises(TypeError, match="'os:sep' is not a subclass of object"):
        load_class("os:sep", object)  # a string, not a class


def test_load_class_lets_a_missing_module_or_name_be_seen() -> None:
    # A registration naming what does not exist is a bug: its own exception, unchanged.
    with pytest.raises(ModuleNotFoundError):
        load_class("dlbench.no_such_module:Thing", object)
    with pytest.raises(AttributeError):
        load_class("collections:NoSuchThing", object)
