"""Which agents exist on the configured backend, and deleting one: the one place that knows.

An agent exists when it has a directory under ``<home>/agents`` or, while its documents live
in PostgreSQL (``MARKUS_DATABASE_URL``), documents there. :func:`roster` says where each one
is and :meth:`Roster.warnings` where files and database disagree: an agent whose markdown is
only on files while the documents live in PostgreSQL (not exported yet: it is refused until
it is), one with markdown in both places, one only in the database (no directory under this
home), and, without the URL, files an in-place export left behind (read, never written).
Every command, the web UI and ``doctor`` ask here.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ._fs import checked_agent_id
from .backend import MOVED_MARKER, file_documents, open_backend
from .config import Settings
from .errors import NotFoundError, RefusedError

__all__ = [
    "AgentEntry",
    "DeleteReport",
    "Roster",
    "agent_ids",
    "check",
    "delete_agent",
    "existing",
    "roster",
]


@dataclass(frozen=True)
class AgentEntry:
    """Where one agent is."""

    agent_id: str
    directory: Path | None
    """Its directory under the home, if it has one."""
    file_documents: tuple[str, ...] = ()
    """The markdown documents in that directory."""
    in_database: bool = False
    """Whether PostgreSQL holds documents of it (looked at only when documents live there)."""
    moved: bool = False
    """Whether an in-place export marked its files as a backup (:data:`MOVED_MARKER`)."""

    @property
    def where(self) -> str:
        places = [
            name
            for name, here in (("files", self.directory), ("database", self.in_database))
            if here
        ]
        return "+".join(places)


@dataclass(frozen=True)
class Roster:
    """Every agent of one memory, and where it is."""

    home: Path
    documents_on_postgres: bool
    entries: tuple[AgentEntry, ...]

    def ids(self) -> list[str]:
        return [entry.agent_id for entry in self.entries]

    def get(self, agent_id: str) -> AgentEntry | None:
        return next((e for e in self.entries if e.agent_id == agent_id), None)

    def unexported(self, entry: AgentEntry) -> bool:
        """Markdown only on files while the documents live in PostgreSQL."""
        return (
            self.documents_on_postgres
            and bool(entry.file_documents)
            and not entry.moved
            and not entry.in_database
        )

    def disagrees(self, entry: AgentEntry) -> bool:
        """Whether files and database hold different memories of ``entry`` (a warning that
        is a problem: not merely an agent whose files are on another host)."""
        if not self.documents_on_postgres:
            return entry.moved
        return bool(entry.file_documents) and not entry.moved  # not exported, or both

    def warning(self, entry: AgentEntry) -> str | None:
        """Where files and database disagree about ``entry``, in words (None: they agree)."""
        name, folder = entry.agent_id, entry.directory
        if self.unexported(entry):
            return (
                f"agent {name!r} is only in files ({folder}) while MARKUS_DATABASE_URL is set: "
                "export it with: env -u MARKUS_DATABASE_URL markus-memory export "
                f"--to-database-url URL --agent {name}"
            )
        if self.documents_on_postgres and entry.in_database and entry.file_documents:
            if not entry.moved:
                return (
                    f"agent {name!r} has markdown files in {folder} and documents in PostgreSQL: "
                    "only the database's are read; the files are an unmarked, stale copy"
                )
        if self.documents_on_postgres and folder is None:
            return (
                f"agent {name!r} is only in the database: no directory under {self.home} "
                "(its sessions and daily logs, if any, are on another host)"
            )
        if not self.documents_on_postgres and entry.moved:
            return (
                f"agent {name!r} was exported to PostgreSQL: its files in {folder} are a backup, "
                "read but never written without MARKUS_DATABASE_URL"
            )
        return None

    def warnings(self) -> list[str]:
        return [w for w in (self.warning(e) for e in self.entries) if w is not None]


def roster(settings: Settings) -> Roster:
    """Every agent of the memory ``settings`` describe (reading creates nothing)."""
    on_postgres = settings.documents_on_postgres
    folders = {}
    if settings.agents_dir.is_dir():
        folders = {p.name: p for p in settings.agents_dir.iterdir() if p.is_dir()}
    in_database = open_backend(settings).stored_agents() if on_postgres else set()
    entries = []
    for agent_id in sorted(set(folders) | in_database):
        folder = folders.get(agent_id)
        entries.append(
            AgentEntry(
                agent_id,
                folder,
                tuple(file_documents(folder)) if folder else (),
                agent_id in in_database,
                folder is not None and (folder / MOVED_MARKER).exists(),
            )
        )
    return Roster(settings.home, on_postgres, tuple(entries))


def agent_ids(settings: Settings) -> list[str]:
    """Every agent of the memory ``settings`` describe, sorted."""
    return roster(settings).ids()


def existing(settings: Settings, agent_id: str) -> str:
    """``agent_id`` if the memory has that agent, else :class:`NotFoundError` (naming the
    agents there); :class:`RefusedError` for one whose markdown is only on files while the
    documents live in PostgreSQL (it would look empty there)."""
    check(settings, agent_id)
    return agent_id


def check(settings: Settings, agent_id: str) -> str | None:
    """What :func:`existing` refuses, raised; else where files and database disagree about
    the agent, in words (None: they agree)."""
    agent_id = checked_agent_id(agent_id)
    found = roster(settings)
    entry = found.get(agent_id)
    if entry is None:
        raise NotFoundError(
            f"no agent {agent_id!r} in {_memory(settings)} (agents: "
            f"{', '.join(found.ids()) or 'none'}); create it with: "
            f"markus-memory init --agent {agent_id}"
        )
    if found.unexported(entry):
        raise RefusedError(found.warning(entry) or agent_id)
    return found.warning(entry)


def _memory(settings: Settings) -> str:
    if settings.documents_on_postgres:
        return f"{settings.home} or the PostgreSQL database"
    return str(settings.home)


@dataclass(frozen=True)
class DeleteReport:
    """What :func:`delete_agent` removed."""

    agent_id: str
    files: int
    """Files of the agent directory (sessions, daily logs, markdown, anything else)."""
    rows: int
    """Activities and transcript messages (their search entries and vectors with them)."""
    other_rows: int
    """Documents in PostgreSQL, recorded dreams and LangGraph items."""


def delete_agent(settings: Settings, agent_id: str) -> DeleteReport:
    """Delete every trace of ``agent_id`` from the memory ``settings`` describe: its directory,
    its rows in ``<home>/data.db`` (episodic rows, recall index and vectors, the knowledge
    index, dream history, LangGraph items) and, with a database URL, the same in PostgreSQL
    with its documents. :class:`NotFoundError` when there is no such agent. Irreversible:
    export it first (``markus-memory export --to-home DIR --agent ID``)."""
    agent_id = checked_agent_id(agent_id)
    entry = roster(settings).get(agent_id)
    if entry is None:
        raise NotFoundError(f"no agent {agent_id!r} in {_memory(settings)}; nothing was deleted")
    rows, other = open_backend(settings).forget_agent(agent_id)
    files = 0
    if entry.directory is not None:
        files = sum(1 for p in entry.directory.rglob("*") if p.is_file() or p.is_symlink())
        shutil.rmtree(entry.directory)
    return DeleteReport(agent_id, files, rows, other)
