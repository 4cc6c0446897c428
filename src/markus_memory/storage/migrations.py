"""Versioned schema migrations: named sets of ``m001_…`` functions, applied once each, any backend.

The shape is sqlite-utils' ``Migrations``::

    migrations = Migrations("activities")

    @migrations()
    def m001_create(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE ...")

    migrations.apply(SqliteMigrationTarget(conn))

Each migration and its bookkeeping row commit in one transaction, so a crash leaves either both
or neither. ``apply`` runs on every open and does nothing when everything is applied. Several
sets share one database (one bookkeeping table keyed by ``(migration_set, name)``), so the
search index can keep its own set next to the activity tables.

The registry does not know SQL: it talks to a :class:`MigrationTarget`, which owns the
transaction and the bookkeeping table. :class:`SqliteMigrationTarget` is the SQLite one; a
PostgreSQL target implements the same four methods (and can serialise concurrent openers with
``pg_advisory_xact_lock`` inside ``transaction()``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Generic, Protocol, TypeVar

from ..errors import InvalidInputError, StorageError

C = TypeVar("C")

BOOKKEEPING_TABLE = "_markus_migrations"
BOOKKEEPING_DDL = (
    f"CREATE TABLE IF NOT EXISTS {BOOKKEEPING_TABLE} ("
    " migration_set TEXT NOT NULL,"
    " name TEXT NOT NULL,"
    " applied_at TEXT NOT NULL,"
    " PRIMARY KEY (migration_set, name))"
)
"""The bookkeeping table, the same on every backend."""
_NAME_RE = re.compile(r"^m\d{3,}_[A-Za-z0-9_]+$")


class MigrationTarget(Protocol[C]):
    """One database a migration set is applied to (backend-specific SQL lives here)."""

    def ensure_bookkeeping(self) -> None:
        """Create the bookkeeping table if missing (idempotent, safe under concurrency)."""

    def transaction(self) -> AbstractContextManager[C]:
        """A context manager: one write transaction, committed on exit, rolled back on error.

        It must take the database write lock *before* yielding, so that :meth:`applied`
        read inside it cannot race another process applying the same migration.
        """

    def applied(self, conn: C, migration_set: str) -> set[str]:
        """Names already applied for ``migration_set`` (read inside the transaction)."""

    def record(self, conn: C, migration_set: str, name: str, applied_at: str) -> None:
        """Insert the bookkeeping row for one migration (inside the same transaction)."""


@dataclass(frozen=True)
class Migration(Generic[C]):
    """One registered migration function."""

    name: str
    fn: Callable[[C], None]


class Migrations(Generic[C]):
    """A named, ordered set of migrations (registration order is application order)."""

    def __init__(self, name: str) -> None:
        if not name or not name.strip():
            raise InvalidInputError("a migration set needs a non-empty name")
        self.name = name
        self._migrations: list[Migration[C]] = []

    def __call__(
        self, *, name: str | None = None
    ) -> Callable[[Callable[[C], None]], Callable[[C], None]]:
        """Decorator registering a migration; its name defaults to the function's name."""

        def register(fn: Callable[[C], None]) -> Callable[[C], None]:
            migration_name = name or fn.__name__
            if not _NAME_RE.match(migration_name):
                raise InvalidInputError(
                    f"migration name {migration_name!r} must look like m001_description"
                )
            if any(m.name == migration_name for m in self._migrations):
                raise InvalidInputError(
                    f"migration {migration_name!r} is registered twice in set {self.name!r}"
                )
            self._migrations.append(Migration(migration_name, fn))
            return fn

        return register

    @property
    def migrations(self) -> tuple[Migration[C], ...]:
        return tuple(self._migrations)

    def pending(self, target: MigrationTarget[C]) -> list[str]:
        """Names not yet applied to ``target``, in application order."""
        target.ensure_bookkeeping()
        with target.transaction() as conn:
            done = target.applied(conn, self.name)
        return [m.name for m in self._migrations if m.name not in done]

    def apply(self, target: MigrationTarget[C], *, stop_before: str | None = None) -> list[str]:
        """Apply every pending migration, each in its own transaction; return the names applied.

        ``stop_before`` (for tests and staged upgrades) stops before the named migration.
        A failing migration rolls back with its bookkeeping row and raises
        :class:`StorageError`; the ones before it stay applied.
        """
        target.ensure_bookkeeping()
        with target.transaction() as conn:
            done = target.applied(conn, self.name)
        newly: list[str] = []
        for migration in self._migrations:
            if migration.name == stop_before:
                break
            if migration.name in done:  # recorded once, applied for good: one look for all
                continue
            with target.transaction() as conn:
                # Re-read inside the write transaction: another process may have applied it
                # between our last look and taking the lock.
                if migration.name in target.applied(conn, self.name):
                    continue
                try:
                    migration.fn(conn)
                except StorageError:
                    raise
                except Exception as exc:
                    raise StorageError(
                        f"migration {self.name}/{migration.name} failed: {exc}"
                    ) from exc
                target.record(conn, self.name, migration.name, _now_iso())
            newly.append(migration.name)
        return newly


def _now_iso() -> str:
    moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class SqliteMigrationTarget:
    """Applies migrations to a stdlib ``sqlite3`` connection opened with ``isolation_level=None``.

    Each transaction is ``BEGIN IMMEDIATE`` so concurrent openers queue on the write lock
    (with the connection's ``busy_timeout``) instead of both applying a migration.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        if conn.isolation_level is not None:
            raise InvalidInputError(
                "SqliteMigrationTarget needs a connection opened with isolation_level=None"
            )
        self.conn = conn

    def ensure_bookkeeping(self) -> None:
        self.conn.execute(BOOKKEEPING_DDL)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def applied(self, conn: sqlite3.Connection, migration_set: str) -> set[str]:
        rows = conn.execute(
            f"SELECT name FROM {BOOKKEEPING_TABLE} WHERE migration_set = ?", (migration_set,)
        ).fetchall()
        return {str(row[0]) for row in rows}

    def record(
        self, conn: sqlite3.Connection, migration_set: str, name: str, applied_at: str
    ) -> None:
        conn.execute(
            f"INSERT INTO {BOOKKEEPING_TABLE} (migration_set, name, applied_at) VALUES (?, ?, ?)",
            (migration_set, name, applied_at),
        )
