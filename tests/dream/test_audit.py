"""The dream audit log in data.db: its migration set and round trips."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory.errors import StorageError
from markus_memory.storage.audit import MIGRATIONS, SqliteAuditLog
from markus_memory.storage.dream_runs import DreamRun
from markus_memory.storage.migrations import SqliteMigrationTarget

T = datetime(2026, 11, 30, 10, 0, 0, 123000, tzinfo=timezone.utc)


def run(run_id: str, at: datetime, status: str = "applied", agent: str = "a") -> DreamRun:
    return DreamRun(
        run_id,
        agent,
        at,
        at + timedelta(seconds=2),
        "llm",
        status,
        {"removed": [{"id": "obs_1", "content": "ü ✓"}]},
        None,
        "# K\n",
        "# K\n\n## s\nx\n",
        None,
        "# State\n",
    )


def test_runs_round_trip_newest_first(tmp_path: Path) -> None:
    log = SqliteAuditLog(tmp_path / "data.db")
    first, second = run("r1", T), run("r2", T + timedelta(hours=1))
    log.record(first)
    log.record(second)
    log.record(run("other", T, agent="b"))
    assert log.runs("a") == [second, first]
    assert log.runs("a", limit=1) == [second]
    assert log.get("a", "r1") == first
    assert log.get("b", "r1") is None


def test_mark_undone(tmp_path: Path) -> None:
    log = SqliteAuditLog(tmp_path / "data.db")
    log.record(run("r1", T))
    log.mark_undone("a", "r1", T + timedelta(days=1))
    got = log.get("a", "r1")
    assert got is not None and got.status == "undone" and got.undone_at == T + timedelta(days=1)


def test_the_dream_migration_set_is_applied_once(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    SqliteAuditLog(path).runs("a")
    SqliteAuditLog(path).runs("a")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        assert MIGRATIONS.pending(SqliteMigrationTarget(conn)) == []
        columns = [row[1] for row in conn.execute("PRAGMA table_info(dream_runs)")]
    finally:
        conn.close()
    assert columns == [
        "run_id",
        "agent_id",
        "started_at",
        "finished_at",
        "mode",
        "status",
        "error",
        "changes",
        "knowledge_before",
        "knowledge_after",
        "state_before",
        "state_after",
        "undone_at",
    ]


def test_an_unusable_database_is_a_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "data.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError):
        SqliteAuditLog(path).runs("a")
