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
IDLE_SECONDS = 1.0
"""How often an idle thread checks whether its writer was dropped unclosed (then it ends)."""


Item = tuple[TranscriptMessage, datetime]


class _Queue:
    """The queue shared by a writer and its thread; the thread holds only this (and a weak
    reference to the writer) while it waits, so an unclosed writer can be collected."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.items: list[Item] = []
        self.busy = False  # a batch taken from the queue is being written
        self.stop = False
        self.waiting = 0  # drain() calls waiting: write at once, do not linger
        self.thread: threading.Thread | None = None

    def take(self) -> list[Item] | None:
        """The next batch (waiting for one), ``[]`` after ``IDLE_SECONDS`` without one, or
        None when stopped with nothing left."""
        with self.cond:
            while not self.items and not self.stop:
                if not self.cond.wait(IDLE_SECONDS):
                    return []
            deadline = time.monotonic() + LINGER_SECONDS
            while len(self.items) < MAX_BATCH and not self.stop and not self.waiting:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.cond.wait(left)
            if not self.items:
                return None
            batch, self.items = self.items[:MAX_BATCH], self.items[MAX_BATCH:]
            self.busy = True
            return batch

    def finish(self) -> None:
        with self.cond:
            self.busy = False
            self.cond.notify_all()


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
        self._q = _Queue()
        self.failures = 0
        """Batches (or sessions of a batch) the store refused: the next recall catches up."""
        self._atexit: Callable[[], None] | None = None

    def put(self, message: TranscriptMessage, appended_at: datetime) -> None:
        """Queue one durable append for the store (returns at once)."""
        q = self._q
        with q.cond:
            q.items.append((message, appended_at))
            if q.thread is None:
                self._start()
            if len(q.items) == 1 or len(q.items) >= MAX_BATCH:
                q.cond.notify_all()

    def drain(self) -> None:
        """Return once every message queued before this call has been written (or given up
        on); at once when the queue is empty."""
        q = self._q
        with q.cond:
            q.waiting += 1
            q.cond.notify_all()
            try:
                while (q.items or q.busy) and q.thread is not None:
                    q.cond.wait()
            finally:
                q.waiting -= 1

    def close(self) -> None:
        """Drain, then stop the thread. Safe to call twice; a later :meth:`put` restarts it."""
        q = self._q
        with q.cond:
            thread = q.thread
            q.stop = True
            q.cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with q.cond:
            q.thread = None
            q.stop = False
            if q.items:  # put while the thread was stopping: write it, do not strand it
                self._start()
                return
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    def _start(self) -> None:
        thread = threading.Thread(
            target=_run, args=(weakref.ref(self), self._q), name="markus-transcript", daemon=True
        )
        self._q.thread = thread
        if self._atexit is None:
            self._atexit = _exit_hook(weakref.ref(self))
            atexit.register(self._atexit)
        thread.start()

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


def _run(ref: weakref.ReferenceType[TranscriptWriter], q: _Queue) -> None:
    while True:
        batch = q.take()
        if batch is None:
            q.finish()
            return
        if not batch:
            if ref() is None:  # dropped unclosed: its exit hook went with it
                return
            continue
        writer = ref()
        try:
            if writer is None:  # the session files hold them: the next first recall imports
                log.warning("transcript writer dropped; %d messages left to the import", len(batch))
            else:
                writer.write(batch)
        except Exception:  # the thread must outlive any bug in one batch
            log.exception("transcript writer failed on a batch of %d", len(batch))
        finally:
            q.finish()
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
