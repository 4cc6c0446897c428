"""What every command shares: the root group, --home/--agent/--json, output, exit codes.

Exit codes: 0 done; 1 the operation failed or was refused (a missing agent, a corrupt file, a
refused write, a failed check); 2 the command line was wrong (click's usage errors and malformed
arguments). No failure shows a traceback (``_errors``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console, Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .._fs import checked_agent_id
from ..agents import check, existing
from ..config import Settings, iso_ms
from ..memory import AgentMemory, open_agent
from ..storage.checks import Check as Check  # re-exported: every command's findings
from ._errors import InputError as InputError  # re-exported: commands raise it
from ._errors import debugging, translate

AGENT_ENV = "MARKUS_AGENT"
DEFAULT_AGENT = "default"
PIPE_WIDTH = 200
"""Columns of a table when stdout is not a terminal (rich would assume 80 and fold)."""

F = TypeVar("F", bound=Callable[..., Any])


class MemoryGroup(click.Group):
    """A click group that turns every failure into one line and exit code 1 or 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, BrokenPipeError):
            raise  # click reports these itself (a closed pipe, as in `| head`, silently)
        except Exception as exc:
            if debugging():
                raise
            options = ctx.ensure_object(Options)
            raise translate(exc, options.agent, options.urls) from None


@dataclasses.dataclass
class Options:
    """The root group's options, shared with every command through the click context."""

    home: Path | None = None
    agent: str | None = None
    """The agent the command works on, named in repair hints."""
    urls: list[str] = dataclasses.field(default_factory=list)
    """Database URLs the command uses, diagnosed when the database fails."""

    def settings(self) -> Settings:
        settings = Settings.from_env(home=self.home)
        self.uses(settings.database_url)
        return settings

    def uses(self, url: str | None) -> None:
        if url and url not in self.urls:
            self.urls.append(url)


def settings_of(ctx: click.Context) -> Settings:
    return ctx.ensure_object(Options).settings()


def agent_option(func: F) -> F:
    return click.option(
        "--agent",
        "-a",
        default=DEFAULT_AGENT,
        envvar=AGENT_ENV,
        show_default=True,
        help=f"Agent id (or set {AGENT_ENV}).",
    )(func)


def json_option(func: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print JSON instead of a readable view."
    )(func)


@contextmanager
def memory_of(ctx: click.Context, agent: str, *, create: bool = False) -> Iterator[AgentMemory]:
    """Open ``agent``, refusing one the memory does not have, as reading and writing
    commands alike do (a typo never creates an agent); ``create=True`` (``init``, ``serve``,
    the hooks) creates it."""
    settings = settings_of(ctx)
    ctx.ensure_object(Options).agent = agent
    agent = checked_agent_id(agent)  # a malformed id is a bad argument (exit 2)
    if not create:
        warning = check(settings, agent)
        if warning:
            click.echo(f"warning: {warning}", err=True)
    with open_agent(agent, settings=settings) as mem:
        yield mem


def existing_agent(settings: Settings, agent: str) -> str:
    """``agent`` if it is a well-formed id of an agent the memory has, else an error."""
    return existing(settings, agent)


def plain(value: Any) -> Any:
    """Dataclasses, datetimes, paths and tuples as JSON-ready values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return iso_ms(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value


def emit_json(value: Any) -> None:
    click.echo(json.dumps(plain(value), ensure_ascii=False, indent=2))


def console() -> Console:
    """Colours only on a terminal; width from the terminal, or wide enough when piped."""
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, width=PIPE_WIDTH)


NONE = "(none)"
"""The one line of an empty listing, under its heading."""


def table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Group:
    """A heading line (never wrapped to the table's width) over a plain table, or over
    ``(none)`` when there are no rows (every empty listing looks the same)."""
    heading = Text(f"\n{title}", style="bold")
    if not rows:
        return Group(heading, Text(NONE)) if title else Group(Text(NONE))
    view = Table(show_edge=False, pad_edge=False)
    for name in columns:
        view.add_column(name, overflow="fold")
    for row in rows:
        view.add_row(*(str(cell) for cell in row))
    return Group(heading, view) if title else Group(view)


def empty_listing(title: str, hint: str = "") -> None:
    """What every listing prints when it has nothing: its heading, then ``(none)``."""
    console().print(Group(Text(f"\n{title}", style="bold"), Text(NONE + hint)))


def progress(enabled: bool = True) -> Progress:
    """A progress bar on stderr, drawn only on a terminal (piped output stays clean)."""
    err = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not enabled or not err.is_terminal,
    )


def spinner(enabled: bool, text: str) -> AbstractContextManager[object]:
    """A spinner on stderr while something of unknown length runs (only on a terminal)."""
    err = Console(stderr=True)
    if not enabled or not err.is_terminal:
        return nullcontext()
    return err.status(text)


def read_text_argument(text: str) -> str:
    """``-`` reads the text from stdin (for long or multi-line content)."""
    return sys.stdin.read() if text == "-" else text


def when(moment: datetime | None) -> str:
    """A readable UTC time (minutes), or an empty cell."""
    return "" if moment is None else moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def short(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
