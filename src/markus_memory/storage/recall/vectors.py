"""The recall vectors of a transcript store: one vector per message with its agent and
embedding space, written and read in bounded chunks, searched through lists once a history is
long (:mod:`.vector_lists`). One implementation for SQLite and PostgreSQL without pgvector
(``?`` placeholders through a :class:`~.fetch.Sql`); pgvector's own search is in
:mod:`._postgres.vectors`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import Any

from . import vector_lists
from .contract import RecallFilters as Filters
from .fetch import Sql
from .rank import agent_key
from .vector_scan import BYTES, VectorCodec

VECTOR_CHUNK = 4096
"""Vectors scored per round trip: memory stays bounded whatever the history."""


def save_vectors(
    sql: Sql,
    agent_id: str,
    model: str,
    rows: Sequence[tuple[int, bytes]],
    codec: VectorCodec = BYTES,
    *,
    lists: bool = False,
) -> int | None:
    """Store the agent's ``model`` vectors (one per message, replacing any); with ``lists``,
    each joins its nearest list (:mod:`.vector_lists`), and the vector count is returned when
    a generation of lists is due (None otherwise). A vector whose message is gone (its
    session was deleted while it was being made) is not stored; on PostgreSQL the message row
    is locked, so a deletion running meanwhile waits and then deletes the vector too."""
    agent = agent_key(agent_id)
    latest = vector_lists.newest(sql, agent, model) if lists and rows else None
    where: list[int | None] = [None] * len(rows)
    if latest is not None:
        where = list(vector_lists.nearest_lists(latest, vector_lists.matrix(rows)))
    sql.many(
        "INSERT INTO recall_vectors (doc, agent, model, vector, list) "
        f"SELECT CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), {codec.param}, "
        "CAST(? AS BIGINT) WHERE EXISTS (SELECT 1 FROM transcript_messages WHERE id = ?"
        f"{sql.dialect.lock_rows}) "
        "ON CONFLICT (doc) DO UPDATE SET agent = excluded.agent, model = excluded.model, "
        "vector = excluded.vector, list = excluded.list",
        [
            (doc, agent, model, codec.encode(blob), at, doc)
            for (doc, blob), at in zip(rows, where, strict=True)
        ],
    )
    return vector_lists.due(sql, agent, model, latest) if lists and rows else None


def unvectored(sql: Sql, agent_id: str, model: str, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` of the agent's messages with text and no vector for ``model`` (blank
    messages are left out in the query: never vectored, they must not fill a batch)."""
    rows = sql.rows(
        "SELECT t.id, t.content FROM transcript_messages t WHERE t.agent_id = ? "
        "AND trim(t.content) <> '' AND NOT EXISTS "
        "(SELECT 1 FROM recall_vectors v WHERE v.doc = t.id AND v.model = ?) "
        "ORDER BY t.id LIMIT ?",
        (agent_id, model, limit),
    )
    return [(int(r[0]), str(r[1])) for r in rows if str(r[1]).strip()]


def vector_chunks(
    sql: Sql,
    agent_id: str,
    model: str,
    filters: Filters,
    when: Callable[[datetime], Any],
    *,
    ids: Sequence[int] | None = None,
    newest: int | None = None,
    lists: Sequence[int | None] | None = None,
    codec: VectorCodec = BYTES,
) -> Iterator[list[tuple[int, bytes]]]:
    """The agent's ``model`` vectors that pass ``filters``, ``VECTOR_CHUNK`` at a time (keyset
    pages, so no more than one chunk is ever held); only ``ids`` when given; only the
    ``newest`` messages when given; only those of ``lists`` when given (None: the vectors in
    no list), one list after the other."""
    agent = agent_key(agent_id)
    where, extra = filters.sql(when)
    join = "" if filters.empty else " JOIN transcript_messages t ON t.id = v.doc"
    restrict, values = "", []
    if ids is not None:
        if not ids:
            return
        restrict = f" AND v.doc IN ({','.join('?' * len(ids))})"
        values = list(ids)
    floor = -(2**63)
    if newest is not None:
        rows = sql.rows(
            "SELECT doc FROM recall_vectors WHERE agent = ? AND model = ? "
            "ORDER BY doc DESC LIMIT 1 OFFSET ?",
            (agent, model, max(0, newest - 1)),
        )
        floor = int(rows[0][0]) - 1 if rows else floor
    pick: list[tuple[str, list[Any]]] = [("", [])]
    if lists is not None:
        pick = [
            (" AND v.list IS NULL", []) if at is None else (" AND v.list = ?", [at]) for at in lists
        ]
    for in_list, at in pick:
        last = floor
        while True:
            rows = sql.rows(
                f"SELECT v.doc, {codec.column} FROM recall_vectors v{join} WHERE v.agent = ? "
                f"AND v.model = ?{in_list} AND v.doc > ?{restrict}{where} ORDER BY v.doc LIMIT ?",
                (agent, model, *at, last, *values, *extra, VECTOR_CHUNK),
            )
            if not rows:
                break
            # Both drivers read a BIGINT as int and a BLOB / bytea as bytes: only another
            # column type (pgvector's) is converted row by row.
            yield rows if codec is BYTES else [(int(r[0]), codec.decode(r[1])) for r in rows]
            if len(rows) < VECTOR_CHUNK:
                break
            last = int(rows[-1][0])


def count_vectors(sql: Sql, agent_id: str, model: str | None = None) -> int:
    params: list[Any] = [agent_key(agent_id)]
    extra = ""
    if model is not None:
        extra = " AND model = ?"
        params.append(model)
    return int(
        sql.rows(f"SELECT count(*) FROM recall_vectors WHERE agent = ?{extra}", params)[0][0]
    )
