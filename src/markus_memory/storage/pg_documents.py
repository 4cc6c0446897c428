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
process dies. Connections come from a small ``psycopg_pool`` pool (the ``[postgres]`` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from .._docs import DocumentVersion, check_name
from ..errors import (
    BackendUnavailableError,
    BusyError,
    ExtraNotInstalledError,
    InvalidInputError,
    LockTimeoutError,
    StorageError,
)
from .migrations import BOOKKEEPING_TABLE, Migrations

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MIGRATIONS_LOCK_KEY = 0x6D61726B7573  # "markus": serialises migrations of every set

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


class PgMigrationTarget:
    """Applies a migration set to PostgreSQL; an advisory lock serialises concurrent openers."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def ensure_bookkeeping(self) -> None:
        with self.transaction() as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {BOOKKEEPING_TABLE} ("
                " migration_set TEXT NOT NULL,"
                " name TEXT NOT NULL,"
                " applied_at TEXT NOT NULL,"
                " PRIMARY KEY (migration_set, name))"
            )

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATIONS_LOCK_KEY,))
            yield self.conn

    def applied(self, conn: psycopg.Connection[Any], migration_set: str) -> set[str]:
        rows = conn.execute(
            f"SELECT name FROM {BOOKKEEPING_TABLE} WHERE migration_set = %s", (migration_set,)
        ).fetchall()
        return {str(row[0]) for row in rows}

    def record(
        self, conn: psycopg.Connection[Any], migration_set: str, name: str, applied_at: str
    ) -> None:
        conn.execute(
            f"INSERT INTO {BOOKKEEPING_TABLE} (migration_set, name, applied_at)"
            " VALUES (%s, %s, %s)",
            (migration_set, name, applied_at),
        )


def _psycopg() -> tuple[Any, Any]:
    try:
        import psycopg
        from psycopg_pool import ConnectionPool
    except ImportError as exc:
        raise ExtraNotInstalledError("postgres", exc.name or "psycopg") from exc
    return psycopg, ConnectionPool


def open_pool(url: str, *, max_size: int = 8, timeout: float = 30.0) -> ConnectionPool:
    """A connection pool for ``url`` (autocommit connections) with the documents schema."""
    psycopg, pool_class = _psycopg()
    pool: ConnectionPool = pool_class(
        url,
        min_size=1,
        max_size=max_size,
        timeout=timeout,
        kwargs={"autocommit": True},
        open=False,
    )
    try:
        pool.open(wait=True, timeout=timeout)
        with pool.connection() as conn:
            documents_migrations.apply(PgMigrationTarget(conn))
    except psycopg.OperationalError as exc:
        pool.close()
        raise BackendUnavailableError(f"PostgreSQL unreachable: {exc}") from exc
    except BaseException:
        pool.close()
        raise
    return pool


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
        database: str | ConnectionPool,
        agent_id: str,
        *,
        lock_timeout: float = 30.0,
    ) -> None:
        self._owns_pool = isinstance(database, str)
        self.pool = (
            open_pool(database, timeout=lock_timeout) if isinstance(database, str) else database
        )
        self.agent_id = agent_id
        self.lock_timeout = lock_timeout
        with _HELD_GUARD:
            self._held = _HELD.setdefault((str(self.pool.conninfo), agent_id), _Held())
        self._lock_key = f"markus:documents:{agent_id}"

    # ---- connections -----------------------------------------------------------------------

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection[Any]]:
        """The thread's locked transaction if it holds :meth:`lock`, else a pooled connection."""
        if self._held.conn is not None:
            yield self._held.conn
            return
        psycopg, _ = _psycopg()
        try:
            with self.pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise BackendUnavailableError(f"PostgreSQL failed: {exc}") from exc

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
        psycopg, _ = _psycopg()
        try:
            with self.pool.connection() as conn, conn.transaction():
                timeout_ms = max(1, int(self.lock_timeout * 1000))
                conn.execute(f"SET LOCAL lock_timeout = {timeout_ms}")
                try:
                    conn.execute(
                        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                        (self._lock_key,),
                    )
                except psycopg.errors.LockNotAvailable as exc:
                    raise LockTimeoutError(
                        f"could not lock the documents of {self.agent_id!r} within "
                        f"{self.lock_timeout:g} s"
                    ) from exc
                conn.execute("SET LOCAL lock_timeout = 0")
                held.conn, held.depth = conn, 1
                try:
                    yield
                finally:
                    held.conn, held.depth = None, 0
        except psycopg.OperationalError as exc:
            raise BackendUnavailableError(f"PostgreSQL failed: {exc}") from exc

    # ---- documents -------------------------------------------------------------------------

    def read(self, name: str) -> str | None:
        text = self._content(name)
        return text[1:] if text is not None and text.startswith("\ufeff") else text

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
        psycopg, _ = _psycopg()
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
        with self.pool.connection() as conn:
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
        if self._owns_pool:
            self.pool.close()


def list_agents(pool: ConnectionPool) -> list[str]:
    """Every agent id with at least one document."""
    with pool.connection() as conn:
        rows = conn.execute("SELECT DISTINCT agent_id FROM documents ORDER BY 1").fetchall()
    return [str(row[0]) for row in rows]
