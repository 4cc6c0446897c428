"""``recall``: search an agent's past activities and conversations."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import click

from ..errors import NotFoundError
from ..search.passages import merge_hits
from ..storage.repos.activities import Activity
from ._common import (
    agent_option,
    console,
    emit_json,
    empty_listing,
    json_option,
    memory_of,
    short,
    table,
    when,
)


@click.group()
def recall() -> None:
    """Search past activities and conversations."""


@recall.command("activities")
@click.argument("query", required=False)
@agent_option
@click.option("--type", "types", help="Comma-separated activity types (with no QUERY).")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Most activities."
)
@json_option
@click.pass_context
def recall_activities(
    ctx: click.Context, query: str | None, agent: str, types: str | None, limit: int, as_json: bool
) -> None:
    """Find activities by QUERY (full text), or list the latest ones."""
    with memory_of(ctx, agent) as mem:
        if query:
            hits = mem.activities.search(query, limit=limit)
            rows: list[tuple[Activity, float | None]] = [
                (h.activity, round(h.score, 3)) for h in hits
            ]
        else:
            rows = [(a, None) for a in mem.activities.list(type=types, limit=limit)]
    if as_json:
        emit_json([{**_activity(a), "score": score} for a, score in rows])
        return
    console().print(
        table(
            "Activities",
            ["id", "type", "label", "started", "summary"],
            [
                (a.id, a.type, short(a.label, 40), when(a.started_at), short(a.summary or "", 50))
                for a, _ in rows
            ],
        )
    )


def _activity(activity: Activity) -> dict[str, Any]:
    return {
        "id": activity.id,
        "type": activity.type,
        "label": activity.label,
        "started_at": activity.started_at,
        "ended_at": activity.ended_at,
        "success": activity.success,
        "summary": activity.summary,
        "keywords": activity.keywords,
    }


@recall.command("activity")
@click.argument("activity_id")
@agent_option
@json_option
@click.pass_context
def recall_activity(ctx: click.Context, activity_id: str, agent: str, as_json: bool) -> None:
    """Print one activity with its logs."""
    with memory_of(ctx, agent) as mem:
        try:
            detail = mem.activities.get(activity_id)
        except NotFoundError as exc:
            raise click.ClickException(
                f"{exc}; list them with: markus-memory recall activities --agent {agent}"
            ) from None
    if as_json:
        emit_json({**_activity(detail.activity), "logs": detail.logs})
        return
    a = detail.activity
    click.echo(
        f"{a.id}  {a.type}  {a.label}\nstarted {when(a.started_at)}  ended {when(a.ended_at)}"
    )
    if a.summary:
        click.echo(f"summary: {a.summary}")
    for entry in detail.logs:
        click.echo(f"  #{entry.seq} [{entry.type}] {entry.content}")


DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"]


@recall.command("conversation")
@click.argument("query")
@agent_option
@click.option("--session", "session_id", help="Only this session.")
@click.option("--role", help="A message role (user, assistant …) or a speaker name.")
@click.option("--since", type=click.DateTime(DATE_FORMATS), help="Not before (UTC).")
@click.option("--until", type=click.DateTime(DATE_FORMATS), help="Not after (UTC).")
@click.option(
    "--limit", type=click.IntRange(1, 100), default=10, show_default=True, help="Most hits."
)
@click.option(
    "--context",
    "neighbours",
    type=click.IntRange(0, 10),
    default=1,
    show_default=True,
    help="Turns of context shown on each side of a hit.",
)
@json_option
@click.pass_context
def recall_conversation(
    ctx: click.Context,
    query: str,
    agent: str,
    session_id: str | None,
    role: str | None,
    since: datetime | None,
    until: datetime | None,
    limit: int,
    neighbours: int,
    as_json: bool,
) -> None:
    """Search past session transcripts for QUERY, best hit first."""
    with memory_of(ctx, agent) as mem:
        hits = mem.recall_conversation(
            query,
            session_id=session_id,
            role=role,
            since=_utc(since),
            until=_utc(until),
            limit=limit,
            neighbours=neighbours,
            now=mem.settings.clock(),
        )
    if as_json:
        emit_json(hits)
        return
    if not hits:
        empty_listing("Conversation hits")
    for passage in merge_hits(hits):  # overlapping windows of one session shown once
        more = f"  {passage.hits} hits" if passage.hits > 1 else ""
        click.secho(
            f"{passage.session_id} #{passage.index}  {when(passage.timestamp)}  "
            f"({passage.score:.3f}){more}",
            bold=True,
        )
        for turn in passage.turns:
            if turn.hit:
                click.echo(f"  > [{turn.who}] {short(turn.text, 200)}")
            else:
                click.echo(f"    [{turn.who}] {short(turn.text, 100)}")


def _utc(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.replace(tzinfo=timezone.utc)


COMMANDS: tuple[click.Command, ...] = (recall,)
