"""Claude Code: ``hook session-start``, ``hook pre-compact`` and ``install claude-code``."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from .._fs import validate_id
from ..integrations.claude_code import (
    install_claude_code,
    parse_hook_input,
    pre_compact,
    session_start,
)
from ..prompt import PROFILES
from ._common import Options, agent_option, emit_json, json_option, memory_of
from ._dream import KEY_ENVS, chat_model
from ._errors import translate


@click.group()
def hook() -> None:
    """Claude Code hooks: read the hook's JSON on stdin (see `install claude-code`).

    A hook never blocks Claude Code: a failure is one line on stderr and exit code 1.
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
    """Print the memory context as the SessionStart hook's additionalContext."""
    try:
        given = parse_hook_input(sys.stdin.read(), "SessionStart")
        with memory_of(ctx, agent, create=True) as mem:
            answer = session_start(mem, given, profile)
    except Exception as exc:  # a hook never shows Claude Code a traceback
        _fail(ctx, "SessionStart", exc)
        return
    click.echo(json.dumps(answer, ensure_ascii=False))


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
        given = parse_hook_input(sys.stdin.read(), "PreCompact")
        with memory_of(ctx, agent, create=True) as mem:
            report = pre_compact(mem, given, llm)
    except Exception as exc:  # a hook never shows Claude Code a traceback
        _fail(ctx, "PreCompact", exc)
        return
    if as_json:
        emit_json(report)
        return
    line = f"recorded {report.recorded} of {report.total} transcript lines in {report.session_id}"
    if report.flush is not None:
        line += f"; flush: {report.flush.reason}"
    click.echo(line)


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
    help="The project directory (gets .mcp.json and .claude/settings.json).",
)
@json_option
@click.pass_context
def install_claude(ctx: click.Context, agent: str, project: Path, as_json: bool) -> None:
    """Add the MCP server and the SessionStart/PreCompact hooks; safe to run again."""
    home = ctx.ensure_object(Options).home
    validate_id("agent id", agent)  # never write a configuration for an id that cannot work
    report = install_claude_code(project, command=_command(), agent=agent, home=home)
    if as_json:
        emit_json({"changed": report.changed, "unchanged": report.unchanged})
        return
    for path in report.changed:
        click.echo(f"updated {path}")
    for path in report.unchanged:
        click.echo(f"already set up: {path}")


def _command() -> list[str]:
    """How Claude Code should run this markus-memory: by name when PATH finds this one."""
    beside = Path(sys.executable).parent / "markus-memory"
    found = shutil.which("markus-memory")
    if found is not None and (not beside.exists() or Path(found).resolve() == beside.resolve()):
        return ["markus-memory"]
    return [str(beside)] if beside.exists() else ["markus-memory"]


COMMANDS: tuple[click.Command, ...] = (hook, install)
