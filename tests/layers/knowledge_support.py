"""Helpers shared by the knowledge.md tests (a module, not a conftest, to keep merges simple)."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone
from pathlib import Path

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Clock, Limits
from markus_memory.layers.knowledge import KnowledgeFile


class StepClock:
    """A clock that moves one second on every call: deterministic, strictly increasing."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def make_knowledge(root: Path, clock: Clock | None = None, **limits: int) -> KnowledgeFile:
    return KnowledgeFile(
        AgentPaths(root),
        AgentLock(root / ".lock", timeout=10),
        dataclasses.replace(Limits(), **limits),
        clock or StepClock(),
    )
