"""doctor: every memory file parses, the indexes match the files, the schema is current."""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

import click

from .._conversations import files_to_move
from .._fs import read_text, validate_id
from .._lock import AgentLock
from ..agents import Roster, existing, roster
from ..backend import DATA_DB_MIGRATIONS
from ..config import AgentPaths, Settings
from ..errors import CorruptFileError, MarkusMemoryError
from ..memory import open_agent
from ..storage._sqlite.conn import close_leaving_wal, damaged, open_sqlite, sqlite_error
from ..storage._sqlite.damage import NOTE_SUFFIX, is_damage, remember_damage
from ..storage._sqlite.store import SqliteStore
from ..storage.knowledge_schema import open_sqlite_index
from ..storage.migrations import BOOKKEEPING_TABLE, SqliteMigrationTarget
from ._common import Check, console, emit_json, json_option, plain, progress, settings_of, table
from ._doctor_pg import SUBJECT as PG_SUBJECT
from ._doctor_pg import apply_pending, postgres_checks, why_not_open
from ._doctor_tables import missing_tables, sqlite_tables, tables_check
from ._maintain import (
    derived_problems,
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
    if validate_id("agent id", agent) not in found.ids():
        existing(settings, agent)  # raises, naming the agents there
    return found, [agent]


def placement(found: Roster, name: str) -> Check | None:
    """Where files and database disagree about the agent (None: nothing to say)."""
    entry = found.get(name)
    warning = None if entry is None else found.warning(entry)
    if entry is None or warning is None:
        return None
    return Check(name, "files and database agree", not found.disagrees(entry), warning)


def pending_migrations(target: SqliteMigrationTarget) -> list[str]:
    """Migrations missing from a set data.db has started; a set never started is created on
    first use (activities open one, the first search the other), so it is not behind."""
    pending: list[str] = []
    for migrations in DATA_DB_MIGRATIONS:
        names = migrations.pending(target)
        if len(names) < len(migrations.migrations):
            pending.extend(f"{migrations.name}/{name}" for name in names)
    return pending


def database_checks(path: Path) -> list[Check]:
    """data.db is intact and its schema is current (every migration applied). A damaged one
    is marked as such (:mod:`~markus_memory.storage._sqlite.damage`): from then on nothing
    writes to it, in any process, until it is replaced."""
    subject = path.name
    if not path.exists():
        return [Check(subject, "database", True, "not created yet")]
    try:
        conn = open_sqlite(path)[0]  # read-only in a home without write access
    except sqlite3.Error as exc:
        return [Check(subject, "opens", False, _marked(path, exc, str(sqlite_error(path, exc))))]
    found = None
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            found = "; ".join(rows[:3])
            return [Check(subject, "integrity", False, damaged(path, found) + MARKED)]
        checks = [Check(subject, "integrity", True)]
        target = SqliteMigrationTarget(conn)
        pending = pending_migrations(target)
        checks.append(
            Check(subject, "schema current", not pending, ", ".join(pending), fixable=True)
        )
        behind = {name.split("/")[0] for name in pending}
        present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        started = {
            str(r[0]) for r in conn.execute(f"SELECT migration_set FROM {BOOKKEEPING_TABLE}")
        }
        missing = missing_tables(sqlite_tables(), started, behind, present.__contains__)
        checks.append(tables_check(subject, missing))
        problems = derived_problems(conn, behind)
        detail = "; ".join(problems) + " (fix: reindex)" if problems else ""
        checks.append(Check(subject, "derived data", not problems, detail, fixable=True))
    except (sqlite3.Error, MarkusMemoryError) as exc:
        found = str(exc) if isinstance(exc, sqlite3.Error) and is_damage(exc) else None
        detail = damaged(path, str(exc)) + (MARKED if found else "")
        checks = [Check(subject, "readable", False, detail)]
    finally:
        if found is None:
            conn.close()
        else:
            remember_damage(path, found)
            close_leaving_wal(path, [conn])
    return checks


DATA_DB_NOTE = f"data.db{NOTE_SUFFIX}"
MARKED = f" Marked as damaged ({DATA_DB_NOTE}): nothing writes to it any more until it is replaced."


def _marked(path: Path, exc: sqlite3.Error, detail: str) -> str:
    if not is_damage(exc):
        return detail
    remember_damage(path, str(exc))
    return detail + MARKED


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
        return apply_pending(settings)
    elif item.check == "schema current":
        SqliteStore(settings.database_path).close()
        open_sqlite_index(settings.database_path).close()
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
            database = postgres_checks(settings)
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
            found.extend(database_checks(settings.database_path))
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
