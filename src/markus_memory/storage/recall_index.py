"""The conversation recall index inside the store: postings, statistics and vectors per agent.

One implementation for SQLite and PostgreSQL (the SQL is written once with ``?`` placeholders
and goes through a :class:`~.recall_fetch.Sql`). Every transcript message with text is analysed
once, when it is stored (:mod:`markus_memory.analysis`), into rows of ``recall_postings``
(the agent's key of a term, message, term frequency, message length; :mod:`.recall_schema`);
``recall_terms`` holds each agent's document frequency per term and ``recall_agents`` its
message and token counts, all maintained in the transaction that stores the message. Ranking
(:mod:`.recall_rank`) is BM25 over the agent's own statistics; only the candidates leave the
database, and the re-ranking stages fetch rows by key (:mod:`.recall_fetch`).
"""

from __future__ import annotations

import contextlib
from collections import _count_elements  # type: ignore[attr-defined]
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from operator import itemgetter
from typing import Any

from ..analysis import term_counts, words
from .base import TranscriptMessage
from .recall_contract import RecallFilters as Filters
from .recall_contract import RecallStats as Stats
from .recall_contract import TurnKey
from .recall_fetch import KEY_COLUMNS, SAID_COLUMNS, Sql, keys_near, turns_around, turns_by_id
from .recall_rank import Bm25, agent_key, rank_near, stats
from .recall_schema import schema
from .vector_scan import BYTES, VectorCodec, nearest_in_chunks

VECTOR_CHUNK = 4096
"""Vectors scored per round trip: memory stays bounded whatever the history."""


_POSTING_COLUMNS = (
    ("term", "bigint"),
    ("doc", "bigint"),
    ("tf", "integer"),
    ("len", "integer"),
)
RECALL_TABLES = ("recall_postings", "recall_terms", "recall_agents", "recall_speakers")


@dataclass(frozen=True)
class Doc:
    """A stored message as the index sees it."""

    id: int
    content: str
    speaker: str | None
    role: str


def index_docs(sql: Sql, agent_id: str, docs: Sequence[Doc], *, sign: int = 1) -> None:
    """Add (``sign=1``) or remove (``sign=-1``) messages from the agent's index, inside the
    caller's transaction. A message with no indexable word is not a document."""
    agent = agent_key(agent_id)
    # ``agent ^ key`` below is recall_rank.agent_term, inlined: it runs for every word written.
    postings: list[tuple[int, int, int, int]] = []
    df: dict[int, int] = {}
    count = tokens = 0
    speakers: set[str] = set()
    for doc in docs:
        if not doc.content.strip():
            continue
        speakers.add(doc.speaker or doc.role)
        freqs = term_counts(doc.content)
        length = sum(freqs.values())
        count += 1
        tokens += length
        postings.extend(
            zip(map(agent.__xor__, freqs), repeat(doc.id), freqs.values(), repeat(length))
        )
        _count_elements(df, freqs)  # one more message with each of its terms
    if not count:
        return
    postings.sort(key=itemgetter(0))  # by term; docs stay in id order (a stable sort)
    if sign > 0:
        sql.insert("recall_postings", _POSTING_COLUMNS, postings)
        sql.insert(
            "recall_speakers",
            (("agent", "bigint"), ("word", "text")),
            [(agent, word) for word in sorted({w for name in speakers for w in words(name)})],
            "ON CONFLICT DO NOTHING",
        )
    else:
        sql.many(
            "DELETE FROM recall_postings WHERE term = ? AND doc = ?",
            [row[:2] for row in postings],
        )
        sql.many("DELETE FROM recall_vectors WHERE doc = ?", [(doc.id,) for doc in docs])
    sql.insert(
        "recall_terms",
        (("term", "bigint"), ("agent", "bigint"), ("docs", "bigint")),
        sorted([(agent ^ key, agent, sign * n) for key, n in df.items()]),
        "ON CONFLICT (term) DO UPDATE SET docs = recall_terms.docs + excluded.docs",
    )
    sql.run(
        "INSERT INTO recall_agents (agent, docs, tokens) VALUES (?, ?, ?) ON CONFLICT (agent) "
        "DO UPDATE SET docs = recall_agents.docs + excluded.docs, "
        "tokens = recall_agents.tokens + excluded.tokens",
        (agent, sign * count, sign * tokens),
    )


def clear(sql: Sql, agent_id: str | None = None) -> None:
    """Drop the index of one agent (or of every agent); vectors stay with their messages."""
    if agent_id is None:
        for table in RECALL_TABLES:
            sql.run(f"DELETE FROM {table}")
        return
    agent = agent_key(agent_id)
    # The agent's postings are those of its terms (every term it used keeps its row).
    sql.run(
        "DELETE FROM recall_postings WHERE term IN (SELECT term FROM recall_terms WHERE agent = ?)",
        (agent,),
    )
    for table in RECALL_TABLES[1:]:
        sql.run(f"DELETE FROM {table} WHERE agent = ?", (agent,))


def save_vectors(
    sql: Sql,
    agent_id: str,
    model: str,
    rows: Sequence[tuple[int, bytes]],
    codec: VectorCodec = BYTES,
) -> None:
    agent = agent_key(agent_id)
    sql.many(
        f"INSERT INTO recall_vectors (doc, agent, model, vector) VALUES (?, ?, ?, {codec.param}) "
        "ON CONFLICT (doc) DO UPDATE SET agent = excluded.agent, model = excluded.model, "
        "vector = excluded.vector",
        [(doc, agent, model, codec.encode(blob)) for doc, blob in rows],
    )


def unvectored(sql: Sql, agent_id: str, model: str, limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` of the agent's messages with text and no vector for ``model``."""
    rows = sql.rows(
        "SELECT t.id, t.content FROM transcript_messages t WHERE t.agent_id = ? AND NOT EXISTS "
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
    codec: VectorCodec = BYTES,
) -> Iterator[list[tuple[int, bytes]]]:
    """The agent's ``model`` vectors that pass ``filters``, ``VECTOR_CHUNK`` at a time (keyset
    pages, so no more than one chunk is ever held); only ``ids`` when given; only the
    ``newest`` messages when given."""
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
    last = floor
    while True:
        rows = sql.rows(
            f"SELECT v.doc, {codec.column} FROM recall_vectors v{join} WHERE v.agent = ? "
            f"AND v.model = ? AND v.doc > ?{restrict}{where} ORDER BY v.doc LIMIT ?",
            (agent, model, last, *values, *extra, VECTOR_CHUNK),
        )
        if not rows:
            return
        # Both drivers read a BIGINT as int and a BLOB / bytea as bytes: only another
        # column type (pgvector's) is converted row by row.
        yield rows if codec is BYTES else [(int(r[0]), codec.decode(r[1])) for r in rows]
        if len(rows) < VECTOR_CHUNK:
            return
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


class RecallQueries:
    """The recall-index operations of a transcript store; a backend supplies :meth:`_recall`
    (a :class:`Sql` in a read or write transaction), ``_when`` (time adapter) and ``_decode``
    (a ``TranscriptMessage`` from a row)."""

    def _recall(self, *, write: bool = False) -> contextlib.AbstractContextManager[Sql]:
        raise NotImplementedError

    def _when(self, moment: datetime) -> Any:
        raise NotImplementedError

    def _message(self, row: Sequence[Any]) -> TranscriptMessage:
        raise NotImplementedError

    def _time(self, value: Any) -> datetime:
        """A stored ``created_at`` as an aware datetime."""
        raise NotImplementedError

    def recall_stats(self, agent_id: str, keys: Iterable[int], words: Iterable[str] = ()) -> Stats:
        with self._recall() as sql:
            return stats(sql, agent_id, keys, words)

    def recall_rank(
        self,
        agent_id: str,
        weights: Mapping[int, float],
        *,
        avgdl: float,
        per_term: int,
        limit: int,
        filters: Filters | None = None,
        window: int = 0,
    ) -> tuple[list[tuple[int, float]], list[TurnKey]]:
        with self._recall() as sql:
            bm25 = Bm25(weights, avgdl, per_term, limit, filters or Filters())
            return rank_near(sql, agent_id, bm25, self._when, window)

    def recall_turns(self, agent_id: str, ids: Sequence[int]) -> dict[int, TranscriptMessage]:
        with self._recall() as sql:
            rows = turns_by_id(sql, agent_id, ids)
        return {int(r[0]): self._message(r[1:]) for r in rows}

    def recall_said(self, agent_id: str, ids: Sequence[int]) -> dict[int, tuple[str, datetime]]:
        with self._recall() as sql:
            rows = turns_by_id(sql, agent_id, ids, SAID_COLUMNS)
        time = self._time
        return {int(r[0]): (r[1] or "", time(r[2])) for r in rows}

    def recall_keys(self, agent_id: str, ids: Sequence[int]) -> list[TurnKey]:
        with self._recall() as sql:
            rows = turns_by_id(sql, agent_id, ids, KEY_COLUMNS)
        return [TurnKey(*row) for row in rows]

    def recall_keys_near(
        self,
        agent_id: str,
        ids: Sequence[int],
        window: int,
        filters: Filters | None = None,
    ) -> list[TurnKey]:
        with self._recall() as sql:
            rows = keys_near(sql, agent_id, ids, window, filters or Filters(), self._when)
        return [TurnKey(*row) for row in rows]

    def recall_around(
        self,
        agent_id: str,
        spans: Sequence[tuple[str, int, int]],
        filters: Filters | None = None,
    ) -> dict[int, TranscriptMessage]:
        with self._recall() as sql:
            rows = turns_around(sql, agent_id, spans, filters or Filters(), self._when)
        return {int(r[0]): self._message(r[1:]) for r in rows}

    def _vector_codec(self) -> VectorCodec:
        """How this store's vector column is written and read."""
        return BYTES

    def save_recall_vectors(
        self, agent_id: str, model: str, rows: Sequence[tuple[int, bytes]]
    ) -> None:
        with self._recall(write=True) as sql:
            save_vectors(sql, agent_id, model, rows, self._vector_codec())

    def unvectored(self, agent_id: str, model: str, limit: int) -> list[tuple[int, str]]:
        with self._recall() as sql:
            return unvectored(sql, agent_id, model, limit)

    def recall_vectors(
        self,
        agent_id: str,
        model: str,
        filters: Filters | None = None,
        *,
        ids: Sequence[int] | None = None,
        newest: int | None = None,
    ) -> Iterator[list[tuple[int, bytes]]]:
        with self._recall() as sql:
            yield from vector_chunks(
                sql,
                agent_id,
                model,
                filters or Filters(),
                self._when,
                ids=ids,
                newest=newest,
                codec=self._vector_codec(),
            )

    def recall_nearest(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: Filters | None = None,
        *,
        candidates: Sequence[int] = (),
    ) -> list[tuple[int, float]]:
        """The agent's ``limit`` nearest ``model`` vectors to ``vector`` among its messages
        passing ``filters``, best first: every vector, scored in chunks (a backend that can
        search in the database overrides this; ``candidates`` are ids it may be bounded to)."""
        return nearest_in_chunks(self.recall_vectors(agent_id, model, filters), vector, limit)

    def count_recall_vectors(self, agent_id: str, model: str | None = None) -> int:
        with self._recall() as sql:
            return count_vectors(sql, agent_id, model)

    def reindex_recall(self, agent_id: str | None = None) -> int:
        """Rebuild the recall index (of one agent, or all) from the stored messages; the
        number of messages indexed."""
        with self._recall(write=True) as sql:
            return self.rebuild(sql, agent_id)

    @staticmethod
    def recreate(sql: Sql, blob: str, without_rowid: str) -> None:
        """Drop and create the recall tables again (vectors are kept when their table is
        intact: they cost an embedder to make)."""
        for table in RECALL_TABLES:
            sql.run(f"DROP TABLE IF EXISTS {table}")
        for statement in schema(blob, without_rowid):
            if "recall_vectors" not in statement:
                sql.run(statement)
        sql.run(
            f"CREATE TABLE IF NOT EXISTS recall_vectors (doc BIGINT PRIMARY KEY, "
            f"agent BIGINT NOT NULL, model TEXT NOT NULL, vector {blob} NOT NULL)"
        )
        sql.run(
            "CREATE INDEX IF NOT EXISTS idx_recall_vectors_agent "
            "ON recall_vectors(agent, model, doc)"
        )

    @staticmethod
    def rebuild(sql: Sql, agent_id: str | None = None) -> int:
        """:meth:`reindex_recall` inside the caller's transaction (migrations use it)."""
        clear(sql, agent_id)
        where, params = ("", []) if agent_id is None else (" WHERE agent_id = ?", [agent_id])
        rows = sql.rows(
            f"SELECT id, agent_id, content, speaker, role FROM transcript_messages{where}",
            params,
        )
        by_agent: dict[str, list[Doc]] = {}
        for r in rows:
            by_agent.setdefault(str(r[1]), []).append(Doc(int(r[0]), str(r[2]), r[3], str(r[4])))
        for agent, docs in by_agent.items():
            index_docs(sql, agent, docs)
        return len(rows)
