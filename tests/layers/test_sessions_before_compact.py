"""SessionStore asks ``before_compact`` before a compaction drops messages from the file."""

from __future__ import annotations

from pathlib import Path

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.layers.sessions import SessionStore

from .sessions_support import AGENT, StepClock, user


class Gate:
    """A before_compact hook that records its calls and answers ``allow``."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.calls: list[tuple[str, int]] = []

    def __call__(self, session_id: str, keep_from_seq: int) -> bool:
        self.calls.append((session_id, keep_from_seq))
        return self.allow


def open_store(root: Path, gate: Gate) -> SessionStore:
    paths = AgentPaths(root / AGENT)
    limits = Limits(session_compact_trigger=6, session_compact_keep=2)
    return SessionStore(
        paths, AgentLock(paths.lock), limits, StepClock(), agent_id=AGENT, before_compact=gate
    )


def test_a_refused_compaction_keeps_every_message_and_is_retried(tmp_path: Path) -> None:
    gate = Gate(allow=False)
    store = open_store(tmp_path, gate)
    sid = store.create().id
    for i in range(8):
        store.append(sid, user(f"m{i}"))
    session = store.get(sid)
    assert session is not None and (len(session.messages), session.compacted) == (8, 0)
    assert gate.calls == [(sid, 5), (sid, 6)]  # once per append past the trigger
    gate.allow = True
    store.append(sid, user("m8"))
    session = store.get(sid)
    assert session is not None and session.compacted == 7
    assert gate.calls[-1] == (sid, 7)
    assert store.compact(sid, keep_last=1).flushed_count == 2  # summary + m7 leave
    assert gate.calls[-1] == (sid, 8)
    store.close()


def test_a_failing_hook_defers_the_compaction(tmp_path: Path) -> None:
    def broken(session_id: str, keep_from_seq: int) -> bool:
        raise OSError("store down")

    paths = AgentPaths(tmp_path / AGENT)
    limits = Limits(session_compact_trigger=3, session_compact_keep=1)
    store = SessionStore(paths, AgentLock(paths.lock), limits, StepClock(), before_compact=broken)
    sid = store.create().id
    for i in range(5):
        store.append(sid, user(f"m{i}"))
    session = store.get(sid)
    assert session is not None and (len(session.messages), session.compacted) == (5, 0)
    store.close()
