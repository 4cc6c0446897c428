"""Writing activities and their logs: written once for both backends.

Every write keeps the activity's search document current through the store's
:meth:`ActivityWrites._index_activity` and :meth:`ActivityWrites._drop_search_documents`: those
stay per backend (an FTS5 table over slotted rowids against a ``tsvector`` row), like the
ranking that reads them.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .base import JsonObject
from .repos.activities import Activity, ActivityEnd

if TYPE_CHECKING:
    from .dialect import Dialect

# The agent's activities a prune removes (parameters: agent id, cutoff).
DOOMED = "SELECT id FROM agent_activities WHERE agent_id = ? AND started_at < ?"


class ActivityWrites:
    """Start, end and prune activities; append to an activity's log."""

    if TYPE_CHECKING:

        @property
        def dialect(self) -> Dialect: ...
        def write(self) -> AbstractContextManager[Any]: ...
        def _index_activity(self, conn: Any, activity_id: str, *, fresh: bool = False) -> None:
            """(Re)write the activity's search document from its row and logs (``fresh``: the
            activity was just inserted, so it has neither a document nor logs yet)."""
            ...

        def _drop_search_documents(self, conn: Any, params: tuple[Any, ...]) -> None:
            """Delete the search documents of the activities :data:`DOOMED` selects."""
            ...

    def insert_activity(self, activity: Activity) -> None:
        d = self.dialect
        with self.write() as conn:
            d.bind(conn).run(
                "INSERT INTO agent_activities (id, agent_id, mailbox_item_id, type, label, "
                "task_id, started_at, ended_at, total_tokens, total_tools, success, summary, "
                "keywords, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    activity.id,
                    activity.agent_id,
                    activity.mailbox_item_id,
                    d.text(activity.type),
                    d.text(activity.label),
                    activity.task_id,
                    d.time(activity.started_at),
                    d.opt_time(activity.ended_at),
                    activity.total_tokens,
                    activity.total_tools,
                    d.flag(activity.success),
                    d.text(activity.summary),
                    d.text(",".join(activity.keywords)),
                    d.time(activity.started_at),
                ),
            )
            self._index_activity(conn, activity.id, fresh=True)

    def end_activity(self, agent_id: str, activity_id: str, end: ActivityEnd) -> bool:
        d = self.dialect
        with self.write() as conn:
            updated = d.bind(conn).run(
                "UPDATE agent_activities SET ended_at = ?, total_tokens = ?, total_tools = ?, "
                "success = ?, summary = ?, keywords = ? WHERE id = ? AND agent_id = ?",
                (
                    d.time(end.ended_at),
                    end.total_tokens,
                    end.total_tools,
                    d.flag(end.success),
                    d.text(end.summary),
                    d.text(",".join(end.keywords)),
                    activity_id,
                    agent_id,
                ),
            )
            if not updated:
                return False
            # The document is rewritten once per episode, with its log text: one index
            # update per episode, not one per log line.
            self._index_activity(conn, activity_id)
        return True

    def append_log(
        self,
        agent_id: str,
        activity_id: str,
        type: str,
        content: str,
        metadata: JsonObject,
        created_at: datetime,
    ) -> int | None:
        d = self.dialect
        with self.write() as conn:
            sql = d.bind(conn)
            # On PostgreSQL the row lock serialises appends to one activity (SQLite's write
            # transaction holds the file), so seq is assigned atomically.
            owner = sql.rows(
                "SELECT 1 FROM agent_activities WHERE id = ? AND agent_id = ?" + d.lock_rows,
                (activity_id, agent_id),
            )
            if not owner:
                return None
            # VALUES with a subquery, not INSERT … SELECT: SQLite would copy the rows it
            # reads from the table it writes into a temporary table first.
            row = sql.rows(
                "INSERT INTO agent_activity_logs (activity_id, seq, type, content, metadata, "
                "created_at) VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM "
                f"agent_activity_logs WHERE activity_id = ?), ?, ?, ?{d.json_cast}, ?) "
                "RETURNING seq",
                (
                    activity_id,
                    activity_id,
                    d.text(type),
                    d.text(content),
                    d.json(metadata) or "{}",
                    d.time(created_at),
                ),
            )
        return int(row[0][0])

    def prune_activities(self, agent_id: str, *, before: datetime) -> int:
        d = self.dialect
        params = (agent_id, d.time(before))
        with self.write() as conn:
            sql = d.bind(conn)
            self._drop_search_documents(conn, params)
            sql.run(f"DELETE FROM agent_activity_logs WHERE activity_id IN ({DOOMED})", params)
            return sql.run(
                "DELETE FROM agent_activities WHERE agent_id = ? AND started_at < ?", params
            )
