"""Writes through several handles of one SQLite file share a transaction when asked
(``Database.together``): each is a savepoint of it, so one that fails undoes itself alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory.storage._sqlite.conn import SqliteDatabase


def rows(db: SqliteDatabase) -> list[int]:
    with db.read() as conn:
        return [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")]


def test_writes_of_two_handles_commit_together_and_a_failed_one_alone(tmp_path: Path) -> None:
    a, b = SqliteDatabase(tmp_path / "data.db"), SqliteDatabase(tmp_path / "data.db")
    try:
        with a.write() as conn:
            conn.execute("CREATE TABLE t (x INTEGER)")
        together = a.together()
        assert together.key == b.together().key != SqliteDatabase(tmp_path / "x.db").together().key
        with together.transaction():
            with a.write() as conn:
                conn.execute("INSERT INTO t VALUES (1)")
            with pytest.raises(ZeroDivisionError), b.write() as conn:
                conn.execute("INSERT INTO t VALUES (2)")
                raise ZeroDivisionError
            with b.write() as conn:
                conn.execute("INSERT INTO t VALUES (3)")
            assert a.connection().in_transaction  # one transaction, committed as it ends
        assert rows(b) == [1, 3]
        with pytest.raises(ZeroDivisionError), together.transaction():
            with a.write() as conn:
                conn.execute("INSERT INTO t VALUES (4)")
            raise ZeroDivisionError
        assert rows(a) == [1, 3]  # the failed transaction took its savepoints with it
    finally:
        a.close()
        b.close()
