"""Which document store AgentMemory opens: Settings.documents / MARKUS_DOCUMENTS."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory._fs_docs import FileDocuments
from markus_memory.config import Settings
from markus_memory.errors import InvalidInputError
from markus_memory.memory import open_agent
from tests.postgres_support import new_agent_id


@pytest.mark.parametrize(
    ("url", "documents", "expected"),
    [
        (None, "auto", False),
        ("postgresql://h/db", "auto", True),
        ("postgres://h/db", "auto", True),
        ("postgresql://h/db", "files", False),
        ("postgresql://h/db", "postgres", True),
    ],
)
def test_documents_follow_the_database_url(url: str | None, documents: str, expected: bool) -> None:
    assert Settings(database_url=url, documents=documents).documents_on_postgres is expected


@pytest.mark.parametrize(
    ("url", "documents"),
    [(None, "postgres"), ("postgresql://h/d", "db"), ("sqlite:///x.db", "auto")],
)
def test_bad_document_settings_are_refused(url: str | None, documents: str) -> None:
    with pytest.raises(InvalidInputError):
        Settings(database_url=url, documents=documents).documents_on_postgres  # noqa: B018


def test_environment_picks_the_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MARKUS_DATABASE_URL", "postgresql://nowhere/db")
    monkeypatch.setenv("MARKUS_DOCUMENTS", "files")
    settings = Settings.from_env(home=tmp_path)
    assert settings.documents == "files" and not settings.documents_on_postgres
    with open_agent("agt_files", settings=settings) as mem:
        assert isinstance(mem.documents, FileDocuments)
        mem.notebook.upsert("k", "v")
        assert (tmp_path / "agents" / "agt_files" / "NOTEBOOK.md").exists()


def test_a_postgres_url_puts_the_documents_in_postgres(postgres_url: str, tmp_path: Path) -> None:
    from markus_memory.storage._postgres.documents import PostgresDocuments

    agent = new_agent_id()
    with open_agent(agent, settings=Settings(home=tmp_path, database_url=postgres_url)) as mem:
        assert isinstance(mem.documents, PostgresDocuments)
        mem.knowledge.save_observation("stored in a row")
        mem.state.update("focus", "x")
        assert mem.search("row").hits[0].content == "stored in a row"
        assert not (tmp_path / "agents" / agent / "knowledge.md").exists()
    with open_agent(
        agent, settings=Settings(home=tmp_path / "other", database_url=postgres_url)
    ) as mem:
        assert [o.content for o in mem.knowledge.observations()] == ["stored in a row"]


def test_documents_and_episodic_rows_share_one_pool(postgres_url: str, tmp_path: Path) -> None:
    """One connection layer: the documents use the episodic store's pool, timeouts, migrations."""
    from markus_memory.storage._postgres.documents import PostgresDocuments

    settings = Settings(home=tmp_path, database_url=postgres_url)
    with open_agent(new_agent_id(), settings=settings) as mem:
        assert isinstance(mem.documents, PostgresDocuments)
        store = mem.store
        assert mem.documents.database.conninfo == store.database.conninfo  # type: ignore[attr-defined]
        assert mem.documents.database._pool is store.database._pool  # type: ignore[attr-defined]
        assert "statement_timeout" in store.database.conninfo  # type: ignore[attr-defined]
        with mem.documents.database.read() as conn:
            applied = conn.execute(
                "SELECT migration_set FROM _markus_migrations WHERE migration_set = 'documents'"
            ).fetchall()
        assert applied == [("documents",)]


def test_an_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("psycopg_pool", reason="the [postgres] extra is not installed")
    from markus_memory.errors import BackendUnavailableError

    settings = Settings(
        home=tmp_path,
        database_url="postgresql://postgres@127.0.0.1:1/none?connect_timeout=1",
        lock_timeout_seconds=0.5,
    )
    with pytest.raises(BackendUnavailableError, match="PostgreSQL unreachable"):
        open_agent("agt_nowhere", settings=settings)
