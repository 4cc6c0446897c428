"""A private PostgreSQL schema per test run (``MARKUS_TEST_POSTGRES_URL``), skipped when absent."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from urllib.parse import quote

import pytest

URL_ENV = "MARKUS_TEST_POSTGRES_URL"


def _server_url() -> str:
    url = os.environ.get(URL_ENV)
    if not url:
        pytest.skip(f"{URL_ENV} is not set (e.g. postgresql://postgres@127.0.0.1:5432/test)")
    return url


def schema_url(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` (search_path through the libpq options)."""
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options={quote(f'-csearch_path={schema}')}"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A URL whose connections live in a fresh schema ``markus_test_<random>``, dropped after."""
    psycopg = pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    url = _server_url()
    schema = f"markus_test_{secrets.token_hex(6)}"
    try:
        admin = psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL at {URL_ENV} is unreachable: {exc}")
    with admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield schema_url(url, schema)
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def new_agent_id() -> str:
    """A fresh agent id: tests share the run's schema, never an agent."""
    return f"agt_{secrets.token_hex(5)}"
