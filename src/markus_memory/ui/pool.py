"""The agents one UI process serves: every agent of the home (and of PostgreSQL when the
documents live there), each opened once and used by one request at a time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .._fs import checked_agent_id
from ..config import Settings
from ..errors import InvalidInputError
from ..memory import AgentMemory, open_agent
from ..transfer import agent_ids
from .web import PageError

LIST_TTL_SECONDS = 2.0
"""How long the list of agents is reused before the home is looked at again."""


class AgentPool:
    """Open handles by agent id; an agent that does not exist is never created (404)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._handles: dict[str, AgentMemory] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self._listed: tuple[float, list[str]] | None = None

    def ids(self) -> list[str]:
        with self._guard:
            now = time.monotonic()
            if self._listed is None or now - self._listed[0] > LIST_TTL_SECONDS:
                self._listed = (now, agent_ids(self.settings))
            return list(self._listed[1])

    def exists(self, agent_id: str) -> bool:
        return agent_id in self._handles or agent_id in self.ids()

    @contextmanager
    def use(self, agent_id: str) -> Iterator[AgentMemory]:
        """The agent's handle, held by this request alone; 404 when there is no such agent."""
        try:
            checked_agent_id(agent_id)
        except InvalidInputError as exc:
            raise PageError(404, "No such agent", str(exc)) from None
        if not self.exists(agent_id):
            raise PageError(
                404,
                "No such agent",
                f"there is no agent {agent_id!r} under {self.settings.home}.",
            )
        with self._guard:
            lock = self._locks.setdefault(agent_id, threading.Lock())
        with lock:
            memory = self._handles.get(agent_id)
            if memory is None:
                memory = open_agent(agent_id, settings=self.settings)
                self._handles[agent_id] = memory
            yield memory

    def discard(self, agent_id: str) -> None:
        """Close ``agent_id``'s handle, waiting for the request that holds it, and forget the
        list of agents (it is about to change: the agent is being deleted)."""
        with self._guard:
            lock = self._locks.setdefault(agent_id, threading.Lock())
        with lock:
            memory = self._handles.pop(agent_id, None)
            if memory is not None:
                memory.close()
        with self._guard:
            self._listed = None

    def close(self) -> None:
        with self._guard:
            handles, self._handles = self._handles, {}
        for memory in handles.values():
            memory.close()
