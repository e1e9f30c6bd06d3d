"""No import cycle between the modules of dlbench, checked on the source.

Every module under ``src/dlbench`` is parsed (never imported) with the same reader as
the import rule (:func:`tests.unit.test_import_rule.imports_of`), and each ``dlbench.*``
import becomes an edge from module to module. An import counts wherever it stands: at
module level, inside a function (a lazy import, which cuts nothing but the start-up
time) or under ``TYPE_CHECKING`` (the two modules still need each other to be read).
A cycle is a strongly connected component of more than one module; the test names its
modules and the imports that close it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tests.unit.test_import_rule import Import, all_imports

#: Cycles that remain for now, each the set of its modules, and why. A cycle found
#: must lie inside one of these; each goes once its cut lands.
KNOWN_CYCLES: dict[frozenset[str], str] = {
    # The store on a new engine rewrites report/tables; its own cut.
    frozenset({"dlbench.report.tables.columnar", "dlbench.report.tables.reports"}):
        "report tables rewritten with the store",
}


def module_graph(imports: Iterable[Import]) -> dict[str, set[str]]:
    """Module -> the dlbench modules it imports (itself left out)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.module, set())
        ours = imp.target.startswith("dlbench.") or imp.target == "dlbench"
        if ours and imp.target != imp.module:
            graph[imp.module].add(imp.target)
            graph.setdefault(imp.target, set())
    return graph


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm,
    without recursion), each a set; sorted by their smallest name."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return sorted(found, key=min)


def describe(component: frozenset[str], imports: Iterable[Import]) -> str:
    """A cycle's modules and the imports between them, one a line."""
    inside = sorted({imp.describe() for imp in imports
                     if imp.module in component and imp.target in component
                     and imp.module != imp.target})
    return " <-> ".join(sorted(component)) + "\n  " + "\n  ".join(inside)


def unexpected(found: Iterable[frozenset[str]],
               known: Iterable[frozenset[str]]) -> list[frozenset[str]]:
    """The cycles of ``found`` that lie inside none of ``known``."""
    known = list(known)
    return [c for c in found if not any(c <= allowed for allowed in known)]


def test_no_import_cycle_between_modules() -> None:
    imports = all_imports()
    wrong = unexpected(cycles(module_graph(imports)), KNOWN_CYCLES)
    assert not wrong, "import cycles:\n" + "\n".join(describe(c, imports) for c in wrong)


# -- the finder itself, on known graphs -------------------------------------------


def test_cycles_of_known_graphs() -> None:
    # a -> b -> c -> a is one cycle; d -> a joins none; e <-> f another; g alone.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"},
             "g": set()}
    assert cycles(graph) == [frozenset("abc"), frozenset("ef")]
    # A chain and a diamond have none; a self-edge is no cycle between modules.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
    assert cycles({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) == []
    assert cycles({"a": {"a"}}) == []
    # Two cycles joined by one edge stay two; a target never listed as a node counts.
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": {"d"}, "d": {"c"}}) == [
        frozenset("ab"), frozenset("cd")]
    assert cycles({"a": {"x"}}) == []


def test_a_long_chain_needs_no_recursion() -> None:
    chain = {f"m{i}": {f"m{i + 1}"} for i in range(5000)} | {"m5000": {"m0"}}
    (only,) = cycles(chain)
    assert len(only) == 5001


def test_graph_and_exceptions_from_imports() -> None:
    imports = [
        Import("dlbench.a", "dlbench.b", 1, lazy=False, typing_only=False),
        Import("dlbench.b", "dlbench.a", 7, lazy=False, typing_only=True),
        Import("dlbench.b", "json", 2, lazy=False, typing_only=False),  # not ours
        Import("dlbench.c", "dlbench.c", 3, lazy=True, typing_only=False),  # itself
        Import("dlbench.c", "dlbench.d", 4, lazy=True, typing_only=False),
        Import("dlbench.d", "dlbench.c", 5, lazy=False, typing_only=False),
    ]
    graph = module_graph(imports)
    assert graph == {"dlbench.a": {"dlbench.b"}, "dlbench.b": {"dlbench.a"},
                     "dlbench.c": {"dlbench.d"}, "dlbench.d": {"dlbench.c"}}
    found = cycles(graph)
    ab, cd = frozenset({"dlbench.a", "dlbench.b"}), frozenset({"dlbench.c", "dlbench.d"})
    assert found == [ab, cd]
    # A TYPE_CHECKING import and a lazy one close a cycle as any import does.
    assert unexpected(found, []) == [ab, cd]
    assert unexpected(found, [ab]) == [cd]
    assert unexpected(found, [ab | cd | {"dlbench.e"}]) == []
    assert describe(ab, imports) == (
        "dlbench.a <-> dlbench.b\n  dlbench.a:1 -> dlbench.b\n"
        "  dlbench.b:7 -> dlbench.a (TYPE_CHECKING)")
