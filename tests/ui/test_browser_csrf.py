"""Issue 28: a page on another port of this machine cannot drive the UI. Real Chromium: a page
served from 127.0.0.1:<other port> and from localhost:<other port> auto-submits the UI's own
forms (clear the notebook, add a section, run a dream), with and without ``--token`` (logged
in first in the same browser, so the SameSite=Strict cookie rides along from the same site).
Every attempt is refused and the memory files stay byte-identical."""

from __future__ import annotations

import html
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from markus_memory import open_agent
from markus_memory.dream import dream_history
from markus_memory.ui import create_app

from ..clocks import FakeClock
from .conftest import serving
from .seed import settings_for

pytestmark = pytest.mark.slow

TOKEN = "ui-token-for-the-csrf-test-0123456789"
ATTACKS = {
    "clear": ("notebook/clear", {"scope": "all", "allow_system": "yes"}),
    "section": (
        "knowledge/section",
        {"name": "Planted", "content": "written by another page", "fingerprint": "absent"},
    ),
    "dream": ("dreams/run", {}),
    "guessed-token": ("notebook/clear", {"scope": "all", "allow_system": "yes", "csrf": "x"}),
}


def attack_page(target: str, fields: dict[str, str]) -> bytes:
    inputs = "".join(
        f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
        for k, v in fields.items()
    )
    return (
        f'<!doctype html><form id="f" method="post" action="{html.escape(target)}">{inputs}'
        "</form><script>document.getElementById('f').submit()</script>"
    ).encode()


@contextmanager
def other_server(pages: dict[str, bytes]) -> Iterator[int]:
    """A plain page server on another port of 127.0.0.1 (a dev server, a notebook)."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def snapshot(home: Path) -> dict[str, bytes]:
    return {
        p.relative_to(home).as_posix(): p.read_bytes()
        for p in sorted((home / "agents").rglob("*.md"))
    }


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_a_page_on_another_port_cannot_drive_the_ui(
    browser: Any, seeded: tuple[Path, FakeClock], token: str | None, name: str
) -> None:
    home, clock = seeded
    settings = settings_for(home, clock)
    with open_agent("alice", settings=settings) as mem:
        runs_before = len(dream_history(mem))
    before = snapshot(home)
    with serving(create_app(settings, token=token)) as url:
        ui = url.replace("127.0.0.1", name)
        pages = {
            f"/{attack}": attack_page(f"{ui}/agents/alice/{path}", fields)
            for attack, (path, fields) in ATTACKS.items()
        }
        context = browser.new_context()
        page = context.new_page()
        if token is not None:
            page.goto(f"{ui}/login?next=/agents/alice/notebook")
            page.fill("#token", token)
            page.click(".login button[type=submit]")
            assert page.url == f"{ui}/agents/alice/notebook"
            cookies = {c["name"] for c in context.cookies(ui)}
            assert "markus_ui_session" in cookies
        else:
            assert page.goto(f"{ui}/agents/alice/notebook").status == 200  # type: ignore[union-attr]
        statuses: dict[str, int] = {}
        with other_server(pages) as port:
            for attack, (path, _) in ATTACKS.items():
                target = f"{ui}/agents/alice/{path}"
                with page.expect_response(lambda r, t=target: r.url == t) as answer:
                    page.goto(f"http://{name}:{port}/{attack}")
                statuses[attack] = answer.value.status
                page.wait_for_load_state()
        context.close()
    assert statuses == dict.fromkeys(ATTACKS, 403), statuses
    assert snapshot(home) == before
    with open_agent("alice", settings=settings) as mem:
        assert len(dream_history(mem)) == runs_before
