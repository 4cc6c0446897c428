"""MCP tool annotations and structured output, seen through the SDK's own client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from mcp import Client  # noqa: E402

from markus_memory import open_agent  # noqa: E402
from markus_memory.mcp_server import TOOL_HINTS, build_server  # noqa: E402
from markus_memory.tools import REGISTRY  # noqa: E402


def test_every_registry_tool_has_hints() -> None:
    assert set(TOOL_HINTS) == set(REGISTRY.names())
    for name, hints in TOOL_HINTS.items():
        assert not (hints.read_only and hints.destructive), name


def test_tools_carry_annotations_and_results_carry_structured_content(tmp_path: Path) -> None:
    with open_agent("alice", tmp_path) as mem:
        server = build_server(mem, legacy_tools=True)

        async def main() -> tuple[Any, Any, Any]:
            async with Client(server) as client:
                listed = await client.list_tools()
                saved = await client.call_tool("memory_save", {"content": "Ana likes tea"})
                refused = await client.call_tool("update_notebook", {"key": "k"})
                return listed, saved, refused

        listed, saved, refused = anyio.run(main)
    by_name = {t.name: t for t in listed.tools}
    assert set(by_name) == set(REGISTRY.names())
    search = by_name["memory_search"].annotations
    assert search.read_only_hint is True and search.destructive_hint is False
    assert by_name["memory_save"].annotations.idempotent_hint is False
    assert by_name["state_clear"].annotations.destructive_hint is True
    assert all(t.annotations.open_world_hint is False for t in listed.tools)
    assert all(
        t.output_schema == {"type": "object", "additionalProperties": True} for t in listed.tools
    )
    assert saved.structured_content == json.loads(saved.content[0].text)
    assert saved.is_error is False
    assert refused.is_error is True and refused.structured_content["ok"] is False
