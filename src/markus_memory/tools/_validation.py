"""Argument checks shared by the tools: each failure says what was wrong and how to call it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._results import ToolCallError

OBSERVATION_TYPES = ("fact", "note", "task_result", "conversation", "insight")
SAVE_TYPES = ("fact", "note", "insight")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def example(name: str, args: Mapping[str, Any]) -> str:
    """``name {"k":"v"}``: a correct call, quoted in error messages."""
    return f"{name} {json.dumps(args, ensure_ascii=False, separators=(',', ':'))}"


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def optional_string(args: Mapping[str, Any], key: str, hint: str) -> str | None:
    """``args[key]`` if it is a string; None if absent or null; otherwise an error."""
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ToolCallError(f'"{key}" must be a string, got {type_name(value)}. {hint}')
    return value


def required_text(args: Mapping[str, Any], key: str, hint: str) -> str:
    """A string with at least one non-space character (returned unchanged)."""
    value = args.get(key)
    if not isinstance(value, str) or not value.strip():
        got = "missing" if value is None else f"a {type_name(value)}"
        if isinstance(value, str):
            got = "empty"
        raise ToolCallError(f'"{key}" is required and must be a non-empty string ({got}). {hint}')
    return value


def optional_bool(args: Mapping[str, Any], key: str, hint: str) -> bool:
    value = args.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolCallError(f'"{key}" must be true or false, got {type_name(value)}. {hint}')
    return value


def limit_arg(
    args: Mapping[str, Any],
    default: int,
    maximum: int,
    hint: str,
    key: str = "limit",
    minimum: int = 1,
) -> int:
    """A whole number in [minimum, maximum]; absent/null → ``default``. Never text or bool."""
    value = args.get(key)
    if value is None:
        return default
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not whole:
        raise ToolCallError(
            f'"{key}" must be a whole number from {minimum} to {maximum}, '
            f"got {json.dumps(value)}. {hint}"
        )
    number = int(value)
    if not minimum <= number <= maximum:
        raise ToolCallError(
            f'"{key}" must be from {minimum} to {maximum}, got {number}. '
            f"Leave it out for the default ({default}). {hint}"
        )
    return number


def type_filter(args: Mapping[str, Any], hint: str) -> str | None:
    """The observation ``type`` filter of memory_search / memory_list, if given."""
    value = args.get("type")
    if value is None or value == "":
        return None
    if value not in OBSERVATION_TYPES:
        allowed = ", ".join(OBSERVATION_TYPES)
        raise ToolCallError(
            f'"type" must be one of {allowed} (got {json.dumps(value)}); '
            f"leave it out to search every type. {hint}"
        )
    return str(value)


def id_list(value: Any, key: str, hint: str) -> list[str]:
    """A list of ids; a single string counts as one id. Blank ids are dropped."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ToolCallError(f'"{key}" must be an array of id strings. {hint}')
    return [v.strip() for v in value if v.strip()]


def tag_list(value: Any) -> tuple[str, ...]:
    """Tags: an array (each stringified) or a comma-separated string; blanks dropped.

    Commas inside an array item split it too, control characters become spaces and ``-->``
    becomes ``->`` (knowledge.md keeps tags in an HTML comment line).
    """
    if isinstance(value, str):
        items: list[str] = [value]
    elif isinstance(value, (list, tuple)):
        items = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in value]
    else:
        return ()
    parts = (_CONTROL.sub(" ", part).replace("-->", "->") for i in items for part in i.split(","))
    return tuple(dict.fromkeys(" ".join(p.split()) for p in parts if p.strip()))
