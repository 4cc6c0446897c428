"""The sessions one :class:`~._store.SessionStore` holds in memory.

Parsed: the ``max_sessions_in_memory`` used last, least recently used first, each with its
journal descriptor open; evicting one checkpoints it. Released: sessions the process-wide bound
(:mod:`._parsed`) took the messages of; their files' state and count are kept, so an append is
still one journal write. Callers hold the agent lock around every method but
:meth:`SessionCache.release_parsed`, which the bound calls from any thread.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping
from pathlib import Path

from ..._lock import AgentLock
from ...config import Limits
from ...errors import CorruptFileError
from ._compaction import shrink_old
from ._files import SessionFiles
from ._parsed import ParsedSessions

log = logging.getLogger(__name__)


class SessionCache:
    """Parsed sessions (an LRU) and released ones, of one store."""

    def __init__(
        self,
        directory: Callable[[], Path],
        lock: AgentLock,
        limits: Limits,
        parsed: ParsedSessions,
    ) -> None:
        self.directory = directory
        self.lock = lock
        self.limits = limits
        self.parsed = parsed
        self.held: OrderedDict[str, SessionFiles] = OrderedDict()
        self.released: dict[str, SessionFiles] = {}

    def __contains__(self, sid: object) -> bool:
        return sid in self.held or sid in self.released

    def get(self, sid: str) -> SessionFiles | None:
        """The session parsed and current (with other processes' appends), None if none."""
        released = self.released.pop(sid, None)
        if released is not None:
            released.close_fd()
        live = self.held.get(sid)
        live = self._revalidate(live) if live is not None else self._load(sid)
        if live is not None:
            self.add(live)
        return live

    def for_append(self, sid: str) -> SessionFiles | None:
        """The session as an append needs it: its released copy while no other process has
        changed its files (no parsing), else parsed; None if there is none."""
        released = self.released.get(sid)
        if released is not None and released.unchanged():
            return released
        return self.get(sid)

    def add(self, live: SessionFiles) -> None:
        """Hold ``live`` parsed as the most recently used; evict past the store's bound."""
        sid = live.doc.id
        self.held[sid] = live
        self.held.move_to_end(sid)
        while len(self.held) > self.limits.max_sessions_in_memory:
            _, old = self.held.popitem(last=False)
            try:
                if old.dirty and self._revalidate(old, cache=False) is old:
                    old.checkpoint()
            except (OSError, CorruptFileError):  # its journal still holds every append
                log.exception("checkpoint of evicted session %s failed", old.doc.id)
            old.close_fd()
            self.parsed.drop(self, old.doc.id)
        self.parsed.use(self, sid, live.json_size + live.journal_size)

    def forget(self, live: SessionFiles) -> None:
        """Hold no copy of ``live`` any more (its files are as they are)."""
        live.close_fd()
        sid = live.doc.id
        if self.held.get(sid) is live:
            del self.held[sid]
            self.parsed.drop(self, sid)
        elif self.released.get(sid) is live:
            del self.released[sid]

    def forget_id(self, sid: str) -> None:
        live = self.held.get(sid) or self.released.get(sid)
        if live is not None:
            self.forget(live)

    def release_parsed(self, session_id: str) -> bool:
        """Drop the parsed messages of a held session (see :mod:`._parsed`); False when
        another thread is using the store (the session is kept for now)."""
        with self.lock.in_process_if_free() as free:
            if not free:
                return False
            live = self.held.get(session_id)
            if live is not None and live.legacy_path is not None:
                return False  # a raw-named Markus file is renamed by its next checkpoint first
            if live is not None:
                del self.held[session_id]
                live.release()
                self.released[session_id] = live
            self.parsed.drop(self, session_id)
            return True

    def flush(self) -> None:
        """Checkpoint every held or released session with journaled changes."""
        for sid, released in list(self.released.items()):
            if released.dirty:  # parsed again, with any other process's appends
                live = self.get(sid)
                if live is not None and live.dirty:
                    live.checkpoint()
        for live in list(self.held.values()):
            if live.dirty and self._revalidate(live) is live:
                live.checkpoint()

    def clear(self) -> None:
        for live in [*self.held.values(), *self.released.values()]:
            self.forget(live)

    def _revalidate(self, live: SessionFiles, cache: bool = True) -> SessionFiles | None:
        """``live`` if it still matches the disk (with other processes' appends), else a
        fresh load."""
        if live.is_current():
            shrink_old(live, self.limits)
            return live
        if cache:
            self.forget(live)
        else:
            live.close_fd()
        return self._load(live.doc.id)

    def _load(self, sid: str) -> SessionFiles | None:
        live = SessionFiles.load(self.directory(), sid)
        if live is not None:
            shrink_old(live, self.limits)
        return live


def close_all(*caches: Mapping[str, SessionFiles]) -> None:
    """Close the journal descriptors of a cache's sessions (a store dropped unclosed)."""
    for cache in caches:
        for live in cache.values():
            live.close_fd()
