"""TranscriptWriter: records durable appends in the episodic store off the append path.

The session file is the source of truth; the store is derived from it. An append only enqueues
its message here; the process's writer threads (:mod:`.transcript_pool`, shared by every
agent) drain the queue in batches, one store transaction per session of a batch. A message the
writer cannot store (the store fails, or the store's mark is behind the message because an
earlier one was lost) leaves the store's mark behind, so the next catch-up import
(``TranscriptLog.sync``) reads the gap from the session file.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from datetime import datetime

from ..errors import MarkusMemoryError
from ..storage.repos.transcripts import TranscriptIndex, TranscriptMessage
from .transcript_pool import WriterQueue, shared_pool

log = logging.getLogger(__name__)


class TranscriptWriter:
    """A queue of ``(message, appended_at)`` drained into ``store()`` by the process's
    :class:`~.transcript_pool.WriterPool` (a few threads shared by every agent).

    Thread-safe: any thread may :meth:`put`, :meth:`drain` or :meth:`close`. The pool's
    threads start at the first :meth:`put`; an exit hook writes what is queued for writers
    never closed. ``then`` gets each batch once written (or given up on), in append order.
    """

    def __init__(
        self,
        store: Callable[[], TranscriptIndex],
        agent_id: str,
        *,
        then: Callable[[list[TranscriptMessage]], None] | None = None,
    ) -> None:
        self._store = store
        self.agent_id = agent_id
        self._then = then
        self.failures = 0
        """Batches (or sessions of a batch) the store refused: the next recall catches up."""
        self._q = self._new_queue()

    def _new_queue(self) -> WriterQueue:
        q = WriterQueue(shared_pool(), weakref.WeakMethod(self.write))
        # Dropped unclosed: the pool stops counting it (its threads end with the last one).
        weakref.finalize(self, q.pool.dropped.append, q)
        return q

    def _queue(self) -> WriterQueue:
        """The queue, a new one in a forked child (the parent's pool has no threads there)."""
        if self._q.pool.pid != os.getpid():
            self._q = self._new_queue()
        return self._q

    def put(self, message: TranscriptMessage, appended_at: datetime) -> None:
        """Queue one durable append for the store (returns at once)."""
        self._queue().put((message, appended_at))

    def drain(self) -> None:
        """Return once every message queued before this call has been written (or given up
        on); at once when the queue is empty."""
        self._queue().drain()

    def close(self) -> None:
        """Drain; when no other writer of the process is open, wait for the pool's threads to
        end. Safe to call twice; a later :meth:`put` works again."""
        q = self._queue()
        q.drain()
        q.release()

    def write(self, batch: list[tuple[TranscriptMessage, datetime]]) -> None:
        """Store one batch, then hand it to ``then``. Never raises: a failure is logged (a
        store failure leaves the mark behind)."""
        self._write(batch)
        if self._then is not None:
            try:
                self._then([message for message, _ in batch])
            except Exception:
                log.exception("transcript writer callback failed on %d messages", len(batch))

    def _write(self, batch: list[tuple[TranscriptMessage, datetime]]) -> None:
        """Per session, the messages that continue the store's mark in one transaction."""
        try:
            store = self._store()
            marks = store.transcript_marks(self.agent_id)
        except (OSError, MarkusMemoryError):
            self.failures += 1
            log.exception(
                "transcript store unavailable; %d messages left to the import", len(batch)
            )
            return
        by_session: dict[str, list[tuple[TranscriptMessage, datetime]]] = {}
        for item in batch:
            by_session.setdefault(item[0].session_id, []).append(item)
        for session_id, items in by_session.items():
            mark = marks.get(session_id)
            run, rest = _split(items, 0 if mark is None else mark.next_seq)
            try:
                if run:
                    store.import_transcript(
                        self.agent_id,
                        session_id,
                        [m for m, _ in run],
                        synced_at=max(at for _, at in run),
                    )
                for message, at in rest:  # past a gap: rows with their exact times, mark kept
                    _index(store, message, at)
            except (OSError, MarkusMemoryError):
                # The session file holds the messages; the next recall imports them.
                self.failures += 1
                log.exception("transcript store missed messages of %s", session_id)


def _index(store: TranscriptIndex, message: TranscriptMessage, appended_at: datetime) -> None:
    store.index_message(
        message.agent_id,
        message.session_id,
        message.seq,
        message.role,
        message.content,
        message.created_at,
        speaker=message.speaker,
        metadata=message.metadata,
        appended_at=appended_at,
    )


def _split(
    items: list[tuple[TranscriptMessage, datetime]], next_seq: int
) -> tuple[list[tuple[TranscriptMessage, datetime]], list[tuple[TranscriptMessage, datetime]]]:
    """The leading messages that continue a store holding ``[0, next_seq)`` without a gap
    (importable in one transaction, moving the mark), and the rest: importing past a gap would
    move the mark over messages the store never got."""
    ordered = sorted(items, key=lambda item: item[0].seq)
    for i, (message, _) in enumerate(ordered):
        if message.seq > next_seq:
            return ordered[:i], ordered[i:]
        next_seq = max(next_seq, message.seq + 1)
    return ordered, []
