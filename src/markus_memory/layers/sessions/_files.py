"""The two files of one session: the Markus ``<stem>.json`` checkpoint and its ``.jsonl`` journal.

The journal starts with a header naming the checkpoint it extends (a hash of the checkpoint's
bytes), then holds one line per appended message. Appending is one ``os.write`` on an
``O_APPEND`` descriptor; a checkpoint writes the JSON atomically and then deletes the journal.
A crash between those two steps leaves a journal whose base no longer matches: it is discarded,
because the new checkpoint already holds its messages. A torn last line is cut off on load.
Callers hold the agent lock around every method here.
"""

from __future__ import annotations

import hashlib
import os
import time
from datetime import datetime, timezone
from pathlib import Path

from ..._fs import FileSignature, atomic_write_bytes, signature
from ...config import epoch_ms, parse_iso
from ...errors import CorruptFileError
from . import _format as fmt
from ._records import SessionInfo


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _aside(path: Path) -> Path:
    target = path.with_name(f"{path.name}.corrupt-{time.time_ns() // 1_000_000}")
    os.replace(path, target)
    return target


def _set_mtime(target: int | Path, moment: datetime) -> None:
    """mtime = lastActivityAt, so that listing sessions needs no parsing."""
    if isinstance(target, int) and os.utime not in os.supports_fd:
        return
    stamp_ns = epoch_ms(moment) * 1_000_000
    os.utime(target, ns=(stamp_ns, stamp_ns))


def paths_of(directory: Path, sid: str) -> tuple[Path, Path]:
    stem = fmt.file_stem(sid)
    return directory / f"{stem}.json", directory / f"{stem}.jsonl"


def locate(directory: Path, sid: str) -> Path | None:
    """The file holding ``sid``: the encoded name, else a raw-id name the original wrote."""
    json_path, _ = paths_of(directory, sid)
    if json_path.exists():
        return json_path
    legacy = directory / f"{sid}.json"
    if legacy != json_path and os.name != "nt" and legacy.exists():
        return legacy
    return None


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

    @classmethod
    def fresh(cls, doc: fmt.SessionDoc, directory: Path) -> SessionFiles:
        """A new session; a journal left beside a hand-deleted session file is removed."""
        files = cls(doc, directory)
        files.journal_path.unlink(missing_ok=True)
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
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        json_path, journal_path = paths_of(directory, sid)
        try:
            doc = fmt.parse_session(data.decode("utf-8-sig"))
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError included
            moved = _aside(path)
            if journal_path.exists():
                _aside(journal_path)
            raise CorruptFileError(
                path, f"not a session file ({exc}); moved to {moved.name}"
            ) from exc
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
            data = self.journal_path.read_bytes()
        except FileNotFoundError:
            return
        lines, used = fmt.split_lines(data)
        header = fmt.parse_journal_header(lines[0]) if lines else None
        if header != (self.doc.id, self.base):
            # Absorbed by a later checkpoint (crash before the unlink), or a torn header.
            self.journal_path.unlink()
            return
        try:
            records = [fmt.parse_journal_record(line) for line in lines[1:]]
            for n, record in enumerate(records):
                if record.index != len(self.doc.messages) + n:
                    raise ValueError(f"record {n} has index {record.index}, out of sequence")
        except ValueError as exc:
            moved = _aside(self.journal_path)
            raise CorruptFileError(
                self.journal_path, f"damaged journal ({exc}); moved to {moved.name}"
            ) from exc
        for record in records:
            self.doc.messages.append(record.message)
            self.doc.last_activity_at = record.timestamp
        if used < len(data):  # a torn last line: cut it so the next append starts clean
            os.truncate(self.journal_path, used)
        st = os.stat(self.journal_path)
        self.journal_ino, self.journal_size = st.st_ino, st.st_size
        self.dirty = self.dirty or bool(records)

    def is_current(self) -> bool:
        """Whether our copy matches the disk, after reading what other processes appended.

        False means another process checkpointed, compacted or damaged the session: reload.
        """
        if signature(self.json_path) != self.json_sig:
            return False
        try:
            st = os.stat(self.journal_path)
        except FileNotFoundError:
            return self.journal_ino is None
        if st.st_ino != self.journal_ino or st.st_size < self.journal_size:
            return False
        return st.st_size == self.journal_size or self._read_tail()

    def _read_tail(self) -> bool:
        with open(self.journal_path, "rb") as handle:
            handle.seek(self.journal_size)
            data = handle.read()
        lines, used = fmt.split_lines(data)
        try:
            records = [fmt.parse_journal_record(line) for line in lines]
        except ValueError:
            return False
        if any(r.index != len(self.doc.messages) + n for n, r in enumerate(records)):
            return False
        for record in records:
            self.doc.messages.append(record.message)
            self.doc.last_activity_at = record.timestamp
        self.dirty = self.dirty or bool(records)
        self.journal_size += used
        if used < len(data):  # a writer died mid-line (we hold the lock): cut its remnant
            os.truncate(self.journal_path, self.journal_size)
        return True

    def append_line(self, line: bytes, now: datetime, *, fsync: bool) -> None:
        """Write one journal record with a single ``os.write`` (the header too, if new)."""
        if self.fd is None and self.journal_ino is not None:
            self.fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND)
        if self.fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC
            self.fd = os.open(self.journal_path, flags, 0o644)
            self.journal_ino = os.fstat(self.fd).st_ino
            line = fmt.journal_header(self.doc.id, self.base) + line
        view = memoryview(line)
        while view:
            view = view[os.write(self.fd, view) :]
        self.journal_size += len(line)
        if fsync:
            os.fsync(self.fd)
        _set_mtime(self.fd, now)

    def checkpoint(self) -> None:
        """Write the Markus JSON atomically, then drop the journal it now contains."""
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
