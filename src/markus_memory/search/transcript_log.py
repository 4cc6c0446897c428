"""The durable transcript of one agent in the episodic store: record, import, read back as turns."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from ..errors import MarkusMemoryError
from ..storage.base import TranscriptMessage, TranscriptStore
from .conversation import turn_of

log = logging.getLogger(__name__)

# Session files carry their last activity as an mtime in whole milliseconds; a float round
# trip of that mtime may land a hair past the stored ``iso_ms`` time.
MTIME_SLACK = timedelta(milliseconds=1)


@dataclass(frozen=True)
class SessionSource:
    """A session file as the import sees it: id and last activity (known without parsing it)
    and how to read its messages (parsed only when the store is behind the file)."""

    session_id: str
    last_activity_at: datetime
    read: Callable[[], list[TranscriptMessage]]
    """-> the file's messages with their absolute seqs (the compaction summary left out)."""


class TranscriptLog:
    """Records every session message of ``agent_id`` in the store and reads them back.

    ``store`` is called for the backend at each use (the facade opens it lazily).
    """

    def __init__(self, store: Callable[[], TranscriptStore], agent_id: str) -> None:
        self._store = store
        self.agent_id = agent_id

    def sync(self, sources: Iterable[SessionSource]) -> int:
        """Import the session files the store is behind: files that predate it (an existing
        Markus data dir) or that were written past it (an append whose store write failed, or a
        Markus process sharing the directory). Files the store is up to date with are not
        even opened. The number of messages added."""
        store = self._store()
        marks = store.transcript_marks(self.agent_id)
        added = 0
        for source in sources:
            mark = marks.get(source.session_id)
            if mark is not None and source.last_activity_at <= mark.synced_at + MTIME_SLACK:
                continue
            try:
                messages = source.read()
            except (OSError, MarkusMemoryError):  # one bad file must not block all recall
                log.exception("cannot import session %s into the transcript", source.session_id)
                continue
            added += store.import_transcript(
                self.agent_id, source.session_id, messages, synced_at=source.last_activity_at
            )
        return added


__all__ = ["SessionSource", "TranscriptLog", "TranscriptStore", "turn_of"]
