"""Deleting an agent from the UI: a confirmation page that offers an export first, the export,
and the delete (both POST forms through the UI's form reader and guard)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from .._fs import checked_agent_id
from ..agents import delete_agent, roster
from ..config import Settings
from ..errors import InvalidInputError
from ..transfer import export_agent
from .web import PageError, read_form

if TYPE_CHECKING:
    from .call import UI

Endpoint = Callable[[Request], Awaitable[Response]]


def _agent(ui: UI, request: Request) -> str:
    """The path's agent, if the memory has it (404 otherwise)."""
    agent = request.path_params["agent"]
    try:
        checked_agent_id(agent)
    except InvalidInputError as exc:
        raise PageError(404, "No such agent", str(exc)) from None
    if agent not in ui.pool.ids():
        raise PageError(404, "No such agent", f"there is no agent {agent!r} to delete.")
    return str(agent)


def export_folder(settings: Settings, agent: str) -> Path:
    """Where the UI puts an agent's copy: ``<home>/exports/<agent>-<UTC time>``."""
    stamp = settings.clock().strftime("%Y%m%dT%H%M%S.%fZ")
    return settings.home / "exports" / f"{agent}-{stamp}"


def confirm_page(ui: UI) -> Endpoint:
    async def page(request: Request) -> Response:
        agent = _agent(ui, request)
        found = await run_in_threadpool(roster, ui.settings)
        entry = found.get(agent)
        return ui.templates.page(
            request,
            "agent_delete.html",
            {
                "target": agent,
                "where": "" if entry is None else entry.where,
                "home": ui.settings.home,
                "database": bool(ui.settings.database_url),
                "exported": request.query_params.get("exported", ""),
                "notice": request.query_params.get("done", ""),
                "agents": found.ids(),
                "tab": "agents",
            },
        )

    return page


def export_copy(ui: UI) -> Endpoint:
    async def export(request: Request) -> Response:
        await read_form(request)
        agent = _agent(ui, request)
        folder = export_folder(ui.settings, agent)
        copy = Settings(home=folder, documents="files")
        await run_in_threadpool(export_agent, ui.settings, copy, agent)
        query = urlencode({"done": f"Exported a copy of {agent} to {folder}", "exported": folder})
        return RedirectResponse(f"/agents/{quote(agent)}/delete?{query}", status_code=303)

    return export


def delete(ui: UI) -> Endpoint:
    async def remove(request: Request) -> Response:
        form = await read_form(request)
        agent = _agent(ui, request)
        if form.get("confirm").strip() != agent:
            raise PageError(
                400,
                "Not deleted",
                f"type the agent id {agent!r} in the confirmation field to delete it; "
                "nothing was changed.",
            )

        def run() -> str:
            ui.pool.discard(agent)
            report = delete_agent(ui.settings, agent)
            return (
                f"Deleted agent {agent}: {report.files} file(s), {report.rows} activities and "
                f"transcript messages, {report.other_rows} other row(s)."
            )

        said = await run_in_threadpool(run)
        return RedirectResponse(f"/?{urlencode({'done': said})}", status_code=303)

    return remove


def routes(ui: UI) -> list[Route]:
    return [
        Route("/agents/{agent}/delete", confirm_page(ui), methods=["GET", "HEAD"]),
        Route("/agents/{agent}/delete", delete(ui), methods=["POST"]),
        Route("/agents/{agent}/export-copy", export_copy(ui), methods=["POST"]),
    ]
