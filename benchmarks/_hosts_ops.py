"""The operations of ``bench_hosts.py``: one worker's mix through the public API, and the log
of every write it made (acknowledged or failed) for the checker.

Every written text carries a key ``k<host>_<worker>_<n>`` and the log line carries the digest
of the whole text, so the checker can tell a write that is missing (lost), there twice
(duplicated) or there but different (torn). Notebook and state entries are overwritten: their
text carries the write's number ``n``, and what is stored must be the last acknowledged write
of that key or a later one.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any

from markus_memory import AgentMemory, Limits, MarkusMemoryError

LIMITS = Limits(max_observations=20_000)
"""The benchmark keeps every observation (the default buffer keeps the newest 500)."""
SHARED = 4
"""Agents every worker of every host writes to."""
DREAMER = "bench_dreamer"
"""The one agent a dream consolidates while the others are written (nothing else writes it)."""
KEY = re.compile(r"k\d+_\d+_\d+")
WORDS = (
    "deploy release postgres latency budget invoice review pipeline kernel garden "
    "harbour violin tomato glacier lantern orbit".split()
)
MIX: tuple[tuple[str, int], ...] = (
    ("append", 40),
    ("observe", 20),
    ("notebook", 8),
    ("state", 8),
    ("activity", 8),
    ("recall", 8),
    ("search", 8),
)
WRITES = frozenset({"append", "observe", "notebook", "state", "activity"})


def digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def shared_agent(n: int) -> str:
    return f"bench_shared_{n}"


def private_agent(host: int, worker: int) -> str:
    return f"bench_h{host}_w{worker}"


def session_id(host: int, worker: int) -> str:
    return f"chat-h{host}-w{worker}"


@dataclass
class Log:
    """Append-only JSON lines, one a write, flushed at once (a SIGKILLed host's acknowledged
    writes are all in the file the kernel already holds)."""

    file: IO[str]
    guard: threading.Lock = field(default_factory=threading.Lock)

    def write(self, **entry: Any) -> None:
        line = json.dumps(entry, separators=(",", ":")) + "\n"
        with self.guard:
            self.file.write(line)
            self.file.flush()


@dataclass
class Stats:
    """Latencies (ms) of successful operations and failure counts, by operation."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def merge(self, other: Stats) -> None:
        for op, values in other.latencies.items():
            self.latencies.setdefault(op, []).extend(values)
        for op, count in other.failures.items():
            self.failures[op] = self.failures.get(op, 0) + count
        self.errors.update(other.errors)


class Worker:
    """One thread of one host: picks operations from :data:`MIX` until ``stop_at``."""

    def __init__(
        self,
        host: int,
        worker: int,
        memories: dict[str, AgentMemory],
        log: Log,
        seed: int,
    ) -> None:
        self.host, self.worker = host, worker
        self.memories = memories
        self.log = log
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.n = 0
        self.private = private_agent(host, worker)

    def _agent(self) -> str:
        if self.rng.random() < 0.5:
            return shared_agent(self.rng.randrange(SHARED))
        return self.private

    def _text(self, key: str) -> str:
        return f"{key} " + " ".join(self.rng.choice(WORDS) for _ in range(8))

    def run(self, stop_at: float) -> Stats:
        ops = [op for op, _ in MIX]
        weights = [w for _, w in MIX]
        sessions_ready: set[tuple[str, str]] = set()
        while time.time() < stop_at:
            op = self.rng.choices(ops, weights)[0]
            self.n += 1
            key = f"k{self.host}_{self.worker}_{self.n}"
            agent = self.private if op in ("notebook", "state") else self._agent()
            action, entry = self._op(op, agent, key, sessions_ready)
            started = time.perf_counter()
            try:
                action()
            except MarkusMemoryError as exc:
                self.stats.failures[op] = self.stats.failures.get(op, 0) + 1
                self.stats.errors[op] = f"{type(exc).__name__}: {exc}"[:300]
                if entry is not None:
                    self.log.write(ok=False, **entry)
                continue
            self.stats.latencies.setdefault(op, []).append((time.perf_counter() - started) * 1e3)
            if entry is not None:
                self.log.write(ok=True, **entry)
        return self.stats

    def _op(
        self, op: str, agent: str, key: str, sessions_ready: set[tuple[str, str]]
    ) -> tuple[Callable[[], object], dict[str, Any] | None]:
        mem = self.memories[agent]
        text = self._text(key)
        entry: dict[str, Any] = {"op": op, "agent": agent, "key": key, "digest": digest(text)}
        if op == "append":
            sid = session_id(self.host, self.worker)
            entry["session"] = sid

            def append() -> None:
                if (agent, sid) not in sessions_ready:
                    mem.sessions.get_or_create(sid)
                    sessions_ready.add((agent, sid))
                mem.sessions.append(sid, {"role": "user", "content": text})

            return append, entry
        if op == "observe":
            return lambda: mem.knowledge.save_observation(text), entry
        if op in ("notebook", "state"):
            slot = f"slot{self.rng.randrange(2)}"
            entry.update(slot=slot, n=self.n)
            if op == "notebook":
                return lambda: mem.notebook.upsert(slot, text), entry
            return lambda: mem.state.update(slot, text), entry
        if op == "activity":

            def activity() -> None:
                found = mem.activities.start("task", f"bench {key}")
                entry["activity"] = found
                mem.activities.log(found, "note", text)
                mem.activities.end(found)

            return activity, entry
        words = " ".join(self.rng.sample(WORDS, 2))
        if op == "recall":
            return lambda: mem.recall_conversation(words, limit=5), None
        return lambda: mem.search(words, limit=5), None


def fingerprint(
    memories: dict[str, AgentMemory], sessions: list[tuple[str, str]]
) -> dict[str, Any]:
    """What one host reads of every agent: digests of each layer's text and of the activity
    ids (documents and activities), and of each known session's messages (sessions)."""
    shared: dict[str, str] = {}
    for agent, mem in sorted(memories.items()):
        acts = sorted(a.id for a in mem.activities.list(limit=100_000))
        parts = (mem.knowledge.text(), mem.notebook.text(), mem.state.text(), " ".join(acts))
        shared[agent] = digest("\x00".join(parts))
    seen: dict[str, str] = {}
    for agent, sid in sessions:
        try:
            session = memories[agent].sessions.get(sid)
        except MarkusMemoryError as exc:
            seen[f"{agent}/{sid}"] = f"error {type(exc).__name__}"
            continue
        texts = [] if session is None else [str(m.get("content")) for m in session.messages]
        seen[f"{agent}/{sid}"] = digest("\x00".join(texts))
    return {"documents": shared, "sessions": seen}
