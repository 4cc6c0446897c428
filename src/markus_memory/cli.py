"""The ``markus-memory`` command for people."""

from __future__ import annotations

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="markus-memory")
def cli() -> None:
    """Inspect, search, edit and serve the persistent memory of LLM agents."""


def main() -> None:
    cli()
