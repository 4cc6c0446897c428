"""export / import: move agents between the file layout and PostgreSQL (``transfer``)."""

from __future__ import annotations

from pathlib import Path

import click

from .._fs import checked_agent_id
from ..config import Settings
from ..errors import NotFoundError
from ..transfer import MOVED_MARKER, TransferReport, export_agent
from ._common import Options, console, emit_json, json_option, settings_of, spinner, table


def _other(ctx: click.Context, current: Settings, home: Path | None, url: str | None) -> Settings:
    """The other side: ``home`` (default: the current home) with documents in PostgreSQL at
    ``url``, or on files when no URL is given."""
    ctx.ensure_object(Options).uses(url)
    return Settings(
        home=home.expanduser() if home is not None else current.home,
        database_url=url,
        documents="postgres" if url else "files",
        lock_timeout_seconds=current.lock_timeout_seconds,
    )


def _show(report: TransferReport, as_json: bool, verb: str) -> None:
    if report.backup:  # said on stderr too with --json: a backup is never silent
        click.echo(
            "Backed up what the destination held of the replaced agent(s) to "
            f"{report.backup}\n(restore with: markus-memory import --from-home "
            f"{report.backup} --replace)",
            err=as_json,
        )
    if as_json:
        emit_json(report)
        return
    if not report.agents:
        click.echo(f"No agent to {verb}.")
        return
    console().print(
        table(
            f"{verb.capitalize()}ed {len(report.agents)} agent(s)",
            ["documents", "other files", "episodic rows", "dream runs", "removed"],
            [(report.documents, report.files, report.rows, report.dream_runs, report.removed)],
        )
    )
    if report.marked:
        click.echo(
            f"\nThe markdown files of {len(report.marked)} agent(s) stay on disk as they were, "
            "as a backup: with MARKUS_DATABASE_URL set they are no longer read or updated. "
            f"Each directory has a {MOVED_MARKER} saying so; delete the files when you no "
            "longer need them:"
        )
        for root in report.marked:
            click.echo(f"  {root}")


_AGENT = click.option("--agent", "-a", help="Only this agent (default: every agent).")
_REPLACE = click.option(
    "--replace",
    is_flag=True,
    help="Replace what the destination holds of the agent by the source's (documents, files, "
    "episodic rows, dream history), after backing it up to --backup-to.",
)
_MERGE = click.option(
    "--merge",
    is_flag=True,
    help="Add only what the destination lacks (documents, files, rows by id); running it "
    "again adds nothing.",
)
_BACKUP = click.option(
    "--backup-to",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where --replace backs the destination up (default: a new folder "
    "<destination home>/backups/<UTC time>).",
)


def _mode(replace: bool, merge: bool) -> None:
    if replace and merge:
        raise click.UsageError("--replace and --merge exclude each other: pick one")


@click.command("export")
@click.option(
    "--to-database-url",
    metavar="URL",
    help="Put the documents in this PostgreSQL database (default: files).",
)
@click.option(
    "--to-home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Home for the files that stay on disk (default: this home).",
)
@_AGENT
@_REPLACE
@_MERGE
@_BACKUP
@json_option
@click.pass_context
def export_command(
    ctx: click.Context,
    to_database_url: str | None,
    to_home: Path | None,
    agent: str | None,
    replace: bool,
    merge: bool,
    backup_to: Path | None,
    as_json: bool,
) -> None:
    """Copy agents from this memory to PostgreSQL or to another home, losslessly.

    The source is this memory as configured (--home, MARKUS_DATABASE_URL, MARKUS_DOCUMENTS).
    Documents, other files, episodic rows and the dream history are copied. Exported in place
    to PostgreSQL, the markdown files stay on disk as a backup, marked as no longer read.
    """
    _mode(replace, merge)
    source = settings_of(ctx)
    target = _other(ctx, source, to_home, to_database_url)
    with spinner(not as_json, "exporting"):
        report = export_agent(
            source, target, agent, replace=replace, merge=merge, backup_to=backup_to
        )
    _show(report, as_json, "export")


@click.command("import")
@click.option(
    "--from-database-url",
    metavar="URL",
    help="Take the documents from this PostgreSQL database (default: files).",
)
@click.option(
    "--from-home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Home of the files to take (default: this home).",
)
@_AGENT
@_REPLACE
@_MERGE
@_BACKUP
@json_option
@click.pass_context
def import_command(
    ctx: click.Context,
    from_database_url: str | None,
    from_home: Path | None,
    agent: str | None,
    replace: bool,
    merge: bool,
    backup_to: Path | None,
    as_json: bool,
) -> None:
    """Copy agents from PostgreSQL or another home into this memory, losslessly."""
    _mode(replace, merge)
    target = settings_of(ctx)
    if agent is not None:
        checked_agent_id(agent)  # a malformed id is a bad argument, whatever the source
    if from_home is not None and not from_home.expanduser().is_dir():
        raise NotFoundError(f"no memory home at {from_home}: check --from-home")
    source = _other(ctx, target, from_home, from_database_url)
    with spinner(not as_json, "importing"):
        report = export_agent(
            source, target, agent, replace=replace, merge=merge, backup_to=backup_to
        )
    _show(report, as_json, "import")


COMMANDS: tuple[click.Command, ...] = (export_command, import_command)
