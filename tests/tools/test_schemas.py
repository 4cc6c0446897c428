"""Tool schemas: pinned in all three formats, so any change to what the model sees shows in review.

Regenerate the snapshot after an intended change with
``MARKUS_UPDATE_SNAPSHOTS=1 python -m pytest tests/tools/test_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from markus_memory.tools import REGISTRY, SCENARIO_TOOLS, tool_names, tool_schemas

SNAPSHOT = Path(__file__).parent.parent / "snapshots" / "tool_schemas.json"
FORMATS = ("openai", "anthropic", "mcp")


def _current() -> str:
    data = {fmt: tool_schemas(fmt, legacy=True) for fmt in FORMATS}
    data["scenarios"] = {k: list(v) for k, v in SCENARIO_TOOLS.items()}
    return json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def test_schemas_match_the_snapshot() -> None:
    current = _current()
    if os.environ.get("MARKUS_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == current, (
        "tool schemas changed; if intended, regenerate with MARKUS_UPDATE_SNAPSHOTS=1"
    )


def test_every_tool_of_the_spec_is_registered() -> None:
    assert set(REGISTRY.names()) == {
        "memory_save",
        "memory_search",
        "memory_update",
        "update_notebook",
        "clear_notebook",
        "state_update",
        "state_clear",
        "recall_activity",
        "recall_conversation",
        "memory_list",
        "memory_delete",
        "memory_update_longterm",
        "update_working_memory",
        "clear_working_memory",
    }


@pytest.mark.parametrize("fmt", FORMATS)
def test_formats_carry_the_same_definition(fmt: str) -> None:
    for tool, schema in zip(REGISTRY, tool_schemas(fmt, legacy=True), strict=True):
        if fmt == "openai":
            assert schema["type"] == "function"
            body = schema["function"]
            params = body["parameters"]
        else:
            body = schema
            params = schema["input_schema" if fmt == "anthropic" else "inputSchema"]
        assert body["name"] == tool.name
        assert body["description"] == tool.description
        assert params["type"] == "object"
        assert set(params.get("required", [])) <= set(params["properties"])


def test_memory_save_schema_is_the_markus_one() -> None:
    params = tool_schemas("openai", names=["memory_save"])[0]["function"]["parameters"]
    assert params["required"] == ["content"]
    assert params["additionalProperties"] is False
    assert params["properties"]["type"]["enum"] == ["fact", "note", "insight"]
    assert params["properties"]["tags"]["oneOf"] == [
        {"type": "string"},
        {"type": "array", "items": {"type": "string"}},
    ]


def test_memory_update_schema_is_the_markus_one() -> None:
    params = tool_schemas("mcp", names=["memory_update"])[0]["inputSchema"]
    assert params["required"] == ["section"]
    assert params["properties"]["mode"]["enum"] == ["replace", "patch", "append", "delete"]
    assert params["properties"]["ids"] == {
        "type": "array",
        "items": {"type": "string", "pattern": r"\S"},
        "minItems": 1,
        "maxItems": 20,
        "description": params["properties"]["ids"]["description"],
    }


def test_recall_activity_schema_has_intuitive_optional_arguments() -> None:
    schema = tool_schemas("anthropic", names=["recall_activity"])[0]
    assert "required" not in schema["input_schema"]
    assert schema["input_schema"]["properties"]["operation"]["enum"] == ["list", "get", "search"]
    assert "activity_id" in schema["description"] and "query" in schema["description"]


def test_schemas_are_copies_the_caller_may_change() -> None:
    first = tool_schemas("openai")
    first[0]["function"]["parameters"]["properties"].clear()
    assert tool_schemas("openai")[0]["function"]["parameters"]["properties"]


def test_scenario_sets() -> None:
    assert tool_names("dream") == ()
    assert tool_names("memory_flush") == ("memory_save", "update_notebook")
    assert set(tool_names("reflex")) == {"memory_save", "memory_search", "update_notebook"}
    assert "memory_update" not in tool_names("reflex")
    assert set(tool_names("triage")) == {"recall_activity", "memory_search"}
    assert {"memory_update", "memory_update_longterm"} <= set(tool_names("distillation"))
    assert "clear_working_memory" in tool_names("deliberation")
    for scenario in SCENARIO_TOOLS:
        assert all(REGISTRY.get(n) for n in tool_names(scenario))
    assert not any(REGISTRY.get(n).legacy for n in tool_names())
    with pytest.raises(ValueError, match="unknown scenario"):
        tool_names("nap")


def test_reflex_tool_definitions_fit_the_reflex_budget() -> None:
    """A-budget-contract-reflex: tool defs ≤ 3000 tokens at ceil(len(json)/3.5)."""
    blob = json.dumps(tool_schemas("openai", scenario="reflex"), separators=(",", ":"))
    assert -(-len(blob) // 3.5) <= 3000


def test_mcp_schemas_validate_against_the_mcp_sdk() -> None:
    types = pytest.importorskip("mcp.types")
    for schema in tool_schemas("mcp", legacy=True):
        tool = types.Tool.model_validate(schema)
        assert tool.name == schema["name"] and tool.input_schema == schema["inputSchema"]
