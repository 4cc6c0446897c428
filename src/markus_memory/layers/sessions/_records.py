"""The frozen results of the session store."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ._format import Message


@dataclass(frozen=True)
class Session:
    """A snapshot of one session. ``messages`` are Markus LLMMessage dicts: treat as read-only."""

    id: str
    agent_id: str
    messages: tuple[Message, ...]
    started_at: datetime
    last_activity_at: datetime


@dataclass(frozen=True)
class SessionInfo:
    """One session file found on disk, known without parsing it."""

    id: str
    last_activity_at: datetime
    path: Path


@dataclass(frozen=True)
class AppendedMessage:
    """What an append made durable; also what ``on_append`` receives."""

    agent_id: str
    session_id: str
    index: int
    role: str
    text: str
    timestamp: datetime
    metadata: Mapping[str, Any] | None


@dataclass(frozen=True)
class CompactResult:
    summary: str
    flushed_count: int


OnAppend = Callable[[AppendedMessage], None]
