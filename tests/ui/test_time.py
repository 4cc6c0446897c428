"""The UI's searches ask in the present: "yesterday" is read against the agent's clock."""

from __future__ import annotations

from datetime import timedelta

import httpx

from markus_memory import open_agent

from .conftest import Running
from .seed import settings_for

ROLLED_BACK = "billing deploy rolled back"
GREEN = "billing deploy finished, billing deploy green"
QUESTION = "what happened yesterday with the billing deploy?"


def _seed(ui: Running) -> None:
    now = ui.clock.now
    with open_agent("carol", settings=settings_for(ui.home, ui.clock)) as mem:
        for days, text in ((3, GREEN), (1, ROLLED_BACK)):
            ui.clock.now = now - timedelta(days=days)
            mem.knowledge.save_observation(text)
            mem.sessions.get_or_create(f"chat_{days}")
            mem.sessions.append(f"chat_{days}", {"role": "user", "content": text})
        mem.catch_up_transcripts()
    ui.clock.now = now


def _first(page: str) -> str:
    at = {text: page.find(text) for text in (ROLLED_BACK, GREEN)}
    assert all(place >= 0 for place in at.values()), at
    return min(at, key=at.__getitem__)


def test_every_search_page_reads_yesterday_against_the_agents_clock(ui: Running) -> None:
    _seed(ui)
    for path in ("/agents/carol/knowledge", "/agents/carol/conversations", "/search"):
        page = httpx.get(ui.url + path, params={"q": QUESTION})
        assert page.status_code == 200, path
        assert _first(page.text) == ROLLED_BACK, path
    plain = httpx.get(ui.url + "/agents/carol/knowledge", params={"q": "billing deploy"})
    assert _first(plain.text) == GREEN, "without a time the better match is first"
