"""agent delete: remove every trace of one agent, after a confirmation and an export offered."""

from __future__ import annotations

import click

from ..agents import delete_agent, existing
from ._common import Options, emit_json, json_option, settings_of


@click.group("agent")
def agent_group() -> None:
    """Manage one agent as a whole (list them with: markus-memory agents)."""


@agent_group.command("delete")
@click.argument("agent_id", metavar="ID")
@click.option("--yes", "-y", is_flag=True, help="Delete without asking.")
@json_option
@click.pass_context
def delete(ctx: click.Context, agent_id: str, yes: bool, as_json: bool) -> None:
    """Delete agent ID: its files, its rows in data.db and, with MARKUS_DATABASE_URL, in
    PostgreSQL (documents, history, recall index and vectors, dreams). Irreversible: export
    it first (markus-memory export --to-home DIR --agent ID)."""
    settings = settings_of(ctx)
    ctx.ensure_object(Options).agent = agent_id
    existing(settings, agent_id)
    if not yes:
        click.echo(
            f"This deletes every trace of agent {agent_id!r} in {settings.home}"
            + (" and its PostgreSQL database" if settings.database_url else "")
            + ". To keep a copy first, run:\n"
            f"  markus-memory export --to-home BACKUP_DIR --agent {agent_id}",
            err=True,
        )
        click.confirm(f"Delete agent {agent_id!r}?", abort=True, err=True)
    report = delete_agent(settings, agent_id)
    if as_json:
        emit_json(report)
        return
    click.echo(
        f"Deleted agent {agent_id!r}: {report.files} file(s), {report.rows} activities and "
        f"transcript messages, {report.other_rows} other row(s)."
    )


COMMANDS: tuple[click.Command, ...] = (agent_group,)
