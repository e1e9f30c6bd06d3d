"""Registries of plug-ins by name, and the lazy import of a plug-in's class.

A plug-in (a launcher of ``dlbench run``, a report type of ``dlbench report``) is
registered by one line under a name: an entry with a line of help and its class, or
where to import the class from (``"package.module:Class"``) so that the command line
lists the plug-ins without importing them. :class:`PluginRegistry` keeps the entries of one
kind of plug-in; :func:`load_class` imports a class when the plug-in is used, and
:func:`load_attribute` any other object a module declares (a framework's
``FRAMEWORK``, named by its module's path).

Usage::

    >>> colours = PluginRegistry[str]("colour")
    >>> colours.add("red", "#f00")
    '#f00'
    >>> colours.get("blue")
    Traceback (most recent call last):
    ...
    ValueError: unknown colour 'blue'; accepted: red

Part of the shared base that every package may import: it imports nothing of dlbench.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar, cast

E = TypeVar("E")
T = TypeVar("T")


class PluginRegistry(Generic[E]):
    """Entries of one kind of plug-in by name, in registration order. ``kind`` names the
    plug-in in messages (``"launcher"``, ``"report type"``)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, E] = {}

    def add(self, name: str, entry: E) -> E:
        """Register ``entry`` under ``name`` and return it; ``ValueError`` when the name
        is taken (a second registration would silently replace the first)."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> None:
        """Unregister ``name`` (a test's own plug-in, once the test is done);
        ``KeyError`` when it is not registered."""
        del self._entries[name]

    def entries(self) -> list[E]:
        """Every entry, in registration order (a copy: changing it changes nothing)."""
        return list(self._entries.values())

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        return list(self._entries)

    def get(self, name: str) -> E:
        """The entry registered as ``name``; ``ValueError`` naming the accepted names
        for an unknown one."""
        if name not in self._entries:
            raise ValueError(
                f"unknown {self.kind} {name!r}; accepted: {', '.join(self._entries)}")
        return self._entries[name]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


def load_attribute(path: str, kind: str = "name") -> object:
    """What ``path``, ``"package.module:name"``, names, its module imported now;
    ``ValueError`` for a string of another shape (``kind`` names what the part after
    the colon should be, in that message). A module that cannot be imported, or that
    has no such name, raises its own ``ImportError`` or ``AttributeError``: a
    registration naming what does not exist is a bug, and its traceback says where.

    >>> load_attribute("os.path:join").__name__
    'join'
    """
    module, colon, attribute = path.partition(":")
    if not (module and colon and attribute):
        raise ValueError(f"{path!r} is not 'package.module:{kind}'")
    return getattr(importlib.import_module(module), attribute)


def load_class(implementation: str | type[T], base: type[object]) -> type[T]:
    """The class ``implementation`` names, imported now when it is a string
    ``"package.module:Class"``; ``ValueError`` for a string of another shape,
    ``TypeError`` when the class is not ``base`` or a subclass of it (a registration
    that names the wrong class).

    ``base`` is typed loosely on purpose: a plug-in's base class is abstract, and a
    type checker refuses an abstract class where ``type[T]`` is expected.
    """
    if isinstance(implementation, str):
        # Typed as the caller's class; the check below makes it so at run time.
        loaded = cast("type[T]", load_attribute(implementation, "Class"))
    else:
        loaded = implementation
    if not (isinstance(loaded, type) and issubclass(loaded, base)):
        raise TypeError(f"{implementation!r} is not a subclass of {base.__qualname__}")
    return loaded
