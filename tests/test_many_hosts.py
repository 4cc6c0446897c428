"""Many hosts, one memory: with PostgreSQL every layer, sessions and daily logs included, is
read and written the same from any home (two homes = two hosts, one database)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from markus_memory import Limits, Settings, open_agent
from markus_memory.config import AgentPaths
from markus_memory.errors import NotFoundError
from markus_memory.layers.sessions import SessionStore
from markus_memory.layers.sessions._move_in import session_text
from tests.postgres_support import new_agent_id


def host(url: str, home: Path, **limits: int) -> Settings:
    return Settings(home=home, database_url=url, embedder="none", limits=Limits(**limits))


def test_a_conversation_is_listed_loaded_appended_compacted_and_recalled_anywhere(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    a = open_agent(agent, settings=host(postgres_url, tmp_path / "a"))
    b = open_agent(agent, settings=host(postgres_url, tmp_path / "b"))
    with a, b:
        a.sessions.get_or_create("chat1")
        a.sessions.append("chat1", {"role": "user", "content": "the lighthouse keeper is Ada"})
        assert [i.id for i in b.sessions.list()] == ["chat1"]
        got = b.sessions.get("chat1")
        assert got is not None and got.messages[0]["content"] == "the lighthouse keeper is Ada"
        b.sessions.append("chat1", {"role": "assistant", "content": "noted"})
        seen = a.sessions.get("chat1")
        assert seen is not None and [m["content"] for m in seen.messages] == [
            "the lighthouse keeper is Ada",
            "noted",
        ]
        result = b.sessions.compact("chat1", keep_last=1)
        assert result.flushed_count == 1
        compacted = a.sessions.get("chat1")
        assert compacted is not None and compacted.compacted == 1
        assert compacted.messages[0]["content"].startswith("[Conversation history summary")
        assert compacted.seq(1) == 1
        hits = a.recall_conversation("lighthouse keeper")
        assert hits and hits[0].session_id == "chat1"  # compacted turns stay recallable
        assert a.sessions.latest_main() is not None
        assert not list((tmp_path / "a").rglob("*.json"))  # no session file on either host
        assert not list((tmp_path / "b").rglob("*.json"))


def test_automatic_compaction_keeps_the_seed_view_and_every_row(
    postgres_url: str, tmp_path: Path
) -> None:
    settings = host(postgres_url, tmp_path, session_compact_trigger=20, session_compact_keep=10)
    with open_agent(new_agent_id(), settings=settings) as mem:
        mem.sessions.get_or_create("s")
        for n in range(25):
            mem.sessions.append("s", {"role": "user", "content": f"turn {n}"})
        view = mem.sessions.get("s")
        assert view is not None
        assert len(view.messages) <= 20 and view.messages[-1]["content"] == "turn 24"
        assert [view.seq(i) for i in range(1, len(view.messages))] == list(
            range(25 - len(view.messages) + 1, 25)
        )
        assert mem.recall_conversation("turn 3")[0].text == "turn 3"


def test_an_unknown_session_is_refused_and_a_restore_starts_one(
    postgres_url: str, tmp_path: Path
) -> None:
    with open_agent(new_agent_id(), settings=host(postgres_url, tmp_path)) as mem:
        with pytest.raises(NotFoundError):
            mem.sessions.append("nope", {"role": "user", "content": "x"})
        restored = mem.sessions.restore(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        )
        assert [m["content"] for m in restored.messages] == ["hi", "hello"]
        assert mem.sessions.recent(restored.id, 1) == [{"role": "assistant", "content": "hello"}]
        assert mem.delete_session(restored.id)
        assert mem.sessions.get(restored.id) is None


def test_daily_logs_are_shared(postgres_url: str, tmp_path: Path) -> None:
    agent = new_agent_id()
    with open_agent(agent, settings=host(postgres_url, tmp_path / "a")) as a:
        entry = a.daily_log.write("shipped the release")
        assert entry.path is None
    with open_agent(agent, settings=host(postgres_url, tmp_path / "b")) as b:
        assert "shipped the release" in b.daily_log.read()
        assert b.daily_log.days() == [entry.day]
        assert "shipped the release" in b.daily_log.recent(1)
    assert not (tmp_path / "a" / "agents" / agent / "daily-logs").exists()


def _old_version_files(url: str, home: Path, agent: str) -> Path:
    """Session files and a daily log as the previous version kept them on a PostgreSQL
    deployment (in the host's home), with one session compacted."""
    root = home / "agents" / agent
    limits = Limits(session_compact_trigger=20, session_compact_keep=10)
    with open_agent(agent, settings=host(url, home)) as mem:
        files = SessionStore(AgentPaths(root), mem.lock, limits, mem.settings.clock, agent_id=agent)
        files.get_or_create("long")
        for n in range(30):
            files.append("long", {"role": "user", "content": f"long turn {n}"})
        files.get_or_create("short")
        files.append("short", {"role": "user", "content": "the short one"})
        files.close()
        # the previous version recorded what compaction dropped in the store
        for n in range(30):
            mem.store.transcripts.index_message(
                agent, "long", n, "user", f"long turn {n}", mem.settings.clock()
            )
    (root / "daily-logs").mkdir(exist_ok=True)
    (root / "daily-logs" / "2026-11-30.md").write_text("\n## [09:00:00] Agent: x\n\nold day\n")
    return root


def test_session_files_and_logs_move_into_the_database_once(
    postgres_url: str, tmp_path: Path
) -> None:
    agent = new_agent_id()
    root = _old_version_files(postgres_url, tmp_path / "a", agent)
    backup = tmp_path / "backup"
    shutil.copytree(root / "sessions", backup / "sessions")
    shutil.copytree(root / "daily-logs", backup / "daily-logs")
    with open_agent(agent, settings=host(postgres_url, tmp_path / "a")) as mem:
        assert sorted(i.id for i in mem.sessions.list()) == ["long", "short"]
    assert not list((root / "sessions").glob("*.json"))
    # killed before the files went (or copied back): moving again doubles nothing
    shutil.copytree(backup / "sessions", root / "sessions", dirs_exist_ok=True)
    shutil.copytree(backup / "daily-logs", root / "daily-logs", dirs_exist_ok=True)
    with open_agent(agent, settings=host(postgres_url, tmp_path / "a")) as mem:
        long = mem.sessions.get("long")
        assert long is not None and long.compacted > 0
        assert long.messages[-1]["content"] == "long turn 29"
        rows = mem.store.transcripts.transcript_messages(agent, session_id="long")
        assert [r.seq for r in rows] == list(range(30))
        short = mem.sessions.get("short")
        assert short is not None and [m["content"] for m in short.messages] == ["the short one"]
        assert mem.daily_log.read("2026-11-30").count("old day") == 1
        mem.sessions.append("long", {"role": "user", "content": "after the move"})
        assert mem.store.transcripts.transcript_messages(agent, session_id="long")[-1].seq == 30
    with open_agent(agent, settings=host(postgres_url, tmp_path / "b")) as b:
        long = b.sessions.get("long")
        assert long is not None and long.messages[-1]["content"] == "after the move"


def test_keys_a_session_file_holds_beyond_markus_s_own_move_in_and_back_out(
    postgres_url: str, tmp_path: Path
) -> None:
    """A session file may hold top-level keys the original never wrote (a hand edit, another
    tool's ``name``): moving it into the database kept the messages but dropped those keys."""
    agent = new_agent_id()
    root = _old_version_files(postgres_url, tmp_path / "a", agent)
    path = root / "sessions" / "short.json"
    data = json.loads(path.read_text())
    data["name"] = "the short chat"
    data["labels"] = {"team": "ops"}
    path.write_text(json.dumps(data, indent=2))
    with open_agent(agent, settings=host(postgres_url, tmp_path / "b")) as other:
        assert other.sessions.get("short") is None  # nothing moved yet: host a holds the file
    with open_agent(agent, settings=host(postgres_url, tmp_path / "a")) as mem:
        short = mem.sessions.get("short")
        assert short is not None
        assert dict(short.extra) == {"name": "the short chat", "labels": {"team": "ops"}}
        text = session_text(short)
    assert json.loads(text)["labels"] == {"team": "ops"}
    with open_agent(agent, settings=host(postgres_url, tmp_path / "b")) as b:
        again = b.sessions.get("short")
        assert again is not None and again.extra["name"] == "the short chat"


_OTHER_PROCESS = """
import sys
from markus_memory import Settings, open_agent
home, agent = sys.argv[1], sys.argv[2]
with open_agent(agent, settings=Settings(home=home, embedder="none")) as mem:
    mem.sessions.get_or_create("chat1")
    mem.sessions.append("chat1", {"role": "user", "content": "the harbour master is Bo"})
    mem.daily_log.write("fixed the harbour crane")
"""


def test_two_processes_on_one_sqlite_home_share_a_conversation(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(tmp_path), "agt_sq"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    settings = Settings(home=tmp_path, embedder="none", limits=Limits())
    with open_agent("agt_sq", settings=settings) as mem:
        assert [i.id for i in mem.sessions.list()] == ["chat1"]
        mem.sessions.append("chat1", {"role": "assistant", "content": "noted"})
        got = mem.sessions.get("chat1")
        assert got is not None and [m["content"] for m in got.messages] == [
            "the harbour master is Bo",
            "noted",
        ]
        assert mem.sessions.compact("chat1", keep_last=1).flushed_count == 1
        assert mem.recall_conversation("harbour master")[0].session_id == "chat1"
        assert "fixed the harbour crane" in mem.daily_log.read()


def test_doctor_reports_files_to_move_and_fix_moves_them(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from markus_memory.cli import cli

    agent = new_agent_id()
    root = _old_version_files(postgres_url, tmp_path, agent)
    monkeypatch.setenv("MARKUS_HOME", str(tmp_path))
    monkeypatch.setenv("MARKUS_DATABASE_URL", postgres_url)
    runner = CliRunner()
    before = sorted(p.name for p in (root / "sessions").iterdir())
    checked = runner.invoke(cli, ["doctor", "--agent", agent], catch_exceptions=False)
    assert checked.exit_code == 1 and "3 session and daily log files" in checked.output
    assert (
        sorted(p.name for p in (root / "sessions").iterdir()) == before
    )  # a check changes nothing
    fixed = runner.invoke(cli, ["doctor", "--agent", agent, "--fix"], catch_exceptions=False)
    assert fixed.exit_code == 0, fixed.output
    assert not list((root / "sessions").glob("*.json"))
    with open_agent(agent, settings=host(postgres_url, tmp_path / "other")) as mem:
        assert sorted(i.id for i in mem.sessions.list()) == ["long", "short"]
        assert "old day" in mem.daily_log.read("2026-11-30")


def test_sessions_the_database_holds_start_no_writer_thread(
    postgres_url: str, tmp_path: Path
) -> None:
    import threading

    with open_agent(new_agent_id(), settings=host(postgres_url, tmp_path)) as mem:
        mem.sessions.get_or_create("chat")
        mem.sessions.append("chat", {"role": "user", "content": "stored by the append itself"})
        assert not [t for t in threading.enumerate() if t.name == "markus-transcript"]
        assert mem.recall_conversation("stored append")[0].text == "stored by the append itself"
