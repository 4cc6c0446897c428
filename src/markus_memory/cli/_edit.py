"""Writing commands: init, notebook, save, knowledge, state."""

from __future__ import annotations

import sys

import click

from ..layers._knowledge_format import OBSERVATION_TYPES
from ..layers.notebook import MANAGED_VALUES, Managed
from ._common import (
    agent_option,
    console,
    emit_json,
    empty_listing,
    json_option,
    memory_of,
    read_text_argument,
    short,
    table,
)


@click.command()
@agent_option
@json_option
@click.pass_context
def init(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Create an agent's memory (knowledge.md; legacy Markus files are migrated)."""
    with memory_of(ctx, agent, create=True) as mem:
        files = sorted(str(p.relative_to(mem.directory)) for p in mem.directory.rglob("*.md"))
        if as_json:
            emit_json({"agent": mem.agent_id, "directory": mem.directory, "files": files})
            return
        click.echo(f"Agent {mem.agent_id!r} is ready in {mem.directory}")


@click.group()
def notebook() -> None:
    """Show, set or clear notebook entries (NOTEBOOK.md, injected into every prompt)."""


@notebook.command("show")
@agent_option
@json_option
@click.pass_context
def notebook_show(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Print every notebook entry."""
    with memory_of(ctx, agent) as mem:
        entries = mem.notebook.entries()
    if as_json:
        emit_json(entries)
        return
    if not entries:
        empty_listing("Notebook")
    for entry in entries:
        tag = "" if entry.managed == "agent" else f" [{entry.managed}]"
        click.echo(f"## {entry.key}{tag}\n{entry.text}\n")


def as_managed(value: str) -> Managed:
    for kind in MANAGED_VALUES:
        if kind == value:
            return kind
    raise click.BadParameter(f"use one of {', '.join(MANAGED_VALUES)}", param_hint="--managed")


@notebook.command("set")
@click.argument("key")
@click.argument("text")
@agent_option
@click.option(
    "--managed",
    type=click.Choice(MANAGED_VALUES),
    default="agent",
    show_default=True,
    help="Who owns the entry (agent entries share 4 slots).",
)
@click.option("--force", is_flag=True, help="Replace an entry managed by the system.")
@json_option
@click.pass_context
def notebook_set(
    ctx: click.Context, key: str, text: str, agent: str, managed: str, force: bool, as_json: bool
) -> None:
    """Set entry KEY to TEXT ('-' reads TEXT from stdin)."""
    with memory_of(ctx, agent) as mem:
        result = mem.notebook.upsert(
            key, read_text_argument(text), as_managed(managed), allow_system=force
        )
    if as_json:
        emit_json(result)
        return
    click.echo(f"Set {key!r} ({result.stored_chars} chars).")
    if result.truncated:
        click.echo(f"Cut to the {result.stored_chars}-char limit of an entry.", err=True)
    if result.evicted:
        click.echo(f"Evicted the oldest agent entry {result.evicted!r}.", err=True)


@notebook.command("clear")
@click.argument("key", required=False)
@agent_option
@click.option("--all", "everything", is_flag=True, help="Also remove system-managed entries.")
@json_option
@click.pass_context
def notebook_clear(
    ctx: click.Context, key: str | None, agent: str, everything: bool, as_json: bool
) -> None:
    """Remove entry KEY, every agent entry (no KEY), or everything (--all)."""
    with memory_of(ctx, agent) as mem:
        removed = mem.notebook.clear(key, all=everything, allow_system=key is not None)
        keys = [e.key for e in mem.notebook.entries()]
    if as_json:
        emit_json({"removed": removed})
    elif key is not None and not removed:
        click.echo(f"No notebook entry {key!r} (entries: {', '.join(keys) or 'none'}).", err=True)
    else:
        click.echo(f"Removed {removed} entr{'y' if removed == 1 else 'ies'}.")
    if key is not None and not removed:  # like `state clear`: a named key that is not there
        ctx.exit(1)


@click.command()
@click.argument("content")
@agent_option
@click.option(
    "--type",
    "kind",
    type=click.Choice(OBSERVATION_TYPES),
    default="fact",
    show_default=True,
    help="Kind of observation.",
)
@click.option("--tag", "tags", multiple=True, help="A tag (repeatable).")
@json_option
@click.pass_context
def save(
    ctx: click.Context, content: str, agent: str, kind: str, tags: tuple[str, ...], as_json: bool
) -> None:
    """Save an observation to knowledge.md ('-' reads CONTENT from stdin)."""
    with memory_of(ctx, agent) as mem:
        obs = mem.knowledge.save_observation(read_text_argument(content), kind, tags)
    if as_json:
        emit_json(obs)
        return
    click.echo(f"Saved {obs.id} ({obs.type}).")


@click.group()
def knowledge() -> None:
    """Show or edit curated knowledge sections (knowledge.md)."""


@knowledge.command("show")
@click.argument("section", required=False)
@agent_option
@click.option(
    "--observations",
    "limit",
    type=click.IntRange(min=0),
    default=0,
    help="Also list the latest N observations.",
)
@json_option
@click.pass_context
def knowledge_show(
    ctx: click.Context, section: str | None, agent: str, limit: int, as_json: bool
) -> None:
    """Print SECTION, or every curated section."""
    with memory_of(ctx, agent) as mem:
        if section is not None:
            body = mem.knowledge.section(section)
            if body is None:
                names = ", ".join(s.name for s in mem.knowledge.sections()) or "none"
                raise click.ClickException(f"no section {section!r}; sections: {names}")
            sections = [{"name": section, "body": body}]
        else:
            sections = [{"name": s.name, "body": s.body.strip()} for s in mem.knowledge.sections()]
        observations = mem.knowledge.observations(limit=limit) if limit else []
    if as_json:
        emit_json({"sections": sections, "observations": observations})
        return
    if not sections:
        empty_listing("Knowledge sections")
    for item in sections:
        click.echo(f"## {item['name']}\n{item['body']}\n")
    if observations:
        console().print(
            table(
                "Observations",
                ["id", "type", "tags", "content"],
                [(o.id, o.type, ",".join(o.tags), short(o.content, 70)) for o in observations],
            )
        )


@knowledge.command("edit")
@click.argument("section")
@agent_option
@click.option("--content", help="New content ('-' for stdin); without it, opens $EDITOR.")
@click.option("--append", is_flag=True, help="Append to the section instead of replacing it.")
@json_option
@click.pass_context
def knowledge_edit(
    ctx: click.Context,
    section: str,
    agent: str,
    content: str | None,
    append: bool,
    as_json: bool,
) -> None:
    """Replace (or --append to) curated SECTION; refused over its size caps."""
    with memory_of(ctx, agent) as mem:
        if content is None:
            if not sys.stdin.isatty():
                raise click.UsageError(
                    "pass --content TEXT (or '-' for stdin) when not at a terminal"
                )
            edited = click.edit(mem.knowledge.section(section) or "", extension=".md")
            if edited is None:
                click.echo("Unchanged.")
                return
            text = edited
        else:
            text = read_text_argument(content)
        result = mem.knowledge.update_section(section, text, "patch" if append else "replace")
    if as_json:
        emit_json(result)
    elif result.ok:
        click.echo(
            f"Wrote {section!r}: {result.section_chars}/{result.section_limit} chars; curated "
            f"{result.curated_chars}/{result.curated_limit}."
        )
    if not result.ok:
        if not as_json:
            click.echo(f"Refused: {result.reason}", err=True)
        ctx.exit(1)


@click.group()
def state() -> None:
    """Show, set or clear state snapshots (state.md)."""


@state.command("show")
@agent_option
@json_option
@click.pass_context
def state_show(ctx: click.Context, agent: str, as_json: bool) -> None:
    """Print every state entry."""
    with memory_of(ctx, agent) as mem:
        entries = mem.state.entries()
    if as_json:
        emit_json(entries)
        return
    console().print(
        table(
            "State",
            ["key", "updated", "content"],
            [(e.key, e.updated or "", short(e.content, 70)) for e in entries],
        )
    )


@state.command("set")
@click.argument("key")
@click.argument("content")
@agent_option
@json_option
@click.pass_context
def state_set(ctx: click.Context, key: str, content: str, agent: str, as_json: bool) -> None:
    """Set state KEY to CONTENT ('-' reads it from stdin)."""
    with memory_of(ctx, agent) as mem:
        entry = mem.state.update(key, read_text_argument(content))
    if as_json:
        emit_json(entry)
        return
    click.echo(f"Set {entry.key!r}.")


@state.command("clear")
@click.argument("key")
@agent_option
@json_option
@click.pass_context
def state_clear(ctx: click.Context, key: str, agent: str, as_json: bool) -> None:
    """Remove state KEY."""
    with memory_of(ctx, agent) as mem:
        removed = mem.state.clear(key)
        keys = [e.key for e in mem.state.entries()]
    if as_json:
        emit_json({"removed": 1 if removed else 0})
    elif removed:
        click.echo("Removed 1 entry.")
    else:
        click.echo(f"No state entry {key!r} (entries: {', '.join(keys) or 'none'}).", err=True)
    if not removed:
        ctx.exit(1)


COMMANDS: tuple[click.Command, ...] = (init, notebook, save, knowledge, state)
