"""The WAL of a busy ``data.db`` stays bounded. SQLite restarts its write-ahead log only when a
writer finds it fully checkpointed and no reader in it; with writer threads and readers always
overlapping that moment never came, and the log grew without end (2.6 GB beside a 65 MB
database after 40 agents x 2,000 appends; its index, the -shm file, mapped into every process
that opens the file)."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

import pytest

from markus_memory.storage._sqlite import wal as sqlite_wal
from markus_memory.storage._sqlite.conn import SqliteDatabase

LIMIT = 256 * 1024


def _busy(processes: int) -> dict[str, float]:
    """Two writer threads (300 writes of ~16 kB each) and two readers that never pause, each
    summing the table, in each of ``processes`` processes at once on one file
    (``benchmarks/bench_wal.py``'s load): the largest log seen and the writes refused."""
    from benchmarks import bench_wal

    return bench_wal.one_round(300, True, False, processes, old=False)


def _with_rows(path: Path) -> SqliteDatabase:
    """The store at ``path`` with an empty table ``t`` of blobs."""
    db = SqliteDatabase(path)
    with db.write() as conn:
        conn.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, body BLOB)")
    return db


def test_the_wal_is_restarted_once_it_passes_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", LIMIT)
    seen = _busy(1)
    # 600 transactions of ~16 kB each: 10 MB and more of log without a restart.
    assert seen["wal_mb"] * 1e6 <= 4 * LIMIT and not seen["refused"], seen


def test_two_busy_processes_keep_the_wal_bounded_and_refuse_no_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each process steps aside while the other restarts the log (``data.db-restarting``).
    Before, a restart waited up to the busy timeout for the other process's readers: 27 of
    1,200 writes were refused in a run (42-75 s); with each process draining only its own
    users, the log grew to 17-25 MB against a 256 kB bound."""
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", LIMIT)  # the processes are given it
    seen = _busy(2)
    assert seen["wal_mb"] * 1e6 <= 4 * LIMIT and not seen["refused"], seen


def test_a_restart_mark_left_by_a_dead_process_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", 0)
    path = tmp_path / "data.db"
    db = _with_rows(path)
    mark = Path(f"{path}-restarting")
    mark.touch()
    old = mark.stat().st_mtime - sqlite_wal.STALE_SECONDS - 1
    os.utime(mark, (old, old))
    try:
        with db.write() as conn:
            conn.execute("INSERT INTO t (body) VALUES (randomblob(8000))")
        assert os.path.getsize(f"{path}-wal") == 0 and not mark.exists()
    finally:
        db.close()


def test_a_checkpoint_that_fails_never_fails_the_committed_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A statement of the thread's connection still open makes the checkpoint fail ("table is
    locked") after the commit: the write is there, so the caller is told it succeeded."""
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", 0)
    db = SqliteDatabase(tmp_path / "data.db")
    try:
        with db.write() as conn:
            conn.execute("CREATE TABLE t (n INTEGER)")
            conn.executemany("INSERT INTO t VALUES (?)", [(n,) for n in range(10)])
        pending = db.connection().execute("SELECT n FROM t")
        pending.fetchone()
        with db.write() as conn:
            conn.execute("INSERT INTO t VALUES (10)")
        pending.close()
        with db.read() as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 11
        assert "could not be truncated" in caplog.text
    finally:
        db.close()


def test_a_reader_in_another_process_delays_no_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A reader this process does not know of (another process's recall) pins the log: the
    restart gives up after a short wait and is tried again no sooner than RETRY_SECONDS later.
    It used to hold the write lock up to the busy timeout on every write, so two writers
    refused each other ("database is locked"); once the reader leaves, the log is truncated."""
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", 0)
    monkeypatch.setattr(sqlite_wal, "RETRY_SECONDS", 3600.0)
    caplog.set_level(logging.INFO, logger=sqlite_wal.__name__)
    path = tmp_path / "data.db"
    db = _with_rows(path)
    with db.write() as conn:
        conn.execute("INSERT INTO t (body) VALUES (randomblob(100))")
    elsewhere = sqlite3.connect(path, isolation_level=None)
    elsewhere.execute("BEGIN")
    elsewhere.execute("SELECT count(*) FROM t").fetchone()  # its snapshot keeps it in the log

    def write() -> None:
        for _ in range(20):
            with db.write() as conn:
                conn.execute("INSERT INTO t (body) VALUES (randomblob(8000))")

    try:
        writers = [threading.Thread(target=write) for _ in range(2)]
        for t in writers:
            t.start()
        for t in writers:
            t.join()
        with db.read() as conn:
            assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 41
        assert caplog.text.count("still read elsewhere") == 1
        elsewhere.execute("COMMIT")
        monkeypatch.setattr(sqlite_wal, "RETRY_SECONDS", 0.0)
        monkeypatch.setattr(db._shared.wal, "_retry_at", 0.0)
        with db.write() as conn:
            conn.execute("INSERT INTO t (body) VALUES (randomblob(8000))")
        assert os.path.getsize(f"{path}-wal") == 0
    finally:
        elsewhere.close()
        db.close()


def test_a_write_inside_a_read_of_the_same_thread_restarts_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The restart waits for the file's other users, not for the thread's own outer read."""
    monkeypatch.setattr(sqlite_wal, "WAL_RESTART_BYTES", 0)
    path = tmp_path / "data.db"
    db = SqliteDatabase(path)
    try:
        with db.read() as outer:
            outer.execute("SELECT count(*) FROM sqlite_master").fetchone()
            with db.write() as conn:
                conn.execute("CREATE TABLE t (n INTEGER)")
            assert os.path.getsize(f"{path}-wal") == 0
    finally:
        db.close()


def test_the_benchmark_runs_both_restarts(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import bench_wal

    assert bench_wal.main(["--writes", "20", "--rounds", "1", "--bound-kib", "64"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert rows["wal_mb"][-2:] == ["refused", "seconds"]
    assert rows["now"][4] == "0.000"  # no write refused
    assert sqlite_wal.WAL_RESTART_BYTES == 64 * 1024 * 1024  # the bound is put back
