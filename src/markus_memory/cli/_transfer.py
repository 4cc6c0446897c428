"""export / import: move agents between the file layout and PostgreSQL (``transfer``)."""

from __future__ import annotations

from pathlib import Path

import click

from ..config import Settings
from ..transfer import TransferReport, export_agent
from ._common import console, emit_json, json_option, settings_of, spinner, table


def _other(current: Settings, home: Path | None, url: str | None) -> Settings:
    """The other side: ``home`` (default: the current home) with documents in PostgreSQL at
    ``url``, or on files when no URL is given."""
    return Settings(
        home=home.expanduser() if home is not None else current.home,
        database_url=url,
        documents="postgres" if url else "files",
        lock_timeout_seconds=current.lock_timeout_seconds,
    )


def _show(report: TransferReport, as_json: bool, verb: str) -> None:
    if as_json:
        emit_json(report)
        return
    if not report.agents:
        click.echo(f"No agent to {verb}.")
        return
    console().print(
        table(
            f"{verb.capitalize()}ed {len(report.agents)} agent(s)",
            ["documents", "other files", "episodic rows", "removed"],
            [(report.documents, report.files, report.rows, report.removed)],
        )
    )


_AGENT = click.option("--agent", "-a", help="Only this agent (default: every agent).")
_REPLACE = click.option(
    "--replace", is_flag=True, help="Overwrite an agent that already exists at the destination."
)


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
@json_option
@click.pass_context
def export_command(
    ctx: click.Context,
    to_database_url: str | None,
    to_home: Path | None,
    agent: str | None,
    replace: bool,
    as_json: bool,
) -> None:
    """Copy agents from this memory to PostgreSQL or to another home, losslessly.

    The source is this memory as configured (--home, MARKUS_DATABASE_URL, MARKUS_DOCUMENTS).
    """
    source = settings_of(ctx)
    target = _other(source, to_home, to_database_url)
    with spinner(not as_json, "exporting"):
        report = export_agent(source, target, agent, replace=replace)
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
@json_option
@click.pass_context
def import_command(
    ctx: click.Context,
    from_database_url: str | None,
    from_home: Path | None,
    agent: str | None,
    replace: bool,
    as_json: bool,
) -> None:
    """Copy agents from PostgreSQL or another home into this memory, losslessly."""
    target = settings_of(ctx)
    source = _other(target, from_home, from_database_url)
    with spinner(not as_json, "importing"):
        report = export_agent(source, target, agent, replace=replace)
    _show(report, as_json, "import")


COMMANDS: tuple[click.Command, ...] = (export_command, import_command)
