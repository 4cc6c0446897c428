"""How the recall index reaches its store, and the messages it fetches by key.

A :class:`Sql` is one connection inside a transaction, spelled with ``?`` placeholders (the
backend's :class:`~._sql.DialectSql` translates them). The re-ranking stages never read the
whole history: they fetch the rows of their candidates by id, and the turns around them by
position, with the functions here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .contract import RecallFilters as Filters

if TYPE_CHECKING:
    from ..dialect import Dialect

TURN_COLUMNS = "id, agent_id, session_id, seq, role, content, created_at, speaker, metadata"
"""``id`` then the columns of a :class:`~..repos.transcripts.TranscriptMessage` row."""
KEY_COLUMNS = "id, session_id, seq, role, speaker"
"""What the re-ranking stages use of a message (no text, time or metadata)."""
SAID_COLUMNS = "id, content, created_at"
"""What the time stage reads of a message."""


class Sql(Protocol):
    """What the recall index needs from a connection inside a transaction (``?`` placeholders)."""

    @property
    def dialect(self) -> Dialect: ...

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None: ...

    def insert(
        self,
        table: str,
        columns: Sequence[tuple[str, str]],
        rows: Iterable[Sequence[Any]],
        conflict: str = "",
    ) -> None:
        """``INSERT INTO table … {conflict}`` of many rows at once, taken from ``rows`` as
        they come; ``columns`` are ``(name, SQL type)`` pairs (PostgreSQL sends each column
        as one typed array, or streams the rows through ``COPY``)."""
        ...


def turns_by_id(
    sql: Sql, agent_id: str, ids: Sequence[int], columns: str = TURN_COLUMNS
) -> list[tuple[Any, ...]]:
    """Rows of ``columns`` (``TURN_COLUMNS``, ``KEY_COLUMNS`` or ``SAID_COLUMNS``) of the
    agent's messages among ``ids``."""
    columns = ", ".join(_qualified(c) for c in columns.split(", "))
    out: list[tuple[Any, ...]] = []
    for wanted, params in _id_chunks(sql, ids):
        # The id list drives the join (CROSS JOIN keeps SQLite from scanning the agent).
        out.extend(
            sql.rows(
                f"WITH {wanted} SELECT {columns} FROM wanted CROSS JOIN transcript_messages t "
                "WHERE t.id = wanted.id AND t.agent_id = ?",
                (*params, agent_id),
            )
        )
    return out


def turns_around(
    sql: Sql,
    agent_id: str,
    spans: Sequence[tuple[str, int, int]],
    filters: Filters,
    when: Callable[[datetime], Any],
) -> list[tuple[Any, ...]]:
    """``TURN_COLUMNS`` rows of the agent's messages in ``(session, first seq, last seq)``
    spans that pass ``filters``."""
    out: list[tuple[Any, ...]] = []
    where, extra = filters.sql(when)
    columns = ", ".join(_qualified(c) for c in TURN_COLUMNS.split(", "))
    merged = _merged(spans)  # disjoint: no row comes twice
    for start in range(0, len(merged), 200):
        span, params = sql.dialect.values(
            "span",
            [("sid", "text"), ("lo", "integer"), ("hi", "integer")],
            merged[start : start + 200],
        )
        out.extend(
            sql.rows(
                f"WITH {span} SELECT {columns} "
                "FROM span CROSS JOIN transcript_messages t WHERE t.agent_id = ? "
                f"AND t.session_id = span.sid AND t.seq BETWEEN span.lo AND span.hi{where}",
                (*params, agent_id, *extra),
            )
        )
    return out


def keys_near(
    sql: Sql,
    agent_id: str,
    ids: Sequence[int],
    window: int,
    filters: Filters,
    when: Callable[[datetime], Any],
) -> list[tuple[Any, ...]]:
    """``KEY_COLUMNS`` rows of the agent's messages among ``ids`` and of the messages with
    text up to ``window`` turns from each in its session that pass ``filters``, in one
    statement per 500 ids (a neighbour near two of them comes twice)."""
    out: list[tuple[Any, ...]] = []
    for wanted, params in _id_chunks(sql, ids):
        out.extend(keys_around(sql, wanted, params, agent_id, window, filters, when))
    return out


def keys_around(
    sql: Sql,
    wanted: str,
    params: Sequence[Any],
    agent_id: str,
    window: int,
    filters: Filters,
    when: Callable[[datetime], Any],
    *,
    scored: bool = False,
) -> list[tuple[Any, ...]]:
    """:func:`keys_near` of the ids a common table expression ``wanted(id)`` holds (``params``
    are its own), in one statement. ``scored``: ``wanted`` has a ``score`` column too, and
    each row ends with the score of a wanted message, or None for a neighbour."""
    where, extra = filters.sql(when)
    columns = ", ".join(_qualified(c) for c in KEY_COLUMNS.split(", "))
    score, none = (", wanted.score AS score", ", NULL") if scored else ("", "")
    query = (
        f"WITH {wanted}, hit AS (SELECT {columns}{score} FROM wanted CROSS JOIN "
        "transcript_messages t WHERE t.id = wanted.id AND t.agent_id = ?) "
        f"SELECT {KEY_COLUMNS}{', score' if scored else ''} FROM hit"
    )
    values = [*params, agent_id]
    if window > 0:
        query += (
            f" UNION ALL SELECT {columns}{none} FROM hit CROSS JOIN transcript_messages t "
            "WHERE t.agent_id = ? AND t.session_id = hit.session_id AND t.seq BETWEEN "
            "hit.seq - ? AND hit.seq + ? AND t.seq <> hit.seq AND trim(t.content) <> ''"
            f"{where}"
        )
        values.extend([agent_id, window, window, *extra])
    return sql.rows(query, values)


def _id_chunks(sql: Sql, ids: Sequence[int]) -> Iterator[tuple[str, list[Any]]]:
    """A common table expression ``wanted(id)`` and its params for each 500 of ``ids``."""
    for start in range(0, len(ids), 500):
        yield sql.dialect.values(
            "wanted", [("id", "bigint")], [(i,) for i in ids[start : start + 500]]
        )


def _merged(spans: Sequence[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """``spans`` with those that overlap or touch in one session joined."""
    out: list[tuple[str, int, int]] = []
    for sid, lo, hi in sorted(spans):
        if out and out[-1][0] == sid and lo <= out[-1][2] + 1:
            out[-1] = (sid, out[-1][1], max(out[-1][2], hi))
        else:
            out.append((sid, lo, hi))
    return out


def _qualified(column: str) -> str:
    return f"t.{column}"
