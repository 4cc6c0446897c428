"""The PostgreSQL side of bench_activities: build the same activities with COPY, pick terms, LIKE.

The data lives in a schema of the benchmark database named after the parameter set
(``markus_bench_v<version>_n<n>_a<agents>``), kept between runs like the SQLite cache file;
it is built under a temporary name and renamed when complete, so a killed build is never used.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import psycopg

from markus_memory.storage._postgres.activity_search import search_row
from markus_memory.storage._postgres.schema import (
    ACTIVITY_SEARCH_AGENT_INDEX,
    ACTIVITY_SEARCH_INDEXES,
)
from markus_memory.storage._postgres.store import PostgresStore
from markus_memory.storage.schema_tables import MAX_INDEXED_LOG_CHARS

COPY_CHUNK = 50_000


def schema_url(url: str, schema: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


def open_store(
    url: str, n: int, agents: int, version: int, rows: Callable[[int, int], Iterator[Any]]
) -> PostgresStore:
    """The store on this parameter set's schema, building it first if missing."""
    schema = f"markus_bench_v{version}_n{n}_a{agents}"
    with psycopg.connect(url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
    if exists is None:
        print(f"building PostgreSQL schema {schema} ...", file=sys.stderr)
        start = time.perf_counter()
        build(url, schema, n, agents, rows)
        print(f"built in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return PostgresStore(schema_url(url, schema), statement_timeout_ms=600_000)


def build(
    url: str, schema: str, n: int, agents: int, rows: Callable[[int, int], Iterator[Any]]
) -> None:
    building = schema + "_building"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {building} CASCADE")
        conn.execute(f"CREATE SCHEMA {building}")
    PostgresStore(schema_url(url, building)).close()  # the real schema, via the migrations
    started = time.perf_counter()
    with psycopg.connect(schema_url(url, building)) as conn:
        conn.execute("SET synchronous_commit = off")
        conn.execute("SET maintenance_work_mem = '512MB'")
        # Bulk load without indexes, then build them once.
        conn.execute(
            "DROP INDEX IF EXISTS idx_activity_search_doc, idx_activity_search_headline, "
            "idx_activity_search_agent, idx_activity_search_agent_doc"
        )
        columns = (
            "id, agent_id, mailbox_item_id, type, label, task_id, started_at, ended_at, "
            "total_tokens, total_tools, success, summary, keywords, created_at"
        )
        source = rows(n, agents)
        done = 0
        while done < n:
            chunk = [next(source) for _ in range(min(COPY_CHUNK, n - done))]
            # One COPY at a time per connection: the activities, then their search documents
            # (the one analyser's terms, as the store writes them).
            with conn.cursor().copy(f"COPY agent_activities ({columns}) FROM STDIN") as copy:
                for row, _ in chunk:
                    copy.write_row((*row[:10], bool(row[10]), *row[11:]))
            with conn.cursor().copy(
                "COPY activity_search (activity_id, agent_id, started_at, document, headline) "
                "FROM STDIN"
            ) as copy:
                for row, logs in chunk:
                    source = (*row[:2], row[6], row[4], row[12], row[11])
                    copy.write_row(search_row((*source, logs[:MAX_INDEXED_LOG_CHARS])))
            done += len(chunk)
            conn.commit()
            print(f"  copied {done:,} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        for statement in (*ACTIVITY_SEARCH_INDEXES, ACTIVITY_SEARCH_AGENT_INDEX):
            conn.execute(statement)
        conn.commit()
        print(f"  indexes in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {building}.agent_activities")
        conn.execute(f"VACUUM ANALYZE {building}.activity_search")
        conn.execute(f"ALTER SCHEMA {building} RENAME TO {schema}")


def pick_terms(store: PostgresStore, n: int, agents: int, agent: str) -> dict[str, list[str]]:
    """Terms by document frequency, estimated from one agent's documents (ts_stat)."""
    bands = {
        "rare": (10, 60),
        "medium": (max(2, n // 200), max(3, n // 50)),
        "common": (int(n * 0.3), n),
    }
    with store.database.read() as conn:
        stats = conn.execute(
            "SELECT word, ndoc FROM ts_stat(%s) WHERE length(word) > 3 AND word ~ '^[a-z]+$'",
            (f"SELECT document FROM activity_search WHERE agent_id = '{agent}'",),
        ).fetchall()
    picked: dict[str, list[str]] = {}
    for name, (low, high) in bands.items():
        terms = sorted(word for word, ndoc in stats if low <= ndoc * agents <= high)
        terms = sorted(terms, key=lambda t: (hash_term(t), t))[:400]
        random.Random(name).shuffle(terms)
        picked[name] = terms[:6]
    if picked["rare"] and picked["common"]:
        picked["rare+common"] = [
            f"{r} {c}" for r, c in zip(picked["rare"], picked["common"], strict=False)
        ]
    return picked


def hash_term(term: str) -> int:
    return sum(ord(c) * 2654435761 for c in term) % 1000003


def like_search(store: PostgresStore, agent: str, query: str, limit: int) -> list[str]:
    """The original's search_activities (AND of LIKE '%term%'), on PostgreSQL."""
    terms = [t for t in query.lower().split() if len(t) > 1]
    sql = "SELECT id FROM agent_activities WHERE agent_id = %s"
    params: list[object] = [agent]
    for term in terms:
        sql += " AND (LOWER(summary) LIKE %s OR LOWER(keywords) LIKE %s OR LOWER(label) LIKE %s)"
        params.extend([f"%{term}%"] * 3)
    sql += " ORDER BY started_at DESC LIMIT %s"
    params.append(limit)
    with store.database.read() as conn:
        return [r[0] for r in conn.execute(sql, params).fetchall()]
