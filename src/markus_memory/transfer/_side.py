"""One side of a transfer: its documents (files or PostgreSQL) and its episodic store (SQLite
or PostgreSQL, as the backend seam picks it), sharing one connection pool per URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from .._docs import DocumentStore
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from ..agents import agent_ids
from ..backend import open_backend
from ..config import AgentPaths, Settings
from ..storage.audit import SqliteAuditLog, open_audit_log
from ..storage.dream_runs import AuditLog
from ..storage.episodic import EpisodicStore


class Side:
    """One memory: where its documents, files, rows and dream history are."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.backend = open_backend(settings)
        self.database = self.backend.documents_database()
        self._episodic: EpisodicStore | None = None

    def paths(self, agent_id: str) -> AgentPaths:
        return AgentPaths(self.settings.agent_dir(agent_id))

    def same_dir(self, other: Side, agent_id: str) -> bool:
        mine, theirs = self.paths(agent_id).root, other.paths(agent_id).root
        return mine.expanduser().resolve() == theirs.expanduser().resolve()

    def documents(self, agent_id: str) -> DocumentStore:
        """The agent's documents as they are stored (files an in-place export left behind
        are read and written here like any others: a transfer is what replaces them)."""
        paths = self.paths(agent_id)
        if self.database is None:
            return FileDocuments(
                paths.root, AgentLock(paths.lock, self.settings.lock_timeout_seconds)
            )
        return self.backend.documents_in(self.database, agent_id)

    def agent_ids(self) -> list[str]:
        return agent_ids(self.settings)

    def episodic(self) -> EpisodicStore:
        if self._episodic is None:
            self._episodic = self.backend.episodic()
        return self._episodic

    def audit(self) -> AuditLog:
        """The dream history beside the documents, where the dream cycle keeps it."""
        if self.database is not None:
            return open_audit_log(self.database)
        return SqliteAuditLog(self.settings.database_path)

    def audit_place(self) -> str:
        if self.database is not None:
            return f"url:{self.settings.database_url}"
        return f"file:{self.settings.database_path.expanduser().resolve()}"

    def has_audit(self) -> bool:
        """Whether there can be dream runs to read (reading never creates data.db)."""
        return self.database is not None or self.settings.database_path.exists()

    def forget_runs(self, agent_id: str) -> None:
        """Delete the agent's recorded dreams here (``replace`` then records the source's)."""
        self.backend.forget_dreams(agent_id, self.database)

    def close(self) -> None:
        if self.database is not None:
            self.database.close()
        if self._episodic is not None:
            self._episodic.close()


@contextmanager
def sides(src: Settings, dst: Settings) -> Iterator[tuple[Side, Side]]:
    with ExitStack() as stack:
        a = Side(src)
        stack.callback(a.close)
        b = Side(dst)
        stack.callback(b.close)
        yield a, b
