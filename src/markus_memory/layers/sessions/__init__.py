"""Conversation sessions: ``sessions/<id>.json`` with a durable append journal."""

from ._format import file_stem, id_from_file_stem, validate_session_id
from ._held import HeldSessions
from ._messages import heuristic_summary, message_text, trim_messages_for_restore, validate_message
from ._move_in import move_in, session_from_text, session_text, take_over
from ._records import (
    AppendedMessage,
    BeforeCompact,
    CompactResult,
    OnAppend,
    Session,
    SessionInfo,
)
from ._store import NON_MAIN_PREFIXES, SessionStore

Sessions = SessionStore | HeldSessions
"""The Markus sessions of an agent: files (``SessionStore``) or the database (``HeldSessions``)."""

__all__ = [
    "NON_MAIN_PREFIXES",
    "AppendedMessage",
    "BeforeCompact",
    "CompactResult",
    "HeldSessions",
    "OnAppend",
    "Session",
    "SessionInfo",
    "SessionStore",
    "Sessions",
    "file_stem",
    "heuristic_summary",
    "id_from_file_stem",
    "message_text",
    "move_in",
    "session_from_text",
    "session_text",
    "take_over",
    "trim_messages_for_restore",
    "validate_message",
    "validate_session_id",
]
