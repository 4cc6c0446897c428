"""migrate: legacy Markus files (MEMORY.md, memories.json) into knowledge.md and state.md."""

from __future__ import annotations

import click

from ..config import AgentPaths, Settings
from ..memory import open_agent
from ._common import console, emit_json, json_option, progress, settings_of, table
from ._inspect import agent_ids


def needs_migration(paths: AgentPaths) -> bool:
    """What AgentMemory would migrate on open: no knowledge.md yet, or a memories.json left."""
    return not paths.knowledge.exists() or paths.legacy_memories_json.exists()


def selected_agents(settings: Settings, agent: str | None) -> list[str]:
    if agent is None:
        return agent_ids(settings)
    if not settings.agent_dir(agent).is_dir():
        raise click.ClickException(f"no agent {agent!r} under {settings.home}")
    return [agent]


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
            paths = AgentPaths(settings.agent_dir(name))
            pending = needs_migration(paths)
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
