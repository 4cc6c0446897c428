"""Framework adapters side by side with the frameworks' own stores, in one process.

Run: ``python -m benchmarks.bench_integrations [--only langgraph openai-agents pydantic-ai]
[--items 20000]``.
One function per framework section (``SECTIONS``); ``--only`` runs the named ones.

**langgraph**: ``MarkusStore`` on SQLite and on PostgreSQL against LangGraph's ``InMemoryStore``
and ``PostgresStore`` (``langgraph-checkpoint-postgres``, a pool of 4 connections) at
``--items`` items in 50 users' namespaces: one batch put of every item, then the median of
searches (limit 10) under ``("users",)`` without a query, with a filter, with a query, and
with both; and the event-loop stall (the longest a 1 ms ticker waits past its time) while 4
``asearch`` calls run at once, 20 rounds, beside the floor of that harness on this machine
(threads that sleep, or compute without the GIL, as long as one search). LangGraph's stores
have no embedder here, so they ignore the query (their documented behaviour) and order by
``updated_at`` (PostgreSQL) or insertion (in memory); ``MarkusStore`` ranks it by BM25.
Ratios are against ``PostgresStore``.
**openai-agents**: ``MarkusSession`` against the SDK's ``SQLiteSession`` (adding 1,000 items in
one batch and one at a time; ``get_items()`` and ``get_items(limit=20)`` at 10,000 items).
**pydantic-ai**: ``MarkusConversationStore`` load against ``InMemoryConversationStore`` at 500
and 5,000 messages (load grows linearly with the length). Both on SQLite and on PostgreSQL
(``benchmarks/_bench_sessions.py``).
PostgreSQL runs on ``--pg-url`` (default ``MARKUS_TEST_POSTGRES_URL`` or the local ``test``
database) in schemas of its own, dropped at the end. The ``bench`` note: LangGraph's store
needs ``pip install langgraph-checkpoint-postgres``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import os
import secrets
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms  # noqa: E402

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
ROUNDS = 30
STALL_ROUNDS = 20
WORDS = (
    "coffee tea drinks morning bike ride office report budget lunch meeting garden music "
    "running books travel dinner family project deadline review"
).split()
KINDS = ("habit", "fact", "preference", "event")


def _item(i: int) -> tuple[tuple[str, ...], str, dict[str, Any]]:
    words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(6)]
    text = f"User {i % 50} {' '.join(words)} note {i}"
    return ("users", f"u{i % 50}", "memories"), f"m{i}", {"text": text, "kind": KINDS[i % 4]}


SEARCHES: dict[str, dict[str, Any]] = {
    "no query": {},
    "filter": {"filter": {"kind": "habit"}},
    "query": {"query": "drinks coffee in the morning"},
    "query + filter": {"query": "drinks coffee in the morning", "filter": {"kind": "habit"}},
}


def _schema_url(url: str, schema: str) -> str:
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options={quote(f'-csearch_path={schema}')}"


@contextlib.contextmanager
def _schema(url: str, name: str) -> Iterator[str]:
    import psycopg

    schema = f"bench_{name}_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield _schema_url(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def _busy(seconds: float) -> None:
    """Compute for ``seconds`` with the GIL released (hashing a large buffer)."""
    block = bytes(4 << 20)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        hashlib.sha256(block).digest()


async def _stall(search: Callable[[], Any], rounds: int) -> float:
    """The longest lateness (ms) of a 1 ms ticker while 4 searches run at once, ``rounds``
    times."""
    worst = 0.0
    running = True

    async def ticker() -> None:
        nonlocal worst
        while running:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, (time.perf_counter() - start - 0.001) * 1000)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    for _ in range(rounds):
        await asyncio.gather(*(search() for _ in range(4)))
    running = False
    await tick
    return worst


def _measure(store: Any, n: int, per_batch: int | None = None) -> dict[str, float]:
    """Batch put of ``n`` items (``per_batch`` at a time: all at once when None), search
    medians (ms) and the stall (ms) of one store."""
    from langgraph.store.base import PutOp

    ops = [PutOp(*_item(i)) for i in range(n)]
    size = per_batch or n
    start = time.perf_counter()
    for first in range(0, n, size):
        store.batch(ops[first : first + size])
    out = {"batch put": (time.perf_counter() - start) * 1000}
    for name, kwargs in SEARCHES.items():
        found = store.search(("users",), limit=10, **kwargs)
        assert found, (name, type(store).__name__)
        out[name] = median_ms(lambda kw=kwargs: store.search(("users",), limit=10, **kw), ROUNDS)
    query = SEARCHES["query + filter"]
    out["stall"] = asyncio.run(
        _stall(lambda: store.asearch(("users",), limit=10, **query), STALL_ROUNDS)
    )
    # The same harness over threads that only sleep, and over threads that compute (without
    # the GIL) as long as one search takes: what the machine's scheduling alone costs the loop.
    pause = out["query + filter"] / 1000
    out["floor: sleep"] = asyncio.run(
        _stall(lambda: asyncio.to_thread(time.sleep, pause), STALL_ROUNDS)
    )
    out["floor: CPU"] = asyncio.run(_stall(lambda: asyncio.to_thread(_busy, pause), STALL_ROUNDS))
    return out


def _markus(url: str | None, home: Path, n: int) -> dict[str, float]:
    from markus_memory import open_agent
    from markus_memory.config import Settings
    from markus_memory.integrations.langgraph import MarkusStore

    settings = dataclasses.replace(Settings.from_env(home=home), embedder="none")
    if url is not None:
        settings = dataclasses.replace(settings, database_url=url, documents="files")
    with open_agent("bench", settings=settings) as memory:
        store = MarkusStore(memory)
        try:
            return _measure(store, n)
        finally:
            store.close()


def _their_postgres(url: str, n: int) -> dict[str, float]:
    from langgraph.store.postgres import PostgresStore

    with PostgresStore.from_conn_string(url, pool_config={"min_size": 4, "max_size": 4}) as store:
        store.setup()
        # Its batch put sends every value as a parameter: at most 65,535 per statement.
        return _measure(store, n, per_batch=5_000)


def _their_memory(n: int) -> dict[str, float]:
    from langgraph.store.memory import InMemoryStore

    return _measure(InMemoryStore(), n)


def bench_langgraph(args: argparse.Namespace) -> None:
    n = args.items
    rows: dict[str, dict[str, float]] = {}
    columns = ["batch put", *SEARCHES, "stall", "floor: sleep", "floor: CPU"]
    print(f"\nLangGraph stores at {n:,} items (median ms; stall: worst ms, 4 concurrent)")
    with open("/proc/loadavg") if Path("/proc/loadavg").exists() else contextlib.nullcontext() as f:
        if f is not None:
            print(f"load average at start: {f.read().split()[0]}")
    print(f"{'store':26}" + "".join(f"{c:>16}" for c in columns))

    def show(name: str, row: dict[str, float]) -> None:
        rows[name] = row
        print(f"{name:26}" + "".join(f"{row[c]:>16.1f}" for c in columns), flush=True)

    with _schema(args.pg_url, "langgraph") as url:
        show("LangGraph PostgresStore", _their_postgres(url, n))
    show("LangGraph InMemoryStore", _their_memory(n))
    with tempfile.TemporaryDirectory() as tmp:
        show("MarkusStore SQLite", _markus(None, Path(tmp), n))
    with _schema(args.pg_url, "markus") as url, tempfile.TemporaryDirectory() as tmp:
        show("MarkusStore PostgreSQL", _markus(url, Path(tmp), n))
    base = rows["LangGraph PostgresStore"]
    for name, row in rows.items():
        if name != "LangGraph PostgresStore":
            ratios = "".join(f"{row[c] / base[c]:>15.2f}x" for c in columns if base[c] > 0)
            print(f"{name + ' / PostgresStore':26}{ratios}")
    print("LangGraph's stores have no embedder here: they ignore the query.")
    print(
        "floors: the same harness over threads that sleep, or compute without the GIL, "
        "as long as one search takes."
    )


def _show_rows(title: str, rows: list[tuple[str, float, float]]) -> None:
    print(f"\n{title} (median ms; ratio to the framework's own store in the same run)")
    for case, ms, ratio in rows:
        print(f"{case:58}{ms:>12.1f}{ratio:>9.2f}x", flush=True)


def bench_openai_agents(args: argparse.Namespace) -> None:
    from benchmarks._bench_sessions import openai_agents_rows

    _show_rows("OpenAI Agents MarkusSession vs SQLiteSession, SQLite", openai_agents_rows())
    with _schema(args.pg_url, "openai") as url:
        _show_rows("OpenAI Agents MarkusSession on PostgreSQL", openai_agents_rows(url))


def bench_pydantic_ai(args: argparse.Namespace) -> None:
    from benchmarks._bench_sessions import pydantic_ai_rows

    _show_rows("PydanticAI load vs InMemoryConversationStore, SQLite", pydantic_ai_rows())
    with _schema(args.pg_url, "pydantic") as url:
        _show_rows("PydanticAI load on PostgreSQL", pydantic_ai_rows(url))


SECTIONS: dict[str, Callable[[argparse.Namespace], None]] = {
    "langgraph": bench_langgraph,
    "openai-agents": bench_openai_agents,
    "pydantic-ai": bench_pydantic_ai,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=sorted(SECTIONS))
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument(
        "--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL") or DEFAULT_PG
    )
    args = parser.parse_args()
    for name in args.only:
        SECTIONS[name](args)


if __name__ == "__main__":
    main()
