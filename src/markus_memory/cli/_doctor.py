"""doctor: every memory file parses, the indexes match the files, the schema is current."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial

import click

from .._conversations import files_to_move
from .._fs import checked_agent_id, read_text
from .._lock import AgentLock
from ..agents import Roster, existing, roster
from ..backend import open_backend
from ..config import AgentPaths, Settings
from ..errors import CorruptFileError, MarkusMemoryError
from ..memory import open_agent
from ..storage.checks import POSTGRES_SUBJECT as PG_SUBJECT
from ._common import Check, console, emit_json, json_option, plain, progress, settings_of, table
from ._maintain import (
    pending_migration,
    rebuild_derived,
    selected_agents,
)
from ._repair import (
    repair_session,
    repair_utf8_file,
    session_problems,
    session_repair,
    utf8_repair,
)
from ._search import index_checks

MOVE_IN = "sessions and daily logs in the database"


def _run(subject: str, check: str, probe: Callable[[], object]) -> Check:
    try:
        probe()
    except CorruptFileError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError) and exc.path.is_file():
            return Check(
                subject, check, False, str(exc), True, utf8_repair(exc.path), target=exc.path
            )
        return Check(subject, check, False, str(exc))
    except (MarkusMemoryError, OSError, ValueError) as exc:
        return Check(subject, check, False, str(exc))
    return Check(subject, check, True)


def agent_checks(settings: Settings, name: str) -> list[Check]:
    """Every file of one agent parses; a pending legacy migration is reported, not run."""
    paths = AgentPaths(settings.agent_dir(name))
    if pending_migration(settings, name):
        return [Check(name, "legacy migration", False, "pending (fix: migrate)", fixable=True)]
    waiting = files_to_move(settings, paths)
    if waiting:
        detail = f"{waiting} session and daily log files still in {paths.root}"
        return [Check(name, MOVE_IN, False, f"{detail} (fix: move them in)", fixable=True)]
    checks = []
    with open_agent(name, settings=settings) as mem:
        checks.append(_run(name, "knowledge.md parses", mem.knowledge.read))
        checks.append(_run(name, "NOTEBOOK.md parses", mem.notebook.read))
        checks.append(_run(name, "state.md parses", mem.state.entries))
        checks.append(_run(name, "role files load", mem.roles.role))
        linked = [f for f in (paths.sessions_dir, paths.daily_logs_dir) if f.is_symlink()]
        for folder in (paths.sessions_dir, paths.daily_logs_dir):
            if folder in linked:
                detail = (
                    f"{folder} is a symbolic link: nothing is read or written through it; "
                    "replace it with a real directory holding the files"
                )
                checks.append(Check(name, f"{folder.name}/ is a symbolic link", False, detail))
            elif folder.exists() and not folder.is_dir():
                detail = f"{folder} is a file where a directory belongs: move it away"
                checks.append(Check(name, f"{folder.name}/ is a directory", False, detail))
        if linked:
            return checks
        count, problems = session_problems(paths.sessions_dir)  # read only: nothing moves
        if not problems:
            checks.append(Check(name, f"{count} session file(s) parse", True))
        for problem in problems:
            checks.append(
                Check(
                    name,
                    f"session {problem.session_id}",
                    False,
                    f"sessions/{problem.file}: {problem.why}",
                    True,
                    session_repair(problem),
                )
            )
        logs = sorted(paths.daily_logs_dir.glob("*.md")) if paths.daily_logs_dir.is_dir() else []
        bad = [_run(name, f"daily log {p.name} decodes", partial(read_text, p)) for p in logs]
        failing = [c for c in bad if not c.ok]
        checks.extend(failing or [Check(name, f"{len(logs)} daily log(s) decode", True)])
    if all(c.ok for c in checks):
        checks.extend(index_checks(settings, name))
    return checks


def listed(settings: Settings, agent: str | None) -> tuple[Roster, list[str]]:
    """The agents to check; with the database unusable, those of the home (the database's
    own check says why)."""
    try:
        found = roster(settings)
    except MarkusMemoryError:
        found = roster(dataclasses.replace(settings, documents="files"))
    if agent is None:
        return found, found.ids()
    if checked_agent_id(agent) not in found.ids():
        existing(settings, agent)  # raises, naming the agents there
    return found, [agent]


def placement(found: Roster, name: str) -> Check | None:
    """Where files and database disagree about the agent (None: nothing to say)."""
    entry = found.get(name)
    warning = None if entry is None else found.warning(entry)
    if entry is None or warning is None:
        return None
    return Check(name, "files and database agree", not found.disagrees(entry), warning)


def why_not_open(checks: list[Check]) -> str | None:
    """Why the agents must not be opened, given :func:`postgres_checks`' findings (``None``:
    they may be). Opening an agent connects, and creates or migrates the schema: a server
    that does not answer or a schema that is missing or behind leaves the agents unchecked
    rather than changed."""
    found = {c.check: c for c in checks}
    if any(not found[name].ok for name in ("reachable", "readable") if name in found):
        return "not checked: the PostgreSQL database is not usable (see its line above)"
    if "schema current" in found and not found["schema current"].ok:
        return (
            "not checked: the PostgreSQL schema is behind and opening the agent would migrate "
            "it (doctor --fix applies the migrations, then checks the agent)"
        )
    if "tables present" in found and not found["tables present"].ok:
        return "not checked: tables of the PostgreSQL schema are missing (see its line above)"
    if "database" in found:
        return (
            "not checked: the PostgreSQL database holds no markus-memory schema yet, and "
            "opening the agent would create it (the first write through the API does)"
        )
    return None


def planned(item: Check) -> str:
    """What ``--fix`` will change for ``item``, in words."""
    if item.repair:
        return item.repair
    if item.check == "legacy migration":
        return "migrate MEMORY.md / memories.json into knowledge.md and state.md (as `migrate`)"
    if item.check == MOVE_IN:
        return (
            "move the agent's session files and daily logs into the database (each once; the "
            "files are deleted once the database holds them)"
        )
    if item.check == "schema current":
        where = "the PostgreSQL database" if item.subject == PG_SUBJECT else "data.db"
        return f"apply the pending database migrations to {where}"
    if item.check == "derived data":
        return (
            "rebuild everything derived from the files for every agent (as `reindex`): search "
            "indexes, transcripts and their recall index, activity search"
        )
    if item.check.startswith("search index"):
        return "rebuild the agent's search index from knowledge.md (derived data only)"
    return "nothing (no safe repair)"


def fix_one(settings: Settings, item: Check) -> str:
    """Repair one finding; what was done."""
    if item.target is not None:
        paths = AgentPaths(settings.agent_dir(item.subject))
        with AgentLock(paths.lock, settings.lock_timeout_seconds):
            return repair_utf8_file(item.target)
    if item.check.startswith("session "):
        return repair_session(settings, item.subject, item.check.removeprefix("session "))
    if item.check in ("legacy migration", MOVE_IN):
        open_agent(item.subject, settings=settings).close()
    elif item.check == "schema current" and item.subject == PG_SUBJECT:
        return open_backend(settings).migrate_postgres()
    elif item.check == "schema current":
        open_backend(settings).migrate_data_db()
    elif item.check.startswith("search index"):
        with open_agent(item.subject, settings=settings) as mem:
            mem.rebuild_search_index()
    return "done"


def fix(
    settings: Settings, failed: list[Check], quiet: bool
) -> tuple[list[tuple[Check, str]], list[str]]:
    """Repair what is safe, saying before each repair what it changes (on stderr when
    ``quiet``: stdout is JSON then); (finding, outcome) and what could not be repaired."""
    done: list[tuple[Check, str]] = []
    problems: list[str] = []
    if any(item.check == "derived data" for item in failed):
        # Rebuilds every agent's search index as well: the per-agent repairs are done.
        covered = [i for i in failed if i.check == "derived data" or i.check.startswith("search")]
        for item in covered:
            click.echo(f"fixing {item.subject}: {item.check}: {planned(item)}", err=quiet)
        problems.extend(rebuild_derived(settings, selected_agents(settings, None))[1])
        outcome = "rebuilt" if not problems else "rebuilt in part (see: could not fix)"
        done.extend((item, outcome) for item in covered)
        failed = [item for item in failed if item not in covered]
    for item in failed:
        click.echo(f"fixing {item.subject}: {item.check}: {planned(item)}", err=quiet)
        done.append((item, fix_one(settings, item)))
    return done, problems


@click.command()
@click.option("--agent", "-a", help="Only this agent (default: every agent under the home).")
@click.option("--fix", "repair", is_flag=True, help="Repair what is safe to repair, then re-check.")
@json_option
@click.pass_context
def doctor(ctx: click.Context, agent: str | None, repair: bool, as_json: bool) -> None:
    """Check that every memory file parses and the database schema is current.

    A check changes nothing. --fix first says what it will change, then does it, then checks
    again. Exit code 1 when a check fails (after --fix, when one still fails).
    """
    settings = settings_of(ctx)
    found_agents, agents = listed(settings, agent)

    def run_all() -> list[Check]:
        found: list[Check] = []
        with progress(not as_json) as bar:
            task = bar.add_task("checking", total=len(agents) + 1)
            database = open_backend(settings).check_postgres()
            found.extend(database)
            unopened = why_not_open(database)
            for name in agents:
                where = placement(found_agents, name)
                found.extend([where] if where is not None else [])
                entry = found_agents.get(name)
                if entry is not None and found_agents.unexported(entry):
                    pass  # opening it is refused: the placement check says why
                elif unopened is None:
                    found.extend(agent_checks(settings, name))
                else:
                    found.append(Check(name, "agent", False, unopened))
                bar.advance(task)
            found.extend(open_backend(settings).check_data_db())
            bar.advance(task)
        return found

    checks = run_all()
    fixed: list[tuple[Check, str]] = []
    unfixed: list[str] = []
    if repair:
        fixable = [c for c in checks if not c.ok and c.fixable]
        if fixable:
            fixed, unfixed = fix(settings, fixable, as_json)
            checks = run_all()
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json(
            {
                "ok": not failed,
                "checks": [{**plain(c), "fix": planned(c) if c.fixable else None} for c in checks],
                "fixed": [{**plain(c), "fix": planned(c), "result": r} for c, r in fixed],
                "not_fixed": unfixed,
            }
        )
    else:
        console().print(
            table(
                f"Doctor: {settings.home}",
                ["subject", "check", "ok", "detail"],
                [(c.subject, c.check, "ok" if c.ok else "FAIL", c.detail) for c in checks],
            )
        )
        for item, outcome in fixed:
            click.echo(f"fixed: {item.subject}: {item.check}: {outcome}")
        for problem in unfixed:
            click.echo(f"could not fix: {problem}")
        pending = [c for c in failed if c.fixable]
        if pending and not repair:
            click.echo("doctor --fix would:")
            for item in pending:
                click.echo(f"  {item.subject}: {item.check}: {planned(item)}")
        click.echo(f"{len(failed)} problem(s)." if failed else "All checks passed.")
    if failed:
        ctx.exit(1)


COMMANDS: tuple[click.Command, ...] = (doctor,)
