"""Every call is checked against the very JSON Schema the model was given, before any handler runs.

The checking is jsonschema's (Draft 2020-12), so what a tool advertises and what it accepts
cannot drift apart; this module only turns its findings into one sentence a model can act on.
Before that, :func:`check_plain_json` walks the arguments once, without recursion, and refuses
what no schema should have to meet: nesting deeper than :data:`MAX_DEPTH`, keys that are not
strings, text that is not valid Unicode and numbers that JSON cannot carry.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import extend

from ._results import ToolCallError
from ._validation import type_name

MAX_DEPTH = 32
"""How deeply a call's arguments may nest (the arguments object itself is level 1)."""
MAX_PROBLEMS = 4
NOT_BLANK = r"\S"
"""The pattern of a string that must not be blank."""
_VALUE_CHECKS = frozenset(
    {"type", "enum", "oneOf", "anyOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
    | {"maxItems", "minItems", "pattern"}
)

_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {  # a Python host may hand over tuples and other mappings: they are arrays and objects
        "array": lambda _checker, value: isinstance(value, (list, tuple)),
        "object": lambda _checker, value: isinstance(value, Mapping),
    }
)
Validator = extend(Draft202012Validator, type_checker=_TYPES)  # type: ignore[no-untyped-call]

_NOUNS = {
    "string": "a string",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


class TooDeep(ToolCallError):
    """Arguments nested beyond :data:`MAX_DEPTH`."""

    def __init__(self) -> None:
        super().__init__(
            f"the arguments are nested too deeply (more than {MAX_DEPTH} levels); "
            "send a flat JSON object of named arguments"
        )


def check_plain_json(arguments: Mapping[str, Any]) -> None:
    """Refuse deep nesting, non-string keys, lone surrogates and NaN/Infinity (iteratively)."""
    stack: list[tuple[object, int]] = [(arguments, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ToolCallError(f"{value} is not a JSON number; send a finite number")
        elif isinstance(value, Mapping):
            _check_depth(depth)
            for key in value:
                if not isinstance(key, str):
                    raise ToolCallError(f"argument names must be strings, got {key!r}")
                _check_text(key)
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            _check_depth(depth)
            stack.extend((v, depth + 1) for v in value)


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise TooDeep()


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolCallError(
            "the arguments contain invalid Unicode (a lone surrogate such as \\ud800); "
            "send plain UTF-8 text"
        ) from None


def text(description: str) -> dict[str, Any]:
    """A string argument that must hold more than white space (blank text is as good as none)."""
    return {"type": "string", "pattern": NOT_BLANK, "description": description}


def arguments(properties: Mapping[str, Any], *required: str) -> dict[str, Any]:
    """A tool's parameters: exactly these named arguments (any other is refused)."""
    schema: dict[str, Any] = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def validator_for(schema: Mapping[str, Any]) -> Any:
    """A checked validator for one tool's parameters (raises if the schema itself is wrong)."""
    Validator.check_schema(schema)
    return Validator(schema)


def problems(tool: str, validator: Any, arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with ``arguments``, one phrase per problem, in argument order."""
    found = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    by_place: dict[tuple[object, ...], str] = {}
    for error in found:  # one phrase per argument: its type and enum errors say the same
        group = "value" if error.validator in _VALUE_CHECKS else str(error.validator)
        by_place.setdefault((*error.path, group), _describe(tool, error))
    phrases = list(by_place.values())
    if len(phrases) > MAX_PROBLEMS:
        phrases = [*phrases[:MAX_PROBLEMS], f"and {len(phrases) - MAX_PROBLEMS} more"]
    return phrases


def _where(error: ValidationError) -> str:
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return f'"{path}"'


def _shown(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _got(value: object) -> str:
    kind = type_name(value)
    article = "an" if kind[0] in "aeiou" else "a"
    return f"got {_shown(value)} ({article} {kind})"


def _expected(schema: Mapping[str, Any]) -> str:
    """``a string``, ``an array of strings``, ``a string or an array`` … for one schema."""
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    alternatives = schema.get("oneOf") or schema.get("anyOf")
    if alternatives:
        return " or ".join(_expected(s) for s in alternatives)
    kinds = schema.get("type")
    if kinds is None:
        return "a value"
    names = [kinds] if isinstance(kinds, str) else list(kinds)
    phrase = " or ".join(_NOUNS.get(k, k) for k in names)
    items = schema.get("items")
    if names == ["array"] and isinstance(items, Mapping) and isinstance(items.get("type"), str):
        phrase += f" of {items['type']}s"
    return phrase


def _describe(tool: str, error: ValidationError) -> str:
    kind, value, where = error.validator, error.instance, _where(error)
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    if kind == "required" and isinstance(value, Mapping):
        missing = [k for k in schema.get("required", ()) if k not in value]
        return " and ".join(f'"{k}"' for k in missing) + " is required"
    if kind == "additionalProperties" and isinstance(value, Mapping):
        known = list(schema.get("properties", {}))
        extra = ", ".join(f'"{k}"' for k in value if k not in known)
        return f"{tool} has no argument {extra}; its arguments are {', '.join(known)}"
    if kind in ("oneOf", "anyOf"):
        inner = [e for e in error.context or () if len(e.absolute_path) > len(error.absolute_path)]
        if inner:  # the value has a fitting shape, so say what is wrong inside it
            return _describe(tool, inner[0])
    if kind in ("type", "enum", "oneOf", "anyOf"):
        text = f"{where} must be {_expected(schema)}, {_got(value)}"
        description = schema.get("description")
        return f"{text}: {description}" if kind == "enum" and description else text
    if kind in ("minimum", "exclusiveMinimum"):
        return f"{where} must be at least {error.validator_value}, got {_shown(value)}"
    if kind in ("maximum", "exclusiveMaximum"):
        return f"{where} must be at most {error.validator_value}, got {_shown(value)}"
    if kind == "maxItems" and isinstance(value, Sequence):
        return f"{where} takes at most {error.validator_value} items, got {len(value)}"
    if kind == "minItems" and isinstance(value, Sequence):
        return f"{where} needs at least {error.validator_value} item, got none"
    if kind == "pattern" and error.validator_value == NOT_BLANK:
        return f"{where} must not be blank"
    return f"{where}: {error.message}"
