"""Reading schema-checked arguments, and the few checks a JSON Schema cannot state."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

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


def optional_string(args: Mapping[str, Any], key: str) -> str | None:
    """A schema-checked string argument, or None when it was left out."""
    value = args.get(key)
    return value if isinstance(value, str) else None


def whole_number(args: Mapping[str, Any], key: str, default: int) -> int:
    """A schema-checked integer argument (5.0 counts as 5), or ``default`` when left out."""
    value = args.get(key)
    return default if value is None else int(value)


def id_list(value: Any) -> list[str]:
    """The ids of a schema-checked array of non-blank strings, stripped."""
    return [v.strip() for v in value]


def tag_list(value: Any) -> tuple[str, ...]:
    """Tags: a schema-checked array of strings or a comma-separated string; blanks dropped.

    Commas inside an array item split it too, control characters become spaces and ``-->``
    becomes ``->`` (knowledge.md keeps tags in an HTML comment line).
    """
    if value is None:
        return ()
    items: list[str] = [value] if isinstance(value, str) else list(value)
    parts = (_CONTROL.sub(" ", part).replace("-->", "->") for i in items for part in i.split(","))
    return tuple(dict.fromkeys(" ".join(p.split()) for p in parts if p.strip()))
