"""The PostgreSQL dialect: how values are written (UTC milliseconds, ``jsonb`` text without NUL)
and read back, and the connection the shared SQL modules use (:class:`PostgresSql`: ``%s``
placeholders), gathered in :data:`POSTGRES` (a :class:`~..dialect.Dialect`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from ...errors import InvalidInputError
from .._records import RowDecoder
from .._sql import DialectSql
from ..dialect import Dialect, same


def to_utc(moment: datetime) -> datetime:
    """A timestamp as stored: timezone-aware UTC, truncated to milliseconds (as ``iso_ms``)."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidInputError("timestamps must be timezone-aware datetimes (UTC)")
    utc = moment.astimezone(timezone.utc)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def from_db(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.astimezone(timezone.utc)


def json_value(value: Any) -> str | None:
    """A mapping as JSON text for a ``jsonb`` parameter (None stays NULL)."""
    return None if value is None else json.dumps(dict(value), ensure_ascii=False, default=str)


def json_obj(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    return dict(value) if isinstance(value, dict) else {"value": value}


DECODE = RowDecoder(when=from_db, obj=json_obj)


def clean_text(value: str) -> str:
    """PostgreSQL text cannot hold NUL; lone surrogates cannot be encoded at all."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"text cannot be stored as UTF-8: {exc.reason}") from exc
    return value


def json_param(value: Any) -> str | None:
    """:func:`json_value`, made storable as PostgreSQL text (see :func:`clean_text`)."""
    text = json_value(value)
    return None if text is None else clean_text(text)


class PostgresSql(DialectSql):
    """A connection as the shared SQL modules use it (:class:`~._sql.DialectSql`)."""

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        # psycopg's rows are tuples already (the pool's connections keep the default row
        # factory): a recall's thousand candidate keys are not copied once more.
        rows: list[tuple[Any, ...]] = self.conn.execute(
            self.dialect.sql(sql), tuple(params)
        ).fetchall()
        return rows

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        with self.conn.pipeline():
            yield

    def pipelined(self) -> bool:
        return bool(self.conn.pgconn.pipeline_status)

    @property
    def dialect(self) -> Dialect:
        return POSTGRES


POSTGRES = Dialect(
    "postgres",
    to_utc,
    same,
    json_param,
    clean_text,
    DECODE,
    flag=bool,
    json_cast="::jsonb",
    time_type="TIMESTAMPTZ",
    identity=True,
    bind=PostgresSql,
    lock_rows=" FOR UPDATE",
    greatest="GREATEST",
)
