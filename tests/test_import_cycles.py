"""No import cycle of three or more modules anywhere in the package (issue #26: storage had one of
twelve files, dodged by function-local imports). grimp (import-linter's graph) sees every import,
function-local and ``TYPE_CHECKING`` ones included, so a cycle cannot hide inside a function."""

from __future__ import annotations

import sys

import grimp


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's groups of modules that import each other, directly or through others."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while (member := stack.pop()) != node:
                on_stack.discard(member)
                group.add(member)
            on_stack.discard(node)
            groups.append(group | {node})

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in graph:
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return groups


def test_finds_a_cycle_of_three() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [g for g in strongly_connected(graph) if len(g) > 1] == [{"a", "b", "c"}]


def test_no_cycle_of_three_or_more_modules() -> None:
    built = grimp.build_graph("markus_memory", cache_dir=None)
    graph = {m: set(built.find_modules_directly_imported_by(m)) for m in built.modules}
    cycles = [sorted(g) for g in strongly_connected(graph) if len(g) >= 3]
    assert cycles == []
