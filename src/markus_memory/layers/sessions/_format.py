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
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..._fs import validate_id
from ...config import rand36
from ...errors import InvalidIdError, InvalidInputError

Message = dict[str, Any]

ROLES = ("system", "user", "assistant", "tool")
SUMMARY_MARKER = "[Conversation history summary"
SHRINK_MARKER = "[Tool result compacted: "
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


MAX_STEM_BYTES = 200
"""A file name holds 255 bytes: the stem leaves room for ``.jsonl.corrupt-<ms>`` and temp names."""


def validate_session_id(value: object) -> str:
    """A valid session id (NFC), whose file name fits the file system once encoded."""
    sid = validate_id("session id", value)
    size = len(file_stem(sid).encode("utf-8"))
    if size > MAX_STEM_BYTES:
        raise InvalidIdError(
            "session id",
            value,
            f"its file name would be {size} bytes (at most {MAX_STEM_BYTES}; '%<>:\"|?*' "
            "take 3 bytes each)",
        )
    return sid


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
    first_seq: int = 0

    def seq(self, index: int) -> int | None:
        """The absolute sequence number of ``messages[index]``; None for a compaction summary."""
        return seq_of(self.compacted, index, self.first_seq)

    def next_seq(self) -> int:
        """The seq the next appended message gets."""
        return next_seq_of(self.compacted, len(self.messages), self.first_seq)


def seq_of(compacted: int, index: int, first_seq: int = 0) -> int | None:
    """Absolute seq of message ``index`` of a file that ``compacted`` messages have left.

    While ``compacted`` is 0 the seq is ``first_seq + index``. Once compaction has removed
    messages, index 0 is the summary standing in for them (it has no seq) and message ``index``
    has seq ``first_seq + compacted + index - 1``, so seqs never restart. ``first_seq`` is 0
    but for a file started again under an id the transcript store already holds messages of
    (the old file deleted or set aside): its numbers continue past the store's.
    """
    if compacted <= 0:
        return first_seq + index
    return None if index == 0 else first_seq + compacted + index - 1


def next_seq_of(compacted: int, count: int, first_seq: int = 0) -> int:
    """The seq after the last of ``count`` messages (see :func:`seq_of`)."""
    return first_seq + (count if compacted <= 0 else compacted + count - 1)


COMPACTED_KEY = "compactedMessages"
"""Extra top-level key of a compacted session file: how many appended messages compaction has
dropped from it. Markus readers ignore it; absent means 0."""
FIRST_SEQ_KEY = "firstSeq"
"""Extra top-level key of a file started again under a known id: the seq of its first message
(absent means 0)."""
NEXT_SEQ_KEY = "nextSeq"
"""Extra top-level key, always written last: the seq the next message gets. Derived (never read
back into the document); the transcript catch-up reads it from the file's tail without parsing
the file."""

_KNOWN_KEYS = (
    "id",
    "agentId",
    "messages",
    "startedAt",
    "lastActivityAt",
    COMPACTED_KEY,
    FIRST_SEQ_KEY,
    NEXT_SEQ_KEY,
)


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
    if doc.first_seq > 0:
        body[FIRST_SEQ_KEY] = doc.first_seq
    body[NEXT_SEQ_KEY] = doc.next_seq()
    return json.dumps(body, indent=2, ensure_ascii=False)


_NEXT_SEQ_TAIL = re.compile(rb'"nextSeq": (\d+)\n}\Z')


def next_seq_in_tail(tail: bytes) -> int | None:
    """The ``nextSeq`` of a rendered file from its last bytes; None when they do not end so."""
    found = _NEXT_SEQ_TAIL.search(tail)
    return None if found is None else int(found.group(1))


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
        messages=[shared_strings(m) for m in messages],
        started_at=data["startedAt"],
        last_activity_at=data["lastActivityAt"],
        extra={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        compacted=_count(data.get(COMPACTED_KEY)),
        first_seq=_count(data.get(FIRST_SEQ_KEY)),
    )


def _count(value: object) -> int:
    """A non-negative count; anything else (absent, hand-edited) reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


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
