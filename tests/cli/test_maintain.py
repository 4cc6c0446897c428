"""migrate and doctor through the command line."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.storage._sqlite.schema import migrations
from markus_memory.storage.migrations import SqliteMigrationTarget
from tests.postgres_support import new_agent_id, postgres_url

from .conftest import Invoke, as_json

__all__ = ["postgres_url"]

LEGACY_MEMORY = "# Memory\n\n## Team\nAna leads the platform team.\n"


def legacy_agent(home: Path, agent: str) -> Path:
    root = home / "agents" / agent
    root.mkdir(parents=True)
    (root / "MEMORY.md").write_text(LEGACY_MEMORY, encoding="utf-8")
    entries = [
        {
            "id": "m1",
            "type": "fact",
            "content": "Deploys run on Fridays.",
            "timestamp": "2026-01-02T03:04:05.000Z",
            "tags": ["ops"],
        },
    ]
    (root / "memories.json").write_text(json.dumps(entries), encoding="utf-8")
    return root


def test_migrate_imports_legacy_files_once(invoke: Invoke, isolated_home: Path) -> None:
    root = legacy_agent(isolated_home, "old")
    rows = as_json(invoke("migrate", "--json"))
    assert rows == [{"agent": "old", "migrated": True, "observations": 1}]
    assert not (root / "memories.json").exists()
    assert (root / "MEMORY.md").read_text(encoding="utf-8") == LEGACY_MEMORY
    with open_agent("old") as mem:
        assert [o.content for o in mem.knowledge.observations()] == ["Deploys run on Fridays."]
    assert "Nothing to migrate" in invoke("migrate").output


def test_migrate_an_unknown_agent_exits_1(invoke: Invoke) -> None:
    invoke("migrate", "-a", "ghost", code=1)


def test_doctor_passes_on_a_healthy_home(invoke: Invoke) -> None:
    with open_agent("al") as mem:
        mem.knowledge.save_observation("fact")
        mem.activities.start("task", "t")
    report = as_json(invoke("doctor", "--json"))
    assert report["ok"] is True
    assert {c["check"] for c in report["checks"]} >= {
        "knowledge.md parses",
        "NOTEBOOK.md parses",
        "state.md parses",
        "schema current",
        "integrity",
    }
    assert "All checks passed" in invoke("doctor").output


def test_doctor_finds_a_corrupt_file_and_exits_1(invoke: Invoke) -> None:
    with open_agent("al") as mem:
        path = mem.paths.notebook
    path.write_bytes(b"\xff\xfe broken")
    report = as_json(invoke("doctor", "--json", code=1))
    (bad,) = [c for c in report["checks"] if not c["ok"]]
    assert bad["check"] == "NOTEBOOK.md parses"
    assert "NOTEBOOK.md" in bad["detail"]
    assert "FAIL" in invoke("doctor", code=1).output
    assert path.read_bytes() == b"\xff\xfe broken"  # never "fixed" by rewriting it


def test_doctor_fix_runs_a_pending_legacy_migration(invoke: Invoke, isolated_home: Path) -> None:
    legacy_agent(isolated_home, "old")
    report = as_json(invoke("doctor", "--json", code=1))
    assert [c["check"] for c in report["checks"] if not c["ok"]] == ["legacy migration"]
    fixed = as_json(invoke("doctor", "--fix", "--json"))
    assert fixed["ok"] is True
    assert [c["check"] for c in fixed["fixed"]] == ["legacy migration"]


def test_doctor_fix_brings_an_old_schema_current(invoke: Invoke, isolated_home: Path) -> None:
    invoke("init", "-a", "al")
    last = migrations.migrations[-1].name
    conn = sqlite3.connect(isolated_home / "data.db", isolation_level=None)
    migrations.apply(SqliteMigrationTarget(conn), stop_before=last)
    conn.close()
    report = as_json(invoke("doctor", "--json", code=1))
    (bad,) = [c for c in report["checks"] if not c["ok"]]
    assert bad["check"] == "schema current" and last in bad["detail"]
    assert as_json(invoke("doctor", "--fix", "--json"))["ok"] is True


def test_migrate_and_doctor_ask_the_postgres_documents(
    invoke: Invoke, isolated_home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With documents in PostgreSQL there is no knowledge.md file: nothing is pending."""
    from markus_memory.storage._postgres.documents import PostgresDocuments

    monkeypatch.setenv("MARKUS_DATABASE_URL", postgres_url)
    done, legacy = new_agent_id(), new_agent_id()
    with open_agent(done) as mem:
        mem.knowledge.save_observation("kept in a row")
    with open_agent(legacy):
        pass
    assert not (isolated_home / "agents" / done / "knowledge.md").exists()
    documents = PostgresDocuments(postgres_url, legacy)
    try:  # a memories.json imported into PostgreSQL as a document, not yet migrated
        documents.write("memories.json", json.dumps([{"id": "m1", "content": "from json"}]))
    finally:
        documents.close()

    report = as_json(invoke("doctor", "--json", "-a", done))
    assert not [c for c in report["checks"] if c["check"] == "legacy migration"]
    rows = {r["agent"]: r for r in as_json(invoke("migrate", "--json"))}
    assert rows[done]["migrated"] is False
    assert rows[legacy] == {"agent": legacy, "migrated": True, "observations": 1}
    assert as_json(invoke("migrate", "--json", "-a", legacy))[0]["migrated"] is False
