"""Reading commands: agents, show, sessions, prompt (``recall`` is in :mod:`._recall`)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import click

from ..agents import AgentEntry, roster
from ..config import Settings
from ..memory import AgentMemory
from ..prompt import PROFILES, render_memory_context
from ._common import (
    agent_option,
    console,
    emit_json,
    empty_listing,
    json_option,
    memory_of,
    plain,
    settings_of,
    short,
    table,
    when,
)


def agent_ids(settings: Settings) -> list[str]:
    """Every agent of the configured memory, sorted (:mod:`markus_memory.agents`)."""
    return roster(settings).ids()


def _row(entry: AgentEntry) -> dict[str, Any]:
    files = []
    if entry.directory is not None:
        files = [p for p in entry.directory.rglob("*") if p.is_file() and p.name != ".lock"]
    latest = max((p.stat().st_mtime for p in files), default=None)
    changed = None if latest is None else datetime.fromtimestamp(latest, timezone.utc)
    return {
        "agent": entry.agent_id,
        "where": entry.where,
        "files": len(files),
        "path": "" if entry.directory is None else str(entry.directory),
        "mtime": changed,
    }


@click.command()
@json_option
@click.pass_context
def agents(ctx: click.Context, as_json: bool) -> None:
    """List the agents of the memory (its home, and its PostgreSQL database when the
    documents live there); warns where files and database disagree."""
    settings = settings_of(ctx)
    found = roster(settings)
    rows = [_row(entry) for entry in found.entries]
    warnings = found.warnings()
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    if as_json:
        emit_json({"home": str(settings.home), "agents": rows, "warnings": warnings})
        return
    if not rows:
        empty_listing(
            f"Agents in {settings.home}", " — create one: markus-memory init --agent NAME"
        )
        return
    console().print(
        table(
            f"Agents in {settings.home}",
            ["agent", "where", "files", "last change", "path"],
            [(r["agent"], r["where"], r["files"], plain(r["mtime"]), r["path"]) for r in rows],
        )
    )


def overview(mem: AgentMemory) -> dict[str, Any]:
    """Everything ``show`` prints, with the budgets the model sees."""
    limits = mem.settings.limits
    entries = mem.notebook.entries()
    sections = mem.knowledge.sections()
    return {
        "agent": mem.agent_id,
        "directory": mem.directory,
        "notebook": {
            "agent_entries": sum(1 for e in entries if e.managed == "agent"),
            "agent_entries_limit": limits.notebook_max_agent_entries,
            "entries": [
                {
                    "key": e.key,
                    "managed": e.managed,
                    "chars": len(e.text),
                    "limit": limits.notebook_max_chars_per_entry
                    if e.managed == "agent"
                    else limits.notebook_max_chars_per_system_entry,
                    "updated_at": e.updated_at,
                    "text": e.text,
                }
                for e in entries
            ],
        },
        "knowledge": {
            "curated_chars": mem.knowledge.curated_chars(),
            "curated_limit": limits.curated_max_chars,
            "observations": len(mem.knowledge.observations()),
            "observations_limit": limits.max_observations,
            "sections": [
                {"name": s.name, "chars": len(s.body.strip()), "limit": limits.section_max_chars}
                for s in sections
            ],
        },
        "state": [
            {"key": e.key, "updated": e.updated, "content": e.content} for e in mem.state.entries()
        ],
        "recent_activities": [
            {
                "id": a.id,
                "type": a.type,
                "label": a.label,
                "started_at": a.started_at,
                "success": a.success,
            }
            for a in mem.activities.list(limit=5)
        ],
    }


@click.command()
@agent_option
@json_option
@click.pass_context
def show(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Overview of one agent: notebook, knowledge with budgets, state, recent activities."""
    with memory_of(ctx, agent) as mem:
        data = overview(mem)
    if as_json:
        emit_json(data)
        return
    out = console()
    out.print(f"[bold]{agent}[/bold]  {data['directory']}")
    nb = data["notebook"]
    out.print(
        table(
            f"Notebook ({nb['agent_entries']}/{nb['agent_entries_limit']} agent entries)",
            ["key", "managed", "chars", "text"],
            [
                (e["key"], e["managed"], f"{e['chars']}/{e['limit']}", short(e["text"], 60))
                for e in nb["entries"]
            ],
        )
    )
    kn = data["knowledge"]
    out.print(
        table(
            f"Knowledge (curated {kn['curated_chars']}/{kn['curated_limit']} chars, "
            f"observations {kn['observations']}/{kn['observations_limit']})",
            ["section", "chars"],
            [(s["name"], f"{s['chars']}/{s['limit']}") for s in kn["sections"]],
        )
    )
    out.print(
        table(
            "State",
            ["key", "updated", "content"],
            [(e["key"], e["updated"] or "", short(e["content"], 60)) for e in data["state"]],
        )
    )
    out.print(
        table(
            "Recent activities",
            ["id", "type", "label", "started", "ok"],
            [
                (a["id"], a["type"], short(a["label"], 40), when(a["started_at"]), a["success"])
                for a in data["recent_activities"]
            ],
        )
    )


@click.command()
@agent_option
@click.option("--show", "show_id", metavar="ID", help="Print the messages of one session.")
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="With --show: how many of the latest messages.",
)
@json_option
@click.pass_context
def sessions(ctx: click.Context, agent: str, show_id: str | None, last: int, as_json: bool) -> None:
    """List an agent's sessions (newest first), or print one with --show."""
    with memory_of(ctx, agent) as mem:
        if show_id is not None:
            session = mem.sessions.get(show_id)
            if session is None:
                raise click.ClickException(
                    f"no session {show_id!r} for agent {agent!r}; list them with: "
                    f"markus-memory sessions --agent {agent}"
                )
            messages = list(session.messages[-last:])
            if as_json:
                emit_json({"id": session.id, "messages": messages})
                return
            for message in messages:
                role = message.get("role", "?")
                content = message.get("content")
                text = content if isinstance(content, str) else str(content)
                click.echo(f"[{role}] {text}")
            return
        infos = mem.sessions.list()
    if as_json:
        emit_json([{"id": s.id, "last_activity_at": s.last_activity_at} for s in infos])
        return
    console().print(
        table(
            "Sessions", ["id", "last activity"], [(s.id, when(s.last_activity_at)) for s in infos]
        )
    )


@click.command()
@agent_option
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    default="default",
    show_default=True,
    help="Which scenario's caps apply (reflex: state lines instead of knowledge).",
)
@click.option("--query", help="The current user message: shows what is relevant to it.")
@click.option(
    "--persist-recall",
    is_flag=True,
    help="Also store that recall as the relevant-context notebook entry (written to disk).",
)
@json_option
@click.pass_context
def prompt(
    ctx: click.Context,
    agent: str,
    profile: str,
    query: str | None,
    persist_recall: bool,
    as_json: bool,
) -> None:
    """Print the memory context a system prompt gets for PROFILE (changes no file)."""
    with memory_of(ctx, agent) as mem:
        context = render_memory_context(mem, profile, query=query, persist_recall=persist_recall)
    if as_json:
        emit_json(context)
        return
    click.echo(context.text)


COMMANDS: tuple[click.Command, ...] = (agents, show, sessions, prompt)
