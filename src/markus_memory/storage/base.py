"""What every repository of the episodic store shares (SQLite, PostgreSQL): JSON values and the
bounds of a query. Each repository's records and protocol are in its own module
(:mod:`.repos`: activities, side, transcripts, conversations), composed in :mod:`.episodic`.

Every read takes the caller's ``agent_id`` and only ever returns that agent's rows: an id that
belongs to another agent looks exactly like an unknown id (the original had no ownership check).
Times are timezone-aware UTC datetimes; backends store them as ``iso_ms`` strings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis import query_terms, query_tokens

JsonObject = Mapping[str, Any]

# Longest query text and most terms a search will look at (bounds the cost of hostile input).
MAX_QUERY_CHARS = 1000
MAX_QUERY_TERMS = 16


def search_terms(query: str) -> list[str]:
    """The index terms a free-text activity query looks for: the one analyser's terms
    (:mod:`markus_memory.analysis`) of its first :data:`MAX_QUERY_TERMS` content words,
    distinct, in first-seen order. Stop words alone give none (the query finds nothing).
    Backends quote each term as a literal (FTS5: ``quote_fts``; PostgreSQL: a quoted
    ``tsquery`` lexeme), so no term is ever parsed as query syntax.
    """
    if not isinstance(query, str):
        return []
    found = query_tokens(query_terms(query[:MAX_QUERY_CHARS])[:MAX_QUERY_TERMS])
    return [term for term in dict.fromkeys(found) if term]
