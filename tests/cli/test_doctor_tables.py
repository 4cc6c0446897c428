"""doctor reports every missing table of every migration set, SQLite and PostgreSQL: one
test per table (a dropped recall_vectors or recall_vector_lists was called healthy)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from markus_memory import Settings, open_agent
from markus_memory.storage._postgres.checks import POSTGRES_TABLES
from markus_memory.storage._postgres.health import POSTGRES_MIGRATIONS
from markus_memory.storage._sqlite.checks import sqlite_tables
from tests.postgres_support import URL_ENV, schema_url

from .conftest import Invoke, as_json

SQLITE = sorted(f"{name}/{table}" for name, tables in sqlite_tables().items() for table in tables)
POSTGRES = sorted(f"{name}/{table}" for name, tables in POSTGRES_TABLES.items() for table in tables)


def test_the_lists_hold_the_tables_everyone_knows_of() -> None:
    assert {"markus/recall_vectors", "markus/recall_vector_lists"} <= set(SQLITE)
    assert {"markus/recall_vectors", "markus/recall_vector_lists"} <= set(POSTGRES)
    assert {"dream/dream_runs", "langgraph/langgraph_items", "search-index/search_docs"} <= set(
        SQLITE
    )


def _every_set(home: Path, url: str | None = None) -> None:
    """A memory whose database has started every migration set."""
    with open_agent("al", settings=Settings(home=home, database_url=url)) as mem:
        mem.knowledge.save_observation("Deploys run on Fridays.")
        mem.search("deploys")
        mem.activities.end(mem.activities.start("task", "review"))
        mem.backend.kv_table("al").close()
        mem.backend.dream_audit(mem.documents).runs("al")


def _tables_check(report: dict[str, object], subject: str) -> dict[str, object]:
    checks = report["checks"]
    assert isinstance(checks, list)
    return next(c for c in checks if c["subject"] == subject and c["check"] == "tables present")


@pytest.mark.parametrize("dropped", SQLITE)
def test_a_table_missing_from_data_db_is_reported(
    dropped: str, invoke: Invoke, isolated_home: Path
) -> None:
    _every_set(isolated_home)
    assert _tables_check(as_json(invoke("doctor", "--json")), "data.db")["ok"] is True
    with sqlite3.connect(isolated_home / "data.db") as conn:
        conn.execute(f"DROP TABLE {dropped.split('/')[1]}")
    report = as_json(invoke("doctor", "--json", code=1))
    found = _tables_check(report, "data.db")
    assert found["ok"] is False and dropped in str(found["detail"])


@pytest.fixture(scope="module")
def server() -> str:
    pytest.importorskip("psycopg")
    import os

    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(f"{URL_ENV} is not set")
    return url


def test_the_postgres_list_is_what_the_migrations_create(server: str) -> None:
    import secrets

    import psycopg

    from markus_memory.storage._postgres.conn import PostgresDatabase

    schema = f"markus_tables_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = schema_url(server, schema)
    try:
        database = PostgresDatabase(url)
        made: dict[str, set[str]] = {}
        before = {"_markus_migrations"}
        for migrations in POSTGRES_MIGRATIONS:
            database.migrate(migrations)
            with psycopg.connect(url) as conn:
                rows = conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
                ).fetchall()
            now = {str(r[0]) for r in rows}
            made[migrations.name] = now - before
            before |= now
        database.close()
        assert made == {name: set(tables) for name, tables in POSTGRES_TABLES.items()}
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.mark.parametrize("dropped", POSTGRES)
def test_a_table_missing_from_postgres_is_reported(
    dropped: str,
    invoke: Invoke,
    isolated_home: Path,
    server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import secrets

    import psycopg

    schema = f"markus_drop_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    url = schema_url(server, schema)
    try:
        _every_set(isolated_home, url)
        monkeypatch.setenv("MARKUS_DATABASE_URL", url)
        assert _tables_check(as_json(invoke("doctor", "--json")), "postgresql")["ok"] is True
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP TABLE {dropped.split('/')[1]} CASCADE")
        report = as_json(invoke("doctor", "--json", code=1))
        found = _tables_check(report, "postgresql")
        assert found["ok"] is False and dropped in str(found["detail"])
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
