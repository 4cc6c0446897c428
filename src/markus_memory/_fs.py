"""Safe files: identifier validation, atomic writes and exact reads.

Every markdown write follows one protocol (see docs/ARCHITECTURE.md): take the agent's
:class:`~._lock.AgentLock`, re-read the file with :func:`read_text`, change the parsed model,
render, and :func:`atomic_write_text` (temp file in the same directory, fsync, ``os.replace``,
fsync of the directory). A crash at any instant leaves either the old or the new file, never a
torn one; the temp files killed writers leave behind are swept when an agent is opened
(:func:`sweep_temps`) and by the next write of the same path.

Agent files are opened without following symbolic links (:func:`open_file`): a link planted in
an agent directory is refused with :class:`~.errors.SymlinkError`, never read, written through
or replaced.
"""

from __future__ import annotations

import errno
import os
import secrets
import sys
import time
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from .errors import (
    WRITE_REFUSALS,
    CorruptFileError,
    InvalidIdError,
    MarkusMemoryError,
    SymlinkError,
    UnwritableError,
)

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


class AgentId(str):
    """An agent id :func:`checked_agent_id` accepted (its NFC form): what the public entries
    hand inwards, so that the layers below them trust it instead of checking it again."""

    __slots__ = ()


def checked_agent_id(value: object) -> AgentId:
    """``value`` checked as an agent id (:func:`validate_id`), once: an :class:`AgentId` is
    returned as it is."""
    if isinstance(value, AgentId):
        return value
    return AgentId(validate_id("agent id", value))


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


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn the file system's refusal to write ``path`` (read-only, full …) into
    :class:`UnwritableError`, which names the file and the reason; other errors pass as they are."""
    try:
        yield
    except MarkusMemoryError:
        raise
    except OSError as exc:
        if exc.errno not in WRITE_REFUSALS:
            raise
        raise UnwritableError(path, exc) from exc


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably (the write is on disk on return).

    Stale temp files of ``path`` (``.<name>.<8 hex>.tmp`` older than
    :data:`STALE_TEMP_SECONDS`, left by a writer killed mid-write) are removed first. A write
    the file system refuses raises :class:`UnwritableError` and leaves ``path`` as it was.
    """
    with writing(path):
        _atomic_write(path, data)


def _atomic_write(path: Path, data: bytes) -> None:
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
