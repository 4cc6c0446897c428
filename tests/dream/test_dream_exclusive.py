"""At most one dream per agent: a second one is skipped; dreams run on PostgreSQL documents too."""

from __future__ import annotations

from pathlib import Path

from markus_memory.config import Settings
from markus_memory.dream import dream, dream_history, undo_last_dream
from markus_memory.memory import open_agent
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import FakeClock, save

__all__ = ["postgres_url"]


def test_a_second_dream_of_the_same_agent_is_skipped(mem, clock) -> None:
    save(mem, clock, "Deploy on Friday.", "deploy on friday", "a unique thought")
    before = mem.knowledge.text()
    with mem.documents.exclusive("dream"):  # a dream running elsewhere
        report = dream(mem)
    assert report.status == "skipped" and report.run_id is None
    assert "another dream of agent 'agt_dream' is running" in (report.error or "")
    assert mem.knowledge.text() == before and dream_history(mem) == []
    assert dream(mem).status == "applied"  # the lock is free again


def test_dry_runs_do_not_take_the_dream_lock(mem, clock) -> None:
    save(mem, clock, "Deploy on Friday.", "deploy on friday")
    with mem.documents.exclusive("dream"):
        assert dream(mem, dry_run=True).status == "dry_run"


def test_a_dream_on_postgres_documents_applies_and_undoes(
    postgres_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    settings = Settings(home=tmp_path, database_url=postgres_url, clock=clock)
    with open_agent(new_agent_id(), settings=settings) as mem:
        mem.state.update("old", "x")
        save(mem, clock, "Deploy on Friday.", "deploy on friday", "a unique thought")
        clock.advance(days=10)
        before = (mem.documents.read("knowledge.md"), mem.documents.read("state.md"))
        report = dream(mem)
        assert report.status == "applied" and report.merged and report.state_removed == ("old",)
        assert len(mem.knowledge.observations()) == 2
        with mem.documents.exclusive("dream"):
            assert dream(mem).status == "skipped"
        assert undo_last_dream(mem).ok
        assert (mem.documents.read("knowledge.md"), mem.documents.read("state.md")) == before
        assert not (mem.paths.knowledge.exists() or mem.paths.state.exists())
