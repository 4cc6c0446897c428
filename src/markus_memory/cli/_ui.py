"""``markus-memory ui``: the web UI over every agent of the home (needs the ``ui`` extra)."""

from __future__ import annotations

import webbrowser

import click

from ..agents import existing
from ._common import settings_of

TOKEN_ENV = "MARKUS_UI_TOKEN"


@click.command()
@click.option("--agent", "-a", help="Open this agent's pages first (every agent is served).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Bind address; anything but 127.0.0.1, localhost or ::1 needs --token.",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8766, show_default=True, help="Port."
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    help=f"Token every request must carry: bearer header or the login form (or {TOKEN_ENV}).",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the UI in the web browser.")
@click.pass_context
def ui(
    ctx: click.Context,
    agent: str | None,
    host: str,
    port: int,
    token: str | None,
    open_browser: bool,
) -> None:
    """Browse and edit every agent's memory in a local web app."""
    # Imported here: the web stack is an optional extra, every other command works without it.
    from .. import http_guard
    from ..ui import create_app

    settings = settings_of(ctx)
    app = create_app(settings, host=host, token=token)  # refuses a bind that needs a token
    if agent is not None:
        existing(settings, agent)  # the agents the UI lists: files, PostgreSQL, both
    sock = http_guard.bind_socket(host, port)  # a port in use fails here, before the banner
    path = "/" if agent is None else f"/agents/{agent}/notebook"
    url = f"http://{http_guard.url_host(host)}:{sock.getsockname()[1]}{path}"
    click.echo(f"markus-memory UI: {url} (Ctrl+C stops it)", err=True)
    if open_browser:
        webbrowser.open(url)
    http_guard.run_on_socket(app, sock)


COMMANDS: tuple[click.Command, ...] = (ui,)
