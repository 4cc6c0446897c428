"""Issue #12 items 1–4: no acknowledged session append is ever lost, duplicated or renumbered.

Each test runs on SQLite and, with ``MARKUS_TEST_POSTGRES_URL``, on PostgreSQL."""

from __future__ import annotations

import secrets
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.errors import CorruptFileError
from markus_memory.memory import AgentMemory
from tests.clocks import FakeClock
from tests.postgres_support import postgres_url  # noqa: F401  (fixture)

T0 = datetime(2024, 2, 1, 9, 0, tzinfo=timezone.utc)


class Home:
    def __init__(self, tmp_path: Path, url: str | None) -> None:
        self.agent_id = "alice" if url is None else f"alice_{secrets.token_hex(4)}"
        self.clock = FakeClock(T0)  # never moves: no test may lean on distinct times
        # Session files with the store on either backend (held sessions: test_many_hosts.py).
        documents = "auto" if url is None else "files"
        self.settings = Settings(
            home=tmp_path, clock=self.clock, database_url=url, documents=documents
        )
        self.sessions = tmp_path / "agents" / self.agent_id / "sessions"

    def open(self) -> AgentMemory:
        return open_agent(self.agent_id, settings=self.settings)


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path) -> Home:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return Home(tmp_path, url)


def say(mem: AgentMemory, sid: str, *texts: str) -> list[int]:
    return [mem.sessions.append(sid, {"role": "user", "content": t}).seq for t in texts]


def recalled(mem: AgentMemory, word: str) -> list[str]:
    return [h.text for h in mem.recall_conversation(word, limit=50) if word in h.text]


def _delete(home: Home, sid: str) -> None:
    for path in home.sessions.iterdir():
        path.unlink()


def _damage(home: Home, sid: str) -> None:
    (home.sessions / f"{sid}.json").write_text("{ not json")
    (home.sessions / f"{sid}.jsonl").unlink(missing_ok=True)


@pytest.mark.parametrize("mishap", [_delete, _damage], ids=["deleted", "damaged"])
def test_item1_restarted_session_keeps_numbers_past_the_store(home, mishap) -> None:  # type: ignore[no-untyped-def]
    sid = "sess_1_restart"
    with home.open() as mem:
        mem.sessions.get_or_create(sid)
        assert say(mem, sid, "alpha one", "alpha two", "alpha three") == [0, 1, 2]
    mishap(home, sid)
    with home.open() as mem:
        try:
            mem.sessions.get(sid)  # a damaged file is set aside when loaded
        except CorruptFileError:
            pass
        mem.sessions.get_or_create(sid)
        seqs = say(mem, sid, "omega one", "omega two")
        assert seqs == [3, 4]
        assert mem.sessions.get(sid).seq(0) == 3
    with home.open() as mem:
        assert sorted(recalled(mem, "alpha")) == ["alpha one", "alpha three", "alpha two"]
        assert sorted(recalled(mem, "omega")) == ["omega one", "omega two"]
        # Compaction then drops the restarted file's messages: they stay recallable.
        mem.sessions.compact(sid, keep_last=0)
        assert say(mem, sid, "omega three") == [5]
    with home.open() as mem:
        assert sorted(recalled(mem, "omega")) == ["omega one", "omega three", "omega two"]


def test_item2_one_damaged_journal_line_keeps_every_intact_record(home) -> None:  # type: ignore[no-untyped-def]
    sid = "sess_1_journal"
    with home.open() as mem:
        mem.sessions.get_or_create(sid)
        say(mem, sid, *(f"note {n} kiwi" for n in range(10)))
        journal = home.sessions / f"{sid}.jsonl"
        lines = journal.read_bytes().split(b"\n")
        assert len(lines) == 12  # header, 10 records, the empty piece after the last newline
        lines[5] = b'{"i":4,"t":"2024-02-01T09:00:00.000Z","m":{"role":"us'  # record 4 torn
        journal.write_bytes(b"\n".join(lines))
    with home.open() as mem:
        session = mem.sessions.get(sid)
        texts = [m["content"] for m in session.messages]
        assert [t for t in texts if "kiwi" in t] == [f"note {n} kiwi" for n in range(10) if n != 4]
        assert [session.seq(i) for i in range(len(texts))] == list(range(10))
        assert "damaged" in texts[4]
        aside = [p for p in home.sessions.iterdir() if ".corrupt-" in p.name]
        assert len(aside) == 1 and b'"i":4' in aside[0].read_bytes()
        assert say(mem, sid, "after kiwi") == [10]  # no number reused
    with home.open() as mem:
        assert len(recalled(mem, "kiwi")) == 11


def test_item3_catch_up_does_not_trust_modification_times(home) -> None:  # type: ignore[no-untyped-def]
    """A message the store never got (its process was killed before the background write) is
    imported even though the file's time equals the store's last sync (a clock that stands
    still, or two appends in the same millisecond)."""
    sid = "sess_1_catchup"
    with home.open() as mem:
        mem.sessions.get_or_create(sid)
        say(mem, sid, "first parrot")
        mem.recall_conversation("parrot")  # the store is in sync with the file
        mem.sessions.on_append = None  # as if killed before the writer stored the next one
        say(mem, sid, "second parrot")
    with home.open() as mem:
        assert sorted(recalled(mem, "parrot")) == ["first parrot", "second parrot"]


DISK_FULL = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from markus_memory import open_agent
    from markus_memory.config import Settings
    settings = Settings(home=Path(sys.argv[1]), database_url=sys.argv[2] or None)
    mem = open_agent("alice", settings=settings)
    mem.store.transcripts.transcript_marks("alice")  # the database exists before the disk fills
    mem.sessions.checkpoint_min_bytes = 0  # checkpoint as soon as the journal outgrows the file
    sid = "sess_1_full"
    mem.sessions.get_or_create(sid)
    mem.sessions.append(sid, {"role": "user", "content": "a" * 90_000})  # checkpointed: 90 kB
    resource.setrlimit(resource.RLIMIT_FSIZE, (200_000, 200_000))  # no file past 200 kB
    outcome = []
    for attempt in range(2):  # the journal holds it (< 200 kB); a checkpoint would need 210 kB
        try:
            mem.sessions.append(sid, {"role": "user", "content": "b" * 120_000})
            outcome.append("ok")
            break
        except Exception as exc:
            outcome.append(type(exc).__name__)
    print(",".join(outcome))
    """
)


def test_item4_disk_full_at_a_checkpoint_either_fails_clean_or_succeeds(home, tmp_path) -> None:  # type: ignore[no-untyped-def]
    if sys.platform == "win32":
        pytest.skip("RLIMIT_FSIZE is POSIX")
    url = home.settings.database_url or ""
    if url:
        pytest.skip("the agent id is fixed in the child; SQLite covers the session files")
    done = subprocess.run(
        [sys.executable, "-c", DISK_FULL, str(tmp_path), url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    outcome = done.stdout.strip().split(",")
    with home.open() as mem:
        stored = [m["content"][0] for m in mem.sessions.get("sess_1_full").messages]
    assert stored.count("b") == (1 if outcome[-1] == "ok" else 0), (outcome, stored)
    assert outcome == ["ok"], done.stderr


JOURNAL_FULL = textwrap.dedent(
    """
    import resource, sys
    from pathlib import Path
    from markus_memory import open_agent
    from markus_memory.config import Settings
    settings = Settings(home=Path(sys.argv[1]))
    mem = open_agent("alice", settings=settings)
    mem.store.transcripts.transcript_marks("alice")  # the database exists before the disk fills
    sid = "sess_1_full"
    mem.sessions.get_or_create(sid)
    mem.sessions.append(sid, {"role": "user", "content": "kept"})
    resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))  # no file past 50 kB
    try:  # the journal takes the first 50 kB of the record, then the disk is full
        mem.sessions.append(sid, {"role": "user", "content": "big" * 30_000})
        print("stored")
    except OSError as exc:
        print(type(exc).__name__)
    print(mem.sessions.append(sid, {"role": "user", "content": "after"}).seq)
    """
)


def test_item4_a_journal_write_that_fails_half_way_stores_nothing(tmp_path: Path) -> None:
    if sys.platform == "win32":
        pytest.skip("RLIMIT_FSIZE is POSIX")
    done = subprocess.run(
        [sys.executable, "-c", JOURNAL_FULL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split() == ["UnwritableError", "1"], done.stderr
    settings = Settings(home=tmp_path)
    with open_agent("alice", settings=settings) as mem:
        messages = mem.sessions.get("sess_1_full").messages
        assert [m["content"] for m in messages] == ["kept", "after"]
        mem.recall_conversation("kept")  # catch-up imports what the full disk kept out
        assert [m.content for m in mem.store.transcripts.transcript_messages("alice")] == [
            "kept",
            "after",
        ]
