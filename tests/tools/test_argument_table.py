"""#28: every tool, canonical or legacy, refuses what its advertised schema refuses.

A table over the registry: for each tool, an argument it does not have, each argument with a
value of the wrong type, each required argument left out, each bounded number out of range and
each text argument blank. Every such call is a tool error that names the argument, quotes a
correct call, and leaves every file of the agent as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from markus_memory import AgentMemory
from markus_memory.tools import REGISTRY, ToolDefinition

from .conftest import call, files_digest

WRONG_TYPE = {"string": 12345, "integer": "many", "number": "many", "boolean": "yes", "array": 7}


def _wrong(spec: dict[str, Any]) -> Any:
    """A value of a type ``spec`` does not allow."""
    kinds = spec.get("type")
    if kinds is None:  # oneOf/anyOf: a number fits none of the registry's alternatives
        return 12345
    return WRONG_TYPE[kinds]


def _cases(tool: ToolDefinition) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(what, arguments, the words the error must hold) for ``tool``."""
    example = dict(tool.example)
    properties: dict[str, Any] = dict(tool.parameters["properties"])
    yield "unknown", {**example, "colour": "blue"}, f'{tool.name} has no argument "colour"'
    for name, spec in properties.items():
        yield f"type-{name}", {**example, name: _wrong(spec)}, f'"{name}" must be'
        if "minimum" in spec:
            yield f"low-{name}", {**example, name: spec["minimum"] - 1}, f'"{name}" must be at'
        if "maximum" in spec:
            yield f"high-{name}", {**example, name: spec["maximum"] + 1}, f'"{name}" must be at'
        if spec.get("pattern") == r"\S":
            yield f"blank-{name}", {**example, name: " \n"}, f'"{name}" must not be blank'
    for name in tool.parameters.get("required", ()):
        left = {k: v for k, v in example.items() if k != name}
        yield f"missing-{name}", left, f'"{name}" is required'


TABLE = [
    pytest.param(tool.name, args, words, id=f"{tool.name}-{what}")
    for tool in REGISTRY
    for what, args, words in _cases(tool)
]


def test_the_table_covers_every_tool_and_every_argument() -> None:
    covered = {(p.values[0], key) for p in TABLE for key in p.values[1]}  # type: ignore[index]
    for tool in REGISTRY:
        assert tool.parameters["additionalProperties"] is False, tool.name
        for name in tool.parameters["properties"]:
            assert (tool.name, name) in covered, (tool.name, name)
    assert {p.values[0] for p in TABLE} == set(REGISTRY.names())


@pytest.mark.parametrize(("name", "args", "words"), TABLE)
def test_a_call_its_schema_refuses_is_a_tool_error_and_writes_nothing(
    memory: AgentMemory, name: str, args: dict[str, Any], words: str
) -> None:
    memory.knowledge.save_observation("keep me", tags=["temp"])
    memory.knowledge.update_section("procedures", "step 1")
    memory.notebook.upsert("current-task", "ship it")
    memory.state.update("deploy-freeze", "on")
    tool = REGISTRY.get(name)
    assert tool is not None
    before = files_digest(memory.directory)
    result = call(memory, name, args)
    message = str(result.get(tool.error_key))
    assert result["status"] == "error" and result["ok"] is False, (args, result)
    assert words in message, (words, message)
    correct = json.dumps(dict(tool.example), ensure_ascii=False, separators=(",", ":"))
    assert f"A correct call: {name} {correct}" in message
    assert files_digest(memory.directory) == before


@pytest.mark.parametrize("tool", list(REGISTRY), ids=lambda t: t.name)
def test_each_example_call_itself_is_accepted(memory: AgentMemory, tool: ToolDefinition) -> None:
    """The table's calls differ from a correct one in exactly the one way they name."""
    memory.knowledge.update_section("procedures", "step 1")
    result = call(memory, tool.name, dict(tool.example))
    assert "must be" not in json.dumps(result) and "is required" not in json.dumps(result)
