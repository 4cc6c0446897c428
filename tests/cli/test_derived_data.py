"""#12 item 8: doctor finds every missing or damaged derived table and database file; reindex
rebuilds everything derived from the files and says what it could not; a corrupt data.db gets
a plain explanation and the recovery step, never a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from markus_memory import open_agent
from markus_memory.cli import cli

from .conftest import Invoke, as_json


def populated(home: Path) -> None:
    """An agent with knowledge (searched once, so its index exists), an activity and a
    recorded conversation."""
    with open_agent("alice") as mem:
        mem.knowledge.save_observation("The deploy key lives in the vault.")
        assert mem.search("vault").hits
        activity = mem.activities.start("task", "rotate the deploy key")
        mem.activities.log(activity, "tool", "opened the vault")
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": "where is the canoe stored?"})
        mem.sessions.append(sid, {"role": "assistant", "content": "in the boathouse"})
        assert mem.recall_conversation("canoe")


def drop(home: Path, *tables: str) -> None:
    conn = sqlite3.connect(home / "data.db")
    for table in tables:
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()


def works(home: Path) -> None:
    with open_agent("alice") as mem:
        assert mem.search("vault").hits
        assert [h.activity.label for h in mem.activities.search("deploy")] == [
            "rotate the deploy key"
        ]
        assert mem.recall_conversation("canoe", limit=1)[0].text == "where is the canoe stored?"


@pytest.mark.parametrize(
    "tables",
    [("search_postings",), ("activity_fts",), ("recall_postings", "recall_terms")],
)
def test_item8_doctor_reports_a_dropped_derived_table_and_fix_rebuilds_it(
    invoke: Invoke, isolated_home: Path, tables: tuple[str, ...]
) -> None:
    populated(isolated_home)
    drop(isolated_home, *tables)
    report = as_json(invoke("doctor", "--json", code=1))
    failed = [c for c in report["checks"] if not c["ok"]]
    derived = [c for c in failed if c["check"] == "derived data"]
    assert len(derived) == 1 and all(t in derived[0]["detail"] for t in tables)
    result = invoke("doctor", "--fix")
    assert "fixed: data.db: derived data" in result.output and "Traceback" not in result.output
    works(isolated_home)


def test_item8_reindex_rebuilds_every_derived_table_from_the_files(
    invoke: Invoke, isolated_home: Path
) -> None:
    populated(isolated_home)
    drop(isolated_home, "search_postings", "search_docs", "activity_fts", "recall_postings")
    result = invoke("reindex", "--json")
    assert as_json(result) == [{"agent": "alice", "documents": 1}]
    works(isolated_home)
    assert as_json(invoke("doctor", "--json"))["ok"]


def test_item8_reindex_rebuilds_the_transcript_of_a_data_db_moved_aside(
    invoke: Invoke, isolated_home: Path
) -> None:
    populated(isolated_home)
    (isolated_home / "data.db").rename(isolated_home / "data.db.damaged")
    for suffix in ("-wal", "-shm"):
        (isolated_home / f"data.db{suffix}").unlink(missing_ok=True)
    invoke("reindex")
    with open_agent("alice") as mem:
        assert mem.store.transcripts.transcript_marks("alice")
        assert mem.search("vault").hits
        assert mem.recall_conversation("canoe", limit=1)[0].text == "where is the canoe stored?"


def corrupt(path: Path) -> None:
    """Overwrite pages in the middle of the file, as a bad disk would."""
    data = bytearray(path.read_bytes())
    page = 4096
    for start in range(page, len(data) - page, page):
        data[start : start + 300] = b"\xde\xad" * 150
    path.write_bytes(bytes(data))


def test_item8_a_corrupt_data_db_is_explained_with_the_recovery_step(
    isolated_home: Path,
) -> None:
    populated(isolated_home)
    conn = sqlite3.connect(isolated_home / "data.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    corrupt(isolated_home / "data.db")
    runner = CliRunner()
    for args in (
        ["recall", "activities", "deploy", "--agent", "alice"],
        ["reindex"],
        ["doctor"],
    ):
        result = runner.invoke(cli, args)
        output = result.output
        assert result.exit_code == 1, (args, output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args,
            result.exception,
        )
        assert "Traceback" not in output
        assert "damaged" in output and "markus-memory reindex" in output, (args, output)
        assert "backup" in output, (args, output)
