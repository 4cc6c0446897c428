"""AgentMemory: the one place where the memory layers of one agent meet."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

from ._fs import AgentLock, validate_id
from .config import AgentPaths, Settings
from .layers.activities import ActivityLog
from .storage.base import EpisodicStore
from .storage.sqlite import SqliteStore


class AgentMemory:
    """All memory layers of one agent. Open with :func:`open_agent`; close when done."""

    def __init__(self, agent_id: str, settings: Settings) -> None:
        self.agent_id = validate_id("agent id", agent_id)
        self.settings = settings
        self.paths = AgentPaths(settings.agent_dir(self.agent_id))
        self.paths.root.mkdir(parents=True, exist_ok=True)
        self.lock = AgentLock(self.paths.lock, settings.lock_timeout_seconds)
        self._closed = False
        self._store: EpisodicStore | None = None
        self._activities: ActivityLog | None = None
        self._store_guard = threading.Lock()

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

    def close(self) -> None:
        """Flush and release everything this handle holds. Safe to call twice."""
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
    agent_id: str, home: Path | str | None = None, *, settings: Settings | None = None
) -> AgentMemory:
    """Open (creating if needed) the memory of ``agent_id`` under ``home``.

    ``home`` defaults to ``$MARKUS_HOME`` or ``~/.markus``; ``settings`` overrides everything.
    """
    resolved = settings if settings is not None else Settings.from_env(home=home)
    return AgentMemory(agent_id, resolved)
