"""dispatch: run one tool call and always answer with a JSON string, never an exception.

Before a handler runs, the arguments are decoded, walked once for what JSON cannot mean (deep
nesting, lone surrogates, NaN), and checked against the tool's advertised schema; a null
argument counts as left out. Any refusal names the problem and quotes a correct call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import MarkusMemoryError
from ._paths import hide_host_paths
from ._registry import Registry, ToolDefinition
from ._results import ToolCallError, error_result, to_json
from ._schema import TooDeep, check_plain_json, problems
from ._validation import example, type_name

if TYPE_CHECKING:
    from ..memory import AgentMemory

log = logging.getLogger("markus_memory.tools")


def _refuse_constant(name: str) -> object:
    raise ToolCallError(f"{name} is not a JSON number; send a finite number")


def _decode(tool: ToolDefinition, arguments: object) -> Mapping[str, Any]:
    """The call's arguments as an object; JSON text is decoded, anything else is refused."""
    if arguments is None:
        return {}
    if isinstance(arguments, (str, bytes, bytearray)):
        text = arguments.decode("utf-8", "replace") if not isinstance(arguments, str) else arguments
        if not text.strip():
            return {}
        try:
            arguments = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise ToolCallError(
                f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); "
                "send one JSON object"
            ) from None
        except RecursionError:
            raise TooDeep() from None
    if isinstance(arguments, (list, tuple)):
        raise ToolCallError(
            f"{tool.name} expects a JSON object, not an array; make one call per item"
        )
    if not isinstance(arguments, Mapping):
        raise ToolCallError(
            f"{tool.name} expects a JSON object of named arguments, got {type_name(arguments)}"
        )
    return arguments


def _arguments(tool: ToolDefinition, arguments: object) -> dict[str, Any]:
    """The checked arguments (nulls left out), or a ToolCallError that quotes a correct call."""
    call = example(tool.name, tool.example)
    try:
        decoded = _decode(tool, arguments)
        check_plain_json(decoded)
    except ToolCallError as exc:
        raise ToolCallError(f"{exc.message}. A correct call: {call}", **exc.extra) from None
    given = {key: value for key, value in decoded.items() if value is not None}
    found = problems(tool.name, tool.validator, given)
    if found:
        said = "; ".join(phrase.rstrip(".") for phrase in found)
        raise ToolCallError(f"{said}. Nothing was changed. A correct call: {call}")
    return given


def run(
    registry: Registry,
    memory: AgentMemory,
    name: object,
    arguments: object,
    offered: Iterable[str] | None = None,
) -> str:
    """Run ``name`` with ``arguments`` against ``memory``; the result is always a JSON string.

    An unknown name is answered with the tools ``offered`` to the model (by default the
    canonical ones): never a name the model was not shown.
    """
    tool = registry.get(name) if isinstance(name, str) else None
    if tool is None:
        shown = offered if offered is not None else (t.name for t in registry if not t.legacy)
        known = ", ".join(shown)
        message = f"unknown tool {_shown_name(name)}. The memory tools are: {known}."
        return to_json(error_result(message, None))
    try:
        result = tool.handler(memory, _arguments(tool, arguments))
    except ToolCallError as exc:
        extra = dict(exc.extra)
        message = hide_host_paths(exc.message, memory)
        if tool.error_key == "error":
            extra.setdefault("reason", hide_host_paths(str(extra.get("reason", message)), memory))
        return to_json(error_result(message, tool.store, message_key=tool.error_key, **extra))
    except MarkusMemoryError as exc:  # a refusal the model can act on, e.g. a read-only home
        message = hide_host_paths(str(exc), memory)
        return to_json(error_result(message, tool.store, message_key=tool.error_key))
    except Exception as exc:  # the model must never see a traceback; the host sees the log
        log.exception("memory tool %s failed", tool.name)
        message = hide_host_paths(f"{tool.name} failed: {type(exc).__name__}: {exc}", memory)
        return to_json(error_result(message, tool.store, message_key=tool.error_key))
    result.setdefault("store", tool.store)
    return to_json(result)


def _shown_name(name: object) -> str:
    text = repr(name)
    return text if len(text) <= 80 else text[:79] + "…"
