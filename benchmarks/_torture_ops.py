"""The writers the torture run kills, and the check of every write they acknowledged.

A writer process announces each write before it starts (``try``) and acknowledges it once the
call has returned (``ack``), one short line per event on a pipe (a single ``os.write`` below
``PIPE_BUF``, so a kill never tears a line). A SIGKILL can land anywhere: between the two lines
the write may or may not have happened, and both outcomes are correct. After the ``ack`` it
must be there, exactly once, for good.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markus_memory import open_agent
from markus_memory.config import Limits, Settings
from markus_memory.dream.cycle import audit_log, dream
from markus_memory.errors import MarkusMemoryError
from markus_memory.memory import AgentMemory
from markus_memory.transfer import import_agent

SESSIONS = ("sess_1_torture_a", "sess_1_torture_b", "channel_group:torture_c")
SECTIONS = ("Deploy", "People", "Tools")
KEYS = ("k1", "k2", "k3")
# Small compaction bounds, so that kills also land inside compactions; no observation cap (the
# buffer keeps the newest ``max_observations`` by design, which would read as a loss here).
LIMITS = Limits(session_compact_trigger=60, session_compact_keep=20, max_observations=10**9)
SOURCE_AGENT = "seed"


@dataclass(frozen=True)
class Home:
    """Where a run writes: the home directory and, for PostgreSQL, the database URL."""

    root: Path
    url: str | None
    source: Path  # a SQLite home holding the agent that imports copy

    def settings(self) -> Settings:
        return Settings(home=self.root, database_url=self.url, limits=LIMITS)

    def open(self, agent_id: str) -> AgentMemory:
        return open_agent(agent_id, settings=self.settings())


class Pipe:
    """The writer's side of the event pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def say(self, *event: object) -> None:
        """One event, stamped with the system-wide monotonic clock (comparable across the
        processes of one machine, so concurrent writers' events can be ordered)."""
        line = json.dumps([*event, time.monotonic_ns()]) + "\n"
        os.write(self.fd, line.encode())


def _token(rng: random.Random) -> str:
    return f"t{rng.getrandbits(48):012x}"


def _padded(text: str, rng: random.Random, longest: int = 2000) -> str:
    """Mostly short texts, some long ones (bigger journals, checkpoints and disk use)."""
    return text + " " + "x" * rng.choice((0, 0, 0, 200, longest))


def writer(
    home: Home, agent: str, seed: int, pipe: Pipe, ops: tuple[str, ...], max_ops: int = 0
) -> None:
    """Run random writes of kinds ``ops`` on ``agent`` until killed (or ``max_ops`` done),
    announcing and acknowledging each; a write that raises is reported and the run goes on."""
    rng = random.Random(seed)
    mem = home.open(agent)
    dreamer = home.open(f"{agent}_dream") if "dream" in ops else None
    activity: str | None = None
    done = 0
    while not max_ops or done < max_ops:
        done += 1
        op = rng.choice(ops)
        token = _token(rng)
        key = rng.choice(SESSIONS if op == "append" else SECTIONS if op == "section" else KEYS)
        pipe.say("try", op, key, token)
        try:
            result = _write(mem, dreamer, home, op, key, token, activity, rng)
        except (OSError, MarkusMemoryError) as exc:
            pipe.say("fail", op, key, token, type(exc).__name__)
            continue
        if op == "activity":
            activity = result
        pipe.say("ack", op, key, token, result)


def _write(
    mem: AgentMemory,
    dreamer: AgentMemory | None,
    home: Home,
    op: str,
    key: str,
    token: str,
    activity: str | None,
    rng: random.Random,
) -> Any:
    if op == "obs":
        return mem.knowledge.save_observation(_padded(f"observed {token}", rng, 200)).id
    if op == "section":
        return mem.knowledge.update_section(key, f"section {token}").ok
    if op == "notebook":
        return mem.notebook.upsert(key, f"note {token}").key
    if op == "state":
        return mem.state.update(key, f"state {token}").key
    if op == "append":
        mem.sessions.get_or_create(key)
        text = _padded(f"said {token}", rng)
        return mem.sessions.append(key, {"role": "user", "content": text}).seq
    if op == "compact":
        return mem.sessions.compact(
            rng.choice(SESSIONS), keep_last=rng.randint(0, 30)
        ).flushed_count
    if op == "activity":
        if activity is None or rng.random() < 0.3:
            return mem.activities.start("task", f"activity {token}")
        mem.activities.log(activity, "note", f"logged {token}")
        return activity
    if op == "dream":
        assert dreamer is not None
        dreamer.knowledge.save_observation(f"dream fodder {token}")
        return dream(dreamer).run_id
    if op == "import":
        source = Settings(home=home.source)
        return import_agent(source, home.settings(), SOURCE_AGENT, replace=True).files
    raise ValueError(op)


ALL_OPS = (
    "obs",
    "section",
    "notebook",
    "state",
    "append",
    "append",
    "append",
    "compact",
    "activity",
    "dream",
    "import",
)


def seed_source(root: Path) -> None:
    """The agent that imports copy: a few files and a session."""
    mem = open_agent(SOURCE_AGENT, settings=Settings(home=root))
    with mem:
        mem.knowledge.save_observation("the seed agent knows one thing")
        mem.notebook.upsert("origin", "seeded for the torture run")
        mem.sessions.append(mem.sessions.create().id, {"role": "user", "content": "seed chat"})


# -- verification ----------------------------------------------------------------------------


@dataclass
class Events:
    """What the writers of one agent announced, acknowledged and saw fail."""

    tried: list[tuple[str, str, str]] = field(default_factory=list)
    acked: list[tuple[str, str, str, Any]] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)
    started: dict[tuple[str, str, str], int] = field(default_factory=dict)
    ended: dict[tuple[str, str, str], int] = field(default_factory=dict)

    def feed(self, data: bytes) -> None:
        for line in data.split(b"\n")[:-1]:  # a kill never tears a line; be safe anyway
            event = json.loads(line)
            write = (event[1], event[2], event[3])
            if event[0] == "try":
                self.tried.append(write)
                self.started[write] = event[-1]
            elif event[0] == "ack":
                self.acked.append((*write, event[4]))
                self.ended[write] = event[-1]
            else:
                self.failed.append(write)


@dataclass
class Tally:
    by_kind: Counter[str] = field(default_factory=Counter)  # acknowledged writes checked
    lost: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    ghosts: list[str] = field(default_factory=list)  # a write that raised, found stored

    @property
    def checked(self) -> int:
        return sum(self.by_kind.values())

    def merge(self, other: Tally) -> None:
        self.by_kind.update(other.by_kind)
        for name in ("lost", "torn", "duplicated", "ghosts"):
            getattr(self, name).extend(getattr(other, name))


def _guard(tally: Tally, what: str, read: Callable[[], Any]) -> Any:
    try:
        return read()
    except Exception as exc:  # a file that does not read back is torn
        tally.torn.append(f"{what}: {type(exc).__name__}: {exc}")
        return None


def verify(home: Home, agent: str, events: Events) -> Tally:
    """Every acknowledged write of ``agent`` present exactly once; every file readable."""
    tally = Tally()
    with home.open(agent) as mem:
        _verify_documents(mem, events, tally)
        _verify_sessions(mem, events, tally)
        _verify_activities(mem, events, tally)
    dream_runs = [a for a in events.acked if a[0] == "dream" and a[3]]
    if dream_runs:
        with home.open(f"{agent}_dream") as dreamer:
            history = {run.run_id for run in audit_log(dreamer).runs(dreamer.agent_id)}
            _guard(tally, "dreamer knowledge.md", dreamer.knowledge.read)
            for _, _, token, run_id in dream_runs:
                tally.by_kind["dream run"] += 1
                if run_id not in history:
                    tally.lost.append(f"dream run {run_id} ({token})")
    if any(a[0] == "import" for a in events.acked):
        tally.by_kind["import"] += 1
        with (
            home.open(SOURCE_AGENT) as copy,
            open_agent(SOURCE_AGENT, settings=Settings(home=home.source)) as source,
        ):
            if _guard(tally, "imported knowledge", copy.knowledge.text) != source.knowledge.text():
                tally.torn.append("imported agent differs from its source")
    return tally


def damaged_files(home: Home) -> list[str]:
    """Files a load set aside as damaged (none may exist: no writer may leave damage)."""
    return [f"set aside as damaged: {p.name}" for p in sorted(home.root.rglob("*.corrupt-*"))]


def _last_values(events: Events, op: str) -> dict[str, tuple[set[str], str | None]]:
    """Per key: the tokens the final value may hold, and the latest acknowledged token.

    A write ``v`` may be the final value unless an acknowledged write started after ``v``
    had returned (that one is ordered after ``v`` for sure). Writes of concurrent processes
    are ordered by their monotonic times, never by the order their events were read.
    """
    out: dict[str, tuple[set[str], str | None]] = {}
    for key in {k for o, k, _ in events.tried if o == op}:
        writes = [w for w in events.tried if w[0] == op and w[1] == key]
        acked = [w for w in writes if w in events.ended]
        if not acked:
            continue
        latest_start = max(events.started[w] for w in acked)
        allowed = {w[2] for w in writes if events.ended.get(w, 1 << 62) >= latest_start}
        last = max(acked, key=lambda w: events.ended[w])[2]
        out[key] = (allowed, last)
    return out


def _verify_documents(mem: AgentMemory, events: Events, tally: Tally) -> None:
    doc = _guard(tally, "knowledge.md", mem.knowledge.read)
    observations = [] if doc is None else [o.content for o in doc.observations]
    for op, _, token, _ in events.acked:
        if op == "obs":
            tally.by_kind["observation"] += 1
            found = sum(o.split(" ", 2)[:2] == ["observed", token] for o in observations)
            if found == 0:
                tally.lost.append(f"observation {token}")
            elif found > 1:
                tally.duplicated.append(f"observation {token} x{found}")
    for op, _, token in events.failed:
        if op == "obs" and any(o.split(" ", 2)[:2] == ["observed", token] for o in observations):
            tally.ghosts.append(f"observation {token}: the save raised, yet it is stored")
    readers: dict[str, Callable[[str], str | None]] = {
        "section": lambda key: mem.knowledge.section(key),
        "notebook": lambda key: getattr(mem.notebook.get(key), "text", None),
        "state": lambda key: getattr(mem.state.get(key), "content", None),
    }
    for op, read in readers.items():
        for key, (allowed, last) in _last_values(events, op).items():
            if last is None:
                continue
            tally.by_kind[f"{op} (last value per key)"] += 1
            value = _guard(tally, f"{op} {key}", lambda read=read, key=key: read(key)) or ""
            if not any(token in value for token in allowed):
                tally.lost.append(f"{op} {key}: last acknowledged {last}, found {value[:60]!r}")


def _verify_sessions(mem: AgentMemory, events: Events, tally: Tally) -> None:
    mem.recall_conversation("catch up")  # imports whatever the store is behind
    stored: dict[str, int] = {}
    for message in mem.store.transcripts.transcript_messages(mem.agent_id):
        said = " ".join(message.content.split(" ", 2)[:2])
        stored[said] = stored.get(said, 0) + 1
    for sid in {k for o, k, _, _ in events.acked if o == "append"}:
        _guard(tally, f"session {sid}", lambda sid=sid: mem.sessions.get(sid))
    for op, sid, token, _ in events.acked:
        if op != "append":
            continue
        tally.by_kind["session message"] += 1
        found = stored.get(f"said {token}", 0)
        if found == 0:
            tally.lost.append(f"session message {token} in {sid}")
        elif found > 1:
            tally.duplicated.append(f"session message {token} x{found}")
    for op, _, token in events.failed:
        if op == "append" and stored.get(f"said {token}", 0):
            tally.ghosts.append(f"session message {token}: append raised, yet it is stored")


def _verify_activities(mem: AgentMemory, events: Events, tally: Tally) -> None:
    for op, _, token, activity_id in events.acked:
        if op != "activity":
            continue
        tally.by_kind["activity write"] += 1
        detail = _guard(
            tally, f"activity {activity_id}", lambda a=activity_id: mem.activities.get(a)
        )
        if detail is None:
            tally.lost.append(f"activity {activity_id}")
            continue
        found = (detail.activity.label == f"activity {token}") + sum(
            entry.content == f"logged {token}" for entry in detail.logs
        )
        if found == 0:
            tally.lost.append(f"activity write {token}")
        elif found > 1:
            tally.duplicated.append(f"activity write {token} x{found}")


def new_agent_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(3)}"
