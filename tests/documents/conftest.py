from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from markus_memory._docs import DocumentStore
from markus_memory._fs_docs import FileDocuments
from markus_memory._lock import AgentLock
from tests.postgres_support import new_agent_id, postgres_url

__all__ = ["postgres_url"]

BACKENDS = ["files", "postgres"]


def open_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> DocumentStore:
    if kind == "files":
        root = tmp_path / "agents" / "agt_docs"
        return FileDocuments(root, AgentLock(root / ".lock", timeout=10))
    from markus_memory.storage._postgres.documents import PostgresDocuments

    url = request.getfixturevalue("postgres_url")
    return PostgresDocuments(url, new_agent_id(), lock_timeout=10)


@pytest.fixture(params=BACKENDS)
def docs(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DocumentStore]:
    store = open_store(request.param, tmp_path, request)
    yield store
    store.close()
