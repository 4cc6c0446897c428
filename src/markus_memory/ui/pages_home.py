"""The Agents page: every agent with its budgets as bars, last activity and last dream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..agents import roster
from ..backend import open_backend
from ..dream import dream_history
from ..memory import AgentMemory

if TYPE_CHECKING:
    from .call import UI


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    limit: int

    @property
    def percent(self) -> int:
        if self.limit <= 0 or self.value <= 0:
            return 0
        return min(100, max(1, round(100 * self.value / self.limit)))  # never hides a value

    @property
    def level(self) -> str:
        return "full" if self.value >= self.limit else "high" if self.percent >= 80 else "ok"


@dataclass(frozen=True)
class AgentCard:
    agent: str
    bars: tuple[Bar, ...]
    notebook: tuple[tuple[str, str], ...]  # (key, managed)
    last_activity: str | None
    last_activity_at: datetime | None
    last_dream: str | None
    last_dream_at: datetime | None
    where: str = ""
    """Where the agent is: files, database, or both (:mod:`markus_memory.agents`)."""
    warning: str | None = None
    """Where files and database disagree about it, in words."""


def agent_card(memory: AgentMemory) -> AgentCard:
    limits = memory.settings.limits
    entries = memory.notebook.entries()
    doc = memory.knowledge.read()
    curated = memory.knowledge.curated_chars()
    agent_entries = sum(1 for e in entries if e.managed == "agent")
    bars = (
        Bar("notebook slots", agent_entries, limits.notebook_max_agent_entries),
        Bar("curated knowledge (chars)", curated, limits.curated_max_chars),
        Bar("observation buffer", len(doc.observations), limits.max_observations),
    )
    activity = next(iter(memory.activities.list(limit=1)), None)
    run = next(iter(dream_history(memory, 1)), None)
    return AgentCard(
        memory.agent_id,
        bars,
        tuple((e.key, e.managed) for e in entries),
        None if activity is None else f"{activity.type}: {activity.label}",
        None if activity is None else activity.started_at,
        None if run is None else f"{run.status} ({run.mode})",
        None if run is None else run.started_at,
    )


def agents_endpoint(ui: UI) -> Callable[[Request], Awaitable[Response]]:
    async def agents(request: Request) -> Response:
        def cards() -> list[AgentCard]:
            found = roster(ui.settings)
            listed = []
            for entry in found.entries:
                where, warning = entry.where, found.warning(entry)
                if found.unexported(entry):  # opening it is refused: the warning says why
                    card = AgentCard(entry.agent_id, (), (), None, None, None, None)
                else:
                    with ui.pool.use(entry.agent_id) as memory:
                        card = agent_card(memory)
                listed.append(replace(card, where=where, warning=warning))
            return listed

        listed = await run_in_threadpool(cards)
        return ui.templates.page(
            request,
            "agents.html",
            {
                "cards": listed,
                "home": ui.settings.home,
                "database": open_backend(ui.settings).kind == "postgres",
                "now": ui.settings.clock(),
                "agents": [c.agent for c in listed],
                "tab": "agents",
                "notice": request.query_params.get("done", ""),
            },
        )

    return agents


async def agent_redirect(request: Request) -> Response:
    agent = quote(request.path_params["agent"])
    return RedirectResponse(f"/agents/{agent}/notebook", status_code=302)
