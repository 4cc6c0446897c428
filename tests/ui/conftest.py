"""A running UI (real uvicorn on a real socket) over a seeded home, and a real Chromium."""

from __future__ import annotations

import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

import uvicorn  # noqa: E402

from markus_memory.http_guard import ASGIApp, bind_socket  # noqa: E402
from markus_memory.ui import create_app  # noqa: E402

from ..clocks import FakeClock  # noqa: E402
from .seed import seed, settings_for  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class Running:
    url: str
    home: Path
    clock: FakeClock

    def agent_file(self, name: str, agent: str = "alice") -> Path:
        return self.home / "agents" / agent / name


@contextmanager
def serving(app: ASGIApp, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free port; yields the base URL."""
    sock = bind_socket(host, 0)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1000):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(20)
        sock.close()


@pytest.fixture
def seeded(tmp_path: Path) -> tuple[Path, FakeClock]:
    home = tmp_path / "home"
    return home, seed(home)


@pytest.fixture
def ui(seeded: tuple[Path, FakeClock]) -> Iterator[Running]:
    home, clock = seeded
    with serving(create_app(settings_for(home, clock))) as url:
        yield Running(url, home, clock)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one test module: Playwright's sync API holds an event loop in this thread
    while it runs, so it must be stopped before other modules' tests (anyio.run) start."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


@dataclass
class Watched:
    """A browser page whose console errors, page errors and requests are recorded."""

    page: Any
    base: str
    errors: list[str]
    requests: list[str]

    def goto(self, path: str) -> Any:
        response = self.page.goto(self.base + path)
        assert response is not None
        return response

    def assert_clean(self, *expected_statuses: int) -> None:
        """No console or page errors (but the listed refusal statuses), nothing fetched from
        anywhere but this server."""
        expected = {f"the server responded with a status of {s} " for s in expected_statuses}
        errors = [e for e in self.errors if not any(x in e for x in expected)]
        assert errors == [], errors
        foreign = [u for u in self.requests if not u.startswith(self.base + "/")]
        assert foreign == [], f"requests left {self.base}: {foreign}"


def failed(request: Any, errors: list[str]) -> None:
    """A request that failed, unless the page was left while it loaded (not an error)."""
    if request.failure != "net::ERR_ABORTED":
        errors.append(f"failed: {request.url} ({request.failure})")


@pytest.fixture
def watched(browser: Any, ui: Running) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed(r, errors))
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: d.accept())
    yield Watched(page, ui.url, errors, requests)
    context.close()


class FormClient(httpx.Client):
    """An HTTP client that behaves like one browser: it keeps the UI's cookies and sends the
    form token its pages carry with every form it posts."""

    token = ""

    def form_token(self, page: str = "/agents/alice/notebook") -> str:
        found = re.search(r'name="form_token" value="([0-9a-f]+)"', self.get(page).text)
        return "" if found is None else found.group(1)  # none: a server before issue 28

    def send_form(self, path: str, data: Any, **headers: str) -> httpx.Response:
        """POST ``data`` (a dict, or pairs for repeated names) url-encoded, with the token."""
        if not self.token:
            self.token = self.form_token()
        fields = list(data.items()) if isinstance(data, dict) else list(data)
        body = urlencode([*fields, ("form_token", self.token)], doseq=True)
        return self.post(path, content=body, headers={**FORM_TYPE, **headers})


FORM_TYPE = {"content-type": "application/x-www-form-urlencoded"}
