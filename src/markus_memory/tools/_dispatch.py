"""dispatch: run one tool call and always answer with a JSON string, never an exception."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import MarkusMemoryError
from ._registry import Registry, ToolDefinition
from ._results import ToolCallError, error_result, to_json
from ._validation import example, type_name

if TYPE_CHECKING:
    from ..memory import AgentMemory

log = logging.getLogger("markus_memory.tools")


def _arguments(tool: ToolDefinition, arguments: object) -> Mapping[str, Any]:
    """The call's arguments as an object; JSON text is decoded, anything else is refused."""
    call = example(tool.name, tool.example)
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes, bytearray)):
        text = arguments.decode("utf-8", "replace") if not isinstance(arguments, str) else arguments
        if not text.strip():
            return {}
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolCallError(
                f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}). "
                f"Send one JSON object, e.g. {call}"
            ) from None
    if isinstance(arguments, (list, tuple)):
        raise ToolCallError(
            f"{tool.name} expects a JSON object, not an array. Make one call per item, e.g. {call}"
        )
    if not isinstance(arguments, Mapping):
        raise ToolCallError(
            f"{tool.name} expects a JSON object of named arguments, got {type_name(arguments)}. "
            f"Call it like {call}"
        )
    if not _encodable(arguments):
        raise ToolCallError(
            "the arguments contain invalid Unicode (a lone surrogate such as \\ud800); "
            f"send plain UTF-8 text. Call it like {call}"
        )
    return arguments


def _encodable(value: object) -> bool:
    """True when every string inside ``value`` can be written as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, Mapping):
        return all(_encodable(k) and _encodable(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_encodable(v) for v in value)
    return True


def run(registry: Registry, memory: AgentMemory, name: object, arguments: object) -> str:
    """Run ``name`` with ``arguments`` against ``memory``; the result is always a JSON string."""
    tool = registry.get(name) if isinstance(name, str) else None
    if tool is None:
        known = ", ".join(registry.names())
        message = f"unknown tool {name!r}. The memory tools are: {known}."
        return to_json(error_result(message, None))
    try:
        result = tool.handler(memory, _arguments(tool, arguments))
    except ToolCallError as exc:
        extra = dict(exc.extra)
        if tool.error_key == "error":
            extra.setdefault("reason", exc.message)
        return to_json(error_result(exc.message, tool.store, message_key=tool.error_key, **extra))
    except MarkusMemoryError as exc:
        return to_json(error_result(str(exc), tool.store, message_key=tool.error_key))
    except Exception as exc:  # the model must never see a traceback; the host sees the log
        log.exception("memory tool %s failed", tool.name)
        message = f"{tool.name} failed: {type(exc).__name__}: {exc}"
        return to_json(error_result(message, tool.store, message_key=tool.error_key))
    result.setdefault("store", tool.store)
    return to_json(result)
