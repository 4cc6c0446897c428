"""The ``markus-memory`` command for people: inspect, edit, search, maintain and serve memory."""

from __future__ import annotations

import logging
from pathlib import Path

import click

from .. import __version__
from . import (
    _agent,
    _common,
    _doctor,
    _dream,
    _edit,
    _errors,
    _hooks,
    _inspect,
    _maintain,
    _recall,
    _search,
    _serve,
    _transfer,
    _ui,
)


@click.group(cls=_common.MemoryGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="markus-memory")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="MARKUS_HOME",
    help="Memory home (default: $MARKUS_HOME or ~/.markus).",
)
@click.pass_context
def cli(ctx: click.Context, home: Path | None) -> None:
    """Inspect, search, edit and serve the persistent memory of LLM agents."""
    if not _errors.debugging():
        # The pool logs every failed connection attempt; the command says it once, on one line.
        logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    ctx.obj = _common.Options(home=home)


for _module in (
    _inspect,
    _recall,
    _agent,
    _edit,
    _search,
    _dream,
    _maintain,
    _doctor,
    _serve,
    _ui,
    _transfer,
    _hooks,
):
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def main() -> None:
    cli()


__all__ = ["cli", "main"]
