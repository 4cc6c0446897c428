"""Deleting an agent from the UI: the agents page links a confirmation page that offers an
export first; the export and the delete are POST forms behind the UI's guard."""

from __future__ import annotations

import sqlite3
from urllib.parse import parse_qs, urlsplit

import httpx

from markus_memory import Settings
from markus_memory.transfer import export_agent
from tests.postgres_support import postgres_url

from .conftest import FormClient, Running

__all__ = ["postgres_url"]


def post(ui: Running, path: str, **fields: str) -> httpx.Response:
    """POST ``fields`` as the UI's own page would: same origin, with the browser's form token."""
    with FormClient(base_url=ui.url) as client:
        client.token = client.form_token("/agents/bob/notebook")
        return client.send_form(path, fields, Origin=ui.url)


def test_the_agents_page_links_a_confirmation_that_offers_an_export(ui: Running) -> None:
    listing = httpx.get(ui.url + "/")
    assert 'href="/agents/alice/delete"' in listing.text
    page = httpx.get(ui.url + "/agents/alice/delete")
    assert page.status_code == 200
    assert 'action="/agents/alice/export-copy"' in page.text
    assert "markus-memory export --to-home DIR --agent alice" in page.text
    assert httpx.get(ui.url + "/agents/nobody/delete").status_code == 404


def test_export_then_delete_leaves_no_trace_and_the_copy_whole(ui: Running) -> None:
    knowledge = ui.agent_file("knowledge.md").read_bytes()
    exported = post(ui, "/agents/alice/export-copy")
    assert exported.status_code == 303
    folder = parse_qs(urlsplit(exported.headers["location"]).query)["exported"][0]
    assert (ui.home / "exports").is_dir() and folder.startswith(str(ui.home / "exports"))
    with httpx.Client() as client:
        shown = client.get(ui.url + exported.headers["location"])
    assert folder in shown.text and "markus-memory import --from-home" in shown.text

    wrong = post(ui, "/agents/alice/delete", confirm="alcie")
    assert wrong.status_code == 400 and ui.agent_file("knowledge.md").exists()
    foreign = httpx.post(
        f"{ui.url}/agents/alice/delete",
        data={"confirm": "alice"},
        headers={"Origin": "https://attacker.example"},
    )
    assert foreign.status_code == 403 and ui.agent_file("knowledge.md").exists()

    done = post(ui, "/agents/alice/delete", confirm="alice")
    assert done.status_code == 303 and done.headers["location"].startswith("/?done=")
    listing = httpx.get(ui.url + done.headers["location"])
    assert "Deleted agent alice" in listing.text
    assert 'href="/agents/alice/notebook"' not in listing.text
    assert 'href="/agents/bob/notebook"' in listing.text
    assert not (ui.home / "agents" / "alice").exists()
    assert httpx.get(ui.url + "/agents/alice/notebook").status_code == 404
    with sqlite3.connect(ui.home / "data.db") as conn:
        for table in ("transcript_messages", "agent_activities", "search_docs", "dream_runs"):
            count = conn.execute(f"SELECT COUNT(*) FROM {table} WHERE agent_id = 'alice'")
            assert count.fetchone()[0] == 0, table
    copy = ui.home.joinpath(folder, "agents", "alice", "knowledge.md")
    assert copy.read_bytes() == knowledge


def test_files_an_export_left_behind_are_not_written_from_the_ui(
    ui: Running, postgres_url: str
) -> None:
    export_agent(Settings(home=ui.home), Settings(home=ui.home, database_url=postgres_url), "alice")
    before = ui.agent_file("NOTEBOOK.md").read_bytes()
    refused = post(ui, "/agents/alice/notebook/save", key="k", text="t", fingerprint="absent")
    assert refused.status_code == 400
    assert "exported to PostgreSQL" in refused.text and "not written" in refused.text
    assert ui.agent_file("NOTEBOOK.md").read_bytes() == before
    listing = httpx.get(ui.url + "/").text
    assert "was exported to PostgreSQL" in listing and "read but never written" in listing
