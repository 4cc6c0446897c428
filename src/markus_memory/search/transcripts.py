"""Transcripts: the whole transcript side of one agent behind one object.

Owns the background :class:`TranscriptWriter` (every durable append to the episodic store, then
to the live recall index), the catch-up import (:class:`TranscriptLog`) and the recall index
(:class:`TranscriptRecall`). The sessions layer is not imported here: the facade hands over
appends (anything shaped like an appended message) and session files as
:class:`SessionSource` values.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Protocol

from ..config import parse_iso
from ..errors import MarkusMemoryError
from ..storage.repos.transcripts import TranscriptMessage
from .embedders import Embedder
from .recall import TranscriptRecall, speaker_of
from .transcript_log import SessionSource, TranscriptLog, TranscriptStore
from .transcript_writer import TranscriptWriter

log = logging.getLogger(__name__)

Scratch = tuple[TranscriptStore, Callable[[], None]]
"""A private store and how to close and delete it."""


class Appended(Protocol):
    """A durable append as the sessions layer reports it (its ``AppendedMessage``)."""

    @property
    def session_id(self) -> str: ...
    @property
    def seq(self) -> int: ...
    @property
    def role(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...
    @property
    def timestamp(self) -> datetime: ...


class Transcripts:
    """Records, catches up and recalls the session transcripts of ``agent_id``.

    ``store`` is called for the episodic backend at each use (the facade opens it lazily);
    ``sessions`` yields every session file, ``session`` one by id (None when there is none).
    ``scratch`` gives a private store and its disposer when the episodic store cannot be
    written (None when it can): the transcripts move there when the files hold what the
    store lacks, so recall still finds it.
    """

    def __init__(
        self,
        store: Callable[[], TranscriptStore],
        agent_id: str,
        *,
        sessions: Callable[[], Iterable[SessionSource]],
        session: Callable[[str], SessionSource | None],
        embedder: Embedder | None = None,
        scratch: Callable[[], Scratch | None] = lambda: None,
    ) -> None:
        self.agent_id = agent_id
        self._home_store = store
        self._scratch = scratch
        self._private: Scratch | None = None
        self._sessions = sessions
        self._session = session
        self._log = TranscriptLog(self._store, agent_id)
        self._recall = TranscriptRecall(self._store, agent_id, embedder=embedder)
        self._synced_at: int | None = None  # the writer's failure count at the last sync
        self._sync_guard = threading.Lock()
        self._writer = TranscriptWriter(self._store, agent_id, then=self._index_turns)

    def _store(self) -> TranscriptStore:
        return self._home_store() if self._private is None else self._private[0]

    def caught_up(self) -> TranscriptRecall:
        """The recall engine, once every append that returned is in the store and the session
        files the store is behind are imported."""
        self._writer.drain()
        self._sync()
        return self._recall

    def on_append(self, record: Appended) -> None:
        """Queue every durable append (the session file already holds it) for the episodic
        store and then the live recall index, both written in the background."""
        message = transcript_message(
            self.agent_id,
            record.session_id,
            record.seq,
            record.role,
            record.text,
            record.metadata,
            record.timestamp,
        )
        self._writer.put(message, record.timestamp)

    def stored(self) -> None:
        """Messages were stored in the store directly (a conversation it holds, not a
        session file): new vectors are due."""
        self._recall.stored()

    def _index_turns(self, messages: list[TranscriptMessage]) -> None:
        """The writer stored messages (the store indexed them): new vectors are due."""
        if messages:
            self._recall.stored()

    def before_compact(self, session_id: str, keep_from_seq: int) -> bool:
        """Let a compaction drop seqs below ``keep_from_seq`` only once the store holds them:
        the queued writes first, then (if the store is still behind, e.g. a write failed) an
        import of the whole file. Raises if the store cannot be reached (compaction waits)."""
        self._writer.drain()
        mark = self._store().transcript_marks(self.agent_id).get(session_id)
        if mark is not None and mark.next_seq >= keep_from_seq:
            return True
        source = self._session(session_id)
        if source is None:
            return False
        self._store().import_transcript(
            self.agent_id, session_id, source.read(), synced_at=source.last_activity_at
        )
        mark = self._store().transcript_marks(self.agent_id).get(session_id)
        return mark is not None and mark.next_seq >= keep_from_seq

    def forget(self, session_id: str) -> int:
        """Drop a session from the store (its messages, mark, recall postings and vectors)
        once the queued writes are in; the number of messages dropped."""
        self._writer.drain()
        return self._store().forget_session(self.agent_id, session_id)

    def seq_floor(self, session_id: str) -> int:
        """The first seq a new file for ``session_id`` may use: past every message the store
        holds for that id (after the queued writes), so a session file started again (the old
        one deleted or set aside) never reuses a number. Raises if the store is unreachable."""
        self._writer.drain()
        store = self._store()
        mark = store.transcript_marks(self.agent_id).get(session_id)
        held = store.transcript_messages(self.agent_id, session_id=session_id)
        return max([0 if mark is None else mark.next_seq, *(m.seq + 1 for m in held)])

    def _sync(self) -> None:
        """Before the first recall, and again after the writer missed messages: import the
        session files the store is behind.

        Done here, not in the recall index's backfill, because reading a session takes the
        agent lock, and a compaction holding that lock waits for the writer, which feeds the
        recall index: the index's lock must never be held while waiting for the agent lock.
        """
        with self._sync_guard:
            failures = self._writer.failures
            if self._synced_at == failures:
                return
            try:
                refused = self._log.sync(self._sessions())
            except (OSError, MarkusMemoryError):  # the store itself cannot be opened
                if not self._go_private():
                    raise
                self._log.sync(self._sessions())
            else:
                if refused and self._go_private():
                    self._log.sync(self._sessions())
            self._synced_at = failures

    def _go_private(self) -> bool:
        """Move to a private store if the episodic one cannot be written (once)."""
        if self._private is not None:
            return False
        self._private = self._scratch()
        if self._private is None:
            return False
        log.warning(
            "agent %s: the episodic store cannot be written and lacks what its session files "
            "hold; recall uses a private index of the files for this process",
            self.agent_id,
        )
        self._recall.moved()
        return True

    def close(self) -> None:
        """Drain and stop the writer (every queued append reaches the store); a private
        store is deleted."""
        self._writer.close()
        self._recall.close()
        if self._private is not None:
            self._private[1]()


def transcript_message(
    agent_id: str,
    session_id: str,
    seq: int,
    role: str,
    text: str,
    metadata: Mapping[str, Any] | None,
    fallback_time: datetime,
) -> TranscriptMessage:
    """A transcript record: timed by ``metadata["timestamp"]`` if any, else ``fallback_time``."""
    return TranscriptMessage(
        agent_id,
        session_id,
        seq,
        role,
        text,
        _metadata_time(metadata) or fallback_time,
        speaker_of(metadata, text),
        None if metadata is None else dict(metadata),
    )


def _metadata_time(metadata: Mapping[str, Any] | None) -> datetime | None:
    value = (metadata or {}).get("timestamp")
    return parse_iso(value) if isinstance(value, str) else None
