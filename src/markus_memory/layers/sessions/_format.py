"""Session formats: ids and file names, message validation, the Markus JSON file and the journal.

Everything here is pure (no I/O) so that it can be property-tested on its own.

File names (the original used raw ids, unsafe on Windows and with ``/`` or ``..``):
 a session id is validated with ``_fs.validate_id`` and
then percent-encoded into a file name: ``%``, the characters Windows forbids in names
(``< > : " | ? *``) and a trailing ``.`` become ``%XX`` (upper-case hex of the byte). Every
other character is kept, so ``sess_…``, ``hb_…`` and ``task_…`` names are the ids verbatim and
``channel_group:t1_agt`` is stored as ``channel_group%3At1_agt.json``. :func:`id_from_file_stem`
is the exact inverse. A file the original wrote under the raw id is still read (``legacy``).

Text slicing counts code points, not UTF-16 units as the original did; the
two differ only for characters outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..._fs import validate_id
from ...config import rand36
from ...errors import InvalidInputError

Message = dict[str, Any]

ROLES = ("system", "user", "assistant", "tool")
SUMMARY_MARKER = "[Conversation history summary"
SHRINK_MARKER = "[Tool result compacted: "
JOURNAL_VERSION = 1
_UNSAFE = frozenset('%<>:"|?*')
_PREFIX = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
_ESCAPED = re.compile(r"%([0-9A-F]{2})")


# ---------------------------------------------------------------------------------------------
# ids and file names


def new_session_id(prefix: str, epoch_milliseconds: int) -> str:
    """``<prefix>_<ms>_<rand36(6)>``, the form of the original's ``createSession``."""
    if not isinstance(prefix, str) or not _PREFIX.match(prefix):
        raise InvalidInputError(f"session id prefix must be letters, digits or '-': {prefix!r}")
    return f"{prefix}_{epoch_milliseconds}_{rand36(6)}"


def validate_session_id(value: object) -> str:
    return validate_id("session id", value)


def file_stem(session_id: str) -> str:
    """The reversible, Windows-safe file name stem of a (validated) session id."""
    chars = [f"%{ord(ch):02X}" if ch in _UNSAFE else ch for ch in session_id]
    if chars and chars[-1] == ".":
        chars[-1] = "%2E"
    return "".join(chars)


def id_from_file_stem(stem: str) -> str:
    """The session id of a file stem written by :func:`file_stem`."""
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), stem)


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
    return json.loads(encoded), encoded


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
# the Markus session file


@dataclass
class SessionDoc:
    """The parsed ``sessions/<id>.json``; ``extra`` keeps unknown top-level keys in place."""

    id: str
    agent_id: str
    messages: list[Message]
    started_at: str
    last_activity_at: str
    extra: dict[str, Any] = field(default_factory=dict)
    compacted: int = 0

    def seq(self, index: int) -> int | None:
        """The absolute sequence number of ``messages[index]``; None for a compaction summary."""
        return seq_of(self.compacted, index)


def seq_of(compacted: int, index: int) -> int | None:
    """Absolute seq of message ``index`` of a file that ``compacted`` messages have left.

    While ``compacted`` is 0 the seq is the index. Once compaction has removed messages, index 0
    is the summary standing in for them (it has no seq) and message ``index`` is the
    ``compacted + index - 1``-th message ever appended, so seqs never restart.
    """
    if compacted <= 0:
        return index
    return None if index == 0 else compacted + index - 1


COMPACTED_KEY = "compactedMessages"
"""Extra top-level key of a compacted session file: how many appended messages compaction has
dropped from it. Markus readers ignore it; absent means 0."""

_KNOWN_KEYS = ("id", "agentId", "messages", "startedAt", "lastActivityAt", COMPACTED_KEY)


def render_session(doc: SessionDoc) -> str:
    """Pretty JSON, 2-space indent, non-ASCII kept: ``JSON.stringify(s, null, 2)``."""
    body: dict[str, Any] = {
        "id": doc.id,
        "agentId": doc.agent_id,
        "messages": doc.messages,
        "startedAt": doc.started_at,
        "lastActivityAt": doc.last_activity_at,
    }
    body.update(doc.extra)
    if doc.compacted > 0:
        body[COMPACTED_KEY] = doc.compacted
    return json.dumps(body, indent=2, ensure_ascii=False)


def parse_session(text: str) -> SessionDoc:
    """Parse a session file; ValueError says what is wrong with it."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("top level is not an object")
    for key in ("id", "agentId", "startedAt", "lastActivityAt"):
        if not isinstance(data.get(key), str):
            raise ValueError(f"'{key}' is missing or not a string")
    messages = data.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ValueError("'messages' is not a list of objects")
    return SessionDoc(
        id=data["id"],
        agent_id=data["agentId"],
        messages=messages,
        started_at=data["startedAt"],
        last_activity_at=data["lastActivityAt"],
        extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        compacted=_count(data.get(COMPACTED_KEY)),
    )


def _count(value: object) -> int:
    """A non-negative count; anything else (absent, hand-edited) reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# ---------------------------------------------------------------------------------------------
# the journal: one JSON object per line, the first a header naming the checkpoint it extends


def journal_header(session_id: str, base: str) -> bytes:
    header = {"journal": JOURNAL_VERSION, "session": session_id, "base": base}
    return (json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def journal_record(index: int, timestamp: str, encoded_message: str) -> bytes:
    """One record line; ``encoded_message`` is the compact JSON from :func:`encode_message`."""
    return f'{{"i":{index},"t":{json.dumps(timestamp)},"m":{encoded_message}}}\n'.encode()


@dataclass(frozen=True)
class JournalRecord:
    index: int
    timestamp: str
    message: Message


def parse_journal_header(line: bytes) -> tuple[str, str] | None:
    """``(session id, base)`` of a header line, None if it is not one."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if (
        not isinstance(data, dict)
        or data.get("journal") != JOURNAL_VERSION
        or not isinstance(data.get("session"), str)
        or not isinstance(data.get("base"), str)
    ):
        return None
    return data["session"], data["base"]


def parse_journal_record(line: bytes) -> JournalRecord:
    """One record line; ValueError if it is not a well-formed record."""
    data = json.loads(line)
    if not isinstance(data, dict):
        raise ValueError("record is not an object")
    index, stamp, message = data.get("i"), data.get("t"), data.get("m")
    if not isinstance(index, int) or not isinstance(stamp, str) or not isinstance(message, dict):
        raise ValueError("record needs integer 'i', string 't' and object 'm'")
    return JournalRecord(index, stamp, message)


def split_lines(data: bytes) -> tuple[list[bytes], int]:
    """Complete ``\\n``-terminated lines of ``data`` and the byte length they cover.

    Only ``\\n`` ends a line (JSON escapes it inside strings); U+2028 and friends do not.
    A trailing piece without ``\\n`` is a torn write and is not returned.
    """
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1], end


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
