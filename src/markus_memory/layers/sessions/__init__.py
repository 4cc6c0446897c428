"""Conversation sessions: ``sessions/<id>.json`` with a durable append journal."""

from ._format import (
    file_stem,
    heuristic_summary,
    id_from_file_stem,
    message_text,
    trim_messages_for_restore,
    validate_message,
    validate_session_id,
)
from ._records import (
    AppendedMessage,
    BeforeCompact,
    CompactResult,
    OnAppend,
    Session,
    SessionInfo,
)
from ._store import NON_MAIN_PREFIXES, SessionStore

__all__ = [
    "NON_MAIN_PREFIXES",
    "AppendedMessage",
    "BeforeCompact",
    "CompactResult",
    "OnAppend",
    "Session",
    "SessionInfo",
    "SessionStore",
    "file_stem",
    "heuristic_summary",
    "id_from_file_stem",
    "message_text",
    "trim_messages_for_restore",
    "validate_message",
    "validate_session_id",
]
