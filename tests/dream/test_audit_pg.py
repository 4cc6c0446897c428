"""The dream audit log in PostgreSQL: round trips, its migration set, one history for all hosts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from markus_memory.config import Limits, Settings
from markus_memory.dream import dream, dream_history, should_dream, undo_last_dream
from markus_memory.dream.cycle import audit_log
from markus_memory.memory import open_agent
from markus_memory.storage.audit import PostgresAuditLog
from markus_memory.storage.migrations import BOOKKEEPING_TABLE
from tests.dream.test_audit import T, run
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import FakeClock, save

__all__ = ["postgres_url"]


@pytest.fixture
def log(postgres_url: str) -> Iterator[PostgresAuditLog]:
    from markus_memory.storage._postgres.store import PostgresStore

    store = PostgresStore(postgres_url)
    try:
        yield PostgresAuditLog(store.database)
    finally:
        store.close()


def test_runs_round_trip_newest_first(log: PostgresAuditLog) -> None:
    a, b = new_agent_id(), new_agent_id()
    first, second = run("r1" + a, T, agent=a), run("r2" + a, T + timedelta(hours=1), agent=a)
    same_time = run("r3" + a, T, agent=a)  # recorded later at the same start: listed first
    for one in (first, second, same_time, run("other" + a, T, agent=b)):
        log.record(one)
    assert log.runs(a) == [second, same_time, first]
    assert log.runs(a, limit=1) == [second]
    assert log.get(a, first.run_id) == first
    assert log.get(b, first.run_id) is None


def test_mark_undone(log: PostgresAuditLog) -> None:
    agent = new_agent_id()
    log.record(run("r1" + agent, T, agent=agent))
    log.mark_undone(agent, "r1" + agent, T + timedelta(days=1))
    got = log.get(agent, "r1" + agent)
    assert got is not None and got.status == "undone" and got.undone_at == T + timedelta(days=1)


def test_the_dream_migration_set_is_applied_once(log: PostgresAuditLog) -> None:
    log.runs("agt_x")
    PostgresAuditLog(log.database).runs("agt_x")
    with log.database.read() as conn:
        rows = conn.execute(
            f"SELECT name FROM {BOOKKEEPING_TABLE} WHERE migration_set = 'dream'"
        ).fetchall()
    assert rows == [("m001_dream_runs",)]


def test_hosts_on_one_database_share_the_dream_history(
    postgres_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    """A dream on one host uses the day's slot for all; another host can list and undo it."""
    agent = new_agent_id()
    limits = replace(Limits(), dream_min_observations=2)

    def host(name: str) -> Settings:
        return Settings(home=tmp_path / name, database_url=postgres_url, clock=clock, limits=limits)

    with (
        open_agent(agent, settings=host("a")) as mem_a,
        open_agent(agent, settings=host("b")) as mem_b,
    ):
        assert isinstance(audit_log(mem_a), PostgresAuditLog)
        save(mem_a, clock, "Deploy on Friday.", "deploy on friday", "a unique thought")
        before = mem_b.knowledge.text()
        assert should_dream(mem_b).run
        report = dream(mem_a)
        assert report.status == "applied"
        decision = should_dream(mem_b)
        assert not decision.run and decision.reason == "already dreamed today"
        assert [r.run_id for r in dream_history(mem_b)] == [report.run_id]
        undone = undo_last_dream(mem_b)
        assert undone.ok and undone.run_id == report.run_id
        assert mem_a.knowledge.text() == before
        assert dream_history(mem_a)[0].status == "undone"
    for name in ("a", "b"):
        assert not (tmp_path / name / "data.db").exists()  # nothing fell back to SQLite


def test_with_documents_on_files_the_audit_stays_in_the_home(
    postgres_url: str, tmp_path: Path, clock: FakeClock
) -> None:
    """Each host dreams over its own files then, so its history must not be shared."""
    from markus_memory.storage.audit import SqliteAuditLog

    settings = Settings(home=tmp_path, database_url=postgres_url, documents="files", clock=clock)
    with open_agent(new_agent_id(), settings=settings) as mem:
        log = audit_log(mem)
        assert isinstance(log, SqliteAuditLog) and log.path == settings.database_path
