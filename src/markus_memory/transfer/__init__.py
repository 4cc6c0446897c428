"""Export / import: move agents between the file layout and PostgreSQL without losing a byte.

:func:`export_agent` copies one agent (or every agent) from the memory described by one
:class:`Settings` to another: every document of the markdown layers (knowledge.md, NOTEBOOK.md,
state.md, the legacy MEMORY.md / memories.json, every file in ``role/``) goes through the
:class:`DocumentStore` of each side with its exact text and modification time, and every other
file of the agent directory is copied byte for byte with its modification time, dot-names
included (the memory tool lets a model create ``.notes``). Lock files and the temporary files
of writes in progress are not copied. Sessions and daily logs are files too between two file
memories; when either side holds them in its database they go in their canonical form
(``_conversations``: a session as its checkpoint file's Markus JSON, a log as its day's text).

Nothing is read through the layers, so a copy never migrates, normalises or prunes anything:
files → PostgreSQL → files gives back the same bytes. The destination agent must be empty
unless ``replace=True``, which makes it an exact mirror (documents, files, rows and dream runs
the source lacks are removed) after backing up what it would change or remove to a new home
(``<destination home>/backups/<time>``, or ``backup_to``), or ``merge=True``, which adds only
what the destination lacks (by document name, file path and row id) and so does nothing the
second time.

Episodic rows (activities with their logs, mailbox items, decisions, chat sessions and
messages, the session transcript with its import marks) are copied through the
``EpisodicStore`` protocol when the two sides use different stores; derived indexes
(full-text, vectors) are rebuilt, not copied. A destination that already holds different rows
for the agent is refused unless replacing or merging; one that holds the same rows is left
alone. The episodic store of a side is the one
:class:`~markus_memory.backend.Backend` picks for its settings: the PostgreSQL
``PostgresStore`` when a database URL is set, else the SQLite file ``<home>/data.db``.
Transcript text lives in the session files (copied byte for byte); the transcript index and
vectors are derived and rebuilt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._fs import checked_agent_id
from ..agents import agent_ids as listed
from ..backend import MOVED_MARKER
from ..config import Settings
from ..errors import InvalidInputError, NotFoundError
from . import _copy, _side

__all__ = [
    "MOVED_MARKER",
    "TransferReport",
    "agent_ids",
    "default_backup",
    "export_agent",
    "import_agent",
]


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
    backup: str | None = None
    """The home ``replace`` backed the destination's copies of the agents up to (restore
    with ``markus-memory import --from-home <it> --replace``); None when nothing it held was
    changed or removed."""


def agent_ids(settings: Settings) -> list[str]:
    """Every agent of a memory (see :mod:`markus_memory.agents`)."""
    return listed(settings)


def _same_place(src: Settings, dst: Settings) -> bool:
    same_home = src.home.expanduser().resolve() == dst.home.expanduser().resolve()
    if src.documents_on_postgres != dst.documents_on_postgres:
        return False
    return same_home and (not src.documents_on_postgres or src.database_url == dst.database_url)


def default_backup(dst: Settings) -> Path:
    """A new folder for ``replace``'s backup: ``<destination home>/backups/<UTC time>``."""
    stamp = dst.clock().strftime("%Y%m%dT%H%M%S.%fZ")
    return dst.home / "backups" / stamp


def _backup(target: _side.Side, ids: list[str], where: Path) -> str:
    """Copy the destination's own copies of ``ids`` to a new files-only home ``where``."""
    if where.exists() and any(where.iterdir()):
        raise InvalidInputError(f"the backup folder {where} is not empty; pick another")
    copy = Settings(
        home=where, documents="files", lock_timeout_seconds=target.settings.lock_timeout_seconds
    )
    with _side.sides(target.settings, copy) as (origin, backup):
        for one in ids:
            _copy.copy_agent(origin, backup, one, "new")
    return str(where)


def export_agent(
    src_settings: Settings,
    dst_settings: Settings,
    agent_id: str | None = None,
    *,
    replace: bool = False,
    merge: bool = False,
    backup_to: Path | None = None,
) -> TransferReport:
    """Copy ``agent_id`` (None: every agent) from ``src_settings`` to ``dst_settings``.

    Either side may keep its documents on files or in PostgreSQL (``Settings.documents`` /
    ``database_url``). Both sides' document locks are held while an agent is copied. Raises
    :class:`NotFoundError` when ``agent_id`` does not exist in the source,
    :class:`InvalidInputError` when both sides are the same place or both ``replace`` and
    ``merge`` are asked, and :class:`RefusedError` when the destination already holds the
    agent and neither is (nothing is written in any of these cases). ``replace`` first backs
    up, to ``backup_to`` (default :func:`default_backup`), every agent whose copy at the
    destination it would change or remove.
    """
    if replace and merge:
        raise InvalidInputError("replace and merge exclude each other: pick one")
    if _same_place(src_settings, dst_settings):
        raise InvalidInputError("source and destination are the same memory")
    mode: _copy.Mode = "replace" if replace else "merge" if merge else "new"
    with _side.sides(src_settings, dst_settings) as (source, target):
        present = source.agent_ids()
        wanted = None if agent_id is None else checked_agent_id(agent_id)
        if wanted is not None and wanted not in present:
            raise NotFoundError(
                f"no such agent in the source: {wanted!r} (agents there: "
                f"{', '.join(present) or 'none'}); nothing was changed"
            )
        ids = present if wanted is None else [wanted]
        backup = None
        if mode == "replace":
            at_risk = [one for one in ids if _copy.loses(source, target, one)]
            if at_risk:
                backup = _backup(target, at_risk, backup_to or default_backup(dst_settings))
        totals = [0, 0, 0, 0, 0]
        marked = []
        for one in ids:
            copied = _copy.copy_agent(source, target, one, mode)
            for index, value in enumerate(
                (copied.documents, copied.files, copied.removed, copied.rows, copied.dream_runs)
            ):
                totals[index] += value
            if (target.paths(one).root / MOVED_MARKER).exists() and target.database is not None:
                marked.append(str(target.paths(one).root))
    documents, files, removed, rows, runs = totals
    return TransferReport(tuple(ids), documents, files, removed, rows, runs, tuple(marked), backup)


def import_agent(
    src_settings: Settings,
    dst_settings: Settings,
    agent_id: str | None = None,
    *,
    replace: bool = False,
    merge: bool = False,
    backup_to: Path | None = None,
) -> TransferReport:
    """The same copy seen from the destination: bring ``agent_id`` (None: all) into ``dst``."""
    return export_agent(
        src_settings, dst_settings, agent_id, replace=replace, merge=merge, backup_to=backup_to
    )
