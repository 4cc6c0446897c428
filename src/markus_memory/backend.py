"""The one backend seam: where the settings' storage is decided and opened.

:class:`Backend` reads :attr:`Settings.backend <markus_memory.config.Settings.backend>` (the
one rule for what a URL means) and hands out everything an agent keeps in it: the documents
(markdown layers), the episodic store (activities, transcripts, their recall index and
vectors), the knowledge search index and the dream audit; and it does the jobs that concern a
whole database: which agents hold documents there, forgetting an agent in every database,
rebuilding the derived indexes, a health probe, why a URL cannot be used. Nothing else in the
package tests a URL or imports ``storage._sqlite``/``storage._postgres`` (an import-linter
``forbidden`` contract); it asks a :class:`Backend`.
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
from .config import POSTGRES_URL_SCHEMES, AgentPaths, Settings
from .errors import MarkusMemoryError, RefusedError
from .storage import knowledge_schema, kv
from .storage._postgres.checks import apply_pending, postgres_checks
from .storage._postgres.conn import PostgresDatabase
from .storage._postgres.diagnose import diagnose
from .storage._postgres.documents import (
    PostgresDocuments,
    documents_migrations,
    open_database,
    stored_agents,
)
from .storage._postgres.health import LOCAL, probe
from .storage._postgres.health import Health as Health
from .storage._postgres.store import PostgresStore
from .storage._sqlite import checks as data_db
from .storage._sqlite.checks import DATA_DB_MIGRATIONS
from .storage._sqlite.conn import SqliteDatabase
from .storage._sqlite.store import SqliteStore
from .storage.audit import PG_MIGRATIONS as pg_dream_migrations
from .storage.audit import open_audit_log
from .storage.checks import Check
from .storage.dialect import Database
from .storage.dream_runs import AuditLog
from .storage.episodic import EpisodicStore
from .storage.forget import forget_agent, forget_in
from .storage.knowledge_index import IndexState, KnowledgeIndex
from .storage.kv import KVTable
from .storage.repos.transcripts import TranscriptStore

log = logging.getLogger(__name__)

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
            return PostgresStore(self.url)
        return SqliteStore(self.settings.database_path)

    def scratch_transcripts(self) -> tuple[TranscriptStore, Callable[[], None]] | None:
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

        return store.transcripts, dispose

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

    def knowledge_index_state(self, agent_id: str) -> IndexState | None:
        """What the knowledge index of ``data.db`` holds of ``agent_id``, read only; None when
        nothing was indexed there yet. Raises :class:`sqlite3.Error` when it cannot be read."""
        return knowledge_schema.sqlite_index_state(self.settings.database_path, agent_id)

    def kv_table(self, agent_id: str) -> KVTable:
        """The LangGraph items of one agent, in the episodic store's database."""
        if self.kind == "postgres":
            database = PostgresDatabase(self.url, extra_migrations=(kv.postgres_migrations,))
            return KVTable(database, agent_id)
        path = self.settings.database_path
        return KVTable(SqliteDatabase(path, extra_migrations=(kv.sqlite_migrations,)), agent_id)

    def stored_agents(self) -> set[str]:
        """The agents with documents in PostgreSQL, while the documents live there (none
        otherwise), read in a read-only transaction: listing never creates or migrates."""
        if not self.documents_on_postgres:
            return set()
        return set(stored_agents(self.url))

    def documents_database(self) -> PostgresDatabase | None:
        """The PostgreSQL database the documents live in (one pool, for many agents'
        documents and the dream history beside them), or None when they are files."""
        if not self.documents_on_postgres:
            return None
        return open_database(self.url)

    def documents_in(self, database: PostgresDatabase, agent_id: str) -> DocumentStore:
        """One agent's documents in ``database`` (from :meth:`documents_database`), as they
        are stored: no guard for files left beside them (a transfer is what replaces them)."""
        return PostgresDocuments(
            database, agent_id, lock_timeout=self.settings.lock_timeout_seconds
        )

    def forget_agent(self, agent_id: str) -> tuple[int, int]:
        """Forget every row of ``agent_id`` in ``data.db`` (when it exists) and, with a URL,
        in PostgreSQL: episodic rows (with their recall index and vectors), then its knowledge
        index and the rows beside them (documents, dreams, LangGraph items). Returns (episodic
        rows, other rows)."""
        rows = other = 0
        if self.settings.database_path.exists():
            path = self.settings.database_path
            database = SqliteDatabase(path, extra_migrations=DATA_DB_MIGRATIONS[1:])
            rows, other = _forget(SqliteStore(path), database, agent_id)
        if self.kind == "postgres":
            found = _forget(PostgresStore(self.url), self._postgres_database(), agent_id)
            rows, other = rows + found[0], other + found[1]
        return rows, other

    def forget_dreams(self, agent_id: str, database: Database | None = None) -> None:
        """Delete the agent's recorded dreams from ``database`` (from
        :meth:`documents_database`) or, without one, from ``data.db``."""
        if database is not None:
            forget_in(database, agent_id, ("dream_runs",))
            return
        own = SqliteDatabase(self.settings.database_path)
        try:
            forget_in(own, agent_id, ("dream_runs",))
        finally:
            own.close()

    def _postgres_database(self) -> Database:
        migrations = (
            documents_migrations,
            knowledge_schema.postgres_migrations,
            pg_dream_migrations,
            kv.postgres_migrations,
        )
        return PostgresDatabase(self.url, extra_migrations=migrations)

    def check_postgres(self) -> list[Check]:
        """``doctor``'s findings on the PostgreSQL database (none without one): it answers,
        every migration set it has started is current and has its tables, the derived data
        is whole. Read only."""
        if self.kind != "postgres":
            return []
        return postgres_checks(self.url)

    def check_data_db(self) -> list[Check]:
        """``doctor``'s findings on ``<home>/data.db`` (checked on either backend: it holds
        what an earlier configuration left): intact, current, every table, derived data whole.
        A damaged file is marked so that nothing writes to it until it is replaced."""
        return data_db.database_checks(self.settings.database_path)

    def migrate_postgres(self) -> str:
        """Apply the pending migrations of every set the PostgreSQL database has started (the
        repair of its "schema current"); what was applied."""
        if self.kind != "postgres":
            return "nothing to do"
        return apply_pending(self.url)

    def migrate_data_db(self) -> None:
        """Apply the pending migrations of ``<home>/data.db`` (the repair of its "schema
        current")."""
        data_db.create_current(self.settings.database_path)

    def damage(self) -> str | None:
        """Why ``data.db`` cannot be rebuilt (it fails SQLite's quick check), with what to
        do; None when it is intact, absent, or the backend is PostgreSQL."""
        path = self.settings.database_path
        if self.kind != "sqlite" or not path.exists():
            return None
        return data_db.damage(path)

    def rebuild_derived(self) -> list[str]:
        """Rebuild what the episodic database derives from its rows, for every agent: the
        activity search and the recall index, and (SQLite) the knowledge index tables, empty
        until each agent's is rebuilt from knowledge.md; what could not be rebuilt."""
        if self.kind == "sqlite":
            path = self.settings.database_path
            return data_db.rebuild(path) if path.exists() else []
        try:
            episodic = self.episodic()
            try:
                episodic.rebuild_derived()
            finally:
                episodic.close()
        except MarkusMemoryError as exc:
            return [f"activity search and conversation recall index: {exc}"]
        return []

    def health(self) -> Health:
        """What ``GET /healthz`` reports: one fresh read-only connection to PostgreSQL
        (reachable, every started migration set applied), or ``local`` without one."""
        return probe(self.url) if self.kind == "postgres" else LOCAL

    def dream_audit(self, documents: DocumentStore) -> AuditLog:
        """The dream audit beside the documents a dream changes: in their PostgreSQL database
        when they live there (one dream history for every host), else ``<home>/data.db``.

        With ``MARKUS_DOCUMENTS=files`` each host dreams over its own files, so its audit (and
        its day's slot, and what undo restores) stays in its own ``data.db``."""
        if isinstance(documents, PostgresDocuments):
            return open_audit_log(documents.database, documents)
        return open_audit_log(self.settings.database_path)


def _forget(store: EpisodicStore, database: Database, agent_id: str) -> tuple[int, int]:
    """Forget the agent in one database: its episodic rows (through ``store``), then its
    knowledge index and the rows beside them (documents, dreams, LangGraph items)."""
    try:
        rows = forget_agent(store, agent_id)
    finally:
        store.close()
    try:
        KnowledgeIndex(database).drop(agent_id)
        return rows, forget_in(database, agent_id)
    finally:
        database.close()


def explain_url(url: str) -> MarkusMemoryError | None:
    """Why the PostgreSQL ``url`` cannot be used (a missing database, a refused login, a
    missing schema, an unreachable server), from one fresh connection; None when it looks
    fine, or is not PostgreSQL's."""
    if not url.startswith(POSTGRES_URL_SCHEMES):
        return None
    return diagnose(url)


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
