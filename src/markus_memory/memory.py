"""AgentMemory: the one place where the memory layers of one agent meet."""

from __future__ import annotations

import logging
import sqlite3
import threading
from pathlib import Path
from types import TracebackType

from ._fs import AgentLock, atomic_write_text, signature, validate_id
from .config import AgentPaths, Settings
from .errors import MarkusMemoryError, MigrationError
from .layers.activities import ActivityLog
from .layers.daily_log import DailyLog
from .layers.knowledge import KnowledgeFile, Observation
from .layers.migration import plan_migration
from .layers.notebook import Notebook
from .layers.procedural import RoleLoader
from .layers.sessions import SessionStore
from .layers.state import StateFile
from .search.index import SearchIndex, open_index
from .search.memory_search import MemorySearcher, SearchResult
from .search.vectors import Embedder
from .storage.base import EpisodicStore
from .storage.sqlite import SqliteStore

log = logging.getLogger(__name__)


class AgentMemory:
    """All memory layers of one agent. Open with :func:`open_agent`; close when done."""

    def __init__(
        self, agent_id: str, settings: Settings, *, embedder: Embedder | None = None
    ) -> None:
        self.agent_id = validate_id("agent id", agent_id)
        self.settings = settings
        self.paths = AgentPaths(settings.agent_dir(self.agent_id))
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self.lock = AgentLock(self.paths.lock, settings.lock_timeout_seconds)
        layer_args = (self.paths, self.lock, settings.limits, settings.clock)
        self.notebook = Notebook(*layer_args)
        self.state = StateFile(*layer_args)
        self.daily_log = DailyLog(*layer_args, agent_id=self.agent_id)
        self.roles = RoleLoader(*layer_args)
        self.knowledge = KnowledgeFile(*layer_args)
        self.sessions = SessionStore(*layer_args, agent_id=self.agent_id)
        self.embedder = embedder
        self._searcher: MemorySearcher | None = None
        self._closed = False
        self._store: EpisodicStore | None = None
        self._activities: ActivityLog | None = None
        self._store_guard = threading.Lock()
        self._migrate_legacy()

    @property
    def store(self) -> EpisodicStore:
        """The episodic backend (``<home>/data.db``), opened on first use so opening is cheap."""
        with self._store_guard:
            if self._store is None:
                self._store = SqliteStore(self.settings.database_path)
            return self._store

    @property
    def activities(self) -> ActivityLog:
        """Episodes of this agent: start / log / end / list / search / get."""
        if self._activities is None:
            self._activities = ActivityLog(
                self.store, self.agent_id, self.settings.clock, self.settings.limits
            )
        return self._activities

    @property
    def directory(self) -> Path:
        return self.paths.root

    def _migrate_legacy(self) -> None:
        """Migrate MEMORY.md / memories.json once (REFERENCE §3); spans knowledge and state.

        Order: state.md (merged), knowledge.md (only if absent), memories.json observations
        (merged), and only then delete memories.json. A failure raises :class:`MigrationError`
        and deletes nothing; the next open retries, and no step adds anything twice.
        """
        paths = self.paths
        if paths.knowledge.exists() and not paths.legacy_memories_json.exists():
            return
        with self.lock:
            plan = plan_migration(paths, self.settings.clock())
            try:
                if plan.state_text is not None:
                    atomic_write_text(paths.state, plan.state_text)
                if plan.knowledge_text is not None:
                    self.knowledge.create(plan.knowledge_text)
                else:
                    self.knowledge.create()
                if plan.observations is not None:
                    self.knowledge.add_observations(
                        Observation(o.id, o.type, o.content, o.timestamp, o.tags)
                        for o in plan.observations
                    )
                    paths.legacy_memories_json.unlink(missing_ok=True)
            except (OSError, MarkusMemoryError) as exc:
                raise MigrationError(
                    f"legacy migration failed, nothing was deleted: {exc}"
                ) from exc

    def search(self, query: str | None, limit: int = 10, type: str | None = None) -> SearchResult:
        """``memory_search``: observations and curated sections matching ``query``, best first.

        An empty query lists the ``limit`` most recent observations (of ``type``). Hand edits of
        knowledge.md are picked up here: the derived indexes follow the file's signature.
        """
        seen = signature(self.paths.knowledge)  # taken before the read: a race only re-syncs
        doc = self.knowledge.read()
        version = None if seen is None else f"{seen.inode}:{seen.size}:{seen.mtime_ns}"
        return self._memory_searcher().search(
            query, doc.observations, doc.sections, version=version, limit=limit, type=type
        )

    def rebuild_search_index(self) -> None:
        """Drop and re-derive this agent's search index (BM25 and vectors) from knowledge.md."""
        searcher = self._memory_searcher()
        seen = signature(self.paths.knowledge)
        doc = self.knowledge.read()
        version = None if seen is None else f"{seen.inode}:{seen.size}:{seen.mtime_ns}"
        searcher.rebuild(searcher.corpus(doc.observations, doc.sections, None), version)

    def _memory_searcher(self) -> MemorySearcher:
        if self._searcher is None:
            limits = self.settings.limits
            self._searcher = MemorySearcher(
                self.agent_id,
                self._open_search_index(),
                self.embedder,
                curated_boost=limits.curated_search_boost,
                preview_chars=limits.curated_hit_preview_chars,
            )
        return self._searcher

    def _open_search_index(self) -> SearchIndex | None:
        try:
            self.settings.home.mkdir(parents=True, exist_ok=True)
            return open_index(self.settings.database_path)
        except (OSError, sqlite3.Error, MarkusMemoryError) as exc:
            log.warning("search index unavailable, keyword search only: %s", exc)
            return None

    def close(self) -> None:
        """Flush and release everything this handle holds. Safe to call twice."""
        self.sessions.close()
        if self._searcher is not None and self._searcher.index is not None:
            self._searcher.index.conn.close()
        self._searcher = None
        with self._store_guard:
            store, self._store = self._store, None
            self._activities = None
        if store is not None:
            store.close()
        self._closed = True

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, home={str(self.settings.home)!r})"


def open_agent(
    agent_id: str,
    home: Path | str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
) -> AgentMemory:
    """Open (creating if needed) the memory of ``agent_id`` under ``home``.

    ``home`` defaults to ``$MARKUS_HOME`` or ``~/.markus``; ``settings`` overrides everything.
    """
    resolved = settings if settings is not None else Settings.from_env(home=home)
    return AgentMemory(agent_id, resolved, embedder=embedder)
