"""Appends reach the episodic store in the background: never lost, seen by every recall."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Limits, Settings
from markus_memory.errors import BackendUnavailableError
from markus_memory.memory import AgentMemory
from markus_memory.search import transcript_pool
from markus_memory.search.transcript_pool import WRITER_THREADS
from markus_memory.storage._sql import SEARCH_CANDIDATES
from markus_memory.storage._sqlite.store import SqliteStore, add_messages
from markus_memory.storage.base import JsonObject
from markus_memory.storage.repos.transcripts import TranscriptMessage
from markus_memory.storage.transcripts import Transcripts
from tests.postgres_support import new_agent_id
from tests.postgres_support import postgres_url as postgres_url  # fixture


class FlakyTranscripts(Transcripts):
    """A real SQLite store's transcripts, whose writes fail while ``down`` is set."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store.database, add_messages, search_candidates=SEARCH_CANDIDATES)
        self.down = False

    def _check(self) -> None:
        if self.down:
            raise BackendUnavailableError("flaky://store")

    def index_message(
        self,
        agent_id: str,
        session_id: str,
        seq: int,
        role: str,
        content: str,
        created_at: datetime,
        *,
        speaker: str | None = None,
        metadata: JsonObject | None = None,
        appended_at: datetime | None = None,
    ) -> None:
        self._check()
        super().index_message(
            agent_id,
            session_id,
            seq,
            role,
            content,
            created_at,
            speaker=speaker,
            metadata=metadata,
            appended_at=appended_at,
        )

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        self._check()
        return super().import_transcript(agent_id, session_id, messages, synced_at=synced_at)


class GatedTranscripts(Transcripts):
    """A real SQLite store's transcripts, whose imports wait until ``gate`` is set."""

    def __init__(self, store: SqliteStore) -> None:
        super().__init__(store.database, add_messages, search_candidates=SEARCH_CANDIDATES)
        self.gate = threading.Event()

    def import_transcript(
        self,
        agent_id: str,
        session_id: str,
        messages: Sequence[TranscriptMessage],
        *,
        synced_at: datetime,
    ) -> int:
        self.gate.wait()
        return super().import_transcript(agent_id, session_id, messages, synced_at=synced_at)


def store_with(path: Path, transcripts: type[Transcripts]) -> SqliteStore:
    """A real SQLite store on ``path`` whose transcripts are ``transcripts``'."""
    store = SqliteStore(path)
    store.transcripts = transcripts(store)  # type: ignore[call-arg]
    return store


def settings(tmp_path: Path, **limits: int) -> Settings:
    return Settings(home=tmp_path, limits=Limits(**limits))


def stored_seqs(tmp_path: Path, session_id: str) -> list[int]:
    store = SqliteStore(tmp_path / "data.db")
    try:
        return [
            m.seq for m in store.transcripts.transcript_messages("alice", session_id=session_id)
        ]
    finally:
        store.close()


def say(mem: AgentMemory, sid: str, text: str) -> int:
    return mem.sessions.append(sid, {"role": "user", "content": text}).seq


def test_close_writes_every_append_to_the_store_and_stops_the_writer(tmp_path: Path) -> None:
    mem = open_agent("alice", settings=settings(tmp_path))
    sid = mem.sessions.create().id
    for i in range(50):
        say(mem, sid, f"note {i}")
    mem.close()
    assert stored_seqs(tmp_path, sid) == list(range(50))
    assert not any(t.name == "markus-transcript" and t.is_alive() for t in threading.enumerate())


def test_recall_sees_every_append_made_from_several_threads(tmp_path: Path) -> None:
    with open_agent("alice", settings=settings(tmp_path)) as mem:
        sids = [mem.sessions.create().id for _ in range(4)]

        def chat(k: int) -> None:
            for i in range(40):
                say(mem, sids[k], f"thread{k} word{k}x{i}")

        threads = [threading.Thread(target=chat, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k in range(4):
            hit = mem.recall_conversation(f"word{k}x39", limit=1)[0]
            assert (hit.session_id, hit.index) == (sids[k], 39)
        assert all(stored_seqs(tmp_path, sid) == list(range(40)) for sid in sids)


def test_a_failing_store_leaves_the_mark_behind_and_the_next_open_imports(tmp_path: Path) -> None:
    flaky = store_with(tmp_path / "data.db", FlakyTranscripts)
    with open_agent("alice", settings=settings(tmp_path), store=flaky) as mem:
        sid = mem.sessions.create().id
        say(mem, sid, "before the outage")
        mem.recall_conversation("outage")  # drained: seq 0 is stored
        flaky.transcripts.down = True
        say(mem, sid, "during the outage: canoe")
        flaky.transcripts.down = False
        mark = flaky.transcripts.transcript_marks("alice")[sid]
        assert mark.next_seq == 1
        # The store is the index: once it is back, the next recall imports what it missed.
        assert mem.recall_conversation("canoe", limit=1)[0].index == 1
        say(mem, sid, "after the outage: paddle")
        assert mem.recall_conversation("paddle", limit=1)[0].index == 2
    assert stored_seqs(tmp_path, sid) == [0, 1, 2]
    with open_agent("alice", settings=settings(tmp_path)) as mem:
        assert mem.recall_conversation("canoe", limit=1)[0].index == 1
        assert mem.store.transcripts.transcript_marks("alice")[sid].next_seq == 3
    assert stored_seqs(tmp_path, sid) == [0, 1, 2]


def test_compaction_waits_for_queued_writes(tmp_path: Path) -> None:
    gated = store_with(tmp_path / "data.db", GatedTranscripts)
    limits = {"session_compact_trigger": 10, "session_compact_keep": 4}
    with open_agent("alice", settings=settings(tmp_path, **limits), store=gated) as mem:
        sid = mem.sessions.create().id
        opener = threading.Timer(0.2, gated.transcripts.gate.set)
        opener.start()
        for i in range(11):  # the 11th append compacts, dropping seqs 0..6 from the file
            say(mem, sid, f"turn {i}")
        session = mem.sessions.get(sid)
        assert session is not None and session.compacted == 7
        assert [m.seq for m in gated.transcripts.transcript_messages("alice", session_id=sid)][
            :7
        ] == list(range(7))
        opener.join()


def test_compaction_is_deferred_while_the_store_is_down(tmp_path: Path) -> None:
    flaky = store_with(tmp_path / "data.db", FlakyTranscripts)
    limits = {"session_compact_trigger": 10, "session_compact_keep": 4}
    with open_agent("alice", settings=settings(tmp_path, **limits), store=flaky) as mem:
        sid = mem.sessions.create().id
        flaky.transcripts.down = True
        for i in range(12):
            say(mem, sid, f"turn {i}")
        session = mem.sessions.get(sid)
        assert session is not None and session.compacted == 0  # nothing dropped: not stored
        flaky.transcripts.down = False
        say(mem, sid, "turn 12")  # the store is back: the file is imported, then compacted
        session = mem.sessions.get(sid)
        assert session is not None and session.compacted == 9
        assert [
            m.seq for m in flaky.transcripts.transcript_messages("alice", session_id=sid)
        ] == list(range(13))


CHILD = textwrap.dedent(
    """
    import os, signal, sys, threading
    from pathlib import Path
    from markus_memory import open_agent
    from markus_memory.config import Settings
    from markus_memory.storage._sqlite.store import SqliteStore

    home = Path(sys.argv[1])
    stuck = SqliteStore(home / "data.db")
    stuck.transcripts.import_transcript = lambda *args, **kwargs: threading.Event().wait()
    mem = open_agent("alice", settings=Settings(home=home), store=stuck)
    sid = mem.sessions.create().id
    for i in range(200):
        mem.sessions.append(sid, {"role": "user", "content": f"message word{i}"})
    print(sid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.mark.slow
def test_sigkill_with_a_full_queue_loses_no_returned_append(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MARKUS_HOME": str(tmp_path)},
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    sid = child.stdout.strip()
    assert stored_seqs(tmp_path, sid) == []  # the queue died with the process
    with open_agent("alice", settings=settings(tmp_path)) as mem:
        for i in (0, 117, 199):
            hit = mem.recall_conversation(f"word{i}", limit=1)[0]
            assert (hit.session_id, hit.index) == (sid, i)
    assert stored_seqs(tmp_path, sid) == list(range(200))


def test_a_handle_dropped_unclosed_lets_its_writer_thread_end(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    mem = open_agent("alice", settings=settings(tmp_path))
    sid = mem.sessions.create().id
    say(mem, sid, "left open")
    mem.recall_conversation("open")
    (writer,) = [t for t in threading.enumerate() if t not in before]
    del mem
    gc.collect()
    writer.join(timeout=30)
    assert not writer.is_alive()
    assert stored_seqs(tmp_path, sid) == [0]


@pytest.fixture(params=["sqlite", "postgres"])
def many_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    # Session files whose appends the writers record (sessions the database holds are stored
    # by the append itself and start no writer).
    return Settings(home=tmp_path, database_url=url, documents="files" if url else "auto")


def writer_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "markus-transcript"}


def test_many_open_agents_share_a_bounded_number_of_writer_threads(
    many_settings: Settings,
) -> None:
    """One process serving 50 agents at once records their appends with the few threads of
    the shared pool (a thread per agent cost each its stack, its SQLite connection with its
    page cache and descriptors, and starved SQLite writers past their busy timeout)."""
    names = [new_agent_id() for _ in range(50)]
    agents = [open_agent(name, settings=many_settings) for name in names]
    seen: set[threading.Thread] = set()
    try:
        for mem in agents:
            mem.sessions.get_or_create("chat")
        for turn in range(3):
            for mem in agents:
                say(mem, "chat", f"turn{turn} of {mem.agent_id}")
                seen |= writer_threads()
        for mem in agents:
            hit = mem.recall_conversation(f"turn2 {mem.agent_id}", limit=1)[0]
            assert (hit.session_id, hit.index) == ("chat", 2)
            seen |= writer_threads()
    finally:
        for mem in agents:
            mem.close()
    assert 1 <= len(seen) <= WRITER_THREADS
    assert not any(t.is_alive() for t in seen)  # the last close ends them


def test_appends_wait_for_room_once_the_pool_holds_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends arriving faster than the store takes them wait once the process holds
    MAX_HELD of them (it held every one before: memory grew without bound and stayed with
    the allocator); each append still returns once its session file holds it, none is lost."""
    monkeypatch.setattr(transcript_pool, "MAX_HELD", 8)
    gated = store_with(tmp_path / "data.db", GatedTranscripts)
    gate = gated.transcripts.gate
    returned: list[int] = []
    with open_agent("alice", settings=settings(tmp_path), store=gated) as mem:
        sid = mem.sessions.create().id

        def chat() -> None:
            for i in range(20):
                returned.append(say(mem, sid, f"turn {i}"))

        appender = threading.Thread(target=chat)
        appender.start()
        try:
            deadline = time.monotonic() + 30
            while len(returned) < 8 and time.monotonic() < deadline:
                time.sleep(0.01)
            appender.join(timeout=0.5)
            assert appender.is_alive() and len(returned) == 8  # the ninth waits for room
            assert transcript_pool.shared_pool().held == 8
        finally:
            gate.set()
            appender.join()
        assert returned == list(range(20))
    assert stored_seqs(tmp_path, sid) == list(range(20))
