"""The one backend seam: one rule for what a URL means, and every store opened through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from markus_memory._fs_docs import FileDocuments
from markus_memory._lock import AgentLock
from markus_memory.backend import open_backend
from markus_memory.config import AgentPaths, Settings
from markus_memory.errors import InvalidInputError
from markus_memory.memory import open_agent
from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.audit import SqliteAuditLog


def _paths(tmp_path: Path) -> tuple[AgentPaths, AgentLock]:
    paths = AgentPaths(tmp_path / "agents" / "a")
    paths.root.mkdir(parents=True)
    return paths, AgentLock(paths.lock, 1.0)


def test_without_a_url_everything_is_in_the_home(tmp_path: Path) -> None:
    backend = open_backend(Settings(home=tmp_path))
    assert backend.kind == "sqlite" and not backend.documents_on_postgres
    assert not backend.has_episodic()  # asking does not create data.db
    assert backend.place == f"file:{(tmp_path / 'data.db').resolve()}"
    paths, lock = _paths(tmp_path)
    documents = backend.documents("a", paths, lock)
    assert isinstance(documents, FileDocuments)
    store = backend.episodic()
    try:
        assert isinstance(store, SqliteStore) and store.database.path == tmp_path / "data.db"
    finally:
        store.close()
    index = backend.knowledge_index()
    assert index is not None and index.database.dialect.name == "sqlite"
    index.close()
    audit = backend.dream_audit(documents)
    assert isinstance(audit, SqliteAuditLog) and audit.path == tmp_path / "data.db"


@pytest.mark.parametrize("url", ["mysql://x@localhost/db", "sqlite:///tmp/x.db", "data.db"])
def test_a_url_that_is_not_postgresql_is_refused_before_anything_is_created(
    tmp_path: Path, url: str
) -> None:
    settings = Settings(home=tmp_path, database_url=url)
    with pytest.raises(InvalidInputError, match="postgresql://"):
        open_backend(settings)
    with pytest.raises(InvalidInputError):
        open_agent("a", settings=settings)
    assert not (tmp_path / "agents").exists() and not (tmp_path / "data.db").exists()


def test_files_documents_with_any_url_keep_the_files_rule(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, database_url="postgresql://u@h/db", documents="files")
    backend = open_backend(settings)
    assert backend.kind == "postgres" and not backend.documents_on_postgres
    assert backend.place == "url:postgresql://u@h/db" and backend.has_episodic()


def test_the_agent_asks_its_backend(tmp_path: Path, pg_url: str) -> None:
    from markus_memory.storage._postgres.documents import PostgresDocuments
    from markus_memory.storage._postgres.store import PostgresStore
    from markus_memory.storage.audit import PostgresAuditLog

    with open_agent("a", settings=Settings(home=tmp_path, database_url=pg_url)) as mem:
        assert mem.backend.kind == "postgres"
        assert isinstance(mem.documents, PostgresDocuments)
        assert isinstance(mem.store, PostgresStore)
        index = mem.backend.knowledge_index()
        assert index is not None and index.database.dialect.name == "postgres"
        index.close()
        assert isinstance(mem.backend.dream_audit(mem.documents), PostgresAuditLog)
        items = mem.backend.kv_table(mem.agent_id)
        assert items.dialect.name == "postgres"
        items.close()
    assert not (tmp_path / "data.db").exists()


def test_every_migration_set_in_data_db_is_in_the_one_registry(tmp_path: Path) -> None:
    """doctor checks DATA_DB_MIGRATIONS: a set applied to data.db but missing there would go
    unchecked."""
    import sqlite3

    from markus_memory.dream import dream
    from markus_memory.storage._sqlite.checks import DATA_DB_MIGRATIONS
    from markus_memory.storage.migrations import BOOKKEEPING_TABLE

    with open_agent("a", settings=Settings(home=tmp_path)) as mem:
        mem.knowledge.add_observations([])
        mem.search("anything")
        mem.activities.start("task", "touch the episodic store")
        dream(mem)
        mem.backend.kv_table(mem.agent_id).close()  # the LangGraph store's items
    conn = sqlite3.connect(tmp_path / "data.db")
    try:
        applied = {r[0] for r in conn.execute(f"SELECT migration_set FROM {BOOKKEEPING_TABLE}")}
    finally:
        conn.close()
    registered = [m.name for m in DATA_DB_MIGRATIONS]
    assert len(set(registered)) == len(registered)
    assert applied == set(registered)
