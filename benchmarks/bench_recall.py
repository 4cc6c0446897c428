"""recall_conversation cold and warm over a large transcript (default 1,000,000 messages).

Usage: python benchmarks/bench_recall.py [--messages N] [--backend sqlite|postgres|both]
                                        [--processes P] [--queries Q]

The agent's transcript is a cached fixture (``benchmarks/_recall_fixture.py``: synthetic chat
with a Zipf vocabulary, recorded through the store's own import path). For each backend:

* cold: P fresh processes each open the agent and run one first recall (a different query
  each); the median of "open + first recall" is printed (interpreter start and imports,
  psycopg's included, are not counted: they are the same for any library);
* warm: one process, the median and p95 of Q recalls after the first;
* ingest: ``sessions.append`` per message (the call an agent waits for) and the background
  cost per message of recording and indexing it in the store (writer drained), measured on a
  fresh agent in the same process, beside a bare SQLite insert of the same messages (the
  baseline) and the fixture's bulk build cost when it was built now.

PostgreSQL runs need ``MARKUS_TEST_POSTGRES_URL`` (or ``--pg-url``).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

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
if url:  # the driver's import (about 0.2 s) is the same for any library: not counted
    import markus_memory.storage.postgres, markus_memory.storage.pg_documents  # noqa: E401
started = time.perf_counter()
mem = open_agent("bench", settings=Settings(home=Path(home), database_url=url))
opened = time.perf_counter()
hits = mem.recall_conversation(query, limit=10)
done = time.perf_counter()
mem.close()
print(json.dumps({"open_ms": (opened - started) * 1e3, "first_ms": (done - opened) * 1e3,
                  "total_ms": (done - started) * 1e3, "hits": len(hits)}))
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


def warm(home: Path, url: str | None, queries: list[str]) -> list[float]:
    with open_agent("bench", settings=Settings(home=home, database_url=url)) as mem:
        mem.recall_conversation(queries[0], limit=10)
        latencies = []
        for query in queries:
            started = time.perf_counter()
            mem.recall_conversation(query, limit=10, neighbours=1)
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def bare_insert(texts: list[str]) -> float:
    """µs per message of the baseline: a bare SQLite insert of each message (its own
    transaction, WAL, ``synchronous=NORMAL`` as the store's) into a table without indexes."""
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "bare.db", isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute(
            "CREATE TABLE m (id INTEGER PRIMARY KEY, agent TEXT, session TEXT, seq INTEGER, "
            "role TEXT, content TEXT, created_at TEXT)"
        )
        started = time.perf_counter()
        for i, text in enumerate(texts):
            conn.execute("BEGIN")
            conn.execute(
                "INSERT INTO m (agent, session, seq, role, content, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                ("ingest", "s", i, "user", text, fixture.T0.isoformat()),
            )
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - started
        conn.close()
    return elapsed / len(texts) * 1e6


def ingest(url: str | None, messages: int = 2_000) -> tuple[float, float, float]:
    """(median µs of one ``sessions.append``, µs per message to record and index it, µs per
    message of :func:`bare_insert`)."""
    chat = fixture.Chat(seed=3)
    texts = [chat.text() for _ in range(messages)]
    bare_us = bare_insert(texts)
    with tempfile.TemporaryDirectory() as tmp:
        now = [fixture.T0]
        settings = Settings(home=Path(tmp), clock=lambda: now[0], database_url=url)
        with open_agent(f"ingest{os.getpid()}", settings=settings) as mem:
            sid = mem.sessions.create().id
            appends = []
            started = time.perf_counter()
            for i, text in enumerate(texts):
                now[0] = fixture.T0 + timedelta(seconds=i)
                begin = time.perf_counter()
                mem.sessions.append(sid, {"role": "user", "content": text})
                appends.append((time.perf_counter() - begin) * 1e6)
            mem._transcripts._writer.drain()  # every append recorded and indexed
            total = time.perf_counter() - started
    return statistics.median(appends), total / messages * 1e6, bare_us


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--processes", type=int, default=7)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    backends = ["sqlite", "postgres"] if args.backend == "both" else [args.backend]
    queries = fixture.Chat().queries(args.queries)
    for backend in backends:
        pg = args.pg_url if backend == "postgres" else None
        if backend == "postgres" and not pg:
            print("postgres: skipped (set MARKUS_TEST_POSTGRES_URL or --pg-url)")
            continue
        home, url, built_us = fixture.build(
            f"recall-{args.messages}", ["bench"], args.messages, pg_url=pg
        )
        runs = cold(home, url, queries, args.processes)
        latencies = warm(home, url, queries)
        append_us, indexed_us, bare_us = ingest(url)
        first = statistics.median(r["first_ms"] for r in runs)
        total = statistics.median(r["total_ms"] for r in runs)
        print(f"[{backend}] {args.messages} messages (fixture {home.name})")
        print(
            f"  cold: open + first recall median {total:.1f} ms (first recall {first:.1f} ms) "
            f"over {len(runs)} processes"
        )
        print(
            f"  warm: recall median {statistics.median(latencies):.2f} ms  "
            f"p95 {percentile(latencies, 0.95):.2f} ms over {len(latencies)} queries"
        )
        print(
            f"  ingest: append median {append_us:.1f} us; recorded + indexed in the "
            f"background {indexed_us:.0f} us/message ({indexed_us / bare_us:.1f}x a bare SQLite "
            f"insert in the same process: {bare_us:.0f} us/message)"
        )
        if built_us is not None:
            print(f"  fixture built now: {built_us:.0f} us/message (bulk import)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
