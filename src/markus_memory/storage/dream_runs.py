"""A dream run's record and the protocol of the dream audit log that keeps them.

The log itself, written once over a :class:`~.dialect.Database` for both backends, is
:mod:`.audit`; a run's row is also its journal (:mod:`.dream_journal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

DreamStatus = Literal["applied", "failed", "undone", "unchanged", "applying", "undoing"]
PENDING: tuple[DreamStatus, ...] = ("applying", "undoing")
"""A run being applied or undone: final once finished, or once a crash was recovered."""


@dataclass(frozen=True)
class DreamRun:
    """One recorded dream. ``status``: ``applied``, ``failed``, ``undone``, ``unchanged`` (it
    ran and found nothing to change: nothing was written and there is nothing to undo), or
    while it is being written ``applying`` / ``undoing`` (see :mod:`.dream_journal`).

    ``changes`` is JSON-ready: ``removed``, ``merged``, ``promoted`` (each with the full
    content of the observations involved), ``rejections``, ``hygiene``, ``state_removed``.
    File texts are None when the file did not exist.
    """

    run_id: str
    agent_id: str
    started_at: datetime
    finished_at: datetime
    mode: str
    status: DreamStatus
    changes: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    knowledge_before: str | None = None
    knowledge_after: str | None = None
    state_before: str | None = None
    state_after: str | None = None
    undone_at: datetime | None = None


class AuditLog(Protocol):
    """Where dream runs are recorded (SQLite by default; any store with these methods)."""

    def record(self, run: DreamRun, *, durable: bool = False) -> None:
        """Insert ``run``; ``durable``: on disk before this returns (a journal's intent)."""

    def runs(self, agent_id: str, limit: int | None = None) -> list[DreamRun]: ...
    def get(self, agent_id: str, run_id: str) -> DreamRun | None: ...
    def mark_undone(self, agent_id: str, run_id: str, at: datetime) -> None: ...

    def set_status(
        self,
        agent_id: str,
        run_id: str,
        status: DreamStatus,
        *,
        error: str | None = None,
        durable: bool = False,
    ) -> None:
        """Change a run's status (and its error); ``durable`` as for :meth:`record`."""

    def pending(self, agent_id: str) -> list[DreamRun]:
        """Runs left ``applying`` or ``undoing``, oldest first (none when nothing was ever
        recorded: this never creates the table)."""
