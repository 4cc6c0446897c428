"""The ``tsvector`` and ``tsquery`` input written from the analyser's terms, read back by
PostgreSQL: every term arrives as written, with its weight, and a query of its terms matches."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from markus_memory.analysis import tokens
from markus_memory.storage._postgres.activity_search import (
    MAX_POSITION,
    MAX_POSITIONS,
    document_text,
    headline_text,
    lexeme,
    query_text,
)

from .pg import server_url

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_characters="\x00"),
        st.sampled_from("ab.c 'd\\ 数据 दिल्ली 🚀 a.b.c"),
    ),
    max_size=60,
)


@pytest.fixture(scope="module")
def conn() -> Iterator[Any]:
    import psycopg

    with psycopg.connect(server_url(), autocommit=True) as connection:
        yield connection


@given(label=TEXT, keywords=TEXT, summary=TEXT, logs=TEXT)
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_documents_hold_exactly_the_analysed_terms_with_their_weights(
    conn: Any, label: str, keywords: str, summary: str, logs: str
) -> None:
    document = document_text(label, keywords, summary, logs)
    lexemes = conn.execute("SELECT tsvector_to_array(%s::tsvector)", (document,)).fetchone()[0]
    fields = (label, keywords, summary, logs)
    terms = {t for text in fields for t in tokens(text) if t}
    assert sorted(lexemes) == sorted(terms)
    headline = conn.execute(
        "SELECT tsvector_to_array(%s::tsvector)", (headline_text(label, keywords),)
    )
    assert sorted(headline.fetchone()[0]) == sorted(
        {t for t in tokens(f"{label}\n{keywords}") if t}
    )
    if terms:
        every = query_text(sorted(terms))
        found = conn.execute("SELECT %s::tsvector @@ %s::tsquery", (document, every)).fetchone()
        assert found[0] is True
    for weight, text in zip("abcd", fields, strict=True):
        weighted = conn.execute(
            "SELECT tsvector_to_array(ts_filter(%s::tsvector, %s))", (document, [weight])
        ).fetchone()[0]
        assert {t for t in tokens(text) if t} <= set(weighted)


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_term_is_one_lexeme_as_written(conn: Any, term: str) -> None:
    # PostgreSQL reads the lexeme back as the term, and writes the query out as it was given.
    query = query_text([term, "x"], any_term=True)
    row = conn.execute(
        "SELECT tsvector_to_array(%s::tsvector), querytree(%s::tsquery)", (lexeme(term), query)
    ).fetchone()
    assert row == ([term], query)


def test_a_long_log_keeps_the_limits_of_a_tsvector(conn: Any) -> None:
    # A lexeme keeps its first MAX_POSITIONS positions; positions stop at MAX_POSITION.
    document = document_text("deploy", "", "", " ".join(["word"] * 20_000))
    row = conn.execute(
        "SELECT length(%s::tsvector), (SELECT array_length(positions, 1) FROM "
        "unnest(%s::tsvector) WHERE lexeme = 'word')",
        (document, document),
    ).fetchone()
    assert row == (2, MAX_POSITIONS)
    document = document_text("deploy", "", "", " ".join(f"w{i}" for i in range(17_000)))
    row = conn.execute(
        "SELECT length(d), (SELECT max(p) FROM unnest(d) u, unnest(u.positions) p) "
        "FROM (SELECT %s::tsvector AS d) t",
        (document,),
    ).fetchone()
    assert row == (17_001, MAX_POSITION)
