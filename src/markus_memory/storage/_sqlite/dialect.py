"""The SQLite dialect: how values are written and read back, and the connection the shared SQL
modules use (:class:`SqliteSql`), gathered in :data:`SQLITE` (a :class:`~..dialect.Dialect`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from ...config import iso_ms, parse_iso
from ...errors import InvalidInputError
from .._records import RowDecoder
from .._sql import DialectSql
from ..dialect import Dialect, same


def to_iso(moment: datetime) -> str:
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware datetimes (UTC)")
    return iso_ms(moment)


def from_iso(text: str | None) -> datetime | None:
    return None if text is None else parse_iso(str(text))


def json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(dict(value), ensure_ascii=False, default=str)


def json_obj(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {"value": value}


DECODE = RowDecoder(when=from_iso, obj=json_obj)


class SqliteSql(DialectSql):
    """A connection as the shared SQL modules use it (:class:`~._sql.DialectSql`)."""

    @property
    def dialect(self) -> Dialect:
        return SQLITE

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.conn.cursor()
        cursor.row_factory = None  # plain tuples: no ``sqlite3.Row`` made and copied per row
        try:
            found: list[tuple[Any, ...]] = cursor.execute(sql, tuple(params)).fetchall()
            return found
        finally:
            cursor.close()


SQLITE = Dialect(
    "sqlite",
    to_iso,
    datetime.isoformat,
    json_text,
    same,
    DECODE,
    flag=int,
    json_cast="",
    time_type="TEXT",
    identity=False,
    bind=SqliteSql,
    lock_rows="",
    greatest="MAX",
)
