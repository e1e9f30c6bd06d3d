"""No two classes in ``src/dlbench`` share a name, so that a class's name finds it:
in a traceback, a type error, a search of the source. The source is parsed, never
imported (the frameworks' model modules need their frameworks)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "dlbench"


def class_names(source: str) -> list[str]:
    """The name of every class defined in ``source``, nested ones included."""
    return [node.name for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.ClassDef)]


def shared_names(modules: dict[str, str]) -> dict[str, list[str]]:
    """Each class name defined more than once among ``modules`` (path: source), with
    where: each module once per definition."""
    where: dict[str, list[str]] = defaultdict(list)
    for path, source in modules.items():
        for name in class_names(source):
            where[name].append(path)
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_the_check_finds_a_shared_name() -> None:
    modules = {"a.py": "class Series:\n    class Point: ...\n",
               "b.py": "def f():\n    class Series: ...\n",
               "c.py": "class Point2: ...\nSeries = 1\n"}
    assert class_names(modules["a.py"]) == ["Series", "Point"]
    assert shared_names(modules) == {"Series": ["a.py", "b.py"]}
    assert shared_names({"a.py": "class A: ...\nclass A: ...\n"}) == {"A": ["a.py", "a.py"]}
    assert shared_names({"c.py": modules["c.py"]}) == {}


def test_no_two_classes_in_dlbench_share_a_name() -> None:
    modules = {str(path.relative_to(SRC)): path.read_text()
               for path in sorted(SRC.rglob("*.py"))}
    assert len(modules) > 100  # the source was found
    assert shared_names(modules) == {}
