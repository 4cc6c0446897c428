from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory._fs import AgentLock
from markus_memory.config import AgentPaths, Limits

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 7, 1, 12, 0, 0, tzinfo=timezone.utc))


@pytest.fixture
def paths(tmp_path: Path) -> AgentPaths:
    root = tmp_path / "agents" / "agt_test"
    root.mkdir(parents=True)
    return AgentPaths(root)


@pytest.fixture
def lock(paths: AgentPaths) -> AgentLock:
    return AgentLock(paths.lock, timeout=10)


@pytest.fixture
def limits() -> Limits:
    return Limits()
