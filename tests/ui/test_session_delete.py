"""Issue 28: deleting a session removes its files and its text from recall (the transcript
messages, the recall index postings and the vectors) on SQLite and on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.search.embedders import FakeEmbedder
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

SECRET = "zebra quartz marmalade"


def vectors(mem: object, agent: str, model: str) -> int:
    store = mem.store  # type: ignore[attr-defined]
    return sum(len(chunk) for chunk in store.transcripts.recall_vectors(agent, model, newest=1000))


def check_deletion(settings: Settings, agent: str) -> None:
    embedder = FakeEmbedder()
    with open_agent(agent, settings=settings, embedder=embedder) as mem:
        kept = mem.sessions.get_or_create("chat_kept")
        mem.sessions.append(kept.id, {"role": "user", "content": "a kept zebra note"})
        gone = mem.sessions.get_or_create("chat_gone")
        for text in (f"the {SECRET} is here", "and a reply", f"once more {SECRET}"):
            mem.sessions.append(gone.id, {"role": "user", "content": text})
        found = mem.recall_conversation(SECRET, limit=10)
        assert {h.session_id for h in found} == {"chat_gone", "chat_kept"}
        assert vectors(mem, agent, f"{embedder.model}:{embedder.dimension}") == 4
        assert mem.delete_session("chat_gone")
        assert not mem.delete_session("chat_gone")
        assert [s.id for s in mem.sessions.list()] == ["chat_kept"]
        assert mem.sessions.get("chat_gone") is None
        after = mem.recall_conversation(SECRET, limit=10)
        assert [h.session_id for h in after] == ["chat_kept"]
        assert "chat_gone" not in {h.session_id for h in mem.recall_conversation("marmalade")}
        assert mem.store.transcripts.transcript_messages(agent, session_id="chat_gone") == []
        assert vectors(mem, agent, f"{embedder.model}:{embedder.dimension}") == 1
    with open_agent(agent, settings=settings) as mem:  # a new process, bm25 alone
        assert mem.recall_conversation("marmalade", limit=10) == []
        fresh = mem.sessions.get_or_create("chat_gone")
        assert len(fresh.messages) == 0


def test_a_deleted_session_is_gone_from_recall_on_sqlite(tmp_path: Path) -> None:
    check_deletion(Settings(home=tmp_path / "home"), "alice")


def test_a_deleted_session_is_gone_from_recall_on_postgresql(
    postgres_url: str, tmp_path: Path
) -> None:
    check_deletion(Settings(home=tmp_path / "home", database_url=postgres_url), new_agent_id())


def test_an_unknown_or_malformed_session_id(tmp_path: Path) -> None:
    with open_agent("alice", tmp_path / "home") as mem:
        assert not mem.delete_session("never_was")
        with pytest.raises(Exception, match="session id"):
            mem.delete_session("../x")
