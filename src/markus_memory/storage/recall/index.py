"""The conversation recall index inside the store: postings, statistics and vectors per agent.

One implementation for SQLite and PostgreSQL (the SQL is written once with ``?`` placeholders
and goes through a :class:`~.fetch.Sql`). Every transcript message with text is analysed
once, when it is stored (:mod:`markus_memory.analysis`), into rows of ``recall_postings``
(the agent's key of a term, message, term frequency, message length; :mod:`.schema`);
``recall_terms`` holds each agent's document frequency per term and ``recall_agents`` its
message and token counts, all maintained in the transaction that stores the message. Ranking
(:mod:`.rank`) is BM25 over the agent's own statistics; only the candidates leave the
database, and the re-ranking stages fetch rows by key (:mod:`.fetch`).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections import _count_elements  # type: ignore[attr-defined]
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import repeat
from typing import Any

from ...analysis import term_counts, words
from .._records import EPOCH
from ..dialect import Database, Repository
from ..repos.transcripts import TranscriptMessage
from . import vector_lists
from .contract import RecallFilters as Filters
from .contract import RecallStats as Stats
from .contract import TurnKey
from .fetch import KEY_COLUMNS, SAID_COLUMNS, Sql, keys_near, turns_around, turns_by_id
from .rank import Bm25, agent_key, rank_near, stats
from .schema import add_vector_lists, schema
from .vector_scan import BYTES, VectorCodec, nearest_in_chunks
from .vectors import count_vectors, save_vectors, unvectored, vector_chunks

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


class _Batch:
    """What a batch of messages adds to an agent's statistics, counted while its postings are
    made (:meth:`postings` is consumed by the insert that stores them)."""

    def __init__(self, agent: int) -> None:
        self.agent = agent
        self.df: dict[int, int] = {}
        self.count = self.tokens = 0
        self.speakers: set[str] = set()

    def postings(self, docs: Iterable[Doc]) -> Iterator[tuple[int, int, int, int]]:
        """(agent's term key, message, tf, message length) of each message with a word."""
        # ``agent ^ key`` below is recall_rank.agent_term, inlined: it runs for every word.
        agent, df = self.agent, self.df
        for doc in docs:
            if not doc.content.strip():
                continue
            self.speakers.add(doc.speaker or doc.role)
            freqs = term_counts(doc.content)
            length = sum(freqs.values())
            self.count += 1
            self.tokens += length
            _count_elements(df, freqs)  # one more message with each of its terms
            yield from zip(
                map(agent.__xor__, freqs), repeat(doc.id), freqs.values(), repeat(length)
            )


def index_docs(sql: Sql, agent_id: str, docs: Sequence[Doc], *, sign: int = 1) -> None:
    """Add (``sign=1``) or remove (``sign=-1``) messages from the agent's index, inside the
    caller's transaction. A message with no indexable word is not a document.

    Postings are stored as they are made (on PostgreSQL the server stores one part of the
    batch's ``COPY`` while the next is analysed); the statistics follow once all are made."""
    batch = _Batch(agent_key(agent_id))
    agent = batch.agent
    if sign > 0:
        sql.insert("recall_postings", _POSTING_COLUMNS, batch.postings(docs))
    else:
        sql.many(
            "DELETE FROM recall_postings WHERE term = ? AND doc = ?",
            [row[:2] for row in batch.postings(docs)],
        )
        sql.many("DELETE FROM recall_vectors WHERE doc = ?", [(doc.id,) for doc in docs])
    if not batch.count:
        return
    if sign > 0:
        sql.insert(
            "recall_speakers",
            (("agent", "bigint"), ("word", "text")),
            [(agent, w) for w in sorted({w for name in batch.speakers for w in words(name)})],
            "ON CONFLICT DO NOTHING",
        )
    # In key order: two writers that share terms lock their rows in the same order.
    sql.insert(
        "recall_terms",
        (("term", "bigint"), ("agent", "bigint"), ("docs", "bigint")),
        sorted([(agent ^ key, agent, sign * n) for key, n in batch.df.items()]),
        "ON CONFLICT (term) DO UPDATE SET docs = recall_terms.docs + excluded.docs",
    )
    sql.run(
        "INSERT INTO recall_agents (agent, docs, tokens) VALUES (?, ?, ?) ON CONFLICT (agent) "
        "DO UPDATE SET docs = recall_agents.docs + excluded.docs, "
        "tokens = recall_agents.tokens + excluded.tokens",
        (agent, sign * batch.count, sign * batch.tokens),
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


class RecallQueries(Repository):
    """The recall index of the transcript over one database (:class:`~..dialect.Database`,
    held, not inherited): its statistics, ranking, turns and vectors. A recall's reads can
    share one connection (:meth:`recall_session`)."""

    def __init__(self, database: Database) -> None:
        super().__init__(database)
        self._held_reads = threading.local()

    @contextlib.contextmanager
    def _recall(self, *, write: bool = False) -> Iterator[Sql]:
        """A :class:`Sql` in a write transaction, or for reads (this thread's held reader
        inside :meth:`recall_session`)."""
        held = None if write else getattr(self._held_reads, "sql", None)
        if held is not None:
            yield held
            return
        database = self.database
        with database.write() if write else database.read() as conn:
            yield self.dialect.bind(conn)

    @contextlib.contextmanager
    def recall_session(self) -> Iterator[None]:
        """The recall reads of this thread inside share one connection: one pool checkout
        (and, on PostgreSQL, one health check) for a whole recall instead of one per read.
        Each statement still runs on its own, as outside."""
        local = self._held_reads
        if getattr(local, "sql", None) is not None:  # nested: the outer session holds it
            yield
            return
        with self.database.read() as conn:
            local.sql = self.dialect.bind(conn)
            try:
                yield
            finally:
                local.sql = None

    def _when(self, moment: datetime) -> Any:
        return self.dialect.time(moment)

    def _message(self, row: Sequence[Any]) -> TranscriptMessage:
        return self.dialect.decode.transcript_message(row)

    def _time(self, value: Any) -> datetime:
        """A stored ``created_at`` as an aware datetime."""
        return self.dialect.decode.when(value) or EPOCH

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

    def _vector_lists(self) -> bool:
        """Whether this store searches a long history's vectors through lists
        (:mod:`.vector_lists`): unless the database searches them itself (pgvector)."""
        return True

    def save_recall_vectors(
        self, agent_id: str, model: str, rows: Sequence[tuple[int, bytes]]
    ) -> None:
        with self._recall(write=True) as sql:
            count = save_vectors(
                sql, agent_id, model, rows, self._vector_codec(), lists=self._vector_lists()
            )
        if count is not None:
            self._make_lists(agent_id, model, count)

    def _make_lists(self, agent_id: str, model: str, count: int) -> None:
        """A generation of lists over the agent's ``count`` ``model`` vectors: sampled and
        trained in a read (no writer waits on k-means), stored in a short write."""
        agent = agent_key(agent_id)
        with self._recall() as sql:
            sample = vector_lists.sample(sql, agent, model, count)
        centres = vector_lists.train(sample, vector_lists.list_count(count))
        del sample
        with self._recall(write=True) as sql:
            vector_lists.add_generation(sql, agent, model, count, centres)

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
        lists: Sequence[int | None] | None = None,
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
                lists=lists,
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
        passing ``filters``, best first, scored in chunks: once the agent's vectors have lists
        (:mod:`.vector_lists`), those of the lists nearest ``vector``, those in no list yet
        and the ``candidates``; before, :meth:`_nearest_unlisted` (a backend that can search
        in the database overrides this)."""
        made: list[vector_lists.Generation] = []
        if self._vector_lists():
            with self._recall() as sql:
                made = vector_lists.generations(sql, agent_key(agent_id), model)
        if not made:
            return self._nearest_unlisted(agent_id, model, vector, limit, filters, candidates)
        lists: list[int | None] = [*vector_lists.to_probe(made, vector), None]
        return self._nearest_among(agent_id, model, vector, limit, filters, candidates, lists=lists)

    def _nearest_unlisted(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: Filters | None,
        candidates: Sequence[int],
    ) -> list[tuple[int, float]]:
        """:meth:`recall_nearest` of vectors in no list: every vector, scored in chunks."""
        del candidates  # every vector is scored
        return nearest_in_chunks(self.recall_vectors(agent_id, model, filters), vector, limit)

    def _nearest_among(
        self,
        agent_id: str,
        model: str,
        vector: bytes,
        limit: int,
        filters: Filters | None,
        candidates: Sequence[int],
        **where: Any,
    ) -> list[tuple[int, float]]:
        """The ``limit`` nearest of the ``candidates`` and of the vectors ``where`` picks
        (``newest=`` or ``lists=`` of :meth:`recall_vectors`), scored in chunks."""
        chunks = itertools.chain(
            self.recall_vectors(agent_id, model, filters, ids=list(candidates))
            if candidates
            else (),
            self.recall_vectors(agent_id, model, filters, **where),
        )
        return nearest_in_chunks(chunks, vector, limit)

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
        """Drop and create the recall tables again (vectors and their lists are kept when
        intact: they cost an embedder to make)."""
        for table in RECALL_TABLES:
            sql.run(f"DROP TABLE IF EXISTS {table}")
        for statement in schema(blob, without_rowid)[: len(RECALL_TABLES)]:
            sql.run(statement)
        add_vector_lists(sql, blob, without_rowid)

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
