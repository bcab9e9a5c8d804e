"""The import graph of relviz stays a DAG, and the bi-adjacency kernels stay behind the registry.

The graph is read from the source with :mod:`ast` (nothing is imported): one node per module of
``relviz/`` and one edge per ``import relviz.x`` / ``from relviz.x import y`` / relative import,
wherever it appears (module level, inside functions, under ``if TYPE_CHECKING:``). ``from
relviz.a import b`` is an edge to ``relviz.a.b`` when that is a module, else to ``relviz.a``. The
implicit import of a parent package (``import relviz.a.b`` runs ``relviz/a/__init__.py``) is not an
edge: a package may import its own submodules.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "relviz"
BIADJACENCY = "relviz.relational.biadjacency"
#: The one module outside the bi-adjacency package that may import it: the method registry.
REGISTRY = "relviz.relational"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in p.parts}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The relviz module that ``name`` (a dotted import target) refers to, or ``None``."""
    if name != "relviz" and not name.startswith("relviz."):
        return None
    while name not in modules and "." in name:
        name = name.rpartition(".")[0]
    return name if name in modules else None


def import_graph() -> dict[str, dict[str, int]]:
    """``{module: {imported relviz module: line of the first such import}}``."""
    modules = _modules()
    graph: dict[str, dict[str, int]] = {m: {} for m in modules}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            for target in targets:
                dep = _resolve(target, modules)
                if dep is not None and dep != mod:
                    graph[mod].setdefault(dep, node.lineno)
    return graph


def _find_cycle(graph: dict[str, dict[str, int]]) -> list[str] | None:
    """One cycle ``[a, b, …, a]`` of the graph, or ``None`` (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(graph):
        if state.get(root):
            continue
        path = [root]
        stack = [iter(sorted(graph[root]))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_the_graph_is_read() -> None:
    graph = import_graph()
    assert "relviz.synthesizer" in graph and "relviz.plan" in graph["relviz.synthesizer"]
    assert "relviz.relational.degree" in graph["relviz.relational"]  # inside a function


def test_the_cycle_finder_finds_cycles() -> None:
    assert _find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1, "b": 1}}) is None


def test_no_import_cycle_between_relviz_modules() -> None:
    graph = import_graph()
    cycle = _find_cycle(graph)
    if cycle is not None:
        steps = [f"{a} imports {b} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
        raise AssertionError("import cycle between relviz modules:\n  " + "\n  ".join(steps))


def test_only_the_registry_imports_the_biadjacency_package() -> None:
    graph = import_graph()
    bad = [f"{mod} imports {dep} (line {line})"
           for mod, deps in graph.items() for dep, line in deps.items()
           if (dep == BIADJACENCY or dep.startswith(BIADJACENCY + "."))
           and mod != REGISTRY and mod != BIADJACENCY and not mod.startswith(BIADJACENCY + ".")]
    assert not bad, ("only relviz.relational (the method registry) may import the bi-adjacency "
                     "package; shared code belongs in relviz.marginals or relviz.privacy:\n  "
                     + "\n  ".join(bad))
