from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory._lock import AgentLock
from markus_memory.config import AgentPaths, Limits
from markus_memory.layers.knowledge import KnowledgeFile
from tests.clocks import FakeClock

from .knowledge_support import make_knowledge

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


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


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty agent directory (the knowledge tests' home)."""
    path = tmp_path / "agent"
    path.mkdir()
    return path


@pytest.fixture
def kf(root: Path) -> KnowledgeFile:
    return make_knowledge(root)
