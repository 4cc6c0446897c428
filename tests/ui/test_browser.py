"""The UI in a real Chromium (Debian's, driven by Playwright): every page of a seeded agent,
edits that change the files exactly so, refusals, conflicts, undo; no console errors and no
request leaving 127.0.0.1. Screenshots of the main pages go to the git-ignored
``build/screenshots/``; ``MARKUS_SCREENSHOTS=docs/screenshots`` refreshes the README's copies."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from markus_memory import open_agent
from markus_memory.dream import dream_history
from markus_memory.layers.notebook import parse_notebook, render_notebook

from .conftest import Running, Watched
from .seed import NOW, settings_for

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / os.environ.get("MARKUS_SCREENSHOTS", "build/screenshots")

pytestmark = pytest.mark.slow


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def text_of(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text())


def test_every_page_of_an_agent_loads_cleanly(watched: Watched, ui: Running) -> None:
    page = watched.page
    pages = [
        ("/", "Agents", "agents"),
        ("/agents/alice/notebook", "Notebook", "notebook"),
        ("/agents/alice/knowledge", "Knowledge", "knowledge"),
        ("/agents/alice/knowledge?type=fact", "Knowledge", None),
        ("/agents/alice/knowledge?tag=db", "Knowledge", None),
        ("/agents/alice/knowledge?q=deploy+notes", "Knowledge", None),
        ("/agents/alice/state", "State", "state"),
        ("/agents/alice/conversations", "Conversations", None),
        ("/agents/alice/conversations?q=facet+count+query", "Conversations", "conversations"),
        ("/agents/alice/activities", "Activities", "activities"),
        ("/agents/alice/activities?q=latency", "Activities", None),
        ("/agents/alice/dreams", "Dreams", "dreams"),
    ]
    for path, heading, name in pages:
        response = watched.goto(path)
        assert response.status == 200, path
        assert text_of(page, "h1").startswith(heading), path
        if name:
            shot(page, name)
    # detail pages reached by following links, as a person would
    watched.goto("/agents/alice/conversations")
    page.locator("table a").first.click()
    assert page.locator(".transcript .turn").count() >= 4
    shot(page, "transcript")
    watched.goto("/agents/alice/activities")
    page.get_by_role("link", name="Investigate search latency").click()
    logs = [line.split("\n")[-1] for line in page.locator(".log li").all_inner_texts()]
    assert logs == [
        "Started: Investigate search latency",
        "plan the investigation",
        "run_sql",
        "query plan shows a seq scan on orders",
        "create_view",
        "created materialised view facet_counts",
        "p95 is 240 ms after the change.",
        "Completed",
    ]
    shot(page, "activity")
    watched.goto("/agents/alice/dreams")
    page.locator("table a").first.click()
    assert page.locator(".diff .line.del").count() > 0
    assert page.locator(".diff .line.ins").count() > 0
    shot(page, "dream-diff")
    watched.assert_clean()


def test_dark_mode_and_keyboard(browser: Any, ui: Running) -> None:
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.goto(ui.url + "/agents/alice/knowledge")
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(21, 23, 27)"
    shot(page, "knowledge-dark")
    page.goto(ui.url + "/search?q=Ana")
    shot(page, "search-dark")
    page.goto(ui.url + "/agents/alice/knowledge")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.getAttribute('href')") == "/agents/alice/notebook"
    page.locator("h1").click()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    context.close()


def test_recall_hits_show_their_neighbours_and_open_in_place(watched: Watched) -> None:
    page = watched.page
    watched.goto("/agents/alice/conversations?q=materialised+view+facet")
    first = page.locator("article.hit").first
    assert "materialised view" in first.locator(".turn.hit.best").inner_text()
    assert first.locator(".turn").count() >= 3
    shown = page.locator("article.hit .turn").all_inner_texts()
    assert len(shown) == len(set(shown))  # overlapping windows merged: every turn once
    first.locator("header a").click()
    assert "#m-" in page.url
    highlighted = page.locator(".transcript .turn.hit")
    assert highlighted.count() == 1 and "materialised view" in highlighted.inner_text()
    assert page.locator(".transcript .turn.near").count() >= 2
    watched.assert_clean()


def test_editing_a_notebook_entry_changes_the_file_exactly_so(
    watched: Watched, ui: Running
) -> None:
    path = ui.agent_file("NOTEBOOK.md")
    before = path.read_text()
    new_text = "Write Ana's weekly summary.\n\n- search p95 back to 240 ms\n- checkout at 25 %"
    page = watched.page
    watched.goto("/agents/alice/notebook")
    entry = page.locator("article.entry", has=page.locator("h2", has_text="current-task"))
    entry.locator("textarea").fill(new_text)
    entry.get_by_role("button", name="Save").click()
    assert "saved 'current-task'" in text_of(page, ".notice")
    doc = parse_notebook(before, NOW)
    expected = replace(
        doc,
        entries=tuple(
            replace(e, text=new_text, updated_at=NOW) if e.key == "current-task" else e
            for e in doc.entries
        ),
    )
    assert path.read_text() == render_notebook(expected)
    watched.assert_clean()


def test_a_system_entry_is_guarded(watched: Watched, ui: Running) -> None:
    path = ui.agent_file("NOTEBOOK.md")
    before = path.read_text()
    page = watched.page
    watched.goto("/agents/alice/notebook")
    entry = page.locator("article.entry", has=page.locator("h2", has_text="relevant-context"))
    entry.locator("textarea").fill("overwritten by a person")
    entry.get_by_role("button", name="Save").click()
    assert "managed by the system" in text_of(page, ".refusal")
    assert path.read_text() == before
    watched.assert_clean(403)


def test_editing_a_section_changes_only_that_section(watched: Watched, ui: Running) -> None:
    path = ui.agent_file("knowledge.md")
    before = path.read_text()
    old = "- Priya reviews every database migration before it ships."
    new = "- Priya reviews every database migration on Tuesdays and Thursdays."
    page = watched.page
    watched.goto("/agents/alice/knowledge")
    section = page.locator("details.section", has=page.locator("summary", has_text="People"))
    section.locator("summary").click()
    area = section.locator("textarea")
    area.fill(area.input_value().replace(old, new))
    section.get_by_role("button", name="Save section").click()
    assert "saved section 'People'" in text_of(page, ".notice")
    assert before.count(old) == 1
    assert path.read_text() == before.replace(old, new)
    watched.assert_clean()


def test_a_cap_refusal_is_shown_with_its_reason_and_sizes(watched: Watched, ui: Running) -> None:
    path = ui.agent_file("knowledge.md")
    before = path.read_text()
    page = watched.page
    watched.goto("/agents/alice/knowledge")
    section = page.locator("details.section", has=page.locator("summary", has_text="Procedures"))
    section.locator("summary").click()
    section.locator("textarea").fill("x" * 3200)
    section.get_by_role("button", name="Save section").click()
    refusal = text_of(page, ".refusal")
    assert "over its limit of 3000" in refusal and "nothing was written" in refusal
    assert "3,200 / 3,000 chars" in refusal
    assert page.locator("details[open] textarea").input_value() == "x" * 3200  # text kept
    shot(page, "refusal")
    assert path.read_text() == before
    watched.assert_clean(422)


def test_a_hand_edit_made_while_the_page_is_open_is_never_overwritten(
    watched: Watched, ui: Running
) -> None:
    page = watched.page
    watched.goto("/agents/alice/notebook")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        mem.notebook.upsert("current-task", "Changed by hand while the page was open.")
    path = ui.agent_file("NOTEBOOK.md")
    by_hand = path.read_text()
    entry = page.locator("article.entry", has=page.locator("h2", has_text="current-task"))
    entry.locator("textarea").fill("The page's stale edit.")
    entry.get_by_role("button", name="Save").click()
    assert text_of(page, "h1") == "Changed meanwhile"
    compare = page.locator(".compare").inner_text()
    assert "Changed by hand while the page was open." in compare
    assert "The page's stale edit." in compare
    assert path.read_text() == by_hand
    shot(page, "conflict")
    watched.assert_clean(409)


def test_merging_and_deleting_observations(watched: Watched, ui: Running) -> None:
    page = watched.page
    watched.goto("/agents/alice/knowledge?tag=search")
    boxes = page.locator(".timeline input[type=checkbox]")
    assert boxes.count() == 2
    boxes.nth(0).check()
    boxes.nth(1).check()
    page.locator("#merge-content").fill("Search facet counts come from a materialised view.")
    page.get_by_role("button", name="Merge").click()
    assert "merged 2 observations" in text_of(page, ".notice")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        tagged = mem.knowledge.observations_by_tag("search")
    assert [o.content for o in tagged] == ["Search facet counts come from a materialised view."]
    watched.goto("/agents/alice/knowledge?tag=search")
    page.locator(".timeline input[type=checkbox]").first.check()
    page.get_by_role("button", name="Delete").click()
    assert "deleted 1 observations" in text_of(page, ".notice")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        assert mem.knowledge.observations_by_tag("search") == []
    watched.assert_clean()


def test_undo_a_dream_and_undo_refused_after_a_change(watched: Watched, ui: Running) -> None:
    page = watched.page
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        run = dream_history(mem)[0]
    assert run.status == "applied"
    knowledge = ui.agent_file("knowledge.md")
    assert knowledge.read_text() == run.knowledge_after
    watched.goto("/agents/alice/dreams")
    page.get_by_role("button", name="Undo the last dream").click()
    assert f"undid dream {run.run_id}" in text_of(page, ".notice")
    assert knowledge.read_text() == run.knowledge_before
    # a new dream, then a change by hand: undo must keep the change
    page.get_by_role("button", name="Dream now (offline)").click()
    assert "applied" in text_of(page, ".notice")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        mem.knowledge.save_observation("saved after the dream", "fact")
    changed = knowledge.read_text()
    page.get_by_role("button", name="Undo the last dream").click()
    assert "knowledge.md changed since dream" in text_of(page, ".refusal")
    assert knowledge.read_text() == changed
    watched.assert_clean(409)


def test_a_dry_run_preview_writes_nothing(watched: Watched, ui: Running) -> None:
    knowledge = ui.agent_file("knowledge.md")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        mem.knowledge.save_observation("Tomás wants deploy notes in #releases, not DMs.", "fact")
        mem.knowledge.save_observation("Tomás wants deploy notes in #releases, not in DMs!", "fact")
    before = knowledge.read_text()
    page = watched.page
    watched.goto("/agents/alice/dreams")
    page.get_by_role("button", name="Preview a dream (dry run)").click()
    assert text_of(page, "h1").startswith("Dream preview")
    assert page.locator(".diff .line.del").count() > 0
    shot(page, "dream-preview")
    assert knowledge.read_text() == before
    watched.assert_clean()


def test_an_unknown_agent_is_a_404_page(watched: Watched, ui: Running) -> None:
    response = watched.goto("/agents/nobody/knowledge")
    assert response.status == 404
    assert "no agent 'nobody'" in text_of(watched.page, ".refusal")
    assert not (ui.home / "agents" / "nobody").exists()
    watched.assert_clean(404)


def test_save_on_an_unchanged_entry_leaves_the_files_alone(watched: Watched, ui: Running) -> None:
    """Chromium submits textareas with CR LF line ends; they are stored as LF, and an entry
    whose text did not change is not rewritten (its time stamp stays)."""
    notebook, knowledge = ui.agent_file("NOTEBOOK.md"), ui.agent_file("knowledge.md")
    with open_agent("alice", settings=settings_for(ui.home, ui.clock)) as mem:
        mem.notebook.upsert("current-task", "Ship the fix.\n\n- then the summary")
    before = notebook.read_bytes(), knowledge.read_bytes()
    ui.clock.advance(days=1)
    page = watched.page
    watched.goto("/agents/alice/notebook")
    entry = page.locator("article.entry", has=page.locator("h2", has_text="current-task"))
    entry.get_by_role("button", name="Save").click()
    assert "unchanged" in text_of(page, ".notice")
    watched.goto("/agents/alice/knowledge")
    section = page.locator("details.section", has=page.locator("summary", has_text="Projects"))
    section.locator("summary").click()
    section.get_by_role("button", name="Save section").click()
    assert "saved section 'Projects'" in text_of(page, ".notice")
    assert (notebook.read_bytes(), knowledge.read_bytes()) == before
    watched.assert_clean()
