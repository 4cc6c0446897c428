"""Median cost of one durable append through the facade vs the bare SessionStore.

Run: ``.venv/bin/python benchmarks/bench_append.py [--postgres URL]``. Prints plain medians (ms) of
``open_agent(...).sessions.append`` (which also feeds the transcript store and the recall index)
and of a bare :class:`SessionStore` append, both in this process, for a 10- and a
2,000-message session, and their ratio. Automatic compaction is disabled so the long session
stays that long. With ``--postgres`` the facade also runs on that database (episodic store and
transcript there, documents as files). The facade's close (which drains any pending
transcript writes) is not timed.
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
from pathlib import Path

from markus_memory import open_agent
from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits, Settings, utc_now
from markus_memory.layers.sessions import SessionStore

sys.path.insert(0, str(Path(__file__).parent))

from _common import median_ms_per_round  # noqa: E402
from bench_sessions import message  # noqa: E402

ROUNDS = 400
LIMITS = Limits(session_compact_trigger=10**9)


def bench_bare(root: Path, length: int) -> float:
    paths = AgentPaths(root / f"bare_{length}")
    store = SessionStore(paths, AgentLock(paths.lock), LIMITS, utc_now)
    sid = store.create().id
    for i in range(length):
        store.append(sid, message(i))
    store.flush()
    result = median_ms_per_round(lambda i: store.append(sid, message(length + i)), ROUNDS)
    store.close()
    return result


def bench_facade(root: Path, length: int, url: str | None = None) -> float:
    settings = Settings(home=root / f"home_{length}", limits=LIMITS, database_url=url)
    mem = open_agent(f"bench_{secrets.token_hex(4)}", settings=settings)
    sid = mem.sessions.create().id
    for i in range(length):
        mem.sessions.append(sid, message(i))
    mem.recall_conversation("item")  # the store and the recall index are warm
    mem.sessions.flush()
    result = median_ms_per_round(lambda i: mem.sessions.append(sid, message(length + i)), ROUNDS)
    mem.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--postgres", metavar="URL", help="also run the facade on PostgreSQL")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        bare = {n: bench_bare(root, n) for n in (10, 2000)}
        facade = {n: bench_facade(root, n) for n in (10, 2000)}
        rows = [("SessionStore", bare), ("open_agent().sessions", facade)]
        if args.postgres:
            pg = {n: bench_facade(root / "pg", n, args.postgres) for n in (10, 2000)}
            rows.append(("  on PostgreSQL", pg))
    print("median append cost (ms), durable on return (survives SIGKILL)")
    for name, got in rows:
        print(
            f"  {name:22s} 10 msgs: {got[10]:.4f}   2000 msgs: {got[2000]:.4f}"
            f"   ratio 2000/10: {got[2000] / got[10]:.2f}"
        )
    print(
        f"  facade / bare          10 msgs: {facade[10] / bare[10]:.2f}"
        f"   2000 msgs: {facade[2000] / bare[2000]:.2f}"
    )


if __name__ == "__main__":
    main()
