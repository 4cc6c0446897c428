"""AgentMemory: the one place where the memory layers of one agent meet."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping
from datetime import datetime
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

from ._docs import DocumentStore
from ._fs import sweep_temps, validate_id
from ._fs_docs import FileDocuments
from ._lock import AgentLock
from .backend import MOVED_MARKER, Backend, open_backend
from .config import AgentPaths, Settings
from .errors import BusyError, ClosedError, InvalidInputError, MarkusMemoryError, MigrationError
from .layers.activities import ActivityLog
from .layers.daily_log import DailyLog
from .layers.histories import Histories
from .layers.knowledge import KnowledgeDoc, KnowledgeFile, Observation
from .layers.migration import plan_migration
from .layers.notebook import Notebook
from .layers.procedural import RoleLoader
from .layers.sessions import HeldSessions, Session, Sessions, SessionStore, message_text
from .layers.sessions import move_in as move_sessions_in
from .layers.state import StateFile
from .search.embedders import Embedder, configured_embedder
from .search.memory_search import MemorySearcher, SearchResult, open_memory_searcher
from .search.recall import ConversationHit
from .search.transcript_log import SessionSource
from .search.transcripts import Transcripts, transcript_message
from .storage.audit import pending_in_file
from .storage.base import EpisodicStore, NewEntry, TranscriptMessage
from .storage.dream_journal import recover

logger = logging.getLogger(__name__)


class AgentMemory:
    """All memory layers of one agent. Open with :func:`open_agent`; close when done."""

    def __init__(
        self,
        agent_id: str,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        store: EpisodicStore | None = None,
    ) -> None:
        self.agent_id = validate_id("agent id", agent_id)
        self.settings = settings
        self.backend: Backend = open_backend(settings)
        self.paths = AgentPaths(settings.agent_dir(self.agent_id))
        self.paths.root.mkdir(parents=True, exist_ok=True)
        sweep_temps(self.paths.root)  # temp files of writers killed mid-write
        self.lock = AgentLock(self.paths.lock, settings.lock_timeout_seconds)
        layer_args = (self.paths, self.lock, settings.limits, settings.clock)
        self.documents = self.backend.documents(self.agent_id, self.paths, self.lock)
        docs = self.documents
        self.notebook = Notebook(*layer_args, documents=docs)
        self.state = StateFile(*layer_args, documents=docs)
        held = self.backend.documents_on_postgres  # then sessions and logs live there too
        self.daily_log = DailyLog(
            *layer_args, agent_id=self.agent_id, held=(lambda: self.store) if held else None
        )
        self.roles = RoleLoader(*layer_args, documents=docs)
        self.knowledge = KnowledgeFile(*layer_args, documents=docs)
        self.embedder = embedder if embedder is not None else configured_embedder(settings.embedder)
        self._searcher: MemorySearcher | None = None
        self._transcripts = Transcripts(
            lambda: self.store,
            self.agent_id,
            sessions=self._session_sources,
            session=self._session_source,
            embedder=self.embedder,
            scratch=self.backend.scratch_transcripts,
        )
        self._files = SessionStore(
            *layer_args,
            agent_id=self.agent_id,
            on_append=self._transcripts.on_append,
            before_compact=self._transcripts.before_compact,
            seq_floor=self._seq_floor,
        )
        self.sessions: Sessions = self._files
        if held:
            self.sessions = HeldSessions(
                lambda: self.store,
                self.agent_id,
                settings.limits,
                settings.clock,
                entry_of=self._entry_of,
                stored=self._transcripts.stored,
            )
        self.histories = Histories(
            lambda: self.store,
            self.agent_id,
            settings.limits,
            settings.clock,
            adopt=self._adopt_history,
            stored=self._transcripts.stored,
        )
        self._closed = False
        self._store: EpisodicStore | None = store
        self._activities: ActivityLog | None = None
        self._store_guard = threading.Lock()
        self._migrate_legacy()
        self._recover_dream()
        if held:
            self._move_files_in()

    @property
    def store(self) -> EpisodicStore:
        """The episodic backend, opened on first use so opening is cheap.

        PostgreSQL when ``settings.database_url`` (``MARKUS_DATABASE_URL``) is set, else
        ``<home>/data.db``; :class:`BackendUnavailableError` if the server cannot be reached.
        """
        with self._store_guard:
            self._check_open()
            if self._store is None:
                self._store = self.backend.episodic()
            return self._store

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(self._closed_message())

    def _closed_message(self) -> str:
        return (
            f"the memory of agent {self.agent_id!r} is closed; open it again with "
            "open_agent() to use it"
        )

    @property
    def activities(self) -> ActivityLog:
        """Episodes of this agent: start / log / end / list / search / get."""
        self._check_open()
        if self._activities is None:
            self._activities = ActivityLog(
                self.store, self.agent_id, self.settings.clock, self.settings.limits
            )
        return self._activities

    @property
    def directory(self) -> Path:
        return self.paths.root

    def _recover_dream(self) -> None:
        """Finish or roll back a dream or dream undo a crash interrupted
        (:mod:`~markus_memory.storage.dream_journal`). Only the files' journal can need it: on
        PostgreSQL documents and history commit together; and only once a dream or undo ran
        here (it left its lock file; without one, the next dream or undo still recovers first).
        Never fails the open (a read-only home is read as it is)."""
        docs, database = self.documents, self.settings.database_path
        if not isinstance(docs, FileDocuments) or not docs.task_lock("dream").exists():
            return
        if not database.exists() or not pending_in_file(database, self.agent_id):
            return
        try:
            with self.documents.exclusive("dream"):
                log = self.backend.dream_audit(self.documents)
                recover(self.documents, log, self.agent_id, self.settings.clock())
        except BusyError:
            return  # the run's process is alive (it holds the dream's lock): it finishes it
        except (OSError, MarkusMemoryError) as exc:
            logger.warning("interrupted dream of %s not recovered: %s", self.agent_id, exc)

    def _migrate_legacy(self) -> None:
        """Migrate MEMORY.md / memories.json once, as the original does; spans knowledge and state.

        Order: state.md (merged), knowledge.md (only if absent), memories.json observations
        (merged), and only then delete memories.json. A failure raises :class:`MigrationError`
        and deletes nothing; the next open retries, and no step adds anything twice.
        """
        paths, docs = self.paths, self.documents
        if docs.exists(paths.knowledge.name) and not docs.exists(paths.legacy_memories_json.name):
            return
        with docs.lock():
            plan = plan_migration(paths, self.settings.clock(), documents=docs)
            try:
                if plan.state_text is not None:
                    docs.write(paths.state.name, plan.state_text)
                if plan.knowledge_text is not None:
                    self.knowledge.create(plan.knowledge_text)
                else:
                    self.knowledge.create()
                if plan.observations is not None:
                    self.knowledge.add_observations(
                        Observation(o.id, o.type, o.content, o.timestamp, o.tags)
                        for o in plan.observations
                    )
                    docs.delete(paths.legacy_memories_json.name)
            except (OSError, MarkusMemoryError) as exc:
                raise MigrationError(
                    f"legacy migration failed, nothing was deleted: {exc}"
                ) from exc

    def search(self, query: str | None, limit: int = 10, type: str | None = None) -> SearchResult:
        """``memory_search``: observations and curated sections matching ``query``, best first.

        An empty query lists the ``limit`` most recent observations (of ``type``). Hand edits of
        knowledge.md are picked up here: the derived indexes follow the document's version.
        """
        self._check_open()
        doc, version = self._knowledge_version()
        return self._memory_searcher().search(
            query, doc.observations, doc.sections, version=version, limit=limit, type=type
        )

    def rebuild_search_index(self) -> None:
        """Drop and re-derive this agent's search index (BM25 and vectors) from knowledge.md."""
        self._check_open()
        searcher = self._memory_searcher()
        doc, version = self._knowledge_version()
        searcher.rebuild(searcher.corpus(doc.observations, doc.sections, None), version)

    def _knowledge_version(self) -> tuple[KnowledgeDoc, str | None]:
        """knowledge.md and the version it was read at (the derived indexes follow it)."""
        seen = self.documents.version(KnowledgeFile.store_name)  # before the read: a race
        doc = self.knowledge.read()  # only re-syncs
        return doc, None if seen is None else seen.token

    def _memory_searcher(self) -> MemorySearcher:
        if self._searcher is None:
            self._searcher = open_memory_searcher(
                self.settings, self.agent_id, self.embedder, self.backend.knowledge_index()
            )
        return self._searcher

    def recall_conversation(
        self,
        query: str,
        *,
        session_id: str | None = None,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        neighbours: int = 1,
        now: datetime | None = None,
    ) -> list[ConversationHit]:
        """Search this agent's past session transcripts, best hit first.

        ``role`` matches a message role (``user``, ``assistant`` …) or the speaker name in
        ``metadata["speaker"]``; ``since``/``until`` bound the message time (inclusive); each hit
        carries up to ``neighbours`` turns of its session on each side. Ranked by bm25 with
        speaker, neighbour and session re-ranking, fused with vectors when the agent was opened
        with an embedder. ``now`` (an aware datetime): when the question is asked, so that
        the times it names relative to it ("a week ago", "last Saturday", "in the past three
        months") count in the time stage; without it only written-out times do. Raises
        InvalidInputError for bad arguments.
        """
        self._check_open()
        if session_id is not None:
            session_id = validate_id("session id", session_id)
        return self._transcripts.caught_up().recall(
            query,
            session_id=session_id,
            role=role,
            since=since,
            until=until,
            limit=limit,
            neighbours=neighbours,
            now=now,
        )

    def delete_session(self, session_id: str) -> bool:
        """Delete a session: its files, and its messages from the transcript store with their
        recall index entries and vectors, so recall no longer finds its text. False when
        neither held it."""
        self._check_open()
        session_id = validate_id("session id", session_id)
        had_files = self._files.delete(session_id) or self.sessions.delete(session_id)
        return self._transcripts.forget(session_id) > 0 or had_files

    def _move_files_in(self) -> None:
        """Sessions and daily logs live in the database with the documents: files an earlier
        version left here move in (once; see ``layers/sessions/_move_in``). Files an in-place
        export left behind (:data:`MOVED_MARKER`) are its backup: the export copied them."""
        if (self.paths.root / MOVED_MARKER).exists():
            return
        has_sessions = self.paths.sessions_dir.is_dir() and any(self._files.list())
        if not has_sessions and not self.paths.daily_logs_dir.is_dir():
            return
        with self.lock:
            if has_sessions:
                self._transcripts.caught_up()  # the store records every message of the files
                move_sessions_in(self._files, self.store, partial(session_rows, self.agent_id))
            self.daily_log.move_in()

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
            text=row.content[: self.settings.limits.recall_text_max_chars],
            body=encoded,
            created_at=row.created_at,
            speaker=row.speaker,
            metadata=row.metadata,
        )

    def _seq_floor(self, session_id: str) -> int:
        """Where a new session file under ``session_id`` numbers from; InvalidInputError when
        that id is a framework history (the two kinds never share an id)."""
        head = self.store.conversation(self.agent_id, session_id)
        if head is not None and head.kind == "history":
            raise InvalidInputError(
                f"{session_id!r} is a framework history of this agent (memory.histories), "
                "not a Markus session: use another session id"
            )
        return self._transcripts.seq_floor(session_id)

    def _adopt_history(self, key: str) -> None:
        """Move a framework history an older version kept in a Markus session file into the
        store: the store already records every message the file held (compacted ones too),
        so it becomes a ``history`` conversation over those rows and the file goes."""
        session = self._files.get(key)
        if session is None:
            return
        self._transcripts.caught_up()
        held = self.store.transcript_messages(self.agent_id, session_id=key)
        first = min((m.seq for m in held), default=session.first_seq)
        top = max((m.seq + 1 for m in held), default=first)
        self.store.adopt_entries(
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
        self._files.delete(key)

    def catch_up_transcripts(self) -> None:
        """Record in the store every session message it does not hold yet (appends still
        queued, and session files written past it), and with an embedder wait until each has
        its vector: a recall does the first part and ranks what is embedded by then."""
        self._check_open()
        self._transcripts.caught_up().wait_for_vectors()

    def _session_sources(self) -> Iterator[SessionSource]:
        """Every session file for the catch-up import: id and activity time (nothing parsed)."""
        for info in self._files.list():
            yield SessionSource(
                info.id,
                info.last_activity_at,
                partial(self._session_messages, info.id),
                partial(self._files.peek_next_seq, info.id),
            )

    def _session_source(self, session_id: str) -> SessionSource | None:
        session = self._files.get(session_id)
        if session is None:
            return None
        return SessionSource(
            session_id, session.last_activity_at, partial(self._session_messages, session_id)
        )

    def _session_messages(self, session_id: str) -> list[TranscriptMessage]:
        """The messages of a session file with absolute seqs, for the import. Files keep no
        per-message time: one without ``metadata["timestamp"]`` takes the session's start."""
        session = self._files.get(session_id)
        return [] if session is None else session_rows(self.agent_id, session)

    def close(self) -> None:
        """Flush and release everything this handle holds; from then on every write, search
        and recall through it raises ClosedError. Safe to call twice."""
        if self._closed:
            return
        self.sessions.close()
        self._files.close()
        self._transcripts.close()  # every queued append reaches the store before it closes
        if self._searcher is not None:
            self._searcher.close()
        self._searcher = None
        with self._store_guard:
            store, self._store = self._store, None
            self._activities = None
        if store is not None:
            store.close()
        self.documents.close()
        self._closed = True
        self.lock.close(self._closed_message())  # every layer's write takes this lock

    def __enter__(self) -> AgentMemory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AgentMemory({self.agent_id!r}, home={str(self.settings.home)!r})"


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


def open_documents(
    settings: Settings, agent_id: str, paths: AgentPaths, lock: AgentLock
) -> DocumentStore:
    """The document store of one agent, as :meth:`Backend.documents` picks it."""
    return open_backend(settings).documents(agent_id, paths, lock)


def open_store(settings: Settings) -> EpisodicStore:
    """The episodic store the settings select, as :meth:`Backend.episodic` picks it."""
    return open_backend(settings).episodic()


def open_agent(
    agent_id: str,
    home: Path | str | None = None,
    *,
    settings: Settings | None = None,
    embedder: Embedder | None = None,
    store: EpisodicStore | None = None,
) -> AgentMemory:
    """Open (creating if needed) the memory of ``agent_id`` under ``home``.

    ``home`` defaults to ``$MARKUS_HOME`` or ``~/.markus``; ``settings`` overrides everything.
    ``embedder`` (e.g. ``MiniLMEmbedder()`` from the ``[semantic]`` extra) adds vectors to
    :meth:`AgentMemory.recall_conversation` and :meth:`AgentMemory.search`; without one the
    settings choose (``Settings.embedder``, ``MARKUS_EMBEDDER``: without ``settings`` the
    local MiniLM when the ``[semantic]`` extra is installed), else bm25 alone. ``store``
    replaces the episodic backend the settings select (the handle closes it).
    """
    resolved = settings if settings is not None else Settings.from_env(home=home)
    return AgentMemory(agent_id, resolved, embedder=embedder, store=store)
