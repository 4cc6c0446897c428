"""The one backend seam: where the settings' storage is decided and opened.

:class:`Backend` reads :attr:`Settings.backend <markus_memory.config.Settings.backend>` (the
one rule for what a URL means) and hands out everything an agent keeps in it: the documents
(markdown layers), the episodic store (activities, transcripts, their recall index and
vectors), the knowledge search index and the dream audit. Nothing else in the package tests a
URL or picks a SQLite or PostgreSQL class; it asks a :class:`Backend`.
"""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from ._docs import DocumentStore
from ._fs_docs import FileDocuments
from ._lock import AgentLock
from .config import AgentPaths, Settings
from .errors import MarkusMemoryError, RefusedError
from .storage import knowledge_schema, kv
from .storage._sqlite import schema as sqlite_schema
from .storage._sqlite.conn import SqliteDatabase
from .storage._sqlite.store import SqliteStore
from .storage.audit import MIGRATIONS as dream_migrations
from .storage.audit import AuditLog, open_audit_log
from .storage.episodic import EpisodicStore
from .storage.knowledge_index import KnowledgeIndex
from .storage.kv import KVTable
from .storage.migrations import Migrations

log = logging.getLogger(__name__)

DATA_DB_MIGRATIONS: tuple[Migrations[sqlite3.Connection], ...] = (
    sqlite_schema.migrations,
    knowledge_schema.sqlite_migrations,
    dream_migrations,
    kv.sqlite_migrations,
)
"""The one registry of the migration sets that live in ``<home>/data.db`` (the episodic
store, the knowledge search index, the dream audit, the LangGraph items): ``doctor`` checks
every one."""


MOVED_MARKER = "MOVED-TO-POSTGRESQL.txt"
"""Left in an agent directory whose documents an in-place export put in PostgreSQL."""


def file_documents(root: Path) -> list[str]:
    """The markdown documents an agent directory holds (reading creates nothing)."""
    return FileDocuments(root, AgentLock(root / ".lock")).names()


def moved_note(root: Path) -> str:
    """Why the markdown files of ``root`` (an agent exported in place) are only a backup."""
    return (
        f"the markdown files in {root} were exported to PostgreSQL ({MOVED_MARKER} says so): "
        "they are a backup, no longer the agent's memory, so they are not written. Set "
        "MARKUS_DATABASE_URL to work on the agent in PostgreSQL, or bring it back to files "
        "with: markus-memory import --from-database-url URL --replace"
    )


def unexported_note(agent_id: str, root: Path) -> str:
    """Why an agent whose documents are only on files is refused while they live in
    PostgreSQL (it would look empty, and the first write would start a second copy)."""
    return (
        f"agent {agent_id!r} has markdown files in {root} but no documents in PostgreSQL "
        "(MARKUS_DATABASE_URL is set): export it first with: env -u MARKUS_DATABASE_URL "
        f"markus-memory export --to-database-url URL --agent {agent_id}"
    )


class BackupDocuments(FileDocuments):
    """The files an in-place export left behind (:data:`MOVED_MARKER`): read, never written,
    so that working without the URL cannot fork the agent silently."""

    def write(self, name: str, text: str, *, modified_ns: int | None = None) -> None:
        raise RefusedError(moved_note(self.root))

    def delete(self, name: str) -> bool:
        raise RefusedError(moved_note(self.root))


class Backend:
    """The storage the settings select: ``"sqlite"`` (``<home>/data.db`` and the agent
    directories) or ``"postgres"`` (the ``database_url``; documents too unless
    ``MARKUS_DOCUMENTS=files``). Opening anything PostgreSQL needs the ``[postgres]`` extra
    and raises :class:`~markus_memory.errors.BackendUnavailableError` when the server cannot
    be reached; a URL that is not PostgreSQL's raises
    :class:`~markus_memory.errors.InvalidInputError` here, at once."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.kind: Literal["sqlite", "postgres"] = settings.backend
        self.documents_on_postgres = settings.documents_on_postgres

    @property
    def url(self) -> str:
        """The PostgreSQL URL (only meaningful when :attr:`kind` is ``"postgres"``)."""
        return self.settings.database_url or ""

    @property
    def place(self) -> str:
        """Where the episodic rows live: ``url:<url>`` or ``file:<resolved data.db>``."""
        if self.kind == "postgres":
            return f"url:{self.url}"
        return f"file:{self.settings.database_path.expanduser().resolve()}"

    def has_episodic(self) -> bool:
        """Whether there can be episodic rows to read (reading never creates data.db)."""
        return self.kind == "postgres" or self.settings.database_path.exists()

    def documents(self, agent_id: str, paths: AgentPaths, lock: AgentLock) -> DocumentStore:
        """The markdown layers of one agent: PostgreSQL when the documents live there, else
        the agent directory under ``paths``.

        Refused (:class:`RefusedError`) when the documents live in PostgreSQL but this agent's
        are only on files (not exported yet); files an in-place export left behind
        (:data:`MOVED_MARKER`) are read but never written (:class:`BackupDocuments`)."""
        if self.documents_on_postgres:
            from .storage._postgres.documents import PostgresDocuments  # the [postgres] extra

            documents = PostgresDocuments(
                self.url, agent_id, lock_timeout=self.settings.lock_timeout_seconds
            )
            if self.unexported(paths.root) and not documents.names():
                documents.close()
                raise RefusedError(unexported_note(agent_id, paths.root))
            return documents
        if (paths.root / MOVED_MARKER).exists():
            return BackupDocuments(paths.root, lock)
        return FileDocuments(paths.root, lock)

    def unexported(self, root: Path) -> bool:
        """Whether ``root`` holds markdown documents that are the agent's own while they are
        expected in PostgreSQL (no :data:`MOVED_MARKER`: never exported in place)."""
        return (
            self.documents_on_postgres
            and not (root / MOVED_MARKER).exists()
            and bool(file_documents(root))
        )

    def episodic(self) -> EpisodicStore:
        """The episodic store: activities, transcripts, the recall index and its vectors."""
        if self.kind == "postgres":
            from .storage._postgres.store import PostgresStore  # the [postgres] extra

            return PostgresStore(self.url)
        return SqliteStore(self.settings.database_path)

    def scratch_transcripts(self) -> tuple[EpisodicStore, Callable[[], None]] | None:
        """A private store for the transcript side when the home's own cannot be written (a
        read-only home whose ``data.db`` is missing, or behind its session files): a
        ``data.db`` in a new temporary directory, and how to close and delete it. ``None``
        when the episodic store can be written (PostgreSQL, or a writable ``data.db``): its
        transcripts are derived from the session files, so a private copy loses nothing."""
        if self.kind == "postgres" or _writable(self.settings.database_path):
            return None
        directory = Path(tempfile.mkdtemp(prefix="markus-recall-"))
        store = SqliteStore(directory / "data.db")

        def dispose() -> None:
            store.close()
            shutil.rmtree(directory, ignore_errors=True)

        return store, dispose

    def knowledge_index(self) -> KnowledgeIndex | None:
        """The knowledge search index beside the episodic store; None (logged) if it cannot
        be opened, and ``memory_search`` falls back to keyword search."""
        try:
            if self.kind == "postgres":
                return knowledge_schema.open_postgres_index(self.url)  # the [postgres] extra
            self.settings.home.mkdir(parents=True, exist_ok=True)
            return knowledge_schema.open_sqlite_index(self.settings.database_path)
        except (OSError, sqlite3.Error, MarkusMemoryError) as exc:
            log.warning("search index unavailable, keyword search only: %s", exc)
            return None

    def kv_table(self, agent_id: str) -> KVTable:
        """The LangGraph items of one agent, in the episodic store's database."""
        if self.kind == "postgres":
            from .storage._postgres.conn import PostgresDatabase  # the [postgres] extra

            database = PostgresDatabase(self.url, extra_migrations=(kv.postgres_migrations,))
            return KVTable(database, agent_id)
        path = self.settings.database_path
        return KVTable(SqliteDatabase(path, extra_migrations=(kv.sqlite_migrations,)), agent_id)

    def dream_audit(self, documents: DocumentStore) -> AuditLog:
        """The dream audit beside the documents a dream changes: in their PostgreSQL database
        when they live there (one dream history for every host), else ``<home>/data.db``.

        With ``MARKUS_DOCUMENTS=files`` each host dreams over its own files, so its audit (and
        its day's slot, and what undo restores) stays in its own ``data.db``."""
        from .storage._postgres.documents import PostgresDocuments

        if isinstance(documents, PostgresDocuments):
            return open_audit_log(documents.database, documents)
        return open_audit_log(self.settings.database_path)


def _writable(database: Path) -> bool:
    """Whether ``database`` can be written, or created in its folder (``os.access`` also
    answers no on a read-only mount, even to root)."""
    if database.exists():
        return os.access(database, os.W_OK) and os.access(database.parent, os.W_OK)
    folder = database.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return os.access(folder, os.W_OK)


def open_backend(settings: Settings) -> Backend:
    """The :class:`Backend` the settings select (nothing is opened until asked for)."""
    return Backend(settings)
