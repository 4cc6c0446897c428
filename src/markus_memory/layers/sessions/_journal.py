"""The session journal format and its replay: one JSON object per line, the first a header
naming the checkpoint it extends, then one record ``{"i": index, "t": time, "m": message}`` per
appended message. Pure (no I/O), so that it can be property-tested on its own.

Replay keeps every intact record. A complete line that is not a record in sequence is damaged:
it is set aside, and where it stood for a message the position is kept by a placeholder
message, so the messages after it keep their index (and their seq in the transcript store) and
the next append never reuses a number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ._messages import Message, shared_strings

JOURNAL_VERSION = 1
DAMAGED_KEY = "damaged"
"""``metadata`` flag of the placeholder standing for a message whose record was damaged."""


def journal_header(session_id: str, base: str) -> bytes:
    header = {"journal": JOURNAL_VERSION, "session": session_id, "base": base}
    return (json.dumps(header, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def journal_record(index: int, timestamp: str, encoded_message: str) -> bytes:
    """One record line; ``encoded_message`` is the compact JSON from ``encode_message``."""
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
    return JournalRecord(index, stamp, shared_strings(message))


def split_lines(data: bytes) -> tuple[list[bytes], int]:
    """Complete ``\\n``-terminated lines of ``data`` and the byte length they cover.

    Only ``\\n`` ends a line (JSON escapes it inside strings); U+2028 and friends do not.
    A trailing piece without ``\\n`` is a torn write and is not returned.
    """
    end = data.rfind(b"\n") + 1
    return data[:end].split(b"\n")[:-1], end


def placeholder() -> Message:
    """The message standing where a damaged record was (its text and role are lost)."""
    return {
        "role": "system",
        "content": "[A message of this session was damaged on disk and set aside]",
        "metadata": {DAMAGED_KEY: True},
    }


@dataclass
class Replay:
    """What replaying journal records onto a file of ``start`` messages gives."""

    messages: list[Message] = field(default_factory=list)
    last_timestamp: str | None = None
    damaged: list[bytes] = field(default_factory=list)
    """The complete lines that are not records in sequence, to be set aside."""


def replay(lines: list[bytes], start: int) -> Replay:
    """The messages of record ``lines`` (header excluded) appended after ``start`` messages.

    A record is in sequence when its index is the next one, or skips no more numbers than the
    damaged lines just before it could stand for: each skipped number gets a placeholder.
    Damaged lines after the last good record are taken for records too (placeholders), so a
    number that may have been acknowledged is never given to a new message.
    """
    out = Replay()
    expected, pending = start, 0
    for line in lines:
        try:
            record = parse_journal_record(line)
        except ValueError:
            record = None
        if record is None or not expected <= record.index <= expected + pending:
            out.damaged.append(line)
            pending += 1
            continue
        out.messages.extend(placeholder() for _ in range(record.index - expected))
        out.messages.append(record.message)
        out.last_timestamp = record.timestamp
        expected, pending = record.index + 1, 0
    out.messages.extend(placeholder() for _ in range(pending))
    return out
