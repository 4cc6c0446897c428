"""Which agents exist, through the command line: writes refuse unknown agents as reads do,
files and PostgreSQL are listed together and their disagreements said, an agent is deleted
with every trace of it."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from markus_memory import Settings, open_agent
from markus_memory.storage.recall.rank import agent_key
from tests.postgres_support import new_agent_id, postgres_url
from tests.search.fakes import FakeEmbedder

from .conftest import Invoke, as_json

__all__ = ["postgres_url"]

WRITES = {
    "save": ("save", "Deploys run on Fridays."),
    "notebook set": ("notebook", "set", "task", "ship it"),
    "state set": ("state", "set", "focus", "review"),
    "knowledge edit": ("knowledge", "edit", "Team", "--content", "Ana leads."),
}


@pytest.mark.parametrize("command", sorted(WRITES))
def test_a_write_to_a_mistyped_agent_is_refused(
    command: str, invoke: Invoke, isolated_home: Path
) -> None:
    invoke("init", "--agent", "alice")
    result = invoke(*WRITES[command], "--agent", "alcie", code=1)
    assert "no agent 'alcie'" in result.stderr and "agents: alice" in result.stderr
    assert "markus-memory init --agent alcie" in result.stderr
    assert not (isolated_home / "agents" / "alcie").exists()
    invoke(*WRITES[command], "--agent", "alice")  # the agent that exists takes the write


def _agent_with_text(settings: Settings, agent_id: str, text: str) -> None:
    with open_agent(agent_id, settings=settings, embedder=FakeEmbedder()) as mem:
        mem.knowledge.save_observation(f"{text} in knowledge")
        mem.notebook.upsert("task", text)
        session = mem.sessions.create()
        mem.sessions.append(session.id, {"role": "user", "content": f"{text} said aloud"})
        mem.sessions.flush()
        mem.catch_up_transcripts()
        assert mem.recall_conversation(text)
        assert mem.search(text).hits
        done = mem.activities.start("task", f"{text} task")
        mem.activities.end(done)


def _traces(settings: Settings, agent_id: str, text: str) -> dict[str, int]:
    """What recall, search and the activity search find of ``text`` for ``agent_id``."""
    with open_agent(agent_id, settings=settings, embedder=FakeEmbedder()) as mem:
        return {
            "recall": len(mem.recall_conversation(text)),
            "search": len(mem.search(text).hits),
            "activities": len(mem.activities.search(text)),
        }


def _delete_leaves_nothing(
    invoke: Invoke, settings: Settings, rows_left: Callable[[], dict[str, int]]
) -> None:
    _agent_with_text(settings, "doomed", "zanzibar")
    _agent_with_text(settings, "kept", "zanzibar")
    refused = invoke("agent", "delete", "doomed", input="n\n", code=1)
    assert "markus-memory export --to-home" in refused.stderr  # an export offered first
    assert "doomed" in as_json(invoke("agents", "--json"))["agents"][0]["agent"]
    report = as_json(invoke("agent", "delete", "doomed", "--yes", "--json"))
    assert report["agent_id"] == "doomed" and report["files"] > 0 and report["rows"] >= 2
    listed = [a["agent"] for a in as_json(invoke("agents", "--json"))["agents"]]
    assert listed == ["kept"]
    assert not settings.agent_dir("doomed").exists()
    invoke("show", "--agent", "doomed", code=1)
    assert all(_traces(settings, "kept", "zanzibar").values())
    assert set(rows_left().values()) == {0}, rows_left()
    settings.agent_dir("doomed").mkdir(parents=True)  # the same id again starts empty
    assert _traces(settings, "doomed", "zanzibar") == {"recall": 0, "search": 0, "activities": 0}


TABLES = (
    ("documents", "agent_id", "doomed"),
    ("recall_agents", "agent", agent_key("doomed")),
    ("recall_terms", "agent", agent_key("doomed")),
    ("recall_vectors", "agent", agent_key("doomed")),
    ("transcript_messages", "agent_id", "doomed"),
    ("transcript_marks", "agent_id", "doomed"),
    ("search_docs", "agent_id", "doomed"),
    ("search_vectors", "agent_id", "doomed"),
    ("agent_activities", "agent_id", "doomed"),
    ("dream_runs", "agent_id", "doomed"),
)
"""Where an agent's rows are: every one must be empty after the delete."""


def test_delete_removes_every_trace_of_the_agent_on_sqlite(
    invoke: Invoke, isolated_home: Path
) -> None:
    settings = Settings(home=isolated_home)

    def rows_left() -> dict[str, int]:
        with sqlite3.connect(settings.database_path) as conn:
            found = {}
            for table, column, value in TABLES:
                if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
                    query = f"SELECT COUNT(*) FROM {table} WHERE {column} = ?"
                    found[table] = conn.execute(query, (value,)).fetchone()[0]
            return found

    _delete_leaves_nothing(invoke, settings, rows_left)


def test_delete_removes_every_trace_of_the_agent_on_postgres(
    invoke: Invoke, isolated_home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    schema = postgres_url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}_del")
    url = postgres_url + "_del"
    try:
        monkeypatch.setenv("MARKUS_DATABASE_URL", url)
        settings = Settings(home=isolated_home, database_url=url)

        def rows_left() -> dict[str, int]:
            with psycopg.connect(url) as conn:
                found = {}
                for table, column, value in TABLES:
                    query = f"SELECT COUNT(*) FROM {table} WHERE {column} = %s"
                    row = conn.execute(query, (value,)).fetchone()
                    found[table] = -1 if row is None else int(row[0])
                return found

        _delete_leaves_nothing(invoke, settings, rows_left)
    finally:
        with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema}_del CASCADE")


def test_an_agent_only_in_postgres_is_listed_shown_and_dreamed(
    invoke: Invoke,
    isolated_home: Path,
    tmp_path: Path,
    postgres_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = new_agent_id()
    elsewhere = Settings(home=tmp_path / "other-host", database_url=postgres_url)
    with open_agent(agent, settings=elsewhere) as mem:
        mem.notebook.upsert("task", "made on another host")
    monkeypatch.setenv("MARKUS_DATABASE_URL", postgres_url)
    listed = invoke("agents", "--json")
    entry = next(a for a in as_json(listed)["agents"] if a["agent"] == agent)
    assert entry["where"] == "database" and entry["path"] == ""
    assert f"agent {agent!r} is only in the database" in listed.stderr
    shown = as_json(invoke("show", "--agent", agent, "--json"))
    assert [e["text"] for e in shown["notebook"]["entries"]] == ["made on another host"]
    invoke("dream", "history", "--agent", agent)
    invoke("save", "seen here too", "--agent", agent)


def test_an_agent_not_exported_is_refused_with_the_url_not_shown_empty(
    invoke: Invoke, isolated_home: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = new_agent_id()
    invoke("init", "--agent", agent)
    invoke("save", "only on files", "--agent", agent)
    monkeypatch.setenv("MARKUS_DATABASE_URL", postgres_url)
    for args in (("show",), ("save", "a diverging copy"), ("serve",), ("sessions",)):
        line = invoke(*args, "--agent", agent, code=1).stderr
        assert f"agent {agent!r}" in line and "export" in line, args
    doctor = invoke("doctor", "--agent", agent, "--json", code=1)
    found = [c for c in as_json(doctor)["checks"] if c["subject"] == agent]
    assert [(c["check"], c["ok"]) for c in found] == [("files and database agree", False)]
    assert "only in files" in found[0]["detail"]
    listed = as_json(invoke("agents", "--json"))
    mine = [w for w in listed["warnings"] if f"agent {agent!r}" in w]
    assert "only in files" in mine[0]
    assert "env -u MARKUS_DATABASE_URL markus-memory export" in mine[0]
    monkeypatch.delenv("MARKUS_DATABASE_URL")  # the way out: export from the files
    invoke("export", "--to-database-url", postgres_url, "--agent", agent)
    monkeypatch.setenv("MARKUS_DATABASE_URL", postgres_url)
    assert as_json(invoke("show", "--agent", agent, "--json"))["knowledge"]["observations"] == 1


def test_files_an_export_left_behind_are_not_written_without_the_url(
    invoke: Invoke, isolated_home: Path, postgres_url: str
) -> None:
    agent = new_agent_id()
    invoke("init", "--agent", agent)
    invoke("save", "before the move", "--agent", agent)
    invoke("export", "--to-database-url", postgres_url, "--agent", agent)
    knowledge = isolated_home / "agents" / agent / "knowledge.md"
    before = knowledge.read_bytes()
    for args in (
        ("save", "after the move"),
        ("notebook", "set", "k", "v"),
        ("state", "set", "k", "v"),
    ):
        line = invoke(*args, "--agent", agent, code=1).stderr
        assert "exported to PostgreSQL" in line and "not written" in line, args
    shown = invoke("show", "--agent", agent)
    assert "is a backup" in shown.stderr or "are a backup" in shown.stderr
    assert knowledge.read_bytes() == before
