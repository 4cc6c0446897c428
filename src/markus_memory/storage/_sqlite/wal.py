"""The write-ahead log of a busy ``data.db`` kept bounded.

SQLite restarts its log only when a writer finds it fully checkpointed and no reader in it.
With a process's recalls always overlapping, that moment may never come, and the log grows
without end; a ``TRUNCATE`` checkpoint that waits for it holds the write lock meanwhile, so
writers queued behind it could be refused ("database is locked") after their busy timeout.

So each process counts its own readers and writers of the file (:meth:`WalKeeper.using`). A
write that leaves the log past :data:`WAL_RESTART_BYTES` holds new ones back, waits for those
inside to finish (a few milliseconds: reads are single statements), and checkpoints with
``TRUNCATE`` under a short busy timeout, which is then only another process's reader to wait
for. If one is still in the log, the checkpoint gives up; the next try comes no sooner than
:data:`RETRY_SECONDS` later, so a reader pinned elsewhere costs one short wait a second, not
one on every write.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

WAL_RESTART_BYTES = 64 * 1024 * 1024
CHECKPOINT_BUSY_MS = 250
"""How long the checkpoint waits for the write lock and another process's readers."""
DRAIN_SECONDS = 1.0
"""How long a restart waits for this process's readers and writers to leave the file."""
RETRY_SECONDS = 1.0
"""After a restart that could not be done, how long until a write tries again."""


class WalKeeper:
    """One process's users of one file, and the restarts of its write-ahead log."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._inside = 0
        self._held = False
        self._depth = threading.local()
        self._retry_at = 0.0

    def enter(self) -> None:
        """A read or write of the file begins (:meth:`leave` when it ends); waits while a
        restart holds new users back, unless this thread is already inside (its own outer
        read must not wait for itself). Plain calls, not a context manager: every read pays
        for them."""
        depth: int = getattr(self._depth, "n", 0)
        with self._lock:
            if self._held and not depth:
                while self._held:
                    self._cond.wait()
            self._inside += 1
        self._depth.n = depth + 1

    def leave(self) -> None:
        self._depth.n -= 1
        with self._lock:
            self._inside -= 1
            if self._held:
                self._cond.notify_all()

    @contextmanager
    def _quiet(self) -> Iterator[bool | None]:
        """Holds new users back and yields whether every other one left within
        DRAIN_SECONDS; None at once when another thread is already restarting the log."""
        own: int = getattr(self._depth, "n", 0)
        with self._cond:
            if self._held:
                alone = None
            else:
                self._held = True
                alone = self._cond.wait_for(lambda: self._inside <= own, DRAIN_SECONDS)
        if alone is None:
            yield None
            return
        try:
            yield alone
        finally:
            with self._cond:
                self._held = False
                self._cond.notify_all()

    def bound(self, path: Path, conn: sqlite3.Connection) -> None:
        """After a committed write on ``conn``: past WAL_RESTART_BYTES, checkpoint the whole
        log and truncate it. A checkpoint that fails is logged, never reported as the write's
        failure (the write is committed; a later write tries again)."""
        try:
            if os.path.getsize(f"{path}-wal") <= WAL_RESTART_BYTES:
                return
        except OSError:  # no log (yet): nothing to bound
            return
        if time.monotonic() < self._retry_at:
            return
        with self._quiet() as alone:
            if alone is None:
                return
            busy = not alone or _truncate(path, conn)
        if busy:
            self._retry_at = time.monotonic() + RETRY_SECONDS


def _truncate(path: Path, conn: sqlite3.Connection) -> bool:
    """``wal_checkpoint(TRUNCATE)`` under CHECKPOINT_BUSY_MS; whether it could not be done."""
    try:
        (waited,) = conn.execute("PRAGMA busy_timeout").fetchone()
        conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_BUSY_MS}")
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {waited}")
    except sqlite3.Error as exc:
        log.warning("%s: the write-ahead log could not be truncated: %s", path, exc)
        return True
    if busy:
        log.info("%s: the write-ahead log is still read elsewhere; not truncated yet", path)
    return bool(busy)
