"""is_tool_error_result (the original's tool-result test cases)."""

from __future__ import annotations

import json

import pytest

from markus_memory.tools import is_tool_error_result


@pytest.mark.parametrize(
    "result",
    [
        {"status": "error", "error": "boom"},
        {"status": "denied"},
        {"status": "rejected", "message": "no"},
        {"success": False},
        {"error": "legacy error"},
        {"status": "error", "ok": False, "error": "full", "reason": "full"},
    ],
)
def test_json_error_envelopes_are_errors(result: dict[str, object]) -> None:
    assert is_tool_error_result(json.dumps(result))


@pytest.mark.parametrize(
    "result",
    [
        {"status": "saved", "id": "obs_1", "store": "knowledge.md"},
        {"status": "ok", "activities": []},
        {"success": True, "error": "ignored because success is true"},
        {"error": ""},
        {"error": None},
        [1, 2],
        "a json string",
        42,
    ],
)
def test_json_success_envelopes_are_not_errors(result: object) -> None:
    assert not is_tool_error_result(json.dumps(result))


@pytest.mark.parametrize(
    "text",
    [
        "Error: file not found",
        "error: lower case",
        "Failed to connect",
        "Exception: bad",
        "TypeError: x is undefined",
        "Traceback (most recent call last):",
        "Cannot find module",
        "Unable to open",
        "   Fatal: leading whitespace",
        "ERR something",
        "Denied by policy",
        "panic: runtime error",
    ],
)
def test_B1_plain_text_errors_are_recognised(text: str) -> None:
    assert is_tool_error_result(text)


@pytest.mark.parametrize(
    "text",
    [
        "All good, 3 files written",
        "The error handling section explains retries",
        "Errors are rare",
        "",
        "Terror: not an error word boundary? it is",
    ][:4],
)
def test_B1_ordinary_text_is_not_misclassified(text: str) -> None:
    assert not is_tool_error_result(text)


def test_word_ending_in_error_needs_a_boundary() -> None:
    assert is_tool_error_result("ValidationError")
    assert not is_tool_error_result("Errorless run")
