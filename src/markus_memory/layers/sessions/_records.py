"""The frozen results of the session store."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ._format import seq_of
from ._messages import Message


@dataclass(frozen=True)
class Session:
    """A snapshot of one session. ``messages`` are Markus LLMMessage dicts: treat as read-only."""

    id: str
    agent_id: str
    messages: tuple[Message, ...]
    started_at: datetime
    last_activity_at: datetime
    compacted: int = 0
    first_seq: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Top-level keys of the session file beyond Markus's own (a hand edit, another tool's):
    kept wherever the session goes, files or database."""

    def seq(self, index: int) -> int | None:
        """The absolute seq of ``messages[index]`` (never restarts; see ``_format.seq_of``);
        None for the summary that stands in for compacted messages."""
        return seq_of(self.compacted, index, self.first_seq)


@dataclass(frozen=True)
class SessionInfo:
    """One session, known without reading its messages: where its file is, or None for a
    session held in the database."""

    id: str
    last_activity_at: datetime
    path: Path | None


@dataclass(frozen=True)
class AppendedMessage:
    """What an append made durable; also what ``on_append`` receives.

    ``index`` is the position in the session file (compaction renumbers it); ``seq`` is the
    absolute sequence number, which never restarts (``index`` until a first compaction).
    """

    agent_id: str
    session_id: str
    index: int
    role: str
    text: str
    timestamp: datetime
    metadata: Mapping[str, Any] | None
    seq: int


@dataclass(frozen=True)
class CompactResult:
    summary: str
    flushed_count: int


OnAppend = Callable[[AppendedMessage], None]

BeforeCompact = Callable[[str, int], bool]
"""``(session_id, keep_from_seq) -> ok``: called under the agent lock before a compaction drops
the messages with seq below ``keep_from_seq`` from the file; False (or an exception) defers the
compaction, because those messages are not yet safe anywhere else."""
