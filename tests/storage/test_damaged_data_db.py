"""A data.db found damaged is not written to again: writes are refused with a message that
says so, and closing does not checkpoint the WAL into the file (memory_search used to write
index pages into it, and close() to checkpoint them in)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import Settings, open_agent
from markus_memory.errors import StorageError
from markus_memory.storage.repos.side import MailboxItem

PAGE = 4096


def _digest(path: Path) -> str:
    """The file and its WAL: a write reaches one or the other."""
    wal = path.with_name(path.name + "-wal")
    return hashlib.sha256(
        path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    ).hexdigest()


def _damage_activities(database: Path) -> None:
    """Overwrite the root page of ``agent_activities`` (the other tables stay readable)."""
    with sqlite3.connect(database) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'agent_activities'"
        ).fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with database.open("r+b") as raw:
        raw.seek((root - 1) * page_size)
        raw.write(b"\xff" * page_size)


def _damaged_home(settings: Settings) -> Path:
    """An agent with activities and a search index, then its activities' table damaged."""
    with open_agent("al", settings=settings) as mem:
        for i in range(20):
            mem.activities.end(mem.activities.start("task", f"review {i}"))
        mem.knowledge.save_observation("Deploys run on Fridays.")
        assert mem.search("deploys").hits
    _damage_activities(settings.database_path)
    return settings.database_path


def test_once_found_damaged_data_db_is_never_written_again(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    database = _damaged_home(settings)
    before = _digest(database)
    with open_agent("al", settings=settings) as mem:
        with pytest.raises(StorageError, match="is damaged"):
            mem.activities.list(limit=50)
        mem.knowledge.save_observation("Reviews happen on Mondays.")  # knowledge.md: a file
        with pytest.raises(StorageError, match="Nothing more is written to it"):
            mem.activities.start("task", "a new one")
        item = MailboxItem("mbx_1", "al", "human_chat", datetime(2026, 7, 1, tzinfo=timezone.utc))
        with pytest.raises(StorageError, match="Nothing more is written to it"):
            mem.store.mailbox.save_mailbox_item(item)  # a table the damage did not reach
        try:
            mem.search("mondays")  # would write the new observation's index pages
        except StorageError as exc:
            assert "Nothing more is written to it" in str(exc)
    assert _digest(database) == before
    with open_agent("al", settings=settings) as mem:  # a new handle in this process: the same
        with pytest.raises(StorageError, match="Nothing more is written to it"):
            mem.activities.start("task", "again")
    assert _digest(database) == before


def test_damage_doctor_found_keeps_every_later_process_from_writing(tmp_path: Path) -> None:
    """doctor (another process) finds the damage; a later process writes nothing to the file,
    and its next doctor still says so."""
    settings = Settings(home=tmp_path)
    database = _damaged_home(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKUS_")}
    doctor = [sys.executable, "-c", "from markus_memory.cli import main; main()"]
    found = subprocess.run(
        [*doctor, "--home", str(tmp_path), "doctor"], env=env, capture_output=True, text=True
    )
    assert found.returncode == 1 and "Marked as damaged" in found.stdout
    before = _digest(database)
    check = [sys.executable, "-c", WRITER, str(tmp_path)]
    wrote = subprocess.run(check, env=env, capture_output=True, text=True)
    assert wrote.returncode == 0, wrote.stderr
    assert wrote.stdout.split() == ["refused", "searched"], wrote.stdout
    assert _digest(database) == before


WRITER = """
import sys
from datetime import datetime, timezone
from markus_memory import Settings, open_agent
from markus_memory.errors import StorageError
from markus_memory.storage.repos.side import MailboxItem

with open_agent("al", settings=Settings(home=sys.argv[1])) as mem:
    item = MailboxItem("mbx_1", "al", "human_chat", datetime(2026, 7, 1, tzinfo=timezone.utc))
    try:
        mem.store.mailbox.save_mailbox_item(item)
        print("written")
    except StorageError as exc:
        print("refused" if "Nothing more is written to it" in str(exc) else "other")
    mem.knowledge.save_observation("Reviews happen on Mondays.")
    mem.search("mondays")
    print("searched")
"""
