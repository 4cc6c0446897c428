"""The two files of one session: the Markus ``<stem>.json`` checkpoint and its ``.jsonl`` journal.

The journal starts with a header naming the checkpoint it extends (a hash of the checkpoint's
bytes), then holds one line per appended message. Appending is one ``os.write`` on an
``O_APPEND`` descriptor; a checkpoint writes the JSON atomically and then deletes the journal.
A crash between those two steps leaves a journal whose base no longer matches: it is discarded,
because the new checkpoint already holds its messages. A torn last line (a write that never
returned) is cut off on load. A damaged complete line is set aside to
``<journal>.corrupt-<ms>`` and every intact record kept (see ``_journal.replay``); a journal
whose header is damaged, or that outlived its session file, is set aside whole. Repairs need
write access: in a read-only directory the session is read as repaired and the files are left.
Callers hold the agent lock around every method here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from ..._fs import FileSignature, atomic_write_bytes, open_file, read_bytes, signature, writing
from ...config import epoch_ms, parse_iso
from ...errors import CorruptFileError
from . import _format as fmt
from . import _journal as jr
from ._records import SessionInfo

log = logging.getLogger(__name__)
TAIL_BYTES = 64
"""Enough of a checkpoint's end to hold its ``"nextSeq": N`` line."""


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _aside(path: Path, why: str = "corrupt") -> Path:
    target = path.with_name(f"{path.name}.{why}-{time.time_ns() // 1_000_000}")
    os.replace(path, target)
    return target


def _repair(what: str, action: Callable[[], object]) -> bool:
    """Run a repair of the session files; False (logged) when the disk refuses it."""
    try:
        action()
    except OSError as exc:
        log.warning("cannot %s: %s", what, exc)
        return False
    return True


def _set_mtime(target: int | Path, moment: datetime) -> None:
    """mtime = lastActivityAt, so that listing sessions needs no parsing."""
    if isinstance(target, int) and os.utime not in os.supports_fd:
        return
    stamp_ns = epoch_ms(moment) * 1_000_000
    os.utime(target, ns=(stamp_ns, stamp_ns))


def paths_of(directory: Path, sid: str) -> tuple[Path, Path]:
    stem = fmt.file_stem(sid)
    return directory / f"{stem}.json", directory / f"{stem}.jsonl"


def remove(directory: Path, sid: str) -> bool:
    """Delete the files of ``sid`` (checkpoint, journal, a raw-id name the original wrote);
    False when there were none."""
    json_path, journal_path = paths_of(directory, sid)
    legacy = directory / f"{sid}.json"
    removed = False
    for path in dict.fromkeys((journal_path, json_path, legacy)):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed = True
    return removed


def locate(directory: Path, sid: str) -> Path | None:
    """The file holding ``sid``: the encoded name, else a raw-id name the original wrote."""
    json_path, _ = paths_of(directory, sid)
    if json_path.exists():
        return json_path
    legacy = directory / f"{sid}.json"
    if legacy != json_path and os.name != "nt" and legacy.exists():
        return legacy
    return None


def peek_next_seq(directory: Path, sid: str) -> int | None:
    """An upper bound of the seq the next append to ``sid`` gets, without parsing: the
    checkpoint's ``nextSeq`` (from its last bytes) plus the journal's lines. None when the
    checkpoint does not end so (written by Markus, or by hand): parse it to know.

    The journal is read before the checkpoint: a checkpoint in between only makes the sum
    larger, so a session with unrecorded messages is never reported as recorded.
    """
    json_path, journal_path = paths_of(directory, sid)
    try:
        journal = read_bytes(journal_path)
    except FileNotFoundError:
        journal = b""
    try:
        fd = open_file(json_path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        tail = os.pread(fd, TAIL_BYTES, max(0, size - TAIL_BYTES))
    finally:
        os.close(fd)
    found = fmt.next_seq_in_tail(tail)
    if found is None:
        return None
    return found + max(journal.count(b"\n") - 1, 0)


def scan(directory: Path) -> list[SessionInfo]:
    """Every session on disk from names and mtimes only, newest activity first."""
    found: dict[str, SessionInfo] = {}
    journals: dict[str, float] = {}
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return []
    for entry in entries:
        name = entry.name
        if name.startswith(".") or not entry.is_file():
            continue
        if name.endswith(".jsonl"):
            journals[name[: -len(".jsonl")]] = entry.stat().st_mtime
        elif name.endswith(".json"):
            sid = fmt.id_from_file_stem(name[: -len(".json")])
            moment = datetime.fromtimestamp(entry.stat().st_mtime, tz=timezone.utc)
            if sid not in found or moment > found[sid].last_activity_at:
                found[sid] = SessionInfo(sid, moment, Path(entry.path))
    for stem, mtime in journals.items():
        info = found.get(fmt.id_from_file_stem(stem))
        moment = datetime.fromtimestamp(mtime, tz=timezone.utc)
        if info is not None and moment > info.last_activity_at:
            found[info.id] = SessionInfo(info.id, moment, info.path)
    return sorted(found.values(), key=lambda i: (i.last_activity_at, i.id), reverse=True)


class SessionFiles:
    """A loaded session and what we know of its checkpoint and journal on disk."""

    def __init__(self, doc: fmt.SessionDoc, directory: Path) -> None:
        self.doc = doc
        self.directory = directory
        self.json_path, self.journal_path = paths_of(directory, doc.id)
        self.json_sig: FileSignature | None = None
        self.base = ""
        self.json_size = 0
        self.fd: int | None = None
        self.journal_ino: int | None = None
        self.journal_size = 0
        self.shrink_checked = 0
        self.dirty = False
        self.legacy_path: Path | None = None
        self.released: int | None = None  # messages held on disk while none is held parsed

    @property
    def count(self) -> int:
        """How many messages the session holds, parsed or released."""
        return len(self.doc.messages) if self.released is None else self.released

    def release(self) -> None:
        """Drop the parsed messages, keep what an append needs: the files' state and the
        count (see :mod:`._parsed`). Only :meth:`unchanged` and appends apply after this."""
        self.close_fd()
        self.released = self.count
        self.doc.messages = []
        self.shrink_checked = 0

    def unchanged(self) -> bool:
        """Whether the files are exactly as this process left them: no other process has
        appended, checkpointed or compacted since (a released copy cannot replay that)."""
        return self.legacy_path is None and self._journal_growth() == 0

    @classmethod
    def fresh(cls, doc: fmt.SessionDoc, directory: Path) -> SessionFiles:
        """A new session; a journal left beside a hand-deleted session file is set aside."""
        files = cls(doc, directory)
        if files.journal_path.exists():
            moved = _aside(files.journal_path, "orphan")
            log.warning("journal without its session file set aside as %s", moved.name)
        files.dirty = True
        return files

    @classmethod
    def load(cls, directory: Path, sid: str) -> SessionFiles | None:
        """Checkpoint + journal of ``sid``; None if there is no session file.

        A file that does not parse is moved aside to ``<name>.corrupt-<ms>`` (with its journal)
        and reported as CorruptFileError; a file holding another id is refused untouched.
        """
        path = locate(directory, sid)
        if path is None:
            return None
        try:
            data = read_bytes(path)
        except FileNotFoundError:
            return None
        json_path, journal_path = paths_of(directory, sid)
        try:
            doc = fmt.parse_session(data.decode("utf-8-sig"))
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
            try:
                where = f"moved to {_aside(path).name}"
                if journal_path.exists():
                    _aside(journal_path)
            except OSError:
                where = "left in place (the directory is not writable)"
            raise CorruptFileError(path, f"not a session file ({exc}); {where}") from exc
        if doc.id != sid:
            raise CorruptFileError(path, f"holds session {doc.id!r}, expected {sid!r}")
        files = cls(doc, directory)
        files.base = _hash(data)
        files.json_size = len(data)
        if path == json_path:
            files.json_sig = signature(path)
        else:  # a raw-named Markus file: the next checkpoint renames it
            files.legacy_path = path
            files.dirty = True
        files._replay()
        return files

    def _replay(self) -> None:
        try:
            data = read_bytes(self.journal_path)
        except FileNotFoundError:
            return
        lines, used = jr.split_lines(data)
        header = jr.parse_journal_header(lines[0]) if lines else None
        if header is None and lines:  # a damaged header: its records cannot be placed
            _repair("set aside a damaged journal", lambda: _aside(self.journal_path))
            return
        if header != (self.doc.id, self.base):
            # Absorbed by a later checkpoint (crash before the unlink), or a torn first write.
            _repair("remove a stale journal", self.journal_path.unlink)
            return
        replayed = jr.replay(lines[1:], len(self.doc.messages))
        self.doc.messages.extend(replayed.messages)
        if replayed.last_timestamp is not None:
            self.doc.last_activity_at = replayed.last_timestamp
        self.dirty = self.dirty or bool(replayed.messages)
        st = os.stat(self.journal_path)
        self.journal_ino, self.journal_size = st.st_ino, used
        if replayed.damaged:
            self._set_aside_lines(replayed.damaged)
        elif used < len(data):  # a torn last line: cut it so the next append starts clean
            _repair("cut a torn journal line", lambda: os.truncate(self.journal_path, used))

    def _set_aside_lines(self, damaged: list[bytes]) -> None:
        """Keep the damaged lines in ``<journal>.corrupt-<ms>``, then checkpoint the intact
        records (with placeholders) so that the journal starts clean."""
        target = self.journal_path.with_name(
            f"{self.journal_path.name}.corrupt-{time.time_ns() // 1_000_000}"
        )
        data = b"".join(line + b"\n" for line in damaged)
        if _repair("set aside damaged journal lines", lambda: atomic_write_bytes(target, data)):
            log.warning(
                "session %s: %d damaged journal line(s) set aside in %s",
                self.doc.id,
                len(damaged),
                target.name,
            )
            _repair("checkpoint a repaired session", self.checkpoint)

    def is_current(self) -> bool:
        """Whether our copy matches the disk, after reading what other processes appended.

        False means another process checkpointed, compacted or damaged the session: reload.
        """
        growth = self._journal_growth()
        return growth == 0 or (growth is not None and self._read_tail())

    def _journal_growth(self) -> int | None:
        """The bytes other processes appended to the journal since we last saw it; None
        when the files are not the ones we know (checkpointed, compacted, replaced, cut)."""
        if signature(self.json_path) != self.json_sig:
            return None
        try:
            st = os.stat(self.journal_path)
        except FileNotFoundError:
            return 0 if self.journal_ino is None else None
        if st.st_ino != self.journal_ino or st.st_size < self.journal_size:
            return None
        return st.st_size - self.journal_size

    def _read_tail(self) -> bool:
        fd = open_file(self.journal_path, os.O_RDONLY)
        try:
            os.lseek(fd, self.journal_size, os.SEEK_SET)
            data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        finally:
            os.close(fd)
        lines, used = jr.split_lines(data)
        try:
            records = [jr.parse_journal_record(line) for line in lines]
        except ValueError:  # damaged: a reload keeps the intact records
            return False
        if any(r.index != len(self.doc.messages) + n for n, r in enumerate(records)):
            return False
        for record in records:
            self.doc.messages.append(record.message)
            self.doc.last_activity_at = record.timestamp
        self.dirty = self.dirty or bool(records)
        self.journal_size += used
        if used < len(data):  # a writer died mid-line (we hold the lock): cut its remnant
            size = self.journal_size
            _repair("cut a torn journal line", lambda: os.truncate(self.journal_path, size))
        return True

    def append_line(self, line: bytes, now: datetime, *, fsync: bool) -> None:
        """Write one journal record with a single ``os.write`` (the header too, if new).

        All or nothing: if any step fails (disk full, I/O error) the journal is cut back to
        its length before the call and the error raised, so a failed append stored nothing;
        a write the file system refuses (read-only, full) raises :class:`UnwritableError`.
        """
        with writing(self.journal_path):
            self._append_line(line, now, fsync=fsync)

    def _append_line(self, line: bytes, now: datetime, *, fsync: bool) -> None:
        if self.fd is None and self.journal_ino is not None:
            self.fd = open_file(self.journal_path, os.O_WRONLY | os.O_APPEND)
        if self.fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC
            self.fd = open_file(self.journal_path, flags)
            self.journal_ino = os.fstat(self.fd).st_ino
            self.journal_size = 0
            line = jr.journal_header(self.doc.id, self.base) + line
        fd, before = self.fd, self.journal_size
        try:
            if os.fstat(fd).st_size != before:  # a remnant a failed repair left: cut it
                os.ftruncate(fd, before)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        except BaseException:
            _repair("undo a failed journal write", lambda: os.ftruncate(fd, before))
            raise
        self.journal_size += len(line)
        try:
            _set_mtime(fd, now)
        except OSError:  # the record is stored; only the listing order may lag
            log.warning("cannot set the time of %s", self.journal_path.name)

    def checkpoint(self) -> None:
        """Write the Markus JSON atomically, then drop the journal it now contains."""
        if self.released is not None:
            raise RuntimeError(f"session {self.doc.id} is released: load it to checkpoint")
        data = fmt.render_session(self.doc).encode("utf-8")
        atomic_write_bytes(self.json_path, data)
        moment = parse_iso(self.doc.last_activity_at)
        if moment is not None:
            _set_mtime(self.json_path, moment)
        self.close_fd()
        self.journal_path.unlink(missing_ok=True)
        if self.legacy_path is not None:
            self.legacy_path.unlink(missing_ok=True)
            self.legacy_path = None
        self.json_sig = signature(self.json_path)
        self.base = _hash(data)
        self.json_size = len(data)
        self.journal_ino, self.journal_size = None, 0
        self.dirty = False

    def close_fd(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
