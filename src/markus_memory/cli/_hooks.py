"""Claude Code: ``hook session-start|pre-compact|stop|session-end`` and ``install claude-code``."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from .._fs import checked_agent_id
from ..integrations.claude_code import (
    install_claude_code,
    parse_hook_input,
    read_hook,
    record_transcript,
    session_start,
)
from ..prompt import PROFILES
from ._common import Options, agent_option, emit_json, json_option, memory_of
from ._dream import KEY_ENVS, chat_model
from ._errors import translate


class HookGroup(click.Group):
    """A hook never blocks Claude Code, which reads exit code 2 as "block" (a Stop hook's 2
    would keep the session running): a bad command line exits 1 too."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            click.echo(f"markus-memory hook: {exc.format_message()}", err=True)
            raise click.exceptions.Exit(1) from None


@click.group(cls=HookGroup)
def hook() -> None:
    """Claude Code hooks: read the hook's JSON on stdin (see `install claude-code`).

    A hook never blocks Claude Code: a failure is one line on stderr and exit code 1, and
    input that is not the hook's JSON, or names no transcript file, changes nothing.
    """


def _fail(ctx: click.Context, event: str, exc: Exception) -> None:
    options = ctx.ensure_object(Options)  # the same one-line message as every other command
    detail = translate(exc, options.agent, options.urls).message
    click.echo(f"markus-memory {event} hook: {detail}", err=True)
    ctx.exit(1)


@hook.command("session-start")
@agent_option
@click.option(
    "--profile",
    type=click.Choice(PROFILES),
    default="default",
    show_default=True,
    help="Prompt profile of the memory context.",
)
@click.pass_context
def hook_session_start(ctx: click.Context, agent: str, profile: str) -> None:
    """Print the memory context and the recent observations as the SessionStart hook's
    additionalContext."""
    try:
        given = parse_hook_input(sys.stdin.read(), "SessionStart")
        with memory_of(ctx, agent, create=True) as mem:
            answer = session_start(mem, given, profile)
    except Exception as exc:  # a hook never shows Claude Code a traceback
        _fail(ctx, "SessionStart", exc)
        return
    click.echo(json.dumps(answer, ensure_ascii=False))


def _record(ctx: click.Context, event: str, agent: str, llm: Any, as_json: bool) -> None:
    """Check the hook's input and read its transcript, then (only then) open the agent and
    record; problems with single lines are warnings on stderr, the rest is recorded."""
    try:
        checked_agent_id(agent)  # as every command: a malformed id is named first
        given = read_hook(parse_hook_input(sys.stdin.read(), event), event)
        with memory_of(ctx, agent, create=True) as mem:
            report = record_transcript(mem, given, llm)
    except Exception as exc:  # a hook never shows Claude Code a traceback
        _fail(ctx, event, exc)
        return
    for problem in report.problems:
        click.echo(f"markus-memory {event} hook: warning: {problem}", err=True)
    if as_json:
        emit_json(report)
        return
    line = f"recorded {report.recorded} of {report.total} transcript lines in {report.session_id}"
    if report.shortened:
        line += f" ({report.shortened} shortened to fit)"
    if report.flush is not None:
        line += f"; flush: {report.flush.reason}"
    click.echo(line)


@hook.command("pre-compact")
@agent_option
@click.option(
    "--llm",
    "kind",
    type=click.Choice(sorted(KEY_ENVS)),
    help="Run the memory flush with this chat model (key from OPENAI_API_KEY / "
    "ANTHROPIC_API_KEY); without it the transcript is only recorded.",
)
@click.option("--model", help="The chat model's name (with --llm).")
@click.option("--base-url", help="API root of an OpenAI-compatible or Anthropic endpoint.")
@json_option
@click.pass_context
def hook_pre_compact(
    ctx: click.Context,
    agent: str,
    kind: str | None,
    model: str | None,
    base_url: str | None,
    as_json: bool,
) -> None:
    """Record the transcript the PreCompact hook names in the agent's sessions."""
    try:
        llm = chat_model(kind, model, base_url)
    except Exception as exc:
        _fail(ctx, "PreCompact", exc)
        return
    _record(ctx, "PreCompact", agent, llm, as_json)


@hook.command("stop")
@agent_option
@json_option
@click.pass_context
def hook_stop(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Record the transcript the Stop hook names (after each reply): the lines not yet kept."""
    _record(ctx, "Stop", agent, None, as_json)


@hook.command("session-end")
@agent_option
@json_option
@click.pass_context
def hook_session_end(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Record the transcript the SessionEnd hook names: the lines not yet kept."""
    _record(ctx, "SessionEnd", agent, None, as_json)


@click.group()
def install() -> None:
    """Connect markus-memory to an agent host."""


@install.command("claude-code")
@agent_option
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="The project directory (scope local: gets .claude/settings.local.json).",
)
@click.option(
    "--scope",
    type=click.Choice(["local", "user"]),
    default="local",
    show_default=True,
    help="local: this project, for you only (.claude/settings.local.json and the project's "
    "entry in ~/.claude.json); user: every project (~/.claude/settings.json, ~/.claude.json).",
)
@click.option(
    "--no-mcp",
    "no_mcp",
    is_flag=True,
    help="Install the hooks only, without the MCP server (which needs the [mcp] extra).",
)
@json_option
@click.pass_context
def install_claude(
    ctx: click.Context, agent: str, project: Path, scope: str, no_mcp: bool, as_json: bool
) -> None:
    """Add the MCP server and the SessionStart, PreCompact, Stop and SessionEnd hooks where
    Claude Code keeps your own settings (absolute paths of this machine never go into a
    committed file); safe to run again."""
    home = ctx.ensure_object(Options).home
    checked_agent_id(agent)  # never write a configuration for an id that cannot work
    if not no_mcp and importlib.util.find_spec("mcp") is None:
        raise click.ClickException(
            "the MCP server needs the [mcp] extra, which is not installed here: run "
            "pip install 'markus-memory[mcp]' and install again, or pass --no-mcp for the "
            "hooks alone"
        )
    report = install_claude_code(
        project,
        command=[os.path.abspath(sys.executable), "-m", "markus_memory.cli"],
        agent=agent,
        home=home.resolve() if home is not None else None,
        scope="user" if scope == "user" else "local",
        mcp=not no_mcp,
    )
    if as_json:
        emit_json({"changed": report.changed, "unchanged": report.unchanged})
        return
    for path in report.changed:
        click.echo(f"updated {path}")
    for path in report.unchanged:
        click.echo(f"already set up: {path}")
    if scope == "local":
        click.echo(
            "note: .claude/settings.local.json holds paths of this machine: keep it out of "
            "version control (a .gitignore line)"
        )


COMMANDS: tuple[click.Command, ...] = (hook, install)
