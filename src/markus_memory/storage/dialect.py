"""What really differs between the SQLite and the PostgreSQL store, in one small object.

A :class:`Dialect` carries the placeholder style, the adapters for values written (times, JSON,
text) and read back (its :class:`~._records.RowDecoder`), the column that orders rows by
insertion, and the conflict clauses. Code written once over a :class:`Database` spells its SQL
with ``?`` placeholders and passes it through :meth:`Dialect.sql`; only ranking SQL, where the
engines differ (FTS5 ``bm25`` against ``tsvector``/``ts_rank``), stays written per backend.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

from . import postgres_conn as pg
from . import sqlite_conn as lite
from ._records import RowDecoder
from .migrations import Migrations


def _same(value: str) -> str:
    return value


@dataclass(frozen=True)
class Dialect:
    """The differences between the two backends that CRUD and row mapping must know."""

    name: Literal["sqlite", "postgres"]
    time: Callable[[datetime], Any]
    """A timezone-aware time as the backend stores it (ISO text with milliseconds, or a
    ``timestamptz`` truncated to milliseconds)."""
    json: Callable[[Any], str | None]
    """A mapping as the parameter of a JSON column (None stays NULL)."""
    text: Callable[[str], str]
    """Text as the backend can store it (PostgreSQL refuses NUL)."""
    decode: RowDecoder
    """Times and JSON values read back."""
    insertion_order: str
    """The column that orders a table's rows by insertion (``rowid`` / an identity column)."""
    time_type: str
    """The column type of a stored time."""
    insertion_order_ddl: str
    """The column definition that gives a new table :attr:`insertion_order` (SQLite has it)."""

    def sql(self, statement: str) -> str:
        """``statement`` written with ``?`` placeholders, in this backend's style."""
        if self.name == "sqlite":
            return statement
        return statement.replace("%", "%%").replace("?", "%s")

    def read_time(self, value: Any) -> datetime | None:
        return self.decode.when(value)

    @staticmethod
    def on_conflict_ignore(target: str) -> str:
        """The clause that skips a row already present under ``target`` (a column list)."""
        return f" ON CONFLICT ({target}) DO NOTHING"

    @staticmethod
    def on_conflict_update(target: str, columns: tuple[str, ...]) -> str:
        """The clause that overwrites ``columns`` of a row already present under ``target``."""
        sets = ", ".join(f"{c} = excluded.{c}" for c in columns)
        return f" ON CONFLICT ({target}) DO UPDATE SET {sets}"


SQLITE = Dialect(
    "sqlite",
    lite.to_iso,
    lite.json_text,
    _same,
    lite.DECODE,
    insertion_order="rowid",
    time_type="TEXT",
    insertion_order_ddl="",
)
POSTGRES = Dialect(
    "postgres",
    pg.to_utc,
    pg.json_param,
    pg.clean_text,
    pg.DECODE,
    insertion_order="seq",
    time_type="TIMESTAMPTZ",
    insertion_order_ddl="seq BIGINT GENERATED ALWAYS AS IDENTITY,",
)


class Database(Protocol):
    """One opened database of either backend (:class:`~.sqlite_conn.SqliteDatabase` or
    :class:`~.postgres_conn.PostgresDatabase`): transactions, migrations and its dialect."""

    @property
    def dialect(self) -> Dialect: ...
    def read(self) -> AbstractContextManager[Any]: ...
    def write(self) -> AbstractContextManager[Any]: ...
    def migrate(self, migrations: Migrations[Any]) -> list[str]: ...
