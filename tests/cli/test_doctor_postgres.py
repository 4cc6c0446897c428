"""doctor on PostgreSQL: reachable, schema current, derived data whole; a check changes
nothing and --fix repairs (a private schema per test: the checks damage it on purpose)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings
from tests.postgres_support import _server_url, schema_url

from .conftest import Invoke, as_json

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def pg(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str]]:
    server = _server_url()
    schema = f"markus_test_doctor_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            url = schema_url(server, schema)
            monkeypatch.setenv("MARKUS_DATABASE_URL", url)
            yield url, schema
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def _checks(invoke: Invoke, code: int) -> dict[str, dict[str, object]]:
    report = as_json(invoke("doctor", "--json", code=code))
    return {c["check"]: c for c in report["checks"] if c["subject"] == "postgresql"}


def _fill(home: Path, url: str) -> None:
    with open_agent("al", settings=Settings(home=home, database_url=url)) as mem:
        mem.sessions.get_or_create("s1")
        for text in ("we went camping", "the lake was cold", "deploys run on Fridays"):
            mem.sessions.append("s1", {"role": "user", "content": text})
        assert mem.recall_conversation("camping")


def test_doctor_checks_a_postgresql_database(
    invoke: Invoke, isolated_home: Path, pg: tuple[str, str]
) -> None:
    url, _ = pg
    _fill(isolated_home, url)
    checks = _checks(invoke, 0)
    assert {name: c["ok"] for name, c in checks.items()} == {
        "reachable": True,
        "schema current": True,
        "tables present": True,
        "derived data": True,
    }


def test_doctor_reports_a_damaged_recall_index_changes_nothing_and_fix_rebuilds_it(
    invoke: Invoke, isolated_home: Path, pg: tuple[str, str]
) -> None:
    url, schema = pg
    _fill(isolated_home, url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM recall_agents")
        postings = conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0]
    checks = _checks(invoke, 1)
    assert checks["derived data"]["ok"] is False
    assert "recall index holds 0 of 3 transcript messages" in str(checks["derived data"]["detail"])
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM recall_agents").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM recall_postings").fetchone()[0] == postings
    out = invoke("doctor", "--fix").output
    assert "fixing postgresql: derived data" in out
    assert _checks(invoke, 0)["derived data"]["ok"] is True


def test_doctor_reports_a_pending_migration_and_fix_applies_it(
    invoke: Invoke, isolated_home: Path, pg: tuple[str, str]
) -> None:
    url, _ = pg
    _fill(isolated_home, url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP INDEX idx_transcript_id_keys")
        conn.execute(
            "DELETE FROM _markus_migrations WHERE migration_set = 'markus' "
            "AND name = 'm012_recall_keys_by_id'"
        )
    report = as_json(invoke("doctor", "--json", "--agent", "al", code=1))
    found = {c["check"]: c for c in report["checks"] if c["subject"] == "postgresql"}
    assert found["schema current"]["detail"] == "markus/m012_recall_keys_by_id"
    assert "the PostgreSQL database" in str(found["schema current"]["fix"])
    agent = [c for c in report["checks"] if c["subject"] == "al"]
    assert [(c["check"], c["ok"]) for c in agent] == [("agent", False)]
    assert "doctor --fix applies the migrations" in str(agent[0]["detail"])
    with psycopg.connect(url, autocommit=True) as conn:  # a check changes nothing
        assert conn.execute("SELECT to_regclass('idx_transcript_id_keys')").fetchone()[0] is None
    assert as_json(invoke("doctor", "--json", code=1))["ok"] is False
    invoke("doctor", "--fix")
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('idx_transcript_id_keys')").fetchone()[0]
    assert _checks(invoke, 0)["schema current"]["ok"] is True


def test_doctor_explains_an_unreachable_server(
    invoke: Invoke, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "MARKUS_DATABASE_URL", "postgresql://markus@127.0.0.1:1/markus?connect_timeout=1"
    )
    checks = _checks(invoke, 1)
    assert checks["reachable"]["ok"] is False
    assert "127.0.0.1" in str(checks["reachable"]["detail"])


def test_doctor_leaves_an_agent_unchecked_when_the_server_does_not_answer(
    invoke: Invoke, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (isolated_home / "agents" / "al").mkdir(parents=True)
    monkeypatch.setenv(
        "MARKUS_DATABASE_URL", "postgresql://markus@127.0.0.1:1/markus?connect_timeout=1"
    )
    report = as_json(invoke("doctor", "--json", code=1))
    found = {(c["subject"], c["check"]): c for c in report["checks"]}
    assert found["postgresql", "reachable"]["ok"] is False
    assert found["al", "agent"]["ok"] is False
    assert "not usable" in str(found["al", "agent"]["detail"])


def test_doctor_does_not_create_the_schema_of_an_empty_database(
    invoke: Invoke, isolated_home: Path, pg: tuple[str, str]
) -> None:
    _, schema = pg
    (isolated_home / "agents" / "al").mkdir(parents=True)
    report = as_json(invoke("doctor", "--json", code=1))
    found = {(c["subject"], c["check"]): c for c in report["checks"]}
    assert found["postgresql", "database"]["detail"] == "not created yet"
    assert "no markus-memory schema yet" in str(found["al", "agent"]["detail"])
    with psycopg.connect(_server_url(), autocommit=True) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = %s", (schema,)
        ).fetchone()[0]
    assert tables == 0
