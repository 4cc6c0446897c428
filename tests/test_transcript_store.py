"""The durable transcript: every append in the episodic store, recall backfilled from it.

Each test runs on SQLite and, with ``MARKUS_TEST_POSTGRES_URL``, on PostgreSQL."""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings, epoch_ms, iso_ms
from markus_memory.memory import AgentMemory
from markus_memory.storage.repos.transcripts import TranscriptMark
from tests.postgres_support import postgres_url  # noqa: F401  (fixture)

T0 = datetime(2024, 2, 1, 9, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


class Home:
    """One agent's session files with its store on either backend: SQLite ``data.db`` or the
    run's PostgreSQL schema (with ``documents="files"``: sessions the database holds are
    tested in ``test_many_hosts.py``)."""

    def __init__(self, tmp_path: Path, clock: Clock, url: str | None) -> None:
        self.agent_id = "alice" if url is None else f"alice_{secrets.token_hex(4)}"
        documents = "auto" if url is None else "files"
        self.settings = Settings(home=tmp_path, clock=clock, database_url=url, documents=documents)
        self.dir = tmp_path / "agents" / self.agent_id

    def open(self) -> AgentMemory:
        return open_agent(self.agent_id, settings=self.settings)


@pytest.fixture(params=["sqlite", "postgres"])
def home(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Home:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return Home(tmp_path, clock, url)


def write_markus_session(
    home: Home, sid: str, texts: list[str], started: datetime, *, mtime: datetime
) -> Path:
    """A session file as the original Markus wrote it (no journal, no store)."""
    path = home.dir / "sessions" / f"{sid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "id": sid,
        "agentId": home.agent_id,
        "messages": [
            {"role": "user" if n % 2 == 0 else "assistant", "content": text}
            for n, text in enumerate(texts)
        ],
        "startedAt": iso_ms(started),
        "lastActivityAt": iso_ms(mtime),
    }
    path.write_text(json.dumps(body, indent=2), encoding="utf-8")
    stamp = epoch_ms(mtime) * 1_000_000
    os.utime(path, ns=(stamp, stamp))
    return path


def test_every_append_is_recorded_with_speaker_time_and_metadata(home, clock) -> None:  # type: ignore[no-untyped-def]
    said = "2023-05-08T13:56:00.000Z"
    with home.open() as mem:
        sid = mem.sessions.create().id
        clock.now = T0 + timedelta(minutes=1)
        mem.sessions.append(
            sid, {"role": "user", "content": "hi", "metadata": {"speaker": " Caroline "}}
        )
        clock.now = T0 + timedelta(minutes=2)
        mem.sessions.append(sid, {"role": "assistant", "content": [], "metadata": {}})
        mem.sessions.append(
            sid, {"role": "user", "content": "then", "metadata": {"timestamp": said}}
        )
    with home.open() as mem:  # written in the background: close drained it
        got = mem.store.transcripts.transcript_messages(home.agent_id)
    assert [(m.session_id, m.seq, m.role, m.content) for m in got] == [
        (sid, 0, "user", "hi"),
        (sid, 1, "assistant", ""),
        (sid, 2, "user", "then"),
    ]
    assert got[0].speaker == "Caroline" and got[0].metadata == {"speaker": " Caroline "}
    assert got[0].created_at == T0 + timedelta(minutes=1)
    assert got[1].created_at == T0 + timedelta(minutes=2) and got[1].metadata == {}
    assert got[2].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)


def test_turns_compacted_out_of_a_2000_message_session_are_recalled_after_reopen(
    home, clock
) -> None:  # type: ignore[no-untyped-def]
    with home.open() as mem:
        sid = mem.sessions.create().id
        for n in range(2001):  # the 2001st append compacts: the first 1001 leave the file
            clock.now = T0 + timedelta(seconds=n)
            text = "we adopted a greyhound called Biscuit" if n == 5 else f"turn number {n}"
            mem.sessions.append(sid, {"role": "user", "content": text})
        session = mem.sessions.get(sid)
        assert session is not None and session.compacted == 1001 and len(session.messages) == 1001
        assert all("Biscuit" not in json.dumps(m) for m in session.messages[1:])
        assert mem.sessions.append(sid, {"role": "user", "content": "afterwards"}).seq == 2001
    with home.open() as mem:
        hit = mem.recall_conversation("greyhound Biscuit", limit=1, neighbours=1)[0]
        assert (hit.session_id, hit.index) == (sid, 5)
        assert hit.timestamp == T0 + timedelta(seconds=5)
        assert [(t.index, t.text) for t in hit.before] == [(4, "turn number 4")]
        later = mem.recall_conversation("afterwards", limit=1)[0]
        assert (later.index, later.timestamp) == (2001, T0 + timedelta(seconds=2000))


def test_first_recall_reads_the_store_not_the_session_files(home, clock) -> None:  # type: ignore[no-untyped-def]
    with home.open() as mem:
        sid = mem.sessions.create().id
        mem.sessions.append(sid, {"role": "user", "content": "the blue bicycle"})
        path = mem.sessions.list()[0].path
    # Change the file behind the store's back but keep its activity time: the store is up to
    # date with it, so the file is not even read.
    stat = path.stat()
    path.write_text(path.read_text().replace("blue bicycle", "red scooter"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with home.open() as mem:
        assert mem.recall_conversation("bicycle", limit=1)[0].text == "the blue bicycle"
        assert mem.recall_conversation("scooter", limit=1) == []
    # Deleted session files stay recallable: the store is the durable record.
    for leftover in path.parent.iterdir():
        leftover.unlink()
    with home.open() as mem:
        assert mem.recall_conversation("bicycle", limit=1)[0].session_id == sid


def test_markus_session_files_are_imported_once(home, clock) -> None:  # type: ignore[no-untyped-def]
    start = T0 - timedelta(days=3)
    path = write_markus_session(
        home, "sess_1_old", ["we planned the garden", "tomatoes first"], start, mtime=T0
    )
    with home.open() as mem:
        assert mem.store.transcripts.transcript_marks(home.agent_id) == {}
        hit = mem.recall_conversation("garden", limit=1)[0]
        assert (hit.session_id, hit.index, hit.timestamp) == ("sess_1_old", 0, start)
        assert mem.store.transcripts.transcript_marks(home.agent_id) == {
            "sess_1_old": TranscriptMark(2, T0)
        }
    # Imported once: an unchanged activity time means the file is not read again.
    data = json.loads(path.read_text())
    data["messages"][0]["content"] = "never imported"
    path.write_text(json.dumps(data))
    stamp = epoch_ms(T0) * 1_000_000
    os.utime(path, ns=(stamp, stamp))
    with home.open() as mem:
        assert mem.recall_conversation("imported", limit=1) == []
        # A Markus process appends (newer activity): only the new message is imported.
        data["messages"].append({"role": "user", "content": "and basil"})
        path.write_text(json.dumps(data))
        later = epoch_ms(T0 + timedelta(hours=1)) * 1_000_000
        os.utime(path, ns=(later, later))
    with home.open() as mem:
        assert mem.recall_conversation("basil", limit=1)[0].index == 2
        assert mem.recall_conversation("imported", limit=1) == []
        assert [m.content for m in mem.store.transcripts.transcript_messages(home.agent_id)] == [
            "we planned the garden",
            "tomatoes first",
            "and basil",
        ]


def test_an_append_to_a_markus_session_before_any_recall_still_imports_it(home, clock) -> None:  # type: ignore[no-untyped-def]
    write_markus_session(home, "sess_1_old", ["a kayak trip"], T0, mtime=T0)
    clock.now = T0 + timedelta(minutes=5)
    with home.open() as mem:
        assert mem.sessions.append("sess_1_old", {"role": "user", "content": "rapids"}).seq == 1
        assert (
            mem.store.transcripts.transcript_marks(home.agent_id) == {}
        )  # seq 0 missing: no mark yet
    with home.open() as mem:
        assert mem.recall_conversation("kayak", limit=1)[0].index == 0
        hit = mem.recall_conversation("rapids", limit=1)[0]
        assert (hit.index, hit.timestamp) == (1, T0 + timedelta(minutes=5))


def test_time_filters_use_each_messages_append_time_after_reopening(home, clock) -> None:  # type: ignore[no-untyped-def]
    with home.open() as mem:
        sid = mem.sessions.create().id
        for day in range(4):
            clock.now = T0 + timedelta(days=day)
            mem.sessions.append(sid, {"role": "user", "content": f"lunch note day {day}"})
    with home.open() as mem:
        hits = mem.recall_conversation(
            "lunch note",
            since=T0 + timedelta(days=1),
            until=T0 + timedelta(days=2),
            limit=10,
            neighbours=0,
        )
        assert sorted(h.index for h in hits) == [1, 2]
        assert {h.timestamp for h in hits} == {T0 + timedelta(days=1), T0 + timedelta(days=2)}
        late = mem.recall_conversation("lunch", since=T0 + timedelta(hours=60), limit=10)
        assert [h.index for h in late] == [3]


def test_one_metadata_string_per_message_is_read_without_the_messages(home, clock) -> None:  # type: ignore[no-untyped-def]
    metas = [
        {"claude_code": {"entry": {"uuid": "u-1", "big": "x" * 10_000}}},
        {"claude_code": {"entry": {"uuid": 7}}},  # not a string: left out
        None,
        {"claude_code": {"line": "line:ab"}},
        {"claude_code": {"entry": {"uuid": "u-2 'quoted' \"too\" 雨"}}},
    ]
    with home.open() as mem:
        sid, other = mem.sessions.create().id, mem.sessions.create().id
        for meta in metas:
            message = {"role": "user", "content": "hi"}
            mem.sessions.append(sid, message if meta is None else {**message, "metadata": meta})
        mem.sessions.append(other, {"role": "user", "content": "x", "metadata": metas[0]})
    with home.open() as mem:
        read = mem.store.transcripts.transcript_metadata_strings
        assert read(home.agent_id, sid, ("claude_code", "entry", "uuid")) == [
            "u-1",
            "u-2 'quoted' \"too\" 雨",
        ]
        assert read(home.agent_id, sid, ("claude_code", "line")) == ["line:ab"]
        assert read(home.agent_id, "nope", ("claude_code", "line")) == []
