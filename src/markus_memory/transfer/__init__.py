"""Export / import: move agents between the file layout and PostgreSQL without losing a byte.

:func:`export_agent` copies one agent (or every agent) from the memory described by one
:class:`Settings` to another: every document of the markdown layers (knowledge.md, NOTEBOOK.md,
state.md, the legacy MEMORY.md / memories.json, every file in ``role/``) goes through the
:class:`DocumentStore` of each side with its exact text and modification time, and every other
file of the agent directory (sessions, daily logs, anything else) is copied byte for byte with
its modification time, because those stay on files whatever the document store is. Locks and
temporary files (names starting with ``.``) are not copied.

Nothing is read through the layers, so a copy never migrates, normalises or prunes anything:
files → PostgreSQL → files gives back the same bytes. The destination agent must be empty
unless ``replace=True``, which makes it an exact mirror (documents the source lacks are
removed).

Episodic rows (activities with their logs, mailbox items, decisions, chat sessions and
messages, the session transcript with its import marks) are copied through the
``EpisodicStore`` protocol when the two sides use different stores; derived indexes
(full-text, vectors) are rebuilt, not copied. Rows
are never merged: a destination that already holds different rows for the agent is refused,
one that holds the same rows is left alone. The episodic store of a side is the one
:class:`~markus_memory.backend.Backend` picks for its settings: the PostgreSQL
``PostgresStore`` when a database URL is set, else the SQLite file ``<home>/data.db``.
Transcript text lives in the session files (copied byte for byte); the transcript index and
vectors are derived and rebuilt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .._docs import DocumentStore, is_document_name
from .._fs import atomic_write_bytes, read_bytes, validate_id
from .._fs_docs import FileDocuments
from .._lock import AgentLock
from ..backend import open_backend
from ..config import AgentPaths, Settings, iso_ms
from ..errors import InvalidInputError, NotFoundError, RefusedError
from ..storage.audit import AuditLog, DreamRun, SqliteAuditLog, open_audit_log
from ..storage.base import EpisodicStore
from ._rows import AgentRows, read_rows, write_rows

if TYPE_CHECKING:
    from ..storage.postgres_conn import PostgresDatabase

__all__ = ["MOVED_MARKER", "TransferReport", "agent_ids", "export_agent", "import_agent"]


@dataclass(frozen=True)
class TransferReport:
    """What one export moved."""

    agents: tuple[str, ...]
    documents: int
    files: int
    removed: int = 0
    rows: int = 0
    dream_runs: int = 0
    """Recorded dreams copied (the history ``dream undo`` and ``dream history`` read)."""
    marked: tuple[str, ...] = ()
    """Agent directories left on disk by an in-place export to PostgreSQL, each marked with
    :data:`MOVED_MARKER` (their markdown files are no longer read there)."""


class _Side:
    """One memory: its documents (files or PostgreSQL) and its episodic store (SQLite or
    PostgreSQL, as the backend seam picks it), sharing one connection pool per URL."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.database: PostgresDatabase | None = None
        self.backend = open_backend(settings)
        self._episodic: EpisodicStore | None = None
        if self.backend.documents_on_postgres:
            from ..storage.pg_documents import open_database

            self.database = open_database(self.backend.url)

    def paths(self, agent_id: str) -> AgentPaths:
        return AgentPaths(self.settings.agent_dir(agent_id))

    def documents(self, agent_id: str) -> DocumentStore:
        paths = self.paths(agent_id)
        if self.database is None:
            return FileDocuments(
                paths.root, AgentLock(paths.lock, self.settings.lock_timeout_seconds)
            )
        from ..storage.pg_documents import PostgresDocuments

        return PostgresDocuments(
            self.database, agent_id, lock_timeout=self.settings.lock_timeout_seconds
        )

    def agent_ids(self) -> list[str]:
        found = set()
        agents_dir = self.settings.agents_dir
        if agents_dir.is_dir():
            found |= {p.name for p in agents_dir.iterdir() if p.is_dir()}
        if self.database is not None:
            from ..storage.pg_documents import list_agents

            found |= set(list_agents(self.database))
        return sorted(found)

    @property
    def on_postgres(self) -> bool:
        return self.backend.kind == "postgres"

    def has_episodic(self) -> bool:
        """Whether there can be rows to read (an absent data.db is not created by reading)."""
        return self.backend.has_episodic()

    def episodic(self) -> EpisodicStore:
        if self._episodic is None:
            self._episodic = self.backend.episodic()
        return self._episodic

    def episodic_place(self) -> str:
        """Where the rows live: the database (URL) or the resolved data.db path."""
        return self.backend.place

    def audit(self) -> AuditLog:
        """The dream history beside the documents, where the dream cycle keeps it."""
        if self.database is not None:
            return open_audit_log(self.database)
        return SqliteAuditLog(self.settings.database_path)

    def audit_place(self) -> str:
        if self.database is not None:
            return f"url:{self.settings.database_url}"
        return f"file:{self.settings.database_path.expanduser().resolve()}"

    def has_audit(self) -> bool:
        """Whether there can be dream runs to read (reading never creates data.db)."""
        return self.database is not None or self.settings.database_path.exists()

    def close(self) -> None:
        if self.database is not None:
            self.database.close()
        if self._episodic is not None:
            self._episodic.close()


@contextmanager
def _sides(src: Settings, dst: Settings) -> Iterator[tuple[_Side, _Side]]:
    with ExitStack() as stack:
        a = _Side(src)
        stack.callback(a.close)
        b = _Side(dst)
        stack.callback(b.close)
        yield a, b


def agent_ids(settings: Settings) -> list[str]:
    """Every agent of a memory: agent directories and, on PostgreSQL, agents with documents."""
    side = _Side(settings)
    try:
        return side.agent_ids()
    finally:
        side.close()


def _same_place(src: Settings, dst: Settings) -> bool:
    same_home = src.home.expanduser().resolve() == dst.home.expanduser().resolve()
    if src.documents_on_postgres != dst.documents_on_postgres:
        return False
    return same_home and (not src.documents_on_postgres or src.database_url == dst.database_url)


def _plain_files(root: Path) -> Iterator[tuple[str, Path]]:
    """Files of an agent directory that are not documents (sessions, daily logs, others)."""
    if not root.is_dir():
        return
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(directory, name)
            relative = path.relative_to(root).as_posix()
            if name.startswith(".") or is_document_name(relative) or relative == MOVED_MARKER:
                continue
            if not path.is_file():
                continue
            yield relative, path


def _rows_to_copy(source: _Side, target: _Side, agent_id: str) -> AgentRows | None:
    """The rows to write at the destination (None: nothing to do); refuses divergent rows."""
    if source.episodic_place() == target.episodic_place():
        return None
    if not source.has_episodic():
        return None
    rows = read_rows(source.episodic(), agent_id)
    present = read_rows(target.episodic(), agent_id)
    if present.empty:
        return None if rows.empty else rows
    if present != rows:
        raise RefusedError(
            f"agent {agent_id!r} already has other episodic rows (activities, mailbox, chat) "
            "at the destination; rows are never merged or overwritten"
        )
    return None


def _runs_to_copy(source: _Side, target: _Side, agent_id: str) -> list[DreamRun]:
    """The source's dream runs the destination lacks, oldest first (a run is never merged:
    one with the same id is left as it is, except that an undo is carried over)."""
    if source.audit_place() == target.audit_place() or not source.has_audit():
        return []
    return sorted(source.audit().runs(agent_id), key=lambda run: run.started_at)


def _write_runs(target: _Side, agent_id: str, runs: list[DreamRun]) -> int:
    if not runs:
        return 0
    log = target.audit()
    present = {run.run_id: run for run in log.runs(agent_id)}
    copied = 0
    for run in runs:
        there = present.get(run.run_id)
        if there is None:
            log.record(run)
            copied += 1
        elif run.undone_at is not None and there.undone_at is None:
            log.mark_undone(agent_id, run.run_id, run.undone_at)
    return copied


MOVED_MARKER = "MOVED-TO-POSTGRESQL.txt"
"""Left in an agent directory whose documents an in-place export put in PostgreSQL."""


def _mark_moved(root: Path, names: list[str], url: str | None, when: str) -> None:
    """Say, beside the markdown files an in-place export left behind, that they are stale."""
    listed = "\n".join(f"  {name}" for name in sorted(names))
    text = (
        f"On {when} markus-memory exported this agent's markdown documents to PostgreSQL\n"
        f"({_redacted(url)}). From then on, with MARKUS_DATABASE_URL set, they are read\n"
        "and written there, not here. These files were left as they were at the export, as a\n"
        "backup; they are no longer updated:\n"
        f"{listed}\n"
        "Delete them once you no longer need the backup. Importing the agent back to files\n"
        "(markus-memory import --from-database-url URL --replace) replaces them and removes\n"
        "this note. Sessions and daily logs stay here: they always live on files.\n"
    )
    atomic_write_bytes(root / MOVED_MARKER, text.encode("utf-8"))


def _redacted(url: str | None) -> str:
    if not url:
        return "PostgreSQL"
    scheme, sep, rest = url.partition("://")
    credentials, at, place = rest.rpartition("@")
    if not at:
        return url
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{place}"


def _copy_agent(
    source: _Side, target: _Side, agent_id: str, replace: bool
) -> tuple[int, int, int, int, int]:
    rows = _rows_to_copy(source, target, agent_id)
    runs = _runs_to_copy(source, target, agent_id)
    src_docs, dst_docs = source.documents(agent_id), target.documents(agent_id)
    src_root, dst_root = source.paths(agent_id).root, target.paths(agent_id).root
    same_dir = src_root.expanduser().resolve() == dst_root.expanduser().resolve()
    try:
        with src_docs.lock(), dst_docs.lock():
            texts = src_docs.dump()
            present = dst_docs.names()
            files = [] if same_dir else list(_plain_files(src_root))  # already in place
            existing = [] if same_dir else list(_plain_files(dst_root))
            if (present or existing) and not replace:
                raise RefusedError(
                    f"agent {agent_id!r} already has memory at the destination; "
                    "pass replace=True (--replace) to overwrite it with an exact copy"
                )
            for name, text in texts.items():
                version = src_docs.version(name)
                dst_docs.write(name, text, modified_ns=version.modified_ns if version else None)
            removed = 0
            for name in present:
                if name not in texts:
                    removed += dst_docs.delete(name)
            for relative, path in files:
                stat = path.stat()
                target_path = dst_root / relative
                atomic_write_bytes(target_path, read_bytes(path))  # a link: SymlinkError
                os.utime(target_path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            copied = {relative for relative, _ in files}
            for relative, path in existing:
                if relative not in copied:
                    path.unlink()
                    removed += 1
            if rows is not None:
                write_rows(target.episodic(), rows)
            copied_runs = _write_runs(target, agent_id, runs)
            if same_dir and target.database is not None and source.database is None:
                now = iso_ms(source.settings.clock())
                _mark_moved(dst_root, list(texts), target.settings.database_url, now)
            elif target.database is None:
                (dst_root / MOVED_MARKER).unlink(missing_ok=True)  # the files are current
    finally:
        src_docs.close()
        dst_docs.close()
    return len(texts), len(files), removed, 0 if rows is None else rows.count, copied_runs


def export_agent(
    src_settings: Settings,
    dst_settings: Settings,
    agent_id: str | None = None,
    *,
    replace: bool = False,
) -> TransferReport:
    """Copy ``agent_id`` (None: every agent) from ``src_settings`` to ``dst_settings``.

    Either side may keep its documents on files or in PostgreSQL (``Settings.documents`` /
    ``database_url``). Both sides' document locks are held while an agent is copied. Raises
    :class:`NotFoundError` when ``agent_id`` does not exist in the source,
    :class:`InvalidInputError` when both sides are the same place, and :class:`RefusedError`
    when the destination already holds the agent and ``replace`` is False (nothing is written
    in any of these cases).
    """
    if _same_place(src_settings, dst_settings):
        raise InvalidInputError("source and destination are the same memory")
    with _sides(src_settings, dst_settings) as (source, target):
        present = source.agent_ids()
        wanted = None if agent_id is None else validate_id("agent id", agent_id)
        if wanted is not None and wanted not in present:
            raise NotFoundError(
                f"no such agent in the source: {wanted!r} (agents there: "
                f"{', '.join(present) or 'none'}); nothing was changed"
            )
        ids = present if wanted is None else [wanted]
        totals = [0, 0, 0, 0, 0]
        marked = []
        for one in ids:
            for index, value in enumerate(_copy_agent(source, target, one, replace)):
                totals[index] += value
            if (target.paths(one).root / MOVED_MARKER).exists() and target.database is not None:
                marked.append(str(target.paths(one).root))
    documents, files, removed, rows, runs = totals
    return TransferReport(tuple(ids), documents, files, removed, rows, runs, tuple(marked))


def import_agent(
    src_settings: Settings,
    dst_settings: Settings,
    agent_id: str | None = None,
    *,
    replace: bool = False,
) -> TransferReport:
    """The same copy seen from the destination: bring ``agent_id`` (None: all) into ``dst``."""
    return export_agent(src_settings, dst_settings, agent_id, replace=replace)
