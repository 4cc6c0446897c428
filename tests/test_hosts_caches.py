"""Two hosts, one PostgreSQL database: what a process keeps between calls (parsed documents,
the knowledge index's state, the vectors it made) never hides another host's write.

Each test opens the same agent through two handles with different homes (two hosts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from markus_memory import AgentMemory, Settings, open_agent
from tests.postgres_support import new_agent_id, postgres_url
from tests.search.fakes import FakeEmbedder

__all__ = ["postgres_url"]


@pytest.fixture
def hosts(postgres_url: str, tmp_path: Path) -> Iterator[tuple[AgentMemory, AgentMemory]]:
    agent = new_agent_id()
    a = open_agent(
        agent,
        settings=Settings(home=tmp_path / "a", database_url=postgres_url),
        embedder=FakeEmbedder(),
    )
    b = open_agent(agent, settings=Settings(home=tmp_path / "b", database_url=postgres_url))
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def test_every_layer_read_on_one_host_follows_the_other_hosts_writes(
    hosts: tuple[AgentMemory, AgentMemory],
) -> None:
    a, b = hosts
    a.knowledge.save_observation("the deploy runs on fridays")
    a.notebook.upsert("plan", "first plan")
    a.state.update("build", "green")
    a.documents.write("role/ROLE.md", "# Role\n\nYou are the release manager.\n")
    seen = (a.knowledge.read(), a.notebook.entries(), a.state.text(), a.roles.system_prompt())
    assert a.search("deploy").hits and seen[3]

    b.knowledge.save_observation("the deploy moved to mondays")
    b.notebook.upsert("plan", "second plan")
    b.state.update("build", "red")
    b.documents.write("role/ROLE.md", "# Role\n\nYou are the on-call engineer.\n")

    assert [o.content for o in a.knowledge.observations()][-1] == "the deploy moved to mondays"
    assert [(e.key, e.text) for e in a.notebook.entries()] == [("plan", "second plan")]
    assert "red" in a.state.text() and "green" not in a.state.text()
    assert "on-call engineer" in a.roles.system_prompt()
    assert "mondays" in " ".join(h.content for h in a.search("deploy").hits)


def test_vectors_dropped_by_another_host_are_made_again(
    hosts: tuple[AgentMemory, AgentMemory],
) -> None:
    a, b = hosts
    for fact in ("the deploy runs on fridays", "lunch is at noon", "the cat is grey"):
        a.knowledge.save_observation(fact)
    assert a.search("deploy fridays").method == "hybrid"
    b.rebuild_search_index()  # host b has no embedder: the index comes back without vectors
    assert a.search("deploy fridays").method == "hybrid"
