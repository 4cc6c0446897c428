"""Shared helpers for the session tests: a settable clock and a store factory."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.layers.sessions import OnAppend, SessionStore
from markus_memory.layers.sessions._parsed import ParsedSessions

AGENT = "agt_0123456789abcdef01234567"


class StepClock:
    """A clock that moves one second forward on every reading."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2024, 6, 10, 6, 0, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def make_store(
    root: Path,
    *,
    limits: Limits | None = None,
    clock: StepClock | None = None,
    on_append: OnAppend | None = None,
    checkpoint_min_bytes: int = 1 << 20,
    agent: str = AGENT,
    parsed: ParsedSessions | None = None,
) -> SessionStore:
    paths = AgentPaths(root / agent)
    return SessionStore(
        paths,
        AgentLock(paths.lock),
        limits or Limits(),
        clock or StepClock(),
        agent_id=agent,
        on_append=on_append,
        checkpoint_min_bytes=checkpoint_min_bytes,
        parsed=parsed,
    )


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, object]:
    return {"role": "assistant", "content": text}
