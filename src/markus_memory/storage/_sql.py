"""A connection as the shared SQL modules use it (``?`` placeholders), written once.

The recall index (:mod:`.recall.index`) and the schema back-fills run their SQL through a
:class:`DialectSql`; a backend's subclass names its :class:`~.dialect.Dialect`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dialect import Dialect

SEARCH_CANDIDATES = 2000
"""A search ranks (by bm25 or ``ts_rank``) only match sets up to this size (see
:func:`._sqlite.conn.bounded_rank`); a larger one is ordered by recency."""

COPY_ROWS = 1024
"""Rows per write of a ``COPY``: the server stores each part while the caller makes the next
(on two cores, the analysis of a batch's messages overlaps the storing of their postings)."""

_INTEGER_KINDS = frozenset({"bigint", "integer"})


class DialectSql:
    """``rows``/``run``/``many``/``insert`` on one connection (their SQL never holds a literal
    ``?`` or ``%``)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @property
    def dialect(self) -> Dialect:
        raise NotImplementedError

    @contextmanager
    def pipeline(self) -> Iterator[None]:
        """Statements inside are sent without waiting for each one's answer where the driver
        can (PostgreSQL's pipeline mode: only a statement whose rows are read waits, and an
        error surfaces by the end of the block); on SQLite, in process, as they come."""
        yield

    def pipelined(self) -> bool:
        """Whether statements are being pipelined now (``COPY`` cannot be, so ``insert``
        sends one ``INSERT`` instead)."""
        return False

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        cursor = self.conn.execute(self.dialect.sql(sql), tuple(params))
        return [tuple(r) for r in cursor.fetchall()]

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self.conn.execute(self.dialect.sql(sql), tuple(params)).rowcount)

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        cursor = self.conn.cursor()
        try:
            cursor.executemany(self.dialect.sql(sql), rows)
        finally:
            cursor.close()

    def insert(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        rows: Iterable[Sequence[Any]],
        conflict: str = "",
    ) -> None:
        """Many rows at once, taken from ``rows`` as they come (an iterator may compute them
        while they are written); on PostgreSQL one statement whatever their number (each column
        travels as one typed array), or ``COPY`` without a conflict clause (the recall postings
        of a batch: about half the cost of an ``INSERT``; not while :meth:`pipelined`), sent
        :data:`COPY_ROWS` rows at a time so that the server stores rows while the next ones
        are made. Integer columns are
        sent as text the server parses (an array literal, a ``COPY`` line): formatting a
        Python int is several times cheaper than the driver's per-value adaptation."""
        names = ", ".join(name for name, _ in columns)
        if not self.dialect.identity:  # SQLite
            marks = ", ".join("?" * len(columns))
            self.many(f"INSERT INTO {table} ({names}) VALUES ({marks}) {conflict}", rows)
            return
        numeric = [kind in _INTEGER_KINDS for _, kind in columns]
        if not conflict and not self.pipelined():
            self._copy(f"COPY {table} ({names}) FROM STDIN", iter(rows), all(numeric))
            return
        listed = list(rows)
        if not listed:
            return
        arrays = ", ".join(
            f"?::text::{kind}[]" if whole else f"?::{kind}[]"
            for (_, kind), whole in zip(columns, numeric, strict=True)
        )
        values = [
            "{" + ",".join([str(row[i]) for row in listed]) + "}"
            if whole
            else [row[i] for row in listed]
            for i, whole in enumerate(numeric)
        ]
        self.conn.execute(
            self.dialect.sql(
                f"INSERT INTO {table} ({names}) SELECT * FROM unnest({arrays}) {conflict}"
            ),
            values,
        )

    def _copy(self, statement: str, rows: Iterator[Sequence[Any]], integers: bool) -> None:
        """``statement`` (a ``COPY … FROM STDIN``) fed ``rows``, :data:`COPY_ROWS` at a time
        (formatted as text lines when every column is an integer); nothing for no rows."""
        part = list(islice(rows, COPY_ROWS))
        if not part:
            return
        line = "\t".join(["%d"] * len(part[0])) + "\n"
        with self.conn.cursor() as cursor, cursor.copy(statement) as copy:
            while part:
                if integers:
                    copy.write("".join([line % tuple(row) for row in part]))
                else:
                    for row in part:
                        copy.write_row(row)
                part = list(islice(rows, COPY_ROWS))
