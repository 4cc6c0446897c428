"""PostgreSQL backend: URL selection, pooling, unreachable servers, atomic writes, concurrency."""

from __future__ import annotations

import multiprocessing
import socket
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory.config import Settings
from markus_memory.errors import (
    BackendUnavailableError,
    ClosedError,
    InvalidInputError,
    StorageError,
)
from markus_memory.memory import open_agent, open_store
from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.repos.activities import Activity

psycopg = pytest.importorskip("psycopg")
from markus_memory.storage._postgres import schema as postgres_schema  # noqa: E402
from markus_memory.storage._postgres.store import PostgresStore  # noqa: E402

T0 = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_unreachable_server_raises_backend_unavailable_without_hanging() -> None:
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test"
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        try:
            PostgresStore(url, connect_timeout=1.0)
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=30)  # a hang bound, not a timing assertion
    assert not worker.is_alive(), "opening an unreachable server hung"
    assert isinstance(outcome[0], BackendUnavailableError)
    assert "127.0.0.1" in str(outcome[0])


def test_agent_memory_on_unreachable_url_fails_clearly(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{_closed_port()}/test?connect_timeout=1"
    settings = Settings(home=tmp_path, database_url=url)
    outcome: list[BaseException | None] = []

    def attempt() -> None:
        # With a PostgreSQL URL the markdown documents live there too: opening the agent fails
        # within the connect timeout of the URL (it once waited 30 s for a second pool).
        try:
            open_agent("alice", settings=settings).close()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=15)  # a hang bound well under the old 30 s wait, not a timing assertion
    assert not worker.is_alive(), "opening an agent on an unreachable server hung"
    assert isinstance(outcome[0], BackendUnavailableError)
    assert "127.0.0.1" in str(outcome[0])
    assert not (tmp_path / "data.db").exists()  # no silent fallback to SQLite


def test_a_non_postgres_url_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError):
        open_store(Settings(home=tmp_path, database_url="mysql://x@localhost/db"))


def test_the_url_selects_the_backend(tmp_path: Path, pg_url: str) -> None:
    sqlite = open_store(Settings(home=tmp_path))
    assert isinstance(sqlite, SqliteStore)
    sqlite.close()
    with open_agent("alice", settings=Settings(home=tmp_path, database_url=pg_url)) as mem:
        assert isinstance(mem.store, PostgresStore)
        started = mem.activities.start("task", "Deploy the gateway")
        mem.activities.log(started, "text", "ECONNREFUSED from upstream")
        mem.activities.end(started)
        hits = mem.activities.search("econnrefused")
        assert [h.activity.id for h in hits] == [started]
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM agent_activities").fetchone()[0] == 1


def test_stores_on_one_url_share_one_pool(pg_url: str) -> None:
    first, second = PostgresStore(pg_url), PostgresStore(pg_url)
    assert first.database._pool is second.database._pool
    first.close()
    second.activities.insert_activity(Activity("act-1", "a1", "task", "still open", T0))
    assert second.activities.get_activity("a1", "act-1") is not None
    second.close()
    with pytest.raises(ClosedError):
        second.activities.get_activity("a1", "act-1")


def test_a_failed_write_leaves_nothing_behind(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    with pytest.raises(RuntimeError), store.database.write() as conn:
        conn.execute(
            "INSERT INTO mailbox_items (id, agent_id, source_type, queued_at) "
            "VALUES ('mb1', 'a1', 'chat', now())"
        )
        raise RuntimeError("crash between statements")
    assert store.mailbox.get_mailbox_item("a1", "mb1") is None
    store.activities.insert_activity(Activity("act-1", "a1", "task", "original label", T0))
    with pytest.raises(StorageError):
        store.activities.insert_activity(Activity("act-1", "a1", "task", "duplicate", T0))
    assert [h.activity.label for h in store.activities.search_activities("a1", "original")] == [
        "original label"
    ]
    assert store.activities.search_activities("a1", "duplicate") == []
    store.close()


def test_a_connection_lost_mid_write_raises_unavailable_and_commits_nothing(
    pg_url: str,
) -> None:
    store = PostgresStore(pg_url)
    with pytest.raises(BackendUnavailableError), store.database.write() as conn:
        conn.execute(
            "INSERT INTO agent_activities (id, agent_id, type, label, started_at) "
            "VALUES ('act-x', 'a1', 'task', 'half', now())"
        )
        with psycopg.connect(pg_url, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        conn.execute("SELECT 1")
    # The pool replaces the dead connection; the half-written transaction is gone.
    assert store.activities.get_activity("a1", "act-x") is None
    store.close()


def test_reopening_applies_no_migration_twice(pg_url: str) -> None:
    from markus_memory.storage._postgres.schema import migrations

    store = PostgresStore(pg_url)
    assert store.database.migrate(migrations) == []
    store.close()
    with psycopg.connect(pg_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM _markus_migrations ORDER BY name")]
    assert names == [m.name for m in migrations.migrations]


def _append_events(url: str, worker: int, count: int) -> None:
    store = PostgresStore(url)
    try:
        for i in range(count):
            store.activities.append_log(
                "a1", "act-shared", "text", f"w{worker} e{i}", {"w": worker}, T0
            )
    finally:
        store.close()


@pytest.mark.slow
def test_four_processes_append_one_thousand_events_each(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    store.activities.insert_activity(
        Activity("act-shared", "a1", "task", "shared", T0 - timedelta(1))
    )
    ctx = multiprocessing.get_context("spawn")
    # Durability is not under test here: skip the per-commit fsync of a shared machine.
    fast = pg_url.replace("options=", "options=-csynchronous_commit%3Doff%20")
    workers = [ctx.Process(target=_append_events, args=(fast, w, 1000)) for w in range(4)]
    for proc in workers:
        proc.start()
    for proc in workers:
        proc.join(timeout=300)
    assert [proc.exitcode for proc in workers] == [0, 0, 0, 0]
    logs = store.activities.activity_logs("a1", "act-shared")
    assert len(logs) == 4000
    assert [log.seq for log in logs] == list(range(1, 4001))
    assert {log.content for log in logs} == {f"w{w} e{i}" for w in range(4) for i in range(1000)}
    store.close()


def test_timeouts_are_added_to_the_url_unless_it_sets_them() -> None:
    from markus_memory.storage._postgres.conn import conninfo_with_timeouts

    to_dict = psycopg.conninfo.conninfo_to_dict
    plain = to_dict(conninfo_with_timeouts("postgresql://u@h/db", 5.0, 30_000))
    assert plain["connect_timeout"] == "5"
    assert plain["options"] == "-c statement_timeout=30000"
    own = to_dict(
        conninfo_with_timeouts(
            "postgresql://u@h/db?connect_timeout=2&options=-csearch_path%3Dx%20"
            "-cstatement_timeout%3D9",
            5.0,
            30_000,
        )
    )
    assert own["connect_timeout"] == "2"
    assert own["options"] == "-csearch_path=x -cstatement_timeout=9"


def test_without_psycopg_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from markus_memory.errors import ExtraNotInstalledError

    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an uninstalled package looks like
    with pytest.raises(ExtraNotInstalledError) as caught:
        PostgresStore("postgresql://postgres@127.0.0.1:5432/test")
    assert caught.value.extra == "postgres"


def _open_and_close(url: str) -> None:
    PostgresStore(url).close()


@pytest.mark.slow
def test_concurrent_first_opens_migrate_once(pg_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_open_and_close, args=(pg_url,)) for _ in range(3)]
    for proc in workers:
        proc.start()
    for proc in workers:
        proc.join(timeout=120)
    assert [proc.exitcode for proc in workers] == [0, 0, 0]
    with psycopg.connect(pg_url) as conn:
        counts = conn.execute(
            "SELECT count(*), count(DISTINCT (migration_set, name)) FROM _markus_migrations"
        ).fetchone()
    applied = len(postgres_schema.migrations.migrations)
    assert counts is not None and counts[0] == counts[1] == applied
