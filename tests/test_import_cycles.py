"""No import cycles among hookgate's modules.

Every ``import`` counts: at module level, inside functions (a lazy import is still a
dependency) and under ``TYPE_CHECKING`` (a type-only import still ties two modules together).
A package's ``__init__`` running before its submodules is not counted as an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hookgate

SRC = Path(hookgate.__file__).parent

#: Cycles known and not broken yet, each as the sorted names of its strongly connected
#: modules. The test fails when one of them is gone, so the list only shrinks.
KNOWN_CYCLES: list[list[str]] = []


def _modules() -> dict[str, Path]:
    modules: dict[str, Path] = {}
    for path in SRC.rglob("*.py"):
        parts = ["hookgate", *path.relative_to(SRC).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported(
    tree: ast.AST, module: str, is_package: bool, modules: dict[str, Path]
) -> Iterator[str]:
    """The modules an import statement anywhere in ``tree`` loads by name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                submodule = f"{prefix}.{alias.name}"
                yield submodule if submodule in modules else prefix


def import_graph() -> dict[str, set[str]]:
    """Each hookgate module and the hookgate modules it imports anywhere in its text."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target in _imported(tree, name, path.name == "__init__.py", modules):
            if target in modules and target != name:
                edges.add(target)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_new_import_cycles() -> None:
    """No two modules import each other, directly or around a loop, beyond the known ones."""
    found = cycles(import_graph())
    assert [c for c in found if c not in KNOWN_CYCLES] == []


def test_known_cycles_still_exist() -> None:
    """A known cycle that was broken must leave the list (strict, like xfail_strict)."""
    found = cycles(import_graph())
    assert [c for c in KNOWN_CYCLES if c not in found] == []


def test_the_check_sees_a_cycle() -> None:
    """The graph check itself finds a loop through three modules and one through a lazy
    import."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from hookgate.engine import Engine\n")
    modules = {"hookgate.engine": SRC / "engine.py"}
    assert set(_imported(tree, "hookgate.x", False, modules)) == {"hookgate.engine"}
