"""migrate (legacy Markus files into knowledge.md and state.md); derived data: check, rebuild."""

from __future__ import annotations

import click

from .._docs import DocumentStore
from .._lock import AgentLock
from ..backend import open_backend
from ..config import AgentPaths, Settings
from ..errors import MarkusMemoryError
from ..memory import open_agent
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


def rebuild_derived(
    settings: Settings, agents: list[str]
) -> tuple[list[dict[str, object]], list[str]]:
    """Rebuild everything derived from the memory files and the episodic rows: the activity
    search, the conversation transcripts (from the session files) and their recall index, and
    each agent's knowledge search index. Returns ``{"agent", "documents"}`` per agent rebuilt
    and what could not be rebuilt (empty: everything was)."""
    rows: list[dict[str, object]] = []
    backend = open_backend(settings)
    broken = backend.damage()
    if broken is not None:
        return rows, [broken]
    problems = backend.rebuild_derived()
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
