"""One session message: its shape, its encoding and its text, and the text that compaction and
a restore make of messages.

Everything here is pure (no I/O) so that it can be property-tested on its own. Text slicing
counts code points, not UTF-16 units as the original did; the two differ only for characters
outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import InvalidInputError

Message = dict[str, Any]

ROLES = ("system", "user", "assistant", "tool")
SUMMARY_MARKER = "[Conversation history summary"
SHRINK_MARKER = "[Tool result compacted: "


# ---------------------------------------------------------------------------------------------
# messages


def _fail(why: str) -> InvalidInputError:
    return InvalidInputError(f"invalid session message: {why}")


def _check_part(index: int, part: object) -> None:
    if not isinstance(part, Mapping):
        raise _fail(f"content[{index}] must be an object, got {type(part).__name__}")
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise _fail(f"content[{index}] of type 'text' needs a string 'text'")
    elif kind == "image_url":
        image = part.get("image_url")
        if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
            raise _fail(f"content[{index}] of type 'image_url' needs image_url.url (a string)")
    else:
        raise _fail(f"content[{index}] has unknown type {kind!r} (expected 'text' or 'image_url')")


def _check_tool_calls(calls: object) -> None:
    if not isinstance(calls, list):
        raise _fail("toolCalls must be a list")
    for i, call in enumerate(calls):
        if not isinstance(call, Mapping):
            raise _fail(f"toolCalls[{i}] must be an object")
        if not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
            raise _fail(f"toolCalls[{i}] needs string 'id' and 'name'")
        if not isinstance(call.get("arguments"), Mapping):
            raise _fail(f"toolCalls[{i}].arguments must be an object")


def validate_message(message: object) -> Message:
    """A plain-dict copy of an LLMMessage (the Markus shape); InvalidInputError for garbage."""
    return encode_message(message)[0]


def encode_message(message: object) -> tuple[Message, str]:
    """:func:`validate_message` and the compact JSON of the copy (one encoding per append).

    Unknown extra keys (``name``, ``metadata`` …) are kept; keys whose value is None are
    dropped, as JavaScript's ``JSON.stringify`` drops ``undefined``.
    """
    if not isinstance(message, Mapping):
        raise _fail(f"expected an object, got {type(message).__name__}")
    clean: Message = {k: v for k, v in message.items() if v is not None}
    if any(not isinstance(k, str) for k in clean):
        raise _fail("keys must be strings")
    role = clean.get("role")
    if role not in ROLES:
        raise _fail(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    content = clean.get("content")
    if isinstance(content, list):
        for i, part in enumerate(content):
            _check_part(i, part)
    elif not isinstance(content, str):
        raise _fail(f"content must be a string or a list of parts, got {type(content).__name__}")
    if "toolCallId" in clean and not isinstance(clean["toolCallId"], str):
        raise _fail("toolCallId must be a string")
    if "toolCalls" in clean:
        _check_tool_calls(clean["toolCalls"])
    if "reasoningContent" in clean and not isinstance(clean["reasoningContent"], str):
        raise _fail("reasoningContent must be a string")
    if "cacheBreakpoint" in clean and not isinstance(clean["cacheBreakpoint"], bool):
        raise _fail("cacheBreakpoint must be a boolean")
    if "metadata" in clean and not isinstance(clean["metadata"], Mapping):
        raise _fail("metadata must be an object")
    try:
        encoded = json.dumps(clean, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as exc:
        raise _fail(f"not JSON-serialisable ({exc})") from exc
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError as exc:
        lone = ord(encoded[exc.start])
        raise _fail(
            f"its text holds a lone surrogate (U+{lone:04X}), which is not valid Unicode; "
            "pair it or remove it"
        ) from None
    return shared_strings(json.loads(encoded)), encoded


def shared_strings(message: Message) -> Message:
    """``message`` with its keys and role as the process's one copy of each string.

    Every parse makes new ``"role"``, ``"content"`` and ``"user"`` strings: in a cached
    session of short chat turns they were about a third of each message's memory.
    """
    out = {sys.intern(key): value for key, value in message.items()}
    role = out.get("role")
    if isinstance(role, str):
        out["role"] = sys.intern(role)
    return out


def encode_within(message: object, cap: int) -> tuple[Message, str]:
    """:func:`encode_message`, refused (InvalidInputError) when its JSON is over ``cap`` bytes."""
    clean, encoded = encode_message(message)
    size = len(encoded.encode("utf-8"))
    if size > cap:
        raise InvalidInputError(
            f"session message too large: {size:,} bytes (limit {cap:,}, "
            "Limits.session_message_max_bytes); store large content elsewhere and append "
            "a reference to it"
        )
    return clean, encoded


def message_text(message: Mapping[str, Any]) -> str:
    """The string content, or the text parts concatenated with no separator (as the original)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p["text"]
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


# ---------------------------------------------------------------------------------------------
# storage compaction (the original's shrink, compact and heuristic summary)


def shrink_tool_text(text: str) -> str:
    """Head + tail of an oversized tool result behind the exact Markus marker line."""
    total = len(text)
    head_n = min(4000, math.floor(0.3 * total))
    tail_n = min(1500, math.floor(0.1 * total))
    head = text[:head_n]
    tail = text[total - tail_n :] if tail_n else ""
    return (
        f"{SHRINK_MARKER}{total} chars → {head_n + tail_n} char preview]\n{head}\n"
        f"[... {total - head_n - tail_n} chars omitted ...]\n{tail}"
    )


def shrink_if_oversized(message: Message, max_chars: int) -> Message | None:
    """The shrunk copy of an old tool message longer than ``max_chars``, else None.

    An already shrunk result is never shrunk again, so replaying a journal is idempotent.
    """
    if message.get("role") != "tool":
        return None
    text = message_text(message)
    if len(text) <= max_chars or text.startswith(SHRINK_MARKER):
        return None
    return {**message, "content": shrink_tool_text(text)}


def heuristic_summary(messages: Iterable[Mapping[str, Any]]) -> str:
    """``User:`` / ``Assistant:`` / ``Tool result:`` lines, cut to 2000 chars (as the original)."""
    lines: list[str] = []
    for message in messages:
        role = message.get("role")
        text = message_text(message)
        if role == "user":
            lines.append(f"User: {text[:200]}")
        elif role == "assistant" and text:
            lines.append(f"Assistant: {text[:200]}")
        elif role == "tool":
            lines.append(f"Tool result: {text[:100]}")
    return "\n".join(lines)[:2000]


def summary_message(flushed: int, kept: int, summary: str) -> Message:
    """The user message standing in for ``flushed`` compacted messages (the original's text)."""
    return {
        "role": "user",
        "content": (
            f"{SUMMARY_MARKER} — {flushed} earlier messages were compacted]\n{summary}\n"
            f"[End of summary — the {kept} most recent messages follow]"
        ),
    }


# ---------------------------------------------------------------------------------------------
# restore from the database chat history (as the original agent does)


def estimate_tokens(message: Mapping[str, Any]) -> int:
    return math.ceil(len(message_text(message)) / 3.5)


def trim_messages_for_restore(
    messages: Iterable[Mapping[str, Any]], max_messages: int = 80, max_tokens: int = 24000
) -> list[Message]:
    """The newest user/assistant messages within both budgets, behind an omission note.

    Keeps only user and assistant messages, then the last ``max_messages``, then walks back
    from the newest adding ``ceil(len(text) / 3.5)`` and stops before the message that would
    exceed ``max_tokens`` (the newest is always kept). If anything was dropped, a user message
    saying how many older messages were omitted and where to find them comes first.
    """
    chat = [dict(m) for m in messages if m.get("role") in ("user", "assistant")]
    window = chat[-max_messages:] if max_messages > 0 else []
    kept: list[Message] = []
    used = 0
    for message in reversed(window):
        cost = estimate_tokens(message)
        if kept and used + cost > max_tokens:
            break
        kept.append(message)
        used += cost
    kept.reverse()
    omitted = len(chat) - len(kept)
    if omitted <= 0:
        return kept
    note = (
        f"[{omitted} older messages of this conversation were omitted to fit the context. "
        "Use memory_search or recall_activity to look up earlier details.]"
    )
    return [{"role": "user", "content": note}, *kept]
