"""Many agents in one process: what N open agents with M messages each cost in memory.

Usage: python benchmarks/bench_many_agents.py [--agents N] [--messages M]
                                              [--backend sqlite|postgres] [--fixture]
                                              [--close] [--trim] [--tracemalloc K]

As a server does: the process opens every agent with ``open_agent`` (a fresh home; on
PostgreSQL a fresh schema, dropped at the end), appends M short chat turns to one session of
each through ``sessions.append`` (round-robin over the agents, a user turn then an answer, as
conversations arrive), runs one recall per agent and keeps every handle open. The first agent
is served alone first: what the process pays once (the embedder's model, the writer threads,
the bounds kept for the whole process) is measured apart from what each further agent adds.
It prints the RSS growth over the start (after imports; anonymous memory, SQLite's own heap and
mapped file pages apart: ``data.db`` is memory-mapped, and the pages recalls touch count in
RSS), the growth per agent, open file descriptors and threads, append and recall costs.
``--close`` then closes every handle and prints what comes back. ``--fixture`` skips the
appends: the transcripts come from the cached recall fixture
(``benchmarks/_recall_fixture.py``) recorded straight into the store, so only opening and
recall are measured. ``--trim`` measures again after glibc's ``malloc_trim(0)``: what the C
allocator held free, not in use (the churn of many appends leaves it). ``--tracemalloc K``
prints the K source lines that allocated most of the growth (slow: for finding where memory
goes, not for figures).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import os
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _recall_fixture as fixture  # noqa: E402
from markus_memory import AgentMemory, open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

SESSION = "chat_main"


def status() -> dict[str, int]:
    """VmRSS, RssAnon, RssFile (KiB) and Threads from /proc/self/status."""
    wanted = ("VmRSS", "RssAnon", "RssFile", "Threads")
    found: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii") as lines:
        for line in lines:
            key, _, value = line.partition(":")
            if key in wanted:
                found[key] = int(value.split()[0])
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def trim_malloc() -> bool:
    """Hand the C allocator's free memory back to the system (glibc's ``malloc_trim``);
    False where there is no such call."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True


def sqlite_heap_mb() -> float | None:
    """What SQLite has allocated in this process (page caches, statements), when the
    library is reachable."""
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("sqlite3") or "libsqlite3.so.0")
    except OSError:
        return None
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return float(lib.sqlite3_memory_used()) / 2**20


class Sample:
    """Memory, descriptors and threads at one moment."""

    def __init__(self) -> None:
        gc.collect()
        now = status()
        self.rss = now["VmRSS"] / 1024
        self.anon = now.get("RssAnon", 0) / 1024
        self.file = now.get("RssFile", 0) / 1024
        self.threads = now.get("Threads", threading.active_count())
        self.fds = open_fds()
        self.sqlite = sqlite_heap_mb()

    def line(self, start: Sample, agents: int) -> str:
        grown = self.rss - start.rss
        heap = ""
        if self.sqlite is not None and start.sqlite is not None:
            heap = f", SQLite's heap +{self.sqlite - start.sqlite:.0f}"
        return (
            f"RSS {start.rss:.0f} -> {self.rss:.0f} MB (+{grown:.0f} MB, "
            f"{grown / agents:.3f} MB an agent; anonymous +{self.anon - start.anon:.0f}"
            f"{heap}, mapped files +{self.file - start.file:.0f}); "
            f"fds {start.fds} -> {self.fds}; threads {start.threads} -> {self.threads}"
        )


@contextmanager
def where(backend: str, pg_url: str | None) -> Iterator[Settings]:
    """A fresh home (and on PostgreSQL a fresh schema), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="markus-many-") as home:
        if backend == "sqlite":
            yield Settings(home=Path(home))
            return
        if pg_url is None:
            raise SystemExit("--backend postgres needs --pg-url or MARKUS_TEST_POSTGRES_URL")
        with fixture.fresh_pg_schema(pg_url, "bench_many") as url:
            yield Settings(home=Path(home), database_url=url)


def append_all(agents: list[AgentMemory], messages: int, chat: fixture.Chat) -> float:
    """Round-robin turns over the agents; the mean cost of one append in ms."""
    for mem in agents:
        mem.sessions.get_or_create(SESSION)
    started = time.perf_counter()
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        for mem in agents:
            mem.sessions.append(SESSION, {"role": role, "content": chat.text()})
    return (time.perf_counter() - started) * 1000 / (messages * len(agents))


def recall_all(agents: list[AgentMemory], queries: list[str]) -> list[float]:
    latencies = []
    for mem, query in zip(agents, queries, strict=True):
        begin = time.perf_counter()
        mem.recall_conversation(query, limit=10)
        latencies.append((time.perf_counter() - begin) * 1000)
    return latencies


def run(args: argparse.Namespace, settings: Settings, names: list[str]) -> None:
    chat = fixture.Chat()
    queries = chat.queries(len(names))
    if args.tracemalloc:
        tracemalloc.start()
    start = Sample()
    before = tracemalloc.take_snapshot() if args.tracemalloc else None
    # The first agent alone: what any process pays once (the embedder's model, the writer
    # threads, caches bounded for the whole process), apart from what each agent adds.
    first = open_agent(names[0], settings=settings)
    if not args.fixture:
        append_all([first], args.messages, chat)
    recall_all([first], queries[:1])
    one = Sample()
    began = time.perf_counter()
    agents = [first, *(open_agent(name, settings=settings) for name in names[1:])]
    opened = time.perf_counter() - began
    append_ms = None if args.fixture else append_all(agents[1:], args.messages, chat)
    latencies = recall_all(agents, queries)
    peak = Sample()
    label = "fixture transcripts" if args.fixture else "messages appended"
    print(f"[{args.backend}] {len(names)} agents x {args.messages} {label}, all open at once")
    appended = "" if append_ms is None else f"; append mean {append_ms:.3f} ms"
    print(
        f"  opened in {opened:.1f}s{appended}; one recall each: median "
        f"{statistics.median(latencies):.2f} ms"
    )
    print(f"  first agent: {one.line(start, 1)}")
    print(f"  open: {peak.line(start, len(names))}")
    if len(names) > 1:
        print(f"  each further agent: {peak.line(one, len(names) - 1)}")
    if args.trim and trim_malloc():
        print(f"  after malloc_trim: {Sample().line(start, len(names))}")
    if before is not None:
        top = tracemalloc.take_snapshot().compare_to(before, "lineno")
        for stat in top[: args.tracemalloc]:
            print(f"    {stat.size_diff / 2**20:7.1f} MB {stat.count_diff:9d} {stat.traceback}")
    if args.close:
        for mem in agents:
            mem.close()
        del agents
        print(f"  closed: {Sample().line(start, len(names))}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=300)
    parser.add_argument("--messages", type=int, default=2_000)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--pg-url", default=os.environ.get("MARKUS_TEST_POSTGRES_URL"))
    parser.add_argument("--fixture", action="store_true", help="cached transcripts, no appends")
    parser.add_argument("--close", action="store_true", help="close every handle at the end")
    parser.add_argument(
        "--trim", action="store_true", help="also measure after glibc's malloc_trim(0)"
    )
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="K")
    args = parser.parse_args(argv)
    names = [f"agent{i:04d}" for i in range(args.agents)]
    if not args.fixture:
        with where(args.backend, args.pg_url) as settings:
            run(args, settings, names)
        return 0
    pg = args.pg_url if args.backend == "postgres" else None
    home, url, _ = fixture.build(
        f"agents-{args.agents}x{args.messages}", names, args.messages, pg_url=pg
    )
    run(args, Settings(home=home, database_url=url), names)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
