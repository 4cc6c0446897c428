"""The LangGraph search filter in SQL passes exactly the values the Python rule passes, on
SQLite and PostgreSQL (Hypothesis: random JSON values against random filters)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.storage._postgres.dialect import POSTGRES
from markus_memory.storage.kv_filter import condition, matches
from tests.postgres_support import postgres_url  # noqa: F401

FIELDS = ["a", "b", "c d", "é", "x.y", ""]
KEYS = st.sampled_from(FIELDS)
DOC_KEYS = st.sampled_from([*FIELDS, "$z"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.integers(-(2**40), 2**40),
    st.floats(-4, 4, allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "a", "b", "7", "ä", "A", "2026-01-01"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(DOC_KEYS, inner, max_size=3)
    ),
    max_leaves=8,
)
ORDERED = st.one_of(
    st.integers(-3, 3), st.floats(-4, 4, allow_nan=False), st.sampled_from(["", "a", "7", "é"])
)
OPERATORS = st.one_of(
    st.dictionaries(st.sampled_from(["$eq", "$ne"]), SCALARS, min_size=1),
    st.dictionaries(st.sampled_from(["$gt", "$gte", "$lt", "$lte"]), ORDERED, min_size=1),
)
WANTED = st.recursive(
    st.one_of(SCALARS, OPERATORS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(KEYS, inner, min_size=1, max_size=2)
    ),
    max_leaves=4,
)
DOCS = st.lists(st.dictionaries(DOC_KEYS, VALUES, max_size=4), min_size=1, max_size=6)
FILTERS = st.dictionaries(KEYS, WANTED, max_size=3)


def _passing(conn: Any, backend: str, docs: list[dict[str, Any]], filter: Any) -> set[int]:
    where, params = condition(backend, filter, "i.value")  # type: ignore[arg-type]
    sql = f"SELECT id FROM items i WHERE {where or 'TRUE'}"
    if backend == "postgres":
        sql = POSTGRES.sql(sql)
    conn.execute("DELETE FROM items")
    for n, doc in enumerate(docs):
        conn.execute(
            "INSERT INTO items VALUES (?, ?)".replace("?", "%s" if backend == "postgres" else "?"),
            (n, json.dumps(doc, ensure_ascii=False)),  # as the store writes
        )
    return {int(r[0]) for r in conn.execute(sql, params).fetchall()}


@pytest.fixture(scope="module")
def lite() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE items (id INTEGER, value TEXT)")
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def pg(postgres_url: str) -> Iterator[Any]:  # noqa: F811
    psycopg = pytest.importorskip("psycopg")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE items (id INTEGER, value JSONB)")
        yield conn


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, filter=FILTERS)
def test_sqlite_passes_what_the_rule_passes(
    lite: sqlite3.Connection, docs: list[dict[str, Any]], filter: Any
) -> None:
    expected = {n for n, doc in enumerate(docs) if matches(doc, filter)}
    assert _passing(lite, "sqlite", docs, filter) == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=DOCS, filter=FILTERS)
def test_postgres_passes_what_the_rule_passes(
    pg: Any, docs: list[dict[str, Any]], filter: Any
) -> None:
    expected = {n for n, doc in enumerate(docs) if matches(doc, filter)}
    assert _passing(pg, "postgres", docs, filter) == expected


def test_a_field_name_with_a_double_quote_is_refused() -> None:
    for backend in ("sqlite", "postgres"):
        with pytest.raises(ValueError, match="cannot hold"):
            condition(backend, {'a"b': 1})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="cannot hold"):
            condition(backend, {"a": {"b\\c": 1}})  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="cannot hold"):
            condition(backend, {"a\n": 1})  # type: ignore[arg-type]
