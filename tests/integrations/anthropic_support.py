"""What the Anthropic memory tool tests share: the model's view of a command, API replies."""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools import ToolError


def run(tool: Any, **command: Any) -> str:
    """The tool result the model would see: the text, or ``ERROR: <message>``."""
    try:
        return str(tool.call(command))
    except ToolError as exc:
        return f"ERROR: {exc.content}"


def edit(tool: Any, name: str, old: str, new: str) -> str:
    """``str_replace`` of ``old`` by ``new`` in ``/memories/<name>``, as the model sees it."""
    return run(tool, command="str_replace", path=f"/memories/{name}", old_str=old, new_str=new)


def replies(*memory_calls: dict[str, Any]) -> list[dict[str, Any]]:
    """The Messages API answers of a model that calls the memory tool once with each of
    ``memory_calls`` (all in one turn), then says ``done``."""
    usage = {"input_tokens": 1, "output_tokens": 1}
    uses = [
        {"type": "tool_use", "id": f"tu_{n}", "name": "memory", "input": call}
        for n, call in enumerate(memory_calls, 1)
    ]
    return [
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        for n, (content, stop) in enumerate(
            [(uses, "tool_use"), ([{"type": "text", "text": "done"}], "end_turn")], 1
        )
    ]


def insert(tool: Any, name: str, line: int, text: str) -> str:
    """``insert`` of ``text`` at ``line`` of ``/memories/<name>``, as the model sees it."""
    return run(tool, command="insert", path=f"/memories/{name}", insert_line=line, insert_text=text)
