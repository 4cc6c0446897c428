"""Opening an agent on PostgreSQL: one shared pool per URL, and how fast an unreachable URL fails.

Run: MARKUS_BENCH_POSTGRES_URL=postgresql://postgres@127.0.0.1:5432/test \
     python benchmarks/bench_pg_open.py
Prints the median milliseconds of open_agent + one notebook write + one activity + close on
files+SQLite (the baseline) and on PostgreSQL, their ratio (measured round by round in the same
process), and the median time until open_agent
raises BackendUnavailableError for a refused port with connect_timeout=1.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import statistics
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import psycopg

from markus_memory.config import Settings
from markus_memory.errors import BackendUnavailableError
from markus_memory.memory import open_agent

ROUNDS = 30


def cycle(settings: Settings, agent: str) -> float:
    start = time.perf_counter()
    with open_agent(agent, settings=settings) as mem:
        mem.notebook.upsert("k", "v")
        mem.activities.start("task", "bench")
    return time.perf_counter() - start


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)  # the refused connects
    url = os.environ.get("MARKUS_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
    schema = f"markus_bench_{secrets.token_hex(4)}"
    with psycopg.connect(url, autocommit=True) as admin, tempfile.TemporaryDirectory() as tmp:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            on_pg = f"{url}?options={quote('-csearch_path=' + schema)}"
            files = Settings(home=Path(tmp, "files"))
            pg = Settings(home=Path(tmp, "pg"), database_url=on_pg)
            cycle(files, "agt_warm"), cycle(pg, "agt_warm")
            samples: dict[str, list[float]] = {"files": [], "postgres": []}
            for i in range(ROUNDS):
                samples["files"].append(cycle(files, f"agt_{i}"))
                samples["postgres"].append(cycle(pg, f"agt_{i}"))
            medians = {k: statistics.median(v) * 1e3 for k, v in samples.items()}
            for name, value in medians.items():
                print(f"open+write+close {name:9s} {value:8.2f} ms")
            print(f"ratio postgres/files       {medians['postgres'] / medians['files']:8.2f}")
            failures = []
            for _ in range(int(os.environ.get("MARKUS_BENCH_DEAD_ROUNDS", "3"))):
                dead = Settings(
                    home=Path(tmp, "dead"),
                    database_url=f"postgresql://postgres@127.0.0.1:{closed_port()}/x?connect_timeout=1",
                )
                start = time.perf_counter()
                try:
                    open_agent("agt_dead", settings=dead).close()
                except BackendUnavailableError:
                    failures.append(time.perf_counter() - start)
            if failures:
                print(f"unreachable URL fails after (median) {statistics.median(failures):6.2f} s")
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
