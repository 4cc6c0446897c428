"""SessionStore: conversation sessions on disk, with durable flat-cost appends and an LRU cache.

Layout, per session (file stems from :func:`._format.file_stem`)::

    sessions/<stem>.json    the Markus file (REFERENCE §2.5): the checkpoint
    sessions/<stem>.jsonl   the journal: a header line naming the checkpoint it extends
                            (a hash of its bytes), then one line per appended message

An append is one ``os.write`` of one line to the journal (opened ``O_APPEND``) under the
per-agent lock, so it survives SIGKILL the moment it returns and costs the same for a 10- or a
2,000-message session. ``fsync=True`` also survives power loss, at a few ms per append.

The ``.json`` is rewritten atomically (checkpoint) on ``flush``/``close``/interpreter exit, on
LRU eviction, after compaction, and whenever the journal has grown past the size of the
checkpoint (so rewriting costs O(1) amortised per appended byte); the journal is deleted after.
A crash between the two leaves a journal whose base hash no longer matches: it is discarded,
because the checkpoint already holds its messages. A torn last journal line is cut off.

Processes sharing a session take the agent lock around every operation and revalidate their
cache with two ``stat`` calls: any append that returned in one process is visible to the next
operation of every other process. Each checkpoint sets the file's mtime to ``lastActivityAt``,
so :meth:`SessionStore.list` and :meth:`SessionStore.latest` need no parsing.
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import logging
import os
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..._fs import AgentLock, FileSignature, atomic_write_bytes, signature
from ...config import AgentPaths, Clock, Limits, epoch_ms, iso_ms, parse_iso
from ...errors import CorruptFileError, InvalidInputError, NotFoundError
from . import _format as fmt

log = logging.getLogger(__name__)

NON_MAIN_PREFIXES = (
    "a2a_",
    "channel_",
    "hb_",
    "sys_",
    "task_",
    "comment_",
    "requirement_",
    "workflow_",
    "review_",
    "deliberation_",
)
"""Sessions never resumed as the "main" chat (§14.3 item 22: the original skipped only two)."""


@dataclass(frozen=True)
class Session:
    """A snapshot of one session. ``messages`` are Markus LLMMessage dicts: treat as read-only."""

    id: str
    agent_id: str
    messages: tuple[fmt.Message, ...]
    started_at: datetime
    last_activity_at: datetime


@dataclass(frozen=True)
class SessionInfo:
    """One session file found on disk, known without parsing it."""

    id: str
    last_activity_at: datetime
    path: Path


@dataclass(frozen=True)
class AppendedMessage:
    """What an append made durable; also what ``on_append`` receives."""

    agent_id: str
    session_id: str
    index: int
    role: str
    text: str
    timestamp: datetime
    metadata: Mapping[str, Any] | None


@dataclass(frozen=True)
class CompactResult:
    summary: str
    flushed_count: int


OnAppend = Callable[[AppendedMessage], None]


class _Live:
    """A cached session and what we know of its two files."""

    def __init__(self, doc: fmt.SessionDoc, json_path: Path, journal_path: Path) -> None:
        self.doc = doc
        self.json_path = json_path
        self.journal_path = journal_path
        self.json_sig: FileSignature | None = None
        self.base = ""
        self.json_size = 0
        self.fd: int | None = None
        self.journal_ino: int | None = None
        self.journal_size = 0
        self.shrink_checked = 0
        self.dirty = False

    def close_fd(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _aside(path: Path) -> Path:
    target = path.with_name(f"{path.name}.corrupt-{time.time_ns() // 1_000_000}")
    os.replace(path, target)
    return target


class SessionStore:
    """The ``sessions/`` directory of one agent (REFERENCE §2.5, §12)."""

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        agent_id: str | None = None,
        on_append: OnAppend | None = None,
        fsync: bool = False,
        checkpoint_min_bytes: int = 1 << 20,
    ) -> None:
        self.paths = paths
        self.lock = lock
        self.limits = limits
        self.clock = clock
        self.agent_id = agent_id if agent_id is not None else paths.root.name
        self.on_append = on_append
        self.fsync = fsync
        self.checkpoint_min_bytes = checkpoint_min_bytes
        self._cache: OrderedDict[str, _Live] = OrderedDict()
        self._atexit: Callable[[], None] | None = None

    @property
    def directory(self) -> Path:
        return self.paths.sessions_dir

    # -- public API ----------------------------------------------------------------------------

    def create(self, prefix: str = "sess") -> Session:
        """A new empty session ``<prefix>_<ms>_<rand36(6)>``, written to disk at once."""
        with self.lock:
            while True:
                sid = fmt.new_session_id(prefix, epoch_ms(self.clock()))
                if self._locate(sid) is None:
                    return self._snapshot(self._new(sid, []))

    def get(self, session_id: str) -> Session | None:
        """The session (from cache or disk), None if there is none."""
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            return None if live is None else self._snapshot(live)

    def get_or_create(self, session_id: str) -> Session:
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            return self._snapshot(live if live is not None else self._new(sid, []))

    def append(self, session_id: str, message: Mapping[str, Any]) -> AppendedMessage:
        """Append a message; it is on disk (SIGKILL-safe) when this returns.

        Raises InvalidInputError for a malformed message (nothing written) and NotFoundError
        for an unknown session.
        """
        sid = session_id if session_id in self._cache else fmt.validate_session_id(session_id)
        clean, encoded = fmt.encode_message(message)
        now = self.clock()
        stamp = iso_ms(now)
        with self.lock:
            live = self._live(sid)
            if live is None:
                raise NotFoundError(f"Session not found: {sid}")
            index = len(live.doc.messages)
            self._journal_write(live, fmt.journal_record(index, stamp, encoded), now)
            live.doc.messages.append(clean)
            live.doc.last_activity_at = stamp
            live.dirty = True
            self._after_append(live)
        record = AppendedMessage(
            agent_id=self.agent_id,
            session_id=sid,
            index=index,
            role=clean["role"],
            text=fmt.message_text(clean),
            timestamp=now,
            metadata=clean.get("metadata"),
        )
        self._notify(record)
        return record

    def recent(self, session_id: str, n: int) -> list[fmt.Message]:
        """The last ``n`` messages, ``[]`` for an unknown session (as the original)."""
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            if live is None or n <= 0:
                return []
            return list(live.doc.messages[-n:])

    def list(self) -> list[SessionInfo]:
        """Every session file on disk (not only cached ones), newest activity first."""
        found: dict[str, SessionInfo] = {}
        journals: dict[str, float] = {}
        try:
            entries = list(os.scandir(self.directory))
        except FileNotFoundError:
            return []
        for entry in entries:
            name = entry.name
            if name.startswith(".") or not entry.is_file():
                continue
            if name.endswith(".jsonl"):
                journals[name[: -len(".jsonl")]] = entry.stat().st_mtime
            elif name.endswith(".json"):
                stem = name[: -len(".json")]
                sid = fmt.id_from_file_stem(stem)
                moment = datetime.fromtimestamp(entry.stat().st_mtime, tz=timezone.utc)
                if sid not in found or moment > found[sid].last_activity_at:
                    found[sid] = SessionInfo(sid, moment, Path(entry.path))
        for stem, mtime in journals.items():
            sid = fmt.id_from_file_stem(stem)
            info = found.get(sid)
            moment = datetime.fromtimestamp(mtime, tz=timezone.utc)
            if info is not None and moment > info.last_activity_at:
                found[sid] = SessionInfo(sid, moment, info.path)
        return sorted(found.values(), key=lambda i: (i.last_activity_at, i.id), reverse=True)

    def latest(self) -> Session | None:
        """The session with the latest activity."""
        return self._first_loadable(self.list())

    def latest_main(self) -> Session | None:
        """The latest "main" chat session: heartbeat, system, task, a2a … sessions excluded."""
        infos = [i for i in self.list() if not i.id.startswith(NON_MAIN_PREFIXES)]
        return self._first_loadable(infos)

    def compact(self, session_id: str, keep_last: int = 20) -> CompactResult:
        """Replace all but the last ``keep_last`` messages by one summary message (§12.4).

        Unlike the original, no observation is written (§14.3 item 26).
        """
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            if live is None:
                return CompactResult("", 0)
            return self._compact(live, keep_last)

    def restore(self, messages: Iterable[Mapping[str, Any]]) -> Session:
        """A new ``sess_`` session holding the trimmed user/assistant history (§12.6)."""
        trimmed = fmt.trim_messages_for_restore(
            messages,
            self.limits.session_restore_max_messages,
            self.limits.session_restore_max_message_tokens,
        )
        clean = [fmt.validate_message(m) for m in trimmed]
        now = self.clock()
        with self.lock:
            while True:
                sid = fmt.new_session_id("sess", epoch_ms(now))
                if self._locate(sid) is None:
                    break
            live = self._new(sid, clean)
            snapshot = self._snapshot(live)
        for index, message in enumerate(clean):
            self._notify(
                AppendedMessage(
                    self.agent_id,
                    sid,
                    index,
                    message["role"],
                    fmt.message_text(message),
                    now,
                    message.get("metadata"),
                )
            )
        return snapshot

    def flush(self) -> None:
        """Checkpoint every cached session with journaled changes."""
        with self.lock:
            for live in list(self._cache.values()):
                if live.dirty and self._revalidate(live) is live:
                    self._checkpoint(live)

    def close(self) -> None:
        """Flush, release file handles and the exit hook. The store reopens lazily if used."""
        with self.lock:
            self.flush()
            for live in self._cache.values():
                live.close_fd()
            self._cache.clear()
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    # -- cache ---------------------------------------------------------------------------------

    def _live(self, sid: str) -> _Live | None:
        live = self._cache.get(sid)
        live = self._revalidate(live) if live is not None else self._load(sid)
        if live is not None:
            self._touch(live)
        return live

    def _touch(self, live: _Live) -> None:
        sid = live.doc.id
        self._cache[sid] = live
        self._cache.move_to_end(sid)
        while len(self._cache) > self.limits.max_sessions_in_memory:
            _, old = self._cache.popitem(last=False)
            if old.dirty and self._revalidate(old, cache=False) is old:
                self._checkpoint(old)
            old.close_fd()
        if self._atexit is None:
            self._atexit = _exit_hook(weakref.ref(self))
            atexit.register(self._atexit)

    def _revalidate(self, live: _Live, cache: bool = True) -> _Live | None:
        """``live`` if it still matches the disk (reading appends of other processes), else a
        fresh load."""
        sig = signature(live.json_path)
        if sig == live.json_sig:
            try:
                st = os.stat(live.journal_path)
            except FileNotFoundError:
                st = None
            if st is None and live.journal_ino is None:
                return live
            if st is not None and st.st_ino == live.journal_ino:
                if st.st_size == live.journal_size:
                    return live
                if st.st_size > live.journal_size and self._read_tail(live):
                    return live
        live.close_fd()
        if cache:
            self._cache.pop(live.doc.id, None)
        return self._load(live.doc.id)

    def _read_tail(self, live: _Live) -> bool:
        with open(live.journal_path, "rb") as handle:
            handle.seek(live.journal_size)
            data = handle.read()
        lines, used = fmt.split_lines(data)
        try:
            records = [fmt.parse_journal_record(line) for line in lines]
        except ValueError:
            return False
        for record in records:
            if record.index != len(live.doc.messages):
                return False
            live.doc.messages.append(record.message)
            live.doc.last_activity_at = record.timestamp
            live.dirty = True
        live.journal_size += used
        self._shrink_old(live)
        return True

    # -- disk ----------------------------------------------------------------------------------

    def _paths(self, sid: str) -> tuple[Path, Path]:
        stem = fmt.file_stem(sid)
        return self.directory / f"{stem}.json", self.directory / f"{stem}.jsonl"

    def _locate(self, sid: str) -> Path | None:
        """The file holding ``sid``: the encoded name, else a raw-id name the original wrote."""
        json_path, _ = self._paths(sid)
        if json_path.exists():
            return json_path
        legacy = self.directory / f"{sid}.json"
        if legacy != json_path and os.name != "nt" and legacy.exists():
            return legacy
        return None

    def _new(self, sid: str, messages: builtins.list[fmt.Message]) -> _Live:
        stamp = iso_ms(self.clock())
        doc = fmt.SessionDoc(sid, self.agent_id, messages, stamp, stamp)
        json_path, journal_path = self._paths(sid)
        live = _Live(doc, json_path, journal_path)
        if journal_path.exists():  # left over from a session file deleted by hand
            journal_path.unlink()
        self._shrink_old(live)
        self._checkpoint(live)
        self._touch(live)
        return live

    def _load(self, sid: str) -> _Live | None:
        path = self._locate(sid)
        if path is None:
            return None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        json_path, journal_path = self._paths(sid)
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
        live = _Live(doc, json_path, journal_path)
        live.base = _hash(data)
        live.json_size = len(data)
        if path == json_path:
            live.json_sig = signature(path)
        else:
            live.dirty = True  # a raw-named Markus file: the next checkpoint renames it
        self._replay(live)
        self._shrink_old(live)
        return live

    def _replay(self, live: _Live) -> None:
        try:
            data = live.journal_path.read_bytes()
        except FileNotFoundError:
            return
        lines, used = fmt.split_lines(data)
        header = fmt.parse_journal_header(lines[0]) if lines else None
        if header != (live.doc.id, live.base):
            # Absorbed by a later checkpoint (crash before the unlink), or an empty torn header.
            live.journal_path.unlink()
            return
        try:
            records = [fmt.parse_journal_record(line) for line in lines[1:]]
            for n, record in enumerate(records):
                if record.index != len(live.doc.messages) + n:
                    raise ValueError(f"record {n} has index {record.index}, out of sequence")
        except ValueError as exc:
            moved = _aside(live.journal_path)
            raise CorruptFileError(
                live.journal_path, f"damaged journal ({exc}); moved to {moved.name}"
            ) from exc
        for record in records:
            live.doc.messages.append(record.message)
            live.doc.last_activity_at = record.timestamp
        if used < len(data):  # a torn last line: cut it so the next append starts clean
            os.truncate(live.journal_path, used)
        st = os.stat(live.journal_path)
        live.journal_ino, live.journal_size = st.st_ino, st.st_size
        live.dirty = live.dirty or bool(records)

    def _journal_write(self, live: _Live, line: bytes, now: datetime) -> None:
        if live.fd is None and live.journal_ino is not None:
            live.fd = os.open(live.journal_path, os.O_WRONLY | os.O_APPEND)
        if live.fd is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            live.fd = os.open(
                live.journal_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o644
            )
            live.journal_ino = os.fstat(live.fd).st_ino
            line = fmt.journal_header(live.doc.id, live.base) + line
        view = memoryview(line)
        while view:
            view = view[os.write(live.fd, view) :]
        live.journal_size += len(line)
        if self.fsync:
            os.fsync(live.fd)
        if os.utime in os.supports_fd:  # mtime = lastActivityAt, so list() needs no parsing
            stamp_ns = epoch_ms(now) * 1_000_000
            os.utime(live.fd, ns=(stamp_ns, stamp_ns))

    def _checkpoint(self, live: _Live) -> None:
        data = fmt.render_session(live.doc).encode("utf-8")
        atomic_write_bytes(live.json_path, data)
        moment = parse_iso(live.doc.last_activity_at)
        if moment is not None:
            stamp_ns = epoch_ms(moment) * 1_000_000
            os.utime(live.json_path, ns=(stamp_ns, stamp_ns))
        live.close_fd()
        live.journal_path.unlink(missing_ok=True)
        legacy = self.directory / f"{live.doc.id}.json"
        if legacy != live.json_path:
            legacy.unlink(missing_ok=True)
        live.json_sig = signature(live.json_path)
        live.base = _hash(data)
        live.json_size = len(data)
        live.journal_ino, live.journal_size = None, 0
        live.dirty = False

    # -- compaction ----------------------------------------------------------------------------

    def _after_append(self, live: _Live) -> None:
        self._shrink_old(live)
        if len(live.doc.messages) > self.limits.session_compact_trigger:
            self._compact(live, self.limits.session_compact_keep)
        elif live.journal_size > max(self.checkpoint_min_bytes, live.json_size):
            self._checkpoint(live)

    def _shrink_old(self, live: _Live) -> None:
        """Shrink oversized tool results that have just left the recent window (§12.3).

        Only messages not checked before are looked at, so each append does O(1) work.
        """
        messages = live.doc.messages
        boundary = len(messages) - min(self.limits.session_compact_keep, len(messages))
        for i in range(live.shrink_checked, boundary):
            shrunk = fmt.shrink_if_oversized(messages[i], self.limits.session_tool_shrink_chars)
            if shrunk is not None:
                messages[i] = shrunk
                live.dirty = True
        live.shrink_checked = max(live.shrink_checked, boundary)

    def _compact(self, live: _Live, keep_last: int) -> CompactResult:
        messages = live.doc.messages
        keep_last = max(keep_last, 0)
        if len(messages) <= keep_last:
            return CompactResult("", 0)
        older = messages[: len(messages) - keep_last]
        kept = messages[len(messages) - keep_last :]
        summary = fmt.heuristic_summary(older)
        live.doc.messages = [fmt.summary_message(len(older), len(kept), summary), *kept]
        live.shrink_checked = 0
        self._shrink_old(live)
        self._checkpoint(live)
        return CompactResult(summary, len(older))

    # -- helpers -------------------------------------------------------------------------------

    def _snapshot(self, live: _Live) -> Session:
        doc = live.doc
        return Session(
            id=doc.id,
            agent_id=doc.agent_id,
            messages=tuple(doc.messages),
            started_at=_when(doc.started_at),
            last_activity_at=_when(doc.last_activity_at),
        )

    def _first_loadable(self, infos: Iterable[SessionInfo]) -> Session | None:
        for info in infos:
            try:
                found = self.get(info.id)
            except (CorruptFileError, InvalidInputError) as exc:
                log.warning("skipping corrupt session file: %s", exc)
                continue
            if found is not None:
                return found
        return None

    def _notify(self, record: AppendedMessage) -> None:
        if self.on_append is None:
            return
        try:
            self.on_append(record)
        except Exception:
            log.exception("on_append callback failed for %s #%d", record.session_id, record.index)


def _when(stamp: str) -> datetime:
    moment = parse_iso(stamp)
    if moment is None:
        return datetime.fromtimestamp(0, tz=timezone.utc)
    return moment


def _exit_hook(ref: weakref.ReferenceType[SessionStore]) -> Callable[[], None]:
    """Checkpoint at interpreter exit without keeping the store alive until then."""

    def hook() -> None:
        store = ref()
        if store is None:
            return
        try:
            store.flush()
        except Exception:  # an exit hook must never raise
            log.exception("flushing sessions at exit failed")

    return hook
