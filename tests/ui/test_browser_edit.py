"""Issue 28, the UI's gaps, in a real Chromium: add and edit an observation (type, tags),
edit a state entry and how long it lives, delete a session (its text gone from recall), and
search every agent from the header. Each write is checked in the files through the layers."""

from __future__ import annotations

from datetime import timedelta, timezone
from typing import Any

import httpx
import pytest

from markus_memory import open_agent
from markus_memory.config import Limits

from .conftest import FormClient, Running, Watched
from .seed import settings_for
from .test_browser import shot, text_of

pytestmark = pytest.mark.slow


def memory(ui: Running, agent: str = "alice") -> Any:
    return open_agent(agent, settings=settings_for(ui.home, ui.clock))


def test_add_and_edit_an_observation(watched: Watched, ui: Running) -> None:
    page = watched.page
    watched.goto("/agents/alice/knowledge")
    page.locator("summary", has_text="Add an observation").click()
    page.fill("#new-obs", "Carts older than 30 days are archived nightly.")
    page.select_option("#new-obs-type", "insight")
    page.fill("#new-obs-tags", "checkout, ops ,, checkout")
    page.get_by_role("button", name="Add observation").click()
    assert "added obs_" in text_of(page, ".notice")
    with memory(ui) as mem:
        added = mem.knowledge.observations()[-1]
    assert (added.content, added.type, added.tags) == (
        "Carts older than 30 days are archived nightly.",
        "insight",
        ("checkout", "ops"),
    )
    ui.clock.advance(hours=1)
    watched.goto("/agents/alice/knowledge?tag=search")
    target = page.locator(".timeline li", has_text="materialised view refreshed every minute")
    target.get_by_role("link", name="edit").click()
    assert text_of(page, "h1").startswith("Observation")
    shot(page, "observation-edit")
    page.fill("#obs-content", "Facet counts come from a materialised view, refreshed each minute.")
    page.select_option("#obs-type", "fact")
    page.fill("#obs-tags", "search, db")
    page.get_by_role("button", name="Save").click()
    assert "saved obs_" in text_of(page, ".notice")
    with memory(ui) as mem:
        observations = mem.knowledge.observations()
    edited = observations[-1]
    assert (edited.content, edited.type, edited.tags, edited.timestamp) == (
        "Facet counts come from a materialised view, refreshed each minute.",
        "fact",
        ("search", "db"),
        ui.clock(),
    )
    assert not any("refreshed every minute" in o.content for o in observations)
    assert len({o.id for o in observations}) == len(observations)
    watched.assert_clean()


def test_an_observation_edited_meanwhile_is_not_overwritten(ui: Running) -> None:
    with memory(ui) as mem:
        obs = mem.knowledge.observations()[0]
    with FormClient(base_url=ui.url) as client:
        page = client.get(f"/agents/alice/knowledge/observations/{obs.id}").text
        seen = page.split('name="fingerprint" value="')[1].split('"')[0]
        with memory(ui) as mem:
            mem.knowledge.replace_observations(
                [obs.id],
                obs.__class__(obs.id, obs.type, "Changed by hand.", obs.timestamp, obs.tags),
            )
        before = ui.agent_file("knowledge.md").read_bytes()
        answer = client.send_form(
            f"/agents/alice/knowledge/observations/{obs.id}/edit",
            {"content": "the page's stale edit", "type": "fact", "fingerprint": seen},
        )
        missing = client.get("/agents/alice/knowledge/observations/obs_nope")
        bad_type = client.send_form(
            f"/agents/alice/knowledge/observations/{obs.id}/edit",
            {"content": "x", "type": "gossip", "fingerprint": seen},
        )
    assert answer.status_code == 409 and "nothing was written" in answer.text
    assert missing.status_code == 404 and bad_type.status_code == 400
    assert ui.agent_file("knowledge.md").read_bytes() == before


def test_edit_a_state_entry_and_how_long_it_lives(watched: Watched, ui: Running) -> None:
    ttl = Limits().state_ttl_days
    today = ui.clock().astimezone(timezone.utc).date()
    page = watched.page
    watched.goto("/agents/alice/state")
    entry = page.locator("article.entry", has=page.locator("h2", has_text="deploy"))
    entry.locator("textarea").fill("checkout_v2 at 50 % of traffic.\r\nerror rate 0.1 %.")
    entry.locator("input[name=days]").fill("3")
    entry.get_by_role("button", name="Save").click()
    assert "saved 'deploy'" in text_of(page, ".notice")
    with memory(ui) as mem:
        deploy = mem.state.get("deploy")
    assert deploy is not None
    assert deploy.content == "checkout_v2 at 50 % of traffic.\nerror rate 0.1 %."
    assert deploy.updated == today - timedelta(days=ttl - 3)
    entry = page.locator("article.entry", has=page.locator("h2", has_text="deploy"))
    assert "expires in 2 d" in entry.locator("header").inner_text()  # 3 days from midnight
    entry = page.locator("article.entry", has=page.locator("h2", has_text="on-call"))
    entry.locator("input[name=never]").check()
    entry.get_by_role("button", name="Save").click()
    page.fill("#new-state-key", "freeze")
    page.fill("#new-state-text", "No deploys from Dec 20 to Jan 5.")
    page.get_by_role("button", name="Add", exact=True).click()
    assert "saved 'freeze'" in text_of(page, ".notice")
    with memory(ui) as mem:
        on_call, freeze = mem.state.get("on-call"), mem.state.get("freeze")
        assert on_call is not None and on_call.updated is None  # never expires
        assert freeze is not None and freeze.updated == today
        assert mem.state.prune() == []
        ui.clock.advance(days=3)
        assert mem.state.prune() == ["deploy"]  # gone after the 3 days it was given
    path = ui.agent_file("state.md")
    before = path.read_bytes()
    watched.goto("/agents/alice/state")
    entry = page.locator("article.entry", has=page.locator("h2", has_text="on-call"))
    entry.get_by_role("button", name="Save").click()  # nothing changed: nothing written
    assert "unchanged" in text_of(page, ".notice")
    assert path.read_bytes() == before
    entry = page.locator("article.entry", has=page.locator("h2", has_text="freeze"))
    entry.get_by_role("button", name="Remove").click()
    assert "removed 'freeze'" in text_of(page, ".notice")
    with memory(ui) as mem:
        assert mem.state.get("freeze") is None
    watched.assert_clean()


def test_state_refusals(ui: Running) -> None:
    path = ui.agent_file("state.md")
    with FormClient(base_url=ui.url) as client:
        page = client.get("/agents/alice/state").text
        seen = page.split('name="fingerprint" value="')[1].split('"')[0]
        too_long = client.send_form(
            "/agents/alice/state/save",
            {"key": "deploy", "content": "x", "days": "8", "fingerprint": seen},
        )
        with memory(ui) as mem:
            mem.state.update("deploy", "changed by the agent meanwhile")
        before = path.read_bytes()
        stale = client.send_form(
            "/agents/alice/state/save",
            {"key": "deploy", "content": "the page's edit", "days": "5", "fingerprint": seen},
        )
    assert too_long.status_code == 400 and "at most 7 days" in too_long.text
    assert stale.status_code == 409 and "nothing was written" in stale.text
    assert path.read_bytes() == before


def test_delete_a_session_and_its_text_from_recall(watched: Watched, ui: Running) -> None:
    with memory(ui) as mem:
        (session,) = [
            s.id
            for s in mem.sessions.list()
            if "rollback"
            in " ".join(str(m.get("content")) for m in mem.sessions.get(s.id).messages)
        ]
        assert mem.recall_conversation("purge the cart cache")[0].session_id == session
    page = watched.page
    watched.goto(f"/agents/alice/conversations/{session}")
    page.locator("input[name=confirm]").check()
    page.get_by_role("button", name="Delete session").click()
    assert f"deleted session {session}" in text_of(page, ".notice")
    assert session not in page.locator("table").inner_text()
    watched.goto("/agents/alice/conversations?q=purge+the+cart+cache")
    assert session not in page.locator("main").inner_text()
    with memory(ui) as mem:
        assert all(h.session_id != session for h in mem.recall_conversation("rollback cart"))
        assert mem.sessions.get(session) is None
    gone = httpx.get(f"{ui.url}/agents/alice/conversations/{session}")
    assert gone.status_code == 404
    watched.assert_clean()


def test_search_every_agent_from_the_header(watched: Watched, ui: Running) -> None:
    page = watched.page
    watched.goto("/agents/alice/notebook")
    page.fill("#everywhere", "Ana")
    page.press("#everywhere", "Enter")
    page.wait_for_url("**/search?q=Ana")
    assert text_of(page, "h1") == "Search every agent"
    sections = page.locator("section.agent-hits")
    assert [s.split("\n")[0] for s in sections.locator("h2").all_inner_texts()] == [
        "alice",
        "bob",
    ]
    alice, bob = sections.nth(0), sections.nth(1)
    assert "Ana" in alice.locator(".timeline").inner_text()
    assert alice.locator("article.hit").count() >= 1  # from the conversations
    link = alice.locator("article.hit header a").first.get_attribute("href")
    assert link is not None and link.startswith("/agents/alice/conversations/chat_")
    assert "Refunds over 500 EUR need Ana." in bob.inner_text()
    assert page.title() == "“Ana” in every agent · Search · markus-memory"
    shot(page, "search")
    watched.goto("/search?q=zzqxv")
    assert "Nothing found in any agent." in text_of(page, "main")
    watched.assert_clean()
