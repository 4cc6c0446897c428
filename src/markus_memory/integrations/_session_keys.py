"""A framework's own ids as the agent's session ids: any non-empty string, mapped to a safe key.

:func:`session_key` names the session that holds a framework's conversation. Each part of the
id (a conversation id; for Claude a session id and a subpath) becomes a piece of the key:

- a part that is already a valid session id, unchanged by normalisation and without ``~``,
  stays as it is (``chat-1`` and UUIDs keep the names they always had);
- any other part becomes ``~`` and the part with every character outside ``A-Z a-z 0-9 _ - .``
  written as ``+XX`` per UTF-8 byte: ``tenant:42/chat:7`` is ``~tenant+3A42+2Fchat+3A7``;

the pieces are joined by ``~`` after ``prefix``. A key that would not be a valid session id
(too long for a file name) is ``prefix`` + ``~~`` + the SHA-256 of the parts. Plain pieces hold
no ``~`` and escaped ones exactly one, at their start, and no unhashed key holds ``~~`` right
after the prefix: two different ids never share a key (hashed ones up to a SHA-256 collision).
The key is not meant to be read back: each adapter keeps the original id beside it.
"""

from __future__ import annotations

import hashlib
import json

from ..errors import InvalidIdError, InvalidInputError
from ..layers.sessions import validate_session_id

_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def session_key(*parts: object, prefix: str = "", kind: str = "session id") -> str:
    """The agent's session id for a framework id made of ``parts`` (each a non-empty string)."""
    texts = []
    for part in parts:
        if not isinstance(part, str) or not part:
            raise InvalidInputError(f"a {kind} must be a non-empty string, got {part!r:.60}")
        texts.append(part)
    key = prefix + "~".join(_piece(text) for text in texts)
    if _is_valid(key):
        return key
    digest = hashlib.sha256(json.dumps(texts).encode("ascii")).hexdigest()
    return f"{prefix}~~{digest}"


def _piece(part: str) -> str:
    if "~" not in part and _is_valid(part):
        return part
    return "~" + "".join(
        ch if ch in _KEPT else "".join(f"+{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))
        for ch in part
    )


def _is_valid(sid: str) -> bool:
    try:
        return validate_session_id(sid) == sid
    except InvalidIdError:
        return False


__all__ = ["session_key"]
