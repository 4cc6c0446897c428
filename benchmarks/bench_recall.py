"""recall_conversation latency over a large transcript history (default 100,000 messages).

Usage: python benchmarks/bench_recall.py [--messages N] [--sessions S] [--queries Q]

Writes S sessions of synthetic chat (Zipf-distributed vocabulary, 6-30 words a message)
through ``AgentMemory.sessions.append`` (each append is also recorded in the episodic store),
closes the agent, reopens it cold and times: the first recall (reads the transcript store in
one query and builds the index), then the median and p95
of ``recall_conversation`` (bm25 re-ranked, no embedder: the default install) over queries
made of words from random messages. The baseline in the same process is the original Markus
keyword scan (tokenize, OR scoring) over the same message texts. Last, the store's transcript is
dropped (as in a Markus data dir that predates it) and the first recall is timed twice more:
once importing every session file into the store, then reading the store again.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _markus_keyword as markus  # noqa: E402
from _metrics import percentile  # noqa: E402
from markus_memory import open_agent  # noqa: E402
from markus_memory.config import Settings  # noqa: E402

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)


def vocabulary(rng: random.Random, size: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    rng = random.Random(7)
    words = vocabulary(rng, 20_000)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    per_session = max(1, args.messages // args.sessions)
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        clock_now = [T0]
        settings = Settings(home=Path(tmp), clock=lambda: clock_now[0])
        started = time.perf_counter()
        with open_agent("bench", settings=settings) as mem:
            for s in range(args.sessions):
                sid = f"chat_{s}"
                mem.sessions.get_or_create(sid)
                for i in range(per_session):
                    clock_now[0] = T0 + timedelta(minutes=s * per_session + i)
                    text = " ".join(rng.choices(words, weights, k=rng.randint(6, 30)))
                    texts.append(text)
                    role = "user" if i % 2 == 0 else "assistant"
                    mem.sessions.append(sid, {"role": role, "content": text})
        write_s = time.perf_counter() - started
        queries = [
            " ".join(rng.sample(texts[rng.randrange(len(texts))].split(), 3))
            for _ in range(args.queries)
        ]
        with open_agent("bench", settings=settings) as mem:
            started = time.perf_counter()
            mem.recall_conversation(queries[0], limit=10)
            cold_s = time.perf_counter() - started
            latencies = []
            for query in queries:
                started = time.perf_counter()
                mem.recall_conversation(query, limit=10, neighbours=1)
                latencies.append((time.perf_counter() - started) * 1000)
            filtered = []
            for query in queries[:50]:
                started = time.perf_counter()
                mem.recall_conversation(query, limit=10, role="user", since=T0 + timedelta(days=20))
                filtered.append((time.perf_counter() - started) * 1000)
        with open_agent("bench", settings=settings) as mem:
            for info in mem.sessions.list():
                mem.store.forget_session("bench", info.id)
        imports = []
        for _ in range(2):
            with open_agent("bench", settings=settings) as mem:
                started = time.perf_counter()
                mem.recall_conversation(queries[0], limit=10)
                imports.append(time.perf_counter() - started)
    baseline = []
    for query in queries[:20]:
        started = time.perf_counter()
        markus.search(texts, query)
        baseline.append((time.perf_counter() - started) * 1000)
    median = statistics.median(latencies)
    base = statistics.median(baseline)
    print(f"messages {len(texts)} in {args.sessions} sessions; appended in {write_s:.1f}s")
    print(f"first recall after reopening (reads the store, builds index): {cold_s:.2f}s")
    print(f"  store emptied: first recall importing every session file: {imports[0]:.2f}s")
    print(f"  and the next reopen, reading the store again: {imports[1]:.2f}s")
    print(f"recall_conversation median {median:.2f} ms  p95 {percentile(latencies, 0.95):.2f} ms")
    print(f"  with role+since filters median {statistics.median(filtered):.2f} ms")
    print(f"markus keyword scan median {base:.2f} ms  (x{base / median:.1f} slower)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
