"""Recall candidates by time: the agent's messages said inside a time window.

A question that names a time ("in May 2023") is often answered by a turn that shares no word
with it ("Dyed my hair last week!"); the recall engine then takes the turns said in that
window as candidates beside the ranked ones. One query for SQLite and PostgreSQL (the
:class:`~.recall_index.Sql` adapter translates placeholders), served by the
``(agent_id, created_at)`` index of ``transcript_messages``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .base import RecallFilters as Filters
from .recall_index import Sql


def said_within(
    sql: Sql, agent_id: str, filters: Filters, when: Callable[[datetime], Any], limit: int
) -> list[int]:
    """Ids of the agent's messages with text that pass ``filters`` (whose ``since`` and
    ``until`` bound the window), oldest first, at most ``limit``."""
    where, params = filters.sql(when)
    rows = sql.rows(
        "SELECT t.id FROM transcript_messages t WHERE t.agent_id = ? "
        f"AND trim(t.content) <> ''{where} ORDER BY t.created_at, t.id LIMIT ?",
        (agent_id, *params, limit),
    )
    return [int(row[0]) for row in rows]


class RecallTimeQueries:
    """The time-window query of a transcript store (same ``_recall`` and ``_when`` as
    :class:`~.recall_index.RecallQueries`)."""

    def _recall(self, *, write: bool = False) -> contextlib.AbstractContextManager[Sql]:
        raise NotImplementedError

    def _when(self, moment: datetime) -> Any:
        raise NotImplementedError

    def recall_said_within(self, agent_id: str, filters: Filters, limit: int) -> list[int]:
        with self._recall() as sql:
            return said_within(sql, agent_id, filters, self._when, limit)
