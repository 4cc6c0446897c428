"""A URL whose search_path names a missing schema: the command line names the schema and
says how to create it."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tests.postgres_support import URL_ENV, schema_url

from .conftest import Invoke


def test_the_missing_schema_is_named_with_how_to_create_it(
    invoke: Invoke, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    server = os.environ.get(URL_ENV)
    if not server:
        pytest.skip(f"{URL_ENV} is not set")
    pytest.importorskip("psycopg")
    schema = f"markus_absent_{secrets.token_hex(4)}"
    monkeypatch.setenv("MARKUS_DATABASE_URL", schema_url(server, schema))
    out = invoke("init", "--agent", "alice", code=1).output
    assert f"schema '{schema}'" in out
    assert f"-c 'CREATE SCHEMA {schema}'" in out and "psql -h" in out
