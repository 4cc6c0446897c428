"""The dream audit, written once over the dialect, behaves the same on both backends."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.audit import PostgresAuditLog, SqliteAuditLog
from markus_memory.storage.dream_runs import AuditLog, DreamRun
from markus_memory.storage.episodic import EpisodicStore

T = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)


def audit_beside(store: EpisodicStore) -> AuditLog:
    if isinstance(store, SqliteStore):
        return SqliteAuditLog(store.database.path)
    return PostgresAuditLog(store.database)  # type: ignore[arg-type]


def run(run_id: str, at: datetime, agent: str = "a", **changes: object) -> DreamRun:
    return DreamRun(
        run_id=run_id,
        agent_id=agent,
        started_at=at,
        finished_at=at + timedelta(seconds=2),
        mode="offline",
        status="applied",
        changes={"removed": [], **changes},
        knowledge_before="# Knowledge\n数据 — before\n",
        knowledge_after="# Knowledge\n数据 — after\n",
        state_before=None,
        state_after="# State\n",
    )


def ms(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def test_round_trip_keeps_texts_json_and_milliseconds(store: EpisodicStore) -> None:
    log = audit_beside(store)
    recorded = run("r1", T, merged=[{"content": "naïve 数据", "ids": ["o1", "o2"]}])
    log.record(recorded)
    got = log.get("a", "r1")
    assert got is not None
    assert got.started_at == ms(T) and got.finished_at == ms(T + timedelta(seconds=2))
    assert got.started_at.tzinfo is not None
    assert got.changes == recorded.changes
    assert (got.knowledge_before, got.knowledge_after, got.state_before, got.state_after) == (
        recorded.knowledge_before,
        recorded.knowledge_after,
        None,
        "# State\n",
    )
    assert log.get("a", "missing") is None and log.get("b", "r1") is None


def test_runs_are_newest_first_and_ties_keep_insertion_order(store: EpisodicStore) -> None:
    log = audit_beside(store)
    for run_id, at in [
        ("old", T),
        ("tie1", T + timedelta(hours=1)),
        ("tie2", T + timedelta(hours=1)),
    ]:
        log.record(run(run_id, at))
    log.record(run("other", T + timedelta(days=1), agent="b"))
    assert [r.run_id for r in log.runs("a")] == ["tie2", "tie1", "old"]
    assert [r.run_id for r in log.runs("a", limit=2)] == ["tie2", "tie1"]
    assert [r.run_id for r in log.runs("b")] == ["other"]
    assert log.runs("nobody") == []


def test_mark_undone_only_touches_that_agents_run(store: EpisodicStore) -> None:
    log = audit_beside(store)
    log.record(run("r1", T))
    log.record(run("r1-b", T, agent="b"))
    log.mark_undone("a", "r1", T + timedelta(days=1))
    log.mark_undone("b", "r1", T + timedelta(days=1))  # no such run for b: nothing changes
    got, other = log.get("a", "r1"), log.get("b", "r1-b")
    assert got is not None and got.status == "undone" and got.undone_at == ms(T + timedelta(days=1))
    assert other is not None and other.status == "applied" and other.undone_at is None


def test_a_second_log_on_the_same_database_sees_the_runs(store: EpisodicStore) -> None:
    audit_beside(store).record(run("r1", T))
    assert [r.run_id for r in audit_beside(store).runs("a")] == ["r1"]
