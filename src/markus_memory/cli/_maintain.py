"""Maintenance commands: migrate legacy files and check (and repair) a memory home."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import click

from .._fs import read_text
from ..config import AgentPaths, Settings
from ..errors import MarkusMemoryError
from ..memory import open_agent
from ..storage.migrations import Migrations, SqliteMigrationTarget
from ..storage.sqlite import SqliteStore
from ..storage.sqlite_schema import migrations as markus_migrations
from ._common import console, emit_json, json_option, progress, settings_of, table
from ._inspect import agent_ids


def needs_migration(paths: AgentPaths) -> bool:
    """What AgentMemory would migrate on open: no knowledge.md yet, or a memories.json left."""
    return not paths.knowledge.exists() or paths.legacy_memories_json.exists()


def selected_agents(settings: Settings, agent: str | None) -> list[str]:
    if agent is None:
        return agent_ids(settings)
    if not settings.agent_dir(agent).is_dir():
        raise click.ClickException(f"no agent {agent!r} under {settings.home}")
    return [agent]


@click.command()
@click.option("--agent", "-a", help="Only this agent (default: every agent under the home).")
@json_option
@click.pass_context
def migrate(ctx: click.Context, agent: str | None, as_json: bool) -> None:
    """Migrate legacy Markus files (MEMORY.md, memories.json) into knowledge.md and state.md.

    Idempotent; legacy MEMORY.md is kept, memories.json is removed once imported.
    """
    settings = settings_of(ctx)
    rows = []
    agents = selected_agents(settings, agent)
    with progress(not as_json) as bar:
        task = bar.add_task("migrating", total=len(agents))
        for name in agents:
            paths = AgentPaths(settings.agent_dir(name))
            pending = needs_migration(paths)
            if pending:
                with open_agent(name, settings=settings) as mem:
                    count = len(mem.knowledge.observations())
            else:
                count = None
            rows.append({"agent": name, "migrated": pending, "observations": count})
            bar.advance(task)
    if as_json:
        emit_json(rows)
        return
    done = [r for r in rows if r["migrated"]]
    if not done:
        click.echo(f"Nothing to migrate ({len(rows)} agent(s) checked).")
        return
    console().print(
        table(
            "Migrated", ["agent", "observations"], [(r["agent"], r["observations"]) for r in done]
        )
    )


@dataclass(frozen=True)
class Check:
    """One doctor finding."""

    subject: str
    check: str
    ok: bool
    detail: str = ""
    fixable: bool = False


def _run(subject: str, check: str, probe: Callable[[], object]) -> Check:
    try:
        probe()
    except (MarkusMemoryError, OSError, ValueError) as exc:
        return Check(subject, check, False, str(exc))
    return Check(subject, check, True)


def agent_checks(settings: Settings, name: str) -> list[Check]:
    """Every file of one agent parses; a pending legacy migration is reported, not run."""
    paths = AgentPaths(settings.agent_dir(name))
    if needs_migration(paths):
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
    return checks


MIGRATION_SETS: tuple[Migrations[sqlite3.Connection], ...] = (markus_migrations,)


def database_checks(path: Path) -> list[Check]:
    """data.db is intact and its schema is current (every migration applied)."""
    subject = path.name
    if not path.exists():
        return [Check(subject, "database", True, "not created yet")]
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=5)
    except sqlite3.Error as exc:
        return [Check(subject, "opens", False, str(exc))]
    try:
        row = conn.execute("PRAGMA quick_check").fetchone()
        checks = [Check(subject, "integrity", row[0] == "ok", "" if row[0] == "ok" else row[0])]
        target = SqliteMigrationTarget(conn)
        pending = [f"{s.name}/{n}" for s in MIGRATION_SETS for n in s.pending(target)]
        checks.append(
            Check(subject, "schema current", not pending, ", ".join(pending), fixable=True)
        )
    except (sqlite3.Error, MarkusMemoryError) as exc:
        checks = [Check(subject, "readable", False, str(exc))]
    finally:
        conn.close()
    return checks


def fix(settings: Settings, failed: list[Check]) -> None:
    """Repair what is safe: run pending legacy migrations and database migrations."""
    for item in failed:
        if item.check == "legacy migration":
            open_agent(item.subject, settings=settings).close()
        elif item.check == "schema current":
            SqliteStore(settings.database_path).close()


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
    if repair:
        fixed = [c for c in checks if not c.ok and c.fixable]
        if fixed:
            fix(settings, fixed)
            checks = run_all()
    failed = [c for c in checks if not c.ok]
    if as_json:
        emit_json({"ok": not failed, "checks": checks, "fixed": fixed})
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
        hint = " (some can be repaired with --fix)" if any(c.fixable for c in failed) else ""
        click.echo(f"{len(failed)} problem(s){hint}." if failed else "All checks passed.")
    if failed:
        ctx.exit(1)


COMMANDS: tuple[click.Command, ...] = (migrate, doctor)
