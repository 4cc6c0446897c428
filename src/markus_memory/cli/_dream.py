"""dream: consolidate the observation buffer (offline or with a model), undo, history, diffs."""

from __future__ import annotations

import os

import click

from ..dream import dream as run_dream
from ..dream import dream_diff, dream_history, undo_last_dream
from ..errors import NotFoundError
from ..llm import AnthropicChatModel, ChatModel, OpenAIChatModel
from ._common import agent_option, console, emit_json, json_option, memory_of, spinner, table, when

KEY_ENVS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def chat_model(kind: str | None, model: str | None, base_url: str | None) -> ChatModel | None:
    """The model the dream plans with; None runs the offline consolidator."""
    if kind is None:
        return None
    if not model:
        raise click.UsageError(f"--llm {kind} needs --model NAME")
    key = os.environ.get(KEY_ENVS[kind]) or None
    if key is None and base_url is None:  # the hosted API would refuse; say so before calling
        raise click.UsageError(
            f"--llm {kind} needs an API key: set {KEY_ENVS[kind]} (or pass --base-url for a "
            "local endpoint that needs none)"
        )
    if kind == "openai":
        if base_url is None:
            return OpenAIChatModel(model, api_key=key)
        return OpenAIChatModel(model, base_url=base_url, api_key=key)
    if base_url is None:
        return AnthropicChatModel(model, api_key=key)
    return AnthropicChatModel(model, api_key=key, base_url=base_url)


@click.group()
def dream() -> None:
    """Consolidate knowledge.md (merge duplicates, promote to sections), undo, history."""


@dream.command("run")
@agent_option
@click.option("--dry-run", is_flag=True, help="Show the plan and the diff; write nothing.")
@click.option(
    "--llm",
    "kind",
    type=click.Choice(sorted(KEY_ENVS)),
    help="Plan with a chat model (key from OPENAI_API_KEY / ANTHROPIC_API_KEY); "
    "default: the offline consolidator.",
)
@click.option("--model", help="The chat model's name (with --llm).")
@click.option("--base-url", help="API root of an OpenAI-compatible or Anthropic endpoint.")
@json_option
@click.pass_context
def dream_run(
    ctx: click.Context,
    agent: str,
    dry_run: bool,
    kind: str | None,
    model: str | None,
    base_url: str | None,
    as_json: bool,
) -> None:
    """Run one dream now (the trigger policy is not consulted)."""
    llm = chat_model(kind, model, base_url)
    with memory_of(ctx, agent) as mem:
        with spinner(not as_json, "dreaming…"):
            report = run_dream(mem, llm, dry_run=dry_run)
    if as_json:
        emit_json(report)
    else:
        click.echo(
            f"{report.status} ({report.mode}): observations {report.observations_before} → "
            f"{report.observations_after}; removed {len(report.removed)}, merged "
            f"{len(report.merged)}, promoted {len(report.promoted)}"
            + (f"; run {report.run_id}" if report.run_id and not dry_run else "")
        )
        for refusal in report.rejections:
            which = "" if refusal.index is None else f" #{refusal.index + 1}"
            ids = f" ({', '.join(refusal.ids)})" if refusal.ids else ""
            click.echo(f"refused {refusal.part}{which}{ids}: {refusal.reason}")
        if report.error:
            click.echo(f"error: {report.error}", err=True)
        if dry_run and report.diff:
            click.echo(report.diff)
    if not report.ok:
        ctx.exit(1)


@dream.command("undo")
@agent_option
@json_option
@click.pass_context
def dream_undo(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Restore knowledge.md and state.md from before the last applied dream."""
    with memory_of(ctx, agent) as mem:
        result = undo_last_dream(mem)
    if as_json:
        emit_json(result)
    elif result.ok:
        click.echo(f"Undid {result.run_id}.")
    else:
        click.echo(f"Nothing undone: {result.reason}", err=True)
    if not result.ok:
        ctx.exit(1)


@dream.command("history")
@agent_option
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Most runs, newest first.",
)
@click.option("--diff", "with_diff", is_flag=True, help="Print each run's diff too.")
@json_option
@click.pass_context
def dream_history_command(
    ctx: click.Context, agent: str, limit: int, with_diff: bool, as_json: bool
) -> None:
    """Recorded dreams (applied, failed, undone), newest first."""
    with memory_of(ctx, agent) as mem:
        runs = dream_history(mem, limit)
        diffs = {r.run_id: dream_diff(mem, r.run_id) for r in runs} if with_diff else {}
    if as_json:
        emit_json(
            [
                {
                    "run_id": r.run_id,
                    "started_at": r.started_at,
                    "mode": r.mode,
                    "status": r.status,
                    "changes": r.changes,
                    "error": r.error,
                    **({"diff": diffs[r.run_id]} if with_diff else {}),
                }
                for r in runs
            ]
        )
        return
    console().print(
        table(
            "Dreams",
            ["run", "started", "mode", "status"],
            [(r.run_id, when(r.started_at), r.mode, r.status) for r in runs],
        )
    )
    for run_id, diff in diffs.items():
        click.echo(f"\n{run_id}\n{diff or '(no change)'}")


@dream.command("diff")
@click.argument("run_id")
@agent_option
@json_option
@click.pass_context
def dream_diff_command(ctx: click.Context, run_id: str, agent: str, as_json: bool) -> None:
    """Print what dream RUN_ID changed in knowledge.md and state.md (unified diff)."""
    with memory_of(ctx, agent) as mem:
        try:
            diff = dream_diff(mem, run_id)
        except NotFoundError as exc:
            raise click.ClickException(
                f"{exc}; list them with: markus-memory dream history --agent {agent}"
            ) from None
    if as_json:
        emit_json({"run_id": run_id, "diff": diff})
    else:
        click.echo(diff or "(no change)\n", nl=False)


COMMANDS: tuple[click.Command, ...] = (dream,)
