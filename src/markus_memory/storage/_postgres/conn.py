"""PostgresDatabase: pooled psycopg 3 connections to one URL, transactions, timeouts, migrations.

psycopg is the ``[postgres]`` extra and is imported only when a PostgreSQL URL is opened.
One :class:`psycopg_pool.ConnectionPool` serves each URL per process (stores opened on the same
URL share it; the last one closed closes it; a forked child builds its own). Every connection
gets a connect timeout and a ``statement_timeout``; a server that cannot be reached raises
:class:`BackendUnavailableError` within the connect timeout instead of hanging. Every write is
one transaction: it commits whole or not at all.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...config import POSTGRES_URL_SCHEMES
from ...errors import (
    BackendUnavailableError,
    ClosedError,
    DatabaseMissingError,
    ExtraNotInstalledError,
    InvalidInputError,
    LoginRefusedError,
    SchemaMissingError,
    StorageError,
)
from ..migrations import BOOKKEEPING_DDL, BOOKKEEPING_TABLE, Migrations
from .diagnose import diagnose
from .dialect import POSTGRES
from .schema import migrations as markus_migrations

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from ..dialect import Dialect

CONNECT_TIMEOUT_S = 5.0
STATEMENT_TIMEOUT_MS = 30_000
POOL_MAX_SIZE = 8
# Serialises migrations of concurrent openers on one database (pg_advisory_xact_lock key).
MIGRATION_LOCK_KEY = 0x6D61726B7573  # "markus"


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(POSTGRES_URL_SCHEMES)


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise ExtraNotInstalledError("postgres", "psycopg") from None
    return psycopg, psycopg_pool


def conninfo_with_timeouts(url: str, connect_timeout: float, statement_timeout_ms: int) -> str:
    """The URL plus connect and statement timeouts, keeping any ``options`` it already has.

    A ``connect_timeout`` or ``statement_timeout`` (in ``options``) already in the URL wins.
    """
    psycopg, _ = _psycopg()
    try:
        params = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError as exc:
        raise InvalidInputError(f"invalid PostgreSQL URL: {exc}") from exc
    options = str(params.get("options") or "")
    if "statement_timeout" not in options:
        options = f"{options} -c statement_timeout={int(statement_timeout_ms)}".strip()
    params["options"] = options
    params.setdefault("connect_timeout", max(1, int(round(connect_timeout))))
    params.setdefault("application_name", "markus-memory")
    return str(psycopg.conninfo.make_conninfo(**params))


@dataclass
class _SharedPool:
    pool: ConnectionPool[Any]
    users: int


_POOLS: dict[tuple[int, str], _SharedPool] = {}
_POOLS_GUARD = threading.Lock()


def _acquire_pool(conninfo: str, connect_timeout: float) -> ConnectionPool[Any]:
    _, psycopg_pool = _psycopg()
    key = (os.getpid(), conninfo)
    with _POOLS_GUARD:
        shared = _POOLS.get(key)
        if shared is not None:
            shared.users += 1
            return shared.pool
        pool: ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            conninfo,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            timeout=connect_timeout,
            reconnect_timeout=connect_timeout,
            check=psycopg_pool.ConnectionPool.check_connection,
            # Reads run as single statements (as on SQLite); writes open a transaction.
            # No server-side prepared statements: after five runs PostgreSQL may switch to a
            # generic plan, which cannot know whether a search term is rare (use the GIN
            # index) or everywhere (walk the agent's newest rows) and costs seconds when wrong.
            kwargs={"autocommit": True, "prepare_threshold": None},
            open=False,
            name="markus-memory",
        )
        try:
            pool.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            pool.close(timeout=0)
            found = diagnose(conninfo, timeout=connect_timeout)
            if isinstance(found, (DatabaseMissingError, LoginRefusedError)):
                raise found from exc
            raise BackendUnavailableError(
                f"PostgreSQL unreachable within {connect_timeout:g} s: {_redact(conninfo)}: "
                "start the server or fix the host and port in the URL"
            ) from exc
        _POOLS[key] = _SharedPool(pool, 1)
        return pool


def _release_pool(conninfo: str) -> None:
    key = (os.getpid(), conninfo)
    with _POOLS_GUARD:
        shared = _POOLS.get(key)
        if shared is None:
            return
        shared.users -= 1
        if shared.users > 0:
            return
        del _POOLS[key]
    shared.pool.close()


def _redact(conninfo: str) -> str:
    """A conninfo without its password, for error messages."""
    psycopg, _ = _psycopg()
    params = psycopg.conninfo.conninfo_to_dict(conninfo)
    if "password" in params:
        params["password"] = "***"
    keep = ("host", "port", "dbname", "user")
    return " ".join(f"{k}={params[k]}" for k in keep if k in params)


class PostgresMigrationTarget:
    """Applies migrations on one psycopg connection; concurrent openers queue on an advisory lock.

    The bookkeeping table and the advisory lock are per schema (``current_schema()``), so two
    schemas of one database migrate independently.
    """

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def ensure_bookkeeping(self) -> None:
        with self.transaction() as conn:
            conn.execute(BOOKKEEPING_DDL)

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.conn.transaction():
            # The statement timeout bounds queries; a migration rewrites tables in proportion
            # to the history (minutes for a million messages), and an opener waits for it.
            self.conn.execute("SET LOCAL statement_timeout = 0")
            self.conn.execute(
                "SELECT pg_advisory_xact_lock(%s, hashtext(current_schema()))",
                (MIGRATION_LOCK_KEY & 0x7FFFFFFF,),
            )
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
            f"INSERT INTO {BOOKKEEPING_TABLE} (migration_set, name, applied_at) "
            "VALUES (%s, %s, %s)",
            (migration_set, name, applied_at),
        )


class PostgresDatabase:
    """One PostgreSQL database (the schema of the URL's search_path) with the Markus schema."""

    def __init__(
        self,
        url: str,
        *,
        extra_migrations: Sequence[Migrations[psycopg.Connection[Any]]] = (),
        connect_timeout: float = CONNECT_TIMEOUT_S,
        statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
    ) -> None:

        if not is_postgres_url(url):
            raise InvalidInputError("a PostgreSQL URL starts with postgresql:// or postgres://")
        self._psycopg, _ = _psycopg()
        self._conninfo = conninfo_with_timeouts(url, connect_timeout, statement_timeout_ms)
        # A connect_timeout in the URL wins over the argument (one knob for the operator).
        connect_timeout = float(
            self._psycopg.conninfo.conninfo_to_dict(self._conninfo)["connect_timeout"]
        )
        self._pool: ConnectionPool[Any] | None = _acquire_pool(self._conninfo, connect_timeout)
        self._timeout = connect_timeout
        try:
            self.migrate(markus_migrations)
            for extra in extra_migrations:
                self.migrate(extra)
        except StorageError as exc:
            self.close()
            found = diagnose(self._conninfo, timeout=connect_timeout)
            if isinstance(found, SchemaMissingError):
                raise found from exc
            raise
        except BaseException:
            self.close()
            raise

    @property
    def conninfo(self) -> str:
        """The libpq conninfo (URL plus timeouts): the key of the shared pool."""
        return self._conninfo

    @property
    def description(self) -> str:
        return _redact(self._conninfo)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._pool
        if pool is None:
            raise ClosedError(f"{self.description}: the store is closed")
        psycopg = self._psycopg
        try:
            with pool.connection(timeout=self._timeout) as conn:
                yield conn
        except psycopg.errors.QueryCanceled as exc:
            raise StorageError(f"{self.description}: statement timed out: {exc}") from exc
        except psycopg.OperationalError as exc:
            # Refused, reset, or no pooled connection within the timeout (PoolTimeout).
            raise BackendUnavailableError(f"{self.description}: {exc}") from exc
        except psycopg.Error as exc:
            raise StorageError(f"{self.description}: {exc}") from exc

    @contextmanager
    def write(self) -> Iterator[psycopg.Connection[Any]]:
        """One write transaction: committed on exit, rolled back on any error."""
        with self._connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for reads: each statement runs on its own (autocommit), as on SQLite."""
        with self._connection() as conn:
            yield conn

    @property
    def dialect(self) -> Dialect:
        """What differs in this backend's SQL and values (:mod:`.dialect`)."""
        return POSTGRES

    def migrate(self, migrations: Migrations[psycopg.Connection[Any]]) -> list[str]:
        """Apply a migration set; returns the names applied."""
        with self._connection() as conn:
            return migrations.apply(PostgresMigrationTarget(conn))

    def close(self) -> None:
        """Give the pool back (closed with the last store on this URL). Safe to call twice."""
        if self._pool is not None:
            self._pool = None
            _release_pool(self._conninfo)
