"""Activities (episodes of an agent with their ordered logs): the records and the repository
protocol both backends implement (:mod:`..activities`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from ..base import JsonObject


@dataclass(frozen=True)
class Activity:
    """One episode of an agent (a row of ``agent_activities``)."""

    id: str
    agent_id: str
    type: str
    label: str
    started_at: datetime
    task_id: str | None = None
    mailbox_item_id: str | None = None
    ended_at: datetime | None = None
    total_tokens: int = 0
    total_tools: int = 0
    success: bool = True
    summary: str = ""
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True)
class ActivityEnd:
    """What ``end`` writes onto an activity."""

    ended_at: datetime
    total_tokens: int
    total_tools: int
    success: bool
    summary: str
    keywords: tuple[str, ...]


@dataclass(frozen=True)
class ActivityLogEntry:
    """One ordered event of an activity (a row of ``agent_activity_logs``)."""

    activity_id: str
    seq: int
    type: str
    content: str
    metadata: JsonObject
    created_at: datetime


@dataclass(frozen=True)
class ActivityHit:
    """A search result: the activity and its relevance (higher is better; bm25 negated)."""

    activity: Activity
    score: float


class ActivityRepo(Protocol):
    """Activities and their ordered logs."""

    def insert_activity(self, activity: Activity) -> None: ...

    def end_activity(self, agent_id: str, activity_id: str, end: ActivityEnd) -> bool:
        """Write the end fields; False (no error) when the activity is unknown or foreign."""
        ...

    def append_log(
        self,
        agent_id: str,
        activity_id: str,
        type: str,
        content: str,
        metadata: JsonObject,
        created_at: datetime,
    ) -> int | None:
        """Append a log with the next ``seq`` (assigned atomically); None if unknown/foreign."""
        ...

    def get_activity(self, agent_id: str, activity_id: str) -> Activity | None: ...

    def activity_logs(self, agent_id: str, activity_id: str) -> list[ActivityLogEntry]:
        """Logs in ``seq`` order; [] when the activity is unknown or foreign."""
        ...

    def query_activities(
        self,
        agent_id: str,
        *,
        types: Sequence[str] | None = None,
        task_id: str | None = None,
        before: datetime | None = None,
        limit: int = 30,
    ) -> list[Activity]:
        """Newest first (``started_at DESC``)."""
        ...

    def search_activities(self, agent_id: str, query: str, *, limit: int = 10) -> list[ActivityHit]:
        """Ranked full-text search over label, summary, keywords and log content."""
        ...

    def prune_activities(self, agent_id: str, *, before: datetime) -> int:
        """Delete the agent's activities started before ``before``, with their logs and search
        documents; the number of activities removed (the original never pruned them)."""
        ...

    def activity_for_mailbox_item(self, agent_id: str, mailbox_item_id: str) -> Activity | None: ...

    def activities_for_mailbox_items(
        self, agent_id: str, mailbox_item_ids: Sequence[str]
    ) -> dict[str, Activity]: ...
