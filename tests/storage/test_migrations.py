from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from markus_memory.errors import InvalidInputError, StorageError
from markus_memory.storage.migrations import (
    BOOKKEEPING_TABLE,
    Migrations,
    SqliteMigrationTarget,
)


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout = 5000")
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


def tables(conn: sqlite3.Connection) -> set[str]:
    rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {r[0] for r in rows}


def build_set(name: str = "demo") -> Migrations[sqlite3.Connection]:
    migrations: Migrations[sqlite3.Connection] = Migrations(name)

    @migrations()
    def m001_create(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE demo (id INTEGER PRIMARY KEY, name TEXT)")

    @migrations()
    def m002_add_column(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE demo ADD COLUMN note TEXT DEFAULT ''")

    return migrations


def test_apply_runs_each_migration_in_order_and_records_it(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.db")
    migrations = build_set()
    assert migrations.apply(SqliteMigrationTarget(conn)) == ["m001_create", "m002_add_column"]
    cols = [r[1] for r in conn.execute("PRAGMA table_info(demo)")]
    assert cols == ["id", "name", "note"]
    rows = conn.execute(
        f"SELECT migration_set, name FROM {BOOKKEEPING_TABLE} ORDER BY name"
    ).fetchall()
    assert rows == [("demo", "m001_create"), ("demo", "m002_add_column")]


def test_apply_is_idempotent_on_every_open(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    build_set().apply(SqliteMigrationTarget(connect(path)))
    again = connect(path)
    assert build_set().apply(SqliteMigrationTarget(again)) == []
    assert build_set().pending(SqliteMigrationTarget(again)) == []


def test_new_migrations_added_later_are_applied_on_next_open(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    first = build_set()
    assert first.apply(SqliteMigrationTarget(connect(path)), stop_before="m002_add_column") == [
        "m001_create"
    ]
    conn = connect(path)
    assert build_set().pending(SqliteMigrationTarget(conn)) == ["m002_add_column"]
    assert build_set().apply(SqliteMigrationTarget(conn)) == ["m002_add_column"]


def test_several_named_sets_share_one_database(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.db")
    other: Migrations[sqlite3.Connection] = Migrations("search")

    @other()
    def m001_create(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE search_things (id INTEGER PRIMARY KEY)")

    target = SqliteMigrationTarget(conn)
    assert build_set().apply(target) == ["m001_create", "m002_add_column"]
    # Same migration name, different set: applied independently.
    assert other.apply(target) == ["m001_create"]
    assert {"demo", "search_things"} <= tables(conn)
    counts = dict(
        conn.execute(
            f"SELECT migration_set, COUNT(*) FROM {BOOKKEEPING_TABLE} GROUP BY migration_set"
        ).fetchall()
    )
    assert counts == {"demo": 2, "search": 1}


def test_a_failing_migration_rolls_back_with_its_bookkeeping_row(tmp_path: Path) -> None:
    conn = connect(tmp_path / "x.db")
    broken: Migrations[sqlite3.Connection] = Migrations("broken")

    @broken()
    def m001_ok(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE kept (id INTEGER)")

    @broken()
    def m002_half_done(conn: sqlite3.Connection) -> None:
        conn.execute("CREATE TABLE half (id INTEGER)")
        conn.execute("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(StorageError, match="broken/m002_half_done"):
        broken.apply(SqliteMigrationTarget(conn))
    assert "kept" in tables(conn)
    assert "half" not in tables(conn)
    assert broken.pending(SqliteMigrationTarget(conn)) == ["m002_half_done"]
    assert not conn.in_transaction


def test_custom_name_and_invalid_registrations() -> None:
    migrations: Migrations[sqlite3.Connection] = Migrations("x")

    @migrations(name="m010_renamed")
    def whatever(conn: sqlite3.Connection) -> None:
        return None

    assert [m.name for m in migrations.migrations] == ["m010_renamed"]
    with pytest.raises(InvalidInputError, match="twice"):
        migrations(name="m010_renamed")(whatever)
    with pytest.raises(InvalidInputError, match="m001_description"):
        migrations()(whatever)
    with pytest.raises(InvalidInputError):
        Migrations(" ")


def test_sqlite_target_refuses_implicit_transaction_connections(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="isolation_level=None"):
        SqliteMigrationTarget(sqlite3.connect(tmp_path / "x.db"))


def test_concurrent_openers_apply_each_migration_exactly_once(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    setup = connect(path)
    setup.execute("CREATE TABLE runs (who TEXT)")
    counting: Migrations[sqlite3.Connection] = Migrations("counting")

    @counting()
    def m001_count(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO runs VALUES ('m001')")

    @counting()
    def m002_count(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO runs VALUES ('m002')")

    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            conn = connect(path)
            barrier.wait()
            counting.apply(SqliteMigrationTarget(conn))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r[0] for r in setup.execute("SELECT who FROM runs")) == ["m001", "m002"]


class DictTarget:
    """A non-SQL target: proves the registry needs nothing but the four target methods."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], str] = {}
        self.data: list[str] = []
        self.commits = 0

    def ensure_bookkeeping(self) -> None:
        return None

    @contextmanager
    def transaction(self) -> Iterator[list[str]]:
        saved_rows, saved_data = dict(self.rows), list(self.data)
        try:
            yield self.data
        except BaseException:
            self.rows, self.data = saved_rows, saved_data
            raise
        self.commits += 1

    def applied(self, conn: list[str], migration_set: str) -> set[str]:
        return {name for (s, name) in self.rows if s == migration_set}

    def record(self, conn: list[str], migration_set: str, name: str, applied_at: str) -> None:
        self.rows[(migration_set, name)] = applied_at


def test_registry_is_backend_neutral() -> None:
    migrations: Migrations[list[str]] = Migrations("neutral")

    @migrations()
    def m001_a(conn: list[str]) -> None:
        conn.append("a")

    @migrations()
    def m002_b(conn: list[str]) -> None:
        conn.append("b")

    target = DictTarget()
    assert migrations.apply(target) == ["m001_a", "m002_b"]
    assert migrations.apply(target) == []
    assert target.data == ["a", "b"]
    assert set(target.rows) == {("neutral", "m001_a"), ("neutral", "m002_b")}


def test_a_postgresql_migration_may_outlast_the_statement_timeout() -> None:
    """Queries are bounded by the statement timeout; a migration rewrites tables in proportion
    to the history (m013 on a million messages takes minutes) and must not be cancelled
    halfway through an upgrade, nor a second opener waiting for it."""
    psycopg = pytest.importorskip("psycopg")
    from markus_memory.storage._postgres.conn import PostgresMigrationTarget

    from .pg import postgres_schema_url

    slow: Migrations[object] = Migrations("slow")

    @slow()
    def m001_long_rewrite(conn: object) -> None:
        conn.execute("SELECT pg_sleep(0.5)")  # type: ignore[attr-defined]

    with postgres_schema_url() as url, psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET statement_timeout = 100")
        assert slow.apply(PostgresMigrationTarget(conn)) == ["m001_long_rewrite"]
        assert conn.execute("SHOW statement_timeout").fetchone()[0] == "100ms"
