"""Reading activities and their logs: written once for both backends.

Writing an activity also maintains its search documents, and searching ranks them; both stay
per backend (FTS5 tables and ``bm25`` against ``tsvector`` and ``ts_rank``). What only reads
rows lives here, over the store's :class:`~.dialect.Dialect`.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._records import ACTIVITY_COLUMNS, LOG_COLUMNS
from .repos.activities import Activity, ActivityLogEntry

if TYPE_CHECKING:
    from .dialect import Dialect

# The position of mailbox_item_id in ACTIVITY_COLUMNS.
_MAILBOX_ITEM = 6


class ActivityReads:
    """Activity lookups by id, by mailbox item and by type/task/time; an activity's log."""

    if TYPE_CHECKING:

        @property
        def dialect(self) -> Dialect: ...
        def read(self) -> AbstractContextManager[Any]: ...

    def get_activity(self, agent_id: str, activity_id: str) -> Activity | None:
        d = self.dialect
        with self.read() as conn:
            row = conn.execute(
                d.sql(
                    f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE id = ? AND agent_id = ?"
                ),
                (activity_id, agent_id),
            ).fetchone()
        return None if row is None else d.decode.activity(row)

    def activity_logs(self, agent_id: str, activity_id: str) -> list[ActivityLogEntry]:
        d = self.dialect
        with self.read() as conn:
            rows = conn.execute(
                d.sql(
                    f"SELECT {LOG_COLUMNS} FROM agent_activity_logs l "
                    "JOIN agent_activities a ON a.id = l.activity_id "
                    "WHERE l.activity_id = ? AND a.agent_id = ? ORDER BY l.seq, l.id"
                ),
                (activity_id, agent_id),
            ).fetchall()
        return [d.decode.activity_log(r) for r in rows]

    def query_activities(
        self,
        agent_id: str,
        *,
        types: Sequence[str] | None = None,
        task_id: str | None = None,
        before: datetime | None = None,
        limit: int = 30,
    ) -> list[Activity]:
        d = self.dialect
        sql = f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE agent_id = ?"
        params: list[Any] = [agent_id]
        if types:
            condition, values = d.any_of("type", types)
            sql += f" AND {condition}"
            params.extend(values)
        if task_id is not None:
            sql += " AND task_id = ?"
            params.append(task_id)
        if before is not None:
            sql += " AND started_at < ?"
            params.append(d.time(before))
        sql += " ORDER BY started_at DESC, id DESC LIMIT ?"
        params.append(max(0, int(limit)))
        with self.read() as conn:
            rows = conn.execute(d.sql(sql), params).fetchall()
        return [d.decode.activity(r) for r in rows]

    def activity_for_mailbox_item(self, agent_id: str, mailbox_item_id: str) -> Activity | None:
        d = self.dialect
        with self.read() as conn:
            row = conn.execute(
                d.sql(
                    f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities WHERE agent_id = ? "
                    "AND mailbox_item_id = ? ORDER BY started_at DESC LIMIT 1"
                ),
                (agent_id, mailbox_item_id),
            ).fetchone()
        return None if row is None else d.decode.activity(row)

    def activities_for_mailbox_items(
        self, agent_id: str, mailbox_item_ids: Sequence[str]
    ) -> dict[str, Activity]:
        """The latest activity of each mailbox item that has one."""
        ids = list(dict.fromkeys(mailbox_item_ids))
        if not ids:
            return {}
        d = self.dialect
        condition, params = d.any_of("mailbox_item_id", ids)
        with self.read() as conn:
            rows = conn.execute(
                d.sql(
                    f"SELECT {ACTIVITY_COLUMNS} FROM agent_activities "
                    f"WHERE {condition} AND {d.unindexed('agent_id')} = ? ORDER BY started_at"
                ),
                (*params, agent_id),
            ).fetchall()
        return {row[_MAILBOX_ITEM]: d.decode.activity(row) for row in rows}
