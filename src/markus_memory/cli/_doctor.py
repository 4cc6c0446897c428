"""doctor: every memory file parses, the indexes match the files, the schema is current."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from pathlib import Path

import click

from .._fs import read_text
from ..config import AgentPaths, Settings
from ..dream.audit import MIGRATIONS as dream_migrations
from ..errors import MarkusMemoryError
from ..memory import open_agent
from ..search import index as search_index
from ..storage.migrations import Migrations, SqliteMigrationTarget
from ..storage.sqlite import SqliteStore
from ..storage.sqlite_conn import damaged, open_sqlite, sqlite_error
from ..storage.sqlite_schema import migrations as markus_migrations
from ._common import Check, console, emit_json, json_option, progress, settings_of, table
from ._maintain import (
    derived_problems,
    pending_migration,
    rebuild_derived,
    selected_agents,
)
from ._search import index_checks


def _run(subject: str, check: str, probe: Callable[[], object]) -> Check:
    try:
        probe()
    except (MarkusMemoryError, OSError, ValueError) as exc:
        return Check(subject, check, False, str(exc))
    return Check(subject, check, True)


def agent_checks(settings: Settings, name: str) -> list[Check]:
    """Every file of one agent parses; a pending legacy migration is reported, not run."""
    paths = AgentPaths(settings.agent_dir(name))
    if pending_migration(settings, name):
        return [Check(name, "legacy migration", False, "pending (fix: migrate)", fixable=True)]
    checks = []
    with open_agent(name, settings=settings) as mem:
        checks.append(_run(name, "knowledge.md parses", mem.knowledge.read))
        checks.append(_run(name, "NOTEBOOK.md parses", mem.notebook.read))
        checks.append(_run(name, "state.md parses", mem.state.entries))
        checks.append(_run(name, "role files load", mem.roles.role))
        infos = mem.sessions.list()
        bad = []
        for info in infos:
            result = _run(name, "session", partial(mem.sessions.get, info.id))
            if not result.ok:
                bad.append(f"{info.path.name}: {result.detail}")
        checks.append(Check(name, f"{len(infos)} session file(s) parse", not bad, "; ".join(bad)))
        logs = sorted(paths.daily_logs_dir.glob("*.md")) if paths.daily_logs_dir.is_dir() else []
        bad = [p.name for p in logs if not _run(name, "log", partial(read_text, p)).ok]
        checks.append(Check(name, f"{len(logs)} daily log(s) decode", not bad, ", ".join(bad)))
    if all(c.ok for c in checks):
        checks.extend(index_checks(settings, name))
    return checks


KNOWN_SETS: tuple[Migrations[sqlite3.Connection], ...] = (
    markus_migrations,
    search_index.migrations,
    dream_migrations,
)
"""Every migration set that lives in data.db."""


def pending_migrations(target: SqliteMigrationTarget) -> list[str]:
    """Migrations missing from a set data.db has started; a set never started is created on
    first use (activities open one, the first search the other), so it is not behind."""
    pending: list[str] = []
    for migrations in KNOWN_SETS:
        names = migrations.pending(target)
        if len(names) < len(migrations.migrations):
            pending.extend(f"{migrations.name}/{name}" for name in names)
    return pending


def database_checks(path: Path) -> list[Check]:
    """data.db is intact and its schema is current (every migration applied)."""
    subject = path.name
    if not path.exists():
        return [Check(subject, "database", True, "not created yet")]
    try:
        conn = open_sqlite(path)[0]  # read-only in a home without write access
    except sqlite3.Error as exc:
        return [Check(subject, "opens", False, str(sqlite_error(path, exc)))]
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        if rows != ["ok"]:
            return [Check(subject, "integrity", False, damaged(path, "; ".join(rows[:3])))]
        checks = [Check(subject, "integrity", True)]
        target = SqliteMigrationTarget(conn)
        pending = pending_migrations(target)
        checks.append(
            Check(subject, "schema current", not pending, ", ".join(pending), fixable=True)
        )
        problems = derived_problems(conn, {name.split("/")[0] for name in pending})
        detail = "; ".join(problems) + " (fix: reindex)" if problems else ""
        checks.append(Check(subject, "derived data", not problems, detail, fixable=True))
    except (sqlite3.Error, MarkusMemoryError) as exc:
        checks = [Check(subject, "readable", False, damaged(path, str(exc)))]
    finally:
        conn.close()
    return checks


def fix(settings: Settings, failed: list[Check]) -> list[str]:
    """Repair what is safe: legacy and schema migrations, and rebuilding derived data;
    returns what could not be repaired."""
    problems: list[str] = []
    if any(item.check == "derived data" for item in failed):
        # Rebuilds every agent's search index as well: the per-agent repairs are done.
        problems.extend(rebuild_derived(settings, selected_agents(settings, None))[1])
        failed = [item for item in failed if not item.check.startswith("search index")]
    for item in failed:
        if item.check == "legacy migration":
            open_agent(item.subject, settings=settings).close()
        elif item.check == "schema current":
            SqliteStore(settings.database_path).close()
            search_index.open_index(settings.database_path).conn.close()
        elif item.check.startswith("search index"):
            with open_agent(item.subject, settings=settings) as mem:
                mem.rebuild_search_index()
    return problems


@click.command()
@click.option("--agent", "-a", help="Only this agent (default: every agent under the home).")
@click.option("--fix", "repair", is_flag=True, help="Repair what is safe to repair, then re-check.")
@json_option
@click.pass_context
def doctor(ctx: click.Context, agent: str | None, repair: bool, as_json: bool) -> None:
    """Check that every memory file parses and the database schema is current.

    Exit code 1 when a check fails (after --fix, when one still fails).
    """
    settings = settings_of(ctx)
    agents = selected_agents(settings, agent)

    def run_all() -> list[Check]:
        found: list[Check] = []
        with progress(not as_json) as bar:
            task = bar.add_task("checking", total=len(agents) + 1)
            for name in agents:
                found.extend(agent_checks(settings, name))
                bar.advance(task)
            found.extend(database_checks(settings.database_path))
            bar.advance(task)
        return found

    checks = run_all()
    fixed: list[Check] = []
    unfixed: list[str] = []
    if repair:
        fixed = [c for c in checks if not c.ok and c.fixable]
        if fixed:
            unfixed = fix(settings, fixed)
            checks = run_all()
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json({"ok": not failed, "checks": checks, "fixed": fixed, "not_fixed": unfixed})
    else:
        console().print(
            table(
                f"Doctor: {settings.home}",
                ["subject", "check", "ok", "detail"],
                [(c.subject, c.check, "ok" if c.ok else "FAIL", c.detail) for c in checks],
            )
        )
        for item in fixed:
            click.echo(f"fixed: {item.subject}: {item.check}")
        for problem in unfixed:
            click.echo(f"could not fix: {problem}")
        hint = " (some can be repaired with --fix)" if any(c.fixable for c in failed) else ""
        click.echo(f"{len(failed)} problem(s){hint}." if failed else "All checks passed.")
    if failed:
        ctx.exit(1)


COMMANDS: tuple[click.Command, ...] = (doctor,)
