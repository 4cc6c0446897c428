"""recall_conversation cold and warm over a large transcript (default 1,000,000 messages).

Usage: python benchmarks/bench_recall.py [--messages N] [--backend sqlite|postgres|both]
                                        [--processes P] [--queries Q]
       python benchmarks/bench_recall.py --write-cost-only [--rounds R] [--backend ...]

The agent's transcript is a cached fixture (``benchmarks/_recall_fixture.py``: synthetic chat
with a Zipf vocabulary, recorded through the store's own import path). For each backend:

* cold: P fresh processes each open the agent and run one first recall (a different query
  each); the median of "open + first recall" is printed (interpreter start and imports,
  psycopg's included, are not counted: they are the same for any library);
* warm: one process, the median and p95 of Q recalls after the first;
* ingest into it: ``sessions.append`` per message (the call an agent waits for) into the large
  agent, and the time until the background writer has recorded and indexed them (the session is
  taken out again afterwards, so the fixture stays as built);
* write cost: µs per message for a fresh store to record the same messages as the background
  writer does, in the same process, with the recall index (now), as at commit eb3b962 (before
  the recall index: its full-text index instead) and with no index at all; the ratios are
  printed, and the fixture's bulk build cost when it was built now. ``--write-cost-only``
  measures only this, with no fixture (``--rounds`` rounds of each variant; to compare two
  versions of the code, run it in turn with ``PYTHONPATH`` naming each one's ``src``).

PostgreSQL runs need ``MARKUS_TEST_POSTGRES_URL`` (or ``--pg-url``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))

import _recall_fixture as fixture  # noqa: E402
from _metrics import percentile  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

CHILD = """
import json, sys, time
from pathlib import Path
from markus_memory import open_agent
from markus_memory.config import Settings
home, url, query = sys.argv[1], sys.argv[2] or None, sys.argv[3]
if url:  # the driver's import (0.2-0.6 s) is the same for any library: not counted
    import psycopg, psycopg_pool  # noqa: E401, F401  (the store imports them when opened)
    import markus_memory.storage._postgres.documents
    import markus_memory.storage._postgres.store  # noqa: F401
started, cpu = time.perf_counter(), time.process_time()
mem = open_agent("bench", settings=Settings(home=Path(home), database_url=url))
opened = time.perf_counter()
hits = mem.recall_conversation(query, limit=10)
done, cpu = time.perf_counter(), time.process_time() - cpu
mem.close()
print(json.dumps({"open_ms": (opened - started) * 1e3, "first_ms": (done - opened) * 1e3,
                  "total_ms": (done - started) * 1e3, "cpu_ms": cpu * 1e3, "hits": len(hits)}))
"""


def cold(home: Path, url: str | None, queries: list[str], processes: int) -> list[dict[str, float]]:
    runs = []
    for i in range(processes):
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(home), url or "", queries[i % len(queries)]],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "MARKUS_HOME": str(home)},
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return runs


def warm(home: Path, url: str | None, queries: list[str]) -> tuple[list[float], list[float]]:
    """Wall and CPU (this thread's) ms of each recall after the first. On SQLite everything
    runs in this thread, so the CPU time is what the recall costs on an idle machine."""
    with open_agent("bench", settings=Settings(home=home, database_url=url)) as mem:
        mem.recall_conversation(queries[0], limit=10)
        latencies, cpu = [], []
        for query in queries:
            started, thread = time.perf_counter(), time.thread_time()
            mem.recall_conversation(query, limit=10, neighbours=1)
            latencies.append((time.perf_counter() - started) * 1000)
            cpu.append((time.thread_time() - thread) * 1000)
    return latencies, cpu


EB3B962_FULL_TEXT = {
    # What commit eb3b962 (the store before the recall index) maintained on every message:
    # its full-text index, without the indexes added since for recall's keys (by position,
    # and on PostgreSQL by id). tests/test_benchmark_recall.py holds the result to that
    # commit's indexes.
    "sqlite": [
        "DROP INDEX idx_transcript_keys",
        "CREATE VIRTUAL TABLE transcript_fts USING fts5(content, content='transcript_messages', "
        "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
        "CREATE TRIGGER transcript_ai AFTER INSERT ON transcript_messages BEGIN "
        "INSERT INTO transcript_fts (rowid, content) VALUES (new.id, new.content); END",
    ],
    "postgres": [
        "DROP INDEX idx_transcript_keys",
        "DROP INDEX idx_transcript_id_keys",
        "ALTER TABLE transcript_messages ADD COLUMN search TSVECTOR GENERATED ALWAYS AS "
        "(to_tsvector('markus_fts'::regconfig, content)) STORED",
        "CREATE INDEX idx_transcript_search ON transcript_messages USING GIN (search)",
    ],
}
VARIANTS = ("recall index", "no index", "eb3b962")


@contextlib.contextmanager
def fresh_store(url: str | None, tag: str) -> Iterator[Any]:
    """An empty store (a temporary ``data.db``, or a new schema of the server)."""
    if url is None:
        from markus_memory.storage._sqlite.store import SqliteStore

        with tempfile.TemporaryDirectory() as tmp:
            store = SqliteStore(Path(tmp) / "data.db")
            try:
                yield store
            finally:
                store.close()
        return
    from markus_memory.storage._postgres.store import PostgresStore

    with fixture.fresh_pg_schema(url, f"bench_ingest_{tag}") as schema_url:
        store = PostgresStore(schema_url)
        try:
            yield store
        finally:
            store.close()


def record(url: str | None, texts: list[str], variant: str) -> tuple[float, float]:
    """µs per message (wall, and CPU of this thread) for a fresh store to record ``texts`` as
    the background writer does (batches of ``MAX_BATCH``, one transaction each): ``recall
    index`` as now; ``no index`` without the recall-index writes; ``eb3b962`` without them but
    with the full-text index that commit kept on every message (FTS5 and its trigger / a
    ``tsvector`` column and its GIN index, whose pending list is merged within the time): the
    append path before the recall index."""
    from markus_memory.search.transcript_pool import MAX_BATCH
    from markus_memory.storage import transcripts
    from markus_memory.storage.repos.transcripts import TranscriptMessage

    messages = [
        TranscriptMessage("ingest", "s", i, "user", text, fixture.T0 + timedelta(seconds=i))
        for i, text in enumerate(texts)
    ]
    with fresh_store(url, variant.replace(" ", "_")) as store, contextlib.ExitStack() as stack:
        if variant != "recall index":
            stack.enter_context(mock.patch.object(transcripts, "index_docs", lambda *a, **k: None))
        if variant == "eb3b962":
            with store.database.write() as conn:
                for statement in EB3B962_FULL_TEXT["sqlite" if url is None else "postgres"]:
                    conn.execute(statement)
        started, cpu = time.perf_counter(), time.thread_time()
        for at in range(0, len(messages), MAX_BATCH):
            batch = messages[at : at + MAX_BATCH]
            store.transcripts.import_transcript(
                "ingest", "s", batch, synced_at=batch[-1].created_at
            )
        if variant == "eb3b962" and url is not None:  # the GIN pending list, merged later
            with store.database.write() as conn:
                conn.execute("SELECT gin_clean_pending_list('idx_transcript_search')")
        wall, cpu = time.perf_counter() - started, time.thread_time() - cpu
        return wall / len(messages) * 1e6, cpu / len(messages) * 1e6


def ingest_ratio(
    url: str | None, rounds: int = 5, messages: int = 2_048
) -> dict[str, tuple[float, float]]:
    """Median µs per message (wall, CPU) of each of :data:`VARIANTS`, run in turn ``rounds``
    times."""
    chat = fixture.Chat(seed=3)
    texts = [chat.text() for _ in range(messages)]
    costs: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            costs[variant].append(record(url, texts, variant))
    return {
        v: (statistics.median(w for w, _ in c), statistics.median(u for _, u in c))
        for v, c in costs.items()
    }


def append_into(home: Path, url: str | None, messages: int = 2_000) -> tuple[list[float], float]:
    """µs of each ``sessions.append`` into the fixture's agent, and µs per message until the
    background writer has recorded and indexed them all; the session is taken out again."""
    chat = fixture.Chat(seed=5)
    texts = [chat.text() for _ in range(messages)]
    with open_agent("bench", settings=Settings(home=home, database_url=url)) as mem:
        sid = mem.sessions.create(prefix="benchappend").id
        appends = []
        started = time.perf_counter()
        for text in texts:
            begin = time.perf_counter()
            mem.sessions.append(sid, {"role": "user", "content": text})
            appends.append((time.perf_counter() - begin) * 1e6)
        writer = mem._transcripts._writer
        writer.drain()
        total = (time.perf_counter() - started) / messages * 1e6
        writer._store().forget_session("bench", sid)
        directory = mem.sessions.directory
    for path in directory.glob(f"{sid}*"):
        path.unlink()
    return appends, total


def print_write_cost(costs: dict[str, tuple[float, float]], url: str | None) -> None:
    """The write-cost lines of :func:`ingest_ratio`'s figures."""
    (now, now_cpu), (before, before_cpu) = costs["recall index"], costs["eb3b962"]
    bare = costs["no index"][0]
    print(
        f"  write cost per message, fresh store, same process: {now:.0f} us with the recall "
        f"index; {before:.0f} us as at eb3b962 (full-text index, no recall index): "
        f"{now / before:.2f}x; {bare:.0f} us with no index at all: {now / bare:.2f}x"
    )
    if url is None:  # in this thread: the ratio of CPU does not depend on the load
        print(
            f"    CPU of this thread: {now_cpu:.0f} us vs {before_cpu:.0f} us as at eb3b962: "
            f"{now_cpu / before_cpu:.2f}x"
        )


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--processes", type=int, default=7)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    parser.add_argument("--write-cost-only", action="store_true")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    queries = fixture.Chat().queries(args.queries)
    for backend in backends:
        pg = args.pg_url if backend == "postgres" else None
        if backend == "postgres" and not pg:
            print("postgres: skipped (set MARKUS_TEST_POSTGRES_URL or --pg-url)")
            continue
        if args.write_cost_only:
            print(f"[{backend}] write cost, {args.rounds} rounds ({load()})")
            print_write_cost(ingest_ratio(pg, args.rounds), pg)
            continue
        home, url, built_us = fixture.build(
            f"recall-{args.messages}", ["bench"], args.messages, pg_url=pg
        )
        fixture.settle(url)
        runs = cold(home, url, queries, args.processes)
        latencies, cpu = warm(home, url, queries)
        appends, background_us = append_into(home, url)
        first = statistics.median(r["first_ms"] for r in runs)
        total = sorted(r["total_ms"] for r in runs)
        print(f"[{backend}] {args.messages} messages (fixture {home.name}; {load()})")
        print(
            f"  cold: open + first recall median {statistics.median(total):.1f} ms (first recall "
            f"{first:.1f} ms; slowest {total[-1]:.1f} ms; CPU of the process "
            f"{statistics.median(r['cpu_ms'] for r in runs):.1f} ms) over {len(runs)} processes"
        )
        print(
            f"  warm: recall median {statistics.median(latencies):.2f} ms  "
            f"p95 {percentile(latencies, 0.95):.2f} ms over {len(latencies)} queries (CPU of "
            f"this thread: median {statistics.median(cpu):.2f} ms  p95 {percentile(cpu, 0.95):.2f})"
        )
        print(
            f"  ingest into it: append median {statistics.median(appends):.1f} us  "
            f"p95 {percentile(appends, 0.95):.1f} us; recorded + indexed in the background "
            f"{background_us:.0f} us/message"
        )
        print_write_cost(ingest_ratio(url, args.rounds), url)
        if built_us is not None:
            print(f"  fixture built now: {built_us:.0f} us/message (bulk import)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
