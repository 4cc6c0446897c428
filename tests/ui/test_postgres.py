"""One UI process over agents whose documents live in PostgreSQL."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.ui import create_app
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import FormClient, serving

__all__ = ["postgres_url"]


def test_the_ui_serves_agents_whose_documents_are_in_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home", database_url=postgres_url)
    assert settings.documents_on_postgres
    agent = new_agent_id()
    with open_agent(agent, settings=settings) as mem:
        mem.knowledge.update_section("People", "Ana leads payments.")
        mem.knowledge.save_observation("kept in PostgreSQL", "fact", ["pg"])
    shutil.rmtree(tmp_path / "home" / "agents")  # only the database knows the agent now
    with serving(create_app(settings)) as url, FormClient(base_url=url) as client:
        listing = httpx.get(url + "/")
        page = client.get(f"/agents/{agent}/knowledge")
        fingerprint = page.text.split('name="fingerprint" value="')[1].split('"')[0]
        client.token = client.form_token(f"/agents/{agent}/knowledge")
        saved = client.send_form(
            f"/agents/{agent}/knowledge/section",
            {
                "name": "People",
                "content": "Ana leads payments and search.",
                "fingerprint": fingerprint,
            },
        )
    assert listing.status_code == 200 and agent in listing.text
    assert page.status_code == 200 and "kept in PostgreSQL" in page.text
    assert saved.status_code == 303
    with open_agent(agent, settings=settings) as mem:
        assert mem.knowledge.section("People") == "Ana leads payments and search."
