"""TranscriptWriter: records durable appends in the episodic store off the append path.

The session file is the source of truth; the store is derived from it. An append only enqueues
its message here; one background thread drains the queue in batches, one store transaction per
session of a batch. A message the writer cannot store (the store fails, or the store's mark is
behind the message because an earlier one was lost) leaves the store's mark behind, so the
next catch-up import (``TranscriptLog.sync``) reads the gap from the session file.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime

from ..errors import MarkusMemoryError
from ..storage.base import TranscriptIndex, TranscriptMessage

log = logging.getLogger(__name__)

MAX_BATCH = 256
LINGER_SECONDS = 0.05
"""How long the writer gathers appends after the first of a batch (unless a drain asks): one
transaction per batch, and the appending threads are not competing with it for every append."""


class TranscriptWriter:
    """A queue of ``(message, appended_at)`` drained into ``store()`` by one daemon thread.

    Thread-safe: any thread may :meth:`put`, :meth:`drain` or :meth:`close`. The thread starts
    at the first :meth:`put` (again after a close), and an exit hook drains a writer that was
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
        self._cond = threading.Condition()
        self._queue: list[tuple[TranscriptMessage, datetime]] = []
        self._busy = False  # a batch taken from the queue is being written
        self._stop = False
        self._waiting = 0  # drain() calls waiting: write at once, do not linger
        self._thread: threading.Thread | None = None
        self._atexit: Callable[[], None] | None = None

    def put(self, message: TranscriptMessage, appended_at: datetime) -> None:
        """Queue one durable append for the store (returns at once)."""
        with self._cond:
            self._queue.append((message, appended_at))
            if self._thread is None:
                self._start()
            if len(self._queue) == 1 or len(self._queue) >= MAX_BATCH:
                self._cond.notify_all()

    def drain(self) -> None:
        """Return once every message queued before this call has been written (or given up
        on); at once when the queue is empty."""
        with self._cond:
            self._waiting += 1
            self._cond.notify_all()
            try:
                while (self._queue or self._busy) and self._thread is not None:
                    self._cond.wait()
            finally:
                self._waiting -= 1

    def close(self) -> None:
        """Drain, then stop the thread. Safe to call twice; a later :meth:`put` restarts it."""
        with self._cond:
            thread = self._thread
            self._stop = True
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._cond:
            self._thread = None
            self._stop = False
            if self._queue:  # put while the thread was stopping: write it, do not strand it
                self._start()
                return
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    def _start(self) -> None:
        thread = threading.Thread(
            target=_run, args=(weakref.ref(self),), name="markus-transcript", daemon=True
        )
        self._thread = thread
        if self._atexit is None:
            self._atexit = _exit_hook(weakref.ref(self))
            atexit.register(self._atexit)
        thread.start()

    def _take(self) -> list[tuple[TranscriptMessage, datetime]] | None:
        """The next batch (waiting for one), or None when stopped with nothing left."""
        with self._cond:
            while not self._queue and not self._stop:
                self._cond.wait()
            deadline = time.monotonic() + LINGER_SECONDS
            while len(self._queue) < MAX_BATCH and not self._stop and not self._waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            if not self._queue:
                return None
            batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
            self._busy = True
            return batch

    def _finish(self) -> None:
        with self._cond:
            self._busy = False
            self._cond.notify_all()

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
                # The session file holds the messages; the next first recall imports them.
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


def _run(ref: weakref.ReferenceType[TranscriptWriter]) -> None:
    while True:
        writer = ref()
        if writer is None:
            return
        batch = writer._take()
        if batch is None:
            writer._finish()
            return
        try:
            writer.write(batch)
        except Exception:  # the thread must outlive any bug in one batch
            log.exception("transcript writer failed on a batch of %d", len(batch))
        finally:
            writer._finish()
        del writer


def _exit_hook(ref: weakref.ReferenceType[TranscriptWriter]) -> Callable[[], None]:
    """Drain at interpreter exit without keeping the writer alive until then."""

    def hook() -> None:
        writer = ref()
        if writer is None:
            return
        try:
            writer.close()
        except Exception:  # an exit hook must never raise
            log.exception("draining the transcript writer at exit failed")

    return hook
