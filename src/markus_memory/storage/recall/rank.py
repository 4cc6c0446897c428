"""Okapi BM25 over an agent's postings, inside the store.

The constants and idf are those of SQLite FTS5's ``bm25()``, computed from the *agent's own*
statistics (``recall_terms``, ``recall_agents``): one ``data.db`` (or one PostgreSQL schema)
holds many agents, and another agent's history must not change how this one ranks. Only the
candidates leave the database.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...analysis import query_counts, query_terms, term_key
from ..base import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from ..repos.transcripts import TranscriptHit, TranscriptMessage
from .contract import RecallFilters as Filters
from .contract import RecallStats as Stats
from .contract import TurnKey
from .fetch import Sql, keys_around, turns_by_id

K1 = 1.2
B = 0.75


def agent_key(agent_id: str) -> int:
    """The agent's 63-bit key in the recall tables."""
    return term_key("\x00agent\x00" + agent_id)


def agent_term(agent: int, key: int) -> int:
    """The agent's own key of a term (``recall_postings.term``, ``recall_terms.term``): its
    :func:`~markus_memory.analysis.term_key` XOR the agent's key. For one agent this maps term
    keys one to one (no new collision); two agents' terms meet only as two unrelated 63-bit
    hashes would."""
    return agent ^ key


def stats(sql: Sql, agent_id: str, keys: Iterable[int], words: Iterable[str] = ()) -> Stats:
    """The agent's message and token counts, the document frequency of each of ``keys`` it
    used, and which of ``words`` name one of its speakers (or roles), in one statement."""
    agent = agent_key(agent_id)
    query = "SELECT 0, docs, tokens, NULL FROM recall_agents WHERE agent = ?"
    params: list[Any] = [agent]
    wanted = sorted({agent_term(agent, key) for key in keys})
    if wanted:
        among, more = sql.dialect.any_of("term", wanted)
        query += f" UNION ALL SELECT 1, term, docs, NULL FROM recall_terms WHERE {among}"
        params.extend(more)
    named = sorted(set(words))
    if named:
        among, more = sql.dialect.any_of("word", named)
        query += (
            " UNION ALL SELECT 2, NULL, NULL, word FROM recall_speakers "
            f"WHERE agent = ? AND {among}"
        )
        params.extend([agent, *more])
    docs = tokens = 0
    df: dict[int, int] = {}
    speakers: set[str] = set()
    for kind, a, b, word in sql.rows(query, params):
        if kind == 2:
            speakers.add(str(word))
        elif kind:
            df[agent_term(agent, int(a))] = int(b)
        else:
            docs, tokens = int(a), int(b)
    return Stats(docs, tokens, df if docs else {}, frozenset(speakers))


@dataclass(frozen=True)
class Bm25:
    """A BM25 ranking to run: the weighted term keys, the agent's mean message length, how
    many of each term's newest postings count (the cost bound), how many messages to return
    and the recall's filters."""

    weights: Mapping[int, float]
    avgdl: float
    per_term: int
    limit: int
    filters: Filters


def rank_sql(
    sql: Sql, agent_id: str, bm25: Bm25, when: Callable[[datetime], Any]
) -> tuple[str, list[Any]] | None:
    """The statement of :func:`rank` (rows ``doc, score``) and its params; None when nothing
    can rank."""
    weights, filters, avgdl = bm25.weights, bm25.filters, bm25.avgdl
    if not weights or bm25.limit <= 0 or avgdl <= 0:
        return None
    agent = agent_key(agent_id)
    where, extra = filters.sql(when)
    join = "" if filters.empty else " JOIN transcript_messages t ON t.id = p.doc WHERE 1 = 1"
    # A posting's share is w·tf·(k1+1) / (tf + k1·(1-b) + k1·b·len/avgdl): the constants are
    # folded here, so the database does one multiplication, one division and two additions.
    norm = [K1 * (1 - B), K1 * B / avgdl]
    share = "? * n.tf / (n.tf + ? + ? * n.len)"
    newest = "FROM recall_postings WHERE term = {} ORDER BY doc DESC LIMIT ?"
    params: list[Any] = []
    if sql.dialect.name == "postgres":
        # One statement text for any number of terms: the terms and weights travel as two
        # arrays, and each term's newest postings come from a LATERAL walk of the key.
        query, params = sql.dialect.values(
            "q",
            [("term", "bigint"), ("w", "float8")],
            [(agent_term(agent, k), w * (K1 + 1)) for k, w in weights.items()],
        )
        postings = (
            f"WITH {query} SELECT n.doc, {share.replace('?', 'q.w', 1)} AS s FROM q CROSS JOIN "
            f"LATERAL (SELECT doc, tf, len {newest.format('q.term')}) n"
        )
        params.extend([*norm, bm25.per_term])
    else:
        parts = []
        for key, weight in weights.items():
            parts.append(
                f"SELECT n.doc, {share} AS s FROM (SELECT doc, tf, len {newest.format('?')}) n"
            )
            params.extend([weight * (K1 + 1), *norm, agent_term(agent, key), bm25.per_term])
        postings = " UNION ALL ".join(parts)
    if len(weights) == 1:  # each message once: nothing to add up
        ranked = f"SELECT p.doc, p.s FROM ({postings}) p{join}{where} ORDER BY p.s DESC, p.doc"
    else:
        ranked = (
            f"SELECT p.doc, SUM(p.s) AS score FROM ({postings}) p{join}{where} GROUP BY p.doc "
            "ORDER BY score DESC, p.doc"
        )
    return f"{ranked} LIMIT ?", [*params, *extra, bm25.limit]


def rank(
    sql: Sql, agent_id: str, bm25: Bm25, when: Callable[[datetime], Any]
) -> list[tuple[int, float]]:
    """The agent's best messages for the weighted terms by BM25, as (id, score).

    Each term contributes at most its ``per_term`` newest postings (the bound on the cost of
    a query over a very long history); ties go to the older message.
    """
    found = rank_sql(sql, agent_id, bm25, when)
    if found is None:
        return []
    return [(int(r[0]), float(r[1])) for r in sql.rows(*found)]


def rank_near(
    sql: Sql, agent_id: str, bm25: Bm25, when: Callable[[datetime], Any], window: int
) -> tuple[list[tuple[int, float]], list[TurnKey]]:
    """:func:`rank`, and the keys of the ranked messages and of their neighbours up to
    ``window`` that pass the filters (:func:`~.fetch.keys_near`), in one statement."""
    found = rank_sql(sql, agent_id, bm25, when)
    if found is None:
        return [], []
    query, params = found
    ranked_cte = f"wanted(id, score) AS ({query})"
    rows = keys_around(sql, ranked_cte, params, agent_id, window, bm25.filters, when, scored=True)
    ranked = sorted(((int(r[0]), float(r[5])) for r in rows if r[5] is not None), key=_best)
    return ranked, [TurnKey(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def _best(item: tuple[int, float]) -> tuple[float, int]:
    """The rank order: the higher score first, then the older message (as :func:`rank`)."""
    return -item[1], item[0]


def weighted_terms(
    query: str, stats_of: Callable[[list[int]], Stats]
) -> tuple[dict[int, float], Stats]:
    """BM25 weights of a query's terms (the idf of each, once per query word with that term)
    and the statistics they came from; terms the agent never used are left out."""
    if not isinstance(query, str):
        return {}, Stats(0, 0, {})
    text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
    counts = query_counts(query_terms(text)[:MAX_QUERY_TERMS])
    found = stats_of(list(counts))
    return {key: found.idf(key) * n for key, n in counts.items() if found.df.get(key)}, found


def search_hits(
    sql: Sql,
    agent_id: str,
    query: str,
    filters: Filters,
    limit: int,
    when: Callable[[datetime], Any],
    message: Callable[[Sequence[Any]], TranscriptMessage],
    per_term: int,
) -> list[TranscriptHit]:
    """A plain transcript search: the agent's messages by BM25 for ``query``, best first;
    each term counts only its ``per_term`` newest messages (the cost bound)."""
    weights, found = weighted_terms(query, lambda keys: stats(sql, agent_id, keys))
    ranked = rank(sql, agent_id, Bm25(weights, found.avgdl, per_term, limit, filters), when)
    rows = {int(r[0]): message(r[1:]) for r in turns_by_id(sql, agent_id, [d for d, _ in ranked])}
    return [
        TranscriptHit(m.agent_id, m.session_id, m.seq, m.role, m.content, m.created_at, score)
        for doc, score in ranked
        if (m := rows.get(doc)) is not None
    ]
