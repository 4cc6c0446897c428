"""The ``--dream`` mode of the torture run: SIGKILL inside ``dream()`` and ``dream undo``.

Every round works on a fresh agent holding a few hundred observations (many of them
duplicates, so the offline dream merges a lot) and expired state entries (so it prunes
state.md too). A *dream* round kills a process running ``dream()``; an *undo* round first
dreams to the end, then kills a process running ``undo_last_dream()``. Four kills in five
come a little after one of the child's writes (documents or history; half of them after its
last one, where the commits follow), so that most land inside the apply or the undo; the rest
at a random moment of the whole call.

After each kill the agent is opened again (that is when a crash is recovered) and checked:
the layer documents equal the pre-dream or the post-dream texts exactly, the history says
which (a run ``applied`` iff the documents hold it, ``undone`` or no applied run iff they hold
the pre-dream texts), no run is left half-way, and undoing a recorded dream restores the
pre-dream texts exactly.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import select
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial, wraps
from typing import Any

from benchmarks._torture_ops import Home, Pipe, new_agent_id
from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.dream import DreamRun, dream, undo_last_dream
from markus_memory.dream.cycle import audit_log
from markus_memory.layers.knowledge import Observation
from markus_memory.memory import AgentMemory

LAYERS = ("knowledge.md", "state.md")
FINAL = ("applied", "failed", "undone", "unchanged")
Texts = tuple[str | None, str | None]


def seed(home: Home, agent: str, observations: int, rng: random.Random) -> None:
    """Observations in groups of near-copies, three expired state entries and a fresh one."""
    settings = home.settings()
    month_ago = settings.clock() - timedelta(days=30)
    old = Settings(
        home=settings.home,
        database_url=settings.database_url,
        limits=settings.limits,
        clock=lambda: month_ago,
    )
    with open_agent(agent, settings=old) as mem:
        for key in ("build", "deploy", "oncall"):
            mem.state.update(key, f"old {key} state {rng.getrandbits(32):08x}")
    with home.open(agent) as mem:
        mem.state.update("focus", "the current task")
        mem.notebook.upsert("owner", "the torture run")
        start = settings.clock() - timedelta(hours=1)
        mem.knowledge.add_observations(
            Observation(
                f"obs_{i:05d}",
                "fact",
                f"fact number {i % (observations // 4 or 1)} about the deploy pipeline"
                + ("" if i % 3 else " (again)"),
                start + timedelta(seconds=i),
                ("torture",),
            )
            for i in range(observations)
        )


def _seed_child(home: Home, agent: str, observations: int, seed_value: int, pipe: Pipe) -> None:
    seed(home, agent, observations, random.Random(seed_value))


def texts(mem: AgentMemory) -> dict[str, str]:
    """Every document's exact stored text."""
    return mem.documents.dump()


def layer_texts(docs: dict[str, str]) -> Texts:
    return docs.get(LAYERS[0]), docs.get(LAYERS[1])


# -- the child: announce each write and the end -------------------------------------------

_WRITERS = {
    "markus_memory._fs_docs.FileDocuments": ("write", "delete"),
    "markus_memory.storage._postgres.documents.PostgresDocuments": ("write", "delete", "lock"),
    "markus_memory.storage._sqlite.conn.SqliteDatabase": ("write",),
    "markus_memory.storage._postgres.conn.PostgresDatabase": ("write",),
}


def _announce_writes(pipe: Pipe) -> None:
    """Make every document write and database write transaction of this (child) process say
    ``write`` on the pipe first: the kill that follows it lands inside the apply or undo."""
    for dotted, methods in _WRITERS.items():
        module, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        for method in methods:
            original = getattr(cls, method)
            context = method == "lock" or name.endswith("Database")
            wrap = _announced_cm if context else _announced
            setattr(cls, method, wraps(original)(wrap(original, pipe)))


def _announced(original: Callable[..., Any], pipe: Pipe) -> Callable[..., Any]:
    def announced(*args: Any, **kwargs: Any) -> Any:
        pipe.say("write")
        return original(*args, **kwargs)

    return announced


def _announced_cm(
    original: Callable[..., AbstractContextManager[Any]], pipe: Pipe
) -> Callable[..., AbstractContextManager[Any]]:
    @contextmanager
    def announced(*args: Any, **kwargs: Any) -> Iterator[Any]:
        pipe.say("write")
        with original(*args, **kwargs) as value:
            yield value

    return announced


def child(home: Home, agent: str, op: str, pipe: Pipe) -> None:
    """Dream or undo once, saying ``start``, ``write`` (each write) and ``end``."""
    mem = home.open(agent)
    _announce_writes(pipe)
    pipe.say("start")
    if op == "dream":
        pipe.say("end", dream(mem).status)
    else:
        pipe.say("end", undo_last_dream(mem).ok)


# -- timing and kills -----------------------------------------------------------------------


@dataclass
class Timing:
    """What one kind of call (dream or undo) takes: running means of its time from its start
    and from its first write, and the most writes it was seen to make."""

    total: float = 0.05
    apply: float = 0.01
    writes: int = 1

    def learn(self, events: list[tuple[str, int]]) -> None:
        moments = {name: ns for name, ns in reversed(events)}
        if "end" not in moments:
            return
        if "start" in moments:
            self.total = 0.7 * self.total + 0.3 * (moments["end"] - moments["start"]) / 1e9
        if "write" in moments:
            self.apply = 0.7 * self.apply + 0.3 * (moments["end"] - moments["write"]) / 1e9
        self.writes = max(self.writes, sum(name == "write" for name, _ in events))

    def pick(self, rng: random.Random) -> tuple[str, int, float]:
        """When to kill: (``start`` or ``write``, after how many such events, then how long)."""
        if rng.random() < 0.2:
            return "start", 1, rng.uniform(0, self.total * 1.1)
        gap = self.apply / self.writes
        # Half after the last write (the commits follow it), half after any of them.
        which = self.writes if rng.random() < 0.5 else rng.randint(1, self.writes)
        return "write", which, rng.uniform(0, gap * 1.5)


def _events(data: bytes) -> list[tuple[str, int]]:
    return [(e[0], e[-1]) for e in (json.loads(line) for line in data.split(b"\n")[:-1])]


def run_child(body: Callable[[Pipe], None], fork: Callable[..., tuple[int, int]]) -> bytes:
    """Run ``body`` in a child to its end; its events."""
    pid, fd = fork(body)
    data = b""
    while chunk := os.read(fd, 1 << 16):
        data += chunk
    os.close(fd)
    os.waitpid(pid, 0)
    return data


def kill_child(
    body: Callable[[Pipe], None],
    fork: Callable[..., tuple[int, int]],
    rng: random.Random,
    timing: Timing,
) -> str:
    """Run ``body`` in a child and SIGKILL it: mostly a little after one of its writes (any
    of them, so that kills land all along the apply or undo), else at a random moment of the
    whole call. Where the kill landed: ``before`` (its first write), ``inside`` (after it,
    before the end) or ``after``; what the child said teaches ``timing``."""
    pid, fd = fork(body)
    data = b""
    event, count, delay = timing.pick(rng)
    deadline: float | None = None
    while True:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        data += chunk
        names = [name for name, _ in _events(data)]
        if deadline is None and names.count(event) >= count:
            deadline = time.monotonic() + delay
        if "end" in names:
            break
    os.kill(pid, signal.SIGKILL)
    while chunk := os.read(fd, 1 << 16):
        data += chunk
    os.close(fd)
    os.waitpid(pid, 0)
    events = _events(data)
    timing.learn(events)
    names = [name for name, _ in events]
    if "end" in names:
        return "after"
    return "inside" if "write" in names else "before"


# -- the check -------------------------------------------------------------------------------


@dataclass
class DreamTally:
    kills: int = 0
    landed: dict[str, int] = field(default_factory=dict)
    consistent: int = 0
    inconsistent: list[str] = field(default_factory=list)
    kinds: dict[str, int] = field(default_factory=dict)
    undone_after_check: int = 0

    def count(self, op: str, where: str) -> None:
        key = f"{op} {where}"
        self.landed[key] = self.landed.get(key, 0) + 1


def _undo_restores(mem: AgentMemory, pre: Texts, problems: list[str]) -> bool:
    result = undo_last_dream(mem)
    after = layer_texts(texts(mem))
    if not result.ok:
        problems.append(f"undo of the recorded dream refused: {result.reason}")
    elif after != pre:
        problems.append("undo of the recorded dream did not restore the pre-dream texts")
    else:
        return True
    return False


def check(home: Home, agent: str, pre_docs: dict[str, str], run: DreamRun | None) -> list[str]:
    """The problems after a kill (none: consistent). ``run``: the dream an undo round undid."""
    problems: list[str] = []
    with home.open(agent) as mem:  # opening recovers a dream or an undo a kill interrupted
        docs = texts(mem)
        runs = audit_log(mem).runs(agent)
        half = [f"{r.run_id} {r.status}" for r in runs if r.status not in FINAL]
        if half:
            problems.append(f"runs left half-way: {half}")
        others = {n: t for n, t in docs.items() if n not in LAYERS}
        if others != {n: t for n, t in pre_docs.items() if n not in LAYERS}:
            problems.append("a document the dream never writes changed")
        now, pre = layer_texts(docs), layer_texts(pre_docs)
        applied = [r for r in runs if r.status == "applied"]
        if now == pre:
            if applied:
                problems.append(f"pre-dream texts, yet {applied[0].run_id} reads applied")
            if run is not None and not any(r.status == "undone" for r in runs):
                problems.append(f"pre-dream texts, yet {run.run_id} is not recorded undone")
            return problems
        if len(applied) != 1:
            problems.append(f"the documents changed, {len(applied)} applied runs recorded")
            return problems
        last = applied[0]
        if (last.knowledge_before, last.state_before) != pre:
            problems.append(f"{last.run_id}: recorded pre-dream texts are not the real ones")
        if (last.knowledge_after, last.state_after) != now:
            same = [now[0] == last.knowledge_after, now[1] == last.state_after]
            problems.append(
                f"{last.run_id} applied, but the documents are not its post texts "
                f"(equal: knowledge.md {same[0]}, state.md {same[1]})"
            )
            return problems
        _undo_restores(mem, pre, problems)
    return problems


KINDS = (
    ("the documents changed, 0", "dream", "documents hold the dream, no run applied"),
    ("the documents changed, 0", "undo", "documents hold the dream, run undone"),
    ("pre-dream texts, yet", "", "pre-dream documents, run applied"),
    ("applied, but the documents", "", "documents not the run's post texts (half-way)"),
    ("runs left half-way", "", "run left applying or undoing"),
    ("undo of the recorded dream", "", "undo of the recorded dream fails"),
)


def _kind(op: str, problem: str) -> str:
    """A short name for the first problem found after a kill (the tally counts them)."""
    for needle, which, name in KINDS:
        if needle in problem and which in ("", op):
            return name
    return problem[:60]


def campaign(
    home: Home,
    kills: int,
    rng: random.Random,
    fork: Callable[..., tuple[int, int]],
    observations: int,
) -> DreamTally:
    """Dream and undo rounds (about 3 to 2) until ``kills`` children were killed."""
    tally, timing = DreamTally(), {"dream": Timing(), "undo": Timing(apply=0.005)}
    while tally.kills < kills:
        op = "undo" if rng.random() < 0.4 else "dream"
        agent = new_agent_id(f"dreamer_{op}")
        seed_rng = rng.getrandbits(32)
        run_child(partial(_seed_child, home, agent, observations, seed_rng), fork)
        run: DreamRun | None = None
        with home.open(agent) as mem:
            pre_docs = texts(mem)
        if op == "undo":
            timing["dream"].learn(_events(run_child(partial(child, home, agent, "dream"), fork)))
            with home.open(agent) as mem:
                runs = [r for r in audit_log(mem).runs(agent) if r.status == "applied"]
            if not runs:
                tally.inconsistent.append(f"{agent}: the setup dream applied nothing")
                continue
            run = runs[0]
        where = kill_child(partial(child, home, agent, op), fork, rng, timing[op])
        tally.kills += 1
        tally.count(op, where)
        problems = check(home, agent, pre_docs, run)
        if problems:
            tally.inconsistent.append(f"{op} kill {where} ({agent}): {'; '.join(problems)}")
            kind = _kind(op, problems[0])
            tally.kinds[kind] = tally.kinds.get(kind, 0) + 1
        else:
            tally.consistent += 1
    return tally
