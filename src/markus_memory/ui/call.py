"""What every page handler is given: the server's shared parts (:class:`UI`) and one request to
an agent's page (:class:`Call`). Below the page modules, which :mod:`.app` routes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..config import Settings
from ..memory import AgentMemory
from .pool import AgentPool
from .web import Form, Templates

TABS = (
    ("notebook", "Notebook"),
    ("knowledge", "Knowledge"),
    ("state", "State"),
    ("conversations", "Conversations"),
    ("activities", "Activities"),
    ("dreams", "Dreams"),
)


@dataclass
class UI:
    """What the handlers share: settings, the agent pool, templates, the token."""

    settings: Settings
    pool: AgentPool
    templates: Templates
    token: str | None


@dataclass
class Call:
    """One request to an agent's page: the held memory handle and the submitted form."""

    request: Request
    memory: AgentMemory
    form: Form
    ui: UI
    tab: str
    params: Form = field(default_factory=lambda: Form(()))

    @property
    def limits(self) -> Any:
        return self.memory.settings.limits

    def now(self) -> Any:
        return self.memory.settings.clock()

    def query(self, name: str, default: str = "") -> str:
        return self.params.get(name, default)

    def page(self, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
        return self.ui.templates.page(
            self.request,
            template,
            {
                "agent": self.memory.agent_id,
                "agents": self.ui.pool.ids(),
                "tab": self.tab,
                "tabs": TABS,
                "notice": self.query("done"),
                "now": self.now(),
                "limits": self.limits,
                **context,
            },
            status=status,
        )

    def done(self, path: str, message: str, **params: str) -> RedirectResponse:
        """Post/redirect/get back to ``path`` of this agent with ``message`` shown once."""
        query = urlencode({"done": message, **params})
        url = f"/agents/{quote(self.memory.agent_id)}/{path}?{query}"
        return RedirectResponse(url, status_code=303)


Handler = Callable[[Call], Response]
