"""PostgreSQL's activity search documents and queries, made of the one analyser's terms.

An activity's ``document`` is a weighted ``tsvector`` (label A, keywords B, summary C, logs D)
and its ``headline`` the unweighted terms of the label and keywords. Both are written as
``tsvector`` input built here from :func:`markus_memory.analysis.tokens`, and a query is a
``tsquery`` of the terms of :func:`~.base.search_terms`: no text search parser or dictionary of
the server runs, so PostgreSQL finds exactly the terms SQLite's FTS5 index and the other layers
find (stems, CJK pairs, Devanagari words, emoji, dotted names).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...analysis import tokens
from ..schema_tables import MAX_INDEXED_LOG_CHARS

if TYPE_CHECKING:
    import psycopg

# tsvector limits: positions above MAX_POSITION are stored as it, and a lexeme keeps at most
# MAX_POSITIONS of them (as to_tsvector does).
MAX_POSITION = 16383
MAX_POSITIONS = 256
BATCH = 500
"""Activities analysed per round trip when every document is rebuilt."""

_SOURCE = (
    "SELECT a.id, a.agent_id, a.started_at, a.label, a.keywords, a.summary, "
    "left((SELECT string_agg(content, E'\\n' ORDER BY seq) FROM agent_activity_logs l "
    f"WHERE l.activity_id = a.id), {MAX_INDEXED_LOG_CHARS}) FROM agent_activities a"
)
_UPSERT = (
    "INSERT INTO activity_search (activity_id, agent_id, started_at, document, headline) "
    "VALUES (%s, %s, %s, %s::tsvector, %s::tsvector) "
    "ON CONFLICT (activity_id) DO UPDATE SET document = EXCLUDED.document, "
    "headline = EXCLUDED.headline, started_at = EXCLUDED.started_at"
)


def lexeme(term: str) -> str:
    """A term as one quoted ``tsvector`` / ``tsquery`` lexeme."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def document_text(label: str, keywords: str, summary: str, logs: str) -> str:
    """``tsvector`` input of an activity's fields: every term with its positions and weight."""
    positions: dict[str, list[tuple[int, str]]] = {}
    at = 0
    for text, weight in ((label, "A"), (keywords, "B"), (summary, "C"), (logs, "D")):
        for term in tokens(text):
            if not term:
                continue
            at = min(at + 1, MAX_POSITION)
            seen = positions.setdefault(term, [])
            if len(seen) < MAX_POSITIONS and (not seen or seen[-1][0] < at):
                seen.append((at, weight))
    return " ".join(
        lexeme(term) + ":" + ",".join(f"{n}{weight}" for n, weight in seen)
        for term, seen in positions.items()
    )


def headline_text(label: str, keywords: str) -> str:
    """``tsvector`` input of the terms of an activity's label and keywords (no positions)."""
    terms = dict.fromkeys(t for t in tokens(f"{label}\n{keywords}") if t)
    return " ".join(map(lexeme, terms))


def query_text(terms: Sequence[str], *, any_term: bool = False) -> str:
    """``tsquery`` input matching every term (or any, with ``any_term``)."""
    return (" | " if any_term else " & ").join(map(lexeme, terms))


def search_row(row: Sequence[Any]) -> tuple[Any, ...]:
    """The ``activity_search`` row of one row of the source query (id, agent, start, label,
    keywords, summary, logs)."""
    activity_id, agent_id, started_at, label, keywords, summary, logs = row
    label, keywords, summary = (str(v or "") for v in (label, keywords, summary))
    return (
        activity_id,
        agent_id,
        started_at,
        document_text(label, keywords, summary, str(logs or "")),
        headline_text(label, keywords),
    )


def index_activity(conn: psycopg.Connection[Any], activity_id: str) -> None:
    """(Re)write one activity's search row from its row and logs."""
    row = conn.execute(_SOURCE + " WHERE a.id = %s", (activity_id,)).fetchone()
    if row is not None:
        conn.execute(_UPSERT, search_row(row))


def index_all(conn: psycopg.Connection[Any]) -> int:
    """Rewrite every activity's search row (inside the caller's transaction); the number."""
    done = 0
    with conn.cursor(name="markus_activity_documents") as source:
        source.execute(_SOURCE)
        while batch := source.fetchmany(BATCH):
            _write(conn, map(search_row, batch))
            done += len(batch)
    return done


def _write(conn: psycopg.Connection[Any], rows: Iterable[tuple[Any, ...]]) -> None:
    with conn.cursor() as cursor:
        cursor.executemany(_UPSERT, list(rows))
