"""SessionStore: the sessions of one agent, with durable flat-cost appends and an LRU cache.

Each session is a Markus ``sessions/<stem>.json`` checkpoint plus an append journal (see
``_files``). An append is one ``os.write`` to the journal under the agent lock, so it survives
SIGKILL the moment it returns and costs the same for a 10- or a 2,000-message session;
``fsync=True`` also survives power loss, at a few ms per append.

The ``.json`` is rewritten atomically (a checkpoint) on ``flush``/``close``/interpreter exit, on
LRU eviction, after compaction, and whenever the journal has grown past the size of the
checkpoint, so rewriting costs O(1) amortised per appended byte.

Processes sharing a session take the agent lock around every operation and revalidate their
cached copy with two ``stat`` calls: an append that returned in one process is seen by the
next operation of every other process (a checkpoint or compaction elsewhere causes a reload).
Each checkpoint sets the file's mtime to ``lastActivityAt``, so :meth:`SessionStore.list` and
:meth:`SessionStore.latest` parse nothing but the one session they return.
"""

from __future__ import annotations

import atexit
import builtins
import logging
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..._fs import AgentLock
from ...config import AgentPaths, Clock, Limits, epoch_ms, iso_ms, parse_iso
from ...errors import CorruptFileError, InvalidInputError, NotFoundError
from . import _format as fmt
from ._files import SessionFiles, locate, scan
from ._records import (
    AppendedMessage,
    BeforeCompact,
    CompactResult,
    OnAppend,
    Session,
    SessionInfo,
)

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
"""Sessions never resumed as the "main" chat (the original skipped only ``a2a_``/``channel_``)."""


class SessionStore:
    """The ``sessions/`` directory of one agent, in the original Markus format."""

    def __init__(
        self,
        paths: AgentPaths,
        lock: AgentLock,
        limits: Limits,
        clock: Clock,
        *,
        agent_id: str | None = None,
        on_append: OnAppend | None = None,
        before_compact: BeforeCompact | None = None,
        fsync: bool = False,
        checkpoint_min_bytes: int = 1 << 20,
    ) -> None:
        self.paths = paths
        self.lock = lock
        self.limits = limits
        self.clock = clock
        self.agent_id = agent_id if agent_id is not None else paths.root.name
        self.on_append = on_append
        self.before_compact = before_compact
        self.fsync = fsync
        self.checkpoint_min_bytes = checkpoint_min_bytes
        self._cache: OrderedDict[str, SessionFiles] = OrderedDict()
        self._atexit: Callable[[], None] | None = None
        # A store dropped without close() still releases its journal descriptors.
        weakref.finalize(self, _close_all, self._cache)

    @property
    def directory(self) -> Path:
        return self.paths.sessions_dir

    # -- public API ----------------------------------------------------------------------------

    def create(self, prefix: str = "sess") -> Session:
        """A new empty session ``<prefix>_<ms>_<rand36(6)>``, written to disk at once."""
        with self.lock:
            while True:
                sid = fmt.new_session_id(prefix, epoch_ms(self.clock()))
                if locate(self.directory, sid) is None:
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
        cached = isinstance(session_id, str) and session_id in self._cache  # validated then
        sid = session_id if cached else fmt.validate_session_id(session_id)
        clean, encoded = fmt.encode_message(message)
        now = self.clock()
        stamp = iso_ms(now)
        with self.lock:
            live = self._live(sid)
            if live is None:
                raise NotFoundError(f"Session not found: {sid}")
            index = len(live.doc.messages)
            seq = live.doc.seq(index)
            assert seq is not None  # only index 0 of a compacted file lacks one
            try:
                live.append_line(fmt.journal_record(index, stamp, encoded), now, fsync=self.fsync)
            except BaseException:
                # The journal may end in a partial line: forget our copy; the next load cuts it.
                self._forget(live)
                raise
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
            seq=seq,
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
        return scan(self.directory)

    def latest(self) -> Session | None:
        """The session with the latest activity."""
        return self._first_loadable(self.list())

    def latest_main(self) -> Session | None:
        """The latest "main" chat session: heartbeat, system, task, a2a … sessions excluded."""
        infos = [i for i in self.list() if not i.id.startswith(NON_MAIN_PREFIXES)]
        return self._first_loadable(infos)

    def compact(self, session_id: str, keep_last: int = 20) -> CompactResult:
        """Replace all but the last ``keep_last`` messages by one summary message, as the original.

        Unlike the original, no observation is written (the original wrote a hidden
        ``compact_`` observation).
        """
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            if live is None:
                return CompactResult("", 0)
            return self._compact(live, keep_last)

    def restore(self, messages: Iterable[Mapping[str, Any]]) -> Session:
        """A new ``sess_`` session holding the trimmed user/assistant history (as the original)."""
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
                if locate(self.directory, sid) is None:
                    break
            live = self._new(sid, clean, now)
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
                    seq=index,
                )
            )
        return snapshot

    def flush(self) -> None:
        """Checkpoint every cached session with journaled changes."""
        with self.lock:
            for live in list(self._cache.values()):
                if live.dirty and self._revalidate(live) is live:
                    live.checkpoint()

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

    def _live(self, sid: str) -> SessionFiles | None:
        live = self._cache.get(sid)
        live = self._revalidate(live) if live is not None else self._load(sid)
        if live is not None:
            self._touch(live)
        return live

    def _touch(self, live: SessionFiles) -> None:
        sid = live.doc.id
        self._cache[sid] = live
        self._cache.move_to_end(sid)
        while len(self._cache) > self.limits.max_sessions_in_memory:
            _, old = self._cache.popitem(last=False)
            try:
                if old.dirty and self._revalidate(old, cache=False) is old:
                    old.checkpoint()
            except (OSError, CorruptFileError):  # its journal still holds every append
                log.exception("checkpoint of evicted session %s failed", old.doc.id)
            old.close_fd()
        if self._atexit is None:
            self._atexit = _exit_hook(weakref.ref(self))
            atexit.register(self._atexit)

    def _forget(self, live: SessionFiles) -> None:
        live.close_fd()
        if self._cache.get(live.doc.id) is live:
            del self._cache[live.doc.id]

    def _revalidate(self, live: SessionFiles, cache: bool = True) -> SessionFiles | None:
        """``live`` if it still matches the disk (with other processes' appends), else a
        fresh load."""
        if live.is_current():
            self._shrink_old(live)
            return live
        if cache:
            self._forget(live)
        else:
            live.close_fd()
        return self._load(live.doc.id)

    def _load(self, sid: str) -> SessionFiles | None:
        live = SessionFiles.load(self.directory, sid)
        if live is not None:
            self._shrink_old(live)
        return live

    def _new(
        self, sid: str, messages: builtins.list[fmt.Message], now: datetime | None = None
    ) -> SessionFiles:
        stamp = iso_ms(self.clock() if now is None else now)
        doc = fmt.SessionDoc(sid, self.agent_id, messages, stamp, stamp)
        live = SessionFiles.fresh(doc, self.directory)
        self._shrink_old(live)
        live.checkpoint()
        self._touch(live)
        return live

    # -- compaction ----------------------------------------------------------------------------

    def _after_append(self, live: SessionFiles) -> None:
        self._shrink_old(live)
        if len(live.doc.messages) > self.limits.session_compact_trigger:
            self._compact(live, self.limits.session_compact_keep)
        elif live.journal_size > max(self.checkpoint_min_bytes, live.json_size):
            live.checkpoint()

    def _shrink_old(self, live: SessionFiles) -> None:
        """Shrink oversized tool results that have just left the recent window, as the original.

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

    def _compact(self, live: SessionFiles, keep_last: int) -> CompactResult:
        messages = live.doc.messages
        keep_last = max(keep_last, 0)
        if len(messages) <= keep_last:
            return CompactResult("", 0)
        if not self._may_drop(live, len(messages) - keep_last):
            return CompactResult("", 0)
        older = messages[: len(messages) - keep_last]
        kept = messages[len(messages) - keep_last :]
        summary = fmt.heuristic_summary(older)
        # Every message of ``older`` but a previous summary leaves the file for good: counting
        # them keeps the seq of the kept messages (and of later appends) unchanged.
        live.doc.compacted += len(older) - (1 if live.doc.compacted > 0 else 0)
        live.doc.messages = [fmt.summary_message(len(older), len(kept), summary), *kept]
        live.shrink_checked = 0
        self._shrink_old(live)
        live.checkpoint()
        return CompactResult(summary, len(older))

    def _may_drop(self, live: SessionFiles, keep_from: int) -> bool:
        """Whether ``before_compact`` lets the messages before index ``keep_from`` leave."""
        if self.before_compact is None:
            return True
        keep_from_seq = live.doc.seq(keep_from)
        assert keep_from_seq is not None  # index 0 is never kept by a compaction that drops
        try:
            if self.before_compact(live.doc.id, keep_from_seq):
                return True
        except Exception:
            log.exception("before_compact failed for %s", live.doc.id)
        log.warning("compaction of %s deferred: its old messages are not safe yet", live.doc.id)
        return False

    # -- helpers -------------------------------------------------------------------------------

    def _snapshot(self, live: SessionFiles) -> Session:
        doc = live.doc
        return Session(
            id=doc.id,
            agent_id=doc.agent_id,
            messages=tuple(doc.messages),
            started_at=_when(doc.started_at),
            last_activity_at=_when(doc.last_activity_at),
            compacted=doc.compacted,
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


def _close_all(cache: OrderedDict[str, SessionFiles]) -> None:
    for live in cache.values():
        live.close_fd()


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
