"""migrate (legacy Markus files into knowledge.md and state.md); derived data: check, rebuild."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path

import click

from .._docs import DocumentStore
from .._lock import AgentLock
from ..backend import open_backend
from ..config import AgentPaths, Settings
from ..errors import MarkusMemoryError
from ..memory import open_agent
from ..storage._sqlite.conn import damaged, open_sqlite
from ..storage._sqlite.schema import ACTIVITY_SEARCH_TABLES
from ..storage._sqlite.store import SqliteStore
from ..storage.knowledge_schema import SEARCH_TABLES, recreate_sqlite
from ..storage.migrations import BOOKKEEPING_TABLE
from ..storage.recall.index import RECALL_TABLES
from ._common import console, emit_json, existing_agent, json_option, progress, settings_of, table
from ._inspect import agent_ids


def needs_migration(documents: DocumentStore, paths: AgentPaths) -> bool:
    """What AgentMemory would migrate on open: no knowledge.md yet, or a memories.json left.

    Asked of the agent's document store (files or PostgreSQL), as AgentMemory asks it.
    """
    return not documents.exists(paths.knowledge.name) or documents.exists(
        paths.legacy_memories_json.name
    )


def pending_migration(settings: Settings, agent_id: str) -> bool:
    """:func:`needs_migration` for one agent, without opening (and so migrating) it."""
    paths = AgentPaths(settings.agent_dir(agent_id))
    lock = AgentLock(paths.lock, settings.lock_timeout_seconds)
    documents = open_backend(settings).documents(agent_id, paths, lock)
    try:
        return needs_migration(documents, paths)
    finally:
        documents.close()


def selected_agents(settings: Settings, agent: str | None) -> list[str]:
    if agent is None:
        return agent_ids(settings)
    return [existing_agent(settings, agent)]


@click.command()
@click.option("--agent", "-a", help="Only this agent (default: every agent under the home).")
@json_option
@click.pass_context
def migrate(ctx: click.Context, agent: str | None, as_json: bool) -> None:
    """Migrate legacy Markus files (MEMORY.md, memories.json) into knowledge.md and state.md.

    Idempotent; legacy MEMORY.md is kept, memories.json is removed once imported.
    """
    settings = settings_of(ctx)
    rows = []
    agents = selected_agents(settings, agent)
    with progress(not as_json) as bar:
        task = bar.add_task("migrating", total=len(agents))
        for name in agents:
            pending = pending_migration(settings, name)
            if pending:
                with open_agent(name, settings=settings) as mem:
                    count = len(mem.knowledge.observations())
            else:
                count = None
            rows.append({"agent": name, "migrated": pending, "observations": count})
            bar.advance(task)
    if as_json:
        emit_json(rows)
        return
    done = [r for r in rows if r["migrated"]]
    if not done:
        click.echo(f"Nothing to migrate ({len(rows)} agent(s) checked).")
        return
    console().print(
        table(
            "Migrated", ["agent", "observations"], [(r["agent"], r["observations"]) for r in done]
        )
    )


COMMANDS: tuple[click.Command, ...] = (migrate,)


# -- derived data: what doctor checks and reindex rebuilds ------------------------------------

FTS_TABLES = ("activity_fts",)


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


def derived_problems(conn: sqlite3.Connection, behind: Collection[str] = frozenset()) -> list[str]:
    """:func:`derived_gaps` of ``data.db``, and its damaged FTS5 tables."""
    started = {
        str(r[0]) for r in conn.execute(f"SELECT DISTINCT migration_set FROM {BOOKKEEPING_TABLE}")
    }
    present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    problems = derived_gaps(
        "sqlite",
        started,
        behind,
        present.__contains__,
        lambda sql: int(conn.execute(sql).fetchone()[0]),
    )
    for fts in FTS_TABLES:
        if fts in present:
            try:
                conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")
            except sqlite3.Error as exc:
                if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_READONLY"):
                    continue  # FTS5 checks by writing; a read-only file had PRAGMA quick_check
                problems.append(f"{fts} damaged: {exc}")
    return problems


def rebuild_derived(
    settings: Settings, agents: list[str]
) -> tuple[list[dict[str, object]], list[str]]:
    """Rebuild everything derived from the memory files and the episodic rows: the activity
    search, the conversation transcripts (from the session files) and their recall index, and
    each agent's knowledge search index. Returns ``{"agent", "documents"}`` per agent rebuilt
    and what could not be rebuilt (empty: everything was)."""
    problems: list[str] = []
    rows: list[dict[str, object]] = []
    path = settings.database_path
    backend = open_backend(settings)
    if backend.kind == "sqlite" and path.exists():
        broken = integrity_problem(path)
        if broken is not None:
            return rows, [damaged(path, broken)]
        try:
            store = SqliteStore(path)
            try:
                store.rebuild_derived()
            finally:
                store.close()
            recreate_sqlite(path)
        except (MarkusMemoryError, sqlite3.Error) as exc:
            problems.append(f"{path}: {exc}")
    elif backend.kind == "postgres":
        try:
            episodic = backend.episodic()
            try:
                episodic.rebuild_derived()
            finally:
                episodic.close()
        except MarkusMemoryError as exc:
            problems.append(f"activity search and conversation recall index: {exc}")
    for name in agents:
        try:
            with open_agent(name, settings=settings) as mem:
                mem.catch_up_transcripts()
                mem.rebuild_search_index()
                count = len(mem.knowledge.observations()) + len(mem.knowledge.sections())
            rows.append({"agent": name, "documents": count})
        except (MarkusMemoryError, OSError) as exc:
            problems.append(f"agent {name}: {exc}")
    return rows, problems


def integrity_problem(path: Path) -> str | None:
    """None when SQLite's quick check passes, else what it (or opening the file) says."""
    try:
        conn = open_sqlite(path)[0]
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return str(exc)
    return None if rows == ["ok"] else "; ".join(rows[:3])
