from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory.config import Limits, Settings
from markus_memory.memory import AgentMemory, open_agent
from tests.clocks import FakeClock

START = datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


def open_mem(home: Path, clock: FakeClock, **limits: int) -> AgentMemory:
    settings = Settings(home=home, limits=replace(Limits(), **limits), clock=clock)
    return open_agent("agt_dream", settings=settings)


@pytest.fixture
def mem(tmp_path: Path, clock: FakeClock) -> Iterator[AgentMemory]:
    with open_mem(tmp_path / "home", clock) as memory:
        yield memory


def save(
    mem: AgentMemory, clock: FakeClock, *contents: str, tags: tuple[str, ...] = ()
) -> list[str]:
    ids = []
    for content in contents:
        clock.advance(seconds=1)
        ids.append(mem.knowledge.save_observation(content, tags=tags).id)
    return ids


def plan_reply(**parts: object) -> str:
    return json.dumps(parts)


def files(mem: AgentMemory) -> tuple[bytes | None, bytes | None]:
    paths = mem.paths
    return tuple(p.read_bytes() if p.exists() else None for p in (paths.knowledge, paths.state))  # type: ignore[return-value]
