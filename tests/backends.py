"""Agents on either backend: ``open_on(backend, home)`` with one fixture that runs a test on both.

A test that asks for the ``backend`` fixture (registered in ``tests/conftest.py``) runs on
SQLite (a temporary home) and on the PostgreSQL at ``MARKUS_TEST_POSTGRES_URL`` (a private
schema).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory import AgentMemory, Settings, open_agent
from tests.postgres_support import new_agent_id

__all__ = ["Backend", "backend", "open_on"]


class Backend:
    """Where a test's agents live: ``url`` is None for SQLite."""

    def __init__(self, name: str, url: str | None) -> None:
        self.name = name
        self.url = url

    def settings(self, home: Path) -> Settings:
        return Settings(home=home, database_url=self.url, embedder="none")


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite", None)
    return Backend("postgres", request.getfixturevalue("postgres_url"))


def open_on(backend: Backend, home: Path, agent_id: str | None = None) -> AgentMemory:
    """An agent (a fresh id unless given) on ``backend`` with ``home`` as its host's home."""
    return open_agent(agent_id or new_agent_id(), settings=backend.settings(home))
