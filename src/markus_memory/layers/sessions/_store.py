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
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ..._fs import refuse_symlink
from ..._lock import AgentLock
from ...config import AgentPaths, Clock, Limits, epoch_ms, iso_ms
from ...errors import CorruptFileError, InvalidInputError, NotFoundError
from . import _format as fmt
from . import _messages as msg
from ._cache import SessionCache, close_all
from ._compaction import compact, shrink_old, snapshot
from ._files import SessionFiles, locate, peek_next_seq, remove, scan
from ._journal import journal_record
from ._parsed import PARSED, ParsedSessions
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
        seq_floor: Callable[[str], int] | None = None,
        fsync: bool = False,
        checkpoint_min_bytes: int = 1 << 20,
        parsed: ParsedSessions | None = None,
    ) -> None:
        self.paths = paths
        self.lock = lock
        self.limits = limits
        self.clock = clock
        self.agent_id = agent_id if agent_id is not None else paths.root.name
        self.on_append = on_append
        self.before_compact = before_compact
        self.seq_floor = seq_floor
        self.fsync = fsync
        self.checkpoint_min_bytes = checkpoint_min_bytes
        self.cache = SessionCache(
            lambda: self.directory, lock, limits, PARSED if parsed is None else parsed
        )
        self._atexit: Callable[[], None] | None = None
        # A store dropped without close() still releases its journal descriptors.
        weakref.finalize(self, close_all, self.cache.held, self.cache.released)

    @property
    def directory(self) -> Path:
        """The agent's ``sessions`` folder (SymlinkError if it is a link: never written through)."""
        refuse_symlink(self.paths.sessions_dir)
        return self.paths.sessions_dir

    # -- public API ----------------------------------------------------------------------------

    def create(self, prefix: str = "sess") -> Session:
        """A new empty session ``<prefix>_<ms>_<rand36(6)>``, written to disk at once."""
        with self.lock:
            while True:
                sid = fmt.new_session_id(prefix, epoch_ms(self.clock()))
                if locate(self.directory, sid) is None:
                    return snapshot(self._new(sid, []))

    def get(self, session_id: str) -> Session | None:
        """The session (from cache or disk), None if there is none."""
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            return None if live is None else snapshot(live)

    def get_or_create(self, session_id: str) -> Session:
        """The session, or a new empty one under this id.

        A new file for an id whose messages the transcript store already holds (the old file
        was deleted or set aside) numbers its messages on from ``seq_floor(id)``, so no
        acknowledged message is shadowed by a new one with the same seq.
        """
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            if live is None:
                first = 0 if self.seq_floor is None else self.seq_floor(sid)
                live = self._new(sid, [], first_seq=first)
            return snapshot(live)

    def append(self, session_id: str, message: Mapping[str, Any]) -> AppendedMessage:
        """Append a message; it is on disk (SIGKILL-safe) when this returns.

        Raises InvalidInputError for a malformed or oversized message and NotFoundError for an
        unknown session, UnwritableError (an OSError) when the file system refuses the write
        (read-only, full), another OSError for other failures: in each case nothing was
        stored. Once the journal holds the message the append has succeeded, whatever happens
        to the checkpoint or compaction it may trigger.
        """
        cached = isinstance(session_id, str) and session_id in self.cache  # validated then
        sid = session_id if cached else fmt.validate_session_id(session_id)
        clean, encoded = self._encode(message)
        now = self.clock()
        stamp = iso_ms(now)
        with self.lock:
            live = self.cache.for_append(sid)
            if live is None:
                raise NotFoundError(f"Session not found: {sid}")
            index = live.count
            seq = live.doc.seq(index)
            assert seq is not None  # only index 0 of a compacted file lacks one
            try:
                live.append_line(journal_record(index, stamp, encoded), now, fsync=self.fsync)
            except BaseException:
                # The journal may end in a partial line: forget our copy; the next load cuts it.
                self.cache.forget(live)
                raise
            if live.released is None:
                live.doc.messages.append(clean)
            else:  # appended without parsing: the journal holds it for the next read
                live.released += 1
                live.close_fd()
            live.doc.last_activity_at = stamp
            live.dirty = True
            try:
                self._after_append(live)
            except OSError:  # the journal holds the message: the next load checkpoints it
                log.exception("checkpoint after appending to %s failed", sid)
                self.cache.forget(live)
        record = AppendedMessage(
            agent_id=self.agent_id,
            session_id=sid,
            index=index,
            role=clean["role"],
            text=msg.message_text(clean),
            timestamp=now,
            metadata=clean.get("metadata"),
            seq=seq,
        )
        self._notify(record)
        return record

    def check_message(self, message: Mapping[str, Any]) -> msg.Message:
        """The message as :meth:`append` would store it, checked as it checks it (shape, JSON,
        Unicode, size): InvalidInputError otherwise. Lets a caller check a whole batch before
        appending any of it."""
        return self._encode(message)[0]

    def _encode(self, message: Mapping[str, Any]) -> tuple[msg.Message, str]:
        return msg.encode_within(message, self.limits.session_message_max_bytes)

    def delete(self, session_id: str) -> bool:
        """Delete the session's files (checkpoint and journal); False when there were none.
        Its messages stay in the transcript store: :meth:`AgentMemory.delete_session` forgets
        them there too."""
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            self.cache.forget_id(sid)
            return remove(self.directory, sid)

    def recent(self, session_id: str, n: int) -> list[msg.Message]:
        """The last ``n`` messages, ``[]`` for an unknown session (as the original)."""
        sid = fmt.validate_session_id(session_id)
        with self.lock:
            live = self._live(sid)
            if live is None or n <= 0:
                return []
            return list(live.doc.messages[-n:])

    def peek_next_seq(self, session_id: str) -> int | None:
        """At least the seq the next append to ``session_id`` gets, read from the files'
        sizes and last bytes without parsing them; None when only parsing can tell."""
        return peek_next_seq(self.directory, fmt.validate_session_id(session_id))

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
            return compact(live, keep_last, self.limits, self.before_compact)

    def restore(self, messages: Iterable[Mapping[str, Any]]) -> Session:
        """A new ``sess_`` session holding the trimmed user/assistant history (as the original)."""
        trimmed = msg.trim_messages_for_restore(
            messages,
            self.limits.session_restore_max_messages,
            self.limits.session_restore_max_message_tokens,
        )
        clean = [msg.validate_message(m) for m in trimmed]
        now = self.clock()
        with self.lock:
            while True:
                sid = fmt.new_session_id("sess", epoch_ms(now))
                if locate(self.directory, sid) is None:
                    break
            live = self._new(sid, clean, now)
            restored = snapshot(live)
        for index, message in enumerate(clean):
            self._notify(
                AppendedMessage(
                    self.agent_id,
                    sid,
                    index,
                    message["role"],
                    msg.message_text(message),
                    now,
                    message.get("metadata"),
                    seq=index,
                )
            )
        return restored

    def flush(self) -> None:
        """Checkpoint every cached or released session with journaled changes."""
        with self.lock:
            self.cache.flush()

    def close(self) -> None:
        """Flush, release file handles and the exit hook. The store reopens lazily if used.

        Never fails for want of write access: a checkpoint the disk refuses is logged, and
        the journal still holds every message it would have written.
        """
        with self.lock:
            try:
                self.flush()
            except OSError as exc:
                log.warning("sessions of %s not checkpointed at close: %s", self.agent_id, exc)
            self.cache.clear()
        if self._atexit is not None:
            atexit.unregister(self._atexit)
            self._atexit = None

    # -- cache ---------------------------------------------------------------------------------

    def _live(self, sid: str) -> SessionFiles | None:
        live = self.cache.get(sid)
        if live is not None:
            self._hook_exit()
        return live

    def _hook_exit(self) -> None:
        if self._atexit is None:
            self._atexit = _exit_hook(weakref.ref(self))
            atexit.register(self._atexit)

    def _new(
        self,
        sid: str,
        messages: builtins.list[msg.Message],
        now: datetime | None = None,
        *,
        first_seq: int = 0,
    ) -> SessionFiles:
        stamp = iso_ms(self.clock() if now is None else now)
        doc = fmt.SessionDoc(sid, self.agent_id, messages, stamp, stamp, first_seq=first_seq)
        live = SessionFiles.fresh(doc, self.directory)
        shrink_old(live, self.limits)
        live.checkpoint()
        self.cache.add(live)
        self._hook_exit()
        return live

    # -- compaction ----------------------------------------------------------------------------

    def _after_append(self, live: SessionFiles) -> None:
        if live.released is not None:
            due = live.released > self.limits.session_compact_trigger or live.journal_size > max(
                self.checkpoint_min_bytes, live.json_size
            )
            if not due:
                return
            parsed = self._live(live.doc.id)
            if parsed is None:
                return
            live = parsed
        shrink_old(live, self.limits)
        if len(live.doc.messages) > self.limits.session_compact_trigger:
            compact(live, self.limits.session_compact_keep, self.limits, self.before_compact)
        elif live.journal_size > max(self.checkpoint_min_bytes, live.json_size):
            live.checkpoint()

    # -- helpers -------------------------------------------------------------------------------

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
