"""What ``doctor`` reports about a database, on either engine: the finding (:class:`Check`),
the tables every started migration set must have, and the derived data ``reindex`` rebuilds
(present, and the recall index holding every transcript message with text). Each engine's
checks are in its package (``_sqlite/checks.py``, ``_postgres/checks.py``), run through
:class:`~markus_memory.backend.Backend`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

from ._sqlite.schema import ACTIVITY_SEARCH_TABLES
from .knowledge_schema import SEARCH_TABLES
from .recall.index import RECALL_TABLES

POSTGRES_SUBJECT = "postgresql"
"""The subject of the PostgreSQL database's findings."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One doctor finding."""

    subject: str
    check: str
    ok: bool
    detail: str = ""
    fixable: bool = False
    repair: str = ""
    """What ``doctor --fix`` will change for this finding, in words (empty: the default
    repair of its kind, or none)."""
    target: Path | None = None
    """The file the repair rewrites, for a file-level repair."""


@dataclass(frozen=True)
class DerivedSet:
    """Tables derived from other data, the migration set that creates them, and what
    rebuilds them."""

    migration_set: str
    tables: tuple[str, ...]
    rebuilt_by: str
    postgres_tables: tuple[str, ...] | None = None
    """The tables on PostgreSQL, where they differ."""


DERIVED_SETS = (
    DerivedSet(
        "markus",
        ACTIVITY_SEARCH_TABLES,
        "activity search (from the activities)",
        postgres_tables=("activity_search",),
    ),
    DerivedSet("markus", RECALL_TABLES, "conversation recall index (from the transcripts)"),
    DerivedSet("search-index", SEARCH_TABLES, "knowledge search index (from knowledge.md)"),
)
WITH_TEXT = {
    "sqlite": "trim(content, ' ' || char(9, 10, 13)) <> ''",
    "postgres": "btrim(content, E' \\t\\n\\r') <> ''",
}
"""A transcript message with text: the recall index holds each of them."""


def derived_gaps(
    backend: str,
    started: Collection[str],
    behind: Collection[str],
    exists: Callable[[str], bool],
    count: Callable[[str], int],
) -> list[str]:
    """Missing derived tables of the migration sets the database has started (those
    ``behind`` on their migrations are left to the schema check), and a recall index that
    does not hold every transcript message with text; ``count`` runs a ``SELECT`` of one
    number."""
    problems = []
    for group in DERIVED_SETS:
        if group.migration_set not in started or group.migration_set in behind:
            continue
        tables = group.postgres_tables if backend == "postgres" else None
        missing = [t for t in tables or group.tables if not exists(t)]
        if missing:
            problems.append(f"{group.rebuilt_by}: missing {', '.join(missing)}")
    recall = "markus" in started and "markus" not in behind
    if recall and exists("recall_agents") and exists("transcript_messages"):
        indexed = count("SELECT COALESCE(SUM(docs), 0) FROM recall_agents")
        held = count(f"SELECT count(*) FROM transcript_messages WHERE {WITH_TEXT[backend]}")
        if indexed != held:
            problems.append(
                f"conversation recall index holds {indexed} of {held} transcript messages"
            )
    return problems


def missing_tables(
    expected: Mapping[str, tuple[str, ...]],
    started: Collection[str],
    behind: Collection[str],
    exists: Callable[[str], bool],
) -> list[str]:
    """``set/table`` for every table of a set the database has started (and that is not
    behind: the schema check covers those) that it does not have."""
    return [
        f"{name}/{table}"
        for name, tables in expected.items()
        if name in started and name not in behind
        for table in tables
        if not exists(table)
    ]


def tables_check(subject: str, missing: list[str]) -> Check:
    detail = ""
    if missing:
        detail = (
            f"missing {', '.join(missing)}: a derived table is rebuilt by doctor --fix "
            "(reindex); one that held rows needs the database restored from a backup"
        )
    return Check(subject, "tables present", not missing, detail)
