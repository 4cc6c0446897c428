"""PostgreSQL document store: the markdown layers of many agents on many hosts, one row a document.

Table ``documents(agent_id, name, content TEXT, version BIGINT, updated_at)``: ``content`` is
the exact markdown text the file would hold, so exporting to files is exact. Every write takes
a new ``version`` from one sequence, so a version is never reused (a cache keyed by it cannot
confuse a deleted and re-created document).

Concurrency: :meth:`PostgresDocuments.lock` is one transaction holding
``pg_advisory_xact_lock`` on the agent (reentrant per thread; reads inside it see the writes
inside it). Every read-change-write of a layer runs inside it, so writers on different hosts
queue like processes on one host queue on the lock file, and no update is lost. A block that
raises rolls its writes back (stronger than files, where earlier writes of the block stay).
:meth:`PostgresDocuments.exclusive` is ``pg_try_advisory_lock`` on a connection held for the
task: at most one dream per agent across hosts; it is released when the task ends or the
process dies. Connections, timeouts and migrations are :mod:`.conn`'s: one pool per
URL per process, shared with the episodic store (the ``[postgres]`` extra); an unreachable
server raises :class:`BackendUnavailableError` within the connect timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from ..._docs import DocumentVersion, check_name
from ...errors import (
    BackendUnavailableError,
    BusyError,
    InvalidInputError,
    LockTimeoutError,
    StorageError,
)
from ..migrations import Migrations
from .conn import (
    CONNECT_TIMEOUT_S,
    STATEMENT_TIMEOUT_MS,
    PostgresDatabase,
    conninfo_with_timeouts,
)
from .diagnose import diagnose

if TYPE_CHECKING:
    import psycopg

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

documents_migrations: Migrations[Any] = Migrations("documents")


@documents_migrations()
def m001_documents(conn: Any) -> None:
    conn.execute("CREATE SEQUENCE IF NOT EXISTS document_versions")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS documents ("
        " agent_id TEXT NOT NULL,"
        " name TEXT NOT NULL,"
        " content TEXT NOT NULL,"
        " version BIGINT NOT NULL,"
        " updated_at TIMESTAMPTZ NOT NULL,"
        " PRIMARY KEY (agent_id, name))"
    )


def open_database(url: str) -> PostgresDatabase:
    """The database at ``url`` (shared pool, timeouts) with the documents schema migrated."""
    return PostgresDatabase(url, extra_migrations=(documents_migrations,))


def _modified_ns(moment: datetime) -> int:
    return (moment - _EPOCH) // datetime.resolution * 1000


def _moment(modified_ns: int | None) -> datetime | None:
    """The timestamptz of ``modified_ns`` (PostgreSQL keeps microseconds)."""
    if modified_ns is None:
        return None
    return _EPOCH + timedelta(microseconds=modified_ns // 1000)


class _Held(threading.local):
    """This thread's locked transaction on one agent (shared by every handle on that agent)."""

    def __init__(self) -> None:
        self.depth = 0
        self.conn: psycopg.Connection[Any] | None = None


_HELD: dict[tuple[str, str], _Held] = {}
_HELD_GUARD = threading.Lock()


class PostgresDocuments:
    """The documents of one agent in PostgreSQL (see the module docstring)."""

    def __init__(
        self,
        database: str | PostgresDatabase,
        agent_id: str,
        *,
        lock_timeout: float = 30.0,
    ) -> None:
        self._owns_database = isinstance(database, str)
        self.database = open_database(database) if isinstance(database, str) else database
        self.agent_id = agent_id
        self.lock_timeout = lock_timeout
        with _HELD_GUARD:
            self._held = _HELD.setdefault((self.database.conninfo, agent_id), _Held())
        self._lock_key = f"markus:documents:{agent_id}"

    # ---- connections -----------------------------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """The thread's locked transaction if it holds :meth:`lock`, else a pooled connection."""
        if self._held.conn is not None:
            yield self._held.conn
            return
        with self.database.read() as conn:
            yield conn

    def held_connection(self) -> psycopg.Connection[Any] | None:
        """The locked transaction while this thread holds :meth:`lock`, else None (the dream
        audit joins it, so documents and history commit together)."""
        return self._held.conn

    @contextmanager
    def lock(self) -> Iterator[None]:
        """One transaction holding the agent's advisory lock; nested calls join it."""
        held = self._held
        if held.depth:
            held.depth += 1
            try:
                yield
            finally:
                held.depth -= 1
            return
        import psycopg

        with self.database.write() as conn:
            # The wait is bounded by lock_timeout, not by the shorter statement timeout.
            timeout_ms = max(1, int(self.lock_timeout * 1000))
            conn.execute(f"SET LOCAL lock_timeout = {timeout_ms}")
            conn.execute(f"SET LOCAL statement_timeout = {timeout_ms + 1000}")
            try:
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self._lock_key,)
                )
            except psycopg.errors.LockNotAvailable as exc:
                raise LockTimeoutError(
                    f"could not lock the documents of {self.agent_id!r} within "
                    f"{self.lock_timeout:g} s"
                ) from exc
            conn.execute("SET LOCAL lock_timeout TO DEFAULT")
            conn.execute("SET LOCAL statement_timeout TO DEFAULT")
            held.conn, held.depth = conn, 1
            try:
                yield
            finally:
                held.conn, held.depth = None, 0

    # ---- documents -------------------------------------------------------------------------

    def read(self, name: str) -> str | None:
        text = self._content(name)
        return text[1:] if text is not None and text.startswith("\ufeff") else text

    def stored(self, name: str) -> str | None:
        return self._content(name)

    def _content(self, name: str) -> str | None:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT content FROM documents WHERE agent_id = %s AND name = %s",
                (self.agent_id, check_name(name)),
            ).fetchone()
        return None if row is None else str(row[0])

    def write(self, name: str, text: str, *, modified_ns: int | None = None) -> None:
        if "\x00" in text:
            raise InvalidInputError(f"{name}: PostgreSQL text cannot hold NUL characters")
        import psycopg

        with self._conn() as conn:
            try:
                conn.execute(
                    "INSERT INTO documents (agent_id, name, content, version, updated_at)"
                    " VALUES (%s, %s, %s, nextval('document_versions'),"
                    " COALESCE(%s, clock_timestamp()))"
                    " ON CONFLICT (agent_id, name) DO UPDATE SET content = EXCLUDED.content,"
                    " version = EXCLUDED.version, updated_at = EXCLUDED.updated_at",
                    (self.agent_id, check_name(name), text, _moment(modified_ns)),
                )
            except psycopg.DataError as exc:
                raise StorageError(f"{name}: PostgreSQL refused the text: {exc}") from exc

    def delete(self, name: str) -> bool:
        with self._conn() as conn:
            cur = conn.execute(
                "DELETE FROM documents WHERE agent_id = %s AND name = %s",
                (self.agent_id, check_name(name)),
            )
            return cur.rowcount > 0

    def version(self, name: str) -> DocumentVersion | None:
        with self._conn() as conn:
            row = conn.execute(
                "SELECT version, updated_at FROM documents WHERE agent_id = %s AND name = %s",
                (self.agent_id, check_name(name)),
            ).fetchone()
        return None if row is None else DocumentVersion(str(row[0]), _modified_ns(row[1]))

    def exists(self, name: str) -> bool:
        return self.version(name) is not None

    def names(self) -> list[str]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT name FROM documents WHERE agent_id = %s ORDER BY name", (self.agent_id,)
            ).fetchall()
        return [str(row[0]) for row in rows]

    def dump(self) -> dict[str, str]:
        with self._conn() as conn:
            rows = conn.execute(
                "SELECT name, content FROM documents WHERE agent_id = %s ORDER BY name",
                (self.agent_id,),
            ).fetchall()
        return {str(name): str(content) for name, content in rows}

    @contextmanager
    def exclusive(self, task: str) -> Iterator[None]:
        """``pg_try_advisory_lock`` on a connection held until the task ends."""
        key = f"markus:exclusive:{self.agent_id}:{task}"
        with self.database.read() as conn:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
            ).fetchone()
            if not row or not row[0]:
                raise BusyError(f"{task} is already running for agent {self.agent_id!r}")
            try:
                yield
            finally:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))

    def close(self) -> None:
        """Give back the database if this store opened it (a passed-in one stays open)."""
        if self._owns_database:
            self.database.close()


def stored_agents(url: str) -> list[str]:
    """Every agent id with documents at ``url``, read on a plain connection in a read-only
    transaction: listing agents never creates or migrates the schema (``doctor`` lists them
    before it checks the schema). An unusable URL raises what :func:`diagnose` finds."""
    import psycopg

    try:
        conn = psycopg.connect(
            conninfo_with_timeouts(url, CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS), autocommit=True
        )
    except psycopg.Error as exc:
        raise diagnose(url) or BackendUnavailableError(f"PostgreSQL: {exc}") from exc
    try:
        with conn, conn.transaction():
            conn.execute("SET TRANSACTION READ ONLY")
            if conn.execute("SELECT current_schema()").fetchone() in (None, (None,)):
                raise diagnose(url) or StorageError(f"PostgreSQL: no schema at {url}")
            if conn.execute("SELECT to_regclass('documents')").fetchone() in (None, (None,)):
                return []
            rows = conn.execute("SELECT DISTINCT agent_id FROM documents ORDER BY 1").fetchall()
    except psycopg.Error as exc:
        raise diagnose(url) or StorageError(f"PostgreSQL: {exc}") from exc
    return [str(row[0]) for row in rows]
