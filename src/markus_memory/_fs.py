"""Safe files: identifier validation, atomic writes, exact reads and the per-agent lock.

Every markdown write follows one protocol (see docs/ARCHITECTURE.md): take :class:`AgentLock`,
re-read the file with :func:`read_text`, change the parsed model, render, and
:func:`atomic_write_text` (temp file in the same directory, fsync, ``os.replace``, fsync of the
directory). A crash at any instant leaves either the old or the new file, never a torn one; the
temp file a killed writer leaves behind is swept by the next write of the same path.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from .errors import CorruptFileError, InvalidIdError, LockTimeoutError

MAX_ID_CHARS = 128
MAX_KEY_CHARS = 200
# A temp file of a path older than this belongs to no live writer (writes hold the agent lock and
# take milliseconds), so the next write of that path removes it.
STALE_TEMP_SECONDS = 10.0
# Lock files kept open while idle; beyond this the least recently used idle one is closed.
MAX_IDLE_LOCK_FDS = 64


def _check_common(kind: str, value: object, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidIdError(kind, value, f"expected a string, got {type(value).__name__}")
    if not value or not value.strip():
        raise InvalidIdError(kind, value, "must not be empty")
    if len(value) > max_chars:
        raise InvalidIdError(kind, value, f"longer than {max_chars} characters")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise InvalidIdError(kind, value, "contains a control character (newline, tab, NUL …)")
    if value != value.strip():
        raise InvalidIdError(kind, value, "has leading or trailing white space")
    return value


def validate_id(kind: str, value: object, max_chars: int = MAX_ID_CHARS) -> str:
    """An identifier used as (part of) a file or directory name: agent ids, session ids."""
    text = _check_common(kind, value, max_chars)
    if "/" in text or "\\" in text:
        raise InvalidIdError(kind, value, "contains a path separator")
    if text in (".", "..") or text.startswith("."):
        raise InvalidIdError(kind, value, "must not start with '.'")
    return text


def validate_key(kind: str, value: object, max_chars: int = MAX_KEY_CHARS) -> str:
    """A heading key inside a markdown file (section names, notebook and state keys)."""
    return _check_common(kind, value, max_chars)


class FileSignature(NamedTuple):
    """What identifies one version of a file: a cache is valid only while this is unchanged."""

    inode: int
    size: int
    mtime_ns: int


def signature(path: Path) -> FileSignature | None:
    """The current signature of ``path``, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return FileSignature(st.st_ino, st.st_size, st.st_mtime_ns)


def read_text(path: Path) -> str | None:
    """The exact text of ``path`` (no newline translation), None if missing.

    Raises :class:`CorruptFileError` when the bytes are not UTF-8 (a leading BOM is accepted
    and dropped).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise CorruptFileError(path, "is a directory, expected a file") from exc
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CorruptFileError(path, f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc


def _fsync_dir(directory: Path) -> None:
    if sys.platform == "win32":  # directories cannot be opened for fsync there
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sweep_stale_temps(path: Path) -> None:
    """Remove the temp files of ``path`` that a killed writer left (older than a few seconds)."""
    prefix, cutoff = f".{path.name}.", time.time() - STALE_TEMP_SECONDS
    with os.scandir(path.parent) as entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            if len(name) != len(prefix) + 12 or not _is_hex(name[len(prefix) : -4]):
                continue
            try:
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
            except FileNotFoundError:
                continue


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdef" for ch in text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (the write is on disk on return).

    Stale temp files of ``path`` (``.<name>.<8 hex>.tmp`` older than
    :data:`STALE_TEMP_SECONDS`, left by a writer killed mid-write) are removed first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _sweep_stale_temps(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text, written exactly (no newline translation)."""
    atomic_write_bytes(path, text.encode("utf-8"))


class _PathLock:
    """The state of one lock file within this process: every AgentLock on the path shares it.

    ``fd`` stays open between acquisitions (opening and closing the lock file was about half the
    cost of a session append); it is locked only while ``depth`` > 0.
    """

    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None

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
        with AgentLock._registry_guard:
            key = os.path.realpath(lock_path)
            self._state = AgentLock._registry.setdefault(key, _PathLock())

    def _os_lock(self, deadline: float) -> None:
        """Take the file lock on the state's (kept open) fd, reopening a removed lock file."""
        state = self._state
        with AgentLock._registry_guard:
            AgentLock._idle.pop(id(state), None)
        while True:
            if state.fd is None:
                _register_fork_hook()
                self.path.parent.mkdir(parents=True, exist_ok=True)
                state.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._lock_until(state.fd, deadline)
            try:
                same = _same_file(state.fd, self.path)
            except BaseException:
                _unlock_fd(state.fd)  # never leave an idle fd holding the lock
                raise
            if same:
                return
            # The lock file was removed or replaced while our fd was open: a lock on the old
            # inode would exclude nobody, so lock the file now at the path instead.
            _unlock_fd(state.fd)
            state.close_fd()

    def _lock_until(self, fd: int, deadline: float) -> None:
        delay = 0.0005
        while True:
            try:
                _lock_fd(fd)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"could not lock {self.path} within {self.timeout:g} s"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)

    def acquire(self) -> None:
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
            _unlock_fd(state.fd)
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


def _same_file(fd: int, path: Path) -> bool:
    try:
        at_path = os.stat(path)
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

    def _lock_fd(fd: int) -> None:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError as exc:
            raise BlockingIOError from exc

    def _unlock_fd(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock_fd(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
