"""PostgresStore: the scale-out episodic backend (``[postgres]`` extra), composed for PostgreSQL.

Selected by a URL (``MARKUS_DATABASE_URL`` / ``Settings.database_url``), never by code. It opens
the database (:class:`~.conn.PostgresDatabase`: pools, timeouts, migrations) and builds the
repositories written once for both backends over it (:class:`~..store.Store`), giving them
PostgreSQL's own pieces: the insert of new transcript messages under their identity ids
(:func:`add_messages`), the vector search (:class:`~.vectors.PgTranscripts`) and the activity
search, ``tsvector`` + GIN of the one analyser's terms (:mod:`.activity_search`) ranked by
``ts_rank`` (:class:`PostgresActivitySearch`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._records import ACTIVITY_COLUMNS
from .._sql import SEARCH_CANDIDATES, DialectSql
from ..base import search_terms
from ..migrations import Migrations
from ..recall.index import Doc
from ..repos.activities import ActivityHit
from ..repos.transcripts import TranscriptMessage
from ..store import Store
from ..transcripts import stored_message
from .activity_search import index_activity, index_all, query_text
from .conn import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS, PostgresDatabase
from .dialect import DECODE, POSTGRES
from .schema import ACTIVITY_RANK_WEIGHTS
from .vectors import PgTranscripts

if TYPE_CHECKING:
    import psycopg


def add_messages(
    sql: DialectSql, agent_id: str, messages: Sequence[TranscriptMessage]
) -> list[Doc]:
    """Insert new transcript messages (an :data:`~..transcripts.AddMessages`)."""
    # One statement whatever the number of messages; a seq another writer inserted since
    # it was read is skipped, and only the rows inserted come back to be indexed.
    rows = [stored_message(POSTGRES, m) for m in messages]
    inserted = sql.rows(
        "INSERT INTO transcript_messages (agent_id, session_id, seq, role, content, "
        "created_at, speaker, metadata, body) "
        "SELECT ?, ?, u.seq, u.role, u.content, u.created_at, u.speaker, u.metadata::jsonb, "
        "u.body FROM unnest(?::int[], ?::text[], ?::text[], ?::timestamptz[], ?::text[], "
        "?::text[], ?::text[]) AS u(seq, role, content, created_at, speaker, metadata, body) "
        "ON CONFLICT (agent_id, session_id, seq) DO NOTHING "
        "RETURNING id, content, speaker, role",
        (agent_id, rows[0][0], *([r[i] for r in rows] for i in range(1, 8))),
    )
    return [Doc(*r) for r in inserted]


class PostgresStore(Store):
    """Activities, mailbox, chat history and the transcript index in one PostgreSQL schema."""

    def __init__(
        self,
        url: str,
        *,
        extra_migrations: Sequence[Migrations[psycopg.Connection[Any]]] = (),
        search_candidates: int = SEARCH_CANDIDATES,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
    ) -> None:
        database = PostgresDatabase(
            url,
            extra_migrations=extra_migrations,
            connect_timeout=connect_timeout,
            statement_timeout_ms=statement_timeout_ms,
        )
        super().__init__(
            database,
            PgTranscripts(database, add_messages, search_candidates=search_candidates),
            PostgresActivitySearch(database, search_candidates),
        )

    def rebuild_derived(self) -> int:
        """Refill everything derived from the stored rows: the activity search and the recall
        index (one transaction); the number of messages indexed."""
        with self.database.write() as conn:
            index_all(conn)
            return PgTranscripts.rebuild(POSTGRES.bind(conn))


class PostgresActivitySearch:
    """The activity search rows and their ranking in one PostgreSQL schema (the
    :class:`~..activities.ActivitySearch` of :class:`~..activities.Activities`)."""

    def __init__(self, database: PostgresDatabase, search_candidates: int) -> None:
        self.database = database
        self.search_candidates = search_candidates

    def index_activity(
        self, conn: psycopg.Connection[Any], activity_id: str, *, fresh: bool = False
    ) -> None:
        del fresh  # one upsert writes the document whether or not it exists
        index_activity(conn, activity_id)

    def drop_documents(self, conn: psycopg.Connection[Any], params: tuple[Any, ...]) -> None:
        """Nothing to do: ``activity_search`` rows go with their activity (ON DELETE CASCADE)."""
        del conn, params

    def search(self, agent_id: str, query: str, limit: int) -> list[ActivityHit]:
        """``ts_rank`` over ``tsvector`` documents, as SQLite's bm25 (same weights, same
        all-terms-then-any-term rule and candidate bound; see
        :meth:`~..activities.Activities.search_activities`)."""
        terms = search_terms(query)
        if not terms or limit <= 0:
            return []
        with self.database.read() as conn:
            hits = self._ranked(conn, agent_id, terms, False, limit)
            if len(hits) < limit and len(terms) > 1:
                seen = {activity_id for activity_id, _ in hits}
                extra = self._ranked(conn, agent_id, terms, True, limit)
                hits += [h for h in extra if h[0] not in seen][: limit - len(hits)]
            if not hits:
                return []
            rows = conn.execute(
                f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities "
                "WHERE id = ANY(%s) AND agent_id = %s",
                ([activity_id for activity_id, _ in hits], agent_id),
            ).fetchall()
        by_id = {r[0]: DECODE.activity(r) for r in rows}
        return [ActivityHit(by_id[i], score) for i, score in hits if i in by_id]

    def _ranked(
        self,
        conn: psycopg.Connection[Any],
        agent_id: str,
        terms: list[str],
        any_term: bool,
        limit: int,
    ) -> list[tuple[str, float]]:
        """(activity id, score) best first among one agent's matches.

        A probe fetches the ids of the newest ``search_candidates + 1`` matches (newest first
        lets the planner walk the agent's (agent_id, started_at) index and stop early when a
        term is everywhere, or use the GIN index when it is rare). A complete candidate set is
        then ranked by ``ts_rank``; an overflowing one is ordered by recency, as on SQLite.
        """
        query, params = "%s::tsquery", [query_text(terms, any_term=any_term)]
        match = f"agent_id = %s AND document @@ {query}"
        probe = [
            str(r[0])
            for r in conn.execute(
                f"SELECT activity_id FROM activity_search WHERE {match} "
                "ORDER BY started_at DESC, activity_id DESC LIMIT %s",
                (agent_id, *params, self.search_candidates + 1),
            ).fetchall()
        ]
        if len(probe) <= self.search_candidates:
            if not probe:
                return []
            # ts_rank only for a complete candidate set (ranking thousands would cost more
            # than the probe); ties newest first.
            rows = conn.execute(
                f"SELECT activity_id, ts_rank('{ACTIVITY_RANK_WEIGHTS}', document, {query}) "
                "AS score FROM activity_search WHERE activity_id = ANY(%s) "
                "ORDER BY score DESC, started_at DESC, activity_id DESC LIMIT %s",
                (*params, probe, limit),
            ).fetchall()
            return [(str(r[0]), float(r[1])) for r in rows]
        strong = [
            str(r[0])
            for r in conn.execute(
                f"SELECT activity_id FROM activity_search WHERE agent_id = %s "
                f"AND headline @@ {query} ORDER BY started_at DESC, activity_id DESC LIMIT %s",
                (agent_id, *params, limit),
            ).fetchall()
        ]
        seen = set(strong)
        ordered = strong + [i for i in probe[: self.search_candidates] if i not in seen]
        return [(activity_id, 0.0) for activity_id in ordered[:limit]]
