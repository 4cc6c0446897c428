"""The shape of the package's imports: not a timing, the figures issue #26 asks for.

Run: ``python benchmarks/import_shape.py [src/markus_memory]``. Reads the source with ``ast``
(nothing is imported) and prints, for the whole package and for ``storage``:

- **cycles**: strongly connected groups of modules of three or more, over every import made at
  run time (module level and function-local; ``TYPE_CHECKING`` blocks left out), and the size
  of the largest;
- **floors**: the longest chain of module-level imports inside ``storage`` (a group of
  modules that import each other counts as one floor);
- **upward arrows**: imports inside ``storage`` made in a function that point to a module on
  the same floor or above (what a function-local import does to dodge a cycle);
- **function-local imports**: imports of the package's own modules inside a function, and
  those of other packages (optional extras such as psycopg or numpy, counted apart).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "markus_memory"


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    local: bool
    type_checking: bool
    line: int


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(
    node: ast.AST, local: bool, tc: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, local, tc
            continue
        inner_local = local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        inner_tc = tc or (isinstance(child, ast.If) and _is_type_checking(child))
        yield from _walk(child, inner_local, inner_tc)


def edges(known: dict[str, Path]) -> tuple[list[Edge], int]:
    found: list[Edge] = []
    external_local = 0
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, local, tc in _walk(tree, False, False):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [
                    f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                    for alias in node.names
                ]
            resolved = set()
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                resolved.add(target)
            if "" in resolved and local and not tc:
                external_local += 1
            found.extend(
                Edge(name, t, local, tc, node.lineno) for t in sorted(resolved) if t and t != name
            )
    return found, external_local


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            groups.append(group)

    sys.setrecursionlimit(10_000)
    for node in graph:
        if node not in index:
            visit(node)
    return groups


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    """Each module's floor: 1 + the highest floor it imports (a cycle's modules share one)."""
    group_of: dict[str, int] = {}
    groups = strongly_connected(graph)
    for number, group in enumerate(groups):
        for member in group:
            group_of[member] = number
    level: dict[int, int] = {}
    for number, group in enumerate(groups):  # Tarjan emits groups callee-first
        below = [
            level[group_of[t]] for m in group for t in graph.get(m, ()) if group_of[t] != number
        ]
        level[number] = 1 + max(below, default=0)
    return {m: level[group_of[m]] for m in graph}


def report(root: Path) -> None:
    known = modules(root)
    found, external_local = edges(known)
    runtime: dict[str, set[str]] = {m: set() for m in known}
    for e in found:
        if not e.type_checking:
            runtime[e.source].add(e.target)
    groups = [g for g in strongly_connected(runtime) if len(g) >= 3]
    own_local = [e for e in found if e.local and not e.type_checking]
    storage = f"{PACKAGE}.storage"
    in_storage = {m for m in known if m == storage or m.startswith(storage + ".")}
    top: dict[str, set[str]] = {m: set() for m in in_storage}
    for e in found:
        if (
            e.source in in_storage
            and e.target in in_storage
            and not e.local
            and not e.type_checking
        ):
            top[e.source].add(e.target)
    floor = floors(top)
    upward = [
        e
        for e in own_local
        if e.source in in_storage and e.target in in_storage and floor[e.target] >= floor[e.source]
    ]
    print(f"modules: {len(known)} ({len(in_storage)} in storage)")
    print(f"cycles of >= 3 modules (run-time imports): {len(groups)}", end="")
    print(f", largest {max((len(g) for g in groups), default=0)}")
    for g in groups:
        print("   ", " ".join(sorted(m.removeprefix(PACKAGE + ".") for m in g)))
    print(f"storage floors (longest module-level chain): {max(floor.values(), default=0)}")
    print(f"storage upward arrows (function-local, to a floor >= its own): {len(upward)}")
    statements = len({(e.source, e.line) for e in own_local})
    print(f"function-local imports of the package's modules: {statements} statements", end="")
    print(f" ({len(own_local)} module edges)")
    for e in own_local:
        print(
            "   ", e.source.removeprefix(PACKAGE + "."), "->", e.target.removeprefix(PACKAGE + ".")
        )
    print(f"function-local imports of other packages (optional extras): {external_local}")


if __name__ == "__main__":
    report(Path(sys.argv[1] if len(sys.argv) > 1 else "src/markus_memory").resolve())
