"""The write-ahead log of a busy ``data.db`` kept bounded.

SQLite restarts its log only when a writer finds it fully checkpointed and no reader in it.
With recalls always overlapping, that moment may never come, and the log grows without end.
A ``TRUNCATE`` checkpoint that waits for it does not help alone: it waits for a reader's slot
in the log, which a reader that never pauses takes again between the checkpoint's polls, and
it holds the write lock meanwhile, so writers queued behind it are refused ("database is
locked") after their busy timeout.

So every user of the file steps aside for a restart. Each process counts its own readers and
writers of the file (:meth:`WalKeeper.enter` / :meth:`WalKeeper.leave`). A write that leaves
the log past :data:`WAL_RESTART_BYTES` holds this process's new users back, waits for those
inside to finish (a few milliseconds: reads are single statements), and marks the file as
restarting (``data.db-restarting``, beside it) for as long as it checkpoints with
``TRUNCATE`` under a short busy timeout. Other processes look for that mark every few
milliseconds and hold their own new users back while it is there, so their readers leave the
log too. If a reader is still in it (a process older than this code, a read held open), the
checkpoint gives up; the next try comes no sooner than :data:`RETRY_SECONDS` later, so a
reader pinned elsewhere costs one short wait a second, not one on every write.
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
"""A write that leaves the log past this size restarts it (40 agents x 2,000 appends had
grown it to 2.6 GB beside a 65 MB database)."""
CHECKPOINT_BUSY_MS = 250
"""How long the checkpoint waits for the write lock and another process's readers."""
DRAIN_SECONDS = 1.0
"""How long a restart waits for this process's readers and writers to leave the file."""
RETRY_SECONDS = 1.0
"""After a restart that could not be done, how long until a write tries again."""
LOOK_SECONDS = 0.002
"""How often a process looks for another's restart mark (one ``stat`` each time)."""
STALE_SECONDS = 10.0
"""A mark older than this was left by a process that died restarting; it is ignored."""


class WalKeeper:
    """One process's users of one file, and the restarts of its write-ahead log."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._mark = Path(f"{path}-restarting")
        self._look_at = 0.0
        self._marked = False
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._inside = 0
        self._held = False
        self._depth = threading.local()
        self._retry_at = 0.0

    def enter(self) -> None:
        """A read or write of the file begins (:meth:`leave` when it ends); waits while a
        restart holds new users back, this process's or, by its mark, another's, unless this
        thread is already inside (its own outer read must not wait for itself). Plain calls,
        not a context manager: every read pays for them."""
        depth: int = getattr(self._depth, "n", 0)
        if not depth and self._restarting_elsewhere():
            self._step_aside()
        with self._lock:
            while self._held and not depth:
                self._cond.wait()
            self._inside += 1
        self._depth.n = depth + 1

    def _restarting_elsewhere(self) -> bool:
        now = time.monotonic()
        if now >= self._look_at:
            self._look_at = now + LOOK_SECONDS
            self._marked = _fresh(self._mark)
        return self._marked

    def _step_aside(self) -> None:
        """Wait (up to DRAIN_SECONDS) while a process restarts the log."""
        deadline = time.monotonic() + DRAIN_SECONDS
        while _fresh(self._mark) and time.monotonic() < deadline:
            time.sleep(0.001)
        self._marked = False

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

    def bound(self, conn: sqlite3.Connection) -> None:
        """After a committed write on ``conn``: past WAL_RESTART_BYTES, checkpoint the whole
        log and truncate it. A checkpoint that fails is logged, never reported as the write's
        failure (the write is committed; a later write tries again)."""
        try:
            if os.path.getsize(f"{self._path}-wal") <= WAL_RESTART_BYTES:
                return
        except OSError:  # no log (yet): nothing to bound
            return
        if time.monotonic() < self._retry_at:
            return
        with self._quiet() as alone:
            if alone is None:  # another thread of this process is restarting it
                return
            done = self._truncate_marked(conn) if alone else False
        if done is False:
            self._retry_at = time.monotonic() + RETRY_SECONDS

    def _truncate_marked(self, conn: sqlite3.Connection) -> bool | None:
        """:func:`_truncate` with the file marked as restarting meanwhile; None when another
        process is restarting it (not now, and no reason to wait before the next try)."""
        marked = _claim(self._mark)
        if marked is None:
            return None
        try:
            return _truncate(self._path, conn)
        finally:
            if marked:
                self._mark.unlink(missing_ok=True)


def _fresh(mark: Path) -> bool:
    """Whether ``mark`` is there and recent (a process is restarting the log)."""
    try:
        return time.time() - mark.stat().st_mtime < STALE_SECONDS
    except OSError:
        return False


def _claim(mark: Path) -> bool | None:
    """Make ``mark``: True when made, None when another process holds a fresh one, False when
    it cannot be made (a read-only directory: the restart goes on without it)."""
    for _ in range(2):
        try:
            os.close(os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            if _fresh(mark):
                return None
            mark.unlink(missing_ok=True)  # left by a process that died restarting
        except OSError:
            return False
    return None


def _truncate(path: Path, conn: sqlite3.Connection) -> bool:
    """``wal_checkpoint(TRUNCATE)`` under CHECKPOINT_BUSY_MS; whether it was done."""
    try:
        (waited,) = conn.execute("PRAGMA busy_timeout").fetchone()
        conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_BUSY_MS}")
        try:
            busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {waited}")
    except sqlite3.Error as exc:
        log.warning("%s: the write-ahead log could not be truncated: %s", path, exc)
        return False
    if busy:
        log.info("%s: the write-ahead log is still read elsewhere; not truncated yet", path)
    return not busy
