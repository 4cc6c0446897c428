"""The per-agent lock: reentrant across threads of a process, exclusive across processes.

Every markdown write and every session append happens under :class:`AgentLock` (see
:mod:`._fs` for the write protocol). The lock file is ``<agent dir>/.lock``, opened without
following links; in a read-only home it is locked read-only, or not at all when it does not
exist (nobody can write there either).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ._fs import READ_ONLY_ERRNOS, open_file
from .errors import ClosedError, LockTimeoutError, SymlinkError

MAX_IDLE_LOCK_FDS = 64
"""Lock files kept open while idle; beyond this the least recently used idle one is closed."""


class _PathLock:
    """The state of one lock file within this process: every AgentLock on the path shares it.

    ``fd`` stays open between acquisitions (opening and closing the lock file was about half the
    cost of a session append); it is locked only while ``depth`` > 0.
    """

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None
        self.unlocked = False  # held without a file lock: a read-only home without one

    def close_fd(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class AgentLock:
    """A reentrant lock shared by threads of this process and by other processes.

    Other processes are excluded with ``flock`` on ``<agent dir>/.lock`` (``msvcrt`` on
    Windows); threads of this process with an ``RLock`` shared by every ``AgentLock`` on the
    same path, so one thread may nest acquisitions through any handle.
    """

    _registry: dict[str, _PathLock] = {}
    _registry_guard = threading.Lock()
    # Idle states with an open fd, least recently used first (guarded by _registry_guard).
    _idle: dict[int, _PathLock] = {}

    def __init__(self, lock_path: Path, timeout: float = 30.0) -> None:
        self.path = lock_path
        self.timeout = timeout
        self._closed: str | None = None  # why this handle refuses (see close)
        with AgentLock._registry_guard:
            key = os.path.realpath(lock_path)
            self._state = AgentLock._registry.setdefault(key, _PathLock())

    def _os_lock(self, deadline: float) -> None:
        """Take the file lock on the state's (kept open) fd, reopening a removed lock file."""
        state = self._state
        with AgentLock._registry_guard:
            AgentLock._idle.pop(id(state), None)
        state.unlocked = False
        while True:
            if state.fd is None:
                _register_fork_hook()
                state.fd = _open_lock_file(self.path)
                if state.fd is None:  # read-only, no lock file: nobody can write here
                    state.unlocked = True
                    return
            self._lock_until(state.fd, deadline)
            try:
                same = _same_file(state.fd, self.path)
            except BaseException:
                unlock_fd(state.fd)  # never leave an idle fd holding the lock
                raise
            if same:
                return
            # The lock file was removed or replaced while our fd was open: a lock on the old
            # inode would exclude nobody, so lock the file now at the path instead.
            unlock_fd(state.fd)
            state.close_fd()

    def _lock_until(self, fd: int, deadline: float) -> None:
        delay = 0.0005
        while True:
            try:
                lock_fd(fd)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"could not lock {self.path} within {self.timeout:g} s"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)

    def close(self, why: str) -> None:
        """From now on every acquire through this handle raises ClosedError(``why``): every
        write of a closed memory passes here (other handles on the path are not affected)."""
        self._closed = why

    def acquire(self) -> None:
        if self._closed is not None:
            raise ClosedError(self._closed)
        deadline = time.monotonic() + self.timeout
        state = self._state
        if not state.rlock.acquire(timeout=self.timeout):
            raise LockTimeoutError(f"could not lock {self.path} within {self.timeout:g} s")
        if state.depth == 0:
            try:
                self._os_lock(deadline)
            except BaseException:
                self._park(state)
                state.rlock.release()
                raise
        state.depth += 1

    def release(self) -> None:
        state = self._state
        state.depth -= 1
        if state.depth == 0 and state.fd is not None:
            unlock_fd(state.fd)
            self._park(state)
        state.rlock.release()

    @staticmethod
    def _park(state: _PathLock) -> None:
        """Keep an idle state's fd open, closing the least recently used beyond the bound."""
        if state.fd is None:
            return
        with AgentLock._registry_guard:
            idle = AgentLock._idle
            idle.pop(id(state), None)
            idle[id(state)] = state
            for key in list(idle)[: max(0, len(idle) - MAX_IDLE_LOCK_FDS)]:
                victim = idle[key]
                # Never block here (lock order); a busy state is closed on a later release.
                if victim.rlock.acquire(blocking=False):
                    try:
                        if victim.depth == 0:
                            victim.close_fd()
                            del idle[key]
                    finally:
                        victim.rlock.release()

    @classmethod
    def _after_fork_in_child(cls) -> None:
        # A forked child shares the parent's open file descriptions, and flock belongs to the
        # description: locking through an inherited fd would not exclude the parent. Idle fds
        # are closed (without unlocking: the parent's lock state is not ours to change), and
        # idle thread locks renewed (a parent thread may have been acquiring one).
        cls._registry_guard = threading.Lock()
        for state in cls._registry.values():
            if state.depth == 0:
                state.close_fd()
                state.rlock = threading.RLock()
        cls._idle = {}

    @contextmanager
    def in_process_if_free(self) -> Iterator[bool]:
        """Hold the lock against this process's other threads if none holds it now (never
        blocks, never takes the file lock): yields whether it is held. For upkeep of what a
        process keeps in memory about an agent (other processes are not concerned)."""
        state = self._state
        if self._closed is not None or not state.rlock.acquire(blocking=False):
            yield False
            return
        try:
            yield True
        finally:
            state.rlock.release()

    @contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> AgentLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _open_lock_file(path: Path) -> int | None:
    """The lock file opened for writing (created if need be), else read-only (``flock`` works
    on either), else None when the home is read-only and has no lock file."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open_file(path, os.O_RDWR | os.O_CREAT)
    except SymlinkError:
        raise
    except OSError as exc:
        if exc.errno not in READ_ONLY_ERRNOS:
            raise
    try:
        return open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None


def _same_file(fd: int, path: Path) -> bool:
    try:
        at_path = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_ino, held.st_dev) == (at_path.st_ino, at_path.st_dev)


_fork_hook = threading.Lock()
_fork_hook_registered = False


def _register_fork_hook() -> None:
    """Register the after-fork cleanup once, when the first lock file is opened."""
    global _fork_hook_registered
    with _fork_hook:
        if not _fork_hook_registered and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=AgentLock._after_fork_in_child)
        _fork_hook_registered = True


if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def lock_fd(fd: int) -> None:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            raise BlockingIOError from exc

    def unlock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def lock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
