"""What really differs between the SQLite and the PostgreSQL store, in one small object.

A :class:`Dialect` carries the placeholder style, the adapters for values written (times, JSON,
text) and read back (its :class:`~._records.RowDecoder`), the column that orders rows by
insertion, and the conflict clauses. Code written once over a :class:`Database` spells its SQL
with ``?`` placeholders and passes it through :meth:`Dialect.sql`; only ranking SQL, where the
engines differ (FTS5 ``bm25`` against ``tsvector``/``ts_rank``), stays written per backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from ._records import RowDecoder
from ._sql import DialectSql
from .migrations import Migrations


def same(value: Any) -> Any:
    """A value the backend stores as it is."""
    return value


@dataclass(frozen=True)
class Dialect:
    """The differences between the two backends that CRUD and row mapping must know."""

    name: Literal["sqlite", "postgres"]
    time: Callable[[datetime], Any]
    """A timezone-aware time as the backend stores it (ISO text with milliseconds, or a
    ``timestamptz`` truncated to milliseconds)."""
    exact_time: Callable[[datetime], Any]
    """A time kept to the microsecond (ISO text on SQLite, a ``timestamptz``)."""
    json: Callable[[Any], str | None]
    """A mapping as the parameter of a JSON column (None stays NULL)."""
    text: Callable[[str], str]
    """Text as the backend can store it (PostgreSQL refuses NUL)."""
    decode: RowDecoder
    """Times and JSON values read back."""
    flag: Callable[[bool], Any]
    """A boolean as the backend stores it (0/1, or ``boolean``)."""
    json_cast: str
    """What follows the placeholder of a JSON column (``::jsonb`` on PostgreSQL)."""
    time_type: str
    """The column type of a stored time."""
    identity: bool
    """Whether a table needs an identity column to order its rows by insertion (SQLite's
    ``rowid`` does that by itself)."""
    bind: Callable[[Any], DialectSql]
    """A connection of this backend as the shared SQL modules use it (``?`` placeholders)."""
    lock_rows: str
    """What follows a SELECT whose rows the write transaction goes on to change (``FOR
    UPDATE``; nothing on SQLite, whose write transaction holds the whole file)."""
    greatest: str
    """The function of the larger of two values (``MAX`` on SQLite, ``GREATEST``)."""

    def sql(self, statement: str) -> str:
        """``statement`` written with ``?`` placeholders, in this backend's style."""
        if self.name == "sqlite":
            return statement
        return statement.replace("%", "%%").replace("?", "%s")

    def read_time(self, value: Any) -> datetime | None:
        return self.decode.when(value)

    def opt_time(self, moment: datetime | None) -> Any:
        return None if moment is None else self.time(moment)

    def opt_text(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def insertion_order(self, identity_column: str) -> str:
        """The column that orders a table's rows by insertion: ``rowid`` on SQLite, else the
        table's identity column."""
        return identity_column if self.identity else "rowid"

    def identity_ddl(self, identity_column: str) -> str:
        """The column definition (with its comma) a new table needs for
        :meth:`insertion_order`; nothing on SQLite."""
        if not self.identity:
            return ""
        return f"{identity_column} BIGINT GENERATED ALWAYS AS IDENTITY,"

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` equal to one of ``values`` (non-empty): the condition and its params."""
        if self.name == "sqlite":
            return f"{column} IN ({','.join('?' * len(values))})", list(values)
        return f"{column} = ANY(?)", [list(values)]

    def bytewise(self, column: str) -> str:
        """``column`` ordered by its bytes (SQLite's default; PostgreSQL's collation "C")."""
        return column if self.name == "sqlite" else f'{column} COLLATE "C"'

    def values(
        self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]
    ) -> tuple[str, list[Any]]:
        """A common table expression ``name(columns)`` holding ``rows`` (non-empty), and its
        params; ``columns`` are ``(name, SQL type)`` pairs. SQLite gets a ``VALUES`` list; on
        PostgreSQL each column travels as one typed array (``unnest``), so the statement's text
        and its parameter count stay the same whatever the number of rows (no parsing and
        planning of hundreds of parameters)."""
        names = ", ".join(column for column, _ in columns)
        if self.name == "sqlite":
            marks = ", ".join(
                "?" if kind == "text" else f"CAST(? AS {kind})" for _, kind in columns
            )
            values = ", ".join([f"({marks})"] * len(rows))
            return f"{name}({names}) AS (VALUES {values})", [v for row in rows for v in row]
        arrays = ", ".join(f"?::{kind}[]" for _, kind in columns)
        params = [[row[i] for row in rows] for i in range(len(columns))]
        return f"{name}({names}) AS (SELECT * FROM unnest({arrays}))", params

    def unindexed(self, column: str) -> str:
        """``column`` in a condition the planner must not answer from an index on it (SQLite
        would otherwise walk every row of the agent; PostgreSQL plans by cost)."""
        return f"+{column}" if self.name == "sqlite" else column

    @staticmethod
    def on_conflict_ignore(target: str) -> str:
        """The clause that skips a row already present under ``target`` (a column list)."""
        return f" ON CONFLICT ({target}) DO NOTHING"

    @staticmethod
    def on_conflict_update(target: str, columns: tuple[str, ...]) -> str:
        """The clause that overwrites ``columns`` of a row already present under ``target``."""
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns)
        return f" ON CONFLICT ({target}) DO UPDATE SET {sets}"


class Database(Protocol):
    """One opened database of either backend (:class:`~._sqlite.conn.SqliteDatabase` or
    :class:`~._postgres.conn.PostgresDatabase`): transactions, migrations and its dialect."""

    @property
    def dialect(self) -> Dialect: ...
    def read(self) -> AbstractContextManager[Any]: ...
    def write(self) -> AbstractContextManager[Any]: ...
    def migrate(self, migrations: Migrations[Any]) -> list[str]: ...
    def close(self) -> None: ...


class Repository:
    """What every repository holds: the database it uses (composed, not inherited), whose
    :class:`Dialect` spells its SQL."""

    def __init__(self, database: Database) -> None:
        self.database = database

    @property
    def dialect(self) -> Dialect:
        return self.database.dialect

    def select(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read statement written with ``?`` placeholders."""
        with self.database.read() as conn:
            return self.dialect.bind(conn).rows(sql, params)
