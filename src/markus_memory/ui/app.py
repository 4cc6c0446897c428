"""The Starlette application: routes, the per-request agent handle, error pages, login."""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..config import Settings
from ..errors import InvalidInputError, MarkusMemoryError, NotFoundError
from ..http_guard import (
    ASGIApp,
    HttpGuard,
    Message,
    Receive,
    Scope,
    Send,
    check_binding,
    session_cookie_value,
)
from . import (
    pages_agent,
    pages_dreams,
    pages_history,
    pages_home,
    pages_memory,
    pages_observations,
    pages_search,
    pages_state,
)
from .call import UI, Call, Handler
from .form_tokens import FormTokens
from .pool import AgentPool
from .web import STATIC, Form, PageError, Templates, read_form, read_query

TOKEN_ENV = "MARKUS_UI_TOKEN"
DEFAULT_PORT = 8766
COOKIE = "markus_ui_session"
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        b"img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]
"""Every response: only this server's own scripts, styles and forms; never inside a frame."""


def agent_route(ui: UI, path: str, tab: str, handler: Handler, *, post: bool = False) -> Route:
    """A route under ``/agents/{agent}/`` whose ``handler`` runs in a worker thread while
    holding the agent's handle; refusals of the layers become error pages."""

    async def endpoint(request: Request) -> Response:
        params = read_query(request)
        form = await read_form(request) if post else Form(())
        agent = request.path_params["agent"]

        def run() -> Response:
            with ui.pool.use(agent) as memory:
                return handler(Call(request, memory, form, ui, tab, params))

        try:
            return await run_in_threadpool(run)
        except InvalidInputError as exc:
            raise PageError(400, "Refused", str(exc)) from None
        except NotFoundError as exc:
            raise PageError(404, "Not found", str(exc)) from None

    return Route(
        f"/agents/{{agent}}{path}", endpoint, methods=["POST"] if post else ["GET", "HEAD"]
    )


def error_page(ui: UI, request: Request, status: int, title: str, detail: str) -> HTMLResponse:
    return ui.templates.page(
        request, "error.html", {"status": status, "title": title, "detail": detail}, status=status
    )


def build_routes(ui: UI) -> list[BaseRoute]:
    routes: list[BaseRoute] = [
        Route("/", pages_home.agents_endpoint(ui)),
        Route("/favicon.ico", favicon),
        Route("/login", login_endpoint(ui), methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(STATIC)), name="static"),
        Route("/agents/{agent}", pages_home.agent_redirect),
        Route("/search", pages_search.search_endpoint(ui)),
        *pages_agent.routes(ui),
    ]
    modules = (pages_memory, pages_observations, pages_state, pages_history, pages_dreams)
    for module in modules:
        for path, tab, handler, post in module.ROUTES:
            routes.append(agent_route(ui, path, tab, handler, post=post))
    return routes


async def favicon(request: Request) -> Response:
    return RedirectResponse("/static/favicon.svg", status_code=301)


def login_endpoint(ui: UI) -> Callable[[Request], Any]:
    async def login(request: Request) -> Response:
        target = _safe_next(read_query(request).get("next", "/"))
        if ui.token is None:  # nothing to log in to
            return RedirectResponse(target, status_code=303)
        if request.method == "GET":
            return ui.templates.page(request, "login.html", {"next": target, "failed": False})
        form = await read_form(request)
        given = form.get("token")
        if not hmac.compare_digest(given.encode(), ui.token.encode()):
            context = {"next": target, "failed": True}
            return ui.templates.page(request, "login.html", context, status=401)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE, session_cookie_value(ui.token), httponly=True, samesite="strict"
        )
        return response

    return login


async def logout(request: Request) -> Response:
    await read_form(request)  # the form token: another page cannot log this browser out
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response


def _safe_next(target: str) -> str:
    """Only a path of this server (no ``//host``), so the login cannot redirect elsewhere."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


def create_app(settings: Settings, *, host: str = "127.0.0.1", token: str | None = None) -> ASGIApp:
    """The UI as an ASGI app behind the shared HTTP guard (the MCP HTTP server's rules)."""
    check_binding(host, token, TOKEN_ENV)
    ui = UI(settings, AgentPool(settings), Templates(token is not None), token)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        ui.pool.close()

    async def page_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        return error_page(ui, request, exc.status, exc.title, exc.detail)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            return error_page(
                ui, request, 404, "Not found", f"nothing lives at {request.url.path}."
            )
        return error_page(ui, request, exc.status_code, "Refused", str(exc.detail))

    async def memory_error(request: Request, exc: Exception) -> Response:
        return error_page(ui, request, 500, "The memory could not be read", str(exc))

    app = Starlette(
        routes=build_routes(ui),
        lifespan=lifespan,
        exception_handlers={
            PageError: page_error,
            HTTPException: http_error,
            MarkusMemoryError: memory_error,
        },
    )

    async def refuse(scope: Scope, receive: Receive, send: Send, status: int, why: str) -> None:
        request = Request(scope, receive)
        if status == 401 and request.method in ("GET", "HEAD"):
            target = quote(
                request.url.path + (f"?{request.url.query}" if request.url.query else "")
            )
            response: Response = RedirectResponse(f"/login?next={target}", status_code=303)
        else:
            title = {401: "Login needed", 403: "Refused", 421: "Wrong host"}.get(status, "Refused")
            response = error_page(ui, request, status, title, why + "; nothing was changed.")
        await response(scope, receive, send)

    return HttpGuard(
        with_security_headers(FormTokens(app)),
        host=host,
        token=token,
        cookie=COOKIE,
        open_paths=("/login", "/static/", "/favicon.ico"),
        refuse=refuse,
    )


def with_security_headers(app: ASGIApp) -> ASGIApp:
    """``app`` with :data:`SECURITY_HEADERS` added to every HTTP response."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *SECURITY_HEADERS]
            await send(message)

        await app(scope, receive, send_with_headers)

    return wrapped
