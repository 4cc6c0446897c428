"""Search commands: search the semantic memory, rebuild the derived indexes, check them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import click

from .._fs import signature
from ..backend import open_backend
from ..config import Settings
from ..memory import open_agent, open_store
from ..search.corpus import Corpus
from ..search.memory_search import METHOD_RECENT
from ._common import (
    Check,
    agent_option,
    console,
    emit_json,
    existing_agent,
    json_option,
    memory_of,
    settings_of,
    short,
    table,
    when,
)
from ._inspect import agent_ids
from ._maintain import rebuild_derived


@click.command()
@click.argument("query", required=False)
@agent_option
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Most hits."
)
@click.option("--type", "kind", help="Only observations of this type.")
@json_option
@click.pass_context
def search(
    ctx: click.Context, query: str | None, agent: str, limit: int, kind: str | None, as_json: bool
) -> None:
    """Search observations and curated knowledge (memory_search); no QUERY lists the newest
    observations, newest first."""
    with memory_of(ctx, agent, create=False) as mem:
        result = mem.search(query, limit=limit, type=kind, now=mem.settings.clock())
    if as_json:
        emit_json(result)
        return
    if result.method == METHOD_RECENT:  # no query: a listing, newest first, nothing to score
        console().print(
            table(
                f"{len(result.hits)} newest observation(s)",
                ["when", "type", "id", "content"],
                [
                    (when(h.timestamp), h.type, h.id, short(h.content, 80))
                    for h in reversed(result.hits)
                ],
            )
        )
        return
    console().print(
        table(
            f"{len(result.hits)} hit(s) ({result.method})",
            ["score", "source", "id", "when", "content"],
            [
                (
                    f"{h.score:.3f}",
                    h.section or h.source,
                    h.id,
                    when(h.timestamp),
                    short(h.content, 70),
                )
                for h in result.hits
            ],
        )
    )


@click.command()
@click.option("--agent", "-a", help="Only this agent (default: every agent under the home).")
@json_option
@click.pass_context
def reindex(ctx: click.Context, agent: str | None, as_json: bool) -> None:
    """Rebuild everything derived from the memory files (never loses data): the knowledge
    search indexes, the conversation transcripts and their recall index, the activity search.

    Exit code 1, with what could not be rebuilt, when a part fails.
    """
    settings = settings_of(ctx)
    agents = agent_ids(settings) if agent is None else [existing_agent(settings, agent)]
    # A server that cannot be used fails here, once, with its cause.
    if open_backend(settings).kind == "postgres":
        open_store(settings).close()
    rows, problems = rebuild_derived(settings, agents)
    for problem in problems:
        click.echo(f"could not rebuild: {problem}", err=True)
    if as_json:
        emit_json(rows)
    elif not problems:
        click.echo(f"Reindexed {len(rows)} agent(s).")
    if problems:
        ctx.exit(1)


def knowledge_version(path: Path) -> str | None:
    """The version AgentMemory.search stamps on the index for this knowledge.md."""
    seen = signature(path)
    return None if seen is None else f"{seen.inode}:{seen.size}:{seen.mtime_ns}"


def index_checks(settings: Settings, agent: str) -> list[Check]:
    """The BM25 index of ``agent`` holds exactly its knowledge.md documents, each searchable.

    An index older than the file is fine (the next search re-syncs it); one that claims the
    current version yet differs from the file is not.
    """
    if not settings.database_path.exists():
        return []
    with open_agent(agent, settings=settings) as mem:
        doc = mem.knowledge.read()
        seen = mem.documents.version(mem.knowledge.store_name)  # files or PostgreSQL
        version = None if seen is None else seen.token
    wanted = {d.id: d.digest for d in Corpus(doc.observations, doc.sections).docs}
    try:
        state = open_backend(settings).knowledge_index_state(agent)
    except sqlite3.Error as exc:
        return [Check(agent, "search index", False, str(exc), fixable=True)]
    if state is None or state.version is None:
        return [Check(agent, "search index", True, "not built yet (first search builds it)")]
    if state.version != version:
        return [Check(agent, "search index", True, "behind knowledge.md (next search syncs)")]
    have = state.digests
    unsearchable = state.unsearchable
    problems = []
    if have.keys() - wanted.keys():
        problems.append(f"{len(have.keys() - wanted.keys())} extra")
    if wanted.keys() - have.keys():
        problems.append(f"{len(wanted.keys() - have.keys())} missing")
    changed = sum(1 for k in have.keys() & wanted.keys() if have[k] != wanted[k])
    if changed:
        problems.append(f"{changed} stale")
    if unsearchable:
        problems.append(f"{unsearchable} without their full-text postings")
    detail = ", ".join(problems) + " (fix: reindex)" if problems else f"{len(have)} documents"
    return [Check(agent, "search index matches knowledge.md", not problems, detail, fixable=True)]


COMMANDS: tuple[click.Command, ...] = (search, reindex)
