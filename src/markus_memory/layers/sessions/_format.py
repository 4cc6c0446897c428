"""Session formats: ids and file names, and the Markus JSON file (a message: :mod:`._messages`).

Everything here is pure (no I/O) so that it can be property-tested on its own.

File names (the original used raw ids, unsafe on Windows and with ``/`` or ``..``):
 a session id is validated with ``_fs.validate_id`` and
then percent-encoded into a file name: ``%``, the characters Windows forbids in names
(``< > : " | ? *``) and a trailing ``.`` become ``%XX`` (upper-case hex of the byte). Every
other character is kept, so ``sess_…``, ``hb_…`` and ``task_…`` names are the ids verbatim and
``channel_group:t1_agt`` is stored as ``channel_group%3At1_agt.json``. :func:`id_from_file_stem`
is the exact inverse. A file the original wrote under the raw id is still read (``legacy``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..._fs import validate_id
from ...config import rand36
from ...errors import InvalidIdError, InvalidInputError
from ._messages import Message, shared_strings

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
