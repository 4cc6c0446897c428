"""``markus-memory serve``: the MCP server for one agent (needs the ``mcp`` extra)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import InputError, Options, agent_option, memory_of

TOKEN_ENV = "MARKUS_MCP_TOKEN"


@click.command()
@agent_option
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP instead of stdio.")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="HTTP bind address; anything but 127.0.0.1, localhost or ::1 needs --token.",
)
@click.option(
    "--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="HTTP port."
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    help=f"Bearer token every HTTP request must carry (or set {TOKEN_ENV}).",
)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    help="Memory home (same as the global --home; handy in an MCP client's config).",
)
@click.option("--legacy-tools", is_flag=True, help="Also list the Markus legacy tool aliases.")
@click.option(
    "--drain-seconds",
    type=click.IntRange(0, 3600),
    default=25,
    show_default=True,
    help="On SIGTERM, how long HTTP calls in flight may take to finish before the exit.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    agent: str,
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
    home: Path | None,
    legacy_tools: bool,
    drain_seconds: int,
) -> None:
    """Serve an agent's memory to MCP clients (stdio by default).

    Over HTTP, GET /healthz answers a load balancer without a token, and SIGTERM drains the
    calls in flight before the exit."""
    # Imported here: the MCP SDK is an optional extra, every other command works without it.
    from .. import http_guard, mcp_server

    if not use_http:
        given = [
            f"--{name.replace('_', '-')}"
            for name in ("host", "port", "token", "drain_seconds")
            if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise InputError(f"{', '.join(given)} only apply to HTTP; add --http or drop them")
    if home is not None:
        ctx.ensure_object(Options).home = home
    if use_http:
        mcp_server.check_http_binding(host, token)
        sock = http_guard.bind_socket(host, port)  # a port in use fails here, before the banner
    with memory_of(ctx, agent, create=True) as mem:
        if use_http:
            app = mcp_server.http_app(mem, host=host, token=token, legacy_tools=legacy_tools)
            bound_port = sock.getsockname()[1]
            url = f"http://{http_guard.url_host(host)}:{bound_port}{mcp_server.HTTP_PATH}"
            click.echo(f"MCP over HTTP: {url}", err=True)
            http_guard.run_on_socket(app, sock, drain_seconds=drain_seconds)
        else:
            if sys.stdin.isatty():  # run by hand: say why nothing happens
                click.echo(
                    f"markus-memory: serving agent {mem.agent_id!r} to an MCP client on stdin/"
                    "stdout; waiting for one (Ctrl-D or Ctrl-C stops; register this command "
                    "in an MCP client instead of running it in a terminal)",
                    err=True,
                )
            mcp_server.serve_stdio(mem, legacy_tools=legacy_tools)


COMMANDS: tuple[click.Command, ...] = (serve,)
