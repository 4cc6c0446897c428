"""The durable transcript of one agent in the episodic store: record, import, read back as turns."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

from ..errors import MarkusMemoryError
from ..storage.repos.transcripts import TranscriptMessage, TranscriptStore
from .conversation import turn_of

log = logging.getLogger(__name__)


def _unknown() -> int | None:
    return None


@dataclass(frozen=True)
class SessionSource:
    """A session file as the import sees it: id and last activity (known without parsing it)
    and how to read its messages (parsed only when the store is behind the file)."""

    session_id: str
    last_activity_at: datetime
    read: Callable[[], list[TranscriptMessage]]
    """-> the file's messages with their absolute seqs (the compaction summary left out)."""
    next_seq: Callable[[], int | None] = _unknown
    """-> at least the seq after the file's last message, read cheaply from its contents
    (None: only reading the messages can tell)."""


class TranscriptLog:
    """Records every session message of ``agent_id`` in the store and reads them back.

    ``store`` is called for the backend at each use (the facade opens it lazily).
    """

    def __init__(self, store: Callable[[], TranscriptStore], agent_id: str) -> None:
        self._store = store
        self.agent_id = agent_id

    def sync(self, sources: Iterable[SessionSource]) -> list[str]:
        """Import the session files the store is behind: files that predate it (an existing
        Markus data dir) or that were written past it (an append whose store write failed, or a
        Markus process sharing the directory). Decided by content, never by file times: a file
        whose next seq the store's mark already covers is not parsed. The ids of the sessions
        that could not be imported (each logged)."""
        store = self._store()
        marks = store.transcript_marks(self.agent_id)
        refused = []
        for source in sources:
            mark = marks.get(source.session_id)
            if mark is not None and _covers(mark.next_seq, source):
                continue
            try:
                store.import_transcript(
                    self.agent_id,
                    source.session_id,
                    source.read(),
                    synced_at=source.last_activity_at,
                )
            except (OSError, MarkusMemoryError) as exc:
                # One bad file, or a store we may only read, must not block all recall.
                log.warning(
                    "cannot import session %s into the transcript: %s", source.session_id, exc
                )
                refused.append(source.session_id)
        return refused


def _covers(next_seq: int, source: SessionSource) -> bool:
    try:
        top = source.next_seq()
    except (OSError, MarkusMemoryError):
        return False
    return top is not None and top <= next_seq


__all__ = ["SessionSource", "TranscriptLog", "TranscriptStore", "turn_of"]
