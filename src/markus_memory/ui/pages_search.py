"""Search every agent: one query through each agent's memory_search (observations and
curated knowledge) and conversation recall, hits listed per agent."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from ..errors import MarkusMemoryError
from ..search.passages import Passage, merge_hits
from .web import read_query

if TYPE_CHECKING:
    from .call import UI

KNOWLEDGE_HITS = 5
RECALL_HITS = 5
MAX_QUERY_CHARS = 500


@dataclass
class AgentHits:
    agent: str
    knowledge: list[Any] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    recalled: int = 0
    error: str | None = None

    @property
    def empty(self) -> bool:
        return not self.knowledge and not self.passages and self.error is None


def search_agent(ui: UI, agent: str, query: str) -> AgentHits:
    found = AgentHits(agent)
    with ui.pool.use(agent) as memory:
        try:
            now = memory.settings.clock()
            found.knowledge = list(memory.search(query, limit=KNOWLEDGE_HITS, now=now).hits)
            hits = memory.recall_conversation(query, limit=RECALL_HITS, neighbours=1, now=now)
        except MarkusMemoryError as exc:  # one damaged agent does not hide the others
            found.error = str(exc)
            return found
    found.recalled = len(hits)
    found.passages = merge_hits(hits)
    return found


def search_endpoint(ui: UI) -> Callable[[Request], Awaitable[Response]]:
    async def search(request: Request) -> Response:
        query = read_query(request).get("q").strip()[:MAX_QUERY_CHARS]

        def everyone() -> list[AgentHits]:
            return [search_agent(ui, agent, query) for agent in ui.pool.ids()] if query else []

        results = await run_in_threadpool(everyone)
        return ui.templates.page(
            request,
            "search.html",
            {
                "query": query,
                "results": results,
                "agents": ui.pool.ids(),
                "everywhere": query,
                "now": ui.settings.clock(),
            },
        )

    return search
