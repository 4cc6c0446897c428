"""Safe files: identifier validation, atomic writes, exact reads and the per-agent lock.

Every markdown write follows one protocol (see docs/ARCHITECTURE.md): take :class:`AgentLock`,
re-read the file with :func:`read_text`, change the parsed model, render, and
:func:`atomic_write_text` (temp file in the same directory, fsync, ``os.replace``, fsync of the
directory). A crash at any instant leaves either the old or the new file, never a torn one; the
temp files killed writers leave behind are swept when an agent is opened (:func:`sweep_temps`)
and by the next write of the same path.

Agent files are opened without following symbolic links (:func:`open_file`): a link planted in
an agent directory is refused with :class:`~.errors.SymlinkError`, never read, written through
or replaced. Reading needs no write access: in a read-only home the agent lock is taken on the
existing lock file opened read-only, or skipped when there is none (nobody can write there).
"""

from __future__ import annotations

import errno
import os
import secrets
import sys
import threading
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from .errors import CorruptFileError, InvalidIdError, LockTimeoutError, SymlinkError

MAX_ID_CHARS = 128
MAX_ID_BYTES = 128
"""Agent and session ids are names on disk: counted in UTF-8 bytes, not characters."""
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Unicode categories refused in ids: controls, format characters (zero-width, bidi overrides,
BOM), surrogates, private-use and unassigned code points, line and paragraph separators."""
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


def validate_id(kind: str, value: object, max_bytes: int = MAX_ID_BYTES) -> str:
    """An identifier used as (part of) a file or directory name: agent ids, session ids.

    Returns the NFC form, so that ids that look alike and differ only in normalisation name
    one thing. Refuses what would make look-alikes or hide text: invisible and bidi-control
    characters, spaces other than U+0020; and ids over ``max_bytes`` bytes in UTF-8.
    """
    if isinstance(value, str):
        for ch in value:
            category = unicodedata.category(ch)
            if category in _INVISIBLE or (category == "Zs" and ch != " "):
                name = unicodedata.name(ch, "unnamed")
                raise InvalidIdError(
                    kind,
                    value,
                    f"contains an invisible or direction-changing character (U+{ord(ch):04X} "
                    f"{name}); use visible characters only",
                )
        value = unicodedata.normalize("NFC", value)
    text = _check_common(kind, value, max_bytes)
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise InvalidIdError(kind, value, f"is {size} bytes in UTF-8, more than {max_bytes}")
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


O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
READ_ONLY_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
"""What ``open`` says when the disk or the permissions refuse a write."""


def open_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that never follows a symbolic link at ``path`` (SymlinkError instead)."""
    try:
        return os.open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (O_NOFOLLOW == 0 and path.is_symlink()):
            raise SymlinkError(path) from exc
        raise


def read_bytes(path: Path) -> bytes:
    """The bytes of ``path``, opened without following a link (FileNotFoundError if none)."""
    fd = open_file(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def refuse_symlink(path: Path) -> None:
    """Raise SymlinkError if ``path`` is a symbolic link (a missing path is fine)."""
    if path.is_symlink():
        raise SymlinkError(path)


def read_text(path: Path) -> str | None:
    """The exact text of ``path`` (no newline translation), None if missing.

    Raises :class:`CorruptFileError` when the bytes are not UTF-8 (a leading BOM is accepted
    and dropped), :class:`SymlinkError` when ``path`` is a symbolic link.
    """
    try:
        data = read_bytes(path)
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
    _sweep(path.parent, f".{path.name}.")


def sweep_temps(directory: Path) -> int:
    """Remove every stale temp file a killed writer left in ``directory`` and its
    subdirectories (links are not followed); how many. Silent where the disk refuses."""
    removed = 0
    try:
        for parent, dirs, _ in os.walk(directory):
            removed += _sweep(Path(parent), ".")
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    except OSError:
        pass
    return removed


def _sweep(directory: Path, prefix: str) -> int:
    """Remove ``<prefix>…<8 hex>.tmp`` files of ``directory`` older than the cutoff."""
    cutoff, removed = time.time() - STALE_TEMP_SECONDS, 0
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp") and _is_temp_name(name)):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
        except OSError:  # gone already, or a read-only directory
            continue
    return removed


def _is_temp_name(name: str) -> bool:
    """``.<target name>.<8 hex>.tmp``, the name :func:`atomic_write_bytes` gives temp files."""
    stem = name[: -len(".tmp")]
    tag = stem.rpartition(".")[2]
    return name.startswith(".") and len(stem) > 10 and len(tag) == 8 and _is_hex(tag)


def _is_hex(text: str) -> bool:
    return all(ch in "0123456789abcdef" for ch in text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (the write is on disk on return).

    Stale temp files of ``path`` (``.<name>.<8 hex>.tmp`` older than
    :data:`STALE_TEMP_SECONDS`, left by a writer killed mid-write) are removed first.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    refuse_symlink(path)
    _sweep_stale_temps(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
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
