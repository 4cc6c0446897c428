"""SQLite and PostgreSQL reach the same logical schema: tables, columns, types, keys, migrations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.migrations import BOOKKEEPING_TABLE

psycopg = pytest.importorskip("psycopg")
from markus_memory.storage._postgres.schema import (  # noqa: E402
    PG_ONLY_COLUMNS,
    PG_ONLY_TABLES,
    SQLITE_ONLY_TABLES,
)
from markus_memory.storage._postgres.store import PostgresStore  # noqa: E402

# Columns that SQLite declares TEXT/INTEGER but that hold times, JSON or flags.
_JSON_COLUMNS = {"payload", "metadata", "context", "details"}
_FLAG_COLUMNS = {"success", "is_main", "imported"}

Column = tuple[str, str, bool, bool]  # name, logical type, not null, primary key


def _logical_sqlite_type(table: str, name: str, declared: str, pk: bool) -> str:
    declared = declared.upper()
    if table == BOOKKEEPING_TABLE:
        return "text"
    if declared == "TEXT":
        if name.endswith("_at") or name == "deferred_until":
            return "timestamp with time zone"
        return "jsonb" if name in _JSON_COLUMNS else "text"
    if declared == "INTEGER":
        if name in _FLAG_COLUMNS:
            return "boolean"
        return "bigint" if pk else "integer"
    if declared == "BIGINT":
        return "bigint"
    if declared == "BLOB":
        return "bytea"
    raise AssertionError(f"unmapped SQLite type {declared} of {table}.{name}")


def sqlite_schema(path: Path) -> dict[str, set[Column]]:
    conn = sqlite3.connect(path)
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE "
            "VIRTUAL%' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%'"
        )
    ]
    schema = {}
    for table in tables:
        if table in SQLITE_ONLY_TABLES:
            continue
        schema[table] = {
            (
                name,
                _logical_sqlite_type(table, name, declared, bool(pk)),
                bool(notnull or pk),
                bool(pk),
            )
            for _, name, declared, notnull, _, pk in conn.execute(f"PRAGMA table_info({table})")
        }
    conn.close()
    return schema


def postgres_schema(url: str) -> dict[str, set[Column]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable = 'NO', "
            " EXISTS (SELECT 1 FROM information_schema.key_column_usage k "
            "  JOIN information_schema.table_constraints t USING (constraint_schema, "
            "   constraint_name) WHERE t.constraint_type = 'PRIMARY KEY' "
            "  AND k.table_schema = c.table_schema AND k.table_name = c.table_name "
            "  AND k.column_name = c.column_name) "
            "FROM information_schema.columns c JOIN information_schema.tables t "
            " ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'"
        ).fetchall()
    schema: dict[str, set[Column]] = {}
    for table, name, data_type, notnull, pk in rows:
        if table in PG_ONLY_TABLES or (table, name) in PG_ONLY_COLUMNS:
            continue
        schema.setdefault(table, set()).add((name, data_type, bool(notnull), bool(pk)))
    return schema


def test_both_backends_reach_the_same_logical_schema(tmp_path: Path, pg_url: str) -> None:
    SqliteStore(tmp_path / "data.db").close()
    PostgresStore(pg_url).close()
    lite, pg = sqlite_schema(tmp_path / "data.db"), postgres_schema(pg_url)
    assert sorted(lite) == sorted(pg)
    for table in lite:
        assert lite[table] == pg[table], table


def test_both_backends_record_the_same_migrations(tmp_path: Path, pg_url: str) -> None:
    SqliteStore(tmp_path / "data.db").close()
    PostgresStore(pg_url).close()
    query = f"SELECT migration_set, name FROM {BOOKKEEPING_TABLE} ORDER BY 1, 2"
    conn = sqlite3.connect(tmp_path / "data.db")
    lite = conn.execute(query).fetchall()
    conn.close()
    with psycopg.connect(pg_url) as pg_conn:
        assert pg_conn.execute(query).fetchall() == lite
