"""WriterPool: the few threads that record every agent's appends, shared by the process.

Each :class:`~.transcript_writer.TranscriptWriter` owns a :class:`WriterQueue`; the process's
pool drains every queue with at most ``WRITER_THREADS`` threads. One thread per agent cost a
server with hundreds of agents a thread, a SQLite connection (its page cache and file
descriptors: connections are per thread) per agent, and on SQLite hundreds of writers queued
for the one write lock, where some waited past the busy timeout and failed their batch.

A queue is due ``LINGER_SECONDS`` after its first waiting append (one transaction gathers the
appends of that moment), at once when it holds ``MAX_BATCH`` or when a drain waits on it. A
queue is written by one thread at a time, so an agent's batches are stored in append order.
The threads start at the first append, at most one per due queue, and end once every writer
is closed (or dropped) and nothing is queued; an exit hook writes what is queued for writers
still alive. A forked child gets a pool of its own.
"""

from __future__ import annotations

import atexit
import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from datetime import datetime

from ..storage.repos.transcripts import TranscriptMessage

log = logging.getLogger(__name__)

WRITER_THREADS = 2
"""Threads writing appends for all the agents of a process (SQLite takes one writer at a
time; the second keeps one agent's slow batch from holding up the others)."""
MAX_BATCH = 256
MAX_HELD = 32 * MAX_BATCH
"""Appends the whole pool may hold (queued or being written) before an append waits for room.
Appends arriving faster than the store takes them for long would otherwise pile up in memory
without bound (and the C allocator keeps the high-water mark after they are written). Large
enough that many agents' queues still fill batches that keep their rows together: 60 agents x
500 appends as fast as they come, append mean 0.384 ms at 8 batches, 0.270 at 32, 0.117
unbounded (bench_many_agents.py)."""
LINGER_SECONDS = 0.05
"""How long a queue gathers appends after the first of a batch (unless a drain asks): one
transaction per batch, and the appending threads are not competing with it for every append."""
IDLE_SECONDS = 1.0
"""How often an idle thread checks whether every writer is gone (then it ends)."""

Item = tuple[TranscriptMessage, datetime]
Sink = Callable[[list[Item]], None]
"""Stores one batch; never raises (see ``TranscriptWriter.write``)."""


class WriterQueue:
    """The appends of one writer waiting for the pool. ``sink`` returns the writer's batch
    writer, or None once the writer was dropped (its queued appends are left to the import).
    Every field is guarded by the pool's lock."""

    def __init__(self, pool: WriterPool, sink: Callable[[], Sink | None]) -> None:
        self.pool = pool
        self.sink = sink
        self.items: list[Item] = []
        self.busy = False  # a batch taken from the queue is being written
        self.ticket: int | None = None  # its entry in the pool's schedule, while due
        self.due = 0.0
        self.waiting = 0  # drain() calls waiting: write at once, do not linger
        self.open = False  # counted among the pool's users
        self.done = threading.Condition(pool.lock)

    def put(self, item: Item) -> None:
        """Queue one append: at once, unless the pool already holds ``MAX_HELD`` appends;
        then once a batch is written (the writer never waits for an appender's lock)."""
        pool = self.pool
        with pool.lock:
            while pool.held >= MAX_HELD and not pool.exiting:
                pool.work.notify_all()  # a full pool writes every queue at once
                pool.room.wait()
            pool.held += 1
            self.items.append(item)
            if not self.open:
                self.open = True
                pool.users += 1
            if self.ticket is None and not self.busy:
                pool.schedule(self, time.monotonic() + LINGER_SECONDS)
            elif len(self.items) >= MAX_BATCH:
                pool.hurry(self)

    def drain(self) -> None:
        """Return once every append queued before this call has been written (or given up
        on); at once when the queue is empty."""
        with self.pool.lock:
            self.waiting += 1
            try:
                self.pool.hurry(self)
                while self.items or self.busy:
                    self.done.wait()
            finally:
                self.waiting -= 1

    def release(self) -> None:
        """Stop counting this queue among the pool's users (drain it first); when it was the
        last and nothing is left to write, wait for the pool's threads to end (unless another
        writer starts meanwhile). Queues of dropped writers still being written are not
        waited for: the threads end by themselves after them."""
        pool = self.pool
        me = threading.current_thread()
        with pool.lock:
            if self.open:
                self.open = False
                pool.users -= 1
            pool.release_dropped()
            if pool.users > 0 or pool.busy or pool.pending():
                return
            pool.work.notify_all()
            ending = pool.threads - {me}
            while pool.users == 0 and pool.threads & ending:
                pool.work.wait()
            if pool.users > 0:
                return
        for thread in ending:
            thread.join()

    def _urgent(self) -> bool:
        return self.waiting > 0 or len(self.items) >= MAX_BATCH


class WriterPool:
    """The threads draining every :class:`WriterQueue` of this process."""

    def __init__(self, size: int = WRITER_THREADS) -> None:
        self.size = size
        self.pid = os.getpid()
        self.lock = threading.Lock()
        self.work = threading.Condition(self.lock)
        self.schedule_heap: list[tuple[float, int, WriterQueue]] = []
        self.tickets = itertools.count()
        self.threads: set[threading.Thread] = set()
        self.users = 0  # open queues: the threads stay while there are any
        self.busy = 0  # batches being written
        self.held = 0  # appends queued or being written, every queue together
        self.room = threading.Condition(self.lock)  # ``held`` went down
        self.exiting = False
        self.dropped: list[WriterQueue] = []
        """Queues whose writer was collected unclosed: appended by a finalizer, which must
        not take the lock (it may run in a thread holding it); a thread releases them."""

    # Called with the lock held.

    def schedule(self, q: WriterQueue, due: float) -> None:
        """Make ``q`` due at ``due`` (monotonic seconds), replacing an earlier entry."""
        q.ticket = next(self.tickets)
        q.due = due
        heapq.heappush(self.schedule_heap, (due, q.ticket, q))
        if self.busy < len(self.threads):  # one is not writing: it takes the queue
            self.work.notify_all()
        elif len(self.threads) < self.size:
            self._start()

    def hurry(self, q: WriterQueue) -> None:
        """Make a queue that is waiting to fall due due now."""
        if q.ticket is not None and q.due > 0:
            self.schedule(q, 0.0)

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name="markus-transcript", daemon=True)
        self.threads.add(thread)
        thread.start()

    def release_dropped(self) -> None:
        while self.dropped:
            q = self.dropped.pop()
            if q.open:
                q.open = False
                self.users -= 1

    def pending(self) -> bool:
        """Whether a queue is waiting to be written."""
        return any(q.ticket == ticket for _, ticket, q in self.schedule_heap)

    def _next(self) -> WriterQueue | float | None:
        """The queue to write now, else how long until the earliest falls due (None: none)."""
        heap = self.schedule_heap
        while heap:
            due, ticket, q = heap[0]
            if q.ticket != ticket:  # replaced by a later entry
                heapq.heappop(heap)
                continue
            left = due - time.monotonic()
            if left > 0 and not self.exiting and not q._urgent() and self.held < MAX_HELD:
                return left
            heapq.heappop(heap)
            q.ticket = None
            return q
        return None

    def _finish(self, q: WriterQueue, written: int) -> None:
        q.busy = False
        self.busy -= 1
        self.held -= written
        self.room.notify_all()
        if q.items:
            urgent = q._urgent() or self.exiting
            self.schedule(q, 0.0 if urgent else time.monotonic() + LINGER_SECONDS)
        q.done.notify_all()
        if self.exiting:
            self.work.notify_all()

    # The threads.

    def _run(self) -> None:
        with self.lock:
            while True:
                self.release_dropped()
                found = self._next()
                if found is None and self.users == 0:
                    self.threads.discard(threading.current_thread())
                    self.work.notify_all()
                    return
                if not isinstance(found, WriterQueue):
                    self.work.wait(IDLE_SECONDS if found is None else found)
                    continue
                batch, found.items = found.items[:MAX_BATCH], found.items[MAX_BATCH:]
                found.busy = True
                self.busy += 1
                self.lock.release()
                try:
                    _write(found, batch)
                finally:
                    self.lock.acquire()
                    self._finish(found, len(batch))

    def write_queued(self) -> None:
        """Write every queue now and wait until they are empty (the exit hook)."""
        with self.lock:
            self.exiting = True
            self.work.notify_all()
            self.room.notify_all()
            while self.threads and (self.schedule_heap or self.busy):
                self.work.wait(IDLE_SECONDS)


def _write(q: WriterQueue, batch: list[Item]) -> None:
    sink = q.sink()
    try:
        if sink is None:  # the session files hold them: the next first recall imports
            log.warning("transcript writer dropped; %d messages left to the import", len(batch))
        else:
            sink(batch)
    except Exception:  # the thread must outlive any bug in one batch
        log.exception("transcript writer failed on a batch of %d", len(batch))


_POOLS: dict[int, WriterPool] = {}
_POOLS_GUARD = threading.Lock()


def shared_pool() -> WriterPool:
    """This process's pool (a forked child makes its own: threads do not survive a fork)."""
    pid = os.getpid()
    with _POOLS_GUARD:
        pool = _POOLS.get(pid)
        if pool is None:
            if not _POOLS:
                atexit.register(_write_queued_at_exit)  # inherited by a forked child
            _POOLS.clear()
            pool = _POOLS[pid] = WriterPool()
        return pool


def _write_queued_at_exit() -> None:
    pool = _POOLS.get(os.getpid())
    if pool is None:
        return
    try:
        pool.write_queued()
    except Exception:  # an exit hook must never raise
        log.exception("writing the queued transcript appends at exit failed")
