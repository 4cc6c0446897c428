"""An episodic store composed of its repositories, each holding the one database they share.

An engine's store (``_sqlite/store.py``, ``_postgres/store.py``) opens its database and hands
it, with the engine's own pieces (the insert of new transcript messages, the activity search,
on PostgreSQL the vector search), to the repositories written once for both backends. A layer
is given the one repository it uses (``store.activities``, ``store.daily_logs``, …), each of
which implements its protocol in :mod:`.repos`.
"""

from __future__ import annotations

from .activities import Activities, ActivitySearch
from .conversations import Conversations
from .daily_logs import DailyLogs
from .dialect import Database
from .side_tables import Chats, Mailbox
from .transcripts import Transcripts


class Store:
    """The repositories of one database; an engine's store adds ``rebuild_derived`` and is
    an :class:`~.episodic.EpisodicStore`."""

    def __init__(
        self, database: Database, transcripts: Transcripts, search_index: ActivitySearch
    ) -> None:
        self.database = database
        self.transcripts = transcripts
        self.conversations = Conversations(database, transcripts)
        self.daily_logs = DailyLogs(database)
        self.activities = Activities(database, search_index)
        self.mailbox = Mailbox(database)
        self.chats = Chats(database)

    def close(self) -> None:
        """Close the database (safe to call twice)."""
        self.database.close()
