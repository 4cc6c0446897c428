"""The Python API tells a missing database, a refused login, a missing schema and an unreachable
server apart, with the same explained messages as the command line."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from markus_memory import open_agent
from markus_memory.config import Settings
from markus_memory.errors import (
    BackendUnavailableError,
    DatabaseMissingError,
    LoginRefusedError,
    SchemaMissingError,
)

from .pg import server_url, with_search_path

pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")


def _on(url: str, *, database: str | None = None, user: str | None = None) -> str:
    base, _, query = url.partition("?")
    head, _, name = base.rpartition("/")
    scheme, _, rest = head.partition("://")
    login, _, host = rest.rpartition("@")
    if user is not None:
        login = user
    return f"{scheme}://{login}@{host}/{database or name}" + (f"?{query}" if query else "")


def test_a_missing_database_is_its_own_error_with_the_command_that_creates_it(
    tmp_path: Path,
) -> None:
    url = _on(server_url(), database="markus_engine_dedupe_no_such_db")
    with pytest.raises(DatabaseMissingError) as raised:
        open_agent("alice", settings=Settings(home=tmp_path, database_url=url)).close()
    message = str(raised.value)
    assert "has no database 'markus_engine_dedupe_no_such_db'" in message
    assert "createdb" in message and "unreachable" not in message


def test_a_refused_login_is_its_own_error(tmp_path: Path) -> None:
    url = _on(server_url(), user="markus_engine_dedupe_nobody")
    with pytest.raises(LoginRefusedError, match="refused the login"):
        open_agent("alice", settings=Settings(home=tmp_path, database_url=url)).close()


def test_a_missing_search_path_schema_is_its_own_error(tmp_path: Path) -> None:
    url = with_search_path(server_url(), "markus_engine_dedupe_no_such_schema")
    with pytest.raises(SchemaMissingError, match="CREATE SCHEMA"):
        open_agent("alice", settings=Settings(home=tmp_path, database_url=url)).close()


def test_an_unreachable_server_is_neither_of_those(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"postgresql://postgres@127.0.0.1:{port}/test?connect_timeout=1"
    with pytest.raises(BackendUnavailableError) as raised:
        open_agent("alice", settings=Settings(home=tmp_path, database_url=url)).close()
    assert not isinstance(raised.value, (DatabaseMissingError, LoginRefusedError))
    assert "unreachable" in str(raised.value) and "start the server" in str(raised.value)
