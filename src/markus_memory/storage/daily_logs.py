"""Daily logs held in the database (``daily_log_entries``), written once for both backends.

With the documents in PostgreSQL an agent's daily logs are rows, not files of one host: one
row per entry in the order written, and a day's file moved in once (``imported``), read back
first. A day reads back as the text its file would hold.
"""

from __future__ import annotations

from .dialect import Repository


class DailyLogs(Repository):
    """Daily log entries on one database."""

    def append_daily_log(self, agent_id: str, day: str, text: str) -> None:
        """Append an entry's text to an agent's log of ``day`` (``YYYY-MM-DD``)."""
        with self.database.write() as conn:
            self.dialect.bind(conn).run(
                "INSERT INTO daily_log_entries (agent_id, day, text) VALUES (?, ?, ?)",
                (agent_id, day, self.dialect.text(text)),
            )

    def import_daily_log(self, agent_id: str, day: str, text: str) -> bool:
        """Put a day's log file before the entries written to the database that day, once:
        False when that day's file was imported before."""
        d = self.dialect
        with self.database.write() as conn:
            added = d.bind(conn).run(
                "INSERT INTO daily_log_entries (agent_id, day, text, imported) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (agent_id, day) WHERE imported DO NOTHING",
                (agent_id, day, d.text(text), d.flag(True)),
            )
            return added > 0

    def replace_daily_log(self, agent_id: str, day: str, text: str | None) -> None:
        """Make ``text`` the whole log of ``day`` (None: no log that day); for a transfer."""
        d = self.dialect
        with self.database.write() as conn:
            sql = d.bind(conn)
            sql.run("DELETE FROM daily_log_entries WHERE agent_id = ? AND day = ?", (agent_id, day))
            if text is not None:
                sql.run(
                    "INSERT INTO daily_log_entries (agent_id, day, text, imported) "
                    "VALUES (?, ?, ?, ?)",
                    (agent_id, day, d.text(text), d.flag(True)),
                )

    def daily_log_text(self, agent_id: str, day: str) -> str | None:
        """The log of ``day`` as its file would hold it: the imported file, then the entries
        in the order written; None when there is none."""
        rows = self.select(
            "SELECT text FROM daily_log_entries WHERE agent_id = ? AND day = ? "
            "ORDER BY imported DESC, id",
            (agent_id, day),
        )
        return None if not rows else "".join(str(r[0]) for r in rows)

    def daily_log_days(self, agent_id: str) -> list[str]:
        """The days an agent has a log of, oldest first."""
        rows = self.select(
            "SELECT DISTINCT day FROM daily_log_entries WHERE agent_id = ? ORDER BY day",
            (agent_id,),
        )
        return [str(r[0]) for r in rows]
