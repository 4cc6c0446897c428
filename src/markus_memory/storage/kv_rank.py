"""BM25 over the LangGraph item postings: the query's weights and the scoring SQL.

The constants and idf are those of the knowledge index, over the agent's own statistics
(``langgraph_stats``, ``langgraph_terms``). A posting's share is
``w·tf·(k1+1) / (tf + k1·(1-b) + k1·b·len/avgdl)``, the constants folded before the query.
Each term is one ``UNION ALL`` branch reading its key range of ``langgraph_postings``: with a
``walk``, only its first rows, the densest postings (migration m005 keys them by ``spread``).
"""

from __future__ import annotations

from typing import Any

from ..analysis import query_counts, query_terms
from ._sql import DialectSql
from .base import MAX_QUERY_CHARS, MAX_QUERY_TERMS
from .knowledge_index import K1, B
from .recall.contract import RecallStats

CANDIDATES = 4
CANDIDATES_MIN = 100
"""A ranked page first looks at the best ``CANDIDATES * (offset + limit) + CANDIDATES_MIN``
documents (see :meth:`~.kv.KVTable.ranked`)."""
PER_TERM = 1000
"""How many of a query term's densest postings a ranked page counts (at least the page):
the bound on the cost of a query over a term most of the agent's items hold."""


def weights(
    sql: DialectSql, agent_id: str, agent: int, query: str
) -> tuple[dict[int, float], RecallStats]:
    """BM25 weights of the query's terms the agent's items use, and their statistics."""
    text = query[:MAX_QUERY_CHARS].encode("utf-8", "replace").decode("utf-8")
    counts = query_counts(query_terms(text)[:MAX_QUERY_TERMS])
    if not counts:
        return {}, RecallStats(0, 0, {})
    condition, keys = sql.dialect.any_of("term", sorted(counts))
    rows = sql.rows(
        "SELECT NULL, docs, tokens FROM langgraph_stats WHERE agent_id = ? UNION ALL "
        f"SELECT term, df, 0 FROM langgraph_terms WHERE agent = ? AND {condition} AND df > 0",
        (agent_id, agent, *keys),
    )
    totals = next((r for r in rows if r[0] is None), (None, 0, 0))
    df = {int(r[0]): int(r[1]) for r in rows if r[0] is not None}
    stats = RecallStats(int(totals[1]), int(totals[2]), df)
    return {key: stats.idf(key) * n for key, n in counts.items() if df.get(key)}, stats


def scored(
    agent: int, weighted: dict[int, float], avgdl: float, walk: int | None, cut: int | None
) -> tuple[str, list[Any]]:
    """Common table expressions ``p`` (each posting's share) and ``s`` (``doc, score``: the
    best ``cut`` documents, all when None) over the ``walk`` densest postings of each term
    (all when None), and their params."""
    densest = "" if walk is None else f" ORDER BY spread, doc LIMIT {int(walk)}"
    branch = (
        "SELECT n.doc, ? * n.tf / (n.tf + ? + ? * n.len) AS s FROM (SELECT doc, tf, len "
        f"FROM langgraph_postings WHERE agent = ? AND term = ?{densest}) n"
    )
    params: list[Any] = []
    for term, weight in weighted.items():
        params += [weight * (K1 + 1), K1 * (1 - B), K1 * B / avgdl, agent, term]
    top = "" if cut is None else f" ORDER BY score DESC, p.doc LIMIT {int(cut)}"
    return (
        f"p AS ({' UNION ALL '.join([branch] * len(weighted))}), "
        f"s AS (SELECT p.doc, SUM(p.s) AS score FROM p GROUP BY p.doc{top})",
        params,
    )
