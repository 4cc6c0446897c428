"""#12 item 10: every call is checked against the very schema the model was given.

Nothing a schema refuses reaches a handler: the error says what was wrong and quotes a correct
call, and no byte on disk changes.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory import AgentMemory, open_agent
from markus_memory.tools import REGISTRY, dispatch, is_tool_error_result, tool_schemas

from .conftest import call, files_digest


def _message(result: dict[str, Any]) -> str:
    return str(result.get("error") or result.get("message"))


REFUSED = [
    # (tool, arguments, words the error must contain)
    ("memory_save", {"content": "x", "type": "opinion"}, ['"type"', "opinion", "fact, note"]),
    ("memory_save", {"content": "x", "summary": "y"}, ['"summary"', "content, type, tags"]),
    ("memory_save", {"content": "x", "severity": "note"}, ['"severity"']),
    ("memory_save", {"content": ["a", "b"]}, ['"content"', "string", "array"]),
    ("memory_save", {"content": "x", "tags": [1, 2]}, ['"tags[0]"', "string"]),
    ("memory_save", {"content": "x", "tags": {"a": 1}}, ['"tags"', "string or an array"]),
    ("memory_search", {"query": "x", "limit": "abc"}, ['"limit"', "number", '"abc"']),
    ("memory_search", {"type": "opinion"}, ['"type"', "task_result"]),
    ("recall_activity", {"operation": "bogus"}, ['"operation"', "list, get, search"]),
    ("recall_activity", {"op": "forget"}, ['"op"', "list, get, search"]),
    ("recall_activity", {"limit": "abc"}, ['"limit"', "number"]),
    ("recall_activity", {"query": 5}, ['"query"', "string"]),
    ("recall_conversation", {"query": "x", "limit": "ten"}, ['"limit"', "number"]),
    ("memory_update", {"mode": "delete", "section": "s", "ids": "abc"}, ['"ids"', "array"]),
    ("memory_update", {"section": "s", "content": 5}, ['"content"', "string", "number"]),
    ("memory_update", {"section": "s", "content": "x", "mode": "wipe"}, ['"mode"', "patch"]),
    ("update_notebook", {"key": "k", "content": 7}, ['"content"', "string", "number"]),
    ("update_notebook", {"key": ["k"], "content": "c"}, ['"key"', "string", "array"]),
    ("clear_notebook", {"all": "yes"}, ['"all"', "true or false"]),
    ("state_update", {"key": "k", "content": ["a"]}, ['"content"', "string"]),
    ("state_clear", {"key": 3}, ['"key"', "string"]),
    # the legacy aliases are held to their own schemas as well
    ("memory_list", {"type": "opinion"}, ['"type"']),
    ("memory_list", {"limit": "many"}, ['"limit"']),
    ("memory_delete", {"ids": "abc"}, ['"ids"', "array"]),
    ("memory_delete", {"ids": [1]}, ['"ids[0]"', "string"]),
    ("memory_update_longterm", {"section": "s", "content": "x", "mode": "wipe"}, ['"mode"']),
    ("update_working_memory", {"key": "k", "content": {"a": 1}}, ['"content"', "string"]),
    ("clear_working_memory", {"key": 5}, ['"key"', "string"]),
]


@pytest.mark.parametrize(("name", "args", "words"), REFUSED)
def test_item10_tools_enforce_their_advertised_schemas(
    memory: AgentMemory, name: str, args: dict[str, Any], words: list[str]
) -> None:
    call(memory, "memory_save", {"content": "keep me", "tags": ["keep"]})
    call(memory, "update_notebook", {"key": "plan", "content": "ship it"})
    call(memory, "state_update", {"key": "k", "content": "on"})
    memory.knowledge.update_section("s", "body")
    tool = REGISTRY.get(name)
    assert tool is not None
    before = files_digest(memory.directory)
    result = call(memory, name, args)
    message = _message(result)
    assert result["status"] == "error" and result["ok"] is False, result
    assert result["store"] == tool.store
    for word in words:
        assert word in message, (word, message)
    example = json.dumps(dict(tool.example), ensure_ascii=False, separators=(",", ":"))
    assert f"{name} {example}" in message
    assert files_digest(memory.directory) == before


def test_item10_every_example_call_satisfies_its_own_schema() -> None:
    for tool in REGISTRY:
        for fmt, key in (("openai", None), ("anthropic", "input_schema"), ("mcp", "inputSchema")):
            (schema,) = tool_schemas(fmt, names=[tool.name])
            params = schema["function"]["parameters"] if key is None else schema[key]
            jsonschema.Draft202012Validator.check_schema(params)
            jsonschema.validate(dict(tool.example), params)


def test_item10_null_counts_as_left_out(memory: AgentMemory) -> None:
    """Hosts often send null for an optional argument; it means the same as leaving it out."""
    saved = call(memory, "memory_save", {"content": "x", "type": None, "tags": None})
    assert saved["status"] == "saved" and saved["type"] == "fact"
    assert call(memory, "memory_search", {"query": None, "limit": None})["count"] == 1


_leaf = st.none() | st.booleans() | st.integers(-3, 60) | st.floats(-2, 60) | st.text(max_size=6)
_value = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner)
)


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    tool = REGISTRY.get(draw(st.sampled_from(REGISTRY.names())))
    assert tool is not None
    props = dict(tool.parameters.get("properties", {}))
    keys = st.sampled_from([*props, "extra", "op"])
    args = draw(st.dictionaries(keys, _value | st.sampled_from(_samples(props)), max_size=4))
    return tool.name, args


def _samples(props: dict[str, Any]) -> list[Any]:
    values: list[Any] = ["x", "ids", ["obs_1"], 3, True]
    for spec in props.values():
        values.extend(spec.get("enum", []))
    return values


def test_item10_schema_and_dispatch_cannot_drift(tmp_path) -> None:
    """Whatever the advertised schema refuses, dispatch refuses, and writes nothing."""
    with open_agent("agt_drift", home=tmp_path / "drift") as memory:
        memory.knowledge.update_section("procedures", "step 1")

        @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(_calls())
        def run(call_: tuple[str, dict[str, Any]]) -> None:
            name, args = call_
            (schema,) = tool_schemas("mcp", names=[name])
            present = {k: v for k, v in args.items() if v is not None}
            valid = jsonschema.Draft202012Validator(schema["inputSchema"]).is_valid(present)
            before = files_digest(memory.directory)
            text = dispatch(memory, name, args)
            if not valid:
                assert is_tool_error_result(text), (name, args, text)
                assert files_digest(memory.directory) == before

        run()
