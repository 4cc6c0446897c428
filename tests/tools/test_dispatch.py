"""dispatch never raises: every bad call becomes a structured error and writes nothing."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory import AgentMemory, open_agent
from markus_memory.tools import REGISTRY, dispatch, is_tool_error_result, tool_names

from .conftest import call, files_digest


def test_unknown_tool_lists_the_known_ones(memory: AgentMemory) -> None:
    result = call(memory, "memory_forget", {})
    assert result["status"] == "error" and "memory_save" in result["error"]
    assert call(memory, None, {})["status"] == "error"  # type: ignore[arg-type]
    named = result["error"].split("The memory tools are: ", 1)[1].rstrip(".").split(", ")
    assert named == list(tool_names())  # the canonical tools: never an alias not offered
    offered = json.loads(dispatch(memory, "x", {}, offered=["memory_save", "memory_list"]))
    assert offered["error"].endswith("The memory tools are: memory_save, memory_list.")


def test_invalid_json_text_is_explained(memory: AgentMemory) -> None:
    result = call(memory, "memory_save", '{"content": "x"')
    assert result["status"] == "error" and "not valid JSON" in result["error"]
    assert 'memory_save {"content":' in result["error"]


@pytest.mark.parametrize("args", [42, "7", "true", "null", 3.5, "[1]"])
def test_non_object_arguments(memory: AgentMemory, args: object) -> None:
    result = call(memory, "update_notebook", args)
    assert result["status"] == "error" and "object" in result["error"]


@pytest.mark.parametrize("name", ["memory_save", "update_notebook", "state_update"])
def test_lone_surrogates_are_refused_before_any_write(memory: AgentMemory, name: str) -> None:
    before = files_digest(memory.directory)
    text = dispatch(memory, name, '{"key": "k", "content": "bad \\ud800 text"}')
    assert json.loads(text)["status"] == "error" and "Unicode" in text
    text.encode("utf-8")
    assert files_digest(memory.directory) == before


def test_json_text_arguments_work_like_dicts(memory: AgentMemory) -> None:
    result = call(memory, "memory_save", json.dumps({"content": "über 東京"}))
    assert result["status"] == "saved"
    text = dispatch(memory, "memory_search", '{"query": "東京"}')
    assert "東京" in text  # ensure_ascii=False


def test_every_error_is_a_tool_error_and_names_the_store(memory: AgentMemory) -> None:
    for tool in REGISTRY:
        text = dispatch(memory, tool.name, [])
        assert is_tool_error_result(text), tool.name
        assert json.loads(text)["store"] == tool.store


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _arguments_for(name: str) -> st.SearchStrategy[object]:
    tool = REGISTRY.get(name)
    assert tool is not None
    keys = list(tool.parameters.get("properties", {})) + ["op", "q", "id", "mode", "severity"]
    as_dict = st.dictionaries(st.sampled_from(keys), _json, max_size=5)
    return st.one_of(
        as_dict,
        as_dict.map(json.dumps),
        _json,
        st.text(max_size=40),
        st.sampled_from([float("nan"), math.inf, b"\xff{", "{", "[]", '{"content":"\\ud800"}']),
    )


@st.composite
def _calls(draw: st.DrawFn) -> tuple[str, object]:
    name = draw(st.sampled_from(REGISTRY.names()))
    return name, draw(_arguments_for(name))


def test_fuzz_dispatch_never_raises_and_errors_never_write(tmp_path) -> None:
    with open_agent("agt_fuzz", home=tmp_path / "fuzz") as memory:
        memory.notebook.upsert("relevant-context", "- a fact", managed="system")
        memory.knowledge.update_section("procedures", "step 1")

        @settings(
            max_examples=300,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(_calls())
        def run(call_: tuple[str, object]) -> None:
            name, args = call_
            before = files_digest(memory.directory)
            text = dispatch(memory, name, args)
            result = json.loads(text)
            assert isinstance(result, dict) and "store" in result
            if is_tool_error_result(text):
                assert result["status"] == "error" and result["ok"] is False
                assert files_digest(memory.directory) == before, (name, args, result)

        run()


@pytest.mark.parametrize("depth", [40, 5_000, 200_000])
def test_item17_deep_json_is_refused_without_a_traceback(
    memory: AgentMemory, depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    """#12 item 17: deep nesting logged a full traceback per call; now a clear refusal."""
    text = '{"content": "x", "tags": ' + "[" * depth + "]" * depth + "}"
    nested: object = "leaf"
    for _ in range(min(depth, 900)):
        nested = [nested]
    before = files_digest(memory.directory)
    with caplog.at_level("DEBUG", logger="markus_memory"):
        for args in (text, {"content": "x", "tags": nested}):
            result = call(memory, "memory_save", args)
            assert result["status"] == "error" and "nested" in result["error"]
            assert "32 levels" in result["error"] and 'memory_save {"content"' in result["error"]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert files_digest(memory.directory) == before


def test_item17_ordinary_nesting_is_fine(memory: AgentMemory) -> None:
    assert call(memory, "memory_save", {"content": "x", "tags": ["a", "b"]})["status"] == "saved"
