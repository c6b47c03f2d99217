"""The package layering: `intentc`'s subpackages import each other without cycles, and code
generation never imports the runtimes. The graph is built from the sources (every import
statement, including those inside functions), so a lazy import cannot hide a cycle."""
from __future__ import annotations

import ast
from pathlib import Path

import intentc

PACKAGE = Path(intentc.__file__).parent


def _unit(module: str) -> str:
    """The node a module belongs to: `intentc.X` for everything under intentc/X."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "intentc" and len(parts) > 1 else module


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def _imported(path: Path, module: str) -> set[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found.add(target)
            # `from . import x` / `from .. import x` may import the submodule x itself
            found.update(f"{target}.{alias.name}" for alias in node.names if not node.module)
    return {name for name in found if name.startswith("intentc.")}


def import_graph() -> dict[str, set[str]]:
    """{unit: units it imports}, units being intentc's subpackages and top-level modules."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if module == "intentc":
            continue  # the package's lazy `__getattr__` is the public face, not a layer
        unit = _unit(module)
        edges = graph.setdefault(unit, set())
        edges.update(_unit(name) for name in _imported(path, module) if _unit(name) != unit)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_sees_known_imports():
    graph = import_graph()
    assert "intentc.ir" in graph["intentc.verify"]
    assert "intentc.parse" in graph["intentc.driver"]


def test_no_cycle_between_packages():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_codegen_never_imports_the_runtime():
    assert "intentc.runtime" not in import_graph()["intentc.codegen"]


def test_a_cycle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
