"""The import rule, checked on the source: which dlbench package may import which.

Every module under ``src/dlbench`` is parsed (never imported) and each of its
``dlbench.*`` imports is collected: at module level, inside functions (lazy imports,
which count as much as any other) and under ``TYPE_CHECKING``. The layering is written
here as data, :data:`ALLOWED`, and ``docs/design.md`` states the same rule, table for
table (a test compares them). A second check starts a fresh interpreter, imports every
parent-side module and asserts that no deep-learning framework came with it:
``dlbench plan`` must start in a fraction of a second.
"""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "dlbench"
DESIGN = ROOT / "docs" / "design.md"

#: Shared by every layer: the error hierarchy, terminal-safe text, the names of the
#: output formats, the plug-in registry and the version (``dlbench/__init__.py``, the
#: unit called ``dlbench`` here). They import nothing of dlbench.
BASE = frozenset({"dlbench", "errors", "formats", "textsafe", "plugins"})

#: What each unit (a top-level package or module of dlbench) may import besides
#: itself and :data:`BASE`. Worker side, bottom up: config <- results <- measure <-
#: models <- backends <- worker. Parent side: launch, report, suites, cli.
ALLOWED: dict[str, frozenset[str]] = {
    "dlbench": frozenset(),
    "errors": frozenset(),
    "formats": frozenset(),
    "textsafe": frozenset(),
    "plugins": frozenset(),
    "config": frozenset(),
    "results": frozenset({"config"}),
    "measure": frozenset({"config", "results"}),
    "models": frozenset({"config", "results", "measure"}),
    "backends": frozenset({"config", "results", "measure", "models"}),
    "worker": frozenset({"config", "results", "measure", "models", "backends"}),
    # One folder per framework: a declaration (config's level: loaded by the catalog as
    # a string) and what its worker runs (a backend's level).
    "frameworks": frozenset({"config", "results", "measure", "models", "backends"}),
    # measure: the statistics of repeats and parallel copies, and the core split that
    # the worker's replicas use too (pure functions, no framework).
    "launch": frozenset({"config", "results", "measure"}),
    "report": frozenset({"config", "results"}),
    "suites": frozenset(),
    # Never backends, models or worker: they import frameworks. The CLI reaches them
    # only in a child process (the worker, or `dlbench help --frameworks`'s device query).
    "cli": frozenset({"config", "results", "measure", "launch", "report", "suites"}),
    "__main__": frozenset({"cli"}),
    # The public face, for scripts and plug-ins: it names what they need from every
    # package (each imported on first use), and no unit imports it.
    "api": frozenset({"config", "results", "measure", "models", "backends", "worker",
                      "frameworks", "launch", "report", "suites", "cli"}),
}

#: Top-level names of the frameworks a backend drives.
FRAMEWORKS = frozenset({"torch", "jax", "jaxlib", "flax", "optax", "tensorflow", "keras",
                        "onnx", "onnxruntime"})

#: Units that run in the parent process: none may import a framework at module level.
PARENT_SIDE = ("dlbench", "errors", "formats", "textsafe", "plugins", "config", "results",
               "launch", "report", "suites", "cli", "api")


@dataclass(frozen=True)
class Import:
    """One ``import`` statement's target, where it is and how it is reached."""

    module: str  # the importing module, e.g. dlbench.launch.sweep
    target: str  # the imported module, e.g. dlbench.measure.stats
    line: int
    lazy: bool  # inside a function: runs only when the function is called
    typing_only: bool  # under ``if TYPE_CHECKING:``

    def describe(self) -> str:
        """``module:line -> target`` with how it is reached."""
        marks = [m for m, on in (("lazy", self.lazy), ("TYPE_CHECKING", self.typing_only)) if on]
        return f"{self.module}:{self.line} -> {self.target}" + (f" ({', '.join(marks)})"
                                                               if marks else "")


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_package else parts), is_package


def _unit(module: str) -> str:
    """The layer a module belongs to: ``dlbench.launch.sweep`` -> ``launch``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "dlbench"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(path: Path) -> Iterator[Import]:
    """Every import statement in the module at ``path`` (any target), resolved to an
    absolute module name; ``from dlbench import x`` names ``dlbench.x`` when ``x`` is a
    submodule, else ``dlbench``."""
    module, is_package = _module_name(path)
    package = module.split(".") if is_package else module.split(".")[:-1]

    def walk(node: ast.AST, lazy: bool, typing_only: bool) -> Iterator[Import]:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for stmt in node.body:
                yield from walk(stmt, lazy, True)
            for stmt in node.orelse:  # the else branch runs at run time
                yield from walk(stmt, lazy, typing_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(module, alias.name, node.lineno, lazy, typing_only)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                candidate = SRC.parent / Path(*target.split("."), alias.name)
                is_module = (candidate.with_suffix(".py").is_file()
                             or (candidate / "__init__.py").is_file())
                named = f"{target}.{alias.name}" if is_module else target
                yield Import(module, named, node.lineno, lazy, typing_only)
        inner_lazy = lazy or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            yield from walk(child, inner_lazy, typing_only)

    yield from walk(ast.parse(path.read_text(), str(path)), False, False)


@functools.cache
def all_imports() -> list[Import]:
    """The imports of every module of the package (parsed once per test session)."""
    return [imp for path in sorted(SRC.rglob("*.py")) for imp in imports_of(path)]


def dlbench_graph(imports: list[Import]) -> dict[tuple[str, str], list[Import]]:
    """Unit-to-unit edges (self-edges left out), each with the imports that make it."""
    graph: dict[tuple[str, str], list[Import]] = {}
    for imp in imports:
        if imp.target == "dlbench" or imp.target.startswith("dlbench."):
            edge = (_unit(imp.module), _unit(imp.target))
            if edge[0] != edge[1]:
                graph.setdefault(edge, []).append(imp)
    return graph


def graph_text(graph: dict[tuple[str, str], list[Import]]) -> str:
    """The measured graph, one edge a line, lazy and typing-only edges marked."""
    lines = []
    for (source, target), found in sorted(graph.items()):
        marks = sorted({"lazy" for i in found if i.lazy}
                       | {"TYPE_CHECKING" for i in found if i.typing_only}
                       | {"module level" for i in found if not i.lazy and not i.typing_only})
        lines.append(f"{source:9} -> {target:9} {', '.join(marks)}  ({len(found)} imports)")
    return "\n".join(lines)


# -- the rule ---------------------------------------------------------------------


def test_every_unit_is_in_the_rule() -> None:
    units = {_unit(_module_name(path)[0]) for path in SRC.rglob("*.py")}
    assert units == set(ALLOWED), "a new top-level package needs its line in ALLOWED"


def layering_violations(imports: list[Import]) -> list[str]:
    """The imports of ``imports`` that go against :data:`ALLOWED`, described."""
    graph = dlbench_graph(imports)
    return [imp.describe() for (source, target), found in sorted(graph.items())
            if target not in ALLOWED[source] | BASE for imp in found]


def framework_imports(imports: list[Import]) -> list[str]:
    """Module-level framework imports on the parent side, described."""
    return [imp.describe() for imp in imports
            if _unit(imp.module) in PARENT_SIDE and not imp.lazy and not imp.typing_only
            and imp.target.split(".")[0] in FRAMEWORKS]


def test_imports_follow_the_layering() -> None:
    print(graph_text(dlbench_graph(all_imports())))  # the measured graph, for `pytest -s`
    wrong = layering_violations(all_imports())
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def test_nothing_in_the_package_imports_the_public_api() -> None:
    assert not [unit for unit, allowed in ALLOWED.items() if "api" in allowed]
    users = [imp.describe() for imp in all_imports()
             if imp.target == "dlbench.api" and _unit(imp.module) != "api"]
    assert not users, "dlbench.api is for scripts and plug-ins:\n" + "\n".join(users)


def test_the_rule_has_no_cycles() -> None:
    # Every unit is below its users: a depth-first walk never meets a unit on its path.
    def visit(unit: str, path: tuple[str, ...]) -> None:
        assert unit not in path, " -> ".join((*path, unit))
        for below in ALLOWED[unit] | (BASE - {unit} if unit not in BASE else set()):
            visit(below, (*path, unit))

    for unit in ALLOWED:
        visit(unit, ())


def test_the_rule_is_not_looser_than_the_code_needs() -> None:
    # The rule names the edges the design allows; each allowed parent-side edge that
    # is an exception to "parent uses config and results" must be in use, or it goes.
    graph = dlbench_graph(all_imports())
    for source, target in (("launch", "measure"), ("cli", "measure"), ("report", "config")):
        assert (source, target) in graph, f"{source} -> {target} is unused: drop it from ALLOWED"


def test_worker_side_never_imports_the_parent_side() -> None:
    parent_only = {"launch", "report", "suites", "cli", "__main__", "api"}
    for unit in ("config", "results", "measure", "models", "backends", "worker"):
        assert not ALLOWED[unit] & parent_only, unit


def test_design_page_states_the_same_rule() -> None:
    # The section "The import rule" of docs/design.md has one table row per unit:
    # | `unit` | `a`, `b` | why |   (— when it imports nothing of dlbench)
    text = DESIGN.read_text()
    section = text[text.index("## The import rule"):]
    section = section[: section.find("\n## ", 1) % (len(section) + 1)]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", section, re.MULTILINE)
    stated = {unit: frozenset(re.findall(r"`([\w_]+)`", allowed)) for unit, allowed in rows}
    assert stated == ALLOWED


# -- the analysis itself, on known input ------------------------------------------


def test_imports_of_finds_every_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "dlbench" / "launch"
    package.mkdir(parents=True)
    (tmp_path / "dlbench" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("")
    source = package / "thing.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import dlbench.config.registry\n"
        "from . import helper\n"
        "from ..results import store\n"
        "from dlbench import __version__\n"
        "if TYPE_CHECKING:\n"
        "    from dlbench.report import html\n"
        "else:\n"
        "    import dlbench.errors\n"
        "def f() -> None:\n"
        "    import torch\n"
        "    from dlbench.measure.stats import mean\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "SRC", tmp_path / "dlbench")
    found = {(i.target, i.lazy, i.typing_only) for i in imports_of(source)}
    assert found == {
        ("typing", False, False),
        ("dlbench.config.registry", False, False),
        ("dlbench.launch.helper", False, False),
        ("dlbench.results", False, False),  # store is not a file here: the package
        ("dlbench", False, False),
        ("dlbench.report", False, True),
        ("dlbench.errors", False, False),
        ("torch", True, False),
        ("dlbench.measure.stats", True, False),
    }
    graph = dlbench_graph(list(imports_of(source)))
    assert set(graph) == {("launch", "config"), ("launch", "results"), ("launch", "dlbench"),
                          ("launch", "report"), ("launch", "errors"), ("launch", "measure")}
    assert "lazy" in graph_text(graph) and "TYPE_CHECKING" in graph_text(graph)


def test_the_checks_catch_what_they_are_for() -> None:
    def imp(module: str, target: str, lazy: bool = False, typing_only: bool = False) -> Import:
        return Import(module, target, 1, lazy, typing_only)

    imports = [
        imp("dlbench.worker.experiment", "dlbench.launch.sweep"),  # worker -> parent
        imp("dlbench.config.catalog", "dlbench.backends.pytorch", lazy=True),  # upward, lazy
        imp("dlbench.report.html.page", "dlbench.measure.stats", typing_only=True),
        imp("dlbench.launch.sweep", "dlbench.measure.stats"),  # the allowed exception
        imp("dlbench.results.store", "dlbench.errors"),  # the shared base
        imp("dlbench.models.jax", "dlbench.models.pytorch"),  # within a package
        imp("dlbench.cli.main", "torch"),  # a framework at module level
        imp("dlbench.cli.commands.host", "torch", lazy=True),  # only when run
        imp("dlbench.launch.copies.copies", "tensorflow.keras", typing_only=True),
        imp("dlbench.backends.pytorch", "torch"),  # the worker side may
    ]
    assert layering_violations(imports) == [
        "dlbench.config.catalog:1 -> dlbench.backends.pytorch (lazy)",
        "dlbench.report.html.page:1 -> dlbench.measure.stats (TYPE_CHECKING)",
        "dlbench.worker.experiment:1 -> dlbench.launch.sweep",
    ]
    assert framework_imports(imports) == ["dlbench.cli.main:1 -> torch"]


# -- no framework on the parent side ----------------------------------------------


def test_parent_side_never_imports_a_framework_at_module_level() -> None:
    assert not framework_imports(all_imports())


def test_importing_the_parent_side_loads_no_framework() -> None:
    # A fresh interpreter, as `dlbench plan` starts: the CLI, then every parent-side
    # module (what any command may import), and no framework may be loaded after it.
    modules = sorted(_module_name(path)[0] for path in SRC.rglob("*.py")
                     if _unit(_module_name(path)[0]) in PARENT_SIDE)
    code = ("import json, sys\n"
            "import dlbench.cli.main\n"
            "after_cli = sorted(sys.modules)\n"
            f"for name in {modules!r}:\n"
            "    __import__(name)\n"
            "print(json.dumps([after_cli, sorted(sys.modules)]))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    after_cli, after_all = json.loads(proc.stdout)
    loaded = {name.split(".")[0] for name in after_all}
    assert not loaded & FRAMEWORKS
    assert "dlbench.launch.sweep" in after_all and "dlbench.report.html.page" in after_all
    # The CLI's own start-up leaves reports (matplotlib, scipy) for the commands that
    # need them.
    assert not {name.split(".")[0] for name in after_cli} & {"matplotlib", "scipy"}
