"""Deleting an agent in Chromium: Delete… on the agents page, an export first, the typed
confirmation, and the agent is gone from the page and the disk."""

from __future__ import annotations

from .conftest import Running, Watched


def test_delete_an_agent_in_the_browser_after_exporting_it(watched: Watched, ui: Running) -> None:
    page = watched.page
    watched.goto("/")
    page.locator('a[href="/agents/bob/delete"]').click()
    assert page.get_by_role("heading", name="Delete agent bob").is_visible()
    page.get_by_role("button", name="Export a copy").click()
    assert "Exported a copy of bob" in page.locator(".notice").inner_text()
    copies = list((ui.home / "exports").iterdir())
    assert len(copies) == 1 and (copies[0] / "agents" / "bob").is_dir()
    page.get_by_label("Type bob to confirm").fill("bob")
    page.get_by_role("button", name="Delete bob").click()
    assert page.url.startswith(ui.url + "/?done=")
    assert "Deleted agent bob" in page.locator(".notice").inner_text()
    assert page.locator('a[href="/agents/bob/notebook"]').count() == 0
    assert page.locator('a[href="/agents/alice/notebook"]').count() == 1
    assert not (ui.home / "agents" / "bob").exists()
    watched.assert_clean()
