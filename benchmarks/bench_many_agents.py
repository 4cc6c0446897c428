"""Many agents in one process: open N agents (default 1,000 × 1,000 messages), one recall each.

Usage: python benchmarks/bench_many_agents.py [--agents N] [--messages M]
                                              [--backend sqlite|postgres]

The agents' transcripts are a cached fixture (``benchmarks/_recall_fixture.py``) in one
``data.db`` (or one PostgreSQL schema). The process opens every agent with ``open_agent`` and
keeps them all open, runs one recall per agent, and prints its RSS growth over the start (after
imports) and its open file descriptors; then the median recall latency.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _recall_fixture as fixture  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1_000)
    parser.add_argument("--messages", type=int, default=1_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    args = parser.parse_args(argv)
    names = [f"agent{i:04d}" for i in range(args.agents)]
    pg = args.pg_url if args.backend == "postgres" else None
    home, url, _ = fixture.build(
        f"agents-{args.agents}x{args.messages}", names, args.messages, pg_url=pg
    )
    queries = fixture.Chat().queries(args.agents)
    settings = Settings(home=home, database_url=url)
    start_rss, start_fds = rss_mb(), open_fds()
    started = time.perf_counter()
    agents = [open_agent(name, settings=settings) for name in names]
    opened = time.perf_counter() - started
    latencies = []
    for mem, query in zip(agents, queries, strict=True):
        begin = time.perf_counter()
        mem.recall_conversation(query, limit=10)
        latencies.append((time.perf_counter() - begin) * 1000)
    peak_rss, peak_fds = rss_mb(), open_fds()
    for mem in agents:
        mem.close()
    print(f"[{args.backend}] {args.agents} agents x {args.messages} messages, all open at once")
    median = statistics.median(latencies)
    print(f"  opened in {opened:.1f}s; one recall each: median {median:.2f} ms")
    print(f"  RSS {start_rss:.0f} MB -> {peak_rss:.0f} MB (+{peak_rss - start_rss:.0f} MB)")
    print(f"  open file descriptors {start_fds} -> {peak_fds}; after closing: {open_fds()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
