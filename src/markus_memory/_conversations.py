"""Where one agent's conversations live, and the glue between their kinds.

:class:`Conversations` builds and joins, for :class:`~markus_memory.memory.AgentMemory`: the
Markus session files (``SessionStore``, whose appends the transcript writer records), the
Markus sessions the database holds when the documents live there (``HeldSessions``), the
framework histories (``Histories``, in the store on both backends) and the transcript side
(``Transcripts``: the writer, the catch-up import of session files, recall). It keeps the two
kinds apart (a session id is never both), moves an older version's files in, and adopts a
history an older adapter kept in a session file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import partial
from typing import Any

from ._lock import AgentLock
from .backend import MOVED_MARKER
from .config import AgentPaths, Settings
from .errors import InvalidInputError
from .layers.daily_log import DailyLog
from .layers.histories import Histories
from .layers.sessions import HeldSessions, Session, Sessions, SessionStore, message_text
from .layers.sessions import move_in as move_sessions_in
from .search.embedders import Embedder
from .search.transcript_log import SessionSource
from .search.transcripts import Scratch, Transcripts, transcript_message
from .storage.episodic import EpisodicStore
from .storage.repos.conversations import NewEntry
from .storage.repos.transcripts import TranscriptMessage


class Conversations:
    """The sessions, histories and transcripts of one agent (see the module docstring).

    ``held``: the Markus sessions live in the database (documents in PostgreSQL).
    """

    def __init__(
        self,
        agent_id: str,
        paths: AgentPaths,
        lock: AgentLock,
        settings: Settings,
        store: Callable[[], EpisodicStore],
        *,
        embedder: Embedder | None,
        scratch: Callable[[], Scratch | None],
        held: bool,
    ) -> None:
        self.agent_id = agent_id
        self.paths = paths
        self.lock = lock
        self._settings = settings
        self._store = store
        self.transcripts = Transcripts(
            lambda: store().transcripts,
            agent_id,
            sessions=self._session_sources,
            session=self._session_source,
            embedder=embedder,
            scratch=scratch,
        )
        self.files = SessionStore(
            paths,
            lock,
            settings.limits,
            settings.clock,
            agent_id=agent_id,
            on_append=self.transcripts.on_append,
            before_compact=self.transcripts.before_compact,
            seq_floor=self._seq_floor,
        )
        self.sessions: Sessions = self.files
        if held:
            self.sessions = HeldSessions(
                lambda: store().conversations,
                agent_id,
                settings.limits,
                settings.clock,
                entry_of=self._entry_of,
                stored=self.transcripts.stored,
            )
        self.histories = Histories(
            lambda: store().conversations,
            agent_id,
            settings.limits,
            settings.clock,
            adopt=self._adopt_history,
            stored=self.transcripts.stored,
        )

    def delete(self, session_id: str) -> bool:
        """Delete a session wherever it is (files, the database) and forget its messages in
        the store; False when nothing held it."""
        had_files = self.files.delete(session_id) or self.sessions.delete(session_id)
        return self.transcripts.forget(session_id) > 0 or had_files

    def close(self) -> None:
        self.sessions.close()
        self.files.close()
        self.transcripts.close()  # every queued append reaches the store before it closes

    def move_files_in(self, daily_log: DailyLog) -> None:
        """Sessions and daily logs live in the database with the documents: files an earlier
        version left here move in (once; see ``layers/sessions/_move_in``). Files an in-place
        export left behind (:data:`MOVED_MARKER`) are its backup: the export copied them."""
        if (self.paths.root / MOVED_MARKER).exists():
            return
        has_sessions = self.paths.sessions_dir.is_dir() and any(self.files.list())
        if not has_sessions and not self.paths.daily_logs_dir.is_dir():
            return
        with self.lock:
            if has_sessions:
                self.transcripts.caught_up()  # the store records every message of the files
                move_sessions_in(self.files, self._store(), partial(session_rows, self.agent_id))
            daily_log.move_in()

    def _entry_of(
        self, session_id: str, message: Mapping[str, Any], encoded: str, now: datetime
    ) -> NewEntry:
        """How a Markus session message held in the database is stored."""
        metadata = message.get("metadata")
        row = transcript_message(
            self.agent_id,
            session_id,
            0,
            str(message.get("role")),
            message_text(message),
            metadata if isinstance(metadata, Mapping) else None,
            now,
        )
        return NewEntry(
            role=row.role,
            text=row.content[: self._settings.limits.recall_text_max_chars],
            body=encoded,
            created_at=row.created_at,
            speaker=row.speaker,
            metadata=row.metadata,
        )

    def _seq_floor(self, session_id: str) -> int:
        """Where a new session file under ``session_id`` numbers from; InvalidInputError when
        that id is a framework history (the two kinds never share an id)."""
        head = self._store().conversations.conversation(self.agent_id, session_id)
        if head is not None and head.kind == "history":
            raise InvalidInputError(
                f"{session_id!r} is a framework history of this agent (memory.histories), "
                "not a Markus session: use another session id"
            )
        return self.transcripts.seq_floor(session_id)

    def _adopt_history(self, key: str) -> None:
        """Move a framework history an older version kept in a Markus session file into the
        store: the store already records every message the file held (compacted ones too),
        so it becomes a ``history`` conversation over those rows and the file goes."""
        session = self.files.get(key)
        if session is None:
            return
        self.transcripts.caught_up()
        held = self._store().transcripts.transcript_messages(self.agent_id, session_id=key)
        first = min((m.seq for m in held), default=session.first_seq)
        top = max((m.seq + 1 for m in held), default=first)
        self._store().conversations.adopt_entries(
            self.agent_id,
            key,
            "history",
            started_at=session.started_at,
            last_activity_at=session.last_activity_at,
            first_seq=first,
            next_seq=top,
            view_from=first,
            summary=None,
            bodies=[],
        )
        self.files.delete(key)

    def _session_sources(self) -> Iterator[SessionSource]:
        """Every session file for the catch-up import: id and activity time (nothing parsed)."""
        for info in self.files.list():
            yield SessionSource(
                info.id,
                info.last_activity_at,
                partial(self._session_messages, info.id),
                partial(self.files.peek_next_seq, info.id),
            )

    def _session_source(self, session_id: str) -> SessionSource | None:
        session = self.files.get(session_id)
        if session is None:
            return None
        return SessionSource(
            session_id, session.last_activity_at, partial(self._session_messages, session_id)
        )

    def _session_messages(self, session_id: str) -> list[TranscriptMessage]:
        """The messages of a session file with absolute seqs, for the import. Files keep no
        per-message time: one without ``metadata["timestamp"]`` takes the session's start."""
        session = self.files.get(session_id)
        return [] if session is None else session_rows(self.agent_id, session)


def session_rows(agent_id: str, session: Session) -> list[TranscriptMessage]:
    """The transcript rows of a session's messages (its compaction summary left out). Files
    keep no per-message time: one without ``metadata["timestamp"]`` takes the session's start."""
    found = []
    for index, raw in enumerate(session.messages):
        seq = session.seq(index)
        if seq is None:  # the summary standing in for compacted messages
            continue
        metadata = raw.get("metadata")
        found.append(
            transcript_message(
                agent_id,
                session.id,
                seq,
                str(raw.get("role")),
                message_text(raw),
                metadata if isinstance(metadata, Mapping) else None,
                session.started_at,
            )
        )
    return found


def files_to_move(settings: Settings, paths: AgentPaths) -> int:
    """How many session files and daily logs of an agent directory the next open moves into
    the database (0 unless the documents live in PostgreSQL; files an in-place export left as
    its backup are not moved)."""
    if not settings.documents_on_postgres or (paths.root / MOVED_MARKER).exists():
        return 0
    found = 0
    if paths.sessions_dir.is_dir() and not paths.sessions_dir.is_symlink():
        found += sum(1 for p in paths.sessions_dir.glob("*.json"))
    if paths.daily_logs_dir.is_dir() and not paths.daily_logs_dir.is_symlink():
        found += sum(1 for p in paths.daily_logs_dir.glob("*.md"))
    return found
